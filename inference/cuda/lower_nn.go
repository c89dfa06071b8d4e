package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
)

// Lowerings of the neural-network operators (nn.cu): Conv and
// ConvTranspose as im2col/col2im around cuBLAS, Gemm, MatMul, and the
// pooling operators. The semantics are the CPU backend's
// (inference/cpu/ops_conv.go, ops_linalg.go and ops_pool.go); the window
// geometry below mirrors its windowGeom (window.go) and cvTransposeGeom,
// and a lowering whose geometry does not give the plan's output shape sends
// the node to the host.

// Kinds of pool_f32 and pool_global_f32 (nn.cu's POOL_* and GPOOL_*).
const (
	poolMax = iota
	poolAvg
	poolLp
)

const (
	globalPoolAvg = iota
	globalPoolMax
)

// The fused activation the CPU backend's fuseActivations puts on a Conv
// (inference/cpu/fuse.go): clamp the output to [min, max].
const (
	fusedMinAttr = "beamml.fused_min"
	fusedMaxAttr = "beamml.fused_max"
)

// colLimit bounds the im2col and col2im scratch matrices, in floats
// (64 MiB): a batch whose columns would not fit runs in chunks of images.
// Tests lower it to check the chunking.
var colLimit int64 = 1 << 24

func init() {
	registerLowering("Conv", lowerConv)
	registerLowering("ConvTranspose", lowerConvTranspose)
	registerLowering("Gemm", lowerGemm)
	registerLowering("MatMul", lowerMatMul)
	registerLowering("MaxPool", func(l *Lower) error { return lowerPool(l, poolMax) })
	registerLowering("AveragePool", func(l *Lower) error { return lowerPool(l, poolAvg) })
	registerLowering("LpPool", func(l *Lower) error { return lowerPool(l, poolLp) })
	registerLowering("GlobalAveragePool", func(l *Lower) error { return lowerGlobalPool(l, globalPoolAvg) })
	registerLowering("GlobalMaxPool", func(l *Lower) error { return lowerGlobalPool(l, globalPoolMax) })
}

// convWindow is the geometry of a sliding window over three spatial
// dimensions, as the kernels of nn.cu take it: a 1-D or 2-D window is
// padded on the left with dimensions of size 1 (kernel, stride and
// dilation 1, no padding). Output position o reads input o·stride −
// padBegin + t·dilation for taps t < kernel.
type convWindow struct {
	in, out, kernel, stride, dilation, padBegin, padEnd [3]int64
}

// newConvWindow returns a window with every dimension at size 1, stride 1,
// dilation 1 and no padding.
func newConvWindow() convWindow {
	var w convWindow
	for d := range 3 {
		w.in[d], w.out[d], w.kernel[d], w.stride[d], w.dilation[d] = 1, 1, 1, 1, 1
	}
	return w
}

// spatialArgs passes each dimension of each of vs as a long long.
func spatialArgs(vs ...[3]int64) []Arg {
	var args []Arg
	for _, v := range vs {
		for _, d := range v {
			args = append(args, I(d))
		}
	}
	return args
}

func prod3(v [3]int64) int64 { return v[0] * v[1] * v[2] }

// outIs reports whether the window's output is the spatial shape s.
func (w convWindow) outIs(s []int) bool {
	off := 3 - len(s)
	for d, v := range s {
		if w.out[off+d] != int64(v) {
			return false
		}
	}
	return true
}

// spatialInts reads the integer-list attribute name: want values, or want
// copies of def when the node lacks it or gives an empty list. ok is false
// when the list has another length (the CPU kernel reports the error).
func spatialInts(l *Lower, name string, want int, def int64) (v []int64, ok bool) {
	v = l.Ints(name, nil)
	if len(v) == 0 {
		v = make([]int64, want)
		for i := range v {
			v[i] = def
		}
		return v, true
	}
	return v, len(v) == want
}

// windowAttrs reads strides, dilations and pads into a window over the
// spatial shape in with the given kernel.
func windowAttrs(l *Lower, in, kernel []int) (convWindow, error) {
	r := len(in)
	w := newConvWindow()
	if r < 1 || r > 3 {
		return w, l.NoKernel("%d spatial dimensions, kernels take 1 to 3", r)
	}
	strides, ok1 := spatialInts(l, "strides", r, 1)
	dilations, ok2 := spatialInts(l, "dilations", r, 1)
	pads, ok3 := spatialInts(l, "pads", 2*r, 0)
	if !ok1 || !ok2 || !ok3 {
		return w, l.NoKernel("strides %v, dilations %v, pads %v for %d spatial dimensions", strides, dilations, pads, r)
	}
	off := 3 - r
	for d := range r {
		w.in[off+d], w.kernel[off+d] = int64(in[d]), int64(kernel[d])
		w.stride[off+d], w.dilation[off+d] = strides[d], dilations[d]
		w.padBegin[off+d], w.padEnd[off+d] = pads[d], pads[r+d]
	}
	return w, nil
}

// slidingGeom is the CPU's windowGeom: the geometry of Conv and the
// pools, with auto_pad and, for the pools, ceil_mode.
func slidingGeom(l *Lower, in, kernel []int, ceil bool) (convWindow, error) {
	w, err := windowAttrs(l, in, kernel)
	if err != nil {
		return w, err
	}
	for d := range 3 {
		if w.stride[d] < 1 || w.dilation[d] < 1 || w.padBegin[d] < 0 || w.padEnd[d] < 0 || w.kernel[d] < 1 {
			return w, l.NoKernel("strides %v, dilations %v, pads %v %v", w.stride, w.dilation, w.padBegin, w.padEnd)
		}
	}
	switch auto := l.Str("auto_pad", "NOTSET"); auto {
	case "NOTSET", "":
	case "VALID":
		w.padBegin, w.padEnd = [3]int64{}, [3]int64{}
	case "SAME_UPPER", "SAME_LOWER":
		for d := range 3 {
			s, eff := w.stride[d], (w.kernel[d]-1)*w.dilation[d]+1
			w.out[d] = (w.in[d] + s - 1) / s
			total := max(0, (w.out[d]-1)*s+eff-w.in[d])
			w.padBegin[d] = total / 2
			if auto == "SAME_LOWER" {
				w.padBegin[d] = total - total/2
			}
			w.padEnd[d] = total - w.padBegin[d]
		}
		return w, nil
	default:
		return w, l.NoKernel("auto_pad %q", auto)
	}
	for d := range 3 {
		s, eff := w.stride[d], (w.kernel[d]-1)*w.dilation[d]+1
		span := w.in[d] + w.padBegin[d] + w.padEnd[d] - eff
		if span < 0 {
			return w, l.NoKernel("window larger than the padded input")
		}
		if ceil {
			w.out[d] = (span+s-1)/s + 1
			if (w.out[d]-1)*s >= w.in[d]+w.padBegin[d] {
				w.out[d]--
			}
		} else {
			w.out[d] = span/s + 1
		}
	}
	return w, nil
}

func floorDivInt64(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// transposedGeom is the CPU's cvTransposeGeom: ConvTranspose's geometry,
// with in the input's spatial shape and out the output's. Its pads may be
// negative (an output_shape larger than the full output).
func transposedGeom(l *Lower, in, kernel []int) (convWindow, error) {
	w, err := windowAttrs(l, in, kernel)
	if err != nil {
		return w, err
	}
	r, off := len(in), 3-len(in)
	outPad, ok := spatialInts(l, "output_padding", r, 0)
	if !ok {
		return w, l.NoKernel("output_padding %v for %d spatial dimensions", outPad, r)
	}
	var op [3]int64
	for d := range r {
		op[off+d] = outPad[d]
	}
	for d := range 3 {
		if w.stride[d] < 1 || w.dilation[d] < 1 || op[d] < 0 || w.kernel[d] < 1 {
			return w, l.NoKernel("strides %v, dilations %v, output_padding %v", w.stride, w.dilation, outPad)
		}
	}
	auto := l.Str("auto_pad", "NOTSET")
	switch auto {
	case "NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER":
	default:
		return w, l.NoKernel("auto_pad %q", auto)
	}
	var target []int64
	switch {
	case l.Node.Has("output_shape"):
		os := l.Ints("output_shape", nil)
		if len(os) == r+2 {
			os = os[2:]
		}
		if len(os) != r {
			return w, l.NoKernel("output_shape %v for %d spatial dimensions", os, r)
		}
		target = append(make([]int64, off), os...)
	case auto == "SAME_UPPER" || auto == "SAME_LOWER":
		target = make([]int64, 3)
		for d := range 3 {
			target[d] = w.in[d] * w.stride[d]
		}
	}
	for d := range 3 {
		full := w.stride[d]*(w.in[d]-1) + op[d] + (w.kernel[d]-1)*w.dilation[d] + 1
		switch {
		case d < off:
			// a padding dimension: size 1 in and out
		case target == nil:
			if auto == "VALID" {
				w.padBegin[d], w.padEnd[d] = 0, 0
			}
			w.out[d] = full - w.padBegin[d] - w.padEnd[d]
		default:
			total := full - target[d]
			if auto == "SAME_UPPER" {
				w.padBegin[d] = floorDivInt64(total, 2)
			} else {
				w.padBegin[d] = total - floorDivInt64(total, 2)
			}
			w.padEnd[d] = total - w.padBegin[d]
			w.out[d] = target[d]
		}
		if w.out[d] < 0 {
			return w, l.NoKernel("negative output size")
		}
	}
	return w, nil
}

// convOperands checks Conv's or ConvTranspose's X and W and returns the
// group count and the kernel shape; see the CPU's cvConvShapes.
func convOperands(l *Lower, x, w Operand, transposed bool) (group int, kernel []int, err error) {
	if x.DType != inference.Float32 || w.DType != inference.Float32 {
		return 0, nil, l.NoKernel("%v input, %v weights", x.DType, w.DType)
	}
	xs, ws := x.Shape, w.Shape
	if len(xs) < 3 || len(xs) > 5 || len(ws) != len(xs) {
		return 0, nil, l.NoKernel("X %v, W %v: kernels take equal ranks 3 to 5", xs, ws)
	}
	group = int(l.Int("group", 1))
	if group < 1 || xs[1]%group != 0 ||
		(transposed && ws[0] != xs[1]) ||
		(!transposed && (ws[1]*group != xs[1] || ws[0]%group != 0)) {
		return 0, nil, l.NoKernel("X %v, W %v, group %d do not agree", xs, ws, group)
	}
	kernel = ws[2:]
	if l.Node.Has("kernel_shape") {
		k, ok := spatialInts(l, "kernel_shape", len(kernel), 1)
		if !ok || !slices.Equal(k, int64s(kernel)) {
			return 0, nil, l.NoKernel("kernel_shape %v, weights %v", k, ws)
		}
	}
	return group, kernel, nil
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, d := range v {
		out[i] = int64(d)
	}
	return out
}

// convBias returns the argument for an optional per-channel bias,
// input i: its address, or a null pointer when it is left out.
func convBias(l *Lower, i, channels int) (Arg, error) {
	b := l.Arg(i)
	if !b.Present() {
		return I(0), nil
	}
	if b.DType != inference.Float32 || b.Rank() != 1 || b.Shape[0] != channels {
		return Arg{}, l.NoKernel("bias %v %v, want float32 [%d]", b.DType, b.Shape, channels)
	}
	return P(b), nil
}

// fusedClamp returns the clamp arguments of conv_direct_f32 and
// conv_bias_act_f32 (on, lo, hi) and whether the clamp is on.
func fusedClamp(l *Lower) ([]Arg, bool) {
	if !l.Node.Has(fusedMinAttr) {
		return []Arg{I(0), F(0.0), F(0.0)}, false
	}
	lo := l.Float(fusedMinAttr, float32(math.Inf(-1)))
	hi := l.Float(fusedMaxAttr, float32(math.Inf(1)))
	return []Arg{I(1), F(lo), F(hi)}, true
}

// gemmUnits queues g for images × groups products: product (n, k) reads A
// at AOff + n·aImg + k·aGrp and B at BOff + k·bGrp, and writes C at
// COff + n·cImg + k·cGrp. Each call is strided batched over the longer of
// the two loops.
func gemmUnits(l *Lower, g GemmOp, images, groups int, aImg, aGrp, bGrp, cImg, cGrp int64) error {
	switch {
	case groups == 1:
		g.Batch, g.StrideA, g.StrideB, g.StrideC = images, aImg, 0, cImg
		return l.Gemm(g)
	case images <= groups:
		for n := range int64(images) {
			u := g
			u.Batch, u.StrideA, u.StrideB, u.StrideC = groups, aGrp, bGrp, cGrp
			u.AOff += n * aImg
			u.COff += n * cImg
			if err := l.Gemm(u); err != nil {
				return err
			}
		}
	default:
		for k := range int64(groups) {
			u := g
			u.Batch, u.StrideA, u.StrideB, u.StrideC = images, aImg, 0, cImg
			u.AOff += k * aGrp
			u.BOff += k * bGrp
			u.COff += k * cGrp
			if err := l.Gemm(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// lowerConv runs a depthwise Conv (one input channel per group) with the
// direct kernel, and every other one as im2col and a GEMM per image and
// group: Y[n, g] (M/group × ∏out) = W[g] (M/group × C/group·∏kernel) ·
// col[n, g], in cuBLAS's terms Yᵀ = colᵀ·Wᵀ. A 1×1 kernel with unit
// strides and no padding multiplies X itself. Bias and the fused clamp
// follow in one pass.
func lowerConv(l *Lower) error {
	x, w, y := l.In[0], l.In[1], l.Out[0]
	group, kernel, err := convOperands(l, x, w, false)
	if err != nil {
		return err
	}
	win, err := slidingGeom(l, x.Shape[2:], kernel, false)
	if err != nil {
		return err
	}
	if y.Rank() != x.Rank() || !win.outIs(y.Shape[2:]) {
		return l.NoKernel("geometry %v differs from the output %v", win.out, y.Shape)
	}
	n, c, m := x.Shape[0], x.Shape[1], w.Shape[0]
	bias, err := convBias(l, 2, m)
	if err != nil {
		return err
	}
	clamp, clampOn := fusedClamp(l)
	if y.Len() == 0 {
		return nil
	}
	cg, mg := c/group, m/group
	isp, osp, ksz := prod3(win.in), prod3(win.out), prod3(win.kernel)
	rows := int64(cg) * ksz
	if rows == 0 {
		return l.NoKernel("no input channels")
	}
	geom := spatialArgs(win.in, win.kernel, win.out, win.stride, win.dilation, win.padBegin)
	if group > 1 && cg == 1 {
		args := append([]Arg{P(y), P(x), P(w), bias, I(y.Len()), I(c), I(m), I(cg), I(mg)}, geom...)
		return l.Launch("conv_direct_f32", y.Len(), append(args, clamp...)...)
	}
	pointwise := ksz == 1 && win.stride == [3]int64{1, 1, 1} && win.padBegin == [3]int64{} && win.padEnd == [3]int64{}
	g := GemmOp{Gemm: Gemm{M: int(osp), N: mg, K: int(rows), Alpha: 1, LDA: int(osp), LDB: int(rows), LDC: int(osp)},
		OpB: w, OpC: y}
	cImg, cGrp, bGrp := int64(m)*osp, int64(mg)*osp, int64(mg)*rows
	if pointwise {
		g.OpA = x
		if err := gemmUnits(l, g, n, group, int64(c)*isp, rows*osp, bGrp, cImg, cGrp); err != nil {
			return err
		}
	} else {
		perImage := int64(c) * ksz * osp
		chunk := int(max(1, min(int64(n), colLimit/perImage)))
		col := l.Scratch(inference.Float32, []int{chunk * int(perImage)})
		for n0 := 0; n0 < n; n0 += chunk {
			nc := min(chunk, n-n0)
			src := x.Offset(int64(n0)*int64(c)*isp, []int{nc, c, int(isp)})
			args := append([]Arg{P(col), P(src), I(int64(nc) * perImage)}, geom...)
			if err := l.Launch("conv_im2col_f32", int64(nc)*perImage, args...); err != nil {
				return err
			}
			g.OpA, g.COff = col, int64(n0)*cImg
			if err := gemmUnits(l, g, nc, group, perImage, rows*osp, bGrp, cImg, cGrp); err != nil {
				return err
			}
		}
	}
	if bias.ptr || clampOn {
		args := append([]Arg{P(y), bias, I(y.Len()), I(osp), I(m)}, clamp...)
		return l.Launch("conv_bias_act_f32", y.Len(), args...)
	}
	return nil
}

// lowerConvTranspose runs, per image and group, the GEMM col[n, g]
// (M/group·∏kernel × ∏in) = W[g]ᵀ · X[n, g] (in cuBLAS's terms colᵀ =
// X[n, g]ᵀ·W[g]), then conv_col2im_f32 gathers the columns into the output
// and adds the bias.
func lowerConvTranspose(l *Lower) error {
	x, w, y := l.In[0], l.In[1], l.Out[0]
	group, kernel, err := convOperands(l, x, w, true)
	if err != nil {
		return err
	}
	win, err := transposedGeom(l, x.Shape[2:], kernel)
	if err != nil {
		return err
	}
	n, c, mg := x.Shape[0], x.Shape[1], w.Shape[1]
	m := mg * group
	if y.Rank() != x.Rank() || y.Shape[1] != m || !win.outIs(y.Shape[2:]) {
		return l.NoKernel("geometry %v differs from the output %v", win.out, y.Shape)
	}
	bias, err := convBias(l, 2, m)
	if err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	cg := c / group
	isp, osp, ksz := prod3(win.in), prod3(win.out), prod3(win.kernel)
	rows := int64(mg) * ksz
	if cg == 0 || isp == 0 {
		return l.NoKernel("empty input")
	}
	perImage := int64(m) * ksz * isp
	chunk := int(max(1, min(int64(n), colLimit/perImage)))
	col := l.Scratch(inference.Float32, []int{chunk * int(perImage)})
	g := GemmOp{Gemm: Gemm{TransB: true, M: int(isp), N: int(rows), K: cg, Alpha: 1, LDA: int(isp), LDB: int(rows), LDC: int(isp)},
		OpA: x, OpB: w, OpC: col}
	for n0 := 0; n0 < n; n0 += chunk {
		nc := min(chunk, n-n0)
		g.AOff = int64(n0) * int64(c) * isp
		if err := gemmUnits(l, g, nc, group, int64(c)*isp, int64(cg)*isp, int64(cg)*rows, perImage, rows*isp); err != nil {
			return err
		}
		dst := y.Offset(int64(n0)*int64(m)*osp, []int{nc, m, int(osp)})
		total := int64(nc) * int64(m) * osp
		args := append([]Arg{P(dst), P(col), bias, I(total), I(m)},
			spatialArgs(win.in, win.kernel, win.out, win.stride, win.dilation, win.padBegin)...)
		if err := l.Launch("conv_col2im_f32", total, args...); err != nil {
			return err
		}
	}
	return nil
}

// lowerGemm computes Y = alpha·A'·B' + beta·C as the column-major
// Yᵀ = alpha·B'ᵀ·A'ᵀ + beta·Cᵀ, after gemm_fill_f32 has broadcast C into Y.
func lowerGemm(l *Lower) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if a.DType != inference.Float32 || b.DType != inference.Float32 {
		return l.NoKernel("%v and %v inputs", a.DType, b.DType)
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		return l.NoKernel("A %v, B %v, want rank 2", a.Shape, b.Shape)
	}
	transA, transB := l.Int("transA", 0) != 0, l.Int("transB", 0) != 0
	alpha, beta := l.Float("alpha", 1), l.Float("beta", 1)
	m, k := a.Shape[0], a.Shape[1]
	if transA {
		m, k = k, m
	}
	kb, n := b.Shape[0], b.Shape[1]
	if transB {
		kb, n = n, kb
	}
	if k != kb || k == 0 || !slices.Equal(y.Shape, []int{m, n}) {
		return l.NoKernel("A %v, B %v, Y %v", a.Shape, b.Shape, y.Shape)
	}
	if y.Len() == 0 {
		return nil
	}
	if c := l.Arg(2); c.Present() && beta != 0 {
		if c.DType != inference.Float32 || c.Rank() > 2 || (l.Opset < 7 && l.Int("broadcast", 0) == 0 && !slices.Equal(c.Shape, y.Shape)) {
			return l.NoKernel("C %v %v", c.DType, c.Shape)
		}
		cm, cn := 1, 1
		if c.Rank() >= 1 {
			cn = c.Shape[c.Rank()-1]
		}
		if c.Rank() == 2 {
			cm = c.Shape[0]
		}
		if (cm != 1 && cm != m) || (cn != 1 && cn != n) {
			return l.NoKernel("C %v does not broadcast to %v", c.Shape, y.Shape)
		}
		var rs, cs int
		if cm == m {
			rs = cn
		}
		if cn == n {
			cs = 1
		}
		if err := l.Launch("gemm_fill_f32", y.Len(), P(y), P(c), I(m), I(n), I(rs), I(cs)); err != nil {
			return err
		}
	} else {
		beta = 0
	}
	return l.Gemm(GemmOp{Gemm: Gemm{TransA: transB, TransB: transA, M: n, N: m, K: k, Alpha: alpha, Beta: beta,
		LDA: max(1, b.Shape[1]), LDB: max(1, a.Shape[1]), LDC: n}, OpA: b, OpB: a, OpC: y})
}

// lowerMatMul follows numpy.matmul, as the CPU does: each product of the
// broadcast batch is the column-major Y_bᵀ = B_bᵀ·A_bᵀ. Consecutive
// products whose operands lie at constant strides share one strided
// batched call; with one B and contiguous A the batch is a single product
// of (batch·m) rows.
func lowerMatMul(l *Lower) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if a.DType != inference.Float32 || b.DType != inference.Float32 {
		return l.NoKernel("%v and %v inputs", a.DType, b.DType)
	}
	as, bs := a.Shape, b.Shape
	if len(as) == 0 || len(bs) == 0 {
		return l.NoKernel("scalar operand")
	}
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	if bs[len(bs)-2] != k || k == 0 {
		return l.NoKernel("A %v, B %v", a.Shape, b.Shape)
	}
	aBatch, bBatch := as[:len(as)-2], bs[:len(bs)-2]
	batch, err := cpu.BroadcastShape(aBatch, bBatch)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if y.Len() == 0 {
		return nil
	}
	nb := int(numElems(batch))
	aOff, bOff := cpu.BroadcastOffsets(aBatch, batch), cpu.BroadcastOffsets(bBatch, batch)
	g := GemmOp{Gemm: Gemm{M: n, N: m, K: k, Alpha: 1, LDA: n, LDB: k, LDC: n}, OpA: b, OpB: a, OpC: y}
	oneB := !slices.ContainsFunc(bOff, func(o int) bool { return o != 0 })
	if oneB && slices.Equal(aOff, rangeInts(nb)) {
		g.N = nb * m
		return l.Gemm(g)
	}
	ak, bk, yk := int64(m*k), int64(k*n), int64(m*n)
	for i := 0; i < nb; {
		j := i + 1
		var sa, sb int
		if j < nb {
			sa, sb = aOff[j]-aOff[i], bOff[j]-bOff[i]
		}
		for j < nb && aOff[j]-aOff[j-1] == sa && bOff[j]-bOff[j-1] == sb {
			j++
		}
		u := g
		u.Batch = j - i
		u.AOff, u.BOff, u.COff = int64(bOff[i])*bk, int64(aOff[i])*ak, int64(i)*yk
		u.StrideA, u.StrideB, u.StrideC = int64(sb)*bk, int64(sa)*ak, yk
		if err := l.Gemm(u); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func rangeInts(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

// lowerPool lowers MaxPool, AveragePool and LpPool to pool_f32, and
// MaxPool with its Indices output to pool_max_index_f32: one thread per
// output element walks its window.
func lowerPool(l *Lower, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	if x.Rank() < 3 || x.Rank() > 5 {
		return l.NoKernel("X %v: kernels take rank 3 to 5", x.Shape)
	}
	indices := kind == poolMax && len(l.Out) > 1 && l.Out[1].Present()
	if indices && l.Out[1].DType != inference.Int64 {
		return l.NoKernel("Indices output of type %v", l.Out[1].DType)
	}
	r := x.Rank() - 2
	kernel, ok := spatialInts(l, "kernel_shape", r, 1)
	if !ok || !l.Node.Has("kernel_shape") {
		return l.NoKernel("kernel_shape %v for %d spatial dimensions", kernel, r)
	}
	kern := make([]int, r)
	for d, v := range kernel {
		kern[d] = int(v)
	}
	win, err := slidingGeom(l, x.Shape[2:], kern, l.Int("ceil_mode", 0) != 0)
	if err != nil {
		return err
	}
	if !win.outIs(y.Shape[2:]) || y.Rank() != x.Rank() {
		return l.NoKernel("geometry %v differs from the output %v", win.out, y.Shape)
	}
	p := float64(l.Int("p", 2))
	if a, ok := l.Node.Attrs["p"]; ok && a.Type == graph.AttrFloat {
		p = float64(a.Float)
	}
	if kind == poolLp && p <= 0 {
		return l.NoKernel("p = %g", p)
	}
	if indices {
		args := append([]Arg{P(y), P(l.Out[1]), P(x), I(y.Len())},
			spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin)...)
		return l.Launch("pool_max_index_f32", y.Len(), append(args, I(l.Int("storage_order", 0)))...)
	}
	args := append([]Arg{I(kind), P(y), P(x), I(y.Len())},
		spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin, win.padEnd)...)
	return l.Launch("pool_f32", y.Len(), append(args, I(l.Int("count_include_pad", 0)), F(p))...)
}

// lowerGlobalPool reduces each plane with pool_global_f32, a block per
// plane.
func lowerGlobalPool(l *Lower, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	if x.Rank() < 2 {
		return l.NoKernel("X %v, want rank ≥ 2", x.Shape)
	}
	planes := int64(x.Shape[0]) * int64(x.Shape[1])
	if planes == 0 {
		return nil
	}
	return l.LaunchGrid("pool_global_f32", Dim3{X: uint32(min(planes, maxGrid))}, Dim3{X: Threads},
		I(kind), P(y), P(x), I(planes), I(numElems(x.Shape[2:])))
}

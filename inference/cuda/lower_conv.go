package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the convolutions (nn.cu conv_*, and cuBLAS): Conv as
// im2col and GEMMs, or a direct kernel for depthwise layers, and
// ConvTranspose as GEMMs and col2im. The operands' rules are
// opsem.ConvOperands' and the window geometry opsem.SlidingWindow's and
// opsem.TransposedWindow's (window.go pads it to the kernels' three
// dimensions); a lowering whose geometry does not give the plan's output
// shape sends the node to the host. The fused activation that
// passes.FuseEpilogues puts on a Conv (attributes passes.FusedMin and
// passes.FusedMax) clamps the output.

// colLimit bounds the im2col and col2im scratch matrices, in floats
// (64 MiB): a batch whose columns would not fit runs in chunks of images.
// Tests lower it to check the chunking.
var colLimit int64 = 1 << 24

func init() {
	registerLowering("Conv", lowerConv)
	registerLowering("ConvTranspose", lowerConvTranspose)
	registerHalf("Conv")
}

// prod3 is the element count of a three-dimensional spatial shape.
func prod3(v [3]int64) int64 { return v[0] * v[1] * v[2] }

// convOperands checks Conv's or ConvTranspose's X and W as the kernels
// take them (float32, or float16 for Conv; ranks 3 to 5) and returns
// opsem.ConvOperands' group count and the window: opsem.SlidingWindow's
// for Conv, opsem.TransposedWindow's for ConvTranspose.
func convOperands(l *lowering, x, w operand, transposed bool) (group int, win convWindow, err error) {
	if x.DType != w.DType || x.DType != inference.Float32 && (transposed || x.DType != inference.Float16) {
		return 0, win, l.NoKernel("%v input, %v weights", x.DType, w.DType)
	}
	if x.Rank() < 3 || x.Rank() > 5 {
		return 0, win, l.NoKernel("X %v, W %v: kernels take ranks 3 to 5", x.Shape, w.Shape)
	}
	group, kernel, err := opsem.ConvOperands(l.Node, x.Shape, w.Shape, transposed)
	if err != nil {
		return 0, win, l.NoKernel("%v", err)
	}
	var g opsem.Window
	if transposed {
		g, err = opsem.TransposedWindow(l.Node, x.Shape[2:], kernel)
	} else {
		g, err = opsem.SlidingWindow(l.Node, x.Shape[2:], kernel, false)
	}
	if err != nil {
		return 0, win, l.NoKernel("%v", err)
	}
	win, err = kernelWindow(l, g)
	return group, win, err
}

// convBias returns the argument for an optional per-channel bias,
// input i: its address, or a null pointer when it is left out.
func convBias(l *lowering, i, channels int) (kernelArg, error) {
	b := l.input(i)
	if !b.Present() {
		return intArg(0), nil
	}
	if x := l.In[0]; b.DType != x.DType || b.Rank() != 1 || b.Shape[0] != channels {
		return kernelArg{}, l.NoKernel("bias %v %v, want %v [%d]", b.DType, b.Shape, x.DType, channels)
	}
	return ptrArg(b), nil
}

// gemmUnits queues g for images × groups products: product (n, k) reads A
// at AOff + n·aImg + k·aGrp and B at BOff + k·bGrp, and writes C at
// COff + n·cImg + k·cGrp. Each call is strided batched over the longer of
// the two loops.
func gemmUnits(l *lowering, g gemmOp, images, groups int, aImg, aGrp, bGrp, cImg, cGrp int64) error {
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
// follow in one pass. A float16 Conv gathers float16 columns and
// accumulates in float32 (the GEMM's, or the direct kernel's), rounding
// its output once.
func lowerConv(l *lowering) error {
	x, w, y := l.In[0], l.In[1], l.Out[0]
	group, win, err := convOperands(l, x, w, false)
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
	ep, err := productEpilogue(l, y, bias, 0, int64(m))
	if err != nil {
		return err
	}
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
	if depthwise(x, group) {
		// The direct kernel adds the bias, and clamps when that is all.
		clamp := []kernelArg{intArg(0), floatArg(0.0), floatArg(0.0)}
		rest := ep
		rest.bias = intArg(0)
		if ep.pointwise() && ep.clamp {
			clamp = []kernelArg{intArg(1), floatArg(ep.lo), floatArg(ep.hi)}
			rest.clamp = false
		}
		rest.size = osp
		kernel := kernels.ConvDirectF32
		if y.DType == inference.Float16 {
			// The graph passes fuse no epilogue into a float16 model's
			// product (its output is rounded first). In FP16 mode the
			// epilogue was fused before StoreInFloat16 made the product
			// float16 (MobileNetV3's depthwise Conv and hard-swish,
			// EfficientNet's and SiLU): its launch reads y rounded, one
			// rounding more than the CPU's float32 output, which the
			// mode's tolerance allows (as roundsFirst).
			if !rest.none() && l.p.m.precision != inference.FP16 {
				return l.NoKernel("float16 depthwise Conv with a fused epilogue")
			}
			kernel = kernels.ConvDirectF16
		}
		args := append([]kernelArg{ptrArg(y), ptrArg(x), ptrArg(w), bias, intArg(y.Len()), intArg(c), intArg(m), intArg(cg), intArg(mg)}, geom...)
		args = append(append(args, clamp...), convPrologue(l, x)...)
		if err := l.Launch(kernel, y.Len(), args...); err != nil {
			return err
		}
		return rest.applyOrOffer(l, y, y)
	}
	pointwise := !gathers(x, group, win)
	acc := accumulator(l, y, !ep.none() && !ep.roundsFirst(l, y))
	g := gemmOp{Gemm: Gemm{M: int(osp), N: mg, K: int(rows), Alpha: 1, LDA: int(osp), LDB: int(rows), LDC: int(osp)},
		OpB: w, OpC: acc}
	cImg, cGrp, bGrp := int64(m)*osp, int64(mg)*osp, int64(mg)*rows
	if pointwise {
		g.OpA = x
		if err := gemmUnits(l, g, n, group, int64(c)*isp, rows*osp, bGrp, cImg, cGrp); err != nil {
			return err
		}
	} else {
		pro := convPrologue(l, x)
		prologue := []kernelArg{pro[0], intArg(c), pro[1], pro[2], pro[3]}
		perImage := int64(c) * ksz * osp
		chunk := int(max(1, min(int64(n), colLimit/perImage)))
		col := l.Scratch(x.DType, []int{chunk * int(perImage)})
		for n0 := 0; n0 < n; n0 += chunk {
			nc := min(chunk, n-n0)
			src := x.Offset(int64(n0)*int64(c)*isp, []int{nc, c, int(isp)})
			args := append(append([]kernelArg{ptrArg(col), ptrArg(src), intArg(int64(nc) * perImage)}, geom...), prologue...)
			im2col := halfKernel(kernels.ConvIm2colF32, kernels.ConvIm2colF16, x.DType)
			if im2col32 && win.fits32(int64(nc)*int64(c)*isp, int64(nc)*perImage) {
				// 32-bit divisions: a fraction of 64-bit ones
				im2col = halfKernel(kernels.ConvIm2col32F32, kernels.ConvIm2col32F16, x.DType)
			}
			if err := l.Launch(im2col, int64(nc)*perImage, args...); err != nil {
				return err
			}
			g.OpA, g.COff = col, int64(n0)*cImg
			if err := gemmUnits(l, g, nc, group, perImage, rows*osp, bGrp, cImg, cGrp); err != nil {
				return err
			}
		}
	}
	ep.size = osp
	return ep.applyOrOffer(l, acc, y)
}

// depthwise reports whether a Conv of x in group groups has one input
// channel per group: lowerConv runs it with the direct kernel.
func depthwise(x operand, group int) bool { return group > 1 && x.Shape[1]/group == 1 }

// gathers reports whether lowerConv gathers the Conv's input x, in its
// group groups and window win: with the direct kernel or im2col, which
// apply the pointwise epilogue x's producer offers (convPrologue). A 1×1
// Conv with unit strides and no padding multiplies x itself.
func gathers(x operand, group int, win convWindow) bool {
	return depthwise(x, group) || win.kernel != [3]int64{1, 1, 1} || win.stride != [3]int64{1, 1, 1} ||
		win.padBegin != [3]int64{} || win.padEnd != [3]int64{}
}

// convPrologue returns the arguments (bias, clamp, lo, hi) of the
// epilogue x's producer offered to this Conv, which its kernel applies to
// each element of x it reads (epilogue.go's deferred epilogues): none
// when there is none.
func convPrologue(l *lowering, x operand) []kernelArg {
	pre, ok := l.takeEpilogue(x)
	if !ok {
		return []kernelArg{intArg(0), intArg(0), floatArg(0.0), floatArg(0.0)}
	}
	return []kernelArg{pre.bias, intArg(btoi(pre.clamp)), floatArg(pre.lo), floatArg(pre.hi)}
}

// im2col32 lets im2col take 32-bit index arithmetic where it holds
// (convWindow.fits32); tests turn it off to check the 64-bit kernel.
var im2col32 = true

// lowerConvTranspose runs, per image and group, the GEMM col[n, g]
// (M/group·∏kernel × ∏in) = W[g]ᵀ · X[n, g] (in cuBLAS's terms colᵀ =
// X[n, g]ᵀ·W[g]), then conv_col2im_f32 gathers the columns into the output
// and adds the bias.
func lowerConvTranspose(l *lowering) error {
	x, w, y := l.In[0], l.In[1], l.Out[0]
	group, win, err := convOperands(l, x, w, true)
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
	g := gemmOp{Gemm: Gemm{TransB: true, M: int(isp), N: int(rows), K: cg, Alpha: 1, LDA: int(isp), LDB: int(rows), LDC: int(isp)},
		OpA: x, OpB: w, OpC: col}
	for n0 := 0; n0 < n; n0 += chunk {
		nc := min(chunk, n-n0)
		g.AOff = int64(n0) * int64(c) * isp
		if err := gemmUnits(l, g, nc, group, int64(c)*isp, int64(cg)*isp, int64(cg)*rows, perImage, rows*isp); err != nil {
			return err
		}
		dst := y.Offset(int64(n0)*int64(m)*osp, []int{nc, m, int(osp)})
		total := int64(nc) * int64(m) * osp
		args := append([]kernelArg{ptrArg(dst), ptrArg(col), bias, intArg(total), intArg(m)},
			spatialArgs(win.in, win.kernel, win.out, win.stride, win.dilation, win.padBegin)...)
		if err := l.Launch(kernels.ConvCol2imF32, total, args...); err != nil {
			return err
		}
	}
	return nil
}

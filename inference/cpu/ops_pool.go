package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Pooling operators: MaxPool, AveragePool, LpPool, GlobalAveragePool,
// GlobalMaxPool and MaxUnpool. Tensors are NCHW: [batch, channels,
// spatial...]; the window geometry is opsem's (PoolWindow).

func init() {
	register("MaxPool", plMaxPool)
	register("AveragePool", plAveragePool)
	register("LpPool", plLpPool)
	register("GlobalAveragePool", plGlobalAveragePool)
	register("GlobalMaxPool", plGlobalMaxPool)
	register("MaxUnpool", plMaxUnpool)
}

// plPoolKind selects what a pooling window computes.
type plPoolKind uint8

const (
	plMaxKind plPoolKind = iota
	plAvgKind
	plLpKind
)

// plPoolTaps lists, for one spatial dimension, the input indices each
// output position's window reads (padding left out), and how many window
// taps lie inside the padded extent [−padBegin, in+padEnd).
type plPoolTaps struct {
	start []int // taps of output o are idx[start[o]:start[o+1]]
	idx   []int
	inPad []int
}

// plPoolTapsOf lists dimension d's taps, allocated under r: at most
// min(Kernel[d], In[d]) per output position, found without visiting the
// taps in the padding (the kernel can be far larger than the input).
func plPoolTapsOf(r *limit.Run, g opsem.Window, d int) (plPoolTaps, error) {
	out, kernel, dil := g.Out[d], g.Kernel[d], g.Dilation[d]
	// Tap k of window o reads index first(o) + k·dil: it lies in the input
	// for k in [lo, hi), and in the padded extent for k < padHi.
	first := func(o int) int { return o*g.Stride[d] - g.PadBegin[d] }
	taps := func(o int) (lo, hi, padHi int) {
		upTo := func(end int) int { return min(kernel, max(0, (end-first(o)+dil-1)/dil)) }
		return upTo(0), upTo(g.In[d]), upTo(g.In[d] + g.PadEnd[d])
	}
	var t plPoolTaps
	var err error
	if t.start, err = limit.Make[int](r, out+1); err != nil {
		return t, err
	}
	if t.inPad, err = limit.Make[int](r, out); err != nil {
		return t, err
	}
	for o := range out {
		lo, hi, padHi := taps(o)
		t.start[o+1] = t.start[o] + max(0, hi-lo)
		t.inPad[o] = padHi
	}
	if t.idx, err = limit.Make[int](r, t.start[out]); err != nil {
		return t, err
	}
	for o := range out {
		lo, hi, _ := taps(o)
		for k := lo; k < hi; k++ {
			t.idx[t.start[o]+k-lo] = first(o) + k*dil
		}
	}
	return t, nil
}

// plPoolChunk bounds the window offsets plPool gathers at a time.
const plPoolChunk = 1 << 14

// plPool runs MaxPool, AveragePool and LpPool over x [N, C, spatial...].
// For each output position it gathers the window's offsets into the input
// plane (and, for MaxPool's Indices, the same elements' offsets in the
// storage order asked for) and reduces over them.
func plPool(n opsem.Node, in []inference.Tensor, kind plPoolKind) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	g, err := opsem.PoolWindow(n, xs)
	if err != nil {
		return nil, err
	}
	r := len(xs) - 2
	includePad, colMajor := opsem.PoolOptions(n)
	var p float64
	if kind == plLpKind {
		if p, err = opsem.PoolP(n); err != nil {
			return nil, err
		}
	}
	wantIndices := kind == plMaxKind && wantsOutput(n, 1)
	shape := append([]int{xs[0], xs[1]}, g.Out...)
	out, err := limit.MakeOverwritten[float32](n.Run, shape...) // every window writes its element
	if err != nil {
		return nil, err
	}
	var indices []int64
	if wantIndices {
		if indices, err = limit.Make[int64](n.Run, shape...); err != nil {
			return nil, err
		}
	}
	// Counted from the output: without output elements the spatial
	// dimensions may not count within int, nor the positions fit a table.
	planes, isp, osp := 0, 0, 0
	taps := make([]plPoolTaps, r)
	if len(out) > 0 {
		planes = xs[0] * xs[1]
		isp, osp = len(xd)/planes, len(out)/planes
		for d := range r {
			if taps[d], err = plPoolTapsOf(n.Run, g, d); err != nil {
				return nil, err
			}
		}
	}
	rowStrides := opsem.Strides(g.In)
	idxStrides := rowStrides
	if colMajor {
		idxStrides = make([]int, r)
		acc := 1
		for d := range r {
			idxStrides[d] = acc
			acc *= g.In[d]
		}
	}
	if kind == plMaxKind && !wantIndices && r == 2 && g.Dilation[0] == 1 && g.Dilation[1] == 1 && g.Stride[1] <= 2 && len(out) > 0 {
		plMaxPool2D(xd, out, planes, g, taps[0])
		y, err := inference.New(shape, out)
		return []inference.Tensor{y}, err
	}
	window := 1 // the most taps of a window inside the input
	for d := range r {
		window *= min(g.Kernel[d], g.In[d])
	}
	// Output positions go in chunks: the chunk's window offsets are gathered
	// once, then every plane of the worker reduces over them.
	chunk := max(1, plPoolChunk/max(1, window))
	parallelFor(planes, osp*window, func(lo, hi int) {
		var offs, idxOffs, cur, curIdx, next, nextIdx []int
		starts := make([]int, 0, chunk+1)
		padCounts := make([]int, 0, chunk)
		pos := make([]int, r)
		for o0 := 0; o0 < osp; o0 += chunk {
			o1 := min(osp, o0+chunk)
			offs, idxOffs = offs[:0], idxOffs[:0]
			starts, padCounts = starts[:0], padCounts[:0]
			for range o1 - o0 {
				// The window's offsets, in row-major order: the product
				// over dimensions of each dimension's taps.
				cur, curIdx = append(cur[:0], 0), append(curIdx[:0], 0)
				padCount := 1
				for d := range r {
					td := taps[d].idx[taps[d].start[pos[d]]:taps[d].start[pos[d]+1]]
					padCount *= taps[d].inPad[pos[d]]
					next, nextIdx = next[:0], nextIdx[:0]
					for j := range cur {
						for _, i := range td {
							next = append(next, cur[j]+i*rowStrides[d])
							nextIdx = append(nextIdx, curIdx[j]+i*idxStrides[d])
						}
					}
					cur, next = next, cur
					curIdx, nextIdx = nextIdx, curIdx
				}
				starts = append(starts, len(offs))
				padCounts = append(padCounts, padCount)
				offs = append(offs, cur...)
				if wantIndices {
					idxOffs = append(idxOffs, curIdx...)
				}
				for d := r - 1; d >= 0; d-- {
					if pos[d]++; pos[d] < g.Out[d] {
						break
					}
					pos[d] = 0
				}
			}
			starts = append(starts, len(offs))
			for pl := lo; pl < hi; pl++ {
				plane := xd[pl*isp : (pl+1)*isp]
				y := out[pl*osp+o0 : pl*osp+o1]
				switch {
				case kind == plMaxKind && !wantIndices:
					for o := range y {
						best := float32(math.Inf(-1))
						for _, off := range offs[starts[o]:starts[o+1]] {
							if v := plane[off]; v > best {
								best = v
							}
						}
						y[o] = best
					}
				case kind == plMaxKind:
					for o := range y {
						best, at := float32(math.Inf(-1)), -1
						for j, off := range offs[starts[o]:starts[o+1]] {
							if v := plane[off]; v > best || at < 0 {
								best, at = v, j
							}
						}
						y[o] = best
						if at >= 0 {
							indices[pl*osp+o0+o] = int64(pl*isp + idxOffs[starts[o]+at])
						}
					}
				case kind == plAvgKind:
					for o := range y {
						win := offs[starts[o]:starts[o+1]]
						var s float32
						for _, off := range win {
							s += plane[off]
						}
						count := len(win)
						if includePad {
							count = padCounts[o]
						}
						y[o] = s / float32(count)
					}
				default:
					for o := range y {
						var s float64
						for _, off := range offs[starts[o]:starts[o+1]] {
							s += math.Pow(math.Abs(float64(plane[off])), p)
						}
						y[o] = float32(math.Pow(s, 1/p))
					}
				}
			}
		}
	})
	y, err := inference.New(shape, out)
	if err != nil {
		return nil, err
	}
	if !wantIndices {
		return []inference.Tensor{y}, nil
	}
	idx, err := inference.New(shape, indices)
	if err != nil {
		return nil, err
	}
	return []inference.Tensor{y, idx}, nil
}

// plMaxPool2D is MaxPool over 2-D planes, without indices or dilation and
// with a column stride of 1 or 2, an output row at a time: for each input
// row its windows read (rows) and each column tap, one contiguous pass of
// maxInto over the outputs whose tap lies inside the row. At stride 2 the
// plane is split into even and odd columns first (cvSplitColumns), where
// a tap's columns are contiguous again. Taps in the padding are skipped,
// as the general path skips them.
func plMaxPool2D(xd, out []float32, planes int, g opsem.Window, rows plPoolTaps) {
	ih, iw, oh, ow := g.In[0], g.In[1], g.Out[0], g.Out[1]
	sw, pw, kw := g.Stride[1], g.PadBegin[1], g.Kernel[1]
	isp, osp := ih*iw, oh*ow
	we, wo := (iw+1)/2, iw/2
	// Kernel column kx reads, for outputs oLo…oHi−1, the input columns
	// from c on (every sw-th): the same on every row, worked out once.
	type tap struct{ oLo, oHi, c int }
	taps := make([]tap, 0, kw)
	for kx := range kw {
		off := kx - pw // output ox reads column ox·sw + off
		if iw-off <= 0 {
			continue
		}
		oLo, oHi := 0, min(ow, (iw-off+sw-1)/sw)
		if off < 0 {
			oLo = (-off + sw - 1) / sw
		}
		if oLo < oHi {
			taps = append(taps, tap{oLo, oHi, oLo*sw + off})
		}
	}
	parallelFor(planes, osp*g.Kernel[0]*kw, func(lo, hi int) {
		var columns []float32
		if sw == 2 {
			var done func()
			columns, done = cvScratch(isp)
			defer done()
		}
		for pl := lo; pl < hi; pl++ {
			plane := xd[pl*isp : (pl+1)*isp]
			if sw == 2 {
				cvSplitColumns(columns, plane, ih, iw)
			}
			for oy := range oh {
				acc := out[pl*osp+oy*ow : pl*osp+(oy+1)*ow]
				fill(acc, float32(math.Inf(-1)))
				for _, iy := range rows.idx[rows.start[oy]:rows.start[oy+1]] {
					for _, t := range taps {
						switch {
						case sw == 1:
							maxInto(acc[t.oLo:t.oHi], plane[iy*iw+t.c:])
						case t.c%2 == 0:
							maxInto(acc[t.oLo:t.oHi], columns[iy*we+t.c/2:])
						default:
							maxInto(acc[t.oLo:t.oHi], columns[ih*we+iy*wo+t.c/2:])
						}
					}
				}
			}
		}
	})
}

// MaxPool accepts dilations and ceil_mode at every opset: one opset-6
// PyTorch export carries dilations, which onnxruntime honours. Indices
// count over the whole tensor, row-major or, with storage_order 1,
// column-major within each plane.
func plMaxPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plMaxKind)
}

// AveragePool divides by the taps inside the input, or with
// count_include_pad by the taps inside the padded input.
func plAveragePool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plAvgKind)
}

// LpPool computes (Σ|x|^p)^(1/p) over the window; p is a float attribute in
// LpPool-1 and an integer from LpPool-2.
func plLpPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plLpKind)
}

// plGlobalPool reduces each plane of x [N, C, spatial...] to one value.
func plGlobalPool(n opsem.Node, in []inference.Tensor, reduce func(plane []float32) float32) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	xs := x.Shape()
	if len(xs) < 2 {
		return nil, fmt.Errorf("X is %v, want rank ≥ 2: %w", x, inference.ErrShape)
	}
	out, err := limit.Make[float32](n.Run, xs[0], xs[1])
	if err != nil {
		return nil, err
	}
	// Each plane holds size elements; without planes the spatial
	// dimensions may not count within int.
	planes, size := len(out), 0
	if planes > 0 {
		size = len(xd) / planes
	}
	parallelFor(planes, size, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			out[pl] = reduce(xd[pl*size : (pl+1)*size])
		}
	})
	shape := slices.Clone(xs)
	for d := 2; d < len(shape); d++ {
		shape[d] = 1
	}
	return opsem.Single(n, shape, out)
}

// GlobalAveragePool sums each plane in partial sums (sumFloats), within
// (size/8 + 16)·2⁻²⁴·Σ|x| of the exact sum, then divides.
func plGlobalAveragePool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plGlobalPool(n, in, func(plane []float32) float32 {
		return sumFloats(plane) / float32(len(plane))
	})
}

// GlobalMaxPool takes Go's max over each plane (maxFloats): NaN if the
// plane holds one.
func plGlobalMaxPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plGlobalPool(n, in, maxFloats)
}

// MaxUnpool scatters X into zeros at the flat positions I gives (MaxPool's
// Indices). The output shape is input 2 when present, else spatially
// (in−1)·stride + kernel − padBegin − padEnd: the output of the transposed
// window (opsem.TransposedWindow) of kernel_shape, strides and pads.
func plMaxUnpool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	it, err := requiredArg(in, 1, "I")
	if err != nil {
		return nil, err
	}
	if it.DType() != inference.Int64 {
		return nil, fmt.Errorf("I is %v, want int64: %w", it, inference.ErrType)
	}
	id, _ := inference.Data[int64](it)
	xs := x.Shape()
	if len(xs) < 3 || !slices.Equal(xs, it.Shape()) {
		return nil, fmt.Errorf("X is %v, I is %v; want equal shapes of rank ≥ 3: %w", x, it, inference.ErrShape)
	}
	kernel, err := opsem.KernelShape(n, len(xs)-2, nil)
	if err != nil {
		return nil, err
	}
	g, err := opsem.TransposedWindow(n, xs[2:], kernel)
	if err != nil {
		return nil, err
	}
	shape := append([]int{xs[0], xs[1]}, g.Out...)
	if len(in) > 2 && present(in[2]) {
		want, err := opsem.Int64s(in[2])
		if err != nil {
			return nil, fmt.Errorf("output_shape: %w", err)
		}
		if len(want) != len(xs) || int(want[0]) != xs[0] || int(want[1]) != xs[1] {
			return nil, fmt.Errorf("output_shape %v for X %v: %w", want, x, inference.ErrShape)
		}
		for d, v := range want {
			shape[d] = int(v)
		}
	}
	size, err := inference.NumElements(shape)
	if err != nil {
		return nil, err
	}
	out, err := limit.Make[float32](n.Run, size)
	if err != nil {
		return nil, err
	}
	for i, at := range id {
		if at < 0 || at >= int64(size) {
			return nil, fmt.Errorf("I[%d] = %d is outside the output %v: %w", i, at, shape, inference.ErrShape)
		}
		out[at] = xd[i]
	}
	return opsem.Single(n, shape, out)
}

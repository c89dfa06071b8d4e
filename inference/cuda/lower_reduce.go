package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
)

// Lowerings of the reductions (reduce.cu): the Reduce operators, ArgMax
// and ArgMin, over an [outer, k, inner] view of the input, a thread or a
// block per output element.

// Codes of the reduce_* kernels (reduce.cu's R_* constants).
const (
	rSum = iota
	rMean
	rMax
	rMin
	rProd
	rL1
	rL2
	rLogSum
	rLogSumExp
	rSumSquare
)

// reduceOps maps each Reduce operator to its code and the opset from
// which it takes its axes as an input rather than an attribute.
var reduceOps = map[string]struct {
	code  int
	since int64
}{
	"ReduceSum": {rSum, 13}, "ReduceMean": {rMean, 18}, "ReduceMax": {rMax, 18}, "ReduceMin": {rMin, 18},
	"ReduceProd": {rProd, 18}, "ReduceL1": {rL1, 18}, "ReduceL2": {rL2, 18}, "ReduceLogSum": {rLogSum, 18},
	"ReduceLogSumExp": {rLogSumExp, 18}, "ReduceSumSquare": {rSumSquare, 18},
}

func init() {
	for op, r := range reduceOps {
		registerLowering(op, func(l *Lower) error { return lowerReduce(l, r.code, r.since) })
	}
	registerLowering("ArgMax", func(l *Lower) error { return lowerArg(l, true) })
	registerLowering("ArgMin", func(l *Lower) error { return lowerArg(l, false) })
}

// blockReduce reports whether a reduction of k elements into each of
// outputs elements takes a block per output element (reduce_block_*,
// arg_block_f32) rather than a thread: for long reductions, and for
// shorter ones when the outputs are too few to occupy the GPU a thread
// each.
func blockReduce(outputs, k int64) bool {
	return k >= 256 || (k >= 32 && outputs < 2048)
}

// launchReduce launches a reduction kernel over the [outer, k, inner] view,
// a thread or a block (of Threads, reduce.cu's BLOCK) per output element.
func launchReduce(l *Lower, thread, block string, outer, k, inner int64, args ...Arg) error {
	args = append(args, I(outer), I(k), I(inner))
	n := outer * inner
	if n == 0 {
		return nil
	}
	if !blockReduce(n, k) {
		return l.Launch(thread, n, args...)
	}
	return l.LaunchGrid(block, Dim3{uint32(min(n, maxGrid)), 1, 1}, Dim3{Threads, 1, 1}, args...)
}

// lowerReduce handles the Reduce operators on float32 (accumulating in
// float) and, but for LogSum and LogSumExp, on int64 and int32
// (accumulating exactly in 64 bits), over any set of axes: attribute axes
// before opset since, axes known on the host from it on.
func lowerReduce(l *Lower, code int, since int64) error {
	x, y := l.In[0], l.Out[0]
	var axes []int64
	if l.Opset < since {
		axes = l.Ints("axes", nil)
	} else if a := l.Arg(1); a.Present() {
		t, ok := a.Host()
		if !ok {
			return l.NoKernel("axes %q computed on the device", a.Name)
		}
		v, err := cpu.Int64s(t)
		if err != nil {
			return l.Errorf(inference.ErrType, "axes %v: %v", t, err)
		}
		axes = v
	}
	if l.Opset >= since && len(axes) == 0 && l.Int("noop_with_empty_axes", 0) != 0 {
		return l.Copy(y, x)
	}
	reduced := make([]bool, x.Rank())
	for i := range reduced {
		reduced[i] = len(axes) == 0
	}
	for _, a := range axes {
		ax, err := cpu.NormAxis(a, x.Rank())
		if err != nil {
			return l.Errorf(inference.ErrShape, "axes %v: %v", axes, err)
		}
		reduced[ax] = true
	}
	k := int64(1)
	for i, d := range x.Shape {
		if reduced[i] {
			k *= int64(d)
		}
	}

	var thread, block string
	var args []Arg
	switch x.DType {
	case inference.Float32:
		thread, block, args = "reduce_f32", "reduce_block_f32", []Arg{I(code), P(y), P(x)}
	case inference.Int64, inference.Int32:
		switch {
		case code == rLogSum || code == rLogSumExp:
			return l.NoKernel("%v input", x.DType)
		case code == rMean && k == 0:
			return l.NoKernel("integer mean of an empty set (the CPU backend reports it)")
		}
		t, _ := typeCode(x.DType)
		thread, block, args = "reduce_int", "reduce_block_int", []Arg{I(code), I(t), P(y), P(x)}
	default:
		return l.NoKernel("%v input", x.DType)
	}

	if x.Len() == 0 { // nothing to read: every output is the empty reduction
		return launchReduce(l, thread, block, 1, 0, y.Len(), args...)
	}
	// Group the axes into runs of reduced and kept ones, leaving out those
	// of size 1: [kept, reduced, kept] is the kernels' [outer, k, inner];
	// other patterns gather the kept axes before the reduced ones first.
	type run struct {
		d, stride int64
		reduced   bool
	}
	var runs []run
	stride := int64(1)
	for i := x.Rank() - 1; i >= 0; i-- {
		d := int64(x.Shape[i])
		switch {
		case d == 1:
		case len(runs) > 0 && runs[0].reduced == reduced[i]:
			runs[0].d *= d
		default:
			runs = append([]run{{d: d, stride: stride, reduced: reduced[i]}}, runs...)
		}
		stride *= d
	}
	var at []int // the reduced runs
	for i, r := range runs {
		if r.reduced {
			at = append(at, i)
		}
	}
	if len(at) <= 1 {
		outer, inner := int64(1), x.Len()/max(k, 1)
		if len(at) == 1 {
			for _, r := range runs[:at[0]] {
				outer *= r.d
			}
			inner /= outer
		}
		return launchReduce(l, thread, block, outer, k, inner, args...)
	}
	// Gather: the kept runs, then the reduced ones.
	var view []run
	for _, keep := range []bool{true, false} {
		for _, r := range runs {
			if r.reduced != keep {
				view = append(view, r)
			}
		}
	}
	if len(view) > MaxRank {
		return l.NoKernel("%d alternating runs of reduced and kept axes > %d", len(view), MaxRank)
	}
	gather := "reduce_gather_b4"
	if x.DType.Size() == 8 {
		gather = "reduce_gather_b8"
	}
	g := l.Scratch(x.DType, x.Shape)
	var dims, strides [MaxRank]int64
	pad := MaxRank - len(view)
	for i := range dims {
		dims[i] = 1
	}
	for i, r := range view {
		dims[pad+i], strides[pad+i] = r.d, r.stride
	}
	gargs := []Arg{P(g), P(x), I(x.Len())}
	for _, v := range [][MaxRank]int64{dims, strides} {
		for _, d := range v {
			gargs = append(gargs, I(d))
		}
	}
	if err := l.Launch(gather, x.Len(), gargs...); err != nil {
		return err
	}
	args[len(args)-1] = P(g)
	return launchReduce(l, thread, block, x.Len()/k, k, 1, args...)
}

// lowerArg handles ArgMax and ArgMin of float32 inputs.
func lowerArg(l *Lower, max bool) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	axis, err := cpu.NormAxis(l.Int("axis", 0), x.Rank())
	if err != nil {
		return l.Errorf(inference.ErrShape, "input %v: %v", x.Shape, err)
	}
	if x.Shape[axis] == 0 {
		return l.NoKernel("axis %d is empty (the CPU backend reports it)", axis)
	}
	outer, inner := int64(1), int64(1)
	for _, d := range x.Shape[:axis] {
		outer *= int64(d)
	}
	for _, d := range x.Shape[axis+1:] {
		inner *= int64(d)
	}
	return launchReduce(l, "arg_f32", "arg_block_f32", outer, int64(x.Shape[axis]), inner,
		I(b2i(max)), I(b2i(l.Int("select_last_index", 0) != 0)), P(y), P(x))
}

package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the reductions (reduce.cu): the Reduce operators, ArgMax
// and ArgMin, over an [outer, k, inner] view of the input, a thread or a
// block per output element.

// reduceOps maps each Reduce operator to its code and the opset from
// which it takes its axes as an input rather than an attribute.
var reduceOps = map[string]struct {
	code  int
	since int64
}{
	"ReduceSum": {kernels.R_SUM, 13}, "ReduceMean": {kernels.R_MEAN, 18}, "ReduceMax": {kernels.R_MAX, 18}, "ReduceMin": {kernels.R_MIN, 18},
	"ReduceProd": {kernels.R_PROD, 18}, "ReduceL1": {kernels.R_L1, 18}, "ReduceL2": {kernels.R_L2, 18}, "ReduceLogSum": {kernels.R_LOGSUM, 18},
	"ReduceLogSumExp": {kernels.R_LOGSUMEXP, 18}, "ReduceSumSquare": {kernels.R_SUMSQUARE, 18},
}

func init() {
	for op, r := range reduceOps {
		registerLowering(op, func(l *lowering) error { return lowerReduce(l, r.code, r.since) })
	}
	registerLowering("ArgMax", func(l *lowering) error { return lowerArg(l, true) })
	registerLowering("ArgMin", func(l *lowering) error { return lowerArg(l, false) })
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
// a thread or a block (of threadsPerBlock, reduce.cu's BLOCK) per output element.
func launchReduce(l *lowering, thread, block string, outer, k, inner int64, args ...kernelArg) error {
	args = append(args, intArg(outer), intArg(k), intArg(inner))
	n := outer * inner
	if n == 0 {
		return nil
	}
	if !blockReduce(n, k) {
		return l.Launch(thread, n, args...)
	}
	return l.LaunchGrid(block, Dim3{uint32(min(n, maxGrid)), 1, 1}, Dim3{threadsPerBlock, 1, 1}, args...)
}

// lowerReduce handles the Reduce operators on float32 (accumulating in
// float) and, but for LogSum and LogSumExp, on int64 and int32
// (accumulating exactly in 64 bits), over any set of axes: attribute axes
// before opset since, axes known on the host from it on.
func lowerReduce(l *lowering, code int, since int64) error {
	x, y := l.In[0], l.Out[0]
	var axes []int64
	if l.Opset < since {
		axes = l.Ints("axes", nil)
	} else if a := l.input(1); a.Present() {
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
	var args []kernelArg
	switch x.DType {
	case inference.Float32:
		thread, block, args = kernels.ReduceF32, kernels.ReduceBlockF32, []kernelArg{intArg(code), ptrArg(y), ptrArg(x)}
	case inference.Int64, inference.Int32:
		switch {
		case code == kernels.R_LOGSUM || code == kernels.R_LOGSUMEXP:
			return l.NoKernel("%v input", x.DType)
		case code == kernels.R_MEAN && k == 0:
			return l.NoKernel("integer mean of an empty set (the CPU backend reports it)")
		}
		t, _ := typeCode(x.DType)
		thread, block, args = kernels.ReduceInt, kernels.ReduceBlockInt, []kernelArg{intArg(code), intArg(t), ptrArg(y), ptrArg(x)}
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
	if len(view) > kernels.MAXRANK {
		return l.NoKernel("%d alternating runs of reduced and kept axes > %d", len(view), kernels.MAXRANK)
	}
	gather := kernels.ReduceGatherB4
	if x.DType.Size() == 8 {
		gather = kernels.ReduceGatherB8
	}
	g := l.Scratch(x.DType, x.Shape)
	var dims, strides [kernels.MAXRANK]int64
	pad := kernels.MAXRANK - len(view)
	for i := range dims {
		dims[i] = 1
	}
	for i, r := range view {
		dims[pad+i], strides[pad+i] = r.d, r.stride
	}
	gargs := []kernelArg{ptrArg(g), ptrArg(x), intArg(x.Len())}
	for _, v := range [][kernels.MAXRANK]int64{dims, strides} {
		for _, d := range v {
			gargs = append(gargs, intArg(d))
		}
	}
	if err := l.Launch(gather, x.Len(), gargs...); err != nil {
		return err
	}
	args[len(args)-1] = ptrArg(g)
	return launchReduce(l, thread, block, x.Len()/k, k, 1, args...)
}

// lowerArg handles ArgMax and ArgMin of float32 inputs.
func lowerArg(l *lowering, max bool) error {
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
	return launchReduce(l, kernels.ArgF32, kernels.ArgBlockF32, outer, int64(x.Shape[axis]), inner,
		intArg(b2i(max)), intArg(b2i(l.Int("select_last_index", 0) != 0)), ptrArg(y), ptrArg(x))
}

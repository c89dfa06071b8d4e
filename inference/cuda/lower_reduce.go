package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the reductions (reduce.cu): the Reduce operators, ArgMax
// and ArgMin, over an [outer, k, inner] view of the input, a thread or a
// block per output element. The axes and output shapes are opsem's
// (opsem.ReduceAxes and opsem.ReducedShape, opsem.ArgAxis). Float16 inputs
// take the kernels' float16 forms (reduce_f16, arg_f16, …), which
// accumulate in float as the float32 ones do and round each float16
// output once.

// reduceOps maps each Reduce operator to its code.
var reduceOps = map[string]int{
	"ReduceSum": kernels.R_SUM, "ReduceMean": kernels.R_MEAN, "ReduceMax": kernels.R_MAX, "ReduceMin": kernels.R_MIN,
	"ReduceProd": kernels.R_PROD, "ReduceL1": kernels.R_L1, "ReduceL2": kernels.R_L2, "ReduceLogSum": kernels.R_LOGSUM,
	"ReduceLogSumExp": kernels.R_LOGSUMEXP, "ReduceSumSquare": kernels.R_SUMSQUARE,
}

func init() {
	for op, code := range reduceOps {
		registerLowering(op, func(l *lowering) error { return lowerReduce(l, code) })
		registerHalf(op)
	}
	registerLowering("ArgMax", func(l *lowering) error { return lowerArg(l, true) })
	registerLowering("ArgMin", func(l *lowering) error { return lowerArg(l, false) })
	registerHalf("ArgMax", "ArgMin")
}

// blockReduce reports whether a reduction of k elements into each of
// outputs elements takes a block per output element (reduce_block_*,
// arg_block_*) rather than a thread: for long reductions, and for
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

// lowerReduce handles the Reduce operators on float32 and float16
// (accumulating in float) and, but for LogSum and LogSumExp, on int64 and
// int32 (accumulating exactly in 64 bits), over any set of axes
// (opsem.ReduceAxes: the attribute, or the operand, known on the host,
// when opsem.ReduceAxesInput says so).
func lowerReduce(l *lowering, code int) error {
	x, y := l.In[0], l.Out[0]
	var axes []int64
	if a := l.input(1); opsem.ReduceAxesInput(l.Node) && a.Present() {
		if a.DType != inference.Int64 && a.DType != inference.Int32 {
			return l.NoKernel("axes input of type %v, want int64", a.DType)
		}
		v, err := hostInts(l, a, "axes")
		if err != nil {
			return err
		}
		axes = v
	}
	reduced, noop, err := opsem.ReduceAxes(l.Node, x.Rank(), axes)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if noop {
		if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
			return err
		}
		return l.Copy(y, x)
	}
	if err := checkOut(l, 0, x.DType, opsem.ReducedShape(l.Node, x.Shape, reduced)); err != nil {
		return err
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
	case inference.Float32, inference.Float16:
		thread = halfKernel(kernels.ReduceF32, kernels.ReduceF16, x.DType)
		block = halfKernel(kernels.ReduceBlockF32, kernels.ReduceBlockF16, x.DType)
		args = []kernelArg{intArg(code), ptrArg(y), ptrArg(x)}
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
	switch x.DType.Size() {
	case 2:
		gather = kernels.ReduceGatherB2
	case 8:
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

// lowerArg handles ArgMax and ArgMin of float32 and float16 inputs along
// opsem.ArgAxis' axis.
func lowerArg(l *lowering, max bool) error {
	x, y := l.In[0], l.Out[0]
	thread := halfKernel(kernels.ArgF32, kernels.ArgF16, x.DType)
	block := halfKernel(kernels.ArgBlockF32, kernels.ArgBlockF16, x.DType)
	if thread == "" {
		return l.NoKernel("%v input", x.DType)
	}
	axis, last, out, err := opsem.ArgAxis(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, inference.Int64, out); err != nil {
		return err
	}
	outer, k, inner := opsem.SplitAxis(x.Shape, axis)
	return launchReduce(l, thread, block, int64(outer), int64(k), int64(inner),
		intArg(b2i(max)), intArg(b2i(last)), ptrArg(y), ptrArg(x))
}

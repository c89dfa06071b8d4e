package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of Softmax, LogSoftmax and Hardmax (norm.cu softmax_f32), a
// block per row. The semantics are the CPU backend's (rdSoftmax in
// inference/cpu/ops_reduce.go).

func init() {
	registerLowering("Softmax", func(l *lowering) error { return lowerSoftmax(l, kernels.SOFTMAX) })
	registerLowering("LogSoftmax", func(l *lowering) error { return lowerSoftmax(l, kernels.LOG_SOFTMAX) })
	registerLowering("Hardmax", func(l *lowering) error { return lowerSoftmax(l, kernels.HARDMAX) })
}

// lowerSoftmax lowers Softmax, LogSoftmax and Hardmax: before opset 13 the
// input is flattened to 2-D at axis (default 1) and the rows are the
// trailing block; from 13 the rows run along axis (default −1).
func lowerSoftmax(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	var outer, size, inner int64
	if l.Opset < 13 {
		axis, err := cpu.NormAxis(l.Int("axis", 1), x.Rank())
		if err != nil {
			return l.NoKernel("%v", err)
		}
		outer, size, inner = numElems(x.Shape[:axis]), numElems(x.Shape[axis:]), 1
	} else {
		axis, err := cpu.NormAxis(l.Int("axis", -1), x.Rank())
		if err != nil {
			return l.NoKernel("%v", err)
		}
		outer, size, inner = numElems(x.Shape[:axis]), int64(x.Shape[axis]), numElems(x.Shape[axis+1:])
	}
	if size == 0 {
		return nil
	}
	return launchRows(l, kernels.SoftmaxF32, outer*inner, intArg(kind), ptrArg(y), ptrArg(x), intArg(outer), intArg(size), intArg(inner))
}

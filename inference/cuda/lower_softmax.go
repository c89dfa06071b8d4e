package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
)

// Lowerings of Softmax, LogSoftmax and Hardmax (norm.cu softmax_f32), a
// block per row. The semantics are the CPU backend's (rdSoftmax in
// inference/cpu/ops_reduce.go).

// Kinds of softmax_f32 (norm.cu's SOFTMAX, LOG_SOFTMAX, HARDMAX).
const (
	softmaxKind = iota
	logSoftmaxKind
	hardmaxKind
)

func init() {
	registerLowering("Softmax", func(l *Lower) error { return lowerSoftmax(l, softmaxKind) })
	registerLowering("LogSoftmax", func(l *Lower) error { return lowerSoftmax(l, logSoftmaxKind) })
	registerLowering("Hardmax", func(l *Lower) error { return lowerSoftmax(l, hardmaxKind) })
}

// lowerSoftmax lowers Softmax, LogSoftmax and Hardmax: before opset 13 the
// input is flattened to 2-D at axis (default 1) and the rows are the
// trailing block; from 13 the rows run along axis (default −1).
func lowerSoftmax(l *Lower, kind int) error {
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
	return launchRows(l, "softmax_f32", outer*inner, I(kind), P(y), P(x), I(outer), I(size), I(inner))
}

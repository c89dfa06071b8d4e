package cuda

import (
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of Softmax, LogSoftmax and Hardmax (norm.cu softmax_f32 and,
// for float16, softmax_f16), a block per row; the rows are
// opsem.SoftmaxRows'.

func init() {
	registerLowering("Softmax", func(l *lowering) error { return lowerSoftmax(l, kernels.SOFTMAX) })
	registerLowering("LogSoftmax", func(l *lowering) error { return lowerSoftmax(l, kernels.LOG_SOFTMAX) })
	registerLowering("Hardmax", func(l *lowering) error { return lowerSoftmax(l, kernels.HARDMAX) })
	registerHalf("Softmax", "LogSoftmax", "Hardmax")
}

// lowerSoftmax lowers Softmax, LogSoftmax and Hardmax over the
// [outer, size, inner] view of opsem.SoftmaxRows: a block per row.
func lowerSoftmax(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	kernel := halfKernel(kernels.SoftmaxF32, kernels.SoftmaxF16, x.DType)
	if kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	outer, size, inner, err := opsem.SoftmaxRows(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if size == 0 {
		return nil
	}
	return launchRows(l, kernel, int64(outer)*int64(inner), intArg(kind), ptrArg(y), ptrArg(x), intArg(outer), intArg(size), intArg(inner))
}

package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the comparison and logic operators (logic.cu): Equal, Less,
// LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not, IsNaN and
// IsInf. Their output is bool, one byte (0 or 1) per element.

var compareOps = map[string]int{
	"Equal": kernels.C_EQ, "Less": kernels.C_LT, "LessOrEqual": kernels.C_LE, "Greater": kernels.C_GT, "GreaterOrEqual": kernels.C_GE,
}

var logicOps = map[string]int{"And": kernels.L_AND, "Or": kernels.L_OR, "Xor": kernels.L_XOR}

func init() {
	for op, code := range compareOps {
		registerLowering(op, func(l *lowering) error { return lowerCompare(l, code) })
	}
	for op, code := range logicOps {
		registerLowering(op, func(l *lowering) error { return lowerLogic(l, code) })
	}
	registerLowering("Not", lowerNot)
	registerLowering("IsNaN", lowerIsNaN)
	registerLowering("IsInf", lowerIsInf)
}

// lowerCompare handles the comparisons of float32, int64, int32 and uint8
// inputs, and Equal of bools, with broadcasting.
func lowerCompare(l *lowering, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	var kernel string
	switch x.DType {
	case inference.Float32:
		kernel = kernels.CmpF32
	case inference.Int64:
		kernel = kernels.CmpI64
	case inference.Int32:
		kernel = kernels.CmpI32
	case inference.Uint8:
		kernel = kernels.CmpU8
	case inference.Bool:
		if code == kernels.C_EQ {
			kernel = kernels.CmpU8 // a bool is one byte, 0 or 1
		}
	}
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	return launchBroadcast(l, kernel, code, z, x, y)
}

// lowerLogic handles And, Or and Xor of bools, with broadcasting.
func lowerLogic(l *lowering, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != inference.Bool || y.DType != inference.Bool {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	return launchBroadcast(l, kernels.LogicBinary, code, z, x, y)
}

func lowerNot(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Bool {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch(kernels.LogicNot, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()))
}

func lowerIsNaN(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch(kernels.LogicIsnanF32, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()))
}

func lowerIsInf(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	neg, pos := opsem.IsInfDetect(l.Node)
	return l.Launch(kernels.LogicIsinfF32, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(b2i(neg)), intArg(b2i(pos)))
}

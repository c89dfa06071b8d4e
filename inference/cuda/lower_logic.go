package cuda

import (
	"github.com/beamml/beamml/inference"
)

// Lowerings of the comparison and logic operators (logic.cu): Equal, Less,
// LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not, IsNaN and
// IsInf. Their output is bool, one byte (0 or 1) per element.

// Codes of the cmp_* kernels (logic.cu's C_* constants).
const (
	cEq = iota
	cLt
	cLe
	cGt
	cGe
)

var compareOps = map[string]int{
	"Equal": cEq, "Less": cLt, "LessOrEqual": cLe, "Greater": cGt, "GreaterOrEqual": cGe,
}

// Codes of logic_binary (logic.cu's L_* constants).
const (
	lAnd = iota
	lOr
	lXor
)

var logicOps = map[string]int{"And": lAnd, "Or": lOr, "Xor": lXor}

func init() {
	for op, code := range compareOps {
		registerLowering(op, func(l *Lower) error { return lowerCompare(l, code) })
	}
	for op, code := range logicOps {
		registerLowering(op, func(l *Lower) error { return lowerLogic(l, code) })
	}
	registerLowering("Not", lowerNot)
	registerLowering("IsNaN", lowerIsNaN)
	registerLowering("IsInf", lowerIsInf)
}

// lowerCompare handles the comparisons of float32, int64, int32 and uint8
// inputs, and Equal of bools, with broadcasting.
func lowerCompare(l *Lower, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	var kernel string
	switch x.DType {
	case inference.Float32:
		kernel = "cmp_f32"
	case inference.Int64:
		kernel = "cmp_i64"
	case inference.Int32:
		kernel = "cmp_i32"
	case inference.Uint8:
		kernel = "cmp_u8"
	case inference.Bool:
		if code == cEq {
			kernel = "cmp_u8" // a bool is one byte, 0 or 1
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
func lowerLogic(l *Lower, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != inference.Bool || y.DType != inference.Bool {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	return launchBroadcast(l, "logic_binary", code, z, x, y)
}

func lowerNot(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Bool {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch("logic_not", y.Len(), P(y), P(x), I(y.Len()))
}

func lowerIsNaN(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch("logic_isnan_f32", y.Len(), P(y), P(x), I(y.Len()))
}

func lowerIsInf(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	neg, pos := l.Int("detect_negative", 1) != 0, l.Int("detect_positive", 1) != 0
	return l.Launch("logic_isinf_f32", y.Len(), P(y), P(x), I(y.Len()), I(b2i(neg)), I(b2i(pos)))
}

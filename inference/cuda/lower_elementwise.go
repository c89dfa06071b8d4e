package cuda

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
)

// Codes of unary_f32 (elementwise.cu's U_* constants).
const (
	uRelu = iota
	uSigmoid
	uTanh
	uExp
	uLog
	uSqrt
	uNeg
	uAbs
	uRecip
	uFloor
	uCeil
	uRound
	uSin
	uCos
	uErf
	uSign
	uLeakyRelu
	uElu
	uSelu
	uHardSigmoid
	uHardSwish
	uSoftplus
	uSoftsign
	uClip
	uGelu
	uGeluTanh
	uIdentity
	uTan
	uAsin
	uAcos
	uAtan
	uSinh
	uCosh
	uAsinh
	uAcosh
	uAtanh
	uThresholdedRelu
	uCelu
	uMish
)

// unaryOps maps an operator to its unary_f32 code and attributes.
var unaryOps = map[string]func(l *Lower) (code int, a, b float64){
	"Relu":       func(*Lower) (int, float64, float64) { return uRelu, 0, 0 },
	"Sigmoid":    func(*Lower) (int, float64, float64) { return uSigmoid, 0, 0 },
	"Tanh":       func(*Lower) (int, float64, float64) { return uTanh, 0, 0 },
	"Exp":        func(*Lower) (int, float64, float64) { return uExp, 0, 0 },
	"Log":        func(*Lower) (int, float64, float64) { return uLog, 0, 0 },
	"Sqrt":       func(*Lower) (int, float64, float64) { return uSqrt, 0, 0 },
	"Neg":        func(*Lower) (int, float64, float64) { return uNeg, 0, 0 },
	"Abs":        func(*Lower) (int, float64, float64) { return uAbs, 0, 0 },
	"Reciprocal": func(*Lower) (int, float64, float64) { return uRecip, 0, 0 },
	"Floor":      func(*Lower) (int, float64, float64) { return uFloor, 0, 0 },
	"Ceil":       func(*Lower) (int, float64, float64) { return uCeil, 0, 0 },
	"Round":      func(*Lower) (int, float64, float64) { return uRound, 0, 0 },
	"Sin":        func(*Lower) (int, float64, float64) { return uSin, 0, 0 },
	"Cos":        func(*Lower) (int, float64, float64) { return uCos, 0, 0 },
	"Tan":        func(*Lower) (int, float64, float64) { return uTan, 0, 0 },
	"Asin":       func(*Lower) (int, float64, float64) { return uAsin, 0, 0 },
	"Acos":       func(*Lower) (int, float64, float64) { return uAcos, 0, 0 },
	"Atan":       func(*Lower) (int, float64, float64) { return uAtan, 0, 0 },
	"Sinh":       func(*Lower) (int, float64, float64) { return uSinh, 0, 0 },
	"Cosh":       func(*Lower) (int, float64, float64) { return uCosh, 0, 0 },
	"Asinh":      func(*Lower) (int, float64, float64) { return uAsinh, 0, 0 },
	"Acosh":      func(*Lower) (int, float64, float64) { return uAcosh, 0, 0 },
	"Atanh":      func(*Lower) (int, float64, float64) { return uAtanh, 0, 0 },
	"Erf":        func(*Lower) (int, float64, float64) { return uErf, 0, 0 },
	"Sign":       func(*Lower) (int, float64, float64) { return uSign, 0, 0 },
	"Identity":   func(*Lower) (int, float64, float64) { return uIdentity, 0, 0 },
	"LeakyRelu": func(l *Lower) (int, float64, float64) {
		return uLeakyRelu, float64(l.Float("alpha", 0.01)), 0
	},
	"Elu":  func(l *Lower) (int, float64, float64) { return uElu, float64(l.Float("alpha", 1)), 0 },
	"Celu": func(l *Lower) (int, float64, float64) { return uCelu, float64(l.Float("alpha", 1)), 0 },
	"Selu": func(l *Lower) (int, float64, float64) {
		return uSelu, float64(l.Float("alpha", 1.67326319217681884765625)), float64(l.Float("gamma", 1.05070102214813232421875))
	},
	"HardSigmoid": func(l *Lower) (int, float64, float64) {
		return uHardSigmoid, float64(l.Float("alpha", 0.2)), float64(l.Float("beta", 0.5))
	},
	"HardSwish": func(*Lower) (int, float64, float64) { return uHardSwish, 0, 0 },
	"Softplus":  func(*Lower) (int, float64, float64) { return uSoftplus, 0, 0 },
	"Softsign":  func(*Lower) (int, float64, float64) { return uSoftsign, 0, 0 },
	"Mish":      func(*Lower) (int, float64, float64) { return uMish, 0, 0 },
	"ThresholdedRelu": func(l *Lower) (int, float64, float64) {
		return uThresholdedRelu, float64(l.Float("alpha", 1)), 0
	},
	"Gelu": func(l *Lower) (int, float64, float64) {
		if l.Str("approximate", "none") == "tanh" {
			return uGeluTanh, 0, 0
		}
		return uGelu, 0, 0
	},
}

func init() {
	for op, attrs := range unaryOps {
		registerLowering(op, func(l *Lower) error { return lowerUnary(l, attrs) })
	}
	registerLowering("Clip", lowerClip)
	for op, code := range binaryOps {
		registerLowering(op, func(l *Lower) error { return lowerBinary(l, code) })
	}
}

func lowerUnary(l *Lower, attrs func(*Lower) (int, float64, float64)) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		if l.Node.OpType == "Identity" {
			return l.Copy(y, x)
		}
		return l.NoKernel("%v input", x.DType)
	}
	code, a, b := attrs(l)
	return l.Launch("unary_f32", y.Len(), I(code), P(y), P(x), I(y.Len()), F(a), F(b))
}

// lowerClip handles Clip-6 (min and max attributes) and Clip-11+ (min and
// max inputs, known on the host).
func lowerClip(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	lo, hi := float64(l.Float("min", -math.MaxFloat32)), float64(l.Float("max", math.MaxFloat32))
	for i, bound := range []*float64{&lo, &hi} {
		if o := l.Arg(i + 1); o.Present() {
			t, ok := o.Host()
			if !ok {
				return l.NoKernel("Clip bound %q computed on the device", o.Name)
			}
			v, err := inference.Data[float32](t)
			if err != nil || len(v) != 1 {
				return l.Errorf(inference.ErrShape, "Clip bound %q is %v, want one float", o.Name, t)
			}
			*bound = float64(v[0])
		}
	}
	return l.Launch("unary_f32", y.Len(), I(uClip), P(y), P(x), I(y.Len()), F(lo), F(hi))
}

// Codes of binary_f32 (elementwise.cu's B_* constants).
const (
	bAdd = iota
	bSub
	bMul
	bDiv
	bPow
	bMax
	bMin
	bPRelu
	bMod
)

var binaryOps = map[string]int{
	"Add": bAdd, "Sub": bSub, "Mul": bMul, "Div": bDiv, "Pow": bPow, "PRelu": bPRelu,
}

func lowerBinary(l *Lower, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != inference.Float32 || y.DType != inference.Float32 {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	return launchBroadcast(l, "binary_f32", code, z, x, y)
}

// launchBroadcast launches a broadcasting binary kernel with the
// signature of binary_f32: (op, z, x, y, n, dims[6], xstrides[6], ystrides[6]).
func launchBroadcast(l *Lower, kernel string, code int, z, x, y Operand) error {
	if equalShapes(x.Shape, z.Shape) && equalShapes(y.Shape, z.Shape) && kernel == "binary_f32" {
		return l.Launch("binary_same_f32", z.Len(), I(code), P(z), P(x), P(y), I(z.Len()))
	}
	dims, strides, err := broadcastStrides(z.Shape, x.Shape, y.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	args := []Arg{I(code), P(z), P(x), P(y), I(z.Len())}
	for _, v := range [][MaxRank]int64{dims, strides[0], strides[1]} {
		for _, d := range v {
			args = append(args, I(d))
		}
	}
	return l.Launch(kernel, z.Len(), args...)
}

// MaxRank is the largest rank of the strided kernels (common.cuh MAXRANK).
const MaxRank = 6

// broadcastStrides pads out to MaxRank dims and returns, for each input,
// its element strides along out's dims (0 where it is broadcast).
func broadcastStrides(out []int, ins ...[]int) (dims [MaxRank]int64, strides [][MaxRank]int64, err error) {
	if len(out) > MaxRank {
		return dims, nil, fmt.Errorf("rank %d > %d", len(out), MaxRank)
	}
	pad := MaxRank - len(out)
	for i := range dims {
		dims[i] = 1
	}
	for i, d := range out {
		dims[pad+i] = int64(d)
	}
	for _, in := range ins {
		if len(in) > len(out) {
			return dims, nil, fmt.Errorf("input rank %d > output rank %d", len(in), len(out))
		}
		var s [MaxRank]int64
		stride := int64(1)
		for k := len(in) - 1; k >= 0; k-- {
			o := MaxRank - len(in) + k
			switch {
			case int64(in[k]) == dims[o]:
				s[o] = stride
			case in[k] == 1:
				s[o] = 0
			default:
				return dims, nil, fmt.Errorf("shape %v does not broadcast to %v", in, out)
			}
			stride *= int64(in[k])
		}
		strides = append(strides, s)
	}
	return dims, strides, nil
}

func equalShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
)

// Lowerings of the elementwise operators (elementwise.cu, and shape.cu's
// shape_where and cast_convert): the unary operators and activations,
// Clip, the binary arithmetic (Add, Sub, Mul, Div, PRelu, Pow, Mod), Sum,
// Max, Min and Mean, Where, Cast and CastLike. Operands broadcast as numpy
// does from opset 7 (legacyBroadcast in strided.go before it).

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
	uIdentity // not used: Identity is a view (lowerView)
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
	uShrink
	uSwish
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
	"Shrink": func(l *Lower) (int, float64, float64) {
		return uShrink, float64(l.Float("lambd", 0.5)), float64(l.Float("bias", 0))
	},
	"Swish": func(l *Lower) (int, float64, float64) { return uSwish, float64(l.Float("alpha", 1)), 0 },
	"Gelu": func(l *Lower) (int, float64, float64) {
		if l.Str("approximate", "none") == "tanh" {
			return uGeluTanh, 0, 0
		}
		return uGelu, 0, 0
	},
}

// intUnaryOps are the unary operators with an int64 and int32 kernel
// (unary_i64, unary_i32), by their U_* code.
var intUnaryOps = map[string]int{"Neg": uNeg, "Abs": uAbs, "Sign": uSign, "Relu": uRelu}

func init() {
	for op, attrs := range unaryOps {
		registerLowering(op, func(l *Lower) error { return lowerUnary(l, attrs) })
	}
	registerLowering("Clip", lowerClip)
	for op, code := range binaryOps {
		registerLowering(op, func(l *Lower) error { return lowerBinary(l, code) })
	}
	registerLowering("Pow", lowerPow)
	registerLowering("Mod", lowerMod)
	for op, code := range variadicOps {
		registerLowering(op, func(l *Lower) error { return lowerVariadic(l, code) })
	}
	registerLowering("Where", lowerWhere)
	registerLowering("Cast", lowerCast)
	registerLowering("CastLike", lowerCast)
}

func lowerUnary(l *Lower, attrs func(*Lower) (int, float64, float64)) error {
	x, y := l.In[0], l.Out[0]
	if x.DType == inference.Float32 {
		code, a, b := attrs(l)
		return l.Launch("unary_f32", y.Len(), I(code), P(y), P(x), I(y.Len()), F(a), F(b))
	}
	code, ok := intUnaryOps[l.Node.OpType]
	kernel := intKernel("unary", x.DType)
	if !ok || kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch(kernel, y.Len(), I(code), P(y), P(x), I(y.Len()), I(0), I(0))
}

// intKernel names the int64 or int32 kernel of a family ("binary" gives
// binary_i64), or "" for other types.
func intKernel(family string, t inference.DType) string {
	switch t {
	case inference.Int64:
		return family + "_i64"
	case inference.Int32:
		return family + "_i32"
	}
	return ""
}

// lowerClip handles Clip-1 and Clip-6 (min and max attributes; absent,
// they are ∓inf and ∓FLT_MAX) and Clip-11+ (optional min and max inputs,
// known on the host; absent, ∓inf), on float32, int64 and int32.
func lowerClip(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if l.Opset < 11 {
		if x.DType != inference.Float32 {
			return l.NoKernel("%v input", x.DType)
		}
		lo, hi := math.Inf(-1), math.Inf(1)
		if l.Opset >= 6 {
			lo, hi = -math.MaxFloat32, math.MaxFloat32
		}
		lo, hi = float64(l.Float("min", float32(lo))), float64(l.Float("max", float32(hi)))
		return l.Launch("unary_f32", y.Len(), I(uClip), P(y), P(x), I(y.Len()), F(lo), F(hi))
	}
	var bounds [2]inference.Tensor
	onDevice := false
	for i := range bounds {
		o := l.Arg(i + 1)
		if !o.Present() {
			continue
		}
		t, ok := o.Host()
		if !ok {
			onDevice = true
			continue
		}
		if t.DType() != x.DType || t.Len() != 1 {
			return l.Errorf(inference.ErrShape, "Clip bound %q is %v, want one %v", o.Name, t, x.DType)
		}
		bounds[i] = t
	}
	if onDevice {
		return clipOnDevice(l)
	}
	switch x.DType {
	case inference.Float32:
		lim := [2]float64{math.Inf(-1), math.Inf(1)}
		for i, t := range bounds {
			if v, err := inference.Data[float32](t); err == nil {
				lim[i] = float64(v[0])
			}
		}
		return l.Launch("unary_f32", y.Len(), I(uClip), P(y), P(x), I(y.Len()), F(lim[0]), F(lim[1]))
	case inference.Int64, inference.Int32:
		lim := [2]int64{math.MinInt64, math.MaxInt64}
		if x.DType == inference.Int32 {
			lim = [2]int64{math.MinInt32, math.MaxInt32}
		}
		for i, t := range bounds {
			if t.DType() != 0 {
				v, _ := cpu.Int64s(t)
				lim[i] = v[0]
			}
		}
		return l.Launch(intKernel("unary", x.DType), y.Len(), I(uClip), P(y), P(x), I(y.Len()), I(lim[0]), I(lim[1]))
	}
	return l.NoKernel("%v input", x.DType)
}

// clipOnDevice launches unary_clip_*, which reads the bounds from device
// memory: bounds computed on the device, one element each.
func clipOnDevice(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	kernel := map[inference.DType]string{inference.Float32: "unary_clip_f32",
		inference.Int64: "unary_clip_i64", inference.Int32: "unary_clip_i32"}[x.DType]
	if kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	args := []Arg{P(y), P(x), I(y.Len())}
	var has []Arg
	for i := 1; i <= 2; i++ {
		o := l.Arg(i)
		if !o.Present() {
			args, has = append(args, P(x)), append(has, I(0)) // not read
			continue
		}
		if o.DType != x.DType || o.Len() != 1 {
			return l.NoKernel("Clip bound %q is %v %v, want one %v", o.Name, o.DType, o.Shape, x.DType)
		}
		args, has = append(args, P(o)), append(has, I(1))
	}
	return l.Launch(kernel, y.Len(), append(args, has...)...)
}

// Codes of binary_f32, binary_i64, binary_i32 and variadic_* (elementwise.cu's B_* constants).
const (
	bAdd = iota
	bSub
	bMul
	bDiv
	bPow
	bMax
	bMin
	bPRelu
	bMod   // the sign of the dividend (fmod=1)
	bPyMod // the sign of the divisor (fmod=0)
)

var binaryOps = map[string]int{
	"Add": bAdd, "Sub": bSub, "Mul": bMul, "Div": bDiv, "PRelu": bPRelu,
}

// lowerBinary handles Add, Sub, Mul, Div and PRelu on float32, int64 and
// int32. An integer Div runs on the device only when its divisor is known
// on the host and holds no zero: the CPU backend reports a zero divisor
// as an error, which a kernel cannot.
func lowerBinary(l *Lower, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	var err error
	if code == bPRelu {
		y = preluSlope(l, x, y)
	} else if y, err = legacyBroadcast(l, x, y); err != nil {
		return err
	}
	if x.DType == inference.Float32 {
		return launchBroadcast(l, "binary_f32", code, z, x, y)
	}
	kernel := intKernel("binary", x.DType)
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	if code == bDiv {
		if err := hostNonzero(l, y, z); err != nil {
			return err
		}
	}
	return launchBroadcast(l, kernel, code, z, x, y)
}

// preluSlope returns PRelu's slope as it broadcasts to x: before opset 7
// a 1-D slope as long as x's dimension 1 is per channel.
func preluSlope(l *Lower, x, slope Operand) Operand {
	if l.Opset < 7 && slope.Rank() == 1 && x.Rank() >= 2 && slope.Shape[0] == x.Shape[1] && slope.Shape[0] != 1 {
		s := make([]int, x.Rank()-1)
		for i := range s {
			s[i] = 1
		}
		s[0] = x.Shape[1]
		slope.Shape = s
	}
	return slope
}

// hostNonzero checks that the integer divisor y is known on the host and
// holds no zero (when the output is not empty).
func hostNonzero(l *Lower, y, z Operand) error {
	t, ok := y.Host()
	if !ok {
		return l.NoKernel("integer divisor %q computed on the device (a zero divisor is an error)", y.Name)
	}
	v, err := cpu.Int64s(t)
	if err != nil {
		return l.NoKernel("divisor %v: %v", t, err)
	}
	if z.Len() > 0 && slices.Contains(v, 0) {
		return l.NoKernel("integer divisor %q holds 0", y.Name)
	}
	return nil
}

// lowerPow handles a float32, int64 or int32 base with a float32, int64,
// int32 or uint8 exponent.
func lowerPow(l *Lower) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	if x.DType == inference.Float32 && y.DType == inference.Float32 {
		return launchBroadcast(l, "binary_f32", bPow, z, x, y)
	}
	xt, okx := typeCode(x.DType)
	yt, oky := typeCode(y.DType)
	if !okx || !oky || xt == tU8 {
		return l.NoKernel("%v base, %v exponent", x.DType, y.DType)
	}
	b, err := broadcastArgs(z, x, y)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	return l.Launch("binary_pow_mixed", z.Len(), append([]Arg{I(xt), I(yt), P(z), P(x), P(y)}, b...)...)
}

// lowerMod handles float32 Mod (either fmod), and int64 and int32 Mod
// with a divisor known on the host that holds no zero (see lowerBinary).
func lowerMod(l *Lower) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	code := bPyMod
	if l.Int("fmod", 0) != 0 {
		code = bMod
	}
	if x.DType == inference.Float32 {
		return launchBroadcast(l, "binary_f32", code, z, x, y)
	}
	kernel := intKernel("binary", x.DType)
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	if err := hostNonzero(l, y, z); err != nil {
		return err
	}
	return launchBroadcast(l, kernel, code, z, x, y)
}

var variadicOps = map[string]int{"Sum": bAdd, "Max": bMax, "Min": bMin, "Mean": bAdd}

// lowerVariadic handles Sum, Max, Min (float32, int64, int32) and Mean
// (float32): a launch per input folds it into the output (variadic_*),
// the first storing it; Mean divides on the last.
func lowerVariadic(l *Lower, code int) error {
	z, x := l.Out[0], l.In[0]
	mean := l.Node.OpType == "Mean"
	var kernel, pair string // the folding kernel, and the kernel of two inputs
	switch {
	case x.DType == inference.Float32:
		kernel, pair = "variadic_f32", "binary_f32"
	case !mean:
		kernel, pair = intKernel("variadic", x.DType), intKernel("binary", x.DType)
	}
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	for _, in := range l.In {
		if !in.Present() || in.DType != x.DType {
			return l.NoKernel("inputs of different types")
		}
		if l.Opset < 8 && !slices.Equal(in.Shape, z.Shape) {
			return l.NoKernel("shapes differ and opset %d < 8 does not broadcast", l.Opset)
		}
	}
	switch {
	case len(l.In) == 1:
		return l.Copy(z, x)
	case len(l.In) == 2 && !mean:
		return launchBroadcast(l, pair, code, z, l.In[0], l.In[1])
	}
	for i, in := range l.In {
		b, err := broadcastArgs(z, in)
		if err != nil {
			return l.NoKernel("%v", err)
		}
		args := append([]Arg{I(code), P(z), P(in)}, b...)
		args = append(args, I(b2i(i == 0)))
		if kernel == "variadic_f32" {
			div := 0
			if mean && i == len(l.In)-1 {
				div = len(l.In)
			}
			args = append(args, F(float64(div)))
		}
		if err := l.Launch(kernel, z.Len(), args...); err != nil {
			return err
		}
	}
	return nil
}

// lowerWhere picks, with broadcasting, x where the condition holds and y
// elsewhere.
func lowerWhere(l *Lower) error {
	c, a, b, y := l.In[0], l.In[1], l.In[2], l.Out[0]
	if c.DType != inference.Bool || a.DType != b.DType {
		return l.NoKernel("condition %v, values %v and %v", c.DType, a.DType, b.DType)
	}
	shape, err := cpu.BroadcastShape(c.Shape, a.Shape, b.Shape)
	if err != nil {
		return l.NoKernel("shapes %v, %v and %v do not broadcast", c.Shape, a.Shape, b.Shape)
	}
	if err := checkOut(l, 0, a.DType, shape); err != nil {
		return err
	}
	w, err := elemWidth(l, a.DType)
	if err != nil {
		return err
	}
	n := y.Len()
	if n == 0 {
		return nil
	}
	var sets [][]int64
	for _, in := range []Operand{y, c, a, b} {
		s, _ := broadcastInto(shape, in.Shape)
		sets = append(sets, s)
	}
	d, s := simplifyDims(int64Dims(shape), sets...)
	if len(d) > MaxRank {
		return l.NoKernel("rank %d > %d", len(d), MaxRank)
	}
	args := []Arg{P(y), P(c), P(a), P(b), I(w), I(n)}
	args = append(args, maxRankArgs(d, 1)...)
	for _, st := range s[1:] {
		args = append(args, maxRankArgs(st, 0)...)
	}
	return l.Launch("shape_where", n, args...)
}

// lowerCast lowers Cast and CastLike: the target type is the planned
// output's, whatever names it (Cast-1's string, Cast-6's code, CastLike's
// second input).
func lowerCast(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if l.Node.OpType == "CastLike" && l.Arg(1).DType != y.DType {
		return l.NoKernel("output %v, want %v", y.DType, l.Arg(1).DType)
	}
	from, ok1 := castCodes[x.DType]
	to, ok2 := castCodes[y.DType]
	if !ok1 || !ok2 {
		return l.NoKernel("cast from %v to %v", x.DType, y.DType)
	}
	if !slices.Equal(x.Shape, y.Shape) {
		return l.NoKernel("output shape %v for input %v", y.Shape, x.Shape)
	}
	if from == to {
		return l.Copy(y, x)
	}
	return l.Launch("cast_convert", y.Len(), P(y), P(x), I(y.Len()), I(from), I(to))
}

package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the elementwise operators (elementwise.cu, and shape.cu's
// shape_where and cast_convert): the unary operators and activations,
// Clip, the binary arithmetic (Add, Sub, Mul, Div, PRelu, Pow, Mod), Sum,
// Max, Min and Mean, Where, Cast and CastLike. Operands broadcast as numpy
// does from opset 7 (legacyBroadcast in strided.go before it).

// unaryOps maps an operator to its unary_f32 code and attributes.
var unaryOps = map[string]func(l *lowering) (code int, a, b float64){
	"Relu":       func(*lowering) (int, float64, float64) { return kernels.U_RELU, 0, 0 },
	"Sigmoid":    func(*lowering) (int, float64, float64) { return kernels.U_SIGMOID, 0, 0 },
	"Tanh":       func(*lowering) (int, float64, float64) { return kernels.U_TANH, 0, 0 },
	"Exp":        func(*lowering) (int, float64, float64) { return kernels.U_EXP, 0, 0 },
	"Log":        func(*lowering) (int, float64, float64) { return kernels.U_LOG, 0, 0 },
	"Sqrt":       func(*lowering) (int, float64, float64) { return kernels.U_SQRT, 0, 0 },
	"Neg":        func(*lowering) (int, float64, float64) { return kernels.U_NEG, 0, 0 },
	"Abs":        func(*lowering) (int, float64, float64) { return kernels.U_ABS, 0, 0 },
	"Reciprocal": func(*lowering) (int, float64, float64) { return kernels.U_RECIP, 0, 0 },
	"Floor":      func(*lowering) (int, float64, float64) { return kernels.U_FLOOR, 0, 0 },
	"Ceil":       func(*lowering) (int, float64, float64) { return kernels.U_CEIL, 0, 0 },
	"Round":      func(*lowering) (int, float64, float64) { return kernels.U_ROUND, 0, 0 },
	"Sin":        func(*lowering) (int, float64, float64) { return kernels.U_SIN, 0, 0 },
	"Cos":        func(*lowering) (int, float64, float64) { return kernels.U_COS, 0, 0 },
	"Tan":        func(*lowering) (int, float64, float64) { return kernels.U_TAN, 0, 0 },
	"Asin":       func(*lowering) (int, float64, float64) { return kernels.U_ASIN, 0, 0 },
	"Acos":       func(*lowering) (int, float64, float64) { return kernels.U_ACOS, 0, 0 },
	"Atan":       func(*lowering) (int, float64, float64) { return kernels.U_ATAN, 0, 0 },
	"Sinh":       func(*lowering) (int, float64, float64) { return kernels.U_SINH, 0, 0 },
	"Cosh":       func(*lowering) (int, float64, float64) { return kernels.U_COSH, 0, 0 },
	"Asinh":      func(*lowering) (int, float64, float64) { return kernels.U_ASINH, 0, 0 },
	"Acosh":      func(*lowering) (int, float64, float64) { return kernels.U_ACOSH, 0, 0 },
	"Atanh":      func(*lowering) (int, float64, float64) { return kernels.U_ATANH, 0, 0 },
	"Erf":        func(*lowering) (int, float64, float64) { return kernels.U_ERF, 0, 0 },
	"Sign":       func(*lowering) (int, float64, float64) { return kernels.U_SIGN, 0, 0 },
	"LeakyRelu": func(l *lowering) (int, float64, float64) {
		return kernels.U_LEAKYRELU, float64(l.Float("alpha", 0.01)), 0
	},
	"Elu":  func(l *lowering) (int, float64, float64) { return kernels.U_ELU, float64(l.Float("alpha", 1)), 0 },
	"Celu": func(l *lowering) (int, float64, float64) { return kernels.U_CELU, float64(l.Float("alpha", 1)), 0 },
	"Selu": func(l *lowering) (int, float64, float64) {
		return kernels.U_SELU, float64(l.Float("alpha", 1.67326319217681884765625)), float64(l.Float("gamma", 1.05070102214813232421875))
	},
	"HardSigmoid": func(l *lowering) (int, float64, float64) {
		return kernels.U_HARDSIGMOID, float64(l.Float("alpha", 0.2)), float64(l.Float("beta", 0.5))
	},
	"HardSwish": func(*lowering) (int, float64, float64) { return kernels.U_HARDSWISH, 0, 0 },
	"Softplus":  func(*lowering) (int, float64, float64) { return kernels.U_SOFTPLUS, 0, 0 },
	"Softsign":  func(*lowering) (int, float64, float64) { return kernels.U_SOFTSIGN, 0, 0 },
	"Mish":      func(*lowering) (int, float64, float64) { return kernels.U_MISH, 0, 0 },
	"ThresholdedRelu": func(l *lowering) (int, float64, float64) {
		return kernels.U_THRESHOLDEDRELU, float64(l.Float("alpha", 1)), 0
	},
	"Shrink": func(l *lowering) (int, float64, float64) {
		return kernels.U_SHRINK, float64(l.Float("lambd", 0.5)), float64(l.Float("bias", 0))
	},
	"Swish": func(l *lowering) (int, float64, float64) { return kernels.U_SWISH, float64(l.Float("alpha", 1)), 0 },
	"Gelu": func(l *lowering) (int, float64, float64) {
		if l.Str("approximate", "none") == "tanh" {
			return kernels.U_GELU_TANH, 0, 0
		}
		return kernels.U_GELU, 0, 0
	},
}

// intUnaryOps are the unary operators with an int64 and int32 kernel
// (unary_i64, unary_i32), by their U_* code.
var intUnaryOps = map[string]int{"Neg": kernels.U_NEG, "Abs": kernels.U_ABS, "Sign": kernels.U_SIGN, "Relu": kernels.U_RELU}

func init() {
	for op, attrs := range unaryOps {
		registerLowering(op, func(l *lowering) error { return lowerUnary(l, attrs) })
	}
	registerLowering("Clip", lowerClip)
	for op, code := range binaryOps {
		registerLowering(op, func(l *lowering) error { return lowerBinary(l, code) })
	}
	registerLowering("Pow", lowerPow)
	registerLowering("Mod", lowerMod)
	for op, code := range variadicOps {
		registerLowering(op, func(l *lowering) error { return lowerVariadic(l, code) })
	}
	registerLowering("Where", lowerWhere)
	registerLowering("Cast", lowerCast)
	registerLowering("CastLike", lowerCast)
}

func lowerUnary(l *lowering, attrs func(*lowering) (int, float64, float64)) error {
	x, y := l.In[0], l.Out[0]
	if x.DType == inference.Float32 {
		code, a, b := attrs(l)
		return l.Launch(kernels.UnaryF32, y.Len(), intArg(code), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(a), floatArg(b))
	}
	code, ok := intUnaryOps[l.Node.OpType]
	kernel := intKernel("unary", x.DType)
	if !ok || kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch(kernel, y.Len(), intArg(code), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(0), intArg(0))
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
func lowerClip(l *lowering) error {
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
		return l.Launch(kernels.UnaryF32, y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(lo), floatArg(hi))
	}
	var bounds [2]inference.Tensor
	onDevice := false
	for i := range bounds {
		o := l.input(i + 1)
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
		return l.Launch(kernels.UnaryF32, y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(lim[0]), floatArg(lim[1]))
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
		return l.Launch(intKernel("unary", x.DType), y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(lim[0]), intArg(lim[1]))
	}
	return l.NoKernel("%v input", x.DType)
}

// clipOnDevice launches unary_clip_*, which reads the bounds from device
// memory: bounds computed on the device, one element each.
func clipOnDevice(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	kernel := map[inference.DType]string{inference.Float32: kernels.UnaryClipF32,
		inference.Int64: kernels.UnaryClipI64, inference.Int32: kernels.UnaryClipI32}[x.DType]
	if kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	args := []kernelArg{ptrArg(y), ptrArg(x), intArg(y.Len())}
	var has []kernelArg
	for i := 1; i <= 2; i++ {
		o := l.input(i)
		if !o.Present() {
			args, has = append(args, ptrArg(x)), append(has, intArg(0)) // not read
			continue
		}
		if o.DType != x.DType || o.Len() != 1 {
			return l.NoKernel("Clip bound %q is %v %v, want one %v", o.Name, o.DType, o.Shape, x.DType)
		}
		args, has = append(args, ptrArg(o)), append(has, intArg(1))
	}
	return l.Launch(kernel, y.Len(), append(args, has...)...)
}

var binaryOps = map[string]int{
	"Add": kernels.B_ADD, "Sub": kernels.B_SUB, "Mul": kernels.B_MUL, "Div": kernels.B_DIV, "PRelu": kernels.B_PRELU,
}

// lowerBinary handles Add, Sub, Mul, Div and PRelu on float32, int64 and
// int32. An integer Div runs on the device only when its divisor is known
// on the host and holds no zero: the CPU backend reports a zero divisor
// as an error, which a kernel cannot.
func lowerBinary(l *lowering, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	var err error
	if code == kernels.B_PRELU {
		y = preluSlope(l, x, y)
	} else if y, err = legacyBroadcast(l, x, y); err != nil {
		return err
	}
	if x.DType == inference.Float32 {
		return launchBroadcast(l, kernels.BinaryF32, code, z, x, y)
	}
	kernel := intKernel("binary", x.DType)
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	if code == kernels.B_DIV {
		if err := hostNonzero(l, y, z); err != nil {
			return err
		}
	}
	return launchBroadcast(l, kernel, code, z, x, y)
}

// preluSlope returns PRelu's slope as it broadcasts to x: before opset 7
// a 1-D slope as long as x's dimension 1 is per channel.
func preluSlope(l *lowering, x, slope operand) operand {
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
func hostNonzero(l *lowering, y, z operand) error {
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
func lowerPow(l *lowering) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	if x.DType == inference.Float32 && y.DType == inference.Float32 {
		return launchBroadcast(l, kernels.BinaryF32, kernels.B_POW, z, x, y)
	}
	xt, okx := typeCode(x.DType)
	yt, oky := typeCode(y.DType)
	if !okx || !oky || xt == kernels.T_U8 {
		return l.NoKernel("%v base, %v exponent", x.DType, y.DType)
	}
	b, err := broadcastArgs(z, x, y)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	return l.Launch(kernels.BinaryPowMixed, z.Len(), append([]kernelArg{intArg(xt), intArg(yt), ptrArg(z), ptrArg(x), ptrArg(y)}, b...)...)
}

// lowerMod handles float32 Mod (either fmod), and int64 and int32 Mod
// with a divisor known on the host that holds no zero (see lowerBinary).
func lowerMod(l *lowering) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	code := kernels.B_PYMOD
	if l.Int("fmod", 0) != 0 {
		code = kernels.B_MOD
	}
	if x.DType == inference.Float32 {
		return launchBroadcast(l, kernels.BinaryF32, code, z, x, y)
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

var variadicOps = map[string]int{"Sum": kernels.B_ADD, "Max": kernels.B_MAX, "Min": kernels.B_MIN, "Mean": kernels.B_ADD}

// lowerVariadic handles Sum, Max, Min (float32, int64, int32) and Mean
// (float32): a launch per input folds it into the output (variadic_*),
// the first storing it; Mean divides on the last.
func lowerVariadic(l *lowering, code int) error {
	z, x := l.Out[0], l.In[0]
	mean := l.Node.OpType == "Mean"
	var kernel, pair string // the folding kernel, and the kernel of two inputs
	switch {
	case x.DType == inference.Float32:
		kernel, pair = kernels.VariadicF32, kernels.BinaryF32
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
		args := append([]kernelArg{intArg(code), ptrArg(z), ptrArg(in)}, b...)
		args = append(args, intArg(b2i(i == 0)))
		if kernel == kernels.VariadicF32 {
			div := 0
			if mean && i == len(l.In)-1 {
				div = len(l.In)
			}
			args = append(args, floatArg(float64(div)))
		}
		if err := l.Launch(kernel, z.Len(), args...); err != nil {
			return err
		}
	}
	return nil
}

// lowerWhere picks, with broadcasting, x where the condition holds and y
// elsewhere.
func lowerWhere(l *lowering) error {
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
	for _, in := range []operand{y, c, a, b} {
		s, _ := broadcastInto(shape, in.Shape)
		sets = append(sets, s)
	}
	d, s := simplifyDims(int64Dims(shape), sets...)
	if len(d) > kernels.MAXRANK {
		return l.NoKernel("rank %d > %d", len(d), kernels.MAXRANK)
	}
	args := []kernelArg{ptrArg(y), ptrArg(c), ptrArg(a), ptrArg(b), intArg(w), intArg(n)}
	args = append(args, maxRankArgs(d, 1)...)
	for _, st := range s[1:] {
		args = append(args, maxRankArgs(st, 0)...)
	}
	return l.Launch(kernels.ShapeWhere, n, args...)
}

// lowerCast lowers Cast and CastLike: the target type is the planned
// output's, whatever names it (Cast-1's string, Cast-6's code, CastLike's
// second input).
func lowerCast(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if l.Node.OpType == "CastLike" && l.input(1).DType != y.DType {
		return l.NoKernel("output %v, want %v", y.DType, l.input(1).DType)
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
	return l.Launch(kernels.CastConvert, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(from), intArg(to))
}

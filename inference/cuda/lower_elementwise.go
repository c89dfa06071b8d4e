package cuda

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the elementwise operators (elementwise.cu, and shape.cu's
// shape_where and cast_convert): the unary operators and activations,
// Clip, the binary arithmetic (Add, Sub, Mul, Div, PRelu, Pow, Mod), Sum,
// Max, Min and Mean, Where, Cast and CastLike. The binary operators'
// operands broadcast as opsem.LegacyBroadcast says (numpy broadcasting from
// opset 7), PRelu's slope as opsem.PReluSlope says, Where's operands to
// opsem.BroadcastShape; the attributes are opsem.ActivationAttrs',
// opsem.GeluTanh's and opsem.ClipBounds'.

// unaryOps maps an operator to its unary_f32 code; its attributes are
// opsem.ActivationAttrs' (Gelu's approximation opsem.GeluTanh's).
var unaryOps = map[string]int{
	"Relu": kernels.U_RELU, "Sigmoid": kernels.U_SIGMOID, "Tanh": kernels.U_TANH, "Exp": kernels.U_EXP, "Log": kernels.U_LOG,
	"Sqrt": kernels.U_SQRT, "Neg": kernels.U_NEG, "Abs": kernels.U_ABS, "Reciprocal": kernels.U_RECIP, "Floor": kernels.U_FLOOR,
	"Ceil": kernels.U_CEIL, "Round": kernels.U_ROUND, "Sin": kernels.U_SIN, "Cos": kernels.U_COS, "Tan": kernels.U_TAN,
	"Asin": kernels.U_ASIN, "Acos": kernels.U_ACOS, "Atan": kernels.U_ATAN, "Sinh": kernels.U_SINH, "Cosh": kernels.U_COSH,
	"Asinh": kernels.U_ASINH, "Acosh": kernels.U_ACOSH, "Atanh": kernels.U_ATANH, "Erf": kernels.U_ERF, "Sign": kernels.U_SIGN,
	"LeakyRelu": kernels.U_LEAKYRELU, "Elu": kernels.U_ELU, "Celu": kernels.U_CELU, "Selu": kernels.U_SELU,
	"HardSigmoid": kernels.U_HARDSIGMOID, "HardSwish": kernels.U_HARDSWISH, "Softplus": kernels.U_SOFTPLUS,
	"Softsign": kernels.U_SOFTSIGN, "Mish": kernels.U_MISH, "ThresholdedRelu": kernels.U_THRESHOLDEDRELU,
	"Shrink": kernels.U_SHRINK, "Swish": kernels.U_SWISH, "Gelu": kernels.U_GELU,
}

// intUnaryOps are the unary operators with an int64 and int32 kernel
// (unary_i64, unary_i32), by their U_* code.
var intUnaryOps = map[string]int{"Neg": kernels.U_NEG, "Abs": kernels.U_ABS, "Sign": kernels.U_SIGN, "Relu": kernels.U_RELU}

func init() {
	for op, code := range unaryOps {
		registerLowering(op, func(l *lowering) error { return lowerUnary(l, code) })
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
	registerHalf("Where", "Cast", "CastLike", "Clip", "Pow", "Mod", "Max", "Min") // Sum and Mean fold in float32
	for op := range unaryOps {
		registerHalf(op)
	}
	for op := range binaryOps {
		registerHalf(op)
	}
}

// lowerUnary lowers a unary operator of unaryOps: unary_f32 on float32,
// unary_f16 on float16, and the operators of intUnaryOps on int64 and
// int32.
func lowerUnary(l *lowering, code int) error {
	x, y := l.In[0], l.Out[0]
	if k := halfKernel(kernels.UnaryF32, kernels.UnaryF16, x.DType); k != "" {
		if code == kernels.U_GELU {
			tanh, err := opsem.GeluTanh(l.Node)
			if err != nil {
				return l.NoKernel("%v", err)
			}
			if tanh {
				code = kernels.U_GELU_TANH
			}
		}
		a, b := opsem.ActivationAttrs(l.Node)
		return l.Launch(k, y.Len(), intArg(code), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(a), floatArg(b))
	}
	code, ok := intUnaryOps[l.Node.OpType]
	kernel := intKernel(kernels.UnaryI64, kernels.UnaryI32, x.DType)
	if !ok || kernel == "" {
		return l.NoKernel("%v input", x.DType)
	}
	return l.Launch(kernel, y.Len(), intArg(code), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(0), intArg(0))
}

// intKernel picks the int64 or the int32 kernel of a family for type t, or
// "" for other types.
func intKernel(i64, i32 string, t inference.DType) string {
	switch t {
	case inference.Int64:
		return i64
	case inference.Int32:
		return i32
	}
	return ""
}

// lowerClip handles Clip-1 and Clip-6 (the bounds are attributes:
// opsem.ClipBounds), on float32, and Clip-11+ (optional min and max
// inputs, known on the host or read by unary_clip_*; absent, ∓inf), on
// float32, int64 and int32.
func lowerClip(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	unary := halfKernel(kernels.UnaryF32, kernels.UnaryF16, x.DType)
	if l.Opset < 11 {
		if unary == "" {
			return l.NoKernel("%v input", x.DType)
		}
		lo, hi := opsem.ClipBounds(l.Node)
		return l.Launch(unary, y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(lo), floatArg(hi))
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
			return l.NoKernel("Clip bound %q is %v, want one %v", o.Name, t, x.DType)
		}
		bounds[i] = t
	}
	if onDevice {
		return clipOnDevice(l)
	}
	switch x.DType {
	case inference.Float32, inference.Float16:
		lim := [2]float64{math.Inf(-1), math.Inf(1)}
		for i, t := range bounds {
			w, _ := opsem.WidenToFloat32(nil, t) // one element: exact
			if v, err := inference.Data[float32](w); err == nil {
				lim[i] = float64(v[0])
			}
		}
		return l.Launch(unary, y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), floatArg(lim[0]), floatArg(lim[1]))
	case inference.Int64, inference.Int32:
		lim := [2]int64{math.MinInt64, math.MaxInt64}
		if x.DType == inference.Int32 {
			lim = [2]int64{math.MinInt32, math.MaxInt32}
		}
		for i, t := range bounds {
			if t.DType() != 0 {
				v, _ := opsem.Int64s(t)
				lim[i] = v[0]
			}
		}
		return l.Launch(intKernel(kernels.UnaryI64, kernels.UnaryI32, x.DType), y.Len(), intArg(kernels.U_CLIP), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(lim[0]), intArg(lim[1]))
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
// int32 (an integer Div by intDivide).
func lowerBinary(l *lowering, code int) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	var err error
	if code == kernels.B_PRELU {
		y, err = preluSlope(l, x, y)
	} else {
		y, err = legacyBroadcast(l, x, y)
	}
	if err != nil {
		return err
	}
	if k := halfKernel(kernels.BinaryF32, kernels.BinaryF16, x.DType); k != "" {
		return launchBroadcast(l, k, code, z, x, y)
	}
	if code == kernels.B_DIV {
		return intDivide(l, code, "integer division by zero", z, x, y)
	}
	kernel := intKernel(kernels.BinaryI64, kernels.BinaryI32, x.DType)
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	return launchBroadcast(l, kernel, code, z, x, y)
}

// intDivide queues the integer Div or Mod (code B_DIV, B_MOD or B_PYMOD)
// z = x op y on int64 or int32. A divisor of 0 is an error, as on the CPU
// (its message is what): a divisor the host knows free of 0 takes
// binary_i*, any other divmod_i*, which reports a 0 on the error word.
// Both give Go's x / -1 = -x (wrapped) and x % -1 = 0.
func intDivide(l *lowering, code int, what string, z, x, y operand) error {
	kernel := intKernel(kernels.BinaryI64, kernels.BinaryI32, x.DType)
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	if t, ok := y.Host(); ok {
		v, err := opsem.Int64s(t)
		if err != nil {
			return l.NoKernel("divisor %v: %v", t, err)
		}
		if !slices.Contains(v, 0) {
			return launchBroadcast(l, kernel, code, z, x, y)
		}
	}
	b, err := broadcastArgs(z, x, y)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	e := l.errorWord(fmt.Sprintf("%s: input 1 %q", what, y.Name))
	args := append([]kernelArg{intArg(code), ptrArg(z), ptrArg(x), ptrArg(y), e[0], e[1]}, b...)
	return l.Launch(intKernel(kernels.DivmodI64, kernels.DivmodI32, x.DType), z.Len(), args...)
}

// preluSlope returns PRelu's slope with the shape opsem.PReluSlope gives
// it against x.
func preluSlope(l *lowering, x, slope operand) (operand, error) {
	s, err := opsem.PReluSlope(l.Node, x.Shape, slope.Shape)
	if err != nil {
		return slope, l.NoKernel("%v", err)
	}
	slope.Shape = s
	return slope, nil
}

// lowerPow handles a float32, int64 or int32 base with a float32, int64,
// int32 or uint8 exponent.
func lowerPow(l *lowering) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	y, err := legacyBroadcast(l, x, y)
	if err != nil {
		return err
	}
	if k := halfKernel(kernels.BinaryF32, kernels.BinaryF16, x.DType); k != "" && y.DType == x.DType {
		return launchBroadcast(l, k, kernels.B_POW, z, x, y)
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

// lowerMod handles float32 Mod (either fmod), and int64 and int32 Mod by
// intDivide.
func lowerMod(l *lowering) error {
	x, y, z := l.In[0], l.In[1], l.Out[0]
	if x.DType != y.DType {
		return l.NoKernel("%v and %v inputs", x.DType, y.DType)
	}
	code := kernels.B_PYMOD
	if opsem.ModFmod(l.Node) {
		code = kernels.B_MOD
	}
	if k := halfKernel(kernels.BinaryF32, kernels.BinaryF16, x.DType); k != "" {
		return launchBroadcast(l, k, code, z, x, y)
	}
	return intDivide(l, code, "integer modulo by zero", z, x, y)
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
	case x.DType == inference.Float16 && (code == kernels.B_MAX || code == kernels.B_MIN):
		kernel, pair = kernels.VariadicF16, kernels.BinaryF16 // each fold gives an input's value: no rounding
	case x.DType == inference.Float16:
		return l.NoKernel("float16 %s folds in float32", l.Node.OpType) // lowerNode's casts; not registerHalf'd
	case !mean:
		kernel, pair = intKernel(kernels.VariadicI64, kernels.VariadicI32, x.DType), intKernel(kernels.BinaryI64, kernels.BinaryI32, x.DType)
	}
	if kernel == "" {
		return l.NoKernel("%v inputs", x.DType)
	}
	shapes := make([][]int, len(l.In))
	for i, in := range l.In {
		if !in.Present() || in.DType != x.DType {
			return l.NoKernel("inputs of different types")
		}
		shapes[i] = in.Shape
	}
	if shape, err := opsem.VariadicShape(l.Node, shapes); err != nil || !slices.Equal(shape, z.Shape) {
		return l.NoKernel("inputs %v for the output %v: %v", shapes, z.Shape, err)
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
		if kernel == kernels.VariadicF32 || kernel == kernels.VariadicF16 {
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
	shape, err := opsem.BroadcastShape(c.Shape, a.Shape, b.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
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
		s, err := broadcastInto(l, in.Shape, shape)
		if err != nil {
			return err
		}
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

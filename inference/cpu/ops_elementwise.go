package cpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Elementwise operators: unary math and activations, binary arithmetic with
// numpy broadcasting (and the broadcast/axis attributes of the versions
// before 7; the plans are in broadcast.go), PRelu, Where, Clip, the
// variadic Sum/Max/Min/Mean, and Cast/CastLike.

func init() {
	for op, u := range ewUnaryOps {
		register(op, ewUnaryKernel(u))
	}
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		register(op, ewArithKernel)
	}
	register("Pow", ewPow)
	register("Mod", ewMod)
	register("BitShift", ewBitShift)
	register("PRelu", ewPRelu)
	register("Where", ewWhere)
	register("Clip", ewClip)
	for _, op := range []string{"Sum", "Max", "Min", "Mean"} {
		register(op, ewVariadic)
	}
	register("Cast", ewCast)
	registerTypes("Cast", inference.DTypes()...)
	registerTypes("CastLike", inference.DTypes()...)
	register("CastLike", ewCastLike)

	// The types beyond baseTypes that each operator's ONNX schema admits.
	for op := range ewUnaryOps {
		switch op {
		case "Abs", "Sign":
			registerTypes(op, moreNumbers...)
		case "Neg", "Relu":
			registerTypes(op, slices.Concat(moreFloats, moreSigned)...)
		case "Shrink": // not bfloat16
			registerTypes(op, slices.Concat([]inference.DType{inference.Float64}, moreSigned, moreUnsigned)...)
		default:
			registerTypes(op, moreFloats...)
		}
	}
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Mod", "Clip", "Max", "Min"} {
		registerTypes(op, moreNumbers...)
	}
	for _, op := range []string{"Sum", "Mean"} {
		registerTypes(op, moreFloats...)
	}
	registerTypes("PRelu", slices.Concat(moreFloats, []inference.DType{inference.Uint32, inference.Uint64})...)
	registerTypes("BitShift", moreUnsigned...)
	// Pow's base is a float, int32 or int64; its exponent any number.
	registerTypes("Pow", moreFloats...)
	registerInputTypes("Pow", 1, slices.Concat(moreSigned, moreUnsigned)...)
}

// Unary operators.

// ewUnary is a unary operator: float32 elements go through vec where the
// operator has it (the activations on models' hot paths, computed in
// float32: mathf.go), else through float (computed in float64), as
// float64 elements do; integer elements through integer (the signed
// types, in int64) or unsigned (the unsigned types, in uint64) where the
// operator takes them, the result wrapped back to the element's width.
type ewUnary struct {
	float    func(float64) float64
	vec      func(y, x []float32) // y[i] = f(x[i]); y may be x
	integer  func(int64) int64
	unsigned func(uint64) uint64
}

// ewVecCost is the work per element, in flops, of a vec loop, and of
// the other passes over memory (binary arithmetic, a convolution's copy of
// its image and compaction of its output): what parallelFor weighs against
// its threshold, so that they split from 16K elements. At one flop per
// element a 3×3 stride-2 convolution's 215K-element copy ran on one thread
// of two (ResNet-18 at batch 1 on 2 threads 11.0 → 10.3 ms).
const ewVecCost = 16

// ewNeg32 and ewAbs32 are the vec of Neg and Abs: loops without a call
// per element (a function value per element cost Neg 2 ns an element, a
// chain of small Negs most of its time), on the sign bit as the spec has
// them act (−0 and 0 change places; NaN keeps its payload).
func ewNeg32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = -v
	}
}

func ewAbs32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.Abs(float64(v))) // exact: the conversions keep every float32
	}
}

// The vec of Reciprocal, Sqrt, Floor, Ceil and Round: the float64
// function's result rounded to float32, which is the float32 function's
// (division and square root round once more without changing the result,
// float64 holding more than twice float32's digits and two; the integers
// Floor, Ceil and Round make are float32 values), one loop each rather
// than a function value per element.

func ewReciprocal32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = 1 / v
	}
}

func ewSqrt32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.Sqrt(float64(v)))
	}
}

func ewFloor32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.Floor(float64(v)))
	}
}

func ewCeil32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.Ceil(float64(v)))
	}
}

func ewRound32(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32(math.RoundToEven(float64(v)))
	}
}

// ewVec adds a float32 vector loop to an operator without attributes.
func ewVec(f func(float64) float64, vec func(y, x []float32)) ewAttrs {
	return func(opsem.Node) (ewUnary, error) { return ewUnary{float: f, vec: vec}, nil }
}

// ewAttrs builds a unary operator from the node's attributes.
type ewAttrs func(n opsem.Node) (ewUnary, error)

func ewFixed(f func(float64) float64) ewAttrs {
	return func(opsem.Node) (ewUnary, error) { return ewUnary{float: f}, nil }
}

func ewFixedInt(f func(float64) float64, i func(int64) int64, u func(uint64) uint64) ewAttrs {
	return func(opsem.Node) (ewUnary, error) { return ewUnary{float: f, integer: i, unsigned: u}, nil }
}

// ewAlpha builds an operator whose float function takes the attribute
// alpha (opsem.ActivationAttrs gives it, with its default).
func ewAlpha(f func(x, alpha float64) float64) ewAttrs {
	return func(n opsem.Node) (ewUnary, error) {
		alpha, _ := opsem.ActivationAttrs(n)
		return ewUnary{float: func(x float64) float64 { return f(x, alpha) }}, nil
	}
}

func ewSignOf(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 and NaN
}

// ewWithVec is a with vec as its float32 vector loop.
func ewWithVec(a ewAttrs, vec func(y, x []float32)) ewAttrs {
	return func(n opsem.Node) (ewUnary, error) {
		u, err := a(n)
		u.vec = vec
		return u, err
	}
}

var ewUnaryOps = map[string]ewAttrs{
	"Abs": ewWithVec(ewFixedInt(math.Abs, func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}, func(x uint64) uint64 { return x }), ewAbs32),
	"Neg": ewWithVec(ewFixedInt(func(x float64) float64 { return -x }, func(x int64) int64 { return -x }, nil),
		ewNeg32),
	"Sign": ewFixedInt(ewSignOf, func(x int64) int64 { return int64(cmp.Compare(x, 0)) }, func(x uint64) uint64 {
		return uint64(cmp.Compare(x, 0))
	}),
	"Relu": func(opsem.Node) (ewUnary, error) {
		return ewUnary{
			float: func(x float64) float64 {
				if x < 0 {
					return 0
				}
				return x
			},
			vec: func(y, x []float32) {
				if len(x) > 0 && &y[0] != &x[0] { // in place, the copy would move every element onto itself
					copy(y, x)
				}
				clamps(y[:len(x)], 0, float32(math.Inf(1))) // NaN stays
			},
			integer: func(x int64) int64 { return max(x, 0) },
		}, nil
	},
	"Reciprocal": ewVec(func(x float64) float64 { return 1 / x }, ewReciprocal32),
	"Floor":      ewVec(math.Floor, ewFloor32),
	"Ceil":       ewVec(math.Ceil, ewCeil32),
	"Round":      ewVec(math.RoundToEven, ewRound32),
	"Sqrt":       ewVec(math.Sqrt, ewSqrt32),
	"Exp":        ewVec(math.Exp, func(y, x []float32) { expSum(y, x, 0) }),
	"Log":        ewFixed(math.Log),
	"Erf":        ewVec(math.Erf, erfs),
	"Sin":        ewFixed(math.Sin),
	"Cos":        ewFixed(math.Cos),
	"Tan":        ewFixed(math.Tan),
	"Asin":       ewFixed(math.Asin),
	"Acos":       ewFixed(math.Acos),
	"Atan":       ewFixed(math.Atan),
	"Sinh":       ewFixed(math.Sinh),
	"Cosh":       ewFixed(math.Cosh),
	"Asinh":      ewFixed(math.Asinh),
	"Acosh":      ewFixed(math.Acosh),
	"Atanh":      ewFixed(math.Atanh),
	"Tanh":       ewVec(math.Tanh, tanhs),
	"Sigmoid":    ewVec(sigmoid, sigmoids),
	"Softplus":   ewFixed(softplus),
	"Softsign":   ewFixed(func(x float64) float64 { return x / (1 + math.Abs(x)) }),
	"Mish":       ewFixed(func(x float64) float64 { return x * math.Tanh(softplus(x)) }),
	// HardSwish is x·HardSigmoid(x) with alpha 1/6 and beta 1/2.
	"HardSwish": ewVec(func(x float64) float64 { return x * max(0, min(1, x/6+0.5)) }, hardSwishes),
	"LeakyRelu": ewAlpha(func(x, alpha float64) float64 {
		if x < 0 {
			return alpha * x
		}
		return x
	}),
	"Elu": ewAlpha(func(x, alpha float64) float64 {
		if x < 0 {
			return alpha * (math.Exp(x) - 1)
		}
		return x
	}),
	// Celu is max(0, x) + min(0, alpha·(e^(x/alpha) − 1)).
	"Celu": ewAlpha(func(x, alpha float64) float64 {
		return max(0, x) + min(0, alpha*(math.Exp(x/alpha)-1))
	}),
	"ThresholdedRelu": ewAlpha(func(x, alpha float64) float64 {
		if x > alpha {
			return x
		}
		return 0
	}),
	"Swish": ewAlpha(func(x, alpha float64) float64 { return x * sigmoid(alpha*x) }),
	"Selu": func(n opsem.Node) (ewUnary, error) {
		alpha, gamma := opsem.ActivationAttrs(n)
		return ewUnary{float: func(x float64) float64 {
			if x <= 0 {
				return gamma * (alpha*math.Exp(x) - alpha)
			}
			return gamma * x
		}}, nil
	},
	"HardSigmoid": func(n opsem.Node) (ewUnary, error) {
		alpha, beta := opsem.ActivationAttrs(n)
		a32, b32 := float32(alpha), float32(beta)
		return ewUnary{float: func(x float64) float64 { return max(0, min(1, alpha*x+beta)) },
			vec: func(y, x []float32) { hardSigmoids(y, x, a32, b32) }}, nil
	},
	"Shrink": func(n opsem.Node) (ewUnary, error) {
		lambd, bias := opsem.ActivationAttrs(n)
		f := func(x float64) float64 {
			switch {
			case x < -lambd:
				return x + bias
			case x > lambd:
				return x - bias
			}
			return 0
		}
		// Integer elements go through float64 and truncate back.
		return ewUnary{float: f, integer: func(x int64) int64 { return int64(f(float64(x))) },
			unsigned: func(x uint64) uint64 { return uint64Of(f(float64(x))) }}, nil
	},
	// Gelu is x·Φ(x), or with approximate=tanh
	// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
	"Gelu": func(n opsem.Node) (ewUnary, error) {
		tanh, err := opsem.GeluTanh(n)
		if err != nil {
			return ewUnary{}, err
		}
		if tanh {
			c := math.Sqrt(2 / math.Pi)
			return ewUnary{float: func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(c*(x+0.044715*x*x*x))) }, vec: geluTanhs}, nil
		}
		return ewUnary{float: func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, vec: gelus}, nil
	},
}

// ewUnaryPlan is what a unary operator's node keeps from run to run: the
// operator its attributes make, the output's shape, and the float32 vec
// loop's body, bound once, which reads its slices from the plan (a closure
// made each run would be allocated: parallelFor hands it to other
// goroutines).
type ewUnaryPlan struct {
	u     ewUnary
	shape []int
	y, x  []float32 // this run's, set around the vec loop
	body  func(lo, hi int)
}

func (p *ewUnaryPlan) chunk(lo, hi int) { p.u.vec(p.y[lo:hi], p.x[lo:hi]) }

func ewUnaryKernel(attrs ewAttrs) kernel {
	return func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		if err := needInputs(in, 1); err != nil {
			return nil, err
		}
		p, err := opsem.Plan(n, in, func() (*ewUnaryPlan, error) {
			u, err := attrs(n)
			if err != nil {
				return nil, err
			}
			p := &ewUnaryPlan{u: u, shape: in[0].Shape()}
			p.body = p.chunk
			return p, nil
		})
		if err != nil {
			return nil, err
		}
		u, x := p.u, in[0]
		if x.DType() == inference.Float32 && u.vec != nil {
			xd := dataOf[float32](x)
			y, err := limit.MakeOverwritten[float32](n.Run, p.shape...) // len(xd) elements
			if err != nil {
				return nil, err
			}
			p.y, p.x = y, xd
			parallelFor(len(xd), ewVecCost, p.body)
			p.y, p.x = nil, nil
			return opsem.Single(n, p.shape, y)
		}
		if k := numbersOf(x.DType()); k != nil {
			return k.unary(n, p.shape, x, u)
		}
		return nil, wantType(0, x, "a number")
	}
}

// ewUnaryFloat applies u to floats, in float64; shape is x's.
func ewUnaryFloat[T float](n opsem.Node, shape []int, x inference.Tensor, u ewUnary) ([]inference.Tensor, error) {
	f := u.float
	return mapOutput(n, shape, dataOf[T](x), func(v T) T { return T(f(float64(v))) })
}

// ewUnaryInteger applies u to integers, in int64 or uint64, wrapping the
// result to T; shape is x's.
func ewUnaryInteger[T integer](n opsem.Node, shape []int, x inference.Tensor, u ewUnary) ([]inference.Tensor, error) {
	switch i, w := u.integer, u.unsigned; {
	case isSigned[T]() && i != nil:
		return mapOutput(n, shape, dataOf[T](x), func(v T) T { return T(i(int64(v))) })
	case !isSigned[T]() && w != nil:
		return mapOutput(n, shape, dataOf[T](x), func(v T) T { return T(w(uint64(v))) })
	case i != nil:
		return nil, wantType(0, x, "a float or a signed integer")
	}
	return nil, wantType(0, x, "a float")
}

// Binary arithmetic.

// PRelu is x < 0 ? slope·x : x, slope broadcasting to x's shape
// (unidirectionally) as opsem.PReluSlope says: before opset 7, a 1-D slope
// as long as x's dimension 1 is per channel.
func ewPRelu(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	if err := sameType(in[:2]); err != nil {
		return nil, err
	}
	x, slope := in[0], in[1]
	p, err := opsem.Plan(n, in, func() (*broadcastPlan, error) {
		xs := x.Shape()
		ss, err := opsem.PReluSlope(n, xs, slope.Shape())
		if err != nil {
			return nil, err
		}
		return newBroadcastPlan(n.Run, xs, xs, ss), nil
	})
	if err != nil {
		return nil, err
	}
	p.run = n.Run
	if k := numbersOf(x.DType()); k != nil {
		return k.prelu(n, p, x, slope)
	}
	return nil, wantType(0, x, "a number")
}

func ewPReluOf[T number](n opsem.Node, p *broadcastPlan, x, slope inference.Tensor) ([]inference.Tensor, error) {
	return zip(n, p, dataOf[T](x), dataOf[T](slope), planFunc(p, ewPReluFunc[T], ""))
}

// ewPReluFunc is PRelu's elementwise function (it takes planFunc's
// operator, and ignores it).
func ewPReluFunc[T number](string) func(x, slope T) T {
	return func(x, slope T) T {
		if x < 0 {
			return slope * x
		}
		return x
	}
}

type ewArithOp uint8

const (
	ewAdd ewArithOp = iota
	ewSub
	ewMul
	ewDiv
)

var ewArithOps = map[string]ewArithOp{"Add": ewAdd, "Sub": ewSub, "Mul": ewMul, "Div": ewDiv}

// ewArithKernel runs Add, Sub, Mul and Div in the element type, as Go's
// operators do: integers wrap, integer division truncates toward zero
// (and the least signed value divided by −1 is itself); an integer zero
// divisor is an error.
func ewArithKernel(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	if err := sameType(in[:2]); err != nil {
		return nil, err
	}
	a := in[0]
	if k := numbersOf(a.DType()); k != nil {
		return k.arith(n, in, ewArithOps[n.OpType])
	}
	return nil, wantType(0, a, "a number")
}

// ewArithPlan is what an Add, Sub, Mul or Div node keeps from run to run:
// the broadcasting of its inputs, and the bodies of its parallel loops,
// bound once, which read this run's slices from the plan (a closure made
// each run would be allocated: parallelFor hands it to other goroutines).
type ewArithPlan[T number] struct {
	*broadcastPlan
	op         ewArithOp
	out, a, b  []T // this run's, set around the loops
	inner      int // the elements of a row, with an operand broadcastRows
	vv, vs, sv func(lo, hi int)
	rowsVS     func(lo, hi int) // a whole, b one value per row
	rowsSV     func(lo, hi int) // a one value per row, b whole
}

func (p *ewArithPlan[T]) chunkVV(lo, hi int) { ewArithVV(p.op, p.out[lo:hi], p.a[lo:hi], p.b[lo:hi]) }
func (p *ewArithPlan[T]) chunkVS(lo, hi int) { ewArithVS(p.op, p.out[lo:hi], p.a[lo:hi], p.b[0]) }
func (p *ewArithPlan[T]) chunkSV(lo, hi int) { ewArithSV(p.op, p.out[lo:hi], p.a[0], p.b[lo:hi]) }

// chunkRowsVS and chunkRowsSV run rows lo…hi−1 of inner elements, the
// broadcast operand's value r for row r.
func (p *ewArithPlan[T]) chunkRowsVS(lo, hi int) {
	for r := lo; r < hi; r++ {
		ewArithVS(p.op, p.out[r*p.inner:(r+1)*p.inner], p.a[r*p.inner:], p.b[r])
	}
}

func (p *ewArithPlan[T]) chunkRowsSV(lo, hi int) {
	for r := lo; r < hi; r++ {
		ewArithSV(p.op, p.out[r*p.inner:(r+1)*p.inner], p.a[r], p.b[r*p.inner:])
	}
}

// ewArithOf runs op on the node's inputs, of element type T, through the
// plan it keeps.
func ewArithOf[T number](n opsem.Node, in []inference.Tensor, op ewArithOp) ([]inference.Tensor, error) {
	p, err := opsem.Plan(n, in, func() (*ewArithPlan[T], error) {
		bp, err := binaryPlan(n, in[0], in[1])
		if err != nil {
			return nil, err
		}
		p := &ewArithPlan[T]{broadcastPlan: bp, op: op}
		p.vv, p.vs, p.sv = p.chunkVV, p.chunkVS, p.chunkSV
		p.rowsVS, p.rowsSV = p.chunkRowsVS, p.chunkRowsSV
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	p.run = n.Run
	a, b := dataOf[T](in[0]), dataOf[T](in[1])
	if op == ewDiv && !isFloat[T]() && p.n > 0 && slices.Contains(b, 0) {
		return nil, fmt.Errorf("integer division by zero: input 1 holds 0: %w", inference.ErrDivisionByZero)
	}
	return ewArith(n, p, a, b)
}

// ewArith computes a op b with tight loops for equal shapes, a scalar
// operand, and an operand repeated along the leading dimensions.
func ewArith[T number](n opsem.Node, p *ewArithPlan[T], a, b []T) ([]inference.Tensor, error) {
	op := p.op
	out, err := limit.MakeOverwritten[T](p.run, p.shape...) // every branch writes every element
	if err != nil {
		return nil, err
	}
	switch ma, mb := p.ops[0].mode, p.ops[1].mode; {
	case ma == broadcastSame && mb == broadcastSame:
		p.out, p.a, p.b = out, a, b
		parallelFor(len(out), ewVecCost, p.vv)
	case ma == broadcastSame && mb == broadcastScalar:
		p.out, p.a, p.b = out, a, b
		parallelFor(len(out), ewVecCost, p.vs)
	case ma == broadcastScalar && mb == broadcastSame:
		p.out, p.a, p.b = out, a, b
		parallelFor(len(out), ewVecCost, p.sv)
	case ma == broadcastSame && mb == broadcastRows:
		// One value of b per row (a squeeze-and-excitation's gate, a
		// per-channel scale): rows in parallel.
		p.out, p.a, p.b, p.inner = out, a, b, len(out)/len(b)
		parallelFor(len(b), p.inner*ewVecCost, p.rowsVS)
	case ma == broadcastRows && mb == broadcastSame:
		p.out, p.a, p.b, p.inner = out, a, b, len(out)/len(a)
		parallelFor(len(a), p.inner*ewVecCost, p.rowsSV)
	case ma == broadcastSame && mb == broadcastTile:
		for s := 0; s < len(out); s += len(b) {
			ewArithVV(op, out[s:s+len(b)], a[s:s+len(b)], b)
		}
	case ma == broadcastTile && mb == broadcastSame:
		for s := 0; s < len(out); s += len(a) {
			ewArithVV(op, out[s:s+len(a)], a, b[s:s+len(a)])
		}
	default:
		p.runs(0, 1, func(o, ia, ib, n, sa, sb int) {
			y := out[o : o+n]
			switch {
			case sa == 1 && sb == 1:
				ewArithVV(op, y, a[ia:], b[ib:])
			case sa == 1:
				ewArithVS(op, y, a[ia:], b[ib])
			case sb == 1:
				ewArithSV(op, y, a[ia], b[ib:])
			default:
				ewArithVS(op, y[:1], a[ia:], b[ib])
				for j := 1; j < n; j++ {
					y[j] = y[0]
				}
			}
		})
	}
	p.out, p.a, p.b = nil, nil, nil
	return opsem.Single(n, p.shape, out)
}

func ewArithVV[T number](op ewArithOp, out, a, b []T) {
	if o, ok := any(out).([]float32); ok && arithVV(op, o, any(a).([]float32), any(b).([]float32)) {
		return
	}
	ewArithVVGo(op, out, a, b)
}

func ewArithVVGo[T number](op ewArithOp, out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case ewAdd:
		for i := range out {
			out[i] = a[i] + b[i]
		}
	case ewSub:
		for i := range out {
			out[i] = a[i] - b[i]
		}
	case ewMul:
		for i := range out {
			out[i] = a[i] * b[i]
		}
	default:
		for i := range out {
			out[i] = a[i] / b[i]
		}
	}
}

func ewArithVS[T number](op ewArithOp, out, a []T, s T) {
	if o, ok := any(out).([]float32); ok && arithVS(op, o, any(a).([]float32), any(s).(float32), false) {
		return
	}
	ewArithVSGo(op, out, a, s)
}

func ewArithVSGo[T number](op ewArithOp, out, a []T, s T) {
	a = a[:len(out)]
	switch op {
	case ewAdd:
		for i := range out {
			out[i] = a[i] + s
		}
	case ewSub:
		for i := range out {
			out[i] = a[i] - s
		}
	case ewMul:
		for i := range out {
			out[i] = a[i] * s
		}
	default:
		for i := range out {
			out[i] = a[i] / s
		}
	}
}

func ewArithSV[T number](op ewArithOp, out []T, s T, b []T) {
	if o, ok := any(out).([]float32); ok && arithVS(op, o, any(b).([]float32), any(s).(float32), true) {
		return
	}
	ewArithSVGo(op, out, s, b)
}

func ewArithSVGo[T number](op ewArithOp, out []T, s T, b []T) {
	b = b[:len(out)]
	switch op {
	case ewAdd:
		for i := range out {
			out[i] = s + b[i]
		}
	case ewSub:
		for i := range out {
			out[i] = s - b[i]
		}
	case ewMul:
		for i := range out {
			out[i] = s * b[i]
		}
	default:
		for i := range out {
			out[i] = s / b[i]
		}
	}
}

// Pow raises a float32, float64, int64 or int32 base to an exponent of any
// numeric type; the result has the base's type. An integer base with an
// integer exponent is computed exactly (wrapping on overflow); otherwise
// in float64, truncated toward zero for an integer base.
func ewPow(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	x, y := in[0], in[1]
	p, err := keptBinary(n, in)
	if err != nil {
		return nil, err
	}
	switch x.DType() {
	case inference.Float32:
		if e, ok := ewSmallExponent(y); ok && p.ops[0].mode == broadcastSame {
			return ewPowSmall(n, p.shape, x, e)
		}
		return ewPowBase(n, p, dataOf[float32](x), y)
	case inference.Float64:
		return ewPowBase(n, p, dataOf[float64](x), y)
	case inference.Int64:
		return ewPowBase(n, p, dataOf[int64](x), y)
	case inference.Int32:
		return ewPowBase(n, p, dataOf[int32](x), y)
	}
	return nil, wantType(0, x, "float32, float64, int64 or int32")
}

// ewSmallExponent reports a one-element exponent of 2 or 3, which Pow
// computes by multiplying (exporters write x² as Pow(x, 2): the variance of
// a decomposed LayerNormalization).
func ewSmallExponent(y inference.Tensor) (int, bool) {
	if y.Len() != 1 {
		return 0, false
	}
	var e float64
	switch y.DType() {
	case inference.Float32:
		e = float64(dataOf[float32](y)[0])
	case inference.Int64:
		e = float64(dataOf[int64](y)[0])
	case inference.Int32:
		e = float64(dataOf[int32](y)[0])
	default:
		return 0, false
	}
	return int(e), e == 2 || e == 3
}

// ewPowSmall is x^e for e of 2 or 3 in float64, rounded once, as
// math.Pow(x, e) gives it; shape is x's.
func ewPowSmall(n opsem.Node, shape []int, x inference.Tensor, e int) ([]inference.Tensor, error) {
	if e == 2 {
		return mapOutput(n, shape, dataOf[float32](x), func(v float32) float32 { return v * v })
	}
	return mapOutput(n, shape, dataOf[float32](x), func(v float32) float32 {
		w := float64(v)
		return float32(w * w * w)
	})
}

// powBase is the base types Pow computes; the 16-bit floats reach it
// widened to float32.
type powBase interface {
	float32 | float64 | int64 | int32
}

func ewPowBase[B powBase](n opsem.Node, p *broadcastPlan, x []B, y inference.Tensor) ([]inference.Tensor, error) {
	switch y.DType() {
	case inference.Float32:
		return zip(n, p, x, dataOf[float32](y), planFunc(p, ewPowFunc[B, float32], ""))
	case inference.Float64:
		return zip(n, p, x, dataOf[float64](y), planFunc(p, ewPowFunc[B, float64], ""))
	case inference.Int64:
		return zip(n, p, x, dataOf[int64](y), planFunc(p, ewPowFunc[B, int64], ""))
	case inference.Int32:
		return zip(n, p, x, dataOf[int32](y), planFunc(p, ewPowFunc[B, int32], ""))
	case inference.Int16:
		return zip(n, p, x, dataOf[int16](y), planFunc(p, ewPowFunc[B, int16], ""))
	case inference.Int8:
		return zip(n, p, x, dataOf[int8](y), planFunc(p, ewPowFunc[B, int8], ""))
	case inference.Uint64:
		return zip(n, p, x, dataOf[uint64](y), planFunc(p, ewPowFunc[B, uint64], ""))
	case inference.Uint32:
		return zip(n, p, x, dataOf[uint32](y), planFunc(p, ewPowFunc[B, uint32], ""))
	case inference.Uint16:
		return zip(n, p, x, dataOf[uint16](y), planFunc(p, ewPowFunc[B, uint16], ""))
	case inference.Uint8:
		return zip(n, p, x, dataOf[uint8](y), planFunc(p, ewPowFunc[B, uint8], ""))
	}
	return nil, wantType(1, y, "a number")
}

// ewPowFunc is Pow's elementwise function for base B and exponent E (it
// takes planFunc's operator, and ignores it).
func ewPowFunc[B powBase, E number](string) func(x B, y E) B {
	if isFloat[B]() || isFloat[E]() {
		return func(x B, y E) B { return B(math.Pow(float64(x), float64(y))) }
	}
	return func(x B, y E) B {
		if y < 0 {
			return B(ewIntPowNegative(int64(x), int64(y)%2 != 0))
		}
		return B(ewIntPow(int64(x), uint64(y)))
	}
}

// ewIntPow is x^y for integers, wrapping on overflow.
func ewIntPow(x int64, y uint64) int64 {
	r := int64(1)
	for y > 0 {
		if y&1 == 1 {
			r *= x
		}
		x *= x
		y >>= 1
	}
	return r
}

// ewIntPowNegative is x^y for integers and a negative y, odd or not: the
// truncated quotient 1/x^|y| (0 when x is 0, as no integer stands for
// infinity).
func ewIntPowNegative(x int64, odd bool) int64 {
	switch {
	case x == 1, x == -1 && !odd:
		return 1
	case x == -1:
		return -1
	}
	return 0
}

// Mod is the remainder of a / b. With fmod=1 it has the sign of a (C's
// fmod); with fmod=0 the sign of b (Python's %), the ONNX default for
// integers. An integer zero divisor is an error.
func ewMod(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	p, err := binaryInputs(n, in)
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if k := numbersOf(a.DType()); k != nil {
		return k.mod(n, p, a, b, opsem.ModFmod(n))
	}
	return nil, wantType(0, a, "a number")
}

// ewModFloat computes the floats' remainder in float64, rounded once.
func ewModFloat[T float](n opsem.Node, p *broadcastPlan, a, b inference.Tensor, fmod bool) ([]inference.Tensor, error) {
	return zip(n, p, dataOf[T](a), dataOf[T](b), func(x, y T) T {
		r := math.Mod(float64(x), float64(y))
		if !fmod && r != 0 && (r < 0) != (y < 0) {
			r += float64(y)
		}
		return T(r)
	})
}

func ewModInteger[T integer](n opsem.Node, p *broadcastPlan, a, b inference.Tensor, fmod bool) ([]inference.Tensor, error) {
	x, y := dataOf[T](a), dataOf[T](b)
	if p.n > 0 && slices.Contains(y, 0) {
		return nil, fmt.Errorf("integer modulo by zero: input 1 holds 0: %w", inference.ErrDivisionByZero)
	}
	return zip(n, p, x, y, func(x, y T) T {
		r := x % y
		if !fmod && r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		return r
	})
}

// BitShift shifts unsigned integers; bits shifted past the width are
// lost.
func ewBitShift(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	p, err := binaryInputs(n, in)
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	k := numbersOf(a.DType())
	if k == nil || k.shift == nil {
		return nil, wantType(0, a, "an unsigned integer")
	}
	switch d := n.Str("direction", ""); d {
	case "LEFT", "RIGHT":
		return k.shift(n, p, a, b, d == "LEFT")
	default:
		return nil, fmt.Errorf("direction %q, want LEFT or RIGHT: %w", d, inference.ErrBadModel)
	}
}

func ewBitShiftOf[T integer](n opsem.Node, p *broadcastPlan, a, b inference.Tensor, left bool) ([]inference.Tensor, error) {
	f := func(x, s T) T { return x >> s }
	if left {
		f = func(x, s T) T { return x << s }
	}
	return zip(n, p, dataOf[T](a), dataOf[T](b), f)
}

// Where, Clip, and the variadic operators.

// Where picks x where cond holds and y elsewhere, the three broadcast together.
func ewWhere(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 3); err != nil {
		return nil, err
	}
	cond, x, y := in[0], in[1], in[2]
	if cond.DType() != inference.Bool {
		return nil, wantType(0, cond, "bool")
	}
	if err := sameType(in[1:3]); err != nil {
		return nil, fmt.Errorf("input 2 is %v, input 1 is %v: %w", y, x, inference.ErrType)
	}
	p, err := opsem.Plan(n, in, func() (*broadcastPlan, error) { return planBroadcast(n.Run, cond, x, y) })
	if err != nil {
		return nil, err
	}
	p.run = n.Run
	c := dataOf[bool](cond)
	switch x.DType() {
	case inference.Float32:
		return ewSelect(n, p, c, dataOf[float32](x), dataOf[float32](y))
	case inference.Int64:
		return ewSelect(n, p, c, dataOf[int64](x), dataOf[int64](y))
	case inference.Int32:
		return ewSelect(n, p, c, dataOf[int32](x), dataOf[int32](y))
	case inference.Bool:
		return ewSelect(n, p, c, dataOf[bool](x), dataOf[bool](y))
	case inference.Uint8:
		return ewSelect(n, p, c, dataOf[uint8](x), dataOf[uint8](y))
	}
	return nil, wantType(1, x, "a tensor")
}

func ewSelect[T inference.Element](n opsem.Node, p *broadcastPlan, c []bool, x, y []T) ([]inference.Tensor, error) {
	out, err := limit.MakeOverwritten[T](p.run, p.shape...) // each element selected
	if err != nil {
		return nil, err
	}
	if p.ops[0].mode == broadcastSame && p.ops[1].mode == broadcastSame && p.ops[2].mode == broadcastSame {
		for i := range out {
			if c[i] {
				out[i] = x[i]
			} else {
				out[i] = y[i]
			}
		}
		return opsem.Single(n, p.shape, out)
	}
	offs, err := p.offsetsOf(0, 1, 2)
	if err != nil {
		return nil, err
	}
	oc, ox, oy := offs[0], offs[1], offs[2]
	for i := range out {
		if c[oc[i]] {
			out[i] = x[ox[i]]
		} else {
			out[i] = y[oy[i]]
		}
	}
	return opsem.Single(n, p.shape, out)
}

// Clip limits x to [min, max]; where min > max every element becomes max.
// Before Clip-11 the bounds are attributes (opsem.ClipBounds), from Clip-11
// on optional single-element inputs.
func ewClip(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if n.Opset < 11 {
		lo, hi := opsem.ClipBounds(n)
		switch x.DType() {
		case inference.Float32:
			return ewClipData(n, keptShape(n, in, 0), dataOf[float32](x), lo, hi)
		case inference.Float64:
			return ewClipData(n, keptShape(n, in, 0), dataOf[float64](x), float64(lo), float64(hi))
		}
		return nil, wantType(0, x, "float32 or float64")
	}
	if err := sameType(in[:min(len(in), 3)]); err != nil {
		return nil, err
	}
	if k := numbersOf(x.DType()); k != nil {
		return k.clip(n, in)
	}
	return nil, wantType(0, x, "a number")
}

// ewClipInputs clips to the bounds the inputs give, T's limits where they
// leave one out.
func ewClipInputs[T number](n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	lo, hi := limits[T]()
	for i := 1; i < min(len(in), 3); i++ {
		if !present(in[i]) {
			continue
		}
		if in[i].Len() != 1 {
			return nil, fmt.Errorf("input %d is %v, want a single value: %w", i, in[i], inference.ErrShape)
		}
		if i == 1 {
			lo = dataOf[T](in[i])[0]
		} else {
			hi = dataOf[T](in[i])[0]
		}
	}
	return ewClipData(n, keptShape(n, in, 0), dataOf[T](in[0]), lo, hi)
}

// ewClipData keeps NaN, and gives hi everywhere when lo > hi; shape is
// x's.
func ewClipData[T number](n opsem.Node, shape []int, x []T, lo, hi T) ([]inference.Tensor, error) {
	return mapOutput(n, shape, x, func(v T) T {
		if v < lo {
			v = lo
		}
		if v > hi {
			v = hi
		}
		return v
	})
}

// ewVariadic runs Sum, Max, Min and Mean over one or more inputs, which
// broadcast together from opset 8 and must have equal shapes before. Max and
// Min propagate NaN.
func ewVariadic(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	if err := sameType(in); err != nil {
		return nil, err
	}
	if err := needInputs(in, len(in)); err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*broadcastPlan, error) {
		shapes := make([][]int, len(in))
		for i, t := range in {
			shapes[i] = t.Shape()
		}
		out, err := opsem.VariadicShape(n, shapes)
		if err != nil {
			return nil, err
		}
		return newBroadcastPlan(n.Run, out, shapes...), nil
	})
	if err != nil {
		return nil, err
	}
	p.run = n.Run
	if k := numbersOf(in[0].DType()); k != nil {
		return k.variadic(n, p, in)
	}
	return nil, wantType(0, in[0], "a number")
}

// ewVariadicOf folds the inputs, of element type T, into one; Mean, of
// floats only, divides the sum by their count.
func ewVariadicOf[T number](n opsem.Node, p *broadcastPlan, in []inference.Tensor) ([]inference.Tensor, error) {
	mean := n.OpType == "Mean"
	if mean && !isFloat[T]() {
		return nil, wantType(0, in[0], "a float")
	}
	res, err := ewFold(n, p, in, planFunc(p, ewFolder[T], n.OpType))
	if err == nil && mean {
		out, k := dataOf[T](res[0]), T(len(in))
		for i := range out {
			out[i] /= k
		}
	}
	return res, err
}

func ewFolder[T number](op string) func(acc, x T) T {
	switch op {
	case "Max":
		return func(acc, x T) T {
			if x > acc || x != x {
				return x
			}
			return acc
		}
	case "Min":
		return func(acc, x T) T {
			if x < acc || x != x {
				return x
			}
			return acc
		}
	}
	return func(acc, x T) T { return acc + x }
}

// ewFold broadcasts input 0 to the output, then folds each further input in.
func ewFold[T number](n opsem.Node, p *broadcastPlan, in []inference.Tensor, f func(acc, x T) T) ([]inference.Tensor, error) {
	out, err := limit.MakeOverwritten[T](p.run, p.shape...) // input 0 broadcast to every element first
	if err != nil {
		return nil, err
	}
	first := dataOf[T](in[0])
	switch p.ops[0].mode {
	case broadcastSame:
		copy(out, first)
	case broadcastScalar:
		for i := range out {
			out[i] = first[0]
		}
	default:
		offs, err := p.offsets(0)
		if err != nil {
			return nil, err
		}
		for i, o := range offs {
			out[i] = first[o]
		}
	}
	for k := 1; k < len(in); k++ {
		x := dataOf[T](in[k])
		switch p.ops[k].mode {
		case broadcastSame:
			x = x[:len(out)]
			for i := range out {
				out[i] = f(out[i], x[i])
			}
		case broadcastScalar:
			s := x[0]
			for i := range out {
				out[i] = f(out[i], s)
			}
		default:
			offs, err := p.offsets(k)
			if err != nil {
				return nil, err
			}
			for i, o := range offs {
				out[i] = f(out[i], x[o])
			}
		}
	}
	return opsem.Single(n, p.shape, out)
}

// Cast and CastLike.

func ewCast(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	to, err := opsem.CastTarget(n)
	if err != nil {
		return nil, err
	}
	return ewConvert(n, in, to)
}

func ewCastLike(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	return ewConvert(n, in, in[1].DType())
}

// ewConvert casts the node's input 0 to the element type to, as its one
// output, between every pair of types a Tensor holds: float to integer
// truncates toward zero, integers narrow by wrapping, nonzero is true and
// true is 1; the 16-bit floats convert through float32, exactly from
// them, and to them rounding to nearest even (a float64 or a wide integer
// rounded to float32 first to odd, so that the two roundings give the
// one nearest). Strings convert to and from numbers as opsem.ParseFloat,
// ParseInt and FormatFloat say.
func ewConvert(n opsem.Node, in []inference.Tensor, to inference.DType) ([]inference.Tensor, error) {
	x := in[0]
	shape := keptShape(n, in, 0)
	if x.DType() == to {
		return viewOutput(n, x, shape)
	}
	switch x.DType() {
	case inference.Float32:
		return castFrom(n, shape, dataOf[float32](x), to)
	case inference.Float64:
		return castFrom(n, shape, dataOf[float64](x), to)
	case inference.Int64:
		return castFrom(n, shape, dataOf[int64](x), to)
	case inference.Int32:
		return castFrom(n, shape, dataOf[int32](x), to)
	case inference.Int16:
		return castFrom(n, shape, dataOf[int16](x), to)
	case inference.Int8:
		return castFrom(n, shape, dataOf[int8](x), to)
	case inference.Uint64:
		return castFrom(n, shape, dataOf[uint64](x), to)
	case inference.Uint32:
		return castFrom(n, shape, dataOf[uint32](x), to)
	case inference.Uint16:
		return castFrom(n, shape, dataOf[uint16](x), to)
	case inference.Uint8:
		return castFrom(n, shape, dataOf[uint8](x), to)
	case inference.Bool:
		if to == inference.String {
			return mapOutput(n, shape, dataOf[bool](x), func(v bool) string {
				if v {
					return "1"
				}
				return "0"
			})
		}
		u, err := mapData(n.Run, shape, dataOf[bool](x), func(v bool) uint8 { // scratch
			if v {
				return 1
			}
			return 0
		})
		if err != nil {
			return nil, err
		}
		return castFrom(n, shape, u, to)
	case inference.Float16:
		return castWidened(n, shape, dataOf[inference.Half](x), inference.Half.Float32, to)
	case inference.BFloat16:
		return castWidened(n, shape, dataOf[inference.BF16](x), inference.BF16.Float32, to)
	case inference.String:
		return castFromStrings(n, shape, dataOf[string](x), to)
	}
	return nil, fmt.Errorf("input 0 is %v: %w", x, inference.ErrType)
}

// castWidened casts 16-bit floats, widened to float32 exactly by widen.
func castWidened[H inference.Half | inference.BF16](n opsem.Node, shape []int, h []H, widen func(H) float32, to inference.DType) ([]inference.Tensor, error) {
	if to == inference.Float32 {
		return mapOutput(n, shape, h, widen)
	}
	f, err := mapData(n.Run, shape, h, widen) // scratch
	if err != nil {
		return nil, err
	}
	return castFrom(n, shape, f, to)
}

func castFrom[S number](n opsem.Node, shape []int, x []S, to inference.DType) ([]inference.Tensor, error) {
	var zero S
	_, f32 := any(zero).(float32)
	_, f64 := any(zero).(float64)
	switch to {
	case inference.Float32:
		return mapOutput(n, shape, x, func(v S) float32 { return float32(v) })
	case inference.Float64:
		return mapOutput(n, shape, x, func(v S) float64 { return float64(v) })
	case inference.Int64:
		return mapOutput(n, shape, x, func(v S) int64 { return int64(v) })
	case inference.Int32:
		return mapOutput(n, shape, x, func(v S) int32 { return int32(int64(v)) })
	case inference.Int16:
		return mapOutput(n, shape, x, func(v S) int16 { return int16(int64(v)) })
	case inference.Int8:
		return mapOutput(n, shape, x, func(v S) int8 { return int8(int64(v)) })
	case inference.Uint64:
		if f32 || f64 {
			return mapOutput(n, shape, x, func(v S) uint64 { return uint64Of(float64(v)) })
		}
		return mapOutput(n, shape, x, func(v S) uint64 { return uint64(v) }) // a negative integer wraps
	case inference.Uint32:
		return mapOutput(n, shape, x, func(v S) uint32 { return uint32(int64(v)) })
	case inference.Uint16:
		return mapOutput(n, shape, x, func(v S) uint16 { return uint16(int64(v)) })
	case inference.Uint8:
		return mapOutput(n, shape, x, func(v S) uint8 { return uint8(int64(v)) })
	case inference.Bool:
		return mapOutput(n, shape, x, func(v S) bool { return v != 0 })
	case inference.Float16:
		return mapOutput(n, shape, x, func(v S) inference.Half { return inference.HalfFromFloat32(float32ToOdd(float64(v))) })
	case inference.BFloat16:
		return mapOutput(n, shape, x, func(v S) inference.BF16 { return inference.BF16FromFloat32(float32ToOdd(float64(v))) })
	case inference.String:
		switch {
		case f32:
			return mapOutput(n, shape, x, func(v S) string { return opsem.FormatFloat(float64(v), 32) })
		case f64:
			return mapOutput(n, shape, x, func(v S) string { return opsem.FormatFloat(float64(v), 64) })
		}
		return mapOutput(n, shape, x, func(v S) string {
			if v < 0 {
				return strconv.FormatInt(int64(v), 10)
			}
			return strconv.FormatUint(uint64(v), 10)
		})
	}
	return nil, fmt.Errorf("cast to %v: %w", to, inference.ErrType)
}

// float32ToOdd rounds v to a float32 toward zero and, when that is not
// exact, sets the last fraction bit: rounding to odd, after which a
// rounding to 16 bits, which keeps far fewer, gives what rounding v
// directly would (a value that overflows float32 becomes ±Inf, as it
// would in float16 or bfloat16).
func float32ToOdd(v float64) float32 {
	f := float32(v)
	if float64(f) == v || v != v || math.IsInf(float64(f), 0) {
		return f
	}
	b := math.Float32bits(f)
	if math.Abs(float64(f)) > math.Abs(v) {
		b-- // toward zero: f's magnitude is one step smaller
	}
	return math.Float32frombits(b | 1)
}

// castFromStrings parses strings into numbers (opsem.ParseFloat,
// ParseInt): a string that is not one fails the node, naming it.
func castFromStrings(n opsem.Node, shape []int, x []string, to inference.DType) ([]inference.Tensor, error) {
	switch to {
	case inference.Float32, inference.Float64, inference.Float16, inference.BFloat16, inference.Bool:
		f, err := parseStrings(n, shape, x, opsem.ParseFloat)
		if err != nil {
			return nil, err
		}
		return castFrom(n, shape, f, to)
	}
	v, err := parseStrings(n, shape, x, opsem.ParseInt)
	if err != nil {
		return nil, err
	}
	return castFrom(n, shape, v, to)
}

// parseStrings parses each of x with parse, allocated under n's run.
func parseStrings[T float64 | int64](n opsem.Node, shape []int, x []string, parse func(string) (T, error)) ([]T, error) {
	v, err := limit.MakeOverwritten[T](n.Run, shape...)
	if err != nil {
		return nil, err
	}
	for i, s := range x {
		if v[i], err = parse(s); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return v, nil
}

// hardSigmoids sets y[i] = max(0, min(1, alpha·x[i] + beta)), the product
// and the sum each rounded to float32 (as ONNX Runtime's); y may be x.
// NaN stays NaN.
func hardSigmoids(y, x []float32, alpha, beta float32) { hardSigmoidsOf(y, x, alpha, beta, false) }

// hardSwishes sets y[i] = x[i]·max(0, min(1, x[i]/6 + 1/2)) (HardSwish),
// x[i]/6 rounded as x[i]·float32(1/6); y may be x.
func hardSwishes(y, x []float32) { hardSigmoidsOf(y, x, 1.0/6, 0.5, true) }

// hardSigmoidsGo is hardSigmoidsOf's loop.
func hardSigmoidsGo(y, x []float32, alpha, beta float32, swish bool) {
	x = x[:len(y)]
	for i, v := range x {
		t := float32(v*alpha) + beta // rounded twice, never fused
		// NaN fails both comparisons and stays.
		if t < 0 {
			t = 0
		} else if t > 1 {
			t = 1
		}
		if swish {
			t *= v
		}
		y[i] = t
	}
}

package cpu

import (
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Logic operators, producing bool: the comparisons Equal, Greater,
// GreaterOrEqual, Less and LessOrEqual and the bool operators And, Or and
// Xor, with numpy broadcasting (broadcast.go), and the unary Not, IsNaN and
// IsInf.

func init() {
	for _, op := range []string{"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"} {
		register(op, lgCompare)
	}
	for _, op := range []string{"And", "Or", "Xor"} {
		register(op, lgLogical)
	}
	register("Not", lgNot)
	register("IsNaN", lgIsNaN)
	register("IsInf", lgIsInf)

	// The types beyond baseTypes that each operator's ONNX schema admits.
	for _, op := range []string{"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"} {
		registerTypes(op, moreNumbers...)
	}
	registerTypes("Equal", inference.String)
	registerTypes("IsNaN", moreFloats...)
	registerTypes("IsInf", moreFloats...)
}

func lgCompare(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	p, err := binaryInputs(n, in)
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if k := numbersOf(a.DType()); k != nil {
		return k.compare(n, p, a, b)
	}
	if n.OpType == "Equal" {
		switch a.DType() {
		case inference.Bool:
			return zip(n, p, dataOf[bool](a), dataOf[bool](b), func(x, y bool) bool { return x == y })
		case inference.String:
			return zip(n, p, dataOf[string](a), dataOf[string](b), func(x, y string) bool { return x == y })
		}
	}
	return nil, wantType(0, a, "a number")
}

func lgCompareOf[T number](n opsem.Node, p *broadcastPlan, a, b inference.Tensor) ([]inference.Tensor, error) {
	return zip(n, p, dataOf[T](a), dataOf[T](b), planFunc(p, lgComparison[T], n.OpType))
}

func lgComparison[T number](op string) func(x, y T) bool {
	switch op {
	case "Equal":
		return func(x, y T) bool { return x == y }
	case "Greater":
		return func(x, y T) bool { return x > y }
	case "GreaterOrEqual":
		return func(x, y T) bool { return x >= y }
	case "Less":
		return func(x, y T) bool { return x < y }
	}
	return func(x, y T) bool { return x <= y }
}

func lgLogical(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	for i, t := range in[:2] {
		if t.DType() != inference.Bool {
			return nil, wantType(i, t, "bool")
		}
	}
	p, err := keptBinary(n, in)
	if err != nil {
		return nil, err
	}
	f := func(x, y bool) bool { return x != y }
	switch n.OpType {
	case "And":
		f = func(x, y bool) bool { return x && y }
	case "Or":
		f = func(x, y bool) bool { return x || y }
	}
	return zip(n, p, dataOf[bool](a), dataOf[bool](b), f)
}

func lgNot(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType() != inference.Bool {
		return nil, wantType(0, in[0], "bool")
	}
	return mapOutput(n, keptShape(n, in, 0), dataOf[bool](in[0]), func(v bool) bool { return !v })
}

func lgIsNaN(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return lgFloatTest(n, in, func(v float64) bool { return v != v })
}

func lgIsInf(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	neg, pos := opsem.IsInfDetect(n)
	return lgFloatTest(n, in, func(v float64) bool {
		return (pos && math.IsInf(v, 1)) || (neg && math.IsInf(v, -1))
	})
}

// lgFloatTest is f of each element of the node's float input, widened to
// float64 (exactly).
func lgFloatTest(n opsem.Node, in []inference.Tensor, f func(float64) bool) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	switch x := in[0]; x.DType() {
	case inference.Float32:
		return mapOutput(n, keptShape(n, in, 0), dataOf[float32](x), func(v float32) bool { return f(float64(v)) })
	case inference.Float64:
		return mapOutput(n, keptShape(n, in, 0), dataOf[float64](x), f)
	}
	return nil, wantType(0, in[0], "float32 or float64")
}

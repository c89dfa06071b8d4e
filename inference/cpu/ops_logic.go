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
}

func lgCompare(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	p, err := binaryInputs(n, in)
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	switch a.DType() {
	case inference.Float32:
		return zip(n, p, dataOf[float32](a), dataOf[float32](b), planFunc(p, lgComparison[float32], n.OpType))
	case inference.Int64:
		return zip(n, p, dataOf[int64](a), dataOf[int64](b), planFunc(p, lgComparison[int64], n.OpType))
	case inference.Int32:
		return zip(n, p, dataOf[int32](a), dataOf[int32](b), planFunc(p, lgComparison[int32], n.OpType))
	case inference.Uint8:
		return zip(n, p, dataOf[uint8](a), dataOf[uint8](b), planFunc(p, lgComparison[uint8], n.OpType))
	case inference.Bool:
		if n.OpType == "Equal" {
			return zip(n, p, dataOf[bool](a), dataOf[bool](b), func(x, y bool) bool { return x == y })
		}
	}
	return nil, wantType(0, a, "a number")
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
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType() != inference.Float32 {
		return nil, wantType(0, in[0], "float32")
	}
	return mapOutput(n, keptShape(n, in, 0), dataOf[float32](in[0]), func(v float32) bool { return v != v })
}

func lgIsInf(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType() != inference.Float32 {
		return nil, wantType(0, in[0], "float32")
	}
	neg, pos := opsem.IsInfDetect(n)
	return mapOutput(n, keptShape(n, in, 0), dataOf[float32](in[0]), func(v float32) bool {
		return (pos && math.IsInf(float64(v), 1)) || (neg && math.IsInf(float64(v), -1))
	})
}

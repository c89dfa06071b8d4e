package opsem

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// castTypeNames maps the type names of Cast-1's string 'to' attribute to
// ONNX TensorProto.DataType numbers, for the element types a Tensor holds.
var castTypeNames = map[string]int64{"FLOAT": 1, "UINT8": 2, "INT8": 3, "UINT16": 4, "INT16": 5, "INT32": 6, "INT64": 7,
	"STRING": 8, "BOOL": 9, "FLOAT16": 10, "DOUBLE": 11, "UINT32": 12, "UINT64": 13, "BFLOAT16": 16}

// CastTarget returns the element type Cast converts to: its attribute to,
// an ONNX TensorProto.DataType number from Cast-6 on, a type's name
// ("FLOAT", "FLOAT16", …) in Cast-1. A node without it is a bad model; a
// type a Tensor does not hold (complex, float8, …) is unsupported.
func CastTarget(n Node) (inference.DType, error) {
	a, ok := n.Attrs["to"]
	if !ok {
		return 0, fmt.Errorf("no 'to' attribute: %w", inference.ErrBadModel)
	}
	code := a.Int
	if a.Type == graph.AttrString {
		c, ok := castTypeNames[strings.ToUpper(a.String)]
		if !ok {
			return 0, n.Unsupported("cast to ONNX type %s", a.String)
		}
		code = c
	}
	to, ok := inference.DTypeFromONNX(code)
	if !ok {
		return 0, n.UnsupportedType("cast to element type", code)
	}
	return to, nil
}

// ClipBounds returns the bounds of Clip-1 to Clip-10, which takes them as
// the attributes min and max. Left out, a bound is ∓inf in Clip-1 and
// ∓FLT_MAX from Clip-6 on. Clip-11 takes its bounds as inputs instead.
func ClipBounds(n Node) (lo, hi float32) {
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	if n.Opset >= 6 {
		lo, hi = -math.MaxFloat32, math.MaxFloat32
	}
	return n.Float("min", lo), n.Float("max", hi)
}

// ActivationAttrs returns the attributes of the unary activations that
// take them, with their defaults: alpha of LeakyRelu (0.01), Elu, Celu,
// ThresholdedRelu and Swish (1); alpha and gamma of Selu
// (1.6732632423543772, 1.0507009873554805, as float32); alpha and beta of
// HardSigmoid (0.2, 0.5); lambd and bias of Shrink (0.5, 0). Both are 0
// for the others.
func ActivationAttrs(n Node) (a, b float64) {
	f := func(name string, def float32) float64 { return float64(n.Float(name, def)) }
	switch n.OpType {
	case "LeakyRelu":
		return f("alpha", 0.01), 0
	case "Elu", "Celu", "ThresholdedRelu", "Swish":
		return f("alpha", 1), 0
	case "Selu":
		return f("alpha", 1.67326319217681884765625), f("gamma", 1.05070102214813232421875)
	case "HardSigmoid":
		return f("alpha", 0.2), f("beta", 0.5)
	case "Shrink":
		return f("lambd", 0.5), f("bias", 0)
	}
	return 0, 0
}

// GeluTanh reports whether Gelu uses the tanh approximation (attribute
// approximate: "none", the default, or "tanh").
func GeluTanh(n Node) (bool, error) {
	switch a := n.Str("approximate", "none"); a {
	case "none":
		return false, nil
	case "tanh":
		return true, nil
	default:
		return false, n.Unsupported("approximate %q", a)
	}
}

// ModFmod reports whether Mod takes the sign of the dividend (attribute
// fmod=1, C's fmod) rather than of the divisor (the default fmod=0,
// Python's %).
func ModFmod(n Node) bool { return n.Int("fmod", 0) != 0 }

// VariadicShape returns the output shape of Sum, Max, Min and Mean of
// inputs of the given shapes: they broadcast together from opset 8, and
// must have equal shapes before.
func VariadicShape(n Node, shapes [][]int) ([]int, error) {
	if n.Opset < 8 {
		for i, s := range shapes[1:] {
			if !slices.Equal(s, shapes[0]) {
				return nil, fmt.Errorf("input %d has shape %v, input 0 has %v (no broadcasting before opset 8): %w", i+1, s, shapes[0], inference.ErrShape)
			}
		}
	}
	return BroadcastShape(shapes...)
}

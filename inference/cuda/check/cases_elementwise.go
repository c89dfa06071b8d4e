package check

import (
	"github.com/beamml/beamml/inference/graph"
)

func init() {
	unary := []struct {
		op     string
		lo, hi float32
		attrs  map[string]graph.Attr
	}{
		{"Relu", -2, 2, nil}, {"Sigmoid", -8, 8, nil}, {"Tanh", -3, 3, nil}, {"Exp", -5, 5, nil},
		{"Log", 0.01, 10, nil}, {"Sqrt", 0, 10, nil}, {"Neg", -2, 2, nil}, {"Abs", -2, 2, nil},
		{"Reciprocal", 0.5, 4, nil}, {"Floor", -5, 5, nil}, {"Ceil", -5, 5, nil}, {"Round", -5, 5, nil},
		{"Sin", -3, 3, nil}, {"Cos", -3, 3, nil}, {"Tan", -1, 1, nil}, {"Asin", -0.9, 0.9, nil},
		{"Acos", -0.9, 0.9, nil}, {"Atan", -3, 3, nil}, {"Sinh", -3, 3, nil}, {"Cosh", -3, 3, nil},
		{"Asinh", -3, 3, nil}, {"Acosh", 1.1, 5, nil}, {"Atanh", -0.9, 0.9, nil}, {"Erf", -3, 3, nil},
		{"Sign", -2, 2, nil}, {"Identity", -2, 2, nil},
		{"LeakyRelu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.1)}},
		{"Elu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.7)}},
		{"Celu", -2, 2, map[string]graph.Attr{"alpha": AFloat(1.5)}},
		{"Selu", -2, 2, nil},
		{"HardSigmoid", -4, 4, map[string]graph.Attr{"alpha": AFloat(0.3), "beta": AFloat(0.4)}},
		{"HardSwish", -4, 4, nil}, {"Softplus", -5, 5, nil}, {"Softsign", -5, 5, nil}, {"Mish", -5, 5, nil},
		{"ThresholdedRelu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.5)}},
		{"Gelu", -3, 3, nil}, {"Gelu", -3, 3, map[string]graph.Attr{"approximate": AStr("tanh")}},
		{"Clip", -3, 3, map[string]graph.Attr{}},
	}
	for i, u := range unary {
		name := "unary/" + u.op
		opset := int64(0)
		if u.op == "Gelu" {
			opset = 20
			if u.attrs != nil {
				name += "-tanh"
			}
		}
		Add(Case{Name: name, Op: u.op, Attrs: u.attrs, Opset: opset,
			Inputs: []Input{{T: Rand(uint64(i), u.lo, u.hi, 3, 5, 7)}}})
	}
	Add(Case{Name: "unary/Clip-bounds", Op: "Clip", Inputs: []Input{
		{T: Rand(100, -3, 3, 4, 33)}, {T: Floats([]int{}, -1), Const: true}, {T: Floats([]int{}, 0.5), Const: true}}})
	Add(Case{Name: "unary/Clip-min-only", Op: "Clip", Inputs: []Input{
		{T: Rand(101, -3, 3, 4, 33)}, {T: Floats([]int{}, -1), Const: true}}})
	Add(Case{Name: "unary/Identity-int64", Op: "Identity", Inputs: []Input{{T: Ints([]int{3}, 1, -2, 3)}}})
	Add(Case{Name: "unary/large", Op: "Relu", Inputs: []Input{{T: Rand(102, -1, 1, 70000)}}})

	for i, op := range []string{"Add", "Sub", "Mul", "Div", "Pow", "PRelu"} {
		lo, hi := float32(-2), float32(2)
		if op == "Pow" {
			lo = 0.1
		}
		s := uint64(200 + 10*i)
		cs := []Case{
			Case{Name: "binary/" + op + "/same", Op: op, Inputs: []Input{{T: Rand(s, lo, hi, 2, 3, 4)}, {T: Rand(s+1, 0.5, 2, 2, 3, 4)}}},
			Case{Name: "binary/" + op + "/row", Op: op, Inputs: []Input{{T: Rand(s+2, lo, hi, 2, 3, 4)}, {T: Rand(s+3, 0.5, 2, 4)}}},
			Case{Name: "binary/" + op + "/column", Op: op, Inputs: []Input{{T: Rand(s+4, lo, hi, 2, 3, 4)}, {T: Rand(s+5, 0.5, 2, 3, 1)}}},
			Case{Name: "binary/" + op + "/both", Op: op, Inputs: []Input{{T: Rand(s+6, lo, hi, 2, 1, 4)}, {T: Rand(s+7, 0.5, 2, 3, 1)}}},
			Case{Name: "binary/" + op + "/const", Op: op, Inputs: []Input{{T: Rand(s+8, lo, hi, 1, 2, 1, 3, 1, 2)}, {T: Rand(s+9, 0.5, 2, 2, 1), Const: true}}},
		}
		if op == "PRelu" { // the slope broadcasts to the input, not both ways
			cs = cs[:3]
		}
		Add(cs...)
	}
}

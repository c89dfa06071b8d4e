package passes_test

import (
	"testing"

	"github.com/beamml/beamml/inference/graph/passes"
)

// hardSwish writes hard-swish on x [4, 16] (values in [-2, 2), scaled by
// 4 so that both bends, at −3 and 3, are crossed) in one of the forms
// exporters write:
//
//	"hardsigmoid":  x · HardSigmoid(x, 1/6, 0.5) (PyTorch before opset 14)
//	"sigmoid·x":    the same with the product's operands swapped
//	"clip/6·x":     x · (Clip(x + 3, 0, 6) / 6)
//	"(x·clip)/6":   (x · Clip(3 + x, 0, 6)) / 6
//	"x·(clip·⅙)":   x · (Clip(x + 3, 0, 6) · 1/6)
//	"(clip·x)·⅙":   (Clip(x + 3, 0, 6) · x) · 1/6
//
// at opset, whose Clip takes its bounds as attributes before 11.
// alpha, three and six replace the constants for the near misses.
type hardSwish struct {
	form              string
	opset             int64
	alpha, three, six float32
	edit              func(m *model, v map[string]string)
}

func (h hardSwish) build() *model {
	m := newModel(h.opset)
	x := m.op("Mul", nil, m.input("x", 4, 16), m.scalar("four", 4))
	alpha, three, six := h.alpha, h.three, h.six
	if alpha == 0 {
		alpha, three, six = 1.0/6, 3, 6
	}
	v := map[string]string{}
	clip := func(sum string) string {
		if h.opset < 11 {
			v["clip"] = m.op("Clip", attrs("min", aFloat(0), "max", aFloat(6)), sum)
		} else {
			v["clip"] = m.op("Clip", nil, sum, m.scalar("lo", 0), m.scalar("hi", 6))
		}
		return v["clip"]
	}
	var y string
	switch h.form {
	case "hardsigmoid", "sigmoid·x":
		s := m.op("HardSigmoid", attrs("alpha", aFloat(alpha), "beta", aFloat(0.5)), x)
		v["clip"] = s
		if h.form == "hardsigmoid" {
			y = m.op("Mul", nil, x, s)
		} else {
			y = m.op("Mul", nil, s, x)
		}
	case "clip/6·x":
		y = m.op("Mul", nil, x, m.op("Div", nil, clip(m.op("Add", nil, x, m.scalar("three", three))), m.scalar("six", six)))
	case "(x·clip)/6":
		y = m.op("Div", nil, m.op("Mul", nil, x, clip(m.op("Add", nil, m.scalar("three", three), x))), m.scalar("six", six))
	case "x·(clip·⅙)":
		y = m.op("Mul", nil, x, m.op("Mul", nil, clip(m.op("Add", nil, x, m.scalar("three", three))), m.scalar("sixth", 1/six)))
	case "(clip·x)·⅙":
		y = m.op("Mul", nil, m.op("Mul", nil, clip(m.op("Add", nil, x, m.scalar("three", three))), x), m.scalar("sixth", 1/six))
	}
	v["y"] = y
	if h.edit != nil {
		h.edit(m, v)
	}
	if len(m.g.Outputs) == 0 {
		m.output(y)
	}
	return m
}

func TestRecognizeHardSwish(t *testing.T) {
	for _, h := range []hardSwish{
		{form: "hardsigmoid", opset: 13},
		{form: "sigmoid·x", opset: 13},
		{form: "clip/6·x", opset: 13},
		{form: "(x·clip)/6", opset: 11},
		{form: "x·(clip·⅙)", opset: 17},
		{form: "(clip·x)·⅙", opset: 9},
	} {
		t.Run(h.form, func(t *testing.T) {
			rewrite(t, h.build, passes.RecognizeHardSwish(), "Mul HardSwish", rtol, atol)
		})
	}
}

func TestRecognizeHardSwishLeavesAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    hardSwish
	}{
		{"Keras's hard sigmoid (alpha 0.2)", hardSwish{form: "hardsigmoid", opset: 13, alpha: 0.2, three: 3, six: 6}},
		{"x + 2", hardSwish{form: "clip/6·x", opset: 13, alpha: 1.0 / 6, three: 2, six: 6}},
		{"divided by 5", hardSwish{form: "(x·clip)/6", opset: 13, alpha: 1.0 / 6, three: 3, six: 5}},
		{"the HardSigmoid read twice", hardSwish{form: "hardsigmoid", opset: 13,
			edit: func(m *model, v map[string]string) { m.output(v["y"], v["clip"]) }}},
		{"the Clip a graph output", hardSwish{form: "clip/6·x", opset: 13,
			edit: func(m *model, v map[string]string) { m.output(v["y"], v["clip"]) }}},
		{"the product of another value", hardSwish{form: "hardsigmoid", opset: 13,
			edit: func(m *model, v map[string]string) {
				mul := m.g.Nodes[len(m.g.Nodes)-1]
				mul.Inputs[0] = m.input("z", 4, 16)
			}}},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.h.build, passes.RecognizeHardSwish()) })
	}
}

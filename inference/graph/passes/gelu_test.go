package passes_test

import (
	"math"
	"testing"

	"github.com/beamml/beamml/inference/graph/passes"
)

// geluErf writes x·0.5·(1 + Erf(x/√2)) on x [4, 16]: divide (or multiply
// by 1/√2) with the constant c, and multiply the three factors in order.
func geluErf(divide bool, c float32, order string, edit func(m *model, u string)) func() *model {
	return func() *model {
		m := newModel(13)
		x := m.input("x", 4, 16)
		var a string
		if divide {
			a = m.op("Div", nil, x, m.scalar("c", c))
		} else {
			a = m.op("Mul", nil, m.scalar("c", c), x)
		}
		u := m.op("Add", nil, m.op("Erf", nil, a), m.scalar("one", 1))
		y := geluProduct(m, x, u, order)
		if edit != nil {
			edit(m, u)
		}
		m.output(y)
		return m
	}
}

// geluProduct multiplies x, u and 0.5 in the order given: "(x·u)·h",
// "(u·h)·x" or "u·(x·h)".
func geluProduct(m *model, x, u, order string) string {
	half := m.scalar("half", 0.5)
	switch order {
	case "(x·u)·h":
		return m.op("Mul", nil, m.op("Mul", nil, x, u), half)
	case "(u·h)·x":
		return m.op("Mul", nil, x, m.op("Mul", nil, u, half))
	default:
		return m.op("Mul", nil, u, m.op("Mul", nil, half, x))
	}
}

// geluTanh writes 0.5·x·(1 + Tanh(√(2/π)·(x + 0.044715·x³))) with
// 0.044715·x³ as 0.044715·Pow(x, 3), 0.044715·((x·x)·x), or as GPT-2's
// Python writes it, ((0.044715·x)·x)·x.
func geluTanh(cube string, k float32) func() *model {
	return func() *model {
		m := newModel(13)
		x := m.input("x", 4, 16)
		var term string
		switch c := m.scalar("k3", 0.044715); cube {
		case "pow":
			term = m.op("Mul", nil, c, m.op("Pow", nil, x, m.scalar("three", 3)))
		case "c·x·x": // not a GELU
			term = m.op("Mul", nil, m.op("Mul", nil, c, x), x)
		case "x·x·x":
			term = m.op("Mul", nil, c, m.op("Mul", nil, m.op("Mul", nil, x, x), x))
		default:
			term = m.op("Mul", nil, m.op("Mul", nil, m.op("Mul", nil, c, x), x), x)
		}
		inner := m.op("Add", nil, x, term)
		t := m.op("Tanh", nil, m.op("Mul", nil, inner, m.scalar("k", k)))
		u := m.op("Add", nil, m.scalar("one", 1), t)
		m.output(geluProduct(m, x, u, "(x·u)·h"))
		return m
	}
}

// Gelu computes in float64 and rounds once; the decomposed forms round
// each step to float32. On inputs in [-2, 2) they agree within the
// package's tolerance.
func TestRecognizeGelu(t *testing.T) {
	sqrt2 := float32(math.Sqrt2)
	for _, tc := range []struct {
		name  string
		build func() *model
		tanh  bool
	}{
		{"erf, Div, (x·u)·0.5", geluErf(true, sqrt2, "(x·u)·h", nil), false},
		{"erf, Div by 1.4142135, (u·0.5)·x", geluErf(true, 1.4142135, "(u·h)·x", nil), false},
		{"erf, Mul by 1/√2, u·(0.5·x)", geluErf(false, 0.70710678, "u·(x·h)", nil), false},
		{"tanh, Pow", geluTanh("pow", float32(math.Sqrt(2/math.Pi))), true},
		{"tanh, Mul(Mul(x, x), x), 0.7978846", geluTanh("x·x·x", 0.7978846), true},
		{"tanh, ((c·x)·x)·x", geluTanh("c·x·x·x", float32(math.Sqrt(2/math.Pi))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rewrite(t, tc.build, passes.RecognizeGelu(), "Gelu", rtol, atol)
			n := g.Nodes[0]
			if got := n.Str("approximate", "none"); got != map[bool]string{false: "none", true: "tanh"}[tc.tanh] {
				t.Errorf("approximate %q", got)
			}
			if len(n.Inputs) != 1 || n.Inputs[0] != "x" {
				t.Errorf("Gelu reads %q, want x", n.Inputs)
			}
		})
	}
}

func TestRecognizeGeluLeavesAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"divisor 1.5", geluErf(true, 1.5, "(x·u)·h", nil)},
		{"tanh constant 0.79", geluTanh("pow", 0.79)},
		{"x² rather than x³", geluTanh("c·x·x", 0.7978846)},
		{"1 + Erf read again", geluErf(true, float32(math.Sqrt2), "(x·u)·h", func(m *model, u string) { m.output(u) })},
		{"overridable divisor", geluErf(true, float32(math.Sqrt2), "(x·u)·h", func(m *model, u string) { m.overridable("c") })},
		{"1 + Erf is 2 + Erf", geluErf(true, float32(math.Sqrt2), "(x·u)·h", func(m *model, u string) { m.g.Initializers["one"] = tensor([]int{}, []float32{2}) })},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.RecognizeGelu()) })
	}
}

package passes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// layerNorm describes a decomposed layer normalisation to build.
type layerNorm struct {
	opset       int64
	axes        []int64
	mulSquare   bool // Mul(d, d) rather than Pow(d, 2)
	scale, bias bool
	keepdims    int64
	epsReversed bool // Add(eps, v)
	// rsqrt writes d · Reciprocal(Sqrt(…)) (TensorFlow's rsqrt) instead of
	// d / Sqrt(…), the product's operands swapped; "no reciprocal" writes
	// d · Sqrt(…), a near miss.
	rsqrt string
}

// build writes the decomposition over x [8, 8, 8] and returns the model.
// (A square input lets a ReduceMean that drops its axis still broadcast.)
func (ln layerNorm) build(edit func(m *model, names map[string]string)) func() *model {
	return func() *model {
		m := newModel(ln.opset)
		x := m.input("x", 8, 8, 8)
		mean := func(v string) string {
			a := map[string]graph.Attr{}
			if ln.keepdims != 1 {
				a["keepdims"] = aInt(ln.keepdims)
			}
			if ln.opset >= 18 {
				return m.op("ReduceMean", a, v, m.ints("axes", ln.axes...))
			}
			a["axes"] = aInts(ln.axes...)
			return m.op("ReduceMean", a, v)
		}
		mu := mean(x)
		d := m.op("Sub", nil, x, mu)
		var sq string
		if ln.mulSquare {
			sq = m.op("Mul", nil, d, d)
		} else {
			sq = m.op("Pow", nil, d, m.scalar("two", 2))
		}
		v := mean(sq)
		eps := m.scalar("eps", 1e-5)
		sum := eps
		if ln.epsReversed {
			sum = m.op("Add", nil, eps, v)
		} else {
			sum = m.op("Add", nil, v, eps)
		}
		var y string
		switch ln.rsqrt {
		case "":
			y = m.op("Div", nil, d, m.op("Sqrt", nil, sum))
		case "rsqrt":
			y = m.op("Mul", nil, m.op("Reciprocal", nil, m.op("Sqrt", nil, sum)), d)
		case "no reciprocal":
			y = m.op("Mul", nil, d, m.op("Sqrt", nil, sum))
		}
		names := map[string]string{"mean": mu, "d": d, "sq": sq, "v": v, "eps": eps, "y": y}
		blockShape := []int{8}
		if len(ln.axes) == 2 {
			blockShape = []int{8, 8}
		}
		if ln.scale {
			names["scale"] = m.constant("gamma", blockShape)
			y = m.op("Mul", nil, names["scale"], y)
		}
		if ln.bias {
			names["bias"] = m.constant("beta", blockShape)
			y = m.op("Add", nil, y, names["bias"])
		}
		names["out"] = y
		if edit != nil {
			edit(m, names)
		}
		if len(m.g.Outputs) == 0 {
			m.output(y)
		}
		return m
	}
}

// The recognised LayerNormalization keeps its statistics in float64 and
// rounds once; the decomposition rounds at each of its nine steps. Its
// outputs are about ±2: the package's tolerance holds.
func TestRecognizeLayerNorm(t *testing.T) {
	for _, tc := range []struct {
		name string
		ln   layerNorm
		axis int64
	}{
		{"opset 13, axes attribute, scale and bias", layerNorm{opset: 13, axes: []int64{-1}, scale: true, bias: true, keepdims: 1}, -1},
		{"opset 18, axes input, Mul square", layerNorm{opset: 18, axes: []int64{-1}, mulSquare: true, scale: true, bias: true, keepdims: 1}, -1},
		{"no scale, no bias", layerNorm{opset: 14, axes: []int64{-1}, keepdims: 1, epsReversed: true}, -1},
		{"scale only, two axes", layerNorm{opset: 14, axes: []int64{-2, -1}, scale: true, keepdims: 1}, -2},
		// Axes counted from the front, as TensorFlow's exports write them:
		// x is declared [8 8 8].
		{"positive axes, rank declared", layerNorm{opset: 13, axes: []int64{2}, scale: true, bias: true, keepdims: 1}, -1},
		{"positive axes, two", layerNorm{opset: 18, axes: []int64{1, 2}, keepdims: 1}, -2},
		{"Reciprocal(Sqrt) times d", layerNorm{opset: 13, axes: []int64{-1}, scale: true, bias: true, keepdims: 1, rsqrt: "rsqrt"}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rewrite(t, tc.ln.build(nil), passes.RecognizeLayerNorm(), "LayerNormalization", rtol, atol)
			n := g.Nodes[0]
			if n.Int("axis", 0) != tc.axis || n.Float("epsilon", 0) != 1e-5 {
				t.Errorf("axis %d, epsilon %g; want %d, 1e-5", n.Int("axis", 0), n.Float("epsilon", 0), tc.axis)
			}
			if n.Name != "n1/LayerNormalization" {
				t.Errorf("node named %q, want n1/LayerNormalization, after the first node replaced", n.Name)
			}
			if want := map[bool]int{false: 2, true: 3}[tc.ln.bias]; len(n.Inputs) != want {
				t.Errorf("inputs %q, want %d", n.Inputs, want)
			}
		})
	}
}

func TestRecognizeLayerNormLeavesAlone(t *testing.T) {
	base := layerNorm{opset: 13, axes: []int64{-1}, scale: true, bias: true, keepdims: 1}
	positive, keep0, notReciprocal, notTail := base, base, base, base
	positive.axes = []int64{2}
	keep0.keepdims = 0
	notReciprocal.rsqrt = "no reciprocal"
	notTail.axes = []int64{1} // of three: not the last
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"positive axes (rank unknown)", positive.build(func(m *model, v map[string]string) { m.g.Inputs[0].Shape = nil })},
		{"positive axes, not the last", notTail.build(nil)},
		{"d · Sqrt(…)", notReciprocal.build(nil)},
		{"keepdims 0", keep0.build(nil)},
		{"centred value read again", base.build(func(m *model, v map[string]string) { m.output(v["out"], v["d"]) })},
		{"variance is a graph output", base.build(func(m *model, v map[string]string) { m.output(v["out"], v["v"]) })},
		{"overridable epsilon", base.build(func(m *model, v map[string]string) { m.overridable(v["eps"]) })},
		{"square of another value", base.build(func(m *model, v map[string]string) {
			m.g.Nodes[2].Inputs[0] = "x" // Pow(x, 2): not the centred value
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unchanged(t, tc.build, passes.RecognizeLayerNorm())
		})
	}
	// A variance over other axes than the mean's is not a layer norm.
	unchanged(t, base.build(func(m *model, v map[string]string) {
		for _, n := range m.g.Nodes {
			if n.Outputs[0] == v["v"] {
				n.Attrs["axes"] = aInts(-2, -1)
			}
		}
	}), passes.RecognizeLayerNorm())
}

// A scale a feed may override is no constant: the Mul stays after the
// recognised normalisation, which takes a scale of 1; a bias after it is
// then not folded either.
func TestRecognizeLayerNormOverridableScale(t *testing.T) {
	ln := layerNorm{opset: 13, axes: []int64{-1}, scale: true, bias: true, keepdims: 1}
	rewrite(t, ln.build(func(m *model, v map[string]string) { m.overridable(v["scale"]) }),
		passes.RecognizeLayerNorm(), "LayerNormalization Mul Add", rtol, atol)
}

// The recognised node is named after the first node it replaces, and a
// failure names it.
func TestRecognizeLayerNormErrorNamesNode(t *testing.T) {
	ln := layerNorm{opset: 13, axes: []int64{-1}, scale: true, keepdims: 1}
	m := ln.build(func(m *model, v map[string]string) { m.constant(v["scale"], []int{5}) })()
	g := m.sorted(t)
	if err := passes.Optimize(g, passes.RecognizeLayerNorm()); err != nil {
		t.Fatal(err)
	}
	_, err := cpu.NewModel(g).Run(context.Background(), m.feeds)
	if err == nil || !strings.Contains(err.Error(), `"n1/LayerNormalization" (LayerNormalization)`) {
		t.Errorf("a scale of 5 values for blocks of 8: error %v, want one naming the LayerNormalization", err)
	}
}

package passes_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// notSin converts every node but Sin's: a backend without a float16 Sin.
var notSin = passes.StoreInFloat16(func(n *graph.Node) bool { return n.OpType != "Sin" })

// StoreInFloat16 makes float16 what the converted nodes read and write: a
// weight only they read in place, one that a float32 node also reads as a
// copy, the graph's input through a Cast; a value a float32 node or the
// graph's outputs read is cast back under its name. The outputs keep their
// names and types, and the graph computes its float32 values within
// float16's rounding: each value off by up to 2^-11 of itself, and the
// errors of a sum of three products and a bias add up (rtol and atol
// 1e-2).
func TestStoreInFloat16(t *testing.T) {
	build := func() *model {
		m := newModel(17)
		x := m.input("x", 2, 3)
		w := m.constant("w", []int{3, 4}, m.randoms(12)...)
		b := m.constant("b", []int{4}, m.randoms(4)...)
		y := m.op("Add", nil, m.op("MatMul", nil, x, w), b)
		m.output(m.op("Sin", nil, y), m.op("Relu", nil, y), m.op("Sin", nil, b))
		return m
	}
	g := rewrite(t, build, notSin, "Sin Cast MatMul Add Relu Cast Sin Cast", 1e-2, 1e-2)
	for name, want := range map[string]inference.DType{"w": inference.Float16, "b": inference.Float32, "b_float16": inference.Float16} {
		if got := g.Initializers[name].DType(); got != want {
			t.Errorf("initializer %s is %v, want %v", name, got, want)
		}
	}
	reads := map[string][]string{}
	for _, n := range g.Nodes {
		reads[n.OpType] = append(reads[n.OpType], n.Inputs...)
	}
	for op, want := range map[string][]string{"MatMul": {"x_float16", "w"}, "Add": {"v1", "b_float16"}, "Relu": {"v2_float16"}, "Sin": {"b", "v2"}} {
		if got := reads[op]; !slices.Equal(got, want) {
			t.Errorf("%s reads %q, want %q", op, got, want)
		}
	}
	for _, o := range g.Outputs {
		if n := producer(g, o.Name); n == nil || o.Name == "v4" && n.OpType != "Cast" {
			t.Errorf("output %s made by %v, want its own name, Relu's through a Cast", o.Name, n)
		}
	}
}

// A node whose outputs would not all become float16 stays float32:
// LayerNormalization's Mean is float32 whatever X is; a Cast's output is
// its target. A graph with nothing to convert is left alone.
func TestStoreInFloat16Keeps(t *testing.T) {
	rewrite(t, func() *model {
		m := newModel(17)
		x := m.input("x", 2, 4)
		outs := m.opN("LayerNormalization", nil, 2, x, m.constant("s", []int{4}, m.randoms(4)...), m.constant("c", []int{4}, m.randoms(4)...))
		m.output(outs[0], outs[1], m.op("Cast", attrs("to", aInt(7)), x))
		return m
	}, notSin, "LayerNormalization Cast", rtol, atol)
	unchanged(t, func() *model {
		m := newModel(17)
		m.output(m.op("Sin", nil, m.input("x", 3)))
		return m
	}, notSin)
}

func producer(g *graph.Graph, value string) *graph.Node {
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == value {
				return n
			}
		}
	}
	return nil
}

// A Shape reads a converted node's float16 output itself, with no Cast
// back to float32 for it; a Cast to float32 from an integer type that
// converted nodes alone read casts to float16 instead, and one that a
// float32 node (Sin) also reads stays, with a Cast to float16 for the
// converted reader.
func TestStoreInFloat16ShapesAndIntegerCasts(t *testing.T) {
	g := rewrite(t, func() *model {
		m := newModel(17)
		y := m.op("Relu", nil, m.input("x", 2, 3))
		k := m.op("Cast", attrs("to", aInt(1)), m.ints("k", 1, 2, 3))
		j := m.op("Cast", attrs("to", aInt(1)), m.ints("j", 4, 5, 6))
		m.output(m.op("Shape", nil, y), m.op("Add", nil, y, k), m.op("Sin", nil, j), m.op("Mul", nil, y, j))
		return m
	}, notSin, "Cast Cast Sin Cast Relu Shape Add Cast Cast Mul Cast", 1e-2, 1e-2)
	to := map[string]int64{}
	for _, n := range g.Nodes {
		if n.OpType == "Cast" {
			to[n.Inputs[0]] = n.Attrs["to"].Int
		}
	}
	if want := map[string]int64{"x": 10, "k": 10, "j": 1, "v3": 10, "v5_float16": 1, "v7_float16": 1}; !maps.Equal(to, want) {
		t.Errorf("Casts by input to type %v, want %v", to, want)
	}
	if n := producer(g, "v4"); n == nil || !slices.Equal(n.Inputs, []string{"v1"}) {
		t.Errorf("Shape is %v, want it reading Relu's float16 v1", n)
	}
}

// Hugging Face's attention mask, (1 − mask)·finfo(float32).min added to
// the scores: its constant held at −65504 in float16, not −Inf, whose
// product with the 0 of an unmasked key is NaN. Every output stays finite
// and within float16's rounding of the float32 graph's (rtol and atol
// 1e-2; a masked key's weight is 0 either way).
func TestStoreInFloat16HoldsConstantsInRange(t *testing.T) {
	build := func() *model {
		m := newModel(17)
		scores := m.input("scores", 2, 4)
		mask := m.input("mask", 2, 4)
		m.feeds[mask] = tensor([]int{2, 4}, []float32{1, 1, 0, 1, 1, 0, 0, 1})
		one := m.constant("one", []int{}, 1)
		lowest := m.constant("lowest", []int{}, -math.MaxFloat32)
		m.output(m.op("Softmax", nil, m.op("Add", nil, scores, m.op("Mul", nil, m.op("Sub", nil, one, mask), lowest))))
		return m
	}
	g := rewrite(t, build, passes.StoreInFloat16(func(*graph.Node) bool { return true }), "Cast Sub Mul Cast Add Softmax Cast", 1e-2, 1e-2)
	if low, _ := inference.Data[inference.Half](g.Initializers["lowest"]); len(low) != 1 || low[0].Float32() != -65504 {
		t.Errorf("float32's lowest value in float16: %v, want -65504", low)
	}
	out, err := cpu.NewModel(g).Run(context.Background(), build().feeds)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := inference.Data[float32](out[g.Outputs[0].Name])
	for _, v := range y {
		if math.IsNaN(float64(v)) {
			t.Fatalf("output %v holds NaN", out[g.Outputs[0].Name])
		}
	}
}

package graph_test

import (
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// PlanMemoryViews places a view's output at its input's bytes (views of
// views too, and views of graph inputs), keeps the shared block live to
// the last use of any of them, and gives a view that is a graph output
// bytes of its own.
func TestPlanMemoryViews(t *testing.T) {
	node := func(op, in, out string) *graph.Node {
		return &graph.Node{Name: out, OpType: op, Inputs: []string{in}, Outputs: []string{out}}
	}
	g := &graph.Graph{
		Name:    "views",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32}},
		Outputs: []graph.Value{{Name: "y", DType: inference.Float32}, {Name: "out", DType: inference.Float32}},
		Nodes: []*graph.Node{
			node("Flatten", "x", "xv"),  // a view of the graph input
			node("Relu", "xv", "a"),     // a
			node("Reshape", "a", "b"),   // b is a's bytes
			node("Unsqueeze", "b", "c"), // c too: a view of a view
			node("Relu", "c", "d"),      // d must not take a's bytes: e reads them later
			node("Relu", "d", "e0"),
			{Name: "e", OpType: "Add", Inputs: []string{"e0", "c"}, Outputs: []string{"e"}}, // the last read of a's block
			node("Relu", "e", "f"), // may reuse a's bytes
			node("Identity", "f", "y"),
			node("Squeeze", "f", "out"), // a graph output: bytes of its own
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	shapes := map[string]graph.Shape{}
	for _, v := range []string{"x", "xv", "a", "b", "c", "d", "e0", "e", "f", "y", "out"} {
		shapes[v] = graph.Shape{DType: inference.Float32, Dims: []graph.Dim{{Scale: 1}, {Offset: 64}}}
	}
	p := graph.PlanMemoryViews(g, shapes, 4)
	for y, x := range map[string]string{"xv": "x", "b": "a", "c": "a"} {
		if p.Aliases[y] != x {
			t.Errorf("%s aliases %q, want %q", y, p.Aliases[y], x)
		}
	}
	for _, y := range []string{"y", "out", "a", "d"} {
		if x, ok := p.Aliases[y]; ok {
			t.Errorf("%s aliases %s", y, x)
		}
	}
	if _, ok := p.Offsets["xv"]; ok {
		t.Errorf("xv, a view of the graph input, has an arena offset")
	}
	if p.Offsets["b"] != p.Offsets["a"] || p.Offsets["c"] != p.Offsets["a"] {
		t.Errorf("a at %d, b at %d, c at %d: want one place", p.Offsets["a"], p.Offsets["b"], p.Offsets["c"])
	}
	for _, v := range []string{"d", "e0", "e"} { // live while c is
		if p.Offsets[v] == p.Offsets["a"] {
			t.Errorf("%s takes a's bytes while c, a view of a, is still to be read", v)
		}
	}
	if p.Offsets["f"] != p.Offsets["a"] {
		t.Errorf("f at %d: a's block (at %d), free after e, was not reused", p.Offsets["f"], p.Offsets["a"])
	}

	plain := graph.PlanMemory(g, shapes, 4)
	if len(plain.Aliases) != 0 || plain.Offsets["b"] == plain.Offsets["a"] {
		t.Errorf("PlanMemory aliased views: %v", plain.Aliases)
	}
}

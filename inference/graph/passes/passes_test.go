package passes_test

import (
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/internal/limit"
)

func node(name, op string, in []string, out ...string) *graph.Node {
	return &graph.Node{Name: name, OpType: op, Inputs: in, Outputs: out}
}

func names(ns []*graph.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, " ")
}

// A node whose inputs are all constants becomes an initializer; the
// initializer only it read goes; the graph is sorted again.
func TestFoldConstants(t *testing.T) {
	one, _ := inference.New([]int{1}, []float32{1})
	g := &graph.Graph{
		Inputs:       []graph.Value{{Name: "x"}},
		Outputs:      []graph.Value{{Name: "y"}},
		Initializers: map[string]inference.Tensor{"w": one},
		Nodes: []*graph.Node{
			node("k", "Neg", []string{"w"}, "nw"),      // constant: folded
			node("m", "Add", []string{"x", "nw"}, "y"), // reads the input: kept
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	err := passes.Optimize(g, passes.FoldConstants(func(_ *limit.Run, n *graph.Node, opset int64, in []inference.Tensor) ([]inference.Tensor, error) {
		v, _ := inference.Data[float32](in[0])
		neg, _ := inference.New([]int{1}, []float32{-v[0]})
		return []inference.Tensor{neg}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if names(g.Nodes) != "m" {
		t.Errorf("nodes %q, want only m", names(g.Nodes))
	}
	v, _ := inference.Data[float32](g.Initializers["nw"])
	if len(v) != 1 || v[0] != -1 {
		t.Errorf("folded nw = %v, want [-1]", v)
	}
	if _, ok := g.Initializers["w"]; ok {
		t.Error("w is still an initializer after its only reader was folded")
	}
}

// Optimize sorts the graph after a pass that changed it, and names the
// pass in its errors.
func TestOptimizeSortsAndNamesPass(t *testing.T) {
	g := &graph.Graph{
		Name:         "g",
		Inputs:       []graph.Value{{Name: "x"}},
		Outputs:      []graph.Value{{Name: "z"}},
		Initializers: map[string]inference.Tensor{},
		Nodes:        []*graph.Node{node("a", "Relu", []string{"x"}, "y"), node("b", "Relu", []string{"y"}, "z")},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	reverse := passes.Pass{Name: "Reverse", Run: func(g *graph.Graph) (bool, error) {
		g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0]
		return true, nil
	}}
	if err := passes.Optimize(g, reverse); err != nil {
		t.Fatal(err)
	}
	if names(g.Nodes) != "a b" || g.LastUse["y"] != 1 {
		t.Errorf("after a pass that reordered the nodes: %q, LastUse %v; want a b sorted again", names(g.Nodes), g.LastUse)
	}
	failing := passes.Pass{Name: "Failing", Run: func(*graph.Graph) (bool, error) { return false, inference.ErrBadModel }}
	if err := passes.Optimize(g, failing); err == nil || !strings.Contains(err.Error(), "pass Failing") {
		t.Errorf("Optimize with a failing pass = %v, want an error naming the pass", err)
	}
}

// A Clip bound that a feed may override (an initializer named like a graph
// input) is not a constant: the Clip is not fused into the Conv.
func TestFuseKeepsOverridableClipBounds(t *testing.T) {
	bound, _ := inference.New([]int{}, []float32{6})
	fused := func(overridable bool) bool {
		conv := node("conv", "Conv", []string{"x", "w"}, "c")
		conv.Attrs = map[string]graph.Attr{}
		g := &graph.Graph{
			Name:         "g",
			Opsets:       map[string]int64{"": 13},
			Inputs:       []graph.Value{{Name: "x"}, {Name: "w"}},
			Outputs:      []graph.Value{{Name: "y"}},
			Initializers: map[string]inference.Tensor{"hi": bound},
			Nodes:        []*graph.Node{conv, node("clip", "Clip", []string{"c", "", "hi"}, "y")},
		}
		if overridable {
			g.Overridable = []graph.Value{{Name: "hi"}}
		}
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		if err := passes.Optimize(g, passes.FuseEpilogues(passes.Epilogues{Ops: []string{"Conv"}, Activations: []string{"Relu", "Clip"}})); err != nil {
			t.Fatal(err)
		}
		return names(g.Nodes) == "conv"
	}
	if !fused(false) {
		t.Fatal("a Clip with constant bounds was not fused")
	}
	if fused(true) {
		t.Error("a Clip whose bound a feed may override was fused")
	}
}

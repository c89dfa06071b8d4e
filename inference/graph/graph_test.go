package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
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

// Sort orders by dependencies and otherwise keeps the file's order, and
// records each value's last reader.
func TestSortOrdersAndRecordsLastUse(t *testing.T) {
	g := &graph.Graph{
		Inputs:  []graph.Value{{Name: "x"}},
		Outputs: []graph.Value{{Name: "y"}},
		Nodes: []*graph.Node{
			node("c", "Add", []string{"a", "b"}, "y"),
			node("a", "Relu", []string{"x"}, "a"),
			node("b", "Neg", []string{"x"}, "b"),
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if got := names(g.Nodes); got != "a b c" {
		t.Errorf("order %q, want \"a b c\"", got)
	}
	if g.LastUse["a"] != 2 || g.LastUse["b"] != 2 || g.LastUse["x"] != 1 {
		t.Errorf("LastUse %v, want a and b at 2, x at 1", g.LastUse)
	}
	if _, ok := g.LastUse["y"]; ok {
		t.Error("graph output y has a last use; outputs live to the end")
	}
}

func TestSortRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes []*graph.Node
		want  string
	}{
		"cycle":     {[]*graph.Node{node("p", "Relu", []string{"q"}, "p"), node("q", "Neg", []string{"p"}, "q")}, "cycle"},
		"dangling":  {[]*graph.Node{node("p", "Relu", []string{"nowhere"}, "y")}, `reads "nowhere"`},
		"duplicate": {[]*graph.Node{node("p", "Relu", []string{"x"}, "y"), node("q", "Neg", []string{"x"}, "y")}, "produced by node"},
	} {
		g := &graph.Graph{Name: name, Inputs: []graph.Value{{Name: "x"}}, Nodes: tc.nodes}
		err := g.Sort(nil)
		if !errors.Is(err, inference.ErrBadModel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrBadModel mentioning %q", name, err, tc.want)
		}
	}
}

// A subgraph's free values count as reads by the node that holds it.
func TestSubgraphFreeValues(t *testing.T) {
	body := &graph.Graph{Outputs: []graph.Value{{Name: "o"}}, Nodes: []*graph.Node{node("inner", "Add", []string{"w", "outer"}, "o")},
		Initializers: map[string]inference.Tensor{"w": {}}}
	g := &graph.Graph{
		Inputs:  []graph.Value{{Name: "cond"}, {Name: "outer"}},
		Outputs: []graph.Value{{Name: "y"}},
		Nodes: []*graph.Node{{Name: "if", OpType: "If", Inputs: []string{"cond"}, Outputs: []string{"y"},
			Attrs: map[string]graph.Attr{"then_branch": {Type: graph.AttrGraph, Graph: body}}}},
	}
	if free := body.FreeValues(); len(free) != 1 || !free["outer"] {
		t.Errorf("FreeValues = %v, want outer", free)
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if g.LastUse["outer"] != 0 {
		t.Errorf("outer's last use %d, want 0 (read inside the If)", g.LastUse["outer"])
	}
}

func TestDimString(t *testing.T) {
	for d, want := range map[graph.Dim]string{{Offset: 3}: "3", {Scale: 1}: "b", {Scale: 2}: "2·b", {Scale: 1, Offset: -1}: "b-1", {Scale: 3, Offset: 2}: "3·b+2"} {
		if got := d.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", d, got, want)
		}
	}
}

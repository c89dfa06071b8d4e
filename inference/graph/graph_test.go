package graph_test

import (
	"errors"
	"maps"
	"strconv"
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

// wide returns a graph of n Relu nodes that each read the input x: none
// depends on another, so every node is ready at once.
func wide(n int) *graph.Graph {
	g := &graph.Graph{Name: "wide", Inputs: []graph.Value{{Name: "x"}}}
	for i := range n {
		name := "relu" + strconv.Itoa(i)
		g.Nodes = append(g.Nodes, node(name, "Relu", []string{"x"}, name))
		g.Outputs = append(g.Outputs, graph.Value{Name: name})
	}
	return g
}

// Sorting 100,000 independent nodes keeps their file order and finishes
// well within the test timeout (re-sorting the ready list at every step
// took about two minutes).
func TestSortHundredThousandIndependentNodes(t *testing.T) {
	const n = 100_000
	g := wide(n)
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	for i, nd := range g.Nodes {
		if want := "relu" + strconv.Itoa(i); nd.Name != want {
			t.Fatalf("node %d is %s, want %s: file order is lost", i, nd.Name, want)
		}
	}
	if g.LastUse["x"] != n-1 {
		t.Errorf("LastUse[x] = %d, want %d", g.LastUse["x"], n-1)
	}
}

// A chain written backwards (each node reads the next one's output) sorts
// into the reverse of the file order.
func TestSortHundredThousandNodeChainWrittenBackwards(t *testing.T) {
	const n = 100_000
	g := &graph.Graph{Name: "chain", Inputs: []graph.Value{{Name: "v0"}}, Outputs: []graph.Value{{Name: "v" + strconv.Itoa(n)}}}
	for i := n - 1; i >= 0; i-- {
		g.Nodes = append(g.Nodes, node("n"+strconv.Itoa(i), "Relu", []string{"v" + strconv.Itoa(i)}, "v"+strconv.Itoa(i+1)))
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	for i, nd := range g.Nodes {
		if want := "n" + strconv.Itoa(i); nd.Name != want {
			t.Fatalf("node %d is %s, want %s", i, nd.Name, want)
		}
	}
}

func BenchmarkSortIndependentNodes(b *testing.B) {
	g := wide(100_000)
	for b.Loop() {
		if err := g.Sort(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// nested returns a graph whose If node holds a then_branch whose If node
// holds a then_branch … depth graphs deep. The innermost graph adds the
// top graph's input x to the value the graph above it computes, so every
// level reads x from the top and a value from its parent.
func nested(depth int) *graph.Graph {
	var inner *graph.Graph
	for level := depth; level >= 0; level-- {
		g := &graph.Graph{Name: "level" + strconv.Itoa(level)}
		out := "out" + strconv.Itoa(level)
		g.Outputs = []graph.Value{{Name: out}}
		if level == 0 {
			g.Inputs = []graph.Value{{Name: "x"}, {Name: "cond"}}
		}
		parent := "v" + strconv.Itoa(level-1) // computed by the level above
		if level == 0 {
			parent = "x"
		}
		own := "v" + strconv.Itoa(level)
		g.Nodes = []*graph.Node{node("add"+strconv.Itoa(level), "Add", []string{"x", parent}, own)}
		if inner == nil {
			g.Nodes[0].Outputs = []string{out}
		} else {
			g.Nodes = append(g.Nodes, &graph.Node{Name: "if" + strconv.Itoa(level), OpType: "If", Inputs: []string{"cond"}, Outputs: []string{out},
				Attrs: map[string]graph.Attr{"then_branch": {Type: graph.AttrGraph, Graph: inner}}})
		}
		inner = g
	}
	return inner
}

// Sorting nested subgraphs does work in proportion to their size: twice
// the depth allocates at most three times as much (it was quadratic: every
// level recomputed the free values of every level below it).
func TestSortNestedSubgraphsIsLinear(t *testing.T) {
	allocs := func(depth int) float64 {
		g := nested(depth)
		return testing.AllocsPerRun(1, func() {
			if err := g.Sort(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(1000), allocs(2000)
	if large > 3*small {
		t.Errorf("sorting 2000 nested levels allocates %.0f times, 1000 levels %.0f: more than linear", large, small)
	}
	g := nested(2000)
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if got := g.Nodes[1].Subgraphs()[0].FreeValues(); len(got) != 3 || !got["x"] || !got["v0"] || !got["cond"] {
		t.Errorf("level 1 FreeValues = %v, want x, v0 and cond", got)
	}
	if g.LastUse["x"] != 1 || g.LastUse["v0"] != 1 || g.LastUse["cond"] != 1 {
		t.Errorf("top LastUse = %v, want x, v0 and cond last read by the If (node 1)", g.LastUse)
	}
}

// A node reading 100,000 values, each twice, counts each once (finding the
// distinct inputs was quadratic in their number).
func TestSortNodeWithHundredThousandInputs(t *testing.T) {
	const n = 100_000
	g := &graph.Graph{Name: "concat", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "y"}}}
	var ins []string
	for i := range n {
		name := "r" + strconv.Itoa(i)
		g.Nodes = append(g.Nodes, node(name, "Relu", []string{"x"}, name))
		ins = append(ins, name, name)
	}
	g.Nodes = append([]*graph.Node{node("concat", "Concat", ins, "y")}, g.Nodes...)
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if last := g.Nodes[n]; last.Name != "concat" || g.LastUse["r0"] != n || g.LastUse["x"] != n-1 {
		t.Errorf("last node %v, LastUse r0 %d, x %d; want concat last, reading r0 at %d, x read last at %d", last, g.LastUse["r0"], g.LastUse["x"], n, n-1)
	}
}

// FreeValuesOver, given each subgraph's FreeValues, gives FreeValues, at
// every level of a nested graph.
func TestFreeValuesOver(t *testing.T) {
	g := nested(40)
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	for level := 0; g != nil; level++ {
		want := g.FreeValues()
		if got := g.FreeValuesOver((*graph.Graph).FreeValues); !maps.Equal(got, want) {
			t.Fatalf("level %d: FreeValuesOver = %v, FreeValues = %v", level, got, want)
		}
		var next *graph.Graph
		for _, n := range g.Nodes {
			if subs := n.Subgraphs(); len(subs) > 0 {
				next = subs[0]
			}
		}
		g = next
	}
}

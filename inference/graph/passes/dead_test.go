package passes_test

import (
	"strconv"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// Nodes that no output depends on go, with the initializers only they
// read; Identity and a Dropout that does not train pass their input on.
func TestEliminateDeadNodes(t *testing.T) {
	build := func() *model {
		m := newModel(13)
		x := m.input("x", 2, 3)
		dead := m.op("Neg", nil, m.op("Mul", nil, x, m.constant("unused_w", []int{3})))
		_ = dead
		id := m.op("Identity", nil, x)
		drop := m.op("Dropout", nil, m.op("Relu", nil, id), m.scalar("ratio", 0.3))
		y := m.op("Add", nil, drop, id)
		m.output(y)
		return m
	}
	g := rewrite(t, build, passes.EliminateDeadNodes(), "Relu Add", 0, 0)
	if _, ok := g.Initializers["unused_w"]; ok {
		t.Error("the initializer only dead nodes read is still there")
	}
	if add := g.Nodes[1]; add.Inputs[0] != g.Nodes[0].Outputs[0] || add.Inputs[1] != "x" {
		t.Errorf("Add reads %q, want the Relu's output and x", add.Inputs)
	}
}

// An Identity whose output is a graph output stays unless its input's
// producer can output the value under that name; one of a graph input
// stays.
func TestEliminateDeadNodesKeepsOutputs(t *testing.T) {
	build := func() *model {
		m := newModel(13)
		x := m.input("x", 2, 3)
		r := m.op("Relu", nil, x)
		m.output(m.op("Identity", nil, r), m.op("Identity", nil, x))
		return m
	}
	g := rewrite(t, build, passes.EliminateDeadNodes(), "Relu Identity", 0, 0)
	if g.Nodes[0].Outputs[0] != g.Outputs[0].Name {
		t.Errorf("Relu outputs %q, want the graph output %q", g.Nodes[0].Outputs[0], g.Outputs[0].Name)
	}
	// The value passed on is also read by another output: the Identity
	// stays.
	unchanged(t, func() *model {
		m := newModel(13)
		r := m.op("Relu", nil, m.input("x", 2, 3))
		m.output(m.op("Identity", nil, r), r)
		return m
	}, passes.EliminateDeadNodes())
}

// A Dropout whose mask is read, or that trains, stays.
func TestEliminateDeadNodesKeepsTrainingDropout(t *testing.T) {
	unchanged(t, func() *model {
		m := newModel(13)
		outs := m.opN("Dropout", nil, 2, m.input("x", 2, 3))
		m.output(m.op("Relu", nil, outs[0]), outs[1])
		return m
	}, passes.EliminateDeadNodes())
	build := func() *model {
		m := newModel(13)
		yes, _ := inference.New([]int{}, []bool{true})
		m.g.Initializers["training"] = yes
		m.output(m.op("Relu", nil, m.op("Dropout", nil, m.input("x", 2, 3), m.scalar("ratio", 0), "training")))
		return m
	}
	// With ratio 0 a training Dropout passes its input on.
	rewrite(t, build, passes.EliminateDeadNodes(), "Relu", 0, 0)
	// A ratio a feed may override is not known: the Dropout stays.
	unchanged(t, func() *model {
		m := build()
		m.overridable("ratio")
		return m
	}, passes.EliminateDeadNodes())
}

// A value read inside a subgraph is live, and an Identity whose output
// a subgraph reads stays; inside the subgraph, dead nodes go too.
func TestEliminateDeadNodesSubgraphs(t *testing.T) {
	build := func() *model {
		m := newModel(13)
		x := m.input("x", 2, 3)
		seen := m.op("Relu", nil, x)       // read only by the branches
		passed := m.op("Identity", nil, x) // read by the branches
		yes, _ := inference.New([]int{}, []bool{true})
		m.g.Initializers["cond"] = yes
		branch := func(name string) *graph.Graph {
			return &graph.Graph{
				Name:         name,
				Outputs:      []graph.Value{{Name: name + "_y"}},
				Initializers: map[string]inference.Tensor{},
				Nodes: []*graph.Node{
					{Name: name + "_dead", OpType: "Neg", Inputs: []string{seen}, Outputs: []string{name + "_dead"}},
					{Name: name + "_add", OpType: "Add", Inputs: []string{seen, passed}, Outputs: []string{name + "_y"}},
				},
			}
		}
		m.g.Nodes = append(m.g.Nodes, &graph.Node{Name: "if", OpType: "If", Inputs: []string{"cond"}, Outputs: []string{"y"},
			Attrs: map[string]graph.Attr{
				"then_branch": {Type: graph.AttrGraph, Graph: branch("then")},
				"else_branch": {Type: graph.AttrGraph, Graph: branch("else")},
			}})
		m.output("y")
		return m
	}
	g := rewrite(t, build, passes.EliminateDeadNodes(), "Relu Identity If", 0, 0)
	for _, sub := range g.Nodes[2].Subgraphs() {
		if o := ops(sub); o != "Add" {
			t.Errorf("subgraph %s: nodes %q, want the dead Neg gone", sub.Name, o)
		}
	}
}

// nestedIfs is an If inside an If, depth deep: each level's then-branch
// adds x to the value the level above computed and holds the next level,
// beside a dead Neg.
func nestedIfs(depth int) *graph.Graph {
	var inner *graph.Graph
	for level := depth; level >= 0; level-- {
		l := strconv.Itoa(level)
		g := &graph.Graph{Name: "level" + l, Outputs: []graph.Value{{Name: "out" + l}}, Initializers: map[string]inference.Tensor{}}
		parent := "v" + strconv.Itoa(level-1)
		if level == 0 {
			parent = "x"
			g.Inputs = []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2}}, {Name: "cond", DType: inference.Bool}}
			g.Opsets = map[string]int64{"": 13}
		}
		g.Nodes = []*graph.Node{
			{Name: "dead" + l, OpType: "Neg", Inputs: []string{parent}, Outputs: []string{"dead" + l}},
			{Name: "add" + l, OpType: "Add", Inputs: []string{"x", parent}, Outputs: []string{"v" + l}},
		}
		if inner == nil {
			g.Nodes[1].Outputs = []string{"out" + l}
		} else {
			g.Nodes = append(g.Nodes, &graph.Node{Name: "if" + l, OpType: "If", Inputs: []string{"cond"}, Outputs: []string{"out" + l},
				Attrs: map[string]graph.Attr{"then_branch": {Type: graph.AttrGraph, Graph: inner}}})
		}
		inner = g
	}
	return inner
}

// EliminateDeadNodes does work in proportion to a nested graph's size:
// twice the depth allocates at most three times as much (it was
// quadratic: every level worked out the free values and the names of
// every level below it). The dead Neg goes at every level.
func TestEliminateDeadNodesNestedIsLinear(t *testing.T) {
	allocs := func(depth int) float64 {
		return testing.AllocsPerRun(1, func() {
			if _, err := passes.EliminateDeadNodes().Run(nestedIfs(depth)); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(500), allocs(1000)
	if large > 3*small {
		t.Errorf("1000 nested levels allocate %.0f times, 500 levels %.0f: more than linear", large, small)
	}
	g := nestedIfs(30)
	if _, err := passes.EliminateDeadNodes().Run(g); err != nil {
		t.Fatal(err)
	}
	for level := 0; g != nil; level++ {
		if o := ops(g); o != "Add If" && o != "Add" {
			t.Fatalf("level %d: nodes %q, want the dead Neg gone", level, o)
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

// A Pad that pads nothing passes its input on, as PyTorch writes one
// before an AveragePool: its pads an all-zero constant input (opsets 11
// on, with or without axes) or attribute (before 11). One that pads, or
// whose pads a feed may override, stays.
func TestEliminateDeadNodesZeroPad(t *testing.T) {
	pool := map[string]graph.Attr{"kernel_shape": {Type: graph.AttrInts, Ints: []int64{2, 2}}, "strides": {Type: graph.AttrInts, Ints: []int64{2, 2}}}
	input := func(opset int64, pads ...int64) func() *model {
		return func() *model {
			m := newModel(opset)
			x := m.input("x", 1, 2, 4, 4)
			m.output(m.op("AveragePool", pool, m.op("Pad", nil, x, m.ints("pads", pads...))))
			return m
		}
	}
	rewrite(t, input(13, 0, 0, 0, 0, 0, 0, 0, 0), passes.EliminateDeadNodes(), "AveragePool", 0, 0)
	rewrite(t, func() *model {
		m := newModel(18)
		x := m.input("x", 1, 2, 4, 4)
		m.output(m.op("AveragePool", pool, m.op("Pad", nil, x, m.ints("pads", 0, 0, 0, 0), "", m.ints("axes", 2, 3))))
		return m
	}, passes.EliminateDeadNodes(), "AveragePool", 0, 0)
	attr := func(pads ...int64) func() *model {
		return func() *model {
			m := newModel(10)
			x := m.input("x", 1, 2, 4, 4)
			m.output(m.op("AveragePool", pool, m.op("Pad", map[string]graph.Attr{"pads": {Type: graph.AttrInts, Ints: pads}}, x)))
			return m
		}
	}
	rewrite(t, attr(0, 0, 0, 0, 0, 0, 0, 0), passes.EliminateDeadNodes(), "AveragePool", 0, 0)
	unchanged(t, input(13, 0, 0, 0, 1, 0, 0, 0, 1), passes.EliminateDeadNodes())
	unchanged(t, attr(0, 0, 1, 0, 0, 0, 1, 0), passes.EliminateDeadNodes())
	unchanged(t, func() *model {
		m := input(13, 0, 0, 0, 0, 0, 0, 0, 0)()
		m.overridable("pads")
		return m
	}, passes.EliminateDeadNodes())
}

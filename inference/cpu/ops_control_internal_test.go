package cpu

import (
	"context"
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// loopModel is a graph whose Loop doubles v each iteration and stacks every
// new v as a scan output: four times with tripCount (a for loop), and with
// stopAt while v < stopAt, a constant read from the enclosing graph.
func loopModel(t *testing.T, tripCount bool, stopAt float32) *Model {
	t.Helper()
	nodes := []*graph.Node{{Name: "double", OpType: "Add", Inputs: []string{"v_in", "v_in"}, Outputs: []string{"v_out"}},
		{Name: "scan", OpType: "Identity", Inputs: []string{"v_out"}, Outputs: []string{"s"}}}
	if stopAt > 0 {
		nodes = append(nodes, &graph.Node{Name: "less", OpType: "Less", Inputs: []string{"v_out", "limit"}, Outputs: []string{"c_out"}})
	} else {
		nodes = append(nodes, &graph.Node{Name: "keep", OpType: "Identity", Inputs: []string{"c_in"}, Outputs: []string{"c_out"}})
	}
	body := &graph.Graph{
		Name:         "body",
		Inputs:       []graph.Value{{Name: "i", DType: inference.Int64}, {Name: "c_in", DType: inference.Bool}, {Name: "v_in", DType: inference.Float32}},
		Outputs:      []graph.Value{{Name: "c_out"}, {Name: "v_out"}, {Name: "s"}},
		Nodes:        nodes,
		Initializers: map[string]inference.Tensor{},
	}
	if err := body.Sort(map[string]bool{"limit": true}); err != nil {
		t.Fatal(err)
	}
	loopIn := []string{"", "", "v0"}
	inits := map[string]inference.Tensor{"limit": tensorOf(t, []int{1}, stopAt)}
	if tripCount {
		loopIn[0] = "m"
		inits["m"] = tensorOf(t, []int{}, int64(4))
	}
	if stopAt > 0 {
		loopIn[1] = "c"
		inits["c"] = tensorOf(t, []int{}, true)
	}
	g := &graph.Graph{
		Name:         "loop",
		Opsets:       map[string]int64{"": 17},
		Inputs:       []graph.Value{{Name: "v0", DType: inference.Float32, Shape: []int{1}}},
		Outputs:      []graph.Value{{Name: "v"}, {Name: "all"}},
		Initializers: inits,
		Nodes: []*graph.Node{{Name: "loop", OpType: "Loop", Inputs: loopIn, Outputs: []string{"v", "all"},
			Attrs: map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}}}},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*Model)
}

func TestLoop(t *testing.T) {
	v0 := map[string]inference.Tensor{"v0": tensorOf(t, []int{1}, float32(1))}
	for name, m := range map[string]*Model{
		"trip count 4":     loopModel(t, true, 0),
		"condition v < 10": loopModel(t, false, 10),
		"both, cond stops": loopModel(t, true, 5), // stops after 3 iterations: 2, 4, 8
	} {
		t.Run(name, func(t *testing.T) {
			out, err := m.Run(context.Background(), v0)
			if err != nil {
				t.Fatal(err)
			}
			if name == "both, cond stops" {
				checkFloats(t, out["v"], []int{1}, 8)
				checkFloats(t, out["all"], []int{3, 1}, 2, 4, 8)
				return
			}
			checkFloats(t, out["v"], []int{1}, 16)
			checkFloats(t, out["all"], []int{4, 1}, 2, 4, 8, 16)
		})
	}
}

func TestLoopWithoutBoundIsUnsupported(t *testing.T) {
	n := opsem.Node{Node: &graph.Node{Name: "l", OpType: "Loop", Attrs: map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: &graph.Graph{
		Inputs:  []graph.Value{{Name: "i"}, {Name: "c"}, {Name: "v"}},
		Outputs: []graph.Value{{Name: "c"}, {Name: "v"}},
	}}}}, Opset: 17}
	_, err := loop(context.Background(), n, []inference.Tensor{{}, {}, tensorOf(t, []int{1}, float32(1))}, nil)
	if !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("loop without trip count or condition: %v, want ErrUnsupportedOp", err)
	}
}

// A Scan whose counts disagree (a body with fewer outputs than the state
// variables it threads, a negative or too large num_scan_inputs) is a bad
// model, named, not a panic: the counts set the lengths of slices.
func TestScanInconsistentCountsAreBadModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *graph.Graph
		in   map[string]inference.Tensor
	}{
		// Two states and one scan input; the body gives one output.
		{"Scan-11 fewer outputs than states", scanGraph(t, 11, 1, []string{"s", "u", "x"}, []string{"y"}, []string{"a", "b", "c"}),
			feeds(zeros(t, 1), zeros(t, 1), zeros(t, 3, 2))},
		{"Scan-11 negative num_scan_inputs", scanGraph(t, 11, -1, []string{"s", "x"}, []string{"y", "z"}, []string{"a", "b"}),
			feeds(zeros(t, 1), zeros(t, 3, 2))},
		{"Scan-8 negative num_scan_inputs", scanGraph(t, 8, -1, []string{"x"}, []string{"y"}, []string{"", "a"}),
			feeds(zeros(t, 2, 3, 2))},
		{"Scan-8 fewer outputs than states", scanGraph(t, 8, 1, []string{"s", "u", "x"}, []string{"y"}, []string{"", "a", "b", "c"}),
			feeds(zeros(t, 2, 1), zeros(t, 2, 1), zeros(t, 2, 3, 2))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runLimited(t, tc.g, 1<<30, tc.in)
			if !errors.Is(err, inference.ErrBadModel) || errors.Is(err, inference.ErrPanic) {
				t.Errorf("got %v, want ErrBadModel and no panic", err)
			}
		})
	}
}

package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func ifNode(name string, branch *graph.Graph, out ...string) *graph.Node {
	return &graph.Node{Name: name, OpType: "If", Inputs: []string{"cond"}, Outputs: out,
		Attrs: map[string]graph.Attr{"then_branch": {Type: graph.AttrGraph, Graph: branch}}}
}

func wantBadModel(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, inference.ErrBadModel) {
		t.Fatalf("error %v, want one wrapping ErrBadModel", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// Sort orders the nodes of subgraphs too, and checks them.
func TestSortOrdersSubgraphs(t *testing.T) {
	branch := &graph.Graph{Name: "then", Outputs: []graph.Value{{Name: "b"}}, Nodes: []*graph.Node{
		node("second", "Neg", []string{"a"}, "b"),
		node("first", "Relu", []string{"x"}, "a"),
	}}
	g := &graph.Graph{Name: "main", Inputs: []graph.Value{{Name: "x"}, {Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
		Nodes: []*graph.Node{ifNode("if", branch, "y")}}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if got := names(branch.Nodes); got != "first second" {
		t.Errorf("subgraph order %q, want \"first second\"", got)
	}
	if branch.LastUse["a"] != 1 {
		t.Errorf("subgraph LastUse %v, want a at 1", branch.LastUse)
	}

	branch.Nodes = append(branch.Nodes, node("dangling", "Relu", []string{"nowhere"}, "c"))
	wantBadModel(t, g.Sort(nil), `graph "main"`, `node "if" (If)`, `graph "then"`, `"dangling" (Relu)`, `"nowhere"`)
}

func TestSortRejectsModelsThatCannotRun(t *testing.T) {
	w, _ := inference.New([]int{1}, []float32{1})
	for name, tc := range map[string]struct {
		g    *graph.Graph
		want []string
	}{
		"two inputs with one name": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}, {Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, `input "x"`, "twice"},
		},
		"node output overwrites an input": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}},
				Nodes: []*graph.Node{node("n", "Relu", []string{"x"}, "x")}},
			[]string{`graph "g"`, `"n" (Relu)`, `"x"`, "graph input"},
		},
		"node output overwrites an initializer": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "w"}},
				Initializers: map[string]inference.Tensor{"w": w},
				Nodes:        []*graph.Node{node("n", "Relu", []string{"x"}, "w")}},
			[]string{`graph "g"`, `"n" (Relu)`, `"w"`, "initializer"},
		},
		"node output overwrites an overridable initializer": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "w"}},
				Initializers: map[string]inference.Tensor{"w": w}, Overridable: []graph.Value{{Name: "w"}},
				Nodes: []*graph.Node{node("n", "Relu", []string{"x"}, "w")}},
			[]string{`graph "g"`, `"n" (Relu)`, `"w"`},
		},
		"overridable initializer that is also a required input": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "w"}}, Outputs: []graph.Value{{Name: "w"}},
				Initializers: map[string]inference.Tensor{"w": w}, Overridable: []graph.Value{{Name: "w"}}},
			[]string{`graph "g"`, `"w"`, "twice"},
		},
		"subgraph node redefines an outer value": {
			&graph.Graph{Name: "main", Inputs: []graph.Value{{Name: "x"}, {Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
				Nodes: []*graph.Node{
					node("a", "Relu", []string{"x"}, "a"),
					ifNode("if", &graph.Graph{Name: "then", Outputs: []graph.Value{{Name: "a"}}, Nodes: []*graph.Node{node("inner", "Neg", []string{"x"}, "a")}}, "y"),
				}},
			[]string{`graph "then"`, `"inner" (Neg)`, `"a"`, "enclosing graph"},
		},
		"subgraph node redefines an outer input": {
			&graph.Graph{Name: "main", Inputs: []graph.Value{{Name: "x"}, {Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
				Nodes: []*graph.Node{
					ifNode("if", &graph.Graph{Name: "then", Outputs: []graph.Value{{Name: "x"}}, Nodes: []*graph.Node{node("inner", "Neg", []string{"cond"}, "x")}}, "y"),
				}},
			[]string{`graph "then"`, `"inner" (Neg)`, `"x"`, "enclosing graph"},
		},
		"output nothing produces": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "nowhere"}}},
			[]string{`graph "g"`, `output "nowhere"`},
		},
		"input element count overflows": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 1 << 40, 1 << 40}}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, `input "x"`, "overflows"},
		},
		"input byte size overflows": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x", DType: inference.Int64, Shape: []int{1 << 31, 1 << 30}}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, `input "x"`, "overflows"},
		},
		"negative input dimension": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x", Shape: []int{2, -3}}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, `input "x"`, "dimension 1 is -3"},
		},
		"negative output dimension": {
			&graph.Graph{Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x", Shape: []int{-2}}}},
			[]string{`graph "g"`, `output "x"`, "dimension 0 is -2"},
		},
		"subgraph input dimension overflows": {
			&graph.Graph{Name: "main", Inputs: []graph.Value{{Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
				Nodes: []*graph.Node{ifNode("if", &graph.Graph{Name: "body", Inputs: []graph.Value{{Name: "i", Shape: []int{1 << 62, 4}}}, Outputs: []graph.Value{{Name: "i"}}}, "y")}},
			[]string{`graph "body"`, `input "i"`, "overflows"},
		},
		"ai.onnx opset newer than the runtime": {
			&graph.Graph{Name: "g", Opsets: map[string]int64{"": graph.MaxOpset + 1}, Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, "ai.onnx", "newest"},
		},
		"ai.onnx opset zero": {
			&graph.Graph{Name: "g", Opsets: map[string]int64{"": 0}, Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, "ai.onnx", "version 0"},
		},
		"ai.onnx spelled out, negative": {
			&graph.Graph{Name: "g", Opsets: map[string]int64{"ai.onnx": -4}, Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, "ai.onnx", "version -4"},
		},
		"other domain version zero": {
			&graph.Graph{Name: "g", Opsets: map[string]int64{"": 13, "ai.onnx.ml": 0}, Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, "ai.onnx.ml", "version 0"},
		},
		"other domain version absurd": {
			&graph.Graph{Name: "g", Opsets: map[string]int64{"": 13, "com.example": 1 << 40}, Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}},
			[]string{`graph "g"`, "com.example", "version 1099511627776"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			wantBadModel(t, tc.g.Sort(nil), tc.want...)
		})
	}
}

// What ONNX's checker allows, Sort allows.
func TestSortAccepts(t *testing.T) {
	w, _ := inference.New([]int{1}, []float32{1})
	for name, g := range map[string]*graph.Graph{
		// Outputs need not be distinct.
		"one value output twice": {Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "y"}, {Name: "y"}},
			Nodes: []*graph.Node{node("n", "Relu", []string{"x"}, "y")}},
		// IR ≥ 4: an initializer may share an input's name (its default).
		"initializer named like an input": {Name: "g", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "y"}},
			Initializers: map[string]inference.Tensor{"x": w}, Nodes: []*graph.Node{node("n", "Relu", []string{"x"}, "y")}},
		// The checker sees a control-flow node's outputs only after its
		// subgraphs, so a subgraph may use the names of its node's outputs.
		"subgraph value named like its node's output": {Name: "main", Inputs: []graph.Value{{Name: "x"}, {Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
			Nodes: []*graph.Node{ifNode("if", &graph.Graph{Name: "then", Outputs: []graph.Value{{Name: "y"}}, Nodes: []*graph.Node{node("inner", "Neg", []string{"x"}, "y")}}, "y")}},
		// A subgraph input may shadow an outer value (the checker only
		// looks for duplicates within one graph's inputs).
		"subgraph input shadows an outer value": {Name: "main", Inputs: []graph.Value{{Name: "x"}, {Name: "cond"}}, Outputs: []graph.Value{{Name: "y"}},
			Nodes: []*graph.Node{ifNode("if", &graph.Graph{Name: "body", Inputs: []graph.Value{{Name: "x"}}, Outputs: []graph.Value{{Name: "x"}}}, "y")}},
		// Dynamic dimensions multiply with nothing; a zero-sized input is
		// fine; so is the newest opset and a version of another domain.
		"dynamic and zero dimensions": {Name: "g", Opsets: map[string]int64{"": graph.MaxOpset, "ai.onnx.ml": 3}, Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 1 << 30, inference.Dynamic, 1 << 30}}, {Name: "e", Shape: []int{0, 1 << 20, 1 << 20}}},
			Outputs: []graph.Value{{Name: "x"}}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := g.Sort(nil); err != nil {
				t.Error(err)
			}
		})
	}
}

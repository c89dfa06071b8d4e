package cpu

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// staticGraph reshapes x [n, 6] to [n, 3, 2] through the shape arithmetic
// exporters emit (Shape, Gather, Unsqueeze, Concat), and outputs the
// shape of NonZero(x), which the data decides.
func staticGraph(t *testing.T) *graph.Graph {
	t.Helper()
	return sorted(t, &graph.Graph{
		Name:    "static",
		Opsets:  map[string]int64{"": 13},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 6}}},
		Outputs: []graph.Value{{Name: "y"}, {Name: "nzshape"}},
		Initializers: map[string]inference.Tensor{
			"zero": tensorOf(t, []int{}, int64(0)),
			"axes": tensorOf(t, []int{1}, int64(0)),
			"rest": tensorOf(t, []int{2}, int64(3), 2),
		},
		Nodes: []*graph.Node{
			{Name: "shape", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}},
			{Name: "batch", OpType: "Gather", Inputs: []string{"s", "zero"}, Outputs: []string{"b"}},
			{Name: "unsq", OpType: "Unsqueeze", Inputs: []string{"b", "axes"}, Outputs: []string{"b1"}},
			{Name: "cat", OpType: "Concat", Inputs: []string{"b1", "rest"}, Outputs: []string{"target"}, Attrs: map[string]graph.Attr{"axis": attrInt(0)}},
			{Name: "reshape", OpType: "Reshape", Inputs: []string{"x", "target"}, Outputs: []string{"y"}},
			{Name: "nz", OpType: "NonZero", Inputs: []string{"x"}, Outputs: []string{"nzi"}},
			{Name: "nzshape", OpType: "Shape", Inputs: []string{"nzi"}, Outputs: []string{"nzshape"}},
		},
	})
}

// The shape arithmetic is marked static and NonZero's shape is not; runs
// that reuse the static outputs across batch sizes, and across data that
// changes NonZero's count, compute what a model without them computes.
func TestStaticShapeNodes(t *testing.T) {
	kept, plain := NewModel(staticGraph(t)), NewModel(staticGraph(t))
	marks := map[string]bool{}
	for i, n := range kept.g.Nodes {
		marks[n.Name] = kept.static != nil && kept.static[i]
	}
	for name, want := range map[string]bool{"shape": true, "batch": true, "unsq": true, "cat": true, "reshape": false, "nz": false, "nzshape": false} {
		if marks[name] != want {
			t.Errorf("node %s static: %v, want %v", name, marks[name], want)
		}
	}
	plain.static = nil
	input := func(n int, zeros int) inference.Tensor {
		xs := make([]float32, n*6)
		for i := range xs {
			if i >= zeros {
				xs[i] = float32(i + 1)
			}
		}
		return tensorOf(t, []int{n, 6}, xs...)
	}
	for _, c := range []struct{ n, zeros int }{{2, 0}, {2, 5}, {4, 0}, {2, 3}, {4, 7}, {1, 6}} {
		x := input(c.n, c.zeros)
		got, err := kept.Run(context.Background(), map[string]inference.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Run(context.Background(), map[string]inference.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"y", "nzshape"} {
			if !inference.Equal(got[name], want[name]) {
				t.Errorf("batch %d, %d zeros: %s = %v, want %v", c.n, c.zeros, name, got[name], want[name])
			}
		}
	}
	if got := len(kept.shapeOuts); got != 3 {
		t.Errorf("%d shape signatures kept, want 3 (batch 1, 2 and 4)", got)
	}
}

//go:build cgo

package cuda_test

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
)

// viewNet reads views of its input, of intermediates and of views, and
// returns one view as a graph output.
func viewNet(t testing.TB) *graph.Graph {
	t.Helper()
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	g := &graph.Graph{
		Name:         "views",
		Opsets:       map[string]int64{"": 11}, // Squeeze and Unsqueeze take axes as an attribute
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 4, 6}}},
		Outputs:      []graph.Value{{Name: "y", DType: inference.Float32}, {Name: "z", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{"w": check.Rand(1, -1, 1, 24, 5), "shape": check.Ints([]int{3}, 0, 2, 12)},
		Nodes: []*graph.Node{
			{Name: "flat", OpType: "Flatten", Inputs: []string{"x"}, Outputs: []string{"xf"}},
			{Name: "mm", OpType: "MatMul", Inputs: []string{"xf", "w"}, Outputs: []string{"h"}},
			{Name: "unsq", OpType: "Unsqueeze", Inputs: []string{"h"}, Outputs: []string{"hu"}, Attrs: map[string]graph.Attr{"axes": ints(1)}},
			{Name: "id", OpType: "Identity", Inputs: []string{"hu"}, Outputs: []string{"hi"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"hi"}, Outputs: []string{"r"}},
			{Name: "sq", OpType: "Squeeze", Inputs: []string{"hu"}, Outputs: []string{"hs"}, Attrs: map[string]graph.Attr{"axes": ints(1)}},
			{Name: "add", OpType: "Add", Inputs: []string{"hs", "h"}, Outputs: []string{"s"}},
			{Name: "sqr", OpType: "Squeeze", Inputs: []string{"r"}, Outputs: []string{"rs"}, Attrs: map[string]graph.Attr{"axes": ints(1)}},
			{Name: "mul", OpType: "Mul", Inputs: []string{"s", "rs"}, Outputs: []string{"y"}},
			{Name: "out", OpType: "Reshape", Inputs: []string{"x", "shape"}, Outputs: []string{"z"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// Views cost nothing on the device (issue 15, item 4): their outputs lie at
// their inputs' bytes, so a steady batch makes no device-to-device copy but
// the one of a view that is a graph output, and the results are the CPU's.
func TestViewsCopyNothing(t *testing.T) {
	b, dev := newSim(t, 0)
	m := compile(t, b, viewNet(t)).(*cuda.Model)
	ctx := context.Background()
	for i := range 3 {
		feeds := batchOf(viewNet(t), 2+i%2, uint64(i))
		before := dev.Stats()
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		if d := dev.Stats().CopiesDtoD - before.CopiesDtoD; d != 1 {
			t.Errorf("batch %d: %d device-to-device copies, want 1 (the output z, a view of the input)", i, d)
		}
		matchCPU(t, viewNet, feeds, got)
	}
	if host := m.Stats().HostNodes; len(host) > 0 {
		t.Errorf("nodes on the host: %q", host)
	}
}

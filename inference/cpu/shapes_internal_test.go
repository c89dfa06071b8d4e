package cpu

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// A plan never gives two values that are live at once overlapping bytes,
// and reuses the bytes of dead ones.
func TestPlanMemoryReusesDeadValues(t *testing.T) {
	relu := func(in, out string) *graph.Node {
		return &graph.Node{Name: out, OpType: "Relu", Inputs: []string{in}, Outputs: []string{out}}
	}
	g := &graph.Graph{
		Name:    "chain",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 1000}}},
		Outputs: []graph.Value{{Name: "y", DType: inference.Float32}},
		Nodes: []*graph.Node{relu("x", "a"), relu("a", "b"), relu("b", "c"),
			{Name: "sum", OpType: "Add", Inputs: []string{"c", "a"}, Outputs: []string{"d"}}, relu("d", "y")},
		Initializers: map[string]inference.Tensor{},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	shapes, err := inferShapes(t, m.(*Model))
	if err != nil {
		t.Fatal(err)
	}
	p := graph.PlanMemory(g, shapes, 8)
	const size = 8 * 1000 * 4 // one value at batch 8, already a multiple of graph.Align
	// a lives until the Add, so a, b and c are live together; d reuses b's
	// bytes (b died at c's node).
	if p.Size != 3*size {
		t.Errorf("arena %d bytes, want %d (three values live at once)", p.Size, 3*size)
	}
	if len(p.Offsets) != 4 || len(p.Unplanned) != 0 {
		t.Fatalf("planned %v, unplanned %v: want a, b, c, d", p.Offsets, p.Unplanned)
	}
	born := map[string]int{}
	for i, n := range g.Nodes {
		born[n.Outputs[0]] = i
	}
	for x, ox := range p.Offsets {
		if ox%graph.Align != 0 {
			t.Errorf("%s at %d: not aligned to %d", x, ox, graph.Align)
		}
		for y, oy := range p.Offsets {
			if x >= y {
				continue
			}
			liveTogether := born[x] <= g.LastUse[y] && born[y] <= g.LastUse[x]
			overlap := ox < oy+p.Bytes[y] && oy < ox+p.Bytes[x]
			if liveTogether && overlap {
				t.Errorf("%s [%d,+%d) and %s [%d,+%d) are live together and overlap", x, ox, p.Bytes[x], y, oy, p.Bytes[y])
			}
		}
	}
}

// Values whose shape depends on input data are left out of the shapes.
func TestDataDependentShapesLeftOut(t *testing.T) {
	g := &graph.Graph{
		Name:   "nz",
		Opsets: map[string]int64{"": 17},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 4}}},
		// r is an output so that dead-node elimination keeps it.
		Outputs: []graph.Value{{Name: "y", DType: inference.Int64}, {Name: "r", DType: inference.Float32}},
		Nodes: []*graph.Node{
			{Name: "nz", OpType: "NonZero", Inputs: []string{"x"}, Outputs: []string{"idx"}},
			{Name: "t", OpType: "Transpose", Inputs: []string{"idx"}, Outputs: []string{"y"}},
			{Name: "r", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
		},
		Initializers: map[string]inference.Tensor{},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	shapes, err := inferShapes(t, m.(*Model))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"idx", "y"} {
		if s, ok := shapes[name]; ok {
			t.Errorf("%s has inferred shape %v, want none (it depends on the data)", name, s.Dims)
		}
	}
	if s, ok := shapes["r"]; !ok || s.Dims[0] != (graph.Dim{Scale: 1}) {
		t.Errorf("r: %v, want [b 4]", s.Dims)
	}
}

// inferShapes infers m's shapes from a zero row of each input (its other
// dynamic dimensions at 1).
func inferShapes(t *testing.T, m *Model) (map[string]graph.Shape, error) {
	t.Helper()
	feeds := map[string]inference.Tensor{}
	for _, in := range m.g.Inputs {
		shape := make([]int, len(in.Shape))
		for k, d := range in.Shape {
			shape[k] = max(d, 1)
		}
		z, err := inference.Zeros(in.DType, shape)
		if err != nil {
			t.Fatal(err)
		}
		feeds[in.Name] = z
	}
	return graph.InferShapes(context.Background(), m.g, m.RunObserved, feeds)
}

package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// weightsGraph is x → Conv (2 groups, 3×3) → Reshape → MatMul → Gemm
// (transB) with every weight an initializer, sized so that every product
// packs and splits.
func weightsGraph(t *testing.T) *graph.Graph {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	rnd := func(shape ...int) inference.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return tensorOf(t, shape, nnRandom(r, n)...)
	}
	return sorted(t, &graph.Graph{
		Name:    "weights",
		Opsets:  map[string]int64{"": 13},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{4, 8, 20, 20}}},
		Outputs: []graph.Value{{Name: "y"}},
		Initializers: map[string]inference.Tensor{
			"w": rnd(48, 4, 3, 3), "b": rnd(48),
			"shape": tensorOf(t, []int{2}, int64(4*48), 400),
			"m":     rnd(400, 300),
			"gw":    rnd(70, 300), "gb": rnd(70),
		},
		Nodes: []*graph.Node{
			{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"},
				Attrs: map[string]graph.Attr{"group": attrInt(2), "pads": attrInts(1, 1, 1, 1)}},
			{Name: "flat", OpType: "Reshape", Inputs: []string{"c", "shape"}, Outputs: []string{"f"}},
			{Name: "mm", OpType: "MatMul", Inputs: []string{"f", "m"}, Outputs: []string{"h"}},
			{Name: "gemm", OpType: "Gemm", Inputs: []string{"h", "gw", "gb"}, Outputs: []string{"y"},
				Attrs: map[string]graph.Attr{"transB": attrInt(1)}},
		},
	})
}

// Conv, MatMul and Gemm read their packed weights, and compute what they
// compute packing them on every run, bit for bit: the packing is the
// same, and so are the sums.
func TestPreparedWeights(t *testing.T) {
	compiled, err := Backend{}.Compile(weightsGraph(t))
	if err != nil {
		t.Fatal(err)
	}
	packed, plain := compiled.(*Model), NewModel(weightsGraph(t))
	if got := len(packed.prepared); got != 3 {
		t.Fatalf("%d nodes prepared, want 3 (Conv, MatMul, Gemm)", got)
	}
	if plain.prepared != nil {
		t.Fatal("NewModel packed weights")
	}
	r := rand.New(rand.NewPCG(7, 8))
	x := tensorOf(t, []int{4, 8, 20, 20}, nnRandom(r, 4*8*20*20)...)
	got, err := packed.Run(context.Background(), map[string]inference.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Run(context.Background(), map[string]inference.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	if !inference.Equal(got["y"], want["y"]) {
		t.Error("outputs with packed weights differ from outputs packing on every run")
	}
	var weights int64
	for _, w := range packed.g.Initializers {
		weights += w.ByteSize()
	}
	if extra := preparedSize(packed.prepared); extra < 4*(48*36+400*300+70*300) || packed.ByteSize() != weights+extra {
		t.Errorf("ByteSize %d, want the initializers' %d and the packed weights' %d", packed.ByteSize(), weights, extra)
	}
}

// A packed weight is not read for another tensor of the same shape: a
// run that feeds an overridable initializer computes with what it fed.
func TestPreparedWeightsNotForOtherData(t *testing.T) {
	g := weightsGraph(t)
	g.Overridable = []graph.Value{{Name: "m", DType: inference.Float32, Shape: []int{400, 300}}}
	compiled, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	m := compiled.(*Model)
	for n := range m.prepared {
		if n.OpType == "MatMul" {
			t.Fatal("an overridable initializer was packed")
		}
	}
	if p := packedFor(m.prepared[g.Nodes[len(g.Nodes)-1]], make([]float32, 70*300)); p != nil {
		t.Error("packedFor took a packing for other data")
	}
}

package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// convAct builds x → Conv(w, b) → act → y, with the Conv output also read
// by a second node when shared is set (which forbids fusion).
func convAct(t *testing.T, act *graph.Node, shared bool, inits map[string]inference.Tensor) *graph.Graph {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, 4*3*3*3)
	for i := range w {
		w[i] = r.Float32()*2 - 1
	}
	inits["w"] = tensorOf(t, []int{4, 3, 3, 3}, w...)
	inits["b"] = tensorOf(t, []int{4}, float32(0.5), -0.5, 0, 1)
	g := &graph.Graph{
		Name:         "convact",
		Opsets:       map[string]int64{"": 13},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 3, 8, 8}}},
		Outputs:      []graph.Value{{Name: "y"}},
		Initializers: inits,
		Nodes: []*graph.Node{
			{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"},
				Attrs: map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}},
			act,
		},
	}
	if shared {
		g.Outputs = append(g.Outputs, graph.Value{Name: "c"})
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// A Conv followed by Relu or a constant Clip runs as one fused node and
// computes what the two kernels compute apart.
func TestFuseActivations(t *testing.T) {
	relu := func() *graph.Node {
		return &graph.Node{Name: "act", OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{}}
	}
	clip := func() *graph.Node {
		return &graph.Node{Name: "act", OpType: "Clip", Inputs: []string{"c", "lo", "hi"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{}}
	}
	bounds := func() map[string]inference.Tensor {
		return map[string]inference.Tensor{"lo": tensorOf(t, []int{}, float32(0)), "hi": tensorOf(t, []int{}, float32(0.75))}
	}
	r := rand.New(rand.NewPCG(3, 4))
	xs := make([]float32, 2*3*8*8)
	for i := range xs {
		xs[i] = r.Float32()*2 - 1
	}
	x := tensorOf(t, []int{2, 3, 8, 8}, xs...)
	for _, tc := range []struct {
		name       string
		act        func() *graph.Node
		inits      func() map[string]inference.Tensor
		shared     bool
		fusedNodes int
	}{
		{"relu", relu, func() map[string]inference.Tensor { return map[string]inference.Tensor{} }, false, 1},
		{"clip", clip, bounds, false, 1},
		{"shared output", relu, func() map[string]inference.Tensor { return map[string]inference.Tensor{} }, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fused, err := Backend{}.Compile(convAct(t, tc.act(), tc.shared, tc.inits()))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(fused.(*Model).g.Nodes); got != tc.fusedNodes {
				t.Errorf("%d nodes after fusion, want %d", got, tc.fusedNodes)
			}
			// The reference: the same graph run node by node, unfused.
			ref := convAct(t, tc.act(), tc.shared, tc.inits())
			want, err := run(context.Background(), nil, ref, map[string]inference.Tensor{"x": x}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fused.Run(context.Background(), map[string]inference.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			wantY, _ := floats(want[0])
			checkFloats(t, got["y"], []int{2, 4, 8, 8}, wantY...)
		})
	}
}

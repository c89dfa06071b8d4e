package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// TestReusedBuffers runs graphs over every kernel that asks for its output
// uncleared (limit.MakeOverwritten) on buffers a run on NaN inputs left in
// the pool, and requires what a fresh, unpooled model computes, bit for
// bit: a kernel that leaves part of such an output unwritten shows NaN.
// The tensors are large enough to be pooled (limit.MinPooled).
func TestReusedBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	rnd := func(shape ...int) inference.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return tensorOf(t, shape, nnRandom(r, n)...)
	}
	node := func(op string, in []string, out string, attrs map[string]graph.Attr) *graph.Node {
		return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
	}
	g := sorted(t, &graph.Graph{
		Name:    "reuse",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2, 8, 12, 12}}},
		Outputs: []graph.Value{{Name: "sum"}, {Name: "mm"}, {Name: "ln"}, {Name: "pools"}, {Name: "empty"}},
		Initializers: map[string]inference.Tensor{
			"w": rnd(8, 8, 3, 3), "b": rnd(8), "dw": rnd(8, 1, 3, 3), "pw": rnd(8, 8, 1, 1),
			"chan": rnd(1, 8, 1, 1), "m": rnd(12, 12), "gamma": rnd(12), "half": tensorOf(t, []int{}, float32(0.5)),
			"nothing": tensorOf(t, []int{8, 0, 3, 3}, []float32{}...),
			"zero":    tensorOf(t, []int{1}, int64(0)), "axis1": tensorOf(t, []int{1}, int64(1)),
		},
		Nodes: []*graph.Node{
			node("Conv", []string{"x", "w"}, "c1", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}),
			node("Conv", []string{"x", "w", "b"}, "c2", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}),
			node("Conv", []string{"x", "dw"}, "c3", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1), "group": attrInt(8)}),
			node("Conv", []string{"x", "pw"}, "c4", nil),
			node("Add", []string{"c1", "c2"}, "a1", nil),
			node("Sub", []string{"c3", "chan"}, "a2", nil),
			node("Mul", []string{"c4", "half"}, "a3", nil),
			node("Sigmoid", []string{"a1"}, "s1", nil),
			node("Abs", []string{"a2"}, "s2", nil),
			node("Sum", []string{"s1", "s2", "a3"}, "sum", nil),
			node("MatMul", []string{"x", "m"}, "mm0", nil),
			node("Transpose", []string{"mm0"}, "mm", map[string]graph.Attr{"perm": attrInts(0, 2, 3, 1)}),
			node("LayerNormalization", []string{"x", "gamma"}, "ln", nil),
			node("MaxPool", []string{"x"}, "p1", map[string]graph.Attr{"kernel_shape": attrInts(3, 3), "strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1)}),
			node("AveragePool", []string{"p1"}, "p2", map[string]graph.Attr{"kernel_shape": attrInts(2, 2)}),
			node("MaxPool", []string{"p2"}, "pools", map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "dilations": attrInts(2, 2)}),
			// No input channels: the output is the bias, here none: zeros.
			node("Slice", []string{"x", "zero", "zero", "axis1"}, "x0", nil),
			node("Conv", []string{"x0", "nothing"}, "empty", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}),
		},
	})
	x := rnd(2, 8, 12, 12)
	nan := make([]float32, x.Len())
	for i := range nan {
		nan[i] = float32(math.NaN())
	}
	poison := tensorOf(t, []int{2, 8, 12, 12}, nan...)

	pooled, fresh := NewModel(g), NewModel(g)
	fresh.pooled = false
	for range 2 {
		if _, err := pooled.Run(context.Background(), map[string]inference.Tensor{"x": poison}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := pooled.Run(context.Background(), map[string]inference.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Run(context.Background(), map[string]inference.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range g.Outputs {
		if !inference.Equal(got[o.Name], want[o.Name]) {
			t.Errorf("output %s on reused buffers: %v, fresh: %v", o.Name, got[o.Name], want[o.Name])
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func node(op string, in []string, out string, attrs map[string]graph.Attr) *graph.Node {
	return &graph.Node{Name: op + "_" + out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
}

func TestFLOPs(t *testing.T) {
	shapes := map[string][]int{
		// Conv: 8 input channels in 2 groups, 3×3 kernel, 6 output channels.
		"x": {2, 8, 10, 10}, "w": {6, 4, 3, 3}, "conv": {2, 6, 10, 10},
		// ConvTranspose: 6 input channels, 5 output channels, 2×2 kernel.
		"tw": {6, 5, 2, 2}, "deconv": {2, 5, 20, 20},
		// Gemm with transA: A is [K=7, M=3].
		"a": {7, 3}, "b": {7, 4}, "gemm": {3, 4},
		// MatMul broadcasting [2, 1, 5, 6] and [3, 6, 7].
		"p": {2, 1, 5, 6}, "q": {3, 6, 7}, "matmul": {2, 3, 5, 7},
		// Bidirectional LSTM: 11 steps, batch 2, input 4, hidden 3.
		"seq": {11, 2, 4}, "lw": {2, 12, 4}, "lr": {2, 12, 3}, "lstm": {11, 2, 2, 3},
		"relu": {2, 3, 5, 7},
	}
	g := &graph.Graph{Nodes: []*graph.Node{
		node("Conv", []string{"x", "w"}, "conv", map[string]graph.Attr{"group": {Type: graph.AttrInt, Int: 2}}),
		node("ConvTranspose", []string{"conv", "tw"}, "deconv", nil),
		node("Gemm", []string{"a", "b"}, "gemm", map[string]graph.Attr{"transA": {Type: graph.AttrInt, Int: 1}}),
		node("MatMul", []string{"p", "q"}, "matmul", nil),
		node("LSTM", []string{"seq", "lw", "lr"}, "lstm", nil),
		node("Relu", []string{"matmul"}, "relu", nil),
	}}
	got, err := flops(g, func(name string) ([]int, bool) { s, ok := shapes[name]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2*(2*6*10*10)*(4*3*3) + // Conv: every output element, C/group·kh·kw
		2*(2*6*10*10)*(5*2*2) + // ConvTranspose: every input element, M·kh·kw
		2*3*4*7 + // Gemm: M·N·K
		2*(2*3)*5*7*6 + // MatMul: broadcast batch·M·N·K
		2*11*2*(2*12*4+2*12*3)) // LSTM: steps·batch·(|W|+|R|)
	if got != want {
		t.Errorf("flops = %d, want %d", got, want)
	}
}

func TestFLOPsNeedShapes(t *testing.T) {
	g := &graph.Graph{Nodes: []*graph.Node{node("MatMul", []string{"p", "q"}, "y", nil)}}
	_, err := flops(g, func(name string) ([]int, bool) { return []int{2, 2}, name != "q" })
	if err == nil || !strings.Contains(err.Error(), `node "MatMul_y" (MatMul): shape of "q" is unknown`) {
		t.Errorf("flops = %v, want an error naming the node and the value", err)
	}
	// Operators that are not counted need no shapes.
	g = &graph.Graph{Nodes: []*graph.Node{node("Softmax", []string{"p"}, "y", nil)}}
	if n, err := flops(g, func(string) ([]int, bool) { return nil, false }); n != 0 || err != nil {
		t.Errorf("flops of a Softmax = %d, %v, want 0, nil", n, err)
	}
}

func TestShapesAt(t *testing.T) {
	w, _ := inference.New([]int{3, 2}, make([]float32, 6))
	g := &graph.Graph{Initializers: map[string]inference.Tensor{"w": w}}
	symbolic := map[string]graph.Shape{"x": {DType: inference.Float32, Dims: []graph.Dim{{Scale: 2, Offset: 1}, {Offset: 5}}}}
	shape := shapesAt(g, symbolic, 8)
	if s, ok := shape("x"); !ok || s[0] != 17 || s[1] != 5 {
		t.Errorf(`shape("x") = %v, %v, want [17 5]`, s, ok)
	}
	if s, ok := shape("w"); !ok || s[0] != 3 || s[1] != 2 {
		t.Errorf(`shape("w") = %v, %v, want the initializer's [3 2]`, s, ok)
	}
	if _, ok := shape("y"); ok {
		t.Error(`shape("y") is known; want unknown`)
	}
}

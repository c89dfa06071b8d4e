package onnx_test

import (
	"context"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
)

// The symbolic shapes of the digits MLP: every value grows with the batch
// in its first dimension, checked against a run at a batch size the probe
// did not use; and its memory plan at batch 32.
func TestDigitsShapesAndPlan(t *testing.T) {
	h, err := inference.NewCache(0).Acquire(context.Background(), onnx.Model("../../examples/classify/digits.onnx").WithDevice(inference.CPU))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	m := h.Model().(*cpu.Model)
	row, _ := inference.Zeros(inference.Float32, []int{1, 64})
	shapes, err := graph.InferShapes(context.Background(), m.Graph(), m.RunObserved, map[string]inference.Tensor{"pixels": row})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph()
	for _, n := range g.Nodes {
		for _, out := range n.Outputs {
			s, ok := shapes[out]
			if !ok || len(s.Dims) != 2 || s.Dims[0] != (graph.Dim{Scale: 1}) {
				t.Errorf("%s (from %v): shape %v, want [b N]", out, n, s.Dims)
			}
		}
	}
	x, _ := inference.Zeros(inference.Float32, []int{5, 64})
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"pixels": x})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out["logits"].Shape(), shapes["logits"].At(5); !slices.Equal(got, want) {
		t.Errorf("logits at batch 5: run %v, inferred %v", got, want)
	}
	// One intermediate of [32, 64] float32: the hidden layer's Gemm, into
	// which the CPU's passes fused the Relu (passes.FuseEpilogues): 8 KiB.
	p := graph.PlanMemory(g, shapes, 32)
	if p.Size != 32*64*4 || len(p.Offsets) != 1 {
		t.Errorf("plan at batch 32: %d bytes for %v, want 8192 for one value", p.Size, p.Offsets)
	}
}

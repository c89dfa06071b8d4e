package onnx_test

import (
	"context"
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

// Load the ONNX model examples/classify runs (a perceptron trained with
// PyTorch on 8×8 handwritten digits), see its inputs and outputs, and
// score one image. In a pipeline, RunInference does the loading (once per
// worker process), the batching and the running; this is the same model
// used directly.
func ExampleModel() {
	spec := onnx.Model("../../examples/classify/digits.onnx").WithDevice(inference.CPU)
	h, err := inference.Acquire(context.Background(), spec)
	if err != nil {
		panic(err)
	}
	defer h.Release()
	m := h.Model()
	fmt.Println("inputs: ", m.Inputs()) // -1: the batch dimension takes any size
	fmt.Println("outputs:", m.Outputs())

	// A batch of one image, a zero from the held-out digits, row by row.
	pixels := []float32{
		0, 0, 0.3125, 0.8125, 0.5625, 0.0625, 0, 0,
		0, 0, 0.8125, 0.9375, 0.625, 0.9375, 0.3125, 0,
		0, 0.1875, 0.9375, 0.125, 0, 0.6875, 0.5, 0,
		0, 0.25, 0.75, 0, 0, 0.5, 0.5, 0,
		0, 0.3125, 0.5, 0, 0, 0.5625, 0.5, 0,
		0, 0.25, 0.6875, 0, 0.0625, 0.75, 0.4375, 0,
		0, 0.125, 0.875, 0.3125, 0.625, 0.75, 0, 0,
		0, 0, 0.375, 0.8125, 0.625, 0, 0, 0,
	}
	x, err := inference.New([]int{1, 64}, pixels)
	if err != nil {
		panic(err)
	}
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"pixels": x})
	if err != nil {
		panic(err)
	}
	logits, err := inference.Data[float32](out["logits"])
	if err != nil {
		panic(err)
	}
	digit := 0
	for i, v := range logits {
		if v > logits[digit] {
			digit = i
		}
	}
	fmt.Println("logits:", out["logits"].Shape(), "digit:", digit)
	// Output:
	// inputs:  [pixels float32[-1 64]]
	// outputs: [logits float32[-1 10]]
	// logits: [1 10] digit: 0
}

package stub_test

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// A model that panics on any batch holding a row that starts with -1, as a
// buggy model panics on a malformed element.
func ExampleWithFault() {
	ctx := context.Background()
	h, err := inference.Acquire(ctx, stub.WithFault(stub.Echo(2), stub.Panic, -1))
	if err != nil {
		panic(err)
	}
	defer h.Release()
	x, _ := inference.New([]int{2, 2}, []float32{1, 2, -1, 0}) // two rows: [1 2] and [-1 0]

	defer func() { fmt.Println("recovered:", recover()) }()
	h.Model().Run(ctx, map[string]inference.Tensor{"x": x})
	// Output: recovered: stub: row 1 of 2 has x[0] = -1, marked to panic
}

// A rate chooses rows by the value of x[0] alone, so the same rows fail
// whatever the batching and the runner, and Selected lists them for a
// test's expectations.
func ExampleWithFaultRate() {
	ctx := context.Background()
	h, err := inference.Acquire(ctx, stub.WithFaultRate(stub.Echo(1), stub.Fail, 0.02))
	if err != nil {
		panic(err)
	}
	defer h.Release()

	var failed, selected []int
	for i := range 200 {
		x, _ := inference.New([]int{1, 1}, []float32{float32(i)})
		if _, err := h.Model().Run(ctx, map[string]inference.Tensor{"x": x}); err != nil {
			failed = append(failed, i)
		}
		if stub.Selected(stub.Fail, 0.02, float32(i)) {
			selected = append(selected, i)
		}
	}
	fmt.Println("failed:  ", failed)
	fmt.Println("selected:", selected)
	// Output:
	// failed:   [31 92 107 136 193 194]
	// selected: [31 92 107 136 193 194]
}

// A stand-in for a BERT-style token classifier (int64 token ids and mask
// in, logits for 9 labels per token out) that fails a row holding a token
// id past the vocabulary as the real model's Gather does, with
// inference.ErrIndexOutOfRange. The logits follow Shaped's rule: element
// j of a row is S + j, S the sum of the row's ids and mask.
func ExampleShaped() {
	spec := stub.Shaped(
		stub.Input("input_ids", inference.Int64, -1, 4),
		stub.Input("attention_mask", inference.Int64, -1, 4),
		stub.Output("logits", inference.Float32, -1, 4, 9),
	)
	spec = stub.FailIfOutside(spec, "input_ids", 0, 30521, inference.ErrIndexOutOfRange)

	ctx := context.Background()
	h, err := inference.Acquire(ctx, spec)
	if err != nil {
		panic(err)
	}
	defer h.Release()
	fmt.Println("inputs: ", h.Model().Inputs())
	fmt.Println("outputs:", h.Model().Outputs())

	run := func(ids ...int64) {
		idT, _ := inference.New([]int{1, 4}, ids)
		mask, _ := inference.New([]int{1, 4}, []int64{1, 1, 1, 0})
		out, err := h.Model().Run(ctx, map[string]inference.Tensor{"input_ids": idT, "attention_mask": mask})
		if err != nil {
			fmt.Println("error:", err, "| out of range:", errors.Is(err, inference.ErrIndexOutOfRange))
			return
		}
		logits, _ := inference.Data[float32](out["logits"])
		fmt.Println(out["logits"], "first token:", logits[:9])
	}
	run(101, 2023, 102, 0)
	run(101, 40000, 102, 0)
	// Output:
	// inputs:  [input_ids int64[-1 4] attention_mask int64[-1 4]]
	// outputs: [logits float32[-1 4 9]]
	// float32[1 4 9] first token: [2229 2230 2231 2232 2233 2234 2235 2236 2237]
	// error: stub: row 0 of 1: input "input_ids" has 40000 at index 1 of the row, outside [0, 30521]: inference: index out of range | out of range: true
}

// A trigger looks at every value of a row, where the faults look only at
// its first: here any NaN in x fails its row.
func ExampleFailIfAny() {
	ctx := context.Background()
	h, err := inference.Acquire(ctx, stub.FailIfAny(stub.Echo(3), "x", math.NaN(), nil))
	if err != nil {
		panic(err)
	}
	defer h.Release()
	nan := float32(math.NaN())
	x, _ := inference.New([]int{2, 3}, []float32{1, 2, 3, 4, nan, 6})
	_, err = h.Model().Run(ctx, map[string]inference.Tensor{"x": x})
	fmt.Println(err)
	// Output: stub: row 1 of 2: input "x" has NaN at index 1 of the row, marked to fail on NaN
}

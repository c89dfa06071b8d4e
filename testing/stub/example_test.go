package stub_test

import (
	"context"
	"fmt"

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

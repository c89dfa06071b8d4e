package inference_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

func TestRow(t *testing.T) {
	r := inference.Row[int64](101, 2023, 102)
	if r.DType() != inference.Int64 || !slices.Equal(r.Shape(), []int{3}) {
		t.Fatalf("Row(101, 2023, 102) = %v, want int64[3]", r)
	}
	if d, _ := inference.Data[int64](r); !slices.Equal(d, []int64{101, 2023, 102}) {
		t.Errorf("Row's data = %v", d)
	}
	if e := inference.Row[float32](); e.Len() != 0 || !slices.Equal(e.Shape(), []int{0}) {
		t.Errorf("Row() = %v, want float32[0]", e)
	}
}

func TestArgMax(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		t    inference.Tensor
		want []int
	}{
		{inference.Row[float32](0.1, 2, -3, 2), []int{1}},                                       // first of a tie
		{tensor(t, []int{2, 3}, []float32{1, 5, 2, 9, 0, 9}), []int{1, 0}},                      // one per row
		{inference.Row[float32](1, nan, 7), []int{1}},                                           // NaN wins
		{tensor(t, []int{2, 2}, []int64{3, -1, -5, 4}), []int{0, 1}},                            // integers
		{tensor(t, []int{0, 4}, []float32{}), []int{}},                                          // no rows
		{tensor(t, []int{2, 1, 3}, []float32{0, 0, 1, 1, 0, 0}), []int{2, 0}},                   // rank 3
		{tensor(t, []int{3}, []uint8{7, 200, 3}), []int{1}},                                     // uint8 scores
		{tensor(t, []int{3}, []inference.Half{0x3c00, 0xbc00, 0x4000}), []int{2}},               // float16 scores: 1, -1, 2
		{tensor(t, []int{2, 2}, []int32{math.MinInt32, math.MinInt32 + 1, 0, -1}), []int{1, 0}}, // int32 extremes
	} {
		got, err := inference.ArgMax(c.t)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ArgMax(%v) = %v, %v; want %v", c.t, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		t    inference.Tensor
		want error
	}{
		{tensor(t, []int{}, []float32{1}), inference.ErrShape},
		{tensor(t, []int{2, 0}, []float32{}), inference.ErrShape},
		{tensor(t, []int{2}, []bool{true, false}), inference.ErrType},
	} {
		if _, err := inference.ArgMax(bad.t); !errors.Is(err, bad.want) {
			t.Errorf("ArgMax(%v) error %v, want %v", bad.t, err, bad.want)
		}
	}
}

// Softmax against the float64 formula, tolerance 1e-7 (float32 rounding
// of probabilities at most 1), on logits large enough to overflow exp.
func TestSoftmax(t *testing.T) {
	in := tensor(t, []int{2, 3}, []float32{1, 2, 3, 1000, 1000, -1000})
	p, err := inference.Softmax(in)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := inference.Data[float32](p)
	e := []float64{math.Exp(-2), math.Exp(-1), 1}
	s := e[0] + e[1] + e[2]
	want := []float64{e[0] / s, e[1] / s, e[2] / s, 0.5, 0.5, 0}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-7 {
			t.Errorf("Softmax element %d = %v, want %v", i, got[i], want[i])
		}
	}
	if !slices.Equal(p.Shape(), in.Shape()) {
		t.Errorf("Softmax shape %v, want %v", p.Shape(), in.Shape())
	}
	if _, err := inference.Softmax(inference.Row[int64](1, 2)); !errors.Is(err, inference.ErrType) {
		t.Errorf("Softmax of int64: %v, want ErrType", err)
	}
}

func TestTopK(t *testing.T) {
	got, err := inference.TopK(tensor(t, []int{2, 4}, []float32{0.1, 0.7, 0.1, 0.1, 3, 1, 2, 3}), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]inference.Scored{
		{{Class: 1, Score: float64(float32(0.7))}, {Class: 0, Score: float64(float32(0.1))}, {Class: 2, Score: float64(float32(0.1))}},
		{{Class: 0, Score: 3}, {Class: 3, Score: 3}, {Class: 2, Score: 2}},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("TopK = %v, want %v", got, want)
	}
	if got, _ := inference.TopK(inference.Row[float32](1, 2), 5); len(got) != 1 || len(got[0]) != 2 || got[0][0].Class != 1 {
		t.Errorf("TopK with k past the classes = %v, want both classes, best first", got)
	}
	if _, err := inference.TopK(inference.Row[float32](1), 0); !errors.Is(err, inference.ErrShape) {
		t.Errorf("TopK k=0: %v, want ErrShape", err)
	}
}

func tensor[T inference.Element](t *testing.T, shape []int, data []T) inference.Tensor {
	t.Helper()
	x, err := inference.New(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A classifier's logits for one example: the predicted class, its
// probability, and the two best.
func ExampleArgMax() {
	logits := inference.Row[float32](0.5, 2.5, -1, 1.5)
	label, _ := inference.ArgMax(logits)
	probs, _ := inference.Softmax(logits)
	p, _ := inference.Data[float32](probs)
	top, _ := inference.TopK(probs, 2)
	fmt.Printf("label %d, p=%.3f; top 2: class %d (%.3f), class %d (%.3f)\n",
		label[0], p[label[0]], top[0][0].Class, top[0][0].Score, top[0][1].Class, top[0][1].Score)
	// Output: label 1, p=0.652; top 2: class 1 (0.652), class 3 (0.240)
}

// Token classification: one label per token of a [tokens, labels] output.
func ExampleArgMax_tokens() {
	scores, _ := inference.New([]int{3, 2}, []float32{0.9, 0.1, 0.2, 0.8, 0.6, 0.4})
	labels, _ := inference.ArgMax(scores)
	fmt.Println(labels)
	// Output: [0 1 0]
}

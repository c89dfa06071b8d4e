package stub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// tokenModel is a BERT-shaped token classifier over sequences of 4 tokens
// with 3 labels.
func tokenModel() inference.Spec {
	return stub.Shaped(
		stub.Input("input_ids", inference.Int64, -1, 4),
		stub.Input("attention_mask", inference.Int64, -1, 4),
		stub.Output("logits", inference.Float32, -1, 4, 3),
		stub.Output("first_label", inference.Int64, -1),
	)
}

func tensor[T inference.Element](t *testing.T, shape []int, data ...T) inference.Tensor {
	t.Helper()
	x, err := inference.New(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// tokens feeds rows of 4 token ids each, with a mask of ones.
func tokens(t *testing.T, ids ...int64) map[string]inference.Tensor {
	t.Helper()
	mask := make([]int64, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	shape := []int{len(ids) / 4, 4}
	return map[string]inference.Tensor{"input_ids": tensor(t, shape, ids...), "attention_mask": tensor(t, shape, mask...)}
}

func TestShapedSignatureAndValues(t *testing.T) {
	_, m := acquire(t, tokenModel())
	wantIn := []inference.TensorInfo{
		{Name: "input_ids", DType: inference.Int64, Shape: []int{-1, 4}},
		{Name: "attention_mask", DType: inference.Int64, Shape: []int{-1, 4}},
	}
	wantOut := []inference.TensorInfo{
		{Name: "logits", DType: inference.Float32, Shape: []int{-1, 4, 3}},
		{Name: "first_label", DType: inference.Int64, Shape: []int{-1}},
	}
	if got := m.Inputs(); !reflect.DeepEqual(got, wantIn) {
		t.Errorf("Inputs() = %v, want %v", got, wantIn)
	}
	if got := m.Outputs(); !reflect.DeepEqual(got, wantOut) {
		t.Errorf("Outputs() = %v, want %v", got, wantOut)
	}

	out, err := m.Run(context.Background(), tokens(t, 101, 7, 8, 102, 101, 0, 0, 102))
	if err != nil {
		t.Fatal(err)
	}
	// Row 0: S = 101+7+8+102 + 4 mask ones = 222; row 1: 101+102+4 = 207.
	logits, err := inference.Data[float32](out["logits"])
	if err != nil || out["logits"].String() != "float32[2 4 3]" {
		t.Fatalf("logits = %v (%v), want float32[2 4 3]", out["logits"], err)
	}
	for r, s := range []float32{222, 207} {
		for j := range 12 {
			if got := logits[r*12+j]; got != s+float32(j) {
				t.Fatalf("logits row %d element %d = %v, want S + j = %v", r, j, got, s+float32(j))
			}
		}
	}
	labels, err := inference.Data[int64](out["first_label"])
	if err != nil || out["first_label"].String() != "int64[2]" || labels[0] != 222 || labels[1] != 207 {
		t.Errorf("first_label = %v %v (%v), want int64[2] [222 207]", out["first_label"], labels, err)
	}
}

// A Dynamic output dimension follows the same axis of the first input.
func TestShapedDynamicSequence(t *testing.T) {
	_, m := acquire(t, stub.Shaped(
		stub.Input("ids", inference.Int64, -1, -1),
		stub.Output("tags", inference.Int64, -1, -1, 2),
	))
	for _, seq := range []int{1, 3} {
		ids := make([]int64, 2*seq)
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"ids": tensor(t, []int{2, seq}, ids...)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := out["tags"].String(), fmt.Sprintf("int64[2 %d 2]", seq); got != want {
			t.Errorf("sequence of %d: tags %s, want %s", seq, got, want)
		}
	}
}

// Every element type converts S + j as Shaped's doc says.
func TestShapedElementTypes(t *testing.T) {
	_, m := acquire(t, stub.Shaped(
		stub.Input("f", inference.Float32, -1, 2),
		stub.Input("flag", inference.Bool, -1, 1),
		stub.Input("px", inference.Uint8, -1, 1),
		stub.Input("h", inference.Float16, -1, 1),
		stub.Output("i32", inference.Int32, -1, 2),
		stub.Output("u8", inference.Uint8, -1, 2),
		stub.Output("odd", inference.Bool, -1, 2),
		stub.Output("f32", inference.Float32, -1, 2),
		stub.Output("f16", inference.Float16, -1, 2),
	))
	out, err := m.Run(context.Background(), map[string]inference.Tensor{
		"f":    tensor(t, []int{2, 2}, float32(-1.75), 0, 49.5, 0.25),
		"flag": tensor(t, []int{2, 1}, true, false),
		"px":   tensor(t, []int{2, 1}, uint8(0), 250),
		"h":    tensor(t, []int{2, 1}, inference.Half(0x3800), 0xb800), // 0.5, -0.5
	})
	if err != nil {
		t.Fatal(err)
	}
	// Row 0: S = -1.75 + 1 + 0 + 0.5 = -0.25; row 1: S = 49.75 + 0 + 250 - 0.5 = 299.25.
	i32, _ := inference.Data[int32](out["i32"])
	u8, _ := inference.Data[uint8](out["u8"])
	odd, _ := inference.Data[bool](out["odd"])
	f32, _ := inference.Data[float32](out["f32"])
	f16, _ := inference.Data[inference.Half](out["f16"])
	if want := []int32{0, 1, 299, 300}; !reflect.DeepEqual(i32, want) {
		t.Errorf("int32 = %v, want %v (S truncated toward zero, plus j)", i32, want)
	}
	if want := []uint8{0, 1, 43, 44}; !reflect.DeepEqual(u8, want) {
		t.Errorf("uint8 = %v, want %v (wrapped mod 256)", u8, want)
	}
	if want := []bool{false, true, true, false}; !reflect.DeepEqual(odd, want) {
		t.Errorf("bool = %v, want %v (whether int64(S)+j is odd)", odd, want)
	}
	if want := []float32{-0.25, 0.75, 299.25, 300.25}; !reflect.DeepEqual(f32, want) {
		t.Errorf("float32 = %v, want %v", f32, want)
	}
	if want := []inference.Half{0xb400, 0x3a00, 0x5cad, 0x5cb1}; !reflect.DeepEqual(f16, want) { // -0.25, 0.75, 299.25, 300.25: exact
		t.Errorf("float16 = %v, want %v", f16, want)
	}
}

func TestShapedRefusesWrongFeeds(t *testing.T) {
	_, m := acquire(t, tokenModel())
	ids := tensor(t, []int{1, 4}, int64(1), 2, 3, 4)
	for name, tc := range map[string]struct {
		feeds map[string]inference.Tensor
		want  error
		says  string
	}{
		"missing mask": {map[string]inference.Tensor{"input_ids": ids}, inference.ErrMissingInput, `input attention_mask int64[-1 4] is not fed`},
		"extra id": {map[string]inference.Tensor{"input_ids": ids, "attention_mask": ids, "id": ids},
			inference.ErrUnexpectedInput, `feed "id" is not an input`},
		"float32 ids": {map[string]inference.Tensor{"input_ids": tensor(t, []int{1, 4}, float32(1), 2, 3, 4), "attention_mask": ids},
			inference.ErrType, `input input_ids int64[-1 4] is fed float32[1 4]`},
		"5 tokens": {map[string]inference.Tensor{"input_ids": tensor(t, []int{1, 5}, int64(1), 2, 3, 4, 5), "attention_mask": ids},
			inference.ErrShape, `is fed int64[1 5]`},
		"rank 1": {map[string]inference.Tensor{"input_ids": tensor(t, []int{4}, int64(1), 2, 3, 4), "attention_mask": ids},
			inference.ErrShape, `is fed int64[4]`},
		"two batch sizes": {map[string]inference.Tensor{"input_ids": ids, "attention_mask": tensor(t, []int{2, 4}, make([]int64, 8)...)},
			inference.ErrShape, `is fed 2 rows, input "input_ids" 1`},
	} {
		_, err := m.Run(context.Background(), tc.feeds)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want one wrapping %v that says %q", name, err, tc.want, tc.says)
		}
	}
}

// A trigger fails exactly the batches that hold a matching row, naming the
// first such row, with the chosen sentinel; so each row run alone (as
// RunInference's split ends) fails if and only if it matches.
func TestTriggersFailMatchingRows(t *testing.T) {
	spec := stub.FailIfOutside(tokenModel(), "input_ids", 0, 99, inference.ErrIndexOutOfRange)
	spec = stub.FailIfAny(spec, "attention_mask", 7, nil)
	_, m := acquire(t, spec)
	rows := [][]int64{
		{1, 2, 3, 4},
		{5, 6, 100, 8},  // id 100 is out of the vocabulary [0, 99]
		{9, 10, 11, 12}, // fine
		{-1, 0, 0, 0},   // id -1 too
	}
	var all []int64
	for _, r := range rows {
		all = append(all, r...)
	}
	_, err := m.Run(context.Background(), tokens(t, all...))
	if !errors.Is(err, inference.ErrIndexOutOfRange) ||
		err.Error() != `stub: row 1 of 4: input "input_ids" has 100 at index 2 of the row, outside [0, 99]: inference: index out of range` {
		t.Errorf("batch: %v, want the failure of row 1 wrapping ErrIndexOutOfRange", err)
	}
	for i, r := range rows {
		_, err := m.Run(context.Background(), tokens(t, r...))
		if bad := i == 1 || i == 3; (err != nil) != bad || (bad && !errors.Is(err, inference.ErrIndexOutOfRange)) {
			t.Errorf("row %v alone: error %v, want failure %t with ErrIndexOutOfRange", r, err, bad)
		}
	}

	// The mask's trigger wraps no sentinel: a plain error, a transient one.
	feeds := tokens(t, 1, 2, 3, 4)
	feeds["attention_mask"] = tensor(t, []int{1, 4}, int64(1), 1, 7, 0)
	_, err = m.Run(context.Background(), feeds)
	if err == nil || err.Error() != `stub: row 0 of 1: input "attention_mask" has 7 at index 2 of the row, marked to fail on 7` {
		t.Errorf("mask of 7: error %v, want one naming row 0 and the mask", err)
	}
	for _, s := range []error{inference.ErrIndexOutOfRange, inference.ErrShape, inference.ErrBadModel, inference.ErrType} {
		if errors.Is(err, s) {
			t.Errorf("mask of 7: error %v wraps %v, want none", err, s)
		}
	}
}

// Triggers look at every value, on Echo and Affine models too, unlike the
// faults that look at x[0]; NaN matches NaN and lies outside every range.
func TestTriggersOnEveryValue(t *testing.T) {
	_, m := acquire(t, stub.FailIfAny(stub.Echo(3), "x", math.NaN(), inference.ErrShape))
	if _, err := m.Run(context.Background(), batch3(t, 1, 2, 3, 4, 5, 6)); err != nil {
		t.Errorf("batch without NaN: %v", err)
	}
	_, err := m.Run(context.Background(), batch3(t, 1, 2, 3, 4, float32(math.NaN()), 6))
	if !errors.Is(err, inference.ErrShape) || !strings.Contains(err.Error(), "row 1 of 2") || !strings.Contains(err.Error(), "index 1") {
		t.Errorf("NaN at x[1][1]: %v, want a failure of row 1, index 1, wrapping ErrShape", err)
	}

	_, m = acquire(t, stub.FailIfOutside(stub.Affine([][]float32{{1, 1}}, nil), "x", -1, 1, nil))
	_, err = m.Run(context.Background(), map[string]inference.Tensor{"x": tensor(t, []int{2, 2}, float32(0), 1, -1, float32(math.NaN()))})
	if err == nil || !strings.Contains(err.Error(), "row 1 of 2") {
		t.Errorf("NaN in [-1, 1]: %v, want a failure of row 1", err)
	}
}

func batch3(t *testing.T, xs ...float32) map[string]inference.Tensor {
	t.Helper()
	return map[string]inference.Tensor{"x": tensor(t, []int{len(xs) / 3, 3}, xs...)}
}

// The faults and the recording look at the first value of the first
// input's row in a Shaped model.
func TestShapedFaultsAndRecording(t *testing.T) {
	_, m := acquire(t, stub.WithRecording(stub.WithFault(tokenModel(), stub.Fail, 101)))
	if _, err := m.Run(context.Background(), tokens(t, 7, 101, 101, 101)); err != nil {
		t.Errorf("101 not first: %v", err)
	}
	_, err := m.Run(context.Background(), tokens(t, 7, 0, 0, 0, 101, 0, 0, 0))
	if err == nil || err.Error() != "stub: row 1 of 2 has x[0] = 101, marked to fail" {
		t.Errorf("101 first in row 1: %v, want the fault of row 1", err)
	}
	if got := m.Batches(); !reflect.DeepEqual(got, [][]float32{{7}, {7, 101}}) {
		t.Errorf("Batches() = %v, want [[7] [7 101]]", got)
	}
	if st := m.Stats(); st.Runs != 2 || st.Rows != 3 {
		t.Errorf("Stats() = %+v, want 2 runs of 3 rows", st)
	}
}

// A Spec travels to workers as JSON; the copy loads the same model.
func TestShapedSpecSerializes(t *testing.T) {
	spec := stub.FailIfOutside(tokenModel(), "input_ids", 0, math.Inf(1), inference.ErrIndexOutOfRange)
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back inference.Spec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Key() != spec.Key() {
		t.Fatalf("round trip changed the key: %s, want %s", back.Key(), spec.Key())
	}
	_, m := acquire(t, back)
	if _, err := m.Run(context.Background(), tokens(t, 1, 2, 3, -4)); !errors.Is(err, inference.ErrIndexOutOfRange) {
		t.Errorf("id -4 after the round trip: %v, want ErrIndexOutOfRange", err)
	}
}

func TestShapedBadDeclarationsPanic(t *testing.T) {
	in, out := stub.Input("x", inference.Int64, -1, 2), stub.Output("y", inference.Float32, -1)
	for name, f := range map[string]func(){
		"no output":        func() { stub.Shaped(in) },
		"no input":         func() { stub.Shaped(out) },
		"name twice":       func() { stub.Shaped(in, stub.Output("x", inference.Float32, -1)) },
		"empty name":       func() { stub.Shaped(in, stub.Output("", inference.Float32, -1)) },
		"no dimensions":    func() { stub.Shaped(stub.Input("x", inference.Int64), out) },
		"dimension -2":     func() { stub.Shaped(stub.Input("x", inference.Int64, -1, -2), out) },
		"unknown type":     func() { stub.Shaped(stub.Input("x", inference.DType(99), -1), out) },
		"dynamic past":     func() { stub.Shaped(in, stub.Output("y", inference.Float32, -1, 2, -1)) },
		"not a sentinel":   func() { stub.FailIfAny(stub.Shaped(in, out), "x", 1, errors.New("oops")) },
		"wrapped sentinel": func() { stub.FailIfAny(stub.Shaped(in, out), "x", 1, fmt.Errorf("w: %w", inference.ErrShape)) },
		"lo above hi":      func() { stub.FailIfOutside(stub.Echo(1), "x", 2, 1, nil) },
		"NaN bound":        func() { stub.FailIfOutside(stub.Echo(1), "x", math.NaN(), 1, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestShapedBadSpecsFailToLoad(t *testing.T) {
	good := tokenModel()
	opts := func(k, v string) inference.Spec {
		s := inference.Spec{URI: good.URI, Format: good.Format, Options: map[string]string{}}
		for ok, ov := range good.Options {
			s.Options[ok] = ov
		}
		s.Options[k] = v
		return s
	}
	for name, spec := range map[string]inference.Spec{
		"ports not JSON":      opts("ports", "input_ids:int64"),
		"no outputs":          opts("ports", `[{"name":"x","dtype":"int64","shape":[-1]}]`),
		"trigger on no input": stub.FailIfAny(good, "token_type_ids", 0, nil),
		"trigger not JSON":    opts("fail_if", "input_ids=0"),
		"unknown sentinel":    opts("fail_if", `[{"input":"input_ids","equal":"0","err":"inference: oops"}]`),
		"bound not a number":  opts("fail_if", `[{"input":"input_ids","lo":"zero","hi":"1"}]`),
	} {
		_, err := inference.NewCache(0).Acquire(context.Background(), spec)
		if !errors.Is(err, inference.ErrBadModel) {
			t.Errorf("%s: error %v, want ErrBadModel", name, err)
		}
	}
}

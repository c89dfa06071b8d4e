package inference_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// allDTypes lists every element type a Tensor can hold.
var allDTypes = []inference.DType{inference.Float32, inference.Int64, inference.Int32, inference.Bool, inference.Uint8, inference.Float16,
	inference.Float64, inference.String, inference.Int8, inference.Int16, inference.Uint16, inference.Uint32, inference.Uint64, inference.BFloat16}

// mustNew is inference.New for data the test knows to fit the shape.
func mustNew[T inference.Element](t testing.TB, shape []int, data []T) inference.Tensor {
	t.Helper()
	tn, err := inference.New(shape, data)
	if err != nil {
		t.Fatalf("New(%v, %v): %v", shape, data, err)
	}
	return tn
}

// mustData is inference.Data for a tensor the test knows to hold T.
func mustData[T inference.Element](t testing.TB, tn inference.Tensor) []T {
	t.Helper()
	d, err := inference.Data[T](tn)
	if err != nil {
		t.Fatalf("Data(%v): %v", tn, err)
	}
	return d
}

// checkErr fails t unless err wraps target and its message contains each of
// parts.
func checkErr(t testing.TB, err, target error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one wrapping %v", target)
	}
	if !errors.Is(err, target) {
		t.Errorf("error %q does not wrap %v", err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// catch runs f and turns a panic into an error, so that an input that makes
// the code under test panic fails its own test rather than the test binary.
func catch(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// sample returns a tensor of dtype and shape whose elements depend on their
// position and on seed, so that a misplaced element or a mixed-up tensor
// shows.
func sample(t testing.TB, dtype inference.DType, shape []int, seed int) inference.Tensor {
	t.Helper()
	n, err := inference.NumElements(shape)
	if err != nil {
		t.Fatal(err)
	}
	switch dtype {
	case inference.Float32:
		return mustNew(t, shape, fill(n, func(i int) float32 { return float32(seed*1000+i) + 0.25 }))
	case inference.Int64:
		return mustNew(t, shape, fill(n, func(i int) int64 { return int64(seed*1000+i) - 1<<40 }))
	case inference.Int32:
		return mustNew(t, shape, fill(n, func(i int) int32 { return -int32(seed*1000 + i + 1) }))
	case inference.Bool:
		return mustNew(t, shape, fill(n, func(i int) bool { return (seed+i)%3 == 0 }))
	case inference.Uint8:
		return mustNew(t, shape, fill(n, func(i int) uint8 { return uint8(seed*31 + i*7 + 1) }))
	case inference.Float16:
		return mustNew(t, shape, fill(n, func(i int) inference.Half { return inference.HalfFromFloat32(float32(seed*100+i) + 0.5) }))
	case inference.Float64:
		return mustNew(t, shape, fill(n, func(i int) float64 { return float64(seed*1000+i) + 1.0/3 }))
	case inference.String:
		return mustNew(t, shape, fill(n, func(i int) string { return strings.Repeat("é", (seed+i)%4) + fmt.Sprint(i) }))
	case inference.Int8:
		return mustNew(t, shape, fill(n, func(i int) int8 { return int8(seed*31 - i*7) }))
	case inference.Int16:
		return mustNew(t, shape, fill(n, func(i int) int16 { return int16(-seed*1000 - i*300) }))
	case inference.Uint16:
		return mustNew(t, shape, fill(n, func(i int) uint16 { return uint16(60000 + seed + i) }))
	case inference.Uint32:
		return mustNew(t, shape, fill(n, func(i int) uint32 { return uint32(4e9) + uint32(seed+i) }))
	case inference.Uint64:
		return mustNew(t, shape, fill(n, func(i int) uint64 { return math.MaxUint64 - uint64(seed*1000+i) }))
	case inference.BFloat16:
		return mustNew(t, shape, fill(n, func(i int) inference.BF16 { return inference.BF16FromFloat32(float32(seed*100+i) + 0.5) }))
	}
	t.Fatalf("no sample for %v", dtype)
	return inference.Tensor{}
}

func fill[T any](n int, f func(i int) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = f(i)
	}
	return s
}

func TestDType(t *testing.T) {
	tests := []struct {
		dtype inference.DType
		name  string
		size  int
	}{
		{inference.Float32, "float32", 4},
		{inference.Int64, "int64", 8},
		{inference.Int32, "int32", 4},
		{inference.Bool, "bool", 1},
		{inference.Uint8, "uint8", 1},
		{inference.Float16, "float16", 2},
		{inference.Float64, "float64", 8},
		{inference.String, "string", 16},
		{inference.Int8, "int8", 1},
		{inference.Int16, "int16", 2},
		{inference.Uint16, "uint16", 2},
		{inference.Uint32, "uint32", 4},
		{inference.Uint64, "uint64", 8},
		{inference.BFloat16, "bfloat16", 2},
		{0, "DType(0)", 0},
		{42, "DType(42)", 0},
	}
	for _, tt := range tests {
		if got := tt.dtype.String(); got != tt.name {
			t.Errorf("DType(%d).String() = %q, want %q", uint8(tt.dtype), got, tt.name)
		}
		if got := tt.dtype.Size(); got != tt.size {
			t.Errorf("%v.Size() = %d, want %d", tt.dtype, got, tt.size)
		}
	}
}

func TestDTypeOf(t *testing.T) {
	got := []inference.DType{
		inference.DTypeOf[float32](),
		inference.DTypeOf[int64](),
		inference.DTypeOf[int32](),
		inference.DTypeOf[bool](),
		inference.DTypeOf[uint8](),
		inference.DTypeOf[inference.Half](),
		inference.DTypeOf[float64](),
		inference.DTypeOf[string](),
		inference.DTypeOf[int8](),
		inference.DTypeOf[int16](),
		inference.DTypeOf[uint16](),
		inference.DTypeOf[uint32](),
		inference.DTypeOf[uint64](),
		inference.DTypeOf[inference.BF16](),
	}
	if !slices.Equal(got, allDTypes) {
		t.Errorf("DTypeOf of float32, int64, int32, bool, uint8, Half, float64, string, int8, int16, uint16, uint32, uint64, BF16 = %v, want %v", got, allDTypes)
	}
	if !slices.Equal(inference.DTypes(), allDTypes) {
		t.Errorf("DTypes() = %v, want %v", inference.DTypes(), allDTypes)
	}
}

func TestNew(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6}
	tn, err := inference.New([]int{2, 3}, data)
	if err != nil {
		t.Fatal(err)
	}
	if tn.DType() != inference.Float32 || tn.Rank() != 2 || tn.Len() != 6 || tn.ByteSize() != 24 {
		t.Errorf("New([2 3], 6 float32s) = %v with rank %d, len %d, %d bytes; want float32[2 3], 2, 6, 24",
			tn, tn.Rank(), tn.Len(), tn.ByteSize())
	}
	if got := tn.Shape(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("Shape() = %v, want [2 3]", got)
	}
	// New does not copy the data: Data hands back the very slice.
	if got := mustData[float32](t, tn); &got[0] != &data[0] {
		t.Error("Data returned a copy of the slice New was given")
	}

	scalar := mustNew(t, nil, []int64{-7})
	if scalar.Rank() != 0 || scalar.Len() != 1 || scalar.ByteSize() != 8 {
		t.Errorf("rank-0 int64 tensor has rank %d, len %d, %d bytes; want 0, 1, 8", scalar.Rank(), scalar.Len(), scalar.ByteSize())
	}

	empty := mustNew[uint8](t, []int{3, 0}, nil)
	if empty.Len() != 0 || !slices.Equal(empty.Shape(), []int{3, 0}) {
		t.Errorf("New([3 0], nil) = %v with len %d, want uint8[3 0] with len 0", empty, empty.Len())
	}
}

func TestNewAndZerosCopyShape(t *testing.T) {
	shape := []int{2, 2}
	tn := mustNew(t, shape, []int32{1, 2, 3, 4})
	zeros, err := inference.Zeros(inference.Int32, shape)
	if err != nil {
		t.Fatal(err)
	}
	shape[0] = 4
	if got := tn.Shape(); !slices.Equal(got, []int{2, 2}) {
		t.Errorf("after the caller changed its shape slice, New's tensor has shape %v, want [2 2]", got)
	}
	if got := zeros.Shape(); !slices.Equal(got, []int{2, 2}) {
		t.Errorf("after the caller changed its shape slice, Zeros's tensor has shape %v, want [2 2]", got)
	}
}

func TestNewRejectsDataLength(t *testing.T) {
	tests := []struct {
		shape []int
		n     int
	}{
		{[]int{2, 3}, 5},
		{[]int{2, 3}, 7},
		{nil, 0},
		{nil, 2},
		{[]int{0}, 1},
		{[]int{4}, 0},
	}
	for _, tt := range tests {
		_, err := inference.New(tt.shape, make([]float32, tt.n))
		checkErr(t, err, inference.ErrShape, "float32")
	}
}

func TestNewRejectsNegativeDimension(t *testing.T) {
	_, err := inference.New([]int{2, -1}, []bool{true, false})
	checkErr(t, err, inference.ErrShape, "negative")
	_, err = inference.New([]int{-2, -1}, []bool{true, false})
	checkErr(t, err, inference.ErrShape, "negative")
}

func TestNumElements(t *testing.T) {
	tests := []struct {
		shape []int
		want  int
	}{
		{nil, 1},
		{[]int{}, 1},
		{[]int{0}, 0},
		{[]int{7}, 7},
		{[]int{2, 3, 4}, 24},
		{[]int{5, 0, 3}, 0},
		{[]int{0, math.MaxInt}, 0},
		{[]int{math.MaxInt, 0}, 0},
		{[]int{math.MaxInt}, math.MaxInt},
		{[]int{1, math.MaxInt, 1}, math.MaxInt},
	}
	for _, tt := range tests {
		got, err := inference.NumElements(tt.shape)
		if err != nil || got != tt.want {
			t.Errorf("NumElements(%v) = %d, %v; want %d, nil", tt.shape, got, err, tt.want)
		}
	}
}

func TestNumElementsRejects(t *testing.T) {
	for _, shape := range [][]int{
		{-1},
		{3, -1},
		{0, -1},
		{math.MaxInt, 2},
		{2, math.MaxInt},
		{math.MaxInt/2 + 1, 2},
		{1 << 20, 1 << 20, 1 << 20, 1 << 20},
	} {
		n, err := inference.NumElements(shape)
		if err == nil {
			t.Errorf("NumElements(%v) = %d, want an error", shape, n)
			continue
		}
		checkErr(t, err, inference.ErrShape)
	}
}

func TestZeros(t *testing.T) {
	for _, dtype := range allDTypes {
		tn, err := inference.Zeros(dtype, []int{2, 3})
		if err != nil {
			t.Fatalf("Zeros(%v, [2 3]): %v", dtype, err)
		}
		if tn.DType() != dtype || !slices.Equal(tn.Shape(), []int{2, 3}) || tn.Len() != 6 {
			t.Errorf("Zeros(%v, [2 3]) = %v with len %d", dtype, tn, tn.Len())
		}
		var zero inference.Tensor
		switch dtype {
		case inference.Float32:
			zero = mustNew(t, []int{2, 3}, make([]float32, 6))
		case inference.Int64:
			zero = mustNew(t, []int{2, 3}, make([]int64, 6))
		case inference.Int32:
			zero = mustNew(t, []int{2, 3}, make([]int32, 6))
		case inference.Bool:
			zero = mustNew(t, []int{2, 3}, make([]bool, 6))
		case inference.Uint8:
			zero = mustNew(t, []int{2, 3}, make([]uint8, 6))
		case inference.Float16:
			zero = mustNew(t, []int{2, 3}, make([]inference.Half, 6))
		case inference.Float64:
			zero = mustNew(t, []int{2, 3}, make([]float64, 6))
		case inference.String:
			zero = mustNew(t, []int{2, 3}, make([]string, 6))
		case inference.Int8:
			zero = mustNew(t, []int{2, 3}, make([]int8, 6))
		case inference.Int16:
			zero = mustNew(t, []int{2, 3}, make([]int16, 6))
		case inference.Uint16:
			zero = mustNew(t, []int{2, 3}, make([]uint16, 6))
		case inference.Uint32:
			zero = mustNew(t, []int{2, 3}, make([]uint32, 6))
		case inference.Uint64:
			zero = mustNew(t, []int{2, 3}, make([]uint64, 6))
		case inference.BFloat16:
			zero = mustNew(t, []int{2, 3}, make([]inference.BF16, 6))
		}
		if !inference.Equal(tn, zero) {
			t.Errorf("Zeros(%v, [2 3]) is not all zeros", dtype)
		}
	}

	scalar, err := inference.Zeros(inference.Int32, nil)
	if err != nil || scalar.Len() != 1 || scalar.Rank() != 0 {
		t.Errorf("Zeros(int32, nil) = %v (len %d), %v; want one element of rank 0", scalar, scalar.Len(), err)
	}

	_, err = inference.Zeros(0, []int{2})
	checkErr(t, err, inference.ErrType)
	_, err = inference.Zeros(99, []int{2})
	checkErr(t, err, inference.ErrType)
	_, err = inference.Zeros(inference.Float32, []int{2, -3})
	checkErr(t, err, inference.ErrShape)
	_, err = inference.Zeros(inference.Uint8, []int{math.MaxInt, 2})
	checkErr(t, err, inference.ErrShape)
}

func TestDataWrongType(t *testing.T) {
	tn := mustNew(t, []int{2}, []int32{1, 2})
	_, err := inference.Data[int64](tn)
	checkErr(t, err, inference.ErrType, "int32[2]", "int64")
	_, err = inference.Data[float32](tn)
	checkErr(t, err, inference.ErrType)
	_, err = inference.Data[float32](inference.Tensor{})
	checkErr(t, err, inference.ErrType)
	if got := mustData[int32](t, tn); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("Data[int32] = %v, want [1 2]", got)
	}
}

func TestShapeReturnsCopy(t *testing.T) {
	tn := mustNew(t, []int{2, 3}, make([]uint8, 6))
	s := tn.Shape()
	s[0] = 99
	if got := tn.Shape(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("after changing the slice Shape returned, Shape() = %v, want [2 3]", got)
	}
	if tn.String() != "uint8[2 3]" {
		t.Errorf("after changing the slice Shape returned, String() = %q, want uint8[2 3]", tn)
	}
}

func TestTensorString(t *testing.T) {
	tests := []struct {
		t    inference.Tensor
		want string
	}{
		{mustNew(t, []int{2, 3}, make([]float32, 6)), "float32[2 3]"},
		{mustNew(t, []int{8, 3, 2, 2}, make([]uint8, 96)), "uint8[8 3 2 2]"},
		{mustNew(t, nil, []int64{1}), "int64[]"},
		{mustNew[bool](t, []int{0}, nil), "bool[0]"},
		{inference.Tensor{}, "DType(0)[]"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestEqual(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	f23 := mustNew(t, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	tests := []struct {
		name string
		a, b inference.Tensor
		want bool
	}{
		{"same", f23, mustNew(t, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}), true},
		{"itself", f23, f23, true},
		{"one element differs", f23, mustNew(t, []int{2, 3}, []float32{1, 2, 3, 4, 5, 7}), false},
		{"transposed shape", f23, mustNew(t, []int{3, 2}, []float32{1, 2, 3, 4, 5, 6}), false},
		{"flat shape", f23, mustNew(t, []int{6}, []float32{1, 2, 3, 4, 5, 6}), false},
		{"dtype differs", mustNew(t, []int{2}, []int32{1, 2}), mustNew(t, []int{2}, []int64{1, 2}), false},
		{"bool vs uint8", mustNew(t, []int{1}, []bool{true}), mustNew(t, []int{1}, []uint8{1}), false},
		{"NaN equals itself", mustNew(t, []int{2}, []float32{nan, 1}), mustNew(t, []int{2}, []float32{nan, 1}), true},
		{"NaN vs number", mustNew(t, []int{1}, []float32{nan}), mustNew(t, []int{1}, []float32{0}), false},
		{"-0 vs +0 bitwise", mustNew(t, nil, []float32{negZero}), mustNew(t, nil, []float32{0}), false},
		{"int64", mustNew(t, []int{2}, []int64{1, -1}), mustNew(t, []int{2}, []int64{1, -1}), true},
		{"int64 differs", mustNew(t, []int{2}, []int64{1, -1}), mustNew(t, []int{2}, []int64{1, 1}), false},
		{"int32 differs", mustNew(t, []int{2}, []int32{1, -1}), mustNew(t, []int{2}, []int32{1, 1}), false},
		{"bool differs", mustNew(t, []int{2}, []bool{true, false}), mustNew(t, []int{2}, []bool{true, true}), false},
		{"uint8 differs", mustNew(t, []int{2}, []uint8{1, 2}), mustNew(t, []int{2}, []uint8{1, 3}), false},
		{"empty", mustNew[uint8](t, []int{0, 2}, nil), mustNew(t, []int{0, 2}, []uint8{}), true},
		{"empty shapes differ", mustNew[uint8](t, []int{0, 2}, nil), mustNew[uint8](t, []int{2, 0}, nil), false},
		{"zero tensors", inference.Tensor{}, inference.Tensor{}, true},
		{"zero vs rank 0", inference.Tensor{}, mustNew(t, nil, []uint8{0}), false},
	}
	for _, tt := range tests {
		if got := inference.Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: Equal(%v, %v) = %v, want %v", tt.name, tt.a, tt.b, got, tt.want)
		}
		if got := inference.Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("%s: Equal(%v, %v) = %v, want %v", tt.name, tt.b, tt.a, got, tt.want)
		}
	}
}

func TestStackUnstackRoundTrip(t *testing.T) {
	for _, dtype := range allDTypes {
		for _, shape := range [][]int{nil, {4}, {2, 3}, {0}, {2, 0, 3}} {
			parts := []inference.Tensor{sample(t, dtype, shape, 0), sample(t, dtype, shape, 1), sample(t, dtype, shape, 2)}
			batch, err := inference.Stack(parts)
			if err != nil {
				t.Fatalf("Stack(3 × %v): %v", parts[0], err)
			}
			wantShape := append([]int{3}, shape...)
			if batch.DType() != dtype || !slices.Equal(batch.Shape(), wantShape) || batch.Len() != 3*parts[0].Len() {
				t.Errorf("Stack(3 × %v) = %v with len %d, want %v%v with len %d",
					parts[0], batch, batch.Len(), dtype, wantShape, 3*parts[0].Len())
			}
			got, err := inference.Unstack(batch)
			if err != nil {
				t.Fatalf("Unstack(%v): %v", batch, err)
			}
			if len(got) != len(parts) {
				t.Fatalf("Unstack(%v) gave %d tensors, want %d", batch, len(got), len(parts))
			}
			for i := range parts {
				if !inference.Equal(got[i], parts[i]) {
					t.Errorf("Unstack(Stack(parts))[%d] = %v, differs from part %v", i, got[i], parts[i])
				}
			}
		}
	}
}

func TestStackLaysOutRowMajor(t *testing.T) {
	a := mustNew(t, []int{2}, []int64{1, 2})
	b := mustNew(t, []int{2}, []int64{3, 4})
	batch, err := inference.Stack([]inference.Tensor{a, b, a})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustData[int64](t, batch); !slices.Equal(got, []int64{1, 2, 3, 4, 1, 2}) {
		t.Errorf("Stack data = %v, want [1 2 3 4 1 2]", got)
	}
}

func TestStackCopies(t *testing.T) {
	data := []float32{1, 2}
	batch, err := inference.Stack([]inference.Tensor{mustNew(t, []int{2}, data)})
	if err != nil {
		t.Fatal(err)
	}
	data[0] = 42
	if got := mustData[float32](t, batch); !slices.Equal(got, []float32{1, 2}) {
		t.Errorf("after the part's data changed, the stack holds %v, want [1 2]", got)
	}
}

func TestStackRejects(t *testing.T) {
	f2 := mustNew(t, []int{2}, []float32{1, 2})
	tests := []struct {
		name   string
		ts     []inference.Tensor
		target error
	}{
		{"no tensors", nil, inference.ErrShape},
		{"shapes differ", []inference.Tensor{f2, mustNew(t, []int{3}, []float32{1, 2, 3})}, inference.ErrShape},
		{"ranks differ", []inference.Tensor{f2, mustNew(t, []int{1, 2}, []float32{1, 2})}, inference.ErrShape},
		{"types differ", []inference.Tensor{f2, f2, mustNew(t, []int{2}, []int32{1, 2})}, inference.ErrType},
		{"zero tensors", []inference.Tensor{{}, {}}, inference.ErrType},
	}
	for _, tt := range tests {
		_, err := inference.Stack(tt.ts)
		if err == nil {
			t.Errorf("%s: Stack succeeded", tt.name)
			continue
		}
		checkErr(t, err, tt.target)
	}
	_, err := inference.Stack([]inference.Tensor{f2, f2, mustNew(t, []int{3}, []float32{1, 2, 3})})
	checkErr(t, err, inference.ErrShape, "tensor 2", "float32[3]", "float32[2]")
}

func TestUnstackRejectsRankZero(t *testing.T) {
	_, err := inference.Unstack(mustNew(t, nil, []float32{1}))
	checkErr(t, err, inference.ErrShape, "rank-0")
	_, err = inference.Unstack(inference.Tensor{})
	checkErr(t, err, inference.ErrShape)
}

func TestUnstackEdges(t *testing.T) {
	parts, err := inference.Unstack(mustNew[int32](t, []int{0, 3}, nil))
	if err != nil || len(parts) != 0 {
		t.Errorf("Unstack(int32[0 3]) = %v, %v; want no tensors", parts, err)
	}
	parts, err = inference.Unstack(mustNew[bool](t, []int{2, 0}, nil))
	if err != nil || len(parts) != 2 {
		t.Fatalf("Unstack(bool[2 0]) = %v, %v; want 2 tensors", parts, err)
	}
	for _, p := range parts {
		if p.String() != "bool[0]" || p.Len() != 0 {
			t.Errorf("Unstack(bool[2 0]) part = %v with len %d, want bool[0] with len 0", p, p.Len())
		}
	}
	parts, err = inference.Unstack(mustNew(t, []int{3}, []uint8{7, 8, 9}))
	if err != nil || len(parts) != 3 {
		t.Fatalf("Unstack(uint8[3]) = %v, %v; want 3 tensors", parts, err)
	}
	for i, p := range parts {
		if want := mustNew(t, nil, []uint8{uint8(7 + i)}); !inference.Equal(p, want) {
			t.Errorf("Unstack(uint8[3])[%d] = %v %v, want rank 0 holding %d", i, p, mustData[uint8](t, p), 7+i)
		}
	}
}

func TestUnstackPartsAreCapped(t *testing.T) {
	batchData := []float32{1, 2, 3, 4, 5, 6}
	batch := mustNew(t, []int{3, 2}, batchData)
	parts, err := inference.Unstack(batch)
	if err != nil {
		t.Fatal(err)
	}
	p0 := mustData[float32](t, parts[0])
	if cap(p0) != 2 {
		t.Errorf("part 0 has capacity %d, want 2", cap(p0))
	}
	// The parts share the batch's array ...
	if p1 := mustData[float32](t, parts[1]); &p1[0] != &batchData[2] {
		t.Error("part 1 does not share the batch's array")
	}
	// ... but appending to one must not write into the next.
	_ = append(p0, 99, 98)
	if got := mustData[float32](t, parts[1]); !slices.Equal(got, []float32{3, 4}) {
		t.Errorf("after appending to part 0, part 1 holds %v, want [3 4]", got)
	}
	if !slices.Equal(batchData, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("after appending to part 0, the batch holds %v", batchData)
	}
}

// marshal is Tensor.MarshalBinary for a test that expects no error.
func marshal(t testing.TB, tn inference.Tensor) []byte {
	t.Helper()
	b, err := tn.MarshalBinary()
	if err != nil {
		t.Fatalf("%v.MarshalBinary: %v", tn, err)
	}
	return b
}

func TestTensorMarshalRoundTrip(t *testing.T) {
	var tensors []inference.Tensor
	for _, dtype := range allDTypes {
		for _, shape := range [][]int{nil, {1}, {5}, {2, 3}, {0}, {2, 0, 3}, {3, 0}, {1, 1, 1, 2}, {130}} {
			tensors = append(tensors, sample(t, dtype, shape, 3))
		}
	}
	tensors = append(tensors, inference.Tensor{})
	nan := float32(math.NaN())
	tensors = append(tensors, mustNew(t, []int{4}, []float32{nan, float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.MaxFloat32}))
	tensors = append(tensors, mustNew(t, []int{3}, []int64{math.MinInt64, -1, math.MaxInt64}))

	for _, tn := range tensors {
		b := marshal(t, tn)
		var got inference.Tensor
		if err := got.UnmarshalBinary(b); err != nil {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)): %v", tn, err)
			continue
		}
		if !inference.Equal(got, tn) {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)) = %v, not equal", tn, got)
		}
		if again := marshal(t, got); !bytes.Equal(again, b) {
			t.Errorf("%v re-encodes as %x, first encoding was %x", tn, again, b)
		}
	}
}

// TestTensorMarshalRoundTripDimensionAboveMaxInt32: a tensor with a zero-size
// dimension may have another dimension of any size; New accepts it, so
// UnmarshalBinary must read back what MarshalBinary wrote for it.
func TestTensorMarshalRoundTripDimensionAboveMaxInt32(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("int has 32 bits")
	}
	big := math.MaxInt32
	big++
	for _, dtype := range allDTypes {
		tn, err := inference.Zeros(dtype, []int{0, big})
		if err != nil {
			t.Fatalf("Zeros(%v, [0 %d]): %v", dtype, big, err)
		}
		var got inference.Tensor
		if err := got.UnmarshalBinary(marshal(t, tn)); err != nil {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)): %v", tn, err)
		} else if !inference.Equal(got, tn) {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)) = %v", tn, got)
		}
	}
}

// The encoding is a wire format (Beam coders carry it between workers), so
// its bytes are pinned here.
func TestTensorEncoding(t *testing.T) {
	tests := []struct {
		t    inference.Tensor
		want []byte
	}{
		{mustNew(t, []int{2}, []float32{1, -2}), []byte{1, 1, 2, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{mustNew(t, nil, []int64{-2}), []byte{2, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{mustNew(t, []int{1, 1}, []int32{258}), []byte{3, 2, 1, 1, 2, 1, 0, 0}},
		{mustNew(t, []int{3}, []bool{true, false, true}), []byte{4, 1, 3, 1, 0, 1}},
		{mustNew(t, []int{200}, make([]uint8, 200)), append([]byte{5, 1, 0xc8, 0x01}, make([]byte, 200)...)},
		{mustNew[uint8](t, []int{0, 4}, nil), []byte{5, 2, 0, 4}},
		{mustNew(t, []int{3}, []inference.Half{0x3c00, 0xc000, 0x7e00}), []byte{6, 1, 3, 0, 0x3c, 0, 0xc0, 0, 0x7e}}, // 1, -2, NaN
		{inference.Tensor{}, []byte{0, 0}},
	}
	for _, tt := range tests {
		if got := marshal(t, tt.t); !bytes.Equal(got, tt.want) {
			t.Errorf("%v.MarshalBinary() = %x, want %x", tt.t, got, tt.want)
		}
		got, err := tt.t.AppendBinary([]byte("prefix"))
		if err != nil || !bytes.Equal(got, append([]byte("prefix"), tt.want...)) {
			t.Errorf("%v.AppendBinary(prefix) = %x, %v; want prefix then %x", tt.t, got, err, tt.want)
		}
	}
}

func TestTensorMarshalOfUnstackedPart(t *testing.T) {
	parts, err := inference.Unstack(mustNew(t, []int{2, 2}, []int32{1, 2, 3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	var got inference.Tensor
	if err := got.UnmarshalBinary(marshal(t, parts[1])); err != nil {
		t.Fatal(err)
	}
	if want := mustNew(t, []int{2}, []int32{3, 4}); !inference.Equal(got, want) {
		t.Errorf("decoded part 1 = %v %v, want int32[2] [3 4]", got, mustData[int32](t, got))
	}
}

func TestTensorUnmarshalRejectsTruncated(t *testing.T) {
	for _, tn := range []inference.Tensor{
		sample(t, inference.Float32, []int{2, 3}, 1),
		sample(t, inference.Int64, nil, 1),
		sample(t, inference.Bool, []int{3}, 1),
		sample(t, inference.Uint8, []int{2, 0}, 1),
		sample(t, inference.Int32, []int{300}, 1),
		{},
	} {
		b := marshal(t, tn)
		for n := range len(b) {
			var got inference.Tensor
			err := got.UnmarshalBinary(b[:n])
			if err == nil {
				t.Errorf("UnmarshalBinary of the first %d of %d bytes of %v succeeded with %v", n, len(b), tn, got)
				continue
			}
			if !errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrType) {
				t.Errorf("UnmarshalBinary of %d of %d bytes of %v: error %q wraps neither ErrShape nor ErrType", n, len(b), tn, err)
			}
		}
	}
}

func TestTensorUnmarshalRejectsTrailingBytes(t *testing.T) {
	tensors := []inference.Tensor{{}}
	for _, dtype := range allDTypes {
		tensors = append(tensors, sample(t, dtype, []int{2}, 0), sample(t, dtype, nil, 0))
	}
	for _, tn := range tensors {
		t.Run(tn.String(), func(t *testing.T) {
			var got inference.Tensor
			err := catch(func() error { return got.UnmarshalBinary(append(marshal(t, tn), 0, 1, 2)) })
			checkErr(t, err, inference.ErrShape, "3 trailing bytes")
		})
	}
}

func TestTensorUnmarshalRejectsUnknownDType(t *testing.T) {
	for _, b := range [][]byte{
		{99, 0, 1},
		{0xff, 1, 1, 0},
		{0, 1, 1, 0}, // DType 0 is only the zero Tensor, which has rank 0.
		{0},
	} {
		var got inference.Tensor
		err := got.UnmarshalBinary(b)
		if err == nil {
			t.Errorf("UnmarshalBinary(%x) succeeded with %v", b, got)
			continue
		}
		checkErr(t, err, inference.ErrType)
	}
}

func TestTensorUnmarshalRejectsBadHeader(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"rank larger than the input", []byte{1, 9, 1, 1}},
		{"rank varint overflows", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"dimension varint unterminated", []byte{1, 1, 0x80}},
		{"dimension above any length", binary.AppendUvarint([]byte{5, 1}, math.MaxUint64)},
		{"element count overflows", func() []byte {
			b := []byte{5, 4}
			for range 4 {
				b = binary.AppendUvarint(b, math.MaxInt32)
			}
			return b
		}()},
	}
	for _, tt := range tests {
		var got inference.Tensor
		err := got.UnmarshalBinary(tt.b)
		if err == nil {
			t.Errorf("%s: UnmarshalBinary(%x) succeeded with %v", tt.name, tt.b, got)
			continue
		}
		checkErr(t, err, inference.ErrShape)
	}
}

func TestTensorUnmarshalHugeShapeDoesNotAllocate(t *testing.T) {
	for _, shape := range [][]int{{1 << 30, 1 << 30}, {1 << 14, 1 << 14}, {1 << 28}} {
		for _, dtype := range allDTypes {
			b := []byte{byte(dtype)}
			b = binary.AppendUvarint(b, uint64(len(shape)))
			for _, d := range shape {
				b = binary.AppendUvarint(b, uint64(d))
			}
			b = append(b, 1, 2, 3, 4, 5, 6, 7, 8)

			var got inference.Tensor
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := got.UnmarshalBinary(b)
			runtime.ReadMemStats(&after)

			checkErr(t, err, inference.ErrShape)
			// The declared data is at least 256 MiB; an error message and a
			// shape are a few hundred bytes.
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("UnmarshalBinary of a %v%v header in %d bytes allocated %d bytes", dtype, shape, len(b), n)
			}
		}
	}
}

func TestTensorUnmarshalFailureKeepsReceiver(t *testing.T) {
	want := sample(t, inference.Int32, []int{2}, 5)
	got := want
	if err := got.UnmarshalBinary([]byte{1, 1, 4, 0}); err == nil {
		t.Fatal("UnmarshalBinary of a truncated tensor succeeded")
	}
	if !inference.Equal(got, want) {
		t.Errorf("a failed UnmarshalBinary changed the tensor to %v", got)
	}
}

// FuzzTensorUnmarshal feeds UnmarshalBinary arbitrary bytes. It must not
// panic, every error must carry ErrShape or ErrType, and a tensor it accepts
// must encode to bytes that decode to the same tensor and encode again the
// same way.
func FuzzTensorUnmarshal(f *testing.F) {
	for _, dtype := range allDTypes {
		for _, shape := range [][]int{nil, {3}, {2, 0}, {2, 2}} {
			f.Add(marshal(f, sample(f, dtype, shape, 1)))
		}
	}
	f.Add(marshal(f, inference.Tensor{}))
	f.Add([]byte{1, 2, 0xff, 0xff, 0xff, 0xff, 0x03, 0xff, 0xff, 0xff, 0xff, 0x03, 0})
	f.Add([]byte{4, 1, 2, 1})
	f.Add([]byte{9, 0})

	f.Fuzz(func(t *testing.T, b []byte) {
		var got inference.Tensor
		if err := got.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrType) {
				t.Fatalf("UnmarshalBinary(%x): error %q wraps neither ErrShape nor ErrType", b, err)
			}
			return
		}
		enc := marshal(t, got)
		if len(enc) > len(b) {
			t.Fatalf("UnmarshalBinary(%x) = %v, which encodes longer, as %x", b, got, enc)
		}
		var again inference.Tensor
		if err := again.UnmarshalBinary(enc); err != nil {
			t.Fatalf("UnmarshalBinary(%x) = %v, whose encoding %x does not decode: %v", b, got, enc, err)
		}
		if !inference.Equal(again, got) {
			t.Fatalf("UnmarshalBinary(%x) = %v, whose encoding %x decodes as %v", b, got, enc, again)
		}
		if enc2 := marshal(t, again); !bytes.Equal(enc2, enc) {
			t.Fatalf("%v encodes as %x, then as %x", got, enc, enc2)
		}
	})
}

// WithData makes a tensor of another's type and shape over new data
// without allocating, and refuses data that does not fit.
func TestWithData(t *testing.T) {
	a, err := inference.New([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	data := []float32{6, 5, 4, 3, 2, 1}
	b, err := inference.WithData(a, data)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := inference.New([]int{2, 3}, data)
	if !inference.Equal(b, want) {
		t.Errorf("WithData = %v %v, want %v", b, data, want)
	}
	if got, _ := inference.Data[float32](b); &got[0] != &data[0] {
		t.Error("WithData copied the data")
	}
	if n := testing.AllocsPerRun(100, func() { b, _ = inference.WithData(a, data) }); n != 0 {
		t.Errorf("WithData allocates %v times, want 0", n)
	}
	if _, err := inference.WithData(a, []int64{1, 2, 3, 4, 5, 6}); !errors.Is(err, inference.ErrType) {
		t.Errorf("WithData of int64 data for a float32 tensor: %v, want ErrType", err)
	}
	if _, err := inference.WithData(a, data[:5]); !errors.Is(err, inference.ErrShape) {
		t.Errorf("WithData of 5 values for 6: %v, want ErrShape", err)
	}
}

// Bytes is the elements as they lie in memory, for every element type of
// fixed size: ByteSize bytes, the same as the encoding's elements on a
// little-endian machine (every one the project builds for), shared with
// the tensor; nil without elements, and for strings.
func TestTensorBytes(t *testing.T) {
	if b := sample(t, inference.String, []int{2}, 1).Bytes(); b != nil {
		t.Errorf("Bytes of strings = %x, want nil", b)
	}
	for _, dt := range allDTypes {
		if dt == inference.String {
			continue
		}
		x := sample(t, dt, []int{2, 3}, 7)
		got := x.Bytes()
		enc, err := x.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != x.ByteSize() || !bytes.Equal(got, enc[len(enc)-len(got):]) {
			t.Errorf("%v: Bytes %x, want the encoding's elements %x", dt, got, enc)
		}
		if len(got) > 0 {
			got[0] ^= 1
			if again := x.Bytes(); again[0] != got[0] {
				t.Errorf("%v: Bytes does not share the tensor's array", dt)
			}
		}
		empty, err := inference.Zeros(dt, []int{0, 3})
		if err != nil {
			t.Fatal(err)
		}
		if b := empty.Bytes(); b != nil {
			t.Errorf("%v: Bytes of an empty tensor is %x, want nil", dt, b)
		}
	}
}

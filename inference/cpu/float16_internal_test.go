package cpu

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Cast converts float16 from and to every element type: exactly to
// float32, by truncation to the integers, nonzero (NaN too) to true; and
// to float16 rounding to nearest even, from the integers through float32
// (exact below 2²⁴; beyond, ±Inf either way).
func TestCastFloat16(t *testing.T) {
	h := func(v ...float32) inference.Tensor {
		b := make([]inference.Half, len(v))
		for i, x := range v {
			b[i] = inference.HalfFromFloat32(x)
		}
		return tensorOf(t, []int{len(v)}, b...)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cast := func(x inference.Tensor, to int64) inference.Tensor {
		t.Helper()
		return runKernel(t, testNode("Cast", 19, map[string]graph.Attr{"to": {Type: graph.AttrInt, Int: to}}, 1), x)[0]
	}
	x := h(0, -2.5, 1000.7, 65504, 6e-8, -inf, nan)
	if got, want := cast(x, 1), tensorOf(t, []int{7}, float32(0), -2.5, 1000.5, 65504, 0x1p-24, -inf, nan); !sameBits(got, want) {
		t.Errorf("Cast(to=1) of %v: got %v, want %v", fmtValues(x), fmtValues(got), fmtValues(want))
	}
	if got, want := cast(x, 9), tensorOf(t, []int{7}, false, true, true, true, true, true, true); !inference.Equal(got, want) {
		t.Errorf("Cast(to=9) of %v: got %v, want %v", fmtValues(x), fmtValues(got), fmtValues(want))
	}
	if got := cast(x, 10); !inference.Equal(got, x) {
		t.Errorf("Cast(to=10) of %v: got %v", fmtValues(x), fmtValues(got))
	}
	// To the integers through int64, as from float32 (NaN and ±Inf, whose
	// conversion Go leaves to the machine, are left out).
	x = h(0, -2.5, 1000.7, 65504, 6e-8)
	for to, want := range map[int64]inference.Tensor{
		7: tensorOf(t, []int{5}, int64(0), -2, 1000, 65504, 0),
		6: tensorOf(t, []int{5}, int32(0), -2, 1000, 65504, 0),
		2: tensorOf(t, []int{5}, uint8(0), 254, 232, 224, 0),
	} {
		if got := cast(x, to); !inference.Equal(got, want) {
			t.Errorf("Cast(to=%d) of %v: got %v, want %v", to, fmtValues(x), fmtValues(got), fmtValues(want))
		}
	}
	for _, tc := range []struct {
		x    inference.Tensor
		want inference.Tensor
	}{
		{tensorOf(t, []int{6}, float32(1+0x1p-11), 2049, 65519.99, 65520, 0x1p-25, 3*0x1p-25), h(1, 2048, 65504, inf, 0, 2*0x1p-24)},
		{tensorOf(t, []int{5}, int64(2049), 2051, -65520, 1<<24+1, math.MaxInt64), h(2048, 2052, -inf, inf, inf)},
		{tensorOf(t, []int{3}, int32(-4097), 70000, 0), h(-4096, inf, 0)},
		{tensorOf(t, []int{2}, uint8(255), 3), h(255, 3)},
		{tensorOf(t, []int{2}, true, false), h(1, 0)},
	} {
		if got := cast(tc.x, 10); !inference.Equal(got, tc.want) {
			t.Errorf("Cast(to=10) of %v: got %v, want %v", fmtValues(tc.x), fmtValues(got), fmtValues(tc.want))
		}
	}
	// Cast-1 names the type.
	got := runKernel(t, testNode("Cast", 1, map[string]graph.Attr{"to": {Type: graph.AttrString, String: "FLOAT16"}}, 1), tensorOf(t, []int{1}, float32(0.1)))[0]
	if !inference.Equal(got, h(0.1)) {
		t.Errorf("Cast-1(to=FLOAT16) of 0.1 = %v", fmtValues(got))
	}
}

// fmtValues shows a tensor with its elements.
func fmtValues(x inference.Tensor) string {
	var v any
	switch x.DType() {
	case inference.Float16:
		v = dataOf[inference.Half](x)
	case inference.Float32:
		v = dataOf[float32](x)
	case inference.Int64:
		v = dataOf[int64](x)
	case inference.Int32:
		v = dataOf[int32](x)
	case inference.Uint8:
		v = dataOf[uint8](x)
	case inference.Bool:
		v = dataOf[bool](x)
	}
	return fmt.Sprint(x, v)
}

// sameBits reports whether two float32 tensors hold the same values, NaN
// matching any NaN.
func sameBits(a, b inference.Tensor) bool {
	if a.DType() != inference.Float32 || !slices.Equal(a.Shape(), b.Shape()) {
		return false
	}
	x, y := dataOf[float32](a), dataOf[float32](b)
	for i := range x {
		if x[i] != y[i] && !(x[i] != x[i] && y[i] != y[i]) {
			return false
		}
	}
	return true
}

// Every kernel, given float16 inputs, which the compiled graphs never
// hand it (passes.ComputeFloat16InFloat32 computes them in float32),
// either computes or fails with an error: none panics (RunNode returns a
// panic as an *inference.PanicError).
func TestKernelsOnFloat16DoNotPanic(t *testing.T) {
	x := tensorOf(t, []int{2, 3}, make([]inference.Half, 6)...)
	for i := range dataOf[inference.Half](x) {
		dataOf[inference.Half](x)[i] = inference.HalfFromFloat32(float32(i) - 2.5)
	}
	y := tensorOf(t, []int{3}, inference.Half(0x3c00), 0x4000, 0xbc00)
	ops := slices.Sorted(maps.Keys(kernels))
	for _, op := range ops {
		for _, in := range [][]inference.Tensor{{x}, {x, y}, {x, y, y}} {
			n := &graph.Node{Name: "n", OpType: op, Inputs: []string{"a", "b", "c"}[:len(in)], Outputs: []string{"o"}, Attrs: map[string]graph.Attr{}}
			_, err := RunNode(nil, n, 17, in)
			if pe := (*inference.PanicError)(nil); errors.As(err, &pe) {
				t.Errorf("%s on %d float16 inputs: %v", op, len(in), err)
			}
		}
	}
}

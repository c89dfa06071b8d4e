package opsem

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The rules at the extremes of the values a model may give them: int64's
// and float's ends, NaN and ±Inf, products past int, and zero dimensions
// next to huge ones. A result is exact or an error wrapping
// inference.ErrShape that names the operand; never a wrapped value.

const (
	minI64 = math.MinInt64
	maxI64 = math.MaxInt64
	big    = math.MaxInt32 // the largest dimension a rule makes from values
)

// asInt is v as an int, and false where int is too small for it (on a
// 32-bit platform), where the cases that need it do not run.
func asInt(v int64) (int, bool) { return int(v), int64(int(v)) == v }

// wantShapeErr fails the test unless err wraps inference.ErrShape and its
// message holds each of the words (the operand's name, a value).
func wantShapeErr(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("%s: err %v, want ErrShape", what, err)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not name %q", what, err, w)
		}
	}
}

func TestChecked(t *testing.T) {
	for _, tc := range []struct {
		op       string
		a, b     int64
		want     int64
		overflow bool
	}{
		{"+", maxI64, 1, 0, true},
		{"+", minI64, -1, 0, true},
		{"+", maxI64, minI64, -1, false},
		{"-", minI64, 1, 0, true},
		{"-", 0, minI64, 0, true},
		{"-", -1, minI64, maxI64, false},
		{"-", maxI64, -1, 0, true},
		{"*", minI64, -1, 0, true},
		{"*", -1, minI64, 0, true},
		{"*", 1 << 32, 1 << 31, 0, true},
		{"*", 1 << 31, 1 << 31, 1 << 62, false},
		{"*", 2, 1 << 62, 0, true},
		{"*", -2, 1 << 62, minI64, false},
		{"*", 0, minI64, 0, false},
	} {
		var c checked
		var got int64
		switch tc.op {
		case "+":
			got = c.add(tc.a, tc.b)
		case "-":
			got = c.sub(tc.a, tc.b)
		case "*":
			got = c.mul(tc.a, tc.b)
		}
		if c.overflow != tc.overflow || !tc.overflow && got != tc.want {
			t.Errorf("%d %s %d = %d, overflow %v; want %d, overflow %v", tc.a, tc.op, tc.b, got, c.overflow, tc.want, tc.overflow)
		}
	}
	for _, tc := range []struct {
		f    float64
		want int64
		ok   bool
	}{
		{2.7, 2, true}, {-2.7, -2, true}, {-0x1p63, minI64, true}, {0x1p63, 0, false},
		{math.Nextafter(0x1p63, 0), 1<<63 - 1024, true}, {-0x1p64, 0, false},
		{math.NaN(), 0, false}, {math.Inf(1), 0, false}, {math.Inf(-1), 0, false},
	} {
		if got, ok := truncInt64(tc.f); ok != tc.ok || got != tc.want {
			t.Errorf("truncInt64(%v) = %d, %v; want %d, %v", tc.f, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRangeCountIntExtremes(t *testing.T) {
	for _, tc := range []struct {
		start, limit, delta int64
		want                int // -1: an error
	}{
		{minI64, maxI64, 1, -1},         // 2⁶⁴−1 elements, not an empty range
		{maxI64, minI64, -1, -1},        // the same downward
		{0, 1 << 40, 1, -1},             // more than 2³¹−1
		{5, 1, 0, -1},                   // delta 0
		{minI64, maxI64, maxI64, 3},     // −2⁶³, −1, 2⁶³−2
		{maxI64, minI64, minI64, 2},     // 2⁶³−1, −1
		{0, maxI64, maxI64, 1},          //
		{minI64, minI64 + 3, 1, 3},      //
		{maxI64, maxI64 - 2, minI64, 1}, //
		{minI64, maxI64, -1, 0},         // away from the limit: empty
		{10, 6, -3, 2},                  // test_range_int32_type_negative_delta
		{0, big, 1, big},                //
		{0, big + 1, 1, -1},             //
	} {
		got, err := RangeCountInt(tc.start, tc.limit, tc.delta)
		if tc.want < 0 {
			wantShapeErr(t, "RangeCountInt", err, "start", "limit", "delta")
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("RangeCountInt(%d, %d, %d) = %d, %v; want %d", tc.start, tc.limit, tc.delta, got, err, tc.want)
		}
	}
}

func TestRangeCountFloatExtremes(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		start, limit, delta float64
		want                int // -1: an error
	}{
		{inf, inf, 1, -1}, // (limit − start) is NaN
		{-inf, -inf, 1, -1},
		{0, inf, 1, -1},
		{-inf, 0, 1, -1},
		{inf, 0, 1, -1},
		{0, 1, inf, -1},
		{0, 1, -inf, -1},
		{nan, 1, 1, -1},
		{0, nan, 1, -1},
		{0, 1, nan, -1},
		{0, 1, 0, -1},
		{0, 1, math.Copysign(0, -1), -1},
		{0, 1e10, 1, -1},
		{0, 1, 1e-30, -1},
		{-math.MaxFloat32, math.MaxFloat32, 1e-45, -1},
		{-math.MaxFloat64, math.MaxFloat64, 1, -1}, // the span overflows to +Inf
		{math.MaxFloat64, -math.MaxFloat64, 1, 0},  // … to −Inf: empty
		{1, 5, 2, 2},
		{5, 1, 1, 0},
		{0, 1, math.MaxFloat32, 1},
	} {
		got, err := RangeCountFloat(tc.start, tc.limit, tc.delta)
		if tc.want < 0 {
			wantShapeErr(t, "RangeCountFloat", err, "start", "limit", "delta")
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("RangeCountFloat(%v, %v, %v) = %d, %v; want %d", tc.start, tc.limit, tc.delta, got, err, tc.want)
		}
	}
}

func TestInt64sFloats(t *testing.T) {
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e20, -1e20, 0x1p63} {
		x, _ := inference.New([]int{2}, []float32{1, v})
		_, err := Int64s(x)
		wantShapeErr(t, "Int64s", err, "element 1")
	}
	x, _ := inference.New([]int{3}, []float32{2.7, -2.7, -0x1p63})
	if v, err := Int64s(x); err != nil || !slices.Equal(v, []int64{2, -2, minI64}) {
		t.Errorf("Int64s of 2.7, -2.7, -2⁶³ = %v, %v; want [2 -2 -2⁶³]", v, err)
	}
}

func TestOneHotDepthExtremes(t *testing.T) {
	for _, depth := range []int64{-1, minI64, big + 1, maxI64} {
		_, _, _, err := OneHot(node("OneHot", 11, nil), []int{3}, []int64{depth}, 2)
		wantShapeErr(t, "OneHot depth", err, "depth")
	}
	// Within the bound, the output's element count may still overflow.
	_, _, _, err := OneHot(node("OneHot", 11, nil), []int{big, big}, []int64{big}, 2)
	wantShapeErr(t, "OneHot of [2³¹−1 2³¹−1] with depth 2³¹−1", err, "indices", "depth")
	// A zero dimension makes any depth an empty output.
	if _, d, out, err := OneHot(node("OneHot", 11, nil), []int{0, big}, []int64{big}, 2); err != nil || d != big || !slices.Equal(out, []int{0, big, big}) {
		t.Errorf("OneHot of [0 2³¹−1] with depth 2³¹−1: %d, %v, %v", d, out, err)
	}
}

func TestDimsExtremes(t *testing.T) {
	for _, v := range [][]int64{{-1}, {minI64}, {2, big + 1}, {maxI64}, {big, big, big}} {
		_, err := Dims(v, "shape")
		wantShapeErr(t, "Dims", err, "shape")
	}
	if d, err := Dims([]int64{0, big, big, big}, "shape"); err != nil || !slices.Equal(d, []int{0, big, big, big}) {
		t.Errorf("Dims [0 2³¹−1 ×3] = %v, %v: no elements, no overflow", d, err)
	}
}

func TestCountStridesOfEmptyShapes(t *testing.T) {
	if h, ok := asInt(1 << 40); ok {
		shape := []int{0, h, h}
		if c := Count(shape[1:]); c != 0 {
			t.Errorf("Count of [2⁴⁰ 2⁴⁰] in %v = %d, want 0", shape, c)
		}
		// No elements: nothing to loop over, outside the axis or in it.
		if outer, n, inner := SplitAxis(shape, 0); outer != 0 || n != 0 || inner != 0 {
			t.Errorf("SplitAxis(%v, 0) = %d, %d, %d; want 0, 0, 0", shape, outer, n, inner)
		}
		if s := Strides(shape); !slices.Equal(s, []int{0, h, 1}) {
			t.Errorf("Strides(%v) = %v, want [0 2⁴⁰ 1]", shape, s)
		}
	}
	if s := Strides([]int{2, 0, 3}); !slices.Equal(s, []int{0, 3, 1}) {
		t.Errorf("Strides([2 0 3]) = %v, want [0 3 1]", s)
	}
	if c := Count([]int{2, 3, 4}); c != 24 {
		t.Errorf("Count([2 3 4]) = %d", c)
	}
}

func TestReshape(t *testing.T) {
	n := func(opset int64, attrs map[string]graph.Attr) Node { return node("Reshape", opset, attrs) }
	allowZero := map[string]graph.Attr{"allowzero": int1(1)}
	for _, tc := range []struct {
		name  string
		n     Node
		data  []int
		shape []int64
		want  []int // nil: an error
	}{
		{"infer", n(13, nil), []int{2, 3}, []int64{-1}, []int{6}},
		{"copy and infer", n(13, nil), []int{2, 3}, []int64{0, -1}, []int{2, 3}},
		{"empty, -1 from the rest", n(13, nil), []int{0, 3}, []int64{-1, 3}, []int{0, 3}},
		{"empty, 0 copied next to -1", n(13, nil), []int{0, 3}, []int64{0, -1}, nil},
		{"allowzero with -1", n(14, allowZero), []int{0, 3}, []int64{0, -1}, nil},
		{"allowzero", n(14, allowZero), []int{0, 3}, []int64{3, 0}, []int{3, 0}},
		{"empty, huge dimensions after a zero", n(14, allowZero), []int{0}, []int64{big, big, big, 0}, []int{big, big, big, 0}},
		{"overflow", n(13, nil), []int{2, 3}, []int64{big, big, big}, nil},
		{"overflow with -1", n(13, nil), []int{2, 3}, []int64{big, big, big, -1}, nil},
		{"dimension above 2³¹−1", n(13, nil), []int{2, 3}, []int64{big + 1}, nil},
		{"MinInt64", n(13, nil), []int{2, 3}, []int64{minI64, -1}, nil},
		{"MaxInt64", n(13, nil), []int{2, 3}, []int64{maxI64}, nil},
		{"two -1", n(13, nil), []int{2, 3}, []int64{-1, -1}, nil},
		{"not a multiple", n(13, nil), []int{2, 3}, []int64{4, -1}, nil},
		{"copy past the rank", n(13, nil), []int{6}, []int64{1, 0}, nil},
		{"Reshape-1", n(1, map[string]graph.Attr{"shape": ints(3, -1)}), []int{2, 3}, nil, []int{3, 2}},
	} {
		got, err := Reshape(tc.n, tc.data, tc.shape)
		if tc.want == nil {
			wantShapeErr(t, tc.name, err, "shape")
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: Reshape(%v, %v) = %v, %v; want %v", tc.name, tc.data, tc.shape, got, err, tc.want)
		}
	}
	if _, err := Reshape(n(1, nil), []int{2}, nil); !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("Reshape-1 without a shape attribute: %v, want ErrBadModel", err)
	}
}

func TestSliceExtremes(t *testing.T) {
	for _, tc := range []struct {
		start, end, step  int64
		dim, first, count int64
	}{
		{minI64, maxI64, 1, 5, 0, 5},
		{maxI64, minI64, -1, 5, 4, 5},
		{0, maxI64, maxI64, 5, 0, 1},  // end − start + step − 1 overflows
		{-1, minI64, minI64, 5, 4, 1}, // −step overflows
		{maxI64, minI64, minI64, 5, 4, 1},
		{minI64, minI64, 1, 5, 0, 0},
		{maxI64, maxI64, -1, 5, 0, 0},
		{minI64, maxI64, minI64, 0, 0, 0},
		{minI64, maxI64, maxI64, 0, 0, 0},
		{1, 5, 3, 5, 1, 2},
		{4, minI64, -3, 5, 4, 2},
		{0, maxI64, 1, maxI64, 0, maxI64},
		{maxI64, minI64, -1, maxI64, maxI64 - 1, maxI64},
	} {
		dim, ok := asInt(tc.dim)
		if !ok {
			continue
		}
		first, count, err := SliceRange(tc.start, tc.end, tc.step, dim)
		if err != nil || int64(first) != tc.first || int64(count) != tc.count {
			t.Errorf("SliceRange(%d, %d, %d, %d) = %d, %d, %v; want %d, %d", tc.start, tc.end, tc.step, tc.dim, first, count, err, tc.first, tc.count)
		}
	}
	// A step that reaches nothing past the first element is 1.
	kept, out, err := Slice(node("Slice", 13, nil), []int{5, 5}, []int64{-1, maxI64}, []int64{minI64, minI64}, nil, []int64{minI64, -1})
	if err != nil || !slices.Equal(out, []int{1, 5}) || kept[0] != (SliceAxis{Axis: 0, First: 4, Count: 1, Step: 1}) || kept[1].Step != -1 {
		t.Errorf("Slice with step -2⁶³: %+v, %v, %v", kept, out, err)
	}
	_, _, err = Slice(node("Slice", 13, nil), []int{5}, []int64{0}, []int64{5}, nil, []int64{0})
	wantShapeErr(t, "Slice step 0", err, "step")
}

func TestPadExtremes(t *testing.T) {
	pad := func(shape []int, pads ...int64) (Pad, error) {
		return PadGeometry(node("Pad", 18, nil), shape, pads, nil)
	}
	for _, pads := range [][]int64{
		{minI64, 0}, {0, minI64}, {minI64, minI64}, // −(−2⁶³) overflows
		{-maxI64, -maxI64},                         // crops more than there is
		{-3, -2},                                   // …by one
		{maxI64, 0}, {0, maxI64}, {maxI64, maxI64}, // sizes past 2³¹−1, or int64
		{big, 0},
	} {
		_, err := pad([]int{4}, pads...)
		wantShapeErr(t, "Pad", err, "pads", "data")
	}
	// Each dimension within 2³¹−1, their product beyond int.
	_, err := pad([]int{2, 2, 2}, 0, 0, 0, big-2, big-2, big-2)
	wantShapeErr(t, "Pad to [2³¹−1 ×3]", err, "pads", "data")
	if p, err := pad([]int{4}, -4, 0); err != nil || !slices.Equal(p.Out, []int{0}) {
		t.Errorf("Pad [4] by [-4 0]: %v, %v; want [0]", p.Out, err)
	}
	if p, err := pad([]int{4}, -1, big-3); err != nil || p.Dims[0] != (PadDim{Crop: 1, Kept: 3, Size: big}) {
		t.Errorf("Pad [4] by [-1 2³¹−4]: %+v, %v", p.Dims, err)
	}
}

func TestTileExtremes(t *testing.T) {
	tile := func(shape []int, repeats ...int64) ([]int, error) {
		_, out, err := TileRepeats(node("Tile", 13, nil), shape, repeats, nil, nil)
		return out, err
	}
	for _, tc := range []struct {
		shape   []int
		repeats []int64
	}{
		{[]int{2}, []int64{1 << 62}}, // 2·2⁶² wraps to −2⁶³
		{[]int{2}, []int64{maxI64}},
		{[]int{2}, []int64{-1}},
		{[]int{2}, []int64{minI64}},
		{[]int{1}, []int64{big + 1}},
		{[]int{1, 1, 1}, []int64{big, big, big}}, // each fits, the product does not
	} {
		_, err := tile(tc.shape, tc.repeats...)
		wantShapeErr(t, "Tile", err, "repeats", "input")
	}
	if out, err := tile([]int{0, 2}, maxI64, 3); math.MaxInt == maxI64 && (err != nil || !slices.Equal(out, []int{0, 6})) {
		t.Errorf("Tile [0 2] by [2⁶³−1 3] = %v, %v; want [0 6]", out, err)
	}
	_, _, err := TileRepeats(node("Tile", 1, nil), []int{2}, nil, []int64{1 << 62}, []int64{0})
	wantShapeErr(t, "Tile-1", err, "repeats")
}

func TestExpandExtremes(t *testing.T) {
	for _, shape := range [][]int64{{big, big, big}, {-1}, {minI64}, {big + 1}, {maxI64}} {
		_, err := ExpandShape([]int{1}, shape)
		wantShapeErr(t, "Expand", err, "shape")
	}
	if out, err := ExpandShape([]int{3, 0}, []int64{big, 1, 1}); math.MaxInt == maxI64 && (err != nil || !slices.Equal(out, []int{big, 3, 0})) {
		t.Errorf("Expand [3 0] to [2³¹−1 1 1] = %v, %v; want [2³¹−1 3 0]", out, err)
	}
}

func TestResizeExtremes(t *testing.T) {
	n := func(opset int64, attrs map[string]graph.Attr) Node { return node("Resize", opset, attrs) }
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, s := range []float32{inf, -inf, nan, 0, -1, 1e30} {
		_, err := Resize(n(13, nil), []int{1, 2}, nil, []float32{1, s}, nil)
		wantShapeErr(t, "Resize-13 scales", err, "scale")
		_, err = Resize(n(10, nil), []int{1, 2}, nil, []float32{1, s}, nil)
		wantShapeErr(t, "Resize-10 scales", err, "scale")
		_, err = Upsample(node("Upsample", 7, map[string]graph.Attr{"scales": {Type: graph.AttrFloats, Floats: []float32{1, s}}}), []int{1, 2}, nil)
		wantShapeErr(t, "Upsample-7 scales", err, "scale")
	}
	for _, sizes := range [][]int64{{1, big + 1}, {1, -1}, {1, maxI64}, {1, minI64}} {
		_, err := Resize(n(13, nil), []int{1, 2}, nil, nil, sizes)
		wantShapeErr(t, "Resize sizes", err, "sizes")
	}
	// Each scale fine, the output's count past int.
	_, err := Resize(n(13, nil), []int{1, 1, 1}, nil, []float32{1 << 30, 1 << 30, 1 << 30}, nil)
	wantShapeErr(t, "Resize to [2³⁰ ×3]", err, "output")
	// not_smaller scales every axis by the largest ratio, 2³¹−1: axis 2,
	// 2³³ long, would be about 2⁶⁴ (beyond what a float converts to int).
	if h, ok := asInt(1 << 33); ok {
		notSmaller := n(18, map[string]graph.Attr{"keep_aspect_ratio_policy": str("not_smaller")})
		_, err = Resize(notSmaller, []int{0, 1, h}, nil, nil, []int64{0, big, 1})
		wantShapeErr(t, "Resize not_smaller", err, "sizes", "keep_aspect_ratio_policy")
	}
	// A zero-length axis resizes to zero whatever the scale.
	if g, err := Resize(n(13, nil), []int{0, 2}, nil, []float32{1e30, 2}, nil); err != nil || !slices.Equal(g.Out, []int{0, 4}) {
		t.Errorf("Resize [0 2] by [1e30 2] = %v, %v; want [0 4]", g.Out, err)
	}
}

func TestWindowExtremes(t *testing.T) {
	attrs := func(kv ...any) map[string]graph.Attr {
		m := map[string]graph.Attr{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(graph.Attr)
		}
		return m
	}
	for _, tc := range []struct {
		name, attr string
		attrs      map[string]graph.Attr
	}{
		{"dilation 2⁶²", "dilations", attrs("dilations", ints(1<<62))}, // (3−1)·2⁶² wraps to −2⁶³
		{"pads 2⁶³−1", "pads", attrs("pads", ints(maxI64, maxI64))},
		{"SAME_UPPER, dilation 2⁶²", "dilations", attrs("auto_pad", str("SAME_UPPER"), "dilations", ints(1<<62))},
	} {
		_, err := SlidingWindow(node("MaxPool", 12, tc.attrs), []int{5}, []int{3}, true)
		wantShapeErr(t, "SlidingWindow "+tc.name, err, tc.attr)
	}
	// Window attributes are at most 2³¹−1: a stride near 2⁶³ is refused.
	_, err := SlidingWindow(node("MaxPool", 12, attrs("strides", ints(maxI64), "pads", ints(0, maxI64-5))), []int{5}, []int{3}, true)
	wantShapeErr(t, "SlidingWindow, stride and end pad near 2⁶³", err, "strides")
	for _, tc := range []struct {
		name  string
		attrs map[string]graph.Attr
	}{
		{"stride 2⁶²", attrs("strides", ints(1<<62))}, // 2⁶²·4 wraps to 0
		{"dilation 2⁶²", attrs("dilations", ints(1<<62))},
		{"output_padding 2⁶³−1", attrs("output_padding", ints(maxI64))},
		{"SAME_UPPER, stride 2⁶²", attrs("auto_pad", str("SAME_UPPER"), "strides", ints(1<<62))},
		{"output_shape −2⁶³", attrs("output_shape", ints(minI64))},
		{"pads −2⁶³", attrs("pads", ints(minI64, 0))},
	} {
		_, err := TransposedWindow(node("ConvTranspose", 11, tc.attrs), []int{5}, []int{3})
		wantShapeErr(t, "TransposedWindow "+tc.name, err)
	}
	// group 2⁶² with W of 4 channels per group: 4·2⁶² wraps to X's 0.
	_, _, err = ConvOperands(node("Conv", 11, attrs("group", int1(1<<62))), []int{1, 0, 5}, []int{0, 4, 3}, false)
	wantShapeErr(t, "ConvOperands group 2⁶²", err, "group")
	_, _, err = ConvOperands(node("Conv", 11, attrs("group", int1(minI64))), []int{1, 4, 5}, []int{4, 1, 3}, false)
	wantShapeErr(t, "ConvOperands group −2⁶³", err, "group")
}

func TestBlocksizeExtremes(t *testing.T) {
	for _, b := range []int64{1 << 32, maxI64, minI64, 0, big + 1} { // (2³²)² wraps to 0
		_, err := DepthToSpace(node("DepthToSpace", 13, map[string]graph.Attr{"blocksize": int1(b)}), []int{1, 4, 1, 1})
		wantShapeErr(t, "DepthToSpace", err, "blocksize")
		_, err = SpaceToDepth(node("SpaceToDepth", 13, map[string]graph.Attr{"blocksize": int1(b)}), []int{1, 1, 2, 2})
		wantShapeErr(t, "SpaceToDepth", err, "blocksize")
	}
	// An empty input with huge H: H·blocksize overflows.
	if h, ok := asInt(1 << 62); ok {
		_, err := DepthToSpace(node("DepthToSpace", 13, map[string]graph.Attr{"blocksize": int1(4)}), []int{0, 16, h, 1})
		wantShapeErr(t, "DepthToSpace of [0 16 2⁶² 1]", err, "blocksize")
	}
}

func TestSplitExtremes(t *testing.T) {
	n := node("Split", 13, nil)
	n.Outputs = []string{"a", "b", "c"}
	// The parts' sum wraps to the axis' 2.
	_, _, err := SplitParts(n, []int{2}, []int64{maxI64, maxI64, 4})
	wantShapeErr(t, "Split", err, "split")
	if _, parts, err := SplitParts(n, []int{2}, []int64{0, 2, 0}); err != nil || !slices.Equal(parts, []int{0, 2, 0}) {
		t.Errorf("split [0 2 0] of 2: %v, %v", parts, err)
	}
}

func TestLegacyBroadcastExtremeAxis(t *testing.T) {
	// axis + len(B) wraps past int64 and would pass the bound.
	for _, axis := range []int64{maxI64, minI64} {
		_, err := LegacyBroadcast(node("Add", 6, map[string]graph.Attr{"broadcast": int1(1), "axis": int1(axis)}), []int{2, 3}, []int{3})
		wantShapeErr(t, "LegacyBroadcast", err, "axis")
	}
}

// TestOutputDTypesOfAnyOutputCount gives OutputDTypes nodes of operators
// with several outputs, naming none (as cmd/beamml-inspect asks about an
// operator), one, or more than the operator has (a bad model): it must
// type each one named, not panic.
func TestOutputDTypesOfAnyOutputCount(t *testing.T) {
	for _, op := range []string{"LayerNormalization", "Dropout", "TopK", "MaxPool", "Unique", "DynamicQuantizeLinear", "Add", "Shape"} {
		for _, outs := range []int{0, 1, 2, 5} {
			n := node(op, 17, nil)
			n.Inputs = []string{"x"}
			n.Outputs = make([]string, outs)
			got := OutputDTypes(n, []inference.DType{inference.Float16})
			if len(got) != outs {
				t.Errorf("%s with %d outputs: OutputDTypes = %v", op, outs, got)
			}
			if outs > 0 && op != "DynamicQuantizeLinear" && op != "Shape" && got[0] != inference.Float16 {
				t.Errorf("%s: output 0 is %v, want its input's float16", op, got[0])
			}
		}
	}
}

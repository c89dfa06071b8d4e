package opsem

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// node builds a Node of op at opset with the given attributes.
func node(op string, opset int64, attrs map[string]graph.Attr) Node {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	return Node{Node: &graph.Node{Name: "n", OpType: op, Attrs: attrs}, Opset: opset}
}

func ints(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
func int1(v int64) graph.Attr    { return graph.Attr{Type: graph.AttrInt, Int: v} }
func str(v string) graph.Attr    { return graph.Attr{Type: graph.AttrString, String: v} }
func float(v float32) graph.Attr { return graph.Attr{Type: graph.AttrFloat, Float: v} }

// The cases below are the ONNX operator documents' examples (their names
// are the backend tests': test_slice_neg_steps, …) and the rules' edges.

func TestSlice(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		shape                     []int
		starts, ends, axes, steps []int64
		want                      []int
	}{
		{"test_slice", []int{20, 10, 5}, []int64{0, 0}, []int64{3, 10}, []int64{0, 1}, []int64{1, 1}, []int{3, 10, 5}},
		{"test_slice_neg_steps", []int{20, 10, 5}, []int64{20, 10, 4}, []int64{0, 0, 1}, []int64{0, 1, 2}, []int64{-1, -3, -2}, []int{19, 3, 2}},
		{"test_slice_end_out_of_bounds", []int{20, 10, 5}, []int64{1}, []int64{1000}, []int64{1}, []int64{1}, []int{20, 9, 5}},
		{"test_slice_start_out_of_bounds", []int{20, 10, 5}, []int64{1000}, []int64{1000}, []int64{1}, []int64{1}, []int{20, 0, 5}},
		{"test_slice_default_axes", []int{20, 10, 5}, []int64{0, 0, 3}, []int64{20, 10, 4}, nil, nil, []int{20, 10, 1}},
		{"test_slice_negative_axes", []int{20, 10, 5}, []int64{0, 0, 3}, []int64{20, 10, 4}, []int64{0, -2, -1}, nil, []int{20, 10, 1}},
	} {
		kept, out, err := Slice(node("Slice", 13, nil), tc.shape, tc.starts, tc.ends, tc.axes, tc.steps)
		if err != nil || !slices.Equal(out, tc.want) {
			t.Errorf("%s: Slice = %v, %v; want %v", tc.name, out, err, tc.want)
		}
		for _, k := range kept {
			if k.Count != out[k.Axis] {
				t.Errorf("%s: axis %d keeps %d, output has %d", tc.name, k.Axis, k.Count, out[k.Axis])
			}
		}
	}
	// test_slice_neg_steps reads element 19 first along axis 0 (start 20
	// clamps to dim−1).
	kept, _, _ := Slice(node("Slice", 13, nil), []int{20, 10, 5}, []int64{20}, []int64{0}, []int64{0}, []int64{-1})
	if kept[0].First != 19 || kept[0].Step != -1 {
		t.Errorf("negative step from past the end: %+v, want first 19, step -1", kept[0])
	}
	// Slice-1 reads its attributes.
	_, out, err := Slice(node("Slice", 1, map[string]graph.Attr{"starts": ints(0, 1), "ends": ints(-1, 1000)}), []int{3, 4}, nil, nil, nil, nil)
	if err != nil || !slices.Equal(out, []int{2, 3}) {
		t.Errorf("Slice-1 = %v, %v; want [2 3]", out, err)
	}
	if _, _, err := Slice(node("Slice", 13, nil), []int{4}, []int64{0}, []int64{4}, nil, []int64{0}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("step 0: %v, want ErrShape", err)
	}
}

func TestSlidingWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attrs  map[string]graph.Attr
		in     []int
		kernel []int
		ceil   bool
		out    []int
		padBeg []int
	}{
		// test_maxpool_2d_same_upper: 5×5, 3×3, stride 2: 3×3, one pad each side.
		{"same_upper", map[string]graph.Attr{"auto_pad": str("SAME_UPPER"), "strides": ints(2, 2)}, []int{5, 5}, []int{3, 3}, false, []int{3, 3}, []int{1, 1}},
		// test_maxpool_2d_same_lower: 5×5, 2×2, stride 1: the odd pad at the start.
		{"same_lower", map[string]graph.Attr{"auto_pad": str("SAME_LOWER")}, []int{5, 5}, []int{2, 2}, false, []int{5, 5}, []int{1, 1}},
		// test_maxpool_2d_ceil: 4×4, 3×3, stride 2: 2×2 with ceil_mode, 1×1 without.
		{"ceil", map[string]graph.Attr{"strides": ints(2, 2)}, []int{4, 4}, []int{3, 3}, true, []int{2, 2}, []int{0, 0}},
		{"floor", map[string]graph.Attr{"strides": ints(2, 2)}, []int{4, 4}, []int{3, 3}, false, []int{1, 1}, []int{0, 0}},
		// test_maxpool_2d_dilations: 4×4, 2×2 dilated by 2: 2×2.
		{"dilations", map[string]graph.Attr{"dilations": ints(2, 2)}, []int{4, 4}, []int{2, 2}, false, []int{2, 2}, []int{0, 0}},
		// test_conv_with_strides_padding: 7×5, 3×3, stride 2, pads 1: 4×3.
		{"pads", map[string]graph.Attr{"strides": ints(2, 2), "pads": ints(1, 1, 1, 1)}, []int{7, 5}, []int{3, 3}, false, []int{4, 3}, []int{1, 1}},
	} {
		w, err := SlidingWindow(node("MaxPool", 12, tc.attrs), tc.in, tc.kernel, tc.ceil)
		if err != nil || !slices.Equal(w.Out, tc.out) || !slices.Equal(w.PadBegin, tc.padBeg) {
			t.Errorf("%s: out %v, pads begin %v, %v; want %v and %v", tc.name, w.Out, w.PadBegin, err, tc.out, tc.padBeg)
		}
	}
	if _, err := SlidingWindow(node("Conv", 12, nil), []int{2}, []int{3}, false); !errors.Is(err, inference.ErrShape) {
		t.Errorf("window larger than the input: %v, want ErrShape", err)
	}
}

func TestTransposedWindow(t *testing.T) {
	// test_convtranspose_output_shape: 3×3 input, 3×3 kernel, strides
	// [3, 2], output_shape [10, 8].
	w, err := TransposedWindow(node("ConvTranspose", 11, map[string]graph.Attr{"strides": ints(3, 2), "output_shape": ints(10, 8)}), []int{3, 3}, []int{3, 3})
	if err != nil || !slices.Equal(w.Out, []int{10, 8}) {
		t.Errorf("output_shape: %v, %v; want [10 8]", w.Out, err)
	}
	// test_convtranspose_pads: strides [3, 2], pads [1, 2, 1, 2]: 7×3.
	w, err = TransposedWindow(node("ConvTranspose", 11, map[string]graph.Attr{"strides": ints(3, 2), "pads": ints(1, 2, 1, 2)}), []int{3, 3}, []int{3, 3})
	if err != nil || !slices.Equal(w.Out, []int{7, 3}) {
		t.Errorf("pads: %v, %v; want [7 3]", w.Out, err)
	}
	// test_convtranspose_autopad_same: strides 2, SAME_UPPER: in·stride.
	w, err = TransposedWindow(node("ConvTranspose", 11, map[string]graph.Attr{"strides": ints(2, 2), "auto_pad": str("SAME_UPPER")}), []int{3, 3}, []int{3, 3})
	if err != nil || !slices.Equal(w.Out, []int{6, 6}) {
		t.Errorf("SAME_UPPER: %v, %v; want [6 6]", w.Out, err)
	}
}

func TestResize(t *testing.T) {
	n := func(opset int64, attrs map[string]graph.Attr) Node { return node("Resize", opset, attrs) }
	// test_resize_downsample_sizes_nearest_not_larger: [1, 1, 2, 4] to at
	// most [1, 1, 1, 3]: the smaller ratio, 1/2, on both axes.
	g, err := Resize(n(18, map[string]graph.Attr{"keep_aspect_ratio_policy": str("not_larger")}), []int{1, 1, 2, 4}, nil, nil, []int64{1, 1, 1, 3})
	if err != nil || !slices.Equal(g.Out, []int{1, 1, 1, 2}) || g.Scale[3] != 0.5 {
		t.Errorf("not_larger: out %v, scale %v, %v; want [1 1 1 2], 0.5", g.Out, g.Scale, err)
	}
	// test_resize_upsample_sizes_nearest_not_smaller: [1, 1, 2, 2] to at
	// least [7, 8] on axes 2, 3: ratio 4 on both.
	g, err = Resize(n(18, map[string]graph.Attr{"keep_aspect_ratio_policy": str("not_smaller"), "axes": ints(2, 3)}), []int{1, 1, 2, 2}, nil, nil, []int64{7, 8})
	if err != nil || !slices.Equal(g.Out, []int{1, 1, 8, 8}) || !slices.Equal(g.Axes, []int{2, 3}) {
		t.Errorf("not_smaller: out %v, axes %v, %v; want [1 1 8 8] on [2 3]", g.Out, g.Axes, err)
	}
	// Scales: floor(scale·in); Resize-10 resizes as Upsample.
	g, err = Resize(n(10, nil), []int{1, 1, 2, 2}, nil, []float32{1, 1, 2, 3.5}, nil)
	if err != nil || !slices.Equal(g.Out, []int{1, 1, 4, 7}) || g.NearestMode != LegacyNearest || g.Coord != "asymmetric" {
		t.Errorf("Resize-10: %+v, %v", g, err)
	}
	if !g.Unchanged(0, 1) || g.Unchanged(2, 2) {
		t.Error("Unchanged: axis 0 (scale 1) should be, axis 2 (scale 2) should not")
	}
	if _, err := Resize(n(13, nil), []int{1, 2}, nil, []float32{1, 2}, []int64{1, 4}); !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("scales and sizes both given: %v, want ErrBadModel", err)
	}
	var unsupported *inference.UnsupportedOpError
	if _, err := Resize(n(13, map[string]graph.Attr{"coordinate_transformation_mode": str("tf_half_pixel_for_nn")}), []int{4}, nil, []float32{2}, nil); !errors.As(err, &unsupported) {
		t.Errorf("tf_half_pixel_for_nn at opset 13: %v, want unsupported (removed in Resize-13)", err)
	}
}

func TestPadGeometry(t *testing.T) {
	// test_constant_pad: [1, 3, 4, 5] padded [0, 0, 1, 3, 0, 0, 2, 4]: [1, 3, 7, 12].
	p, err := PadGeometry(node("Pad", 11, nil), []int{1, 3, 4, 5}, []int64{0, 0, 1, 3, 0, 0, 2, 4}, nil)
	if err != nil || !slices.Equal(p.Out, []int{1, 3, 7, 12}) || p.Dims[3] != (PadDim{Kept: 5, Before: 3, Size: 12}) {
		t.Errorf("constant: %+v, %v", p, err)
	}
	// A negative pad crops: [4] with pads [-1, 2]: drop one, add two.
	p, err = PadGeometry(node("Pad", 18, map[string]graph.Attr{"mode": str("edge")}), []int{4}, []int64{-1, 2}, nil)
	if err != nil || p.Dims[0] != (PadDim{Crop: 1, Kept: 3, Size: 5}) {
		t.Errorf("crop: %+v, %v", p.Dims, err)
	}
	// Pad-2 takes the attribute pads; reflect of an empty dimension fails.
	if _, err := PadGeometry(node("Pad", 2, map[string]graph.Attr{"pads": ints(1, 1), "mode": str("reflect")}), []int{0}, nil, nil); !errors.Is(err, inference.ErrShape) {
		t.Errorf("reflect of an empty dimension: %v, want ErrShape", err)
	}
}

func TestSplitParts(t *testing.T) {
	n := node("Split", 18, map[string]graph.Attr{"num_outputs": int1(3)})
	n.Outputs = []string{"a", "b", "c"}
	// test_split_uneven_split_opset18: 7 into 3: 3, 3, 1.
	if _, parts, err := SplitParts(n, []int{7}, nil); err != nil || !slices.Equal(parts, []int{3, 3, 1}) {
		t.Errorf("num_outputs 3 of 7: %v, %v; want [3 3 1]", parts, err)
	}
	n = node("Split", 13, nil)
	n.Outputs = []string{"a", "b"}
	if _, parts, err := SplitParts(n, []int{2, 6}, []int64{2, 4}); err == nil || parts != nil {
		t.Errorf("split [2 4] of axis 0 (size 2): %v, %v; want an error", parts, err)
	}
	n.Attrs["axis"] = int1(-1)
	if axis, parts, err := SplitParts(n, []int{2, 6}, []int64{2, 4}); err != nil || axis != 1 || !slices.Equal(parts, []int{2, 4}) {
		t.Errorf("split [2 4] of axis -1: %d, %v, %v", axis, parts, err)
	}
}

func TestRangeCount(t *testing.T) {
	// test_range_float_type_positive_delta: range(1, 5, 2) = [1, 3].
	if c, err := RangeCountFloat(1, 5, 2); c != 2 || err != nil {
		t.Errorf("RangeCountFloat(1, 5, 2) = %d, %v; want 2", c, err)
	}
	// test_range_int32_type_negative_delta: range(10, 6, -3) = [10, 7].
	if c, err := RangeCountInt(10, 6, -3); c != 2 || err != nil {
		t.Errorf("RangeCountInt(10, 6, -3) = %d, %v; want 2", c, err)
	}
	if c, err := RangeCountInt(5, 1, 1); c != 0 || err != nil {
		t.Errorf("an empty range: %d, %v; want 0", c, err)
	}
	if _, err := RangeCountFloat(0, 1, 0); !errors.Is(err, inference.ErrShape) {
		t.Errorf("delta 0: %v, want ErrShape", err)
	}
}

func TestBroadcast(t *testing.T) {
	if s, err := BroadcastShape([]int{2, 1, 4}, []int{3, 1}); err != nil || !slices.Equal(s, []int{2, 3, 4}) {
		t.Errorf("BroadcastShape = %v, %v; want [2 3 4]", s, err)
	}
	if st, err := BroadcastStrides([]int{3, 1}, []int{2, 3, 4}); err != nil || !slices.Equal(st, []int{0, 1, 0}) {
		t.Errorf("BroadcastStrides = %v, %v; want [0 1 0]", st, err)
	}
	if offs := BroadcastOffsets([]int{2, 1}, []int{2, 3}); !slices.Equal(offs, []int{0, 0, 0, 1, 1, 1}) {
		t.Errorf("BroadcastOffsets = %v", offs)
	}
	// Before opset 7: B aligned at axis 1 of A.
	n := node("Add", 6, map[string]graph.Attr{"broadcast": int1(1), "axis": int1(1)})
	if b, err := LegacyBroadcast(n, []int{2, 3, 4, 5}, []int{3, 4}); err != nil || !slices.Equal(b, []int{1, 3, 4, 1}) {
		t.Errorf("LegacyBroadcast at axis 1 = %v, %v; want [1 3 4 1]", b, err)
	}
	if _, err := LegacyBroadcast(node("Add", 6, nil), []int{2, 3}, []int{3}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("broadcast=0 with different shapes: %v, want ErrShape", err)
	}
}

func TestNDOffsets(t *testing.T) {
	// test_gathernd_example_int32_batch_dim1: data [2, 2, 2], indices
	// [[1], [0]], batch_dims 1: slices data[0, 1] and data[1, 0].
	a, err := NDOffsets([]int{2, 2, 2}, []int{2, 1}, []int64{1, 0}, 1)
	if err != nil || !slices.Equal(a.Offsets, []int{2, 4}) || !slices.Equal(a.Slice, []int{2}) || !slices.Equal(a.Lead, []int{2}) {
		t.Errorf("NDOffsets = %+v, %v", a, err)
	}
	if _, err := NDOffsets([]int{2, 2}, []int{1, 1}, []int64{2}, 0); !errors.Is(err, inference.ErrIndexOutOfRange) {
		t.Errorf("index 2 of a dimension of 2: %v, want ErrIndexOutOfRange", err)
	}
}

func TestDepthToSpace(t *testing.T) {
	p, err := DepthToSpace(node("DepthToSpace", 13, map[string]graph.Attr{"blocksize": int1(2), "mode": str("CRD")}), []int{1, 8, 2, 3})
	if err != nil || !slices.Equal(p.Out, []int{1, 2, 4, 6}) || !slices.Equal(p.View, []int{1, 2, 2, 2, 2, 3}) {
		t.Errorf("CRD: %+v, %v", p, err)
	}
}

func TestActivationDefaults(t *testing.T) {
	if a, _ := ActivationAttrs(node("LeakyRelu", 16, nil)); a != float64(float32(0.01)) {
		t.Errorf("LeakyRelu alpha default %v", a)
	}
	if a, b := ActivationAttrs(node("HardSigmoid", 6, map[string]graph.Attr{"alpha": float(0.5)})); a != 0.5 || b != 0.5 {
		t.Errorf("HardSigmoid alpha 0.5: %v, %v; want 0.5 and beta's default 0.5", a, b)
	}
	lo, hi := ClipBounds(node("Clip", 1, nil))
	lo6, hi6 := ClipBounds(node("Clip", 6, map[string]graph.Attr{"max": float(6)}))
	if !math.IsInf(float64(lo), -1) || !math.IsInf(float64(hi), 1) || lo6 != -math.MaxFloat32 || hi6 != 6 {
		t.Errorf("Clip-1 bounds %v, %v (want ∓inf); Clip-6 with max 6: %v, %v", lo, hi, lo6, hi6)
	}
}

func TestAttributeDefaults(t *testing.T) {
	if _, err := VariadicShape(node("Sum", 6, nil), [][]int{{2, 3}, {3}}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("Sum-6 of [2 3] and [3]: %v, want ErrShape (no broadcasting before opset 8)", err)
	}
	if s, err := VariadicShape(node("Sum", 8, nil), [][]int{{2, 3}, {3}}); err != nil || !slices.Equal(s, []int{2, 3}) {
		t.Errorf("Sum-8 of [2 3] and [3]: %v, %v; want [2 3]", s, err)
	}
	if red, err := ScatterReduction(node("ScatterND", 18, nil)); red != "none" || err != nil {
		t.Errorf("ScatterND's default reduction: %q, %v", red, err)
	}
	var unsupported *inference.UnsupportedOpError
	if _, err := ScatterReduction(node("ScatterND", 18, map[string]graph.Attr{"reduction": str("avg")})); !errors.As(err, &unsupported) {
		t.Errorf("reduction avg: %v, want unsupported", err)
	}
	if neg, pos := IsInfDetect(node("IsInf", 10, map[string]graph.Attr{"detect_negative": int1(0)})); neg || !pos {
		t.Errorf("IsInf detect_negative=0: %v, %v", neg, pos)
	}
	if !TriluUpper(node("Trilu", 14, nil)) || ModFmod(node("Mod", 13, nil)) {
		t.Error("Trilu keeps the upper triangle and Mod takes the divisor's sign by default")
	}
	if inc, col := PoolOptions(node("MaxPool", 12, map[string]graph.Attr{"storage_order": int1(1)})); inc || !col {
		t.Errorf("storage_order 1: %v, %v", inc, col)
	}
	if err := LayerNormStats(node("LayerNormalization", 17, map[string]graph.Attr{"stash_type": int1(0)}), true); !errors.As(err, &unsupported) {
		t.Errorf("stash_type 0 with the statistics outputs: %v, want unsupported", err)
	}
	a := NDAddress{Lead: []int{2}, Slice: []int{3, 4}}
	if !slices.Equal(a.Shape(), []int{2, 3, 4}) {
		t.Errorf("NDAddress.Shape = %v", a.Shape())
	}
}

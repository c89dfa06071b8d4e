package check

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Cases of the data movement operators (kernels/shape.cu): every element
// type, negative axes, broadcasting, and shape operands that are
// initializers (known on the host) next to data computed on the device.

// allTypes are the element types the data movement kernels move.
var allTypes = []inference.DType{inference.Float32, inference.Int64, inference.Int32, inference.Bool, inference.Uint8}

// RandOf returns a tensor of the given type and shape from a generator
// seeded by seed: floats in [-4, 4), integers in [-50, 50) ([0, 256) for
// uint8), bools true or false.
func RandOf(dtype inference.DType, seed uint64, shape ...int) inference.Tensor {
	r := rand.New(rand.NewPCG(seed, 0xda7a))
	n := 1
	for _, d := range shape {
		n *= d
	}
	var t inference.Tensor
	var err error
	switch dtype {
	case inference.Float32:
		return Rand(seed, -4, 4, shape...)
	case inference.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = r.Int64N(100) - 50
		}
		t, err = inference.New(shape, v)
	case inference.Int32:
		v := make([]int32, n)
		for i := range v {
			v[i] = r.Int32N(100) - 50
		}
		t, err = inference.New(shape, v)
	case inference.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = r.IntN(2) == 1
		}
		t, err = inference.New(shape, v)
	case inference.Uint8:
		v := make([]uint8, n)
		for i := range v {
			v[i] = uint8(r.IntN(256))
		}
		t, err = inference.New(shape, v)
	default:
		panic(fmt.Sprintf("check: RandOf %v", dtype))
	}
	if err != nil {
		panic(err)
	}
	return t
}

func mustNew[T inference.Element](shape []int, v ...T) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// ints is an int64 initializer: a shape operand.
func ints(v ...int64) Input { return Input{T: Ints([]int{len(v)}, v...), Const: true} }

func attrs(kv ...any) map[string]graph.Attr {
	m := map[string]graph.Attr{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(graph.Attr)
	}
	return m
}

func init() {
	for i, dt := range allTypes {
		s := uint64(1000 + 10*i)
		t := dt.String()
		Add(
			Case{Name: "shape/Reshape/" + t, Op: "Reshape", Inputs: []Input{{T: RandOf(dt, s, 2, 3, 4)}, ints(4, 0, -1)}},
			Case{Name: "shape/Flatten/" + t, Op: "Flatten", Attrs: attrs("axis", AInt(-1)), Inputs: []Input{{T: RandOf(dt, s+1, 2, 3, 4)}}},
			Case{Name: "shape/Squeeze/" + t, Op: "Squeeze", Inputs: []Input{{T: RandOf(dt, s+2, 2, 1, 4, 1)}, ints(-1, 1)}},
			Case{Name: "shape/Unsqueeze/" + t, Op: "Unsqueeze", Inputs: []Input{{T: RandOf(dt, s+3, 3, 4)}, ints(-1, 0)}},
			Case{Name: "shape/Transpose/" + t, Op: "Transpose", Attrs: attrs("perm", AInts(0, 2, 3, 1)),
				Inputs: []Input{{T: RandOf(dt, s+4, 2, 3, 4, 5)}}},
			Case{Name: "shape/Expand/" + t, Op: "Expand", Inputs: []Input{{T: RandOf(dt, s+5, 3, 1)}, ints(2, 1, 4)}},
			Case{Name: "shape/Where/" + t, Op: "Where", Inputs: []Input{
				{T: RandOf(inference.Bool, s+6, 3, 1)}, {T: RandOf(dt, s+7, 2, 3, 4)}, {T: RandOf(dt, s+8, 4)}}},
			Case{Name: "shape/Concat/" + t, Op: "Concat", Attrs: attrs("axis", AInt(-2)), Inputs: []Input{
				{T: RandOf(dt, s+9, 2, 3, 4)}, {T: RandOf(dt, s+10, 2, 1, 4), Const: true}, {T: RandOf(dt, s+11, 2, 5, 4)}}},
			Case{Name: "shape/Slice/" + t, Op: "Slice", Inputs: []Input{
				{T: RandOf(dt, s+12, 5, 6, 7)}, ints(1, -1), ints(4, -7), ints(0, -2), ints(2, -2)}},
			Case{Name: "shape/Split/" + t, Op: "Split", Attrs: attrs("axis", AInt(1)), Outputs: 3,
				Inputs: []Input{{T: RandOf(dt, s+13, 2, 6, 3)}}},
			Case{Name: "shape/Tile/" + t, Op: "Tile", Inputs: []Input{{T: RandOf(dt, s+14, 2, 3, 2)}, ints(2, 1, 3)}},
			Case{Name: "shape/Pad/" + t, Op: "Pad", Attrs: attrs("mode", AStr("reflect")), Inputs: []Input{
				{T: RandOf(dt, s+15, 3, 4, 5)}, ints(0, 2, -1, 1, 3, 2)}},
			Case{Name: "shape/Trilu/" + t, Op: "Trilu", Opset: 14, Inputs: []Input{{T: RandOf(dt, s+16, 2, 4, 5)}}},
			Case{Name: "shape/DepthToSpace/" + t, Op: "DepthToSpace", Attrs: attrs("blocksize", AInt(2)),
				Inputs: []Input{{T: RandOf(dt, s+17, 2, 8, 3, 2)}}},
			Case{Name: "shape/SpaceToDepth/" + t, Op: "SpaceToDepth", Attrs: attrs("blocksize", AInt(2)),
				Inputs: []Input{{T: RandOf(dt, s+18, 2, 3, 4, 6)}}},
			Case{Name: "shape/Dropout/" + t, Op: "Dropout", Opset: 13, Outputs: 2, Inputs: []Input{{T: RandOf(dt, s+19, 3, 4)}}},
			Case{Name: "shape/OneHot/values-" + t, Op: "OneHot", Opset: 11, Inputs: []Input{
				{T: Ints([]int{2, 3}, 0, 4, -1, 7, -6, 2)}, ints(5), {T: RandOf(dt, s+20, 2), Const: true}}},
		)
	}

	// Cast between every pair of types, on values that probe the edges:
	// NaN, infinities, fractions, values beyond the narrower types.
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	castIn := map[inference.DType]inference.Tensor{
		inference.Float32: mustNew[float32]([]int{3, 7}, 0, float32(math.Copysign(0, -1)), 1.5, -1.5, 2.7, -2.7, 255.9, 256.5, -129.3,
			3e9, -3e9, 1e20, -1e20, nan, inf, -inf, 0.3, 1e-30, 16777217, -0.99, 65536.5),
		inference.Int64: mustNew[int64]([]int{2, 7}, 0, 1, -1, 255, 256, -129, 1<<31, -1<<31-1, 1<<40+1, 1<<53+1, math.MaxInt64,
			math.MinInt64, 16777217, 3),
		inference.Int32: mustNew[int32]([]int{9}, 0, 1, -1, 255, 256, -129, math.MaxInt32, math.MinInt32, 16777217),
		inference.Uint8: mustNew[uint8]([]int{5}, 0, 1, 127, 128, 255),
		inference.Bool:  mustNew([]int{2, 2}, true, false, false, true),
	}
	// Float16: every class of value (zeros, subnormals, the largest,
	// infinities, NaN), and float32s that round to float16 on a tie, to a
	// subnormal, or overflow. The graphs compute float16 in float32
	// (passes.ComputeFloat16InFloat32), which runs the Cast kernel from and
	// to float16 (its other directions are checked on the kernel itself).
	half := func(v ...float32) inference.Tensor {
		h := make([]inference.Half, len(v))
		for i, x := range v {
			h[i] = inference.HalfFromFloat32(x)
		}
		return mustNew([]int{len(v)}, h...)
	}
	castIn[inference.Float16] = half(0, float32(math.Copysign(0, -1)), 1.5, -1.5, 2.7, -2.7, 255.9, 256.5, -129.3, 65504,
		-65504, nan, inf, -inf, 0.3, 6e-8, -3e-6, 1000.7, -0.99, 4097)
	onnxCodes := map[inference.DType]int64{inference.Float32: 1, inference.Uint8: 2, inference.Int32: 6, inference.Int64: 7,
		inference.Bool: 9, inference.Float16: 10}
	castTypes := append(slices.Clone(allTypes), inference.Float16)
	for _, from := range castTypes {
		for _, to := range castTypes {
			Add(Case{Name: fmt.Sprintf("shape/Cast/%v-%v", from, to), Op: "Cast", Attrs: attrs("to", AInt(onnxCodes[to])),
				Inputs: []Input{{T: castIn[from]}}})
		}
	}
	Add(Case{Name: "shape/Cast/float32-float16-rounding", Op: "Cast", Attrs: attrs("to", AInt(10)), Inputs: []Input{{T: mustNew([]int{12}, []float32{
		1 + 0x1p-11, 1 + 3*0x1p-11, 2049, 2051, 65519.996, 65520, 0x1p-25, 3 * 0x1p-25, 0x1p-14 - 0x1p-25, -(1 + 0x1p-11), 1e-30, -70000}...)}}})
	Add(
		Case{Name: "shape/Cast/large", Op: "Cast", Attrs: attrs("to", AInt(7)), Inputs: []Input{{T: Rand(1100, -1e6, 1e6, 70000)}}},
		Case{Name: "shape/CastLike/float32-int32", Op: "CastLike", Opset: 15, Inputs: []Input{
			{T: castIn[inference.Float32]}, {T: mustNew[int32]([]int{1}, 0), Const: true}}},
		Case{Name: "shape/CastLike/uint8-float32", Op: "CastLike", Opset: 15, Inputs: []Input{
			{T: castIn[inference.Uint8]}, {T: Floats([]int{}, 0)}}},
		Case{Name: "shape/CastLike/same", Op: "CastLike", Opset: 15, Inputs: []Input{
			{T: castIn[inference.Int64]}, {T: Ints([]int{}, 0), Const: true}}},
	)

	// Views and Dropout.
	Add(
		Case{Name: "shape/Reshape/allowzero", Op: "Reshape", Opset: 14, Attrs: attrs("allowzero", AInt(1)),
			Inputs: []Input{{T: Rand(1200, -1, 1, 4, 6)}, ints(2, 12)}},
		Case{Name: "shape/Reshape/opset1", Op: "Reshape", Opset: 1, Attrs: attrs("shape", AInts(6, 4)),
			Inputs: []Input{{T: Rand(1201, -1, 1, 4, 6)}}},
		Case{Name: "shape/Flatten/axis0", Op: "Flatten", Attrs: attrs("axis", AInt(0)), Inputs: []Input{{T: Rand(1202, -1, 1, 2, 3)}}},
		Case{Name: "shape/Squeeze/all", Op: "Squeeze", Inputs: []Input{{T: Rand(1203, -1, 1, 1, 3, 1, 2)}}},
		Case{Name: "shape/Squeeze/opset11", Op: "Squeeze", Opset: 11, Attrs: attrs("axes", AInts(0)),
			Inputs: []Input{{T: Rand(1204, -1, 1, 1, 3, 1, 2)}}},
		Case{Name: "shape/Unsqueeze/opset11", Op: "Unsqueeze", Opset: 11, Attrs: attrs("axes", AInts(1, 3)),
			Inputs: []Input{{T: Rand(1205, -1, 1, 3, 2)}}},
		Case{Name: "shape/Dropout/opset7", Op: "Dropout", Opset: 7, Outputs: 1, Inputs: []Input{{T: Rand(1206, -1, 1, 3, 5)}}},
		Case{Name: "shape/Dropout/opset9-mask", Op: "Dropout", Opset: 9, Outputs: 2, Inputs: []Input{{T: Rand(1207, -1, 1, 3, 5)}}},
		Case{Name: "shape/Dropout/ratio-training-off", Op: "Dropout", Opset: 13, Outputs: 2, Inputs: []Input{
			{T: Rand(1208, -1, 1, 4, 5)}, {T: Floats([]int{}, 0.3), Const: true}, {T: mustNew([]int{}, false), Const: true}}},
		Case{Name: "shape/Dropout/ratio-device", Op: "Dropout", Opset: 13, Outputs: 2, Inputs: []Input{
			{T: RandOf(inference.Int32, 1209, 4, 5)}, {T: Floats([]int{}, 0.3)}}},
	)

	// Transpose: default permutation, negative perm entries, a rank that
	// collapses to at most six dims, a single swap of large blocks.
	Add(
		Case{Name: "shape/Transpose/default", Op: "Transpose", Inputs: []Input{{T: Rand(1300, -1, 1, 3, 4, 5)}}},
		Case{Name: "shape/Transpose/negative-perm", Op: "Transpose", Attrs: attrs("perm", AInts(-1, 0, -2)),
			Inputs: []Input{{T: RandOf(inference.Int64, 1301, 3, 4, 5)}}},
		Case{Name: "shape/Transpose/rank7", Op: "Transpose", Attrs: attrs("perm", AInts(1, 0, 2, 3, 6, 4, 5)),
			Inputs: []Input{{T: Rand(1302, -1, 1, 2, 3, 2, 1, 2, 3, 2)}}},
		Case{Name: "shape/Transpose/identity", Op: "Transpose", Attrs: attrs("perm", AInts(0, 1, 2)),
			Inputs: []Input{{T: RandOf(inference.Bool, 1303, 2, 3, 4)}}},
		Case{Name: "shape/Transpose/large", Op: "Transpose", Attrs: attrs("perm", AInts(1, 0)),
			Inputs: []Input{{T: Rand(1304, -1, 1, 300, 257)}}},
	)

	// Expand and Where: broadcasting both ways, scalars, a shape of 1s
	// that raises the rank.
	Add(
		Case{Name: "shape/Expand/both-ways", Op: "Expand", Inputs: []Input{{T: Rand(1400, -1, 1, 3, 1, 5)}, ints(2, 1, 4, 1)}},
		Case{Name: "shape/Expand/scalar", Op: "Expand", Inputs: []Input{{T: Floats([]int{}, 2.5)}, ints(3, 4)}},
		Case{Name: "shape/Expand/same", Op: "Expand", Inputs: []Input{{T: RandOf(inference.Int32, 1401, 3, 4)}, ints(3, 4)}},
		Case{Name: "shape/Where/same", Op: "Where", Inputs: []Input{
			{T: RandOf(inference.Bool, 1403, 4, 5)}, {T: Rand(1404, -1, 1, 4, 5)}, {T: Rand(1405, -1, 1, 4, 5)}}},
		Case{Name: "shape/Where/scalars", Op: "Where", Inputs: []Input{
			{T: RandOf(inference.Bool, 1406, 2, 3, 4)}, {T: Floats([]int{}, 1), Const: true}, {T: Floats([]int{}, -1)}}},
		Case{Name: "shape/Where/cond-broadcast", Op: "Where", Inputs: []Input{
			{T: RandOf(inference.Bool, 1407, 5)}, {T: RandOf(inference.Int64, 1408, 2, 1, 1)}, {T: RandOf(inference.Int64, 1409, 1, 3, 1)}}},
	)

	// Concat and Split: first and last axis, contiguous blocks (axis 0),
	// split sizes as input, attribute and num_outputs.
	Add(
		Case{Name: "shape/Concat/axis0", Op: "Concat", Attrs: attrs("axis", AInt(0)), Inputs: []Input{
			{T: RandOf(inference.Int64, 1500, 2, 3)}, {T: RandOf(inference.Int64, 1501, 1, 3)}}},
		Case{Name: "shape/Concat/last", Op: "Concat", Attrs: attrs("axis", AInt(-1)), Inputs: []Input{
			{T: Rand(1502, -1, 1, 2, 3, 1)}, {T: Rand(1503, -1, 1, 2, 3, 4)}, {T: Rand(1504, -1, 1, 2, 3, 2)}}},
		Case{Name: "shape/Concat/one", Op: "Concat", Attrs: attrs("axis", AInt(1)), Inputs: []Input{{T: Rand(1505, -1, 1, 2, 3)}}},
		Case{Name: "shape/Split/axis0-sizes", Op: "Split", Opset: 13, Outputs: 3, Inputs: []Input{
			{T: RandOf(inference.Int32, 1506, 7, 2)}, ints(2, 4, 1)}},
		Case{Name: "shape/Split/attr", Op: "Split", Opset: 11, Outputs: 2, Attrs: attrs("axis", AInt(-1), "split", AInts(3, 2)),
			Inputs: []Input{{T: Rand(1507, -1, 1, 2, 3, 5)}}},
		Case{Name: "shape/Split/num-outputs", Op: "Split", Opset: 18, Outputs: 3, Attrs: attrs("axis", AInt(1), "num_outputs", AInt(3)),
			Inputs: []Input{{T: RandOf(inference.Uint8, 1508, 2, 7)}}},
	)

	// Slice: negative steps, defaults, clamped bounds, attributes before
	// opset 10, an empty result.
	Add(
		Case{Name: "shape/Slice/reverse", Op: "Slice", Inputs: []Input{
			{T: Rand(1600, -1, 1, 4, 5)}, ints(-1), ints(math.MinInt64), ints(1), ints(-1)}},
		Case{Name: "shape/Slice/defaults", Op: "Slice", Inputs: []Input{{T: Rand(1601, -1, 1, 6, 4)}, ints(2, 1), ints(100, 3)}},
		Case{Name: "shape/Slice/rows", Op: "Slice", Inputs: []Input{
			{T: RandOf(inference.Int64, 1602, 6, 4)}, ints(1), ints(4), ints(0)}},
		Case{Name: "shape/Slice/step3", Op: "Slice", Inputs: []Input{
			{T: Rand(1603, -1, 1, 2, 10, 3)}, ints(1, 0), ints(9, 2), ints(1, 2), ints(3, 1)}},
		Case{Name: "shape/Slice/opset9", Op: "Slice", Opset: 9, Attrs: attrs("starts", AInts(1, 0), "ends", AInts(3, -1), "axes", AInts(0, 1)),
			Inputs: []Input{{T: Rand(1604, -1, 1, 4, 5)}}},
	)

	// Tile and Pad: every mode, negative pads, axes, constants given as
	// attribute, initializer and device data.
	Add(
		Case{Name: "shape/Tile/rank1", Op: "Tile", Inputs: []Input{{T: Rand(1700, -1, 1, 5)}, ints(4)}},
		Case{Name: "shape/Tile/once", Op: "Tile", Inputs: []Input{{T: Rand(1701, -1, 1, 2, 3)}, ints(1, 1)}},
		Case{Name: "shape/Pad/constant-value", Op: "Pad", Inputs: []Input{
			{T: Rand(1702, -1, 1, 2, 3, 4)}, ints(0, 1, 2, 1, 0, 3), {T: Floats([]int{}, 7.5), Const: true}}},
		Case{Name: "shape/Pad/constant-int64", Op: "Pad", Inputs: []Input{
			{T: RandOf(inference.Int64, 1703, 3, 4)}, ints(1, -1, 2, 2), {T: Ints([]int{}, -9), Const: true}}},
		Case{Name: "shape/Pad/constant-default", Op: "Pad", Inputs: []Input{{T: RandOf(inference.Int32, 1704, 3, 4)}, ints(2, 0, 0, 1)}},
		Case{Name: "shape/Pad/edge", Op: "Pad", Attrs: attrs("mode", AStr("edge")), Inputs: []Input{
			{T: Rand(1705, -1, 1, 2, 3, 4)}, ints(0, 2, 3, 0, 4, 1)}},
		Case{Name: "shape/Pad/wrap", Op: "Pad", Opset: 19, Attrs: attrs("mode", AStr("wrap")), Inputs: []Input{
			{T: Rand(1706, -1, 1, 3, 4)}, ints(5, -1, 2, 6)}},
		Case{Name: "shape/Pad/reflect-one", Op: "Pad", Attrs: attrs("mode", AStr("reflect")), Inputs: []Input{
			{T: Rand(1707, -1, 1, 1, 4)}, ints(2, 3, 1, 2)}},
		Case{Name: "shape/Pad/axes", Op: "Pad", Opset: 18, Inputs: []Input{
			{T: RandOf(inference.Bool, 1708, 2, 3, 4)}, ints(1, 2, 0, 1), {T: mustNew([]int{}, true), Const: true}, ints(-1, 0)}},
		Case{Name: "shape/Pad/opset2", Op: "Pad", Opset: 2, Attrs: attrs("pads", AInts(0, 1, 1, 2), "value", AFloat(-3.5)),
			Inputs: []Input{{T: Rand(1709, -1, 1, 3, 4)}}},
		Case{Name: "shape/Pad/opset2-int", Op: "Pad", Opset: 2, Attrs: attrs("pads", AInts(1, 1, 1, 1), "value", AFloat(5)),
			Inputs: []Input{{T: RandOf(inference.Uint8, 1710, 3, 4)}}},
	)

	// DepthToSpace's modes, Trilu's k (initializer and device data).
	Add(
		Case{Name: "shape/DepthToSpace/CRD", Op: "DepthToSpace", Opset: 13, Attrs: attrs("blocksize", AInt(3), "mode", AStr("CRD")),
			Inputs: []Input{{T: Rand(1800, -1, 1, 1, 18, 2, 3)}}},
		Case{Name: "shape/Trilu/lower-k", Op: "Trilu", Opset: 14, Attrs: attrs("upper", AInt(0)), Inputs: []Input{
			{T: Rand(1801, -1, 1, 3, 5, 4)}, {T: Ints([]int{}, -1), Const: true}}},
		Case{Name: "shape/Trilu/upper-k-device", Op: "Trilu", Opset: 14, Inputs: []Input{
			{T: RandOf(inference.Int64, 1802, 6, 3)}, {T: Ints([]int{}, 1)}}},
		Case{Name: "shape/Trilu/k-beyond", Op: "Trilu", Opset: 14, Inputs: []Input{
			{T: Rand(1803, -1, 1, 4, 4)}, {T: Ints([]int{}, 9), Const: true}}},
	)

	// OneHot: index types, axes, out-of-range and negative indices.
	Add(
		Case{Name: "shape/OneHot/axis0-int32", Op: "OneHot", Opset: 11, Attrs: attrs("axis", AInt(0)), Inputs: []Input{
			{T: mustNew[int32]([]int{4}, 1, -2, 3, 9)}, {T: mustNew[int32]([]int{}, 4), Const: true}, {T: Floats([]int{2}, -1, 2), Const: true}}},
		Case{Name: "shape/OneHot/float-indices", Op: "OneHot", Opset: 11, Attrs: attrs("axis", AInt(1)), Inputs: []Input{
			{T: Floats([]int{2, 3}, 0.7, 2.2, -1.5, 3.9, -4.1, 1)}, {T: Floats([]int{1}, 4), Const: true},
			{T: Ints([]int{2}, 0, 5), Const: true}}},
	)

	resizeCases()
}

// resizeCases covers resize_axis: each interpolation mode and coordinate
// transformation, scales and sizes, antialiasing, exclude_outside,
// tf_crop_and_resize's extrapolation, Resize-10.
func resizeCases() {
	none := Input{Absent: true}
	floats := func(v ...float32) Input { return Input{T: Floats([]int{len(v)}, v...), Const: true} }
	x := func(seed uint64, shape ...int) Input { return Input{T: Rand(seed, -2, 2, shape...)} }
	type rc struct {
		name   string
		opset  int64
		attrs  map[string]graph.Attr
		inputs []Input
	}
	for _, c := range []rc{
		{"nearest-up", 13, nil, []Input{x(1900, 1, 2, 3, 4), none, floats(1, 1, 2, 2.5)}},
		{"nearest-down-ceil", 13, attrs("nearest_mode", AStr("ceil")), []Input{x(1901, 1, 2, 6, 7), none, floats(1, 1, 0.5, 0.6)}},
		{"nearest-floor-asymmetric", 13, attrs("nearest_mode", AStr("floor"), "coordinate_transformation_mode", AStr("asymmetric")),
			[]Input{x(1902, 2, 1, 3, 5), none, floats(1, 1, 1.7, 0.8)}},
		{"nearest-prefer-ceil-align", 13, attrs("nearest_mode", AStr("round_prefer_ceil"), "coordinate_transformation_mode", AStr("align_corners")),
			[]Input{x(1903, 1, 2, 4, 4), none, none, ints(1, 2, 7, 3)}},
		{"nearest-tf-half-pixel", 11, attrs("coordinate_transformation_mode", AStr("tf_half_pixel_for_nn")),
			[]Input{x(1904, 1, 1, 4, 5), floats(), floats(1, 1, 1.5, 2)}},
		{"linear-half-pixel", 13, attrs("mode", AStr("linear")), []Input{x(1905, 1, 3, 4, 5), none, floats(1, 1, 2, 1.5)}},
		{"linear-align-corners-sizes", 13, attrs("mode", AStr("linear"), "coordinate_transformation_mode", AStr("align_corners")),
			[]Input{x(1906, 2, 2, 3, 4), none, none, ints(2, 2, 8, 1)}},
		{"linear-pytorch", 13, attrs("mode", AStr("linear"), "coordinate_transformation_mode", AStr("pytorch_half_pixel")),
			[]Input{x(1907, 1, 2, 5, 4), none, none, ints(1, 2, 1, 9)}},
		{"linear-3d", 13, attrs("mode", AStr("linear")), []Input{x(1908, 3, 4, 6), none, floats(1, 2, 0.5)}},
		{"linear-antialias-down", 18, attrs("mode", AStr("linear"), "antialias", AInt(1)), []Input{x(1909, 1, 1, 9, 11), none, floats(1, 1, 0.4, 0.6)}},
		{"linear-half-pixel-symmetric", 19, attrs("mode", AStr("linear"), "coordinate_transformation_mode", AStr("half_pixel_symmetric")),
			[]Input{x(1910, 1, 2, 4, 5), none, floats(1, 1, 1.7, 0.6)}},
		{"cubic", 13, attrs("mode", AStr("cubic")), []Input{x(1911, 1, 2, 4, 4), none, floats(1, 1, 2, 1.5)}},
		{"cubic-exclude", 13, attrs("mode", AStr("cubic"), "exclude_outside", AInt(1), "cubic_coeff_a", AFloat(-0.5)),
			[]Input{x(1912, 1, 1, 5, 6), none, floats(1, 1, 0.8, 2.3)}},
		{"cubic-antialias", 18, attrs("mode", AStr("cubic"), "antialias", AInt(1)), []Input{x(1913, 1, 2, 8, 8), none, none, ints(1, 2, 3, 5)}},
		{"nearest-exclude", 13, attrs("exclude_outside", AInt(1), "coordinate_transformation_mode", AStr("asymmetric")),
			[]Input{x(1914, 1, 1, 3, 3), none, floats(1, 1, 0.5, 3)}},
		{"tf-crop-and-resize", 13, attrs("mode", AStr("linear"), "coordinate_transformation_mode", AStr("tf_crop_and_resize"), "extrapolation_value", AFloat(9)),
			[]Input{x(1915, 1, 1, 4, 5), floats(0, 0, -0.2, 0.1, 1, 1, 0.9, 1.3), none, ints(1, 1, 5, 6)}},
		// Non-finite roi: every source coordinate is NaN or infinite, so
		// outside the input: all extrapolated, none converted to an index.
		{"tf-crop-and-resize-nonfinite-roi", 13, attrs("mode", AStr("linear"), "coordinate_transformation_mode", AStr("tf_crop_and_resize"), "extrapolation_value", AFloat(-7)),
			[]Input{x(1922, 1, 1, 4, 5), floats(0, 0, nan, ninf, 1, 1, pinf, 0.5), none, ints(1, 1, 3, 4)}},
		{"tf-crop-and-resize-inf-roi", 13, attrs("coordinate_transformation_mode", AStr("tf_crop_and_resize")),
			[]Input{x(1923, 1, 1, 4, 5), floats(0, 0, 0, 0, 1, 1, 1, pinf), none, ints(1, 1, 3, 4)}},
		// A strong antialiased downscale: 1/scale taps on each side.
		{"linear-antialias-down-by-20", 18, attrs("mode", AStr("linear"), "antialias", AInt(1)), []Input{x(1924, 1, 1, 3, 60), none, floats(1, 1, 1, 0.05)}},
		{"axes-not-larger", 18, attrs("mode", AStr("linear"), "axes", AInts(-1, 2), "keep_aspect_ratio_policy", AStr("not_larger")),
			[]Input{x(1916, 1, 2, 4, 6), none, none, ints(9, 5)}},
		{"axes-not-smaller", 18, attrs("axes", AInts(2, 3), "keep_aspect_ratio_policy", AStr("not_smaller")),
			[]Input{x(1917, 1, 2, 4, 6), none, none, ints(5, 9)}},
		{"batch-and-channels", 13, attrs("mode", AStr("linear")), []Input{x(1918, 2, 3, 2, 2), none, floats(1.5, 0.7, 1, 2)}},
		{"identity", 13, nil, []Input{x(1919, 1, 2, 3, 4), none, floats(1, 1, 1, 1)}},
		{"opset10-nearest", 10, nil, []Input{x(1920, 1, 1, 3, 4), floats(1, 1, 2, 0.6)}},
		{"opset10-linear", 10, attrs("mode", AStr("linear")), []Input{x(1921, 1, 1, 3, 4), floats(1, 1, 1.5, 2)}},
	} {
		Add(Case{Name: "shape/Resize/" + c.name, Op: "Resize", Opset: c.opset, Attrs: c.attrs, Inputs: c.inputs})
	}
}

package check

import (
	"math"

	"github.com/beamml/beamml/inference"
)

// Cases of the indexed operators (kernels/shape.cu gather_*). Indices that
// are initializers are checked on the host when the plan is built; those
// of the device-indices cases (graph inputs) are checked by the kernels,
// which report one out of range on the error word (inference/cuda's
// errword_test.go). A scatter with repeated indices writes the last
// update, as the CPU does.
func init() {
	i32 := func(shape []int, v ...int32) Input { return Input{T: mustNew(shape, v...), Const: true} }
	i64 := func(shape []int, v ...int64) Input { return Input{T: Ints(shape, v...), Const: true} }
	dev := func(in Input) Input { in.Const = false; return in }
	for i, dt := range allTypes {
		s := uint64(3000 + 10*i)
		t := dt.String()
		Add(
			Case{Name: "gather/Gather/axis0-" + t, Op: "Gather", Inputs: []Input{
				{T: RandOf(dt, s, 5, 3)}, i64([]int{2, 2}, 4, 0, -1, 2)}},
			Case{Name: "gather/GatherElements/" + t, Op: "GatherElements", Attrs: attrs("axis", AInt(1)), Inputs: []Input{
				{T: RandOf(dt, s+1, 3, 4)}, i64([]int{2, 3}, 0, 3, -1, 2, -4, 1)}},
			Case{Name: "gather/GatherND/" + t, Op: "GatherND", Inputs: []Input{
				{T: RandOf(dt, s+2, 3, 4, 2)}, i64([]int{3, 2}, 0, 1, 2, -1, -3, 2)}},
			Case{Name: "gather/ScatterElements/" + t, Op: "ScatterElements", Opset: 16, Attrs: attrs("axis", AInt(-1)), Inputs: []Input{
				{T: RandOf(dt, s+3, 3, 4)}, i64([]int{3, 2}, 3, 0, -1, 1, 2, 0), {T: RandOf(dt, s+4, 3, 2)}}},
			Case{Name: "gather/ScatterND/" + t, Op: "ScatterND", Opset: 16, Inputs: []Input{
				{T: RandOf(dt, s+5, 4, 3)}, i64([]int{2, 1}, 3, -4), {T: RandOf(dt, s+6, 2, 3)}}},
			Case{Name: "gather/Gather/device-indices-" + t, Op: "Gather", Attrs: attrs("axis", AInt(1)), Inputs: []Input{
				{T: RandOf(dt, s+7, 2, 5, 3)}, dev(i64([]int{2, 3}, 4, 0, -1, 2, -5, 4))}},
			Case{Name: "gather/ScatterElements/device-repeats-" + t, Op: "ScatterElements", Opset: 16, Attrs: attrs("axis", AInt(1)), Inputs: []Input{
				{T: RandOf(dt, s+8, 3, 4)}, dev(i64([]int{3, 3}, 1, -3, 2, 0, 0, 0, 3, -1, 2)), {T: RandOf(dt, s+9, 3, 3)}}},
			Case{Name: "gather/ScatterND/device-repeats-" + t, Op: "ScatterND", Opset: 16, Inputs: []Input{
				{T: RandOf(dt, s+5, 4, 3)}, dev(i64([]int{4, 1}, 3, -1, 0, 3)), {T: RandOf(dt, s+6, 4, 3)}}},
		)
	}
	Add(
		Case{Name: "gather/Gather/axis1-int32-indices", Op: "Gather", Attrs: attrs("axis", AInt(-2)), Inputs: []Input{
			{T: Rand(3100, -1, 1, 2, 5, 3)}, i32([]int{4}, 4, -5, 0, 2)}},
		Case{Name: "gather/Gather/scalar-index", Op: "Gather", Attrs: attrs("axis", AInt(1)), Inputs: []Input{
			{T: RandOf(inference.Int64, 3101, 3, 4, 2)}, i64([]int{}, -1)}},
		Case{Name: "gather/Gather/last-axis", Op: "Gather", Attrs: attrs("axis", AInt(2)), Inputs: []Input{
			{T: RandOf(inference.Uint8, 3102, 2, 3, 6)}, i64([]int{3, 1}, 5, 0, 3)}},
		Case{Name: "gather/Gather/large", Op: "Gather", Inputs: []Input{
			{T: Rand(3103, -1, 1, 1000, 80)}, i64([]int{5}, 999, 0, 500, -1, 7)}},
		Case{Name: "gather/GatherElements/axis0-smaller", Op: "GatherElements", Inputs: []Input{
			{T: Rand(3104, -1, 1, 4, 5, 2)}, i32([]int{2, 3, 1}, 3, -1, 0, 2, 1, -4)}},
		Case{Name: "gather/GatherND/scalars", Op: "GatherND", Inputs: []Input{
			{T: Rand(3105, -1, 1, 2, 3, 4)}, i64([]int{2, 3}, 1, 2, 3, 0, -1, -4)}},
		Case{Name: "gather/GatherND/batch-dims", Op: "GatherND", Opset: 12, Attrs: attrs("batch_dims", AInt(1)), Inputs: []Input{
			{T: RandOf(inference.Int32, 3106, 2, 3, 4)}, i64([]int{2, 2, 1}, 2, 0, -1, 1)}},
		Case{Name: "gather/GatherND/batch-dims2", Op: "GatherND", Opset: 12, Attrs: attrs("batch_dims", AInt(2)), Inputs: []Input{
			{T: Rand(3107, -1, 1, 2, 2, 3, 2)}, i64([]int{2, 2, 1}, 2, 0, -1, 1)}},
		Case{Name: "gather/ScatterElements/axis0", Op: "ScatterElements", Opset: 11, Inputs: []Input{
			{T: Rand(3108, -1, 1, 3, 3)}, i64([]int{2, 3}, 1, 0, 2, 0, 2, 1), {T: Rand(3109, -1, 1, 2, 3)}}},
		Case{Name: "gather/ScatterElements/reduction-none", Op: "ScatterElements", Opset: 18, Attrs: attrs("reduction", AStr("none"), "axis", AInt(1)),
			Inputs: []Input{{T: Rand(3110, -1, 1, 2, 5)}, i32([]int{1, 2}, 4, -5), {T: Rand(3111, -1, 1, 1, 2)}}},
		Case{Name: "gather/ScatterND/elements", Op: "ScatterND", Opset: 11, Inputs: []Input{
			{T: Rand(3112, -1, 1, 2, 3, 4)}, i64([]int{3, 3}, 1, 2, 3, 0, 0, 0, -1, -3, -4), {T: Rand(3113, -1, 1, 3)}}},

		// Indices computed on the device (graph inputs), negative ones
		// among them.
		Case{Name: "gather/Gather/device-indices-int32-embedding", Op: "Gather", Inputs: []Input{
			{T: Rand(3120, -1, 1, 50, 16)}, dev(i32([]int{2, 7}, 3, 49, 0, -50, 7, 7, 12, -1, 0, 0, 25, 48, 1, 2))}},
		Case{Name: "gather/GatherElements/device-indices", Op: "GatherElements", Attrs: attrs("axis", AInt(0)), Inputs: []Input{
			{T: Rand(3121, -1, 1, 4, 5, 2)}, dev(i32([]int{2, 3, 1}, 3, -1, 0, 2, 1, -4))}},
		Case{Name: "gather/GatherND/device-indices-batch-dims", Op: "GatherND", Opset: 12, Attrs: attrs("batch_dims", AInt(1)), Inputs: []Input{
			{T: RandOf(inference.Int64, 3122, 2, 3, 4)}, dev(i64([]int{2, 2, 2}, 2, 0, -1, 3, 0, -4, 1, 1))}},
		Case{Name: "gather/ScatterElements/device-unique", Op: "ScatterElements", Opset: 11, Inputs: []Input{
			{T: Rand(3123, -1, 1, 3, 3)}, dev(i64([]int{2, 3}, 1, 0, 2, 0, 2, -2)), {T: Rand(3124, -1, 1, 2, 3)}}},
		Case{Name: "gather/ScatterND/device-elements-repeats", Op: "ScatterND", Opset: 11, Inputs: []Input{
			{T: Rand(3125, -1, 1, 2, 3, 4)}, dev(i64([]int{4, 3}, 1, 2, 3, 0, 0, 0, -1, -1, -1, 1, -1, 3)), {T: Rand(3126, -1, 1, 4)}}},
		Case{Name: "gather/Scatter/opset10-device-repeats", Op: "Scatter", Opset: 10, Attrs: attrs("axis", AInt(1)), Inputs: []Input{
			{T: Rand(3129, -1, 1, 2, 4)}, dev(i64([]int{2, 2}, 3, -1, 0, 2)), {T: Rand(3130, -1, 1, 2, 2)}}},
		// Reductions with repeated indices: integer add and mul, and max and
		// min, do not depend on the order of the updates, so they run on the
		// device (atomically); NaN wins max and min, +0 is above -0.
		Case{Name: "gather/ScatterElements/device-repeats-add-int64", Op: "ScatterElements", Opset: 18, Attrs: attrs("axis", AInt(1), "reduction", AStr("add")), Inputs: []Input{
			{T: Ints([]int{2, 3}, 1, 2, 3, math.MaxInt64, 5, 6)}, dev(i64([]int{2, 3}, 0, 0, -3, 0, 1, 0)), {T: Ints([]int{2, 3}, 10, 20, 30, 1, 7, 8)}}},
		Case{Name: "gather/ScatterElements/device-repeats-mul-int32", Op: "ScatterElements", Opset: 18, Attrs: attrs("reduction", AStr("mul")), Inputs: []Input{
			{T: mustNew([]int{3, 2}, int32(3), -2, 1<<20, 5, 7, 9)}, dev(i32([]int{3, 2}, 1, 0, 1, 0, -2, 2)), {T: mustNew([]int{3, 2}, int32(1<<12), -3, 1<<13, 2, 5, -1)}}},
		Case{Name: "gather/ScatterElements/device-repeats-max-float", Op: "ScatterElements", Opset: 18, Attrs: attrs("axis", AInt(1), "reduction", AStr("max")), Inputs: []Input{
			{T: withFloats(Rand(3131, -1, 1, 3, 4), map[int]float32{4: float32(math.Copysign(0, -1)), 9: nan})}, dev(i64([]int{3, 3}, 0, 0, 1, 0, 0, 2, 1, 3, 1)),
			{T: withFloats(Rand(3132, -1, 1, 3, 3), map[int]float32{0: nan, 3: 0, 4: float32(math.Copysign(0, -1))})}}},
		Case{Name: "gather/ScatterND/device-repeats-min-float", Op: "ScatterND", Opset: 18, Attrs: attrs("reduction", AStr("min")), Inputs: []Input{
			{T: withFloats(Rand(3133, -1, 1, 4, 3), map[int]float32{0: 0})}, dev(i64([]int{3, 1}, 0, 2, -4)),
			{T: withFloats(Rand(3134, -1, 1, 3, 3), map[int]float32{0: float32(math.Copysign(0, -1)), 5: nan})}}},
		Case{Name: "gather/ScatterND/device-repeats-max-int64", Op: "ScatterND", Opset: 18, Attrs: attrs("reduction", AStr("max")), Inputs: []Input{
			{T: RandOf(inference.Int64, 3135, 3, 4)}, dev(i64([]int{3, 1}, 1, -2, 0)), {T: RandOf(inference.Int64, 3136, 3, 4)}}},
		Case{Name: "gather/ScatterND/device-repeats-add-int32", Op: "ScatterND", Opset: 18, Attrs: attrs("reduction", AStr("add")), Inputs: []Input{
			{T: RandOf(inference.Int32, 3137, 3, 2)}, dev(i64([]int{4, 2}, 1, 1, 1, -1, 0, 0, 2, 1)), {T: RandOf(inference.Int32, 3138, 4)}}},
		// Repeats in initializer indices: the claims, without the error word.
		Case{Name: "gather/ScatterND/const-repeats", Op: "ScatterND", Opset: 11, Inputs: []Input{
			{T: Rand(3127, -1, 1, 5, 2)}, i64([]int{3, 1}, 1, 4, -4), {T: Rand(3128, -1, 1, 3, 2)}}},
	)
}

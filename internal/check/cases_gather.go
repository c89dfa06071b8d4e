package check

import (
	"github.com/beamml/beamml/inference"
)

// Cases of the indexed operators (kernels/shape.cu gather_*). Their indices
// are initializers: the lowerings check indices on the host and send
// indices computed on the device to the host (inference/cuda's
// TestShapeOpsPlannedOnDevice checks that).
func init() {
	i32 := func(shape []int, v ...int32) Input { return Input{T: mustNew(shape, v...), Const: true} }
	i64 := func(shape []int, v ...int64) Input { return Input{T: Ints(shape, v...), Const: true} }
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
	)
}

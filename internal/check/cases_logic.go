package check

import (
	"math"

	"github.com/beamml/beamml/inference/graph"
)

func init() {
	// Comparisons of every element type, with broadcasting; float32 with
	// NaN and ties.
	for i, op := range []string{"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"} {
		s := uint64(600 + 20*i)
		ties := map[int]float32{0: 0.5, 1: nan, 2: pinf, 3: ninf, 7: 0.25}
		Add(
			Case{Name: "logic/" + op + "/f32-same", Op: op, Inputs: []Input{
				{T: withFloats(Rand(s, -2, 2, 3, 4), ties)}, {T: withFloats(Rand(s+1, -2, 2, 3, 4), map[int]float32{0: 0.5, 1: nan, 2: pinf, 3: 1, 7: 0.25})}}},
			Case{Name: "logic/" + op + "/f32-broadcast", Op: op, Inputs: []Input{
				{T: Rand(s+2, -2, 2, 2, 1, 4)}, {T: withFloats(Rand(s+3, -2, 2, 3, 1), map[int]float32{1: nan})}}},
			Case{Name: "logic/" + op + "/f32-scalar", Op: op, Inputs: []Input{
				{T: randFloatInts(s+4, 2, 5, 7)}, {T: Floats([]int{}, 1), Const: true}}},
			Case{Name: "logic/" + op + "/int64", Op: op, Inputs: []Input{
				{T: randInts[int64](s+5, -3, 3, 2, 3, 4)}, {T: Ints([]int{4}, -1, 0, 1, math.MinInt64)}}},
			Case{Name: "logic/" + op + "/int32", Op: op, Inputs: []Input{
				{T: randInts[int32](s+6, -3, 3, 3, 1)}, {T: randInts[int32](s+7, -3, 3, 2, 1, 5)}}},
			Case{Name: "logic/" + op + "/uint8", Op: op, Inputs: []Input{
				{T: randInts[uint8](s+8, 0, 255, 4, 6)}, {T: randInts[uint8](s+9, 100, 140, 6)}}},
		)
	}
	Add(
		Case{Name: "logic/Equal/bool", Op: "Equal", Inputs: []Input{
			{T: randBools(700, 3, 4)}, {T: randBools(701, 4)}}},
		// Before opset 7, broadcasting needs broadcast=1 and aligns B at axis.
		Case{Name: "logic/Equal/opset1-axis0", Op: "Equal", Opset: 1,
			Attrs:  map[string]graph.Attr{"broadcast": AInt(1), "axis": AInt(0)},
			Inputs: []Input{{T: randInts[int64](702, 0, 2, 3, 3)}, {T: randInts[int64](703, 0, 2, 3)}}},
		Case{Name: "logic/Greater/opset1-same", Op: "Greater", Opset: 1,
			Inputs: []Input{{T: Rand(704, -1, 1, 2, 5)}, {T: Rand(705, -1, 1, 2, 5)}}},
	)

	for i, op := range []string{"And", "Or", "Xor"} {
		s := uint64(720 + 10*i)
		Add(
			Case{Name: "logic/" + op + "/same", Op: op, Inputs: []Input{{T: randBools(s, 3, 5)}, {T: randBools(s+1, 3, 5)}}},
			Case{Name: "logic/" + op + "/broadcast", Op: op, Inputs: []Input{{T: randBools(s+2, 2, 1, 5)}, {T: randBools(s+3, 3, 1)}}},
			Case{Name: "logic/" + op + "/rank7", Op: op, Inputs: []Input{
				{T: randBools(s+4, 2, 3, 2, 1, 1, 1, 4)}, {T: randBools(s+5, 2, 3, 2, 1, 1, 1, 1)}}},
			Case{Name: "logic/" + op + "/opset6-axis", Op: op, Opset: 6,
				Attrs:  map[string]graph.Attr{"broadcast": AInt(1), "axis": AInt(1)},
				Inputs: []Input{{T: randBools(s+6, 2, 3, 4)}, {T: randBools(s+7, 3)}}},
		)
	}
	Add(
		Case{Name: "logic/Not", Op: "Not", Inputs: []Input{{T: randBools(750, 4, 9)}}},
		Case{Name: "logic/IsNaN", Op: "IsNaN", Inputs: []Input{
			{T: withFloats(Rand(751, -2, 2, 3, 5), map[int]float32{0: nan, 4: pinf, 7: nan, 9: ninf})}}},
	)
	infs := withFloats(Rand(752, -2, 2, 3, 5), map[int]float32{0: nan, 4: pinf, 7: ninf, 9: ninf, 12: pinf})
	for _, d := range []struct {
		name     string
		neg, pos int64
	}{{"both", 1, 1}, {"negative", 1, 0}, {"positive", 0, 1}, {"neither", 0, 0}} {
		Add(Case{Name: "logic/IsInf/" + d.name, Op: "IsInf", Inputs: []Input{{T: infs}},
			Attrs: map[string]graph.Attr{"detect_negative": AInt(d.neg), "detect_positive": AInt(d.pos)}})
	}
}

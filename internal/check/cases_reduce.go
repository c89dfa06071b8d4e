package check

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func init() {
	reduceCases()
	argCases()
}

func reduceCases() {
	ops := []struct {
		op     string
		lo, hi float32 // input range: positive where the result needs it
		ints   bool    // int64 and int32 kernels too
	}{
		{"ReduceSum", -1, 1, true}, {"ReduceMean", -1, 1, true}, {"ReduceMax", -1, 1, true},
		{"ReduceMin", -1, 1, true}, {"ReduceProd", 0.5, 1.5, true}, {"ReduceL1", -1, 1, true},
		{"ReduceL2", -1, 1, true}, {"ReduceLogSum", 0.1, 2, false}, {"ReduceLogSumExp", -3, 3, false},
		{"ReduceSumSquare", -1, 1, true},
	}
	for i, r := range ops {
		s := uint64(800 + 40*i)
		name := "reduce/" + r.op + "/"
		// The opset before axes became an input: 11 for ReduceSum, 13 for the others.
		attrOpset := int64(13)
		if r.op == "ReduceSum" {
			attrOpset = 11
		}
		axes := func(v ...int64) Input { return Input{T: Ints([]int{len(v)}, v...), Const: true} }
		keep := func(k int64) map[string]graph.Attr { return map[string]graph.Attr{"keepdims": AInt(k)} }
		x := func(seed uint64, shape ...int) Input { return Input{T: Rand(seed, r.lo, r.hi, shape...)} }
		Add(
			Case{Name: name + "attr-axes", Op: r.op, Opset: attrOpset,
				Attrs:  map[string]graph.Attr{"axes": AInts(1)},
				Inputs: []Input{x(s, 3, 4, 5)}},
			Case{Name: name + "attr-axes-negative", Op: r.op, Opset: attrOpset,
				Attrs:  map[string]graph.Attr{"axes": AInts(-1, 0), "keepdims": AInt(0)},
				Inputs: []Input{x(s+1, 3, 4, 5)}},
			Case{Name: name + "input-axes-last", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{x(s+2, 2, 3, 7), axes(-1)}},
			Case{Name: name + "input-axes-first", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+3, 6, 3, 7), axes(0)}},
			Case{Name: name + "all", Op: r.op, Opset: 18, Attrs: keep(0), Inputs: []Input{x(s+4, 4, 6)}},
			Case{Name: name + "all-keepdims", Op: r.op, Opset: attrOpset, Inputs: []Input{x(s+5, 2, 3, 5)}},
			Case{Name: name + "noop", Op: r.op, Opset: 18,
				Attrs:  map[string]graph.Attr{"noop_with_empty_axes": AInt(1)},
				Inputs: []Input{x(s+6, 2, 3)}},
			Case{Name: name + "size1-axes", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+7, 3, 1, 4, 1), axes(1, 3)}},
			// Axes that are not contiguous are gathered first.
			Case{Name: name + "gather", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{x(s+8, 3, 4, 5, 2), axes(0, 2)}},
			Case{Name: name + "gather-rank7", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+9, 2, 2, 3, 2, 1, 2, 3), axes(1, 3, -1)}},
			// Long reductions take a block per output element.
			Case{Name: name + "block", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{x(s+10, 3, 700), axes(1)}},
			Case{Name: name + "block-inner", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+11, 2, 300, 3), axes(-2)}},
			Case{Name: name + "block-few-outputs", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+12, 5, 40), axes(1)}},
			Case{Name: name + "gather-block", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{x(s+13, 30, 4, 20), axes(0, 2)}},
			Case{Name: name + "large-block-grid", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{x(s+14, 2100, 64), axes(1)}},
			Case{Name: name + "many-outputs", Op: r.op, Opset: 18,
				Inputs: []Input{x(s+15, 3000, 40), axes(1)}},
			// The reduction of an empty set is the operator's identity.
			Case{Name: name + "empty-set", Op: r.op, Opset: 18,
				Inputs: []Input{{T: must(inference.New([]int{2, 0, 3}, []float32{}))}, axes(1)}},
			Case{Name: name + "nan-inf", Op: r.op, Opset: 18, Attrs: keep(0), Inputs: []Input{
				{T: withFloats(Rand(s+16, r.lo, r.hi, 4, 5), map[int]float32{1: nan, 5: pinf, 6: ninf, 10: ninf, 11: ninf, 12: ninf, 13: ninf, 14: ninf, 15: pinf, 19: pinf})},
				axes(1)}},
			Case{Name: name + "nan-block", Op: r.op, Opset: 18, Attrs: keep(0), Inputs: []Input{
				{T: withFloats(Rand(s+17, r.lo, r.hi, 3, 300), map[int]float32{7: nan, 310: pinf, 320: ninf, 700: nan, 800: ninf})},
				axes(1)}},
		)
		if !r.ints {
			continue
		}
		ilo, ihi := int64(-20), int64(20)
		if r.op == "ReduceProd" {
			ilo, ihi = -3, 3
		}
		Add(
			Case{Name: name + "int64", Op: r.op, Opset: 18, Inputs: []Input{{T: randInts[int64](s+20, ilo, ihi, 3, 4, 5)}, axes(1)}},
			Case{Name: name + "int64-gather", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{{T: randInts[int64](s+21, ilo, ihi, 3, 4, 5)}, axes(0, 2)}},
			Case{Name: name + "int64-block", Op: r.op, Opset: 18,
				Inputs: []Input{{T: randInts[int64](s+22, ilo, ihi, 2, 300)}, axes(1)}},
			Case{Name: name + "int32", Op: r.op, Opset: 18, Attrs: keep(0),
				Inputs: []Input{{T: randInts[int32](s+23, ilo, ihi, 3, 4, 5)}, axes(-1)}},
			Case{Name: name + "int32-block", Op: r.op, Opset: 18,
				Inputs: []Input{{T: randInts[int32](s+24, ilo*1000, ihi*1000, 2, 300, 2)}, axes(1)}},
			Case{Name: name + "int32-gather", Op: r.op, Opset: 18,
				Inputs: []Input{{T: randInts[int32](s+25, ilo, ihi, 2, 3, 2, 3)}, axes(0, 2)}},
		)
		if r.op == "ReduceL2" {
			// Sums of squares that wrap past 2^63 are negative, their square
			// root NaN, which truncates to the least int64 (Go's int64(v) on
			// amd64), then to 0 in int32; the GPU's bare conversion would
			// give 0 for the int64.
			Add(
				Case{Name: name + "int64-wrapped", Op: r.op, Opset: 18, Inputs: []Input{
					{T: Ints([]int{3, 2}, 3037000500, 0, 3037000500, 3037000500, 3037000499, 1)}, axes(1)}},
				Case{Name: name + "int32-wrapped", Op: r.op, Opset: 18, Inputs: []Input{
					{T: tensorOf([]int{2, 3}, int32(-2147483648), -2147483648, 0, 2147483647, 2147483647, 3)}, axes(1)}},
			)
		}
		if r.op != "ReduceMean" { // the CPU backend reports an integer mean of nothing
			Add(Case{Name: name + "int64-empty-set", Op: r.op, Opset: 18,
				Inputs: []Input{{T: must(inference.New([]int{2, 0}, []int64{}))}, axes(1)}})
			Add(Case{Name: name + "int32-empty-set", Op: r.op, Opset: 18,
				Inputs: []Input{{T: must(inference.New([]int{0, 3}, []int32{}))}, axes(0)}})
		}
	}
}

func argCases() {
	for i, op := range []string{"ArgMax", "ArgMin"} {
		s := uint64(1300 + 40*i)
		name := "reduce/" + op + "/"
		attrs := func(axis, keepdims, last int64) map[string]graph.Attr {
			return map[string]graph.Attr{"axis": AInt(axis), "keepdims": AInt(keepdims), "select_last_index": AInt(last)}
		}
		for last := range int64(2) {
			suffix := []string{"", "-last"}[last]
			Add(
				Case{Name: name + "default-axis" + suffix, Op: op, Attrs: map[string]graph.Attr{"select_last_index": AInt(last)},
					Inputs: []Input{{T: randFloatInts(s, 2, 5, 4)}}},
				Case{Name: name + "axis-last-nokeep" + suffix, Op: op, Attrs: attrs(-1, 0, last),
					Inputs: []Input{{T: randFloatInts(s+1, 2, 3, 4, 6)}}},
				Case{Name: name + "axis-inner" + suffix, Op: op, Attrs: attrs(1, 1, last),
					Inputs: []Input{{T: randFloatInts(s+2, 2, 3, 6, 4)}}},
				Case{Name: name + "nan" + suffix, Op: op, Attrs: attrs(1, 1, last), Inputs: []Input{
					{T: withFloats(randFloatInts(s+3, 2, 4, 6), map[int]float32{2: nan, 4: nan, 7: nan, 13: pinf, 14: ninf, 23: nan})}}},
				Case{Name: name + "block" + suffix, Op: op, Attrs: attrs(1, 0, last),
					Inputs: []Input{{T: randFloatInts(s+4, 3, 2, 1000)}}},
				Case{Name: name + "block-inner" + suffix, Op: op, Attrs: attrs(1, 1, last),
					Inputs: []Input{{T: randFloatInts(s+5, 3, 2, 300, 3)}}},
				Case{Name: name + "block-nan" + suffix, Op: op, Attrs: attrs(-1, 1, last), Inputs: []Input{
					{T: withFloats(Rand(s+6, -2, 2, 3, 500), map[int]float32{400: nan, 300: nan, 600: pinf, 1200: nan, 1201: nan})}}},
				Case{Name: name + "random" + suffix, Op: op, Attrs: attrs(0, 1, last),
					Inputs: []Input{{T: Rand(s+7, -2, 2, 7, 3, 5)}}},
			)
		}
	}
}

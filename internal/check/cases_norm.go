package check

import (
	"math"

	"github.com/beamml/beamml/inference/graph"
)

// Cases of the normalisation operators (norm.cu; lower_norm.go,
// lower_softmax.go): rows shorter and longer than a block, odd sizes, every
// broadcast of LayerNormalization's scale and bias that the kernel takes,
// the optional statistics outputs, and Softmax's axis rules before and from
// opset 13.
func init() {
	type attrs = map[string]graph.Attr
	nan := float32(math.NaN())

	bn := func(name string, seed uint64, x []int, params int, a attrs, opset int64) Case {
		return Case{Name: "norm/BatchNormalization/" + name, Op: "BatchNormalization", Attrs: a, Opset: opset, Inputs: []Input{
			{T: Rand(seed, -2, 2, x...)},
			{T: Rand(seed+1, 0.5, 1.5, params), Const: true},
			{T: Rand(seed+2, -1, 1, params), Const: true},
			{T: Rand(seed+3, -0.5, 0.5, params), Const: true},
			{T: Rand(seed+4, 0.2, 2, params), Const: true},
		}}
	}
	Add(
		bn("4d", 1, []int{2, 3, 5, 7}, 3, nil, 0),
		bn("2d", 6, []int{4, 5}, 5, attrs{"epsilon": AFloat(1e-3)}, 0),
		bn("3d-batch", 11, []int{3, 4, 9}, 4, nil, 15),
		// Before opset 9, spatial=0 keeps a statistic per element of a sample.
		bn("per-element", 16, []int{2, 3, 2, 2}, 12, attrs{"spatial": AInt(0)}, 7),
	)

	rowsIn := func(seed uint64, x []int, params ...[]int) []Input {
		in := []Input{{T: Rand(seed, -3, 3, x...)}}
		for i, p := range params {
			in = append(in, Input{T: Rand(seed+1+uint64(i), -1.5, 1.5, p...), Const: true})
		}
		return in
	}
	Add(
		Case{Name: "norm/InstanceNormalization/4d", Op: "InstanceNormalization", Inputs: rowsIn(20, []int{2, 3, 5, 7}, []int{3}, []int{3})},
		Case{Name: "norm/InstanceNormalization/long-rows", Op: "InstanceNormalization", Attrs: attrs{"epsilon": AFloat(1e-2)},
			Inputs: rowsIn(23, []int{1, 2, 23, 29}, []int{2}, []int{2})},
		Case{Name: "norm/InstanceNormalization/3d", Op: "InstanceNormalization", Inputs: rowsIn(26, []int{3, 4, 11}, []int{4}, []int{4})},

		Case{Name: "norm/GroupNormalization/per-group", Op: "GroupNormalization", Opset: 18, Attrs: attrs{"num_groups": AInt(2)},
			Inputs: rowsIn(30, []int{2, 6, 5, 3}, []int{2}, []int{2})},
		Case{Name: "norm/GroupNormalization/per-channel", Op: "GroupNormalization", Opset: 21, Attrs: attrs{"num_groups": AInt(3), "epsilon": AFloat(1e-3)},
			Inputs: rowsIn(33, []int{2, 6, 17, 19}, []int{6}, []int{6})},

		Case{Name: "norm/LayerNormalization/last-axis", Op: "LayerNormalization", Inputs: rowsIn(40, []int{3, 5, 7}, []int{7}, []int{7})},
		Case{Name: "norm/LayerNormalization/axis1-full", Op: "LayerNormalization", Attrs: attrs{"axis": AInt(1)},
			Inputs: rowsIn(43, []int{2, 4, 9, 11}, []int{4, 9, 11}, []int{4, 9, 11})},
		Case{Name: "norm/LayerNormalization/broadcast-scale", Op: "LayerNormalization", Attrs: attrs{"axis": AInt(-2)},
			Inputs: rowsIn(46, []int{3, 6, 5}, []int{1, 5}, []int{6, 1})},
		Case{Name: "norm/LayerNormalization/scalar-scale-no-bias", Op: "LayerNormalization", Attrs: attrs{"axis": AInt(1)},
			Inputs: rowsIn(49, []int{4, 3, 3}, []int{1})},
		Case{Name: "norm/LayerNormalization/middle-scale", Op: "LayerNormalization", Attrs: attrs{"axis": AInt(1)},
			Inputs: rowsIn(52, []int{2, 3, 4, 5}, []int{1, 4, 1}, []int{3, 1, 1})},
		Case{Name: "norm/LayerNormalization/long-rows", Op: "LayerNormalization", Attrs: attrs{"epsilon": AFloat(1e-3)},
			Inputs: rowsIn(55, []int{3, 1000}, []int{1000}, []int{1000})},
		Case{Name: "norm/LayerNormalization/mean-invstddev", Op: "LayerNormalization", Attrs: attrs{"axis": AInt(-2)}, Outputs: 3,
			Inputs: rowsIn(58, []int{2, 3, 4, 6}, []int{4, 6}, []int{6})},
		Case{Name: "norm/LayerNormalization/mean-only", Op: "LayerNormalization", Outputs: 2,
			Inputs: rowsIn(61, []int{5, 8}, []int{8})},

		Case{Name: "norm/RMSNormalization/last-axis", Op: "RMSNormalization", Opset: 23, Inputs: rowsIn(70, []int{3, 4, 10}, []int{10})},
		Case{Name: "norm/RMSNormalization/axis1", Op: "RMSNormalization", Opset: 23, Attrs: attrs{"axis": AInt(1), "epsilon": AFloat(1e-3)},
			Inputs: rowsIn(73, []int{2, 5, 300}, []int{5, 1})},
	)

	lp := func(name string, seed uint64, x []int, a attrs) Case {
		return Case{Name: "norm/LpNormalization/" + name, Op: "LpNormalization", Attrs: a, Inputs: []Input{{T: Rand(seed, -2, 2, x...)}}}
	}
	Add(
		lp("last-axis", 75, []int{3, 4, 7}, nil),
		lp("p1-axis0", 76, []int{5, 3, 2}, attrs{"p": AInt(1), "axis": AInt(0)}),
		lp("long-rows", 77, []int{2, 700}, attrs{"p": AInt(2)}),
		Case{Name: "norm/LpNormalization/zero-row", Op: "LpNormalization", Inputs: []Input{{T: Floats([]int{2, 3}, 0, 0, 0, 1, -2, 2)}}},
	)

	lrn := func(name string, seed uint64, x []int, a attrs) Case {
		return Case{Name: "norm/LRN/" + name, Op: "LRN", Attrs: a, Inputs: []Input{{T: Rand(seed, -2, 2, x...)}}}
	}
	Add(
		lrn("size3", 80, []int{2, 5, 4, 3}, attrs{"size": AInt(3)}),
		lrn("size4-attrs", 81, []int{1, 7, 5, 5}, attrs{"size": AInt(4), "alpha": AFloat(0.01), "beta": AFloat(0.5), "bias": AFloat(2)}),
		lrn("2d-wide", 82, []int{3, 6}, attrs{"size": AInt(9)}),
	)

	for _, op := range []string{"Softmax", "LogSoftmax", "Hardmax"} {
		sm := func(name string, seed uint64, x []int, a attrs, opset int64) Case {
			return Case{Name: "norm/" + op + "/" + name, Op: op, Attrs: a, Opset: opset, Inputs: []Input{{T: Rand(seed, -5, 5, x...)}}}
		}
		Add(
			sm("last-axis", 90, []int{3, 4, 7}, nil, 0),
			sm("middle-axis", 91, []int{3, 5, 4}, attrs{"axis": AInt(1)}, 0),
			sm("first-axis", 92, []int{6, 3, 2}, attrs{"axis": AInt(-3)}, 0),
			sm("long-rows", 93, []int{2, 1000}, nil, 0),
			sm("opset11-flatten", 94, []int{2, 3, 4, 5}, nil, 11),
			sm("opset11-axis2", 95, []int{2, 3, 4, 5}, attrs{"axis": AInt(2)}, 11),
			sm("1d", 96, []int{37}, nil, 0),
			Case{Name: "norm/" + op + "/nan", Op: op, Inputs: []Input{{T: Floats([]int{4, 3},
				nan, 1, 2, 3, nan, 1, 0, 0, 0, float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)))}}},
		)
	}
	Add(Case{Name: "norm/Hardmax/ties", Op: "Hardmax", Inputs: []Input{{T: Floats([]int{3, 5},
		1, 3, 2, 3, 3, -1, -1, -1, -1, -1, 0, 4, 4, 4, 4)}}})
}

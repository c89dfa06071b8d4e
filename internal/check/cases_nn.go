package check

import (
	"math"

	"github.com/beamml/beamml/inference/graph"
)

// Cases of the neural-network operators (nn.cu; lower_conv.go,
// lower_linalg.go, lower_pool.go): every convolution path (im2col + GEMM,
// pointwise GEMM, the direct depthwise kernel, each GEMM batching of images
// × groups), ConvTranspose, Gemm, MatMul and the pools, at odd sizes, with
// padding, strides, dilations, groups and batches above 1.
func init() {
	type attrs = map[string]graph.Attr
	inf := float32(math.Inf(1))
	conv := func(name string, seed uint64, x, w []int, bias bool, a attrs) Case {
		in := []Input{{T: Rand(seed, -1, 1, x...)}, {T: Rand(seed+1, -1, 1, w...), Const: true}}
		if bias {
			in = append(in, Input{T: Rand(seed+2, -1, 1, w[0]), Const: true})
		}
		return Case{Name: "nn/Conv/" + name, Op: "Conv", Attrs: a, Inputs: in}
	}
	Add(
		conv("2d", 1, []int{1, 3, 7, 9}, []int{4, 3, 3, 3}, false, nil),
		conv("2d-pads-strides-bias", 4, []int{2, 3, 8, 7}, []int{5, 3, 3, 2}, true,
			attrs{"pads": AInts(1, 0, 2, 1), "strides": AInts(2, 1)}),
		conv("2d-dilations-groups", 7, []int{2, 4, 9, 9}, []int{6, 2, 3, 3}, true,
			attrs{"group": AInt(2), "dilations": AInts(2, 1), "pads": AInts(1, 1, 1, 1)}),
		// 3 images, 2 groups: the GEMMs batch over images, one call a group.
		conv("2d-groups-images", 10, []int{3, 4, 6, 5}, []int{4, 2, 2, 3}, true,
			attrs{"group": AInt(2), "strides": AInts(1, 2)}),
		// 2 images, 4 groups: one call an image, batched over groups.
		conv("2d-groups-many", 13, []int{2, 8, 5, 6}, []int{12, 2, 3, 3}, true,
			attrs{"group": AInt(4), "pads": AInts(0, 1, 2, 1)}),
		conv("depthwise", 16, []int{2, 4, 10, 11}, []int{8, 1, 3, 3}, true,
			attrs{"group": AInt(4), "pads": AInts(1, 1, 1, 1), "strides": AInts(2, 2)}),
		conv("depthwise-dilated", 19, []int{1, 5, 9, 8}, []int{5, 1, 3, 2}, false,
			attrs{"group": AInt(5), "dilations": AInts(2, 3), "pads": AInts(2, 0, 1, 3)}),
		conv("depthwise-1d", 22, []int{2, 3, 15}, []int{6, 1, 4}, true,
			attrs{"group": AInt(3), "pads": AInts(1, 2), "strides": AInts(2)}),
		conv("pointwise", 25, []int{3, 5, 4, 7}, []int{6, 5, 1, 1}, true, nil),
		conv("pointwise-groups", 28, []int{3, 6, 3, 5}, []int{4, 3, 1, 1}, false, attrs{"group": AInt(2)}),
		conv("1d", 31, []int{2, 3, 17}, []int{4, 3, 5}, true, attrs{"pads": AInts(2, 1), "strides": AInts(2)}),
		conv("3d", 34, []int{2, 2, 5, 6, 7}, []int{3, 2, 3, 3, 2}, true,
			attrs{"pads": AInts(1, 0, 1, 1, 1, 0), "strides": AInts(2, 1, 2), "dilations": AInts(1, 2, 1)}),
		conv("same-upper", 37, []int{1, 3, 9, 8}, []int{4, 3, 4, 3}, true,
			attrs{"auto_pad": AStr("SAME_UPPER"), "strides": AInts(2, 3)}),
		conv("same-lower", 40, []int{2, 2, 7, 6}, []int{3, 2, 2, 4}, false,
			attrs{"auto_pad": AStr("SAME_LOWER"), "strides": AInts(2, 1)}),
		conv("valid-kernel-shape", 43, []int{1, 2, 6, 6}, []int{3, 2, 3, 3}, false,
			attrs{"auto_pad": AStr("VALID"), "kernel_shape": AInts(3, 3), "pads": AInts(1, 1, 1, 1)}),
		// The clamps passes.FuseEpilogues folds into a Conv: Relu and Clip.
		conv("fused-relu", 46, []int{2, 3, 6, 7}, []int{4, 3, 3, 3}, true,
			attrs{"pads": AInts(1, 1, 1, 1), "beamml.fused_min": AFloat(0), "beamml.fused_max": AFloat(inf)}),
		conv("fused-clip-nobias", 49, []int{1, 3, 5, 5}, []int{2, 3, 2, 2}, false,
			attrs{"beamml.fused_min": AFloat(-0.5), "beamml.fused_max": AFloat(0.6)}),
		conv("fused-clip-depthwise", 52, []int{2, 3, 7, 6}, []int{3, 1, 3, 3}, true,
			attrs{"group": AInt(3), "pads": AInts(1, 1, 1, 1), "beamml.fused_min": AFloat(-0.3), "beamml.fused_max": AFloat(0.4)}),
		conv("fused-relu-pointwise", 55, []int{2, 4, 3, 3}, []int{5, 4, 1, 1}, false,
			attrs{"beamml.fused_min": AFloat(0), "beamml.fused_max": AFloat(inf)}),
		// The activations it folds into a depthwise Conv: MobileNetV3's
		// hard-swish, EfficientNet's SiLU (a gated Sigmoid).
		conv("fused-hardswish-depthwise", 58, []int{2, 4, 7, 6}, []int{4, 1, 3, 3}, true,
			attrs{"group": AInt(4), "pads": AInts(1, 1, 1, 1), "beamml.activation": AStr("HardSwish")}),
		conv("fused-silu-depthwise", 87, []int{1, 3, 6, 6}, []int{6, 1, 5, 5}, true,
			attrs{"group": AInt(3), "pads": AInts(2, 2, 2, 2), "strides": AInts(2, 2), "beamml.activation": AStr("Sigmoid"), "beamml.activation_gate": AInt(1)}),
	)

	convT := func(name string, seed uint64, x, w []int, bias bool, a attrs) Case {
		in := []Input{{T: Rand(seed, -1, 1, x...)}, {T: Rand(seed+1, -1, 1, w...), Const: true}}
		if bias {
			g := int64(1)
			if v, ok := a["group"]; ok {
				g = v.Int
			}
			in = append(in, Input{T: Rand(seed+2, -1, 1, w[1]*int(g)), Const: true})
		}
		return Case{Name: "nn/ConvTranspose/" + name, Op: "ConvTranspose", Attrs: a, Inputs: in}
	}
	Add(
		convT("2d", 60, []int{1, 3, 4, 5}, []int{3, 2, 3, 3}, false, nil),
		convT("2d-strides-pads-outpad-bias", 63, []int{2, 3, 4, 5}, []int{3, 4, 3, 2}, true,
			attrs{"strides": AInts(2, 3), "pads": AInts(1, 0, 1, 1), "output_padding": AInts(1, 2)}),
		convT("2d-groups-dilations", 66, []int{3, 4, 3, 4}, []int{4, 3, 2, 3}, true,
			attrs{"group": AInt(2), "dilations": AInts(2, 1), "strides": AInts(1, 2)}),
		convT("2d-groups-many", 69, []int{1, 6, 3, 3}, []int{6, 2, 3, 3}, true,
			attrs{"group": AInt(3), "strides": AInts(2, 2), "pads": AInts(1, 1, 1, 1)}),
		convT("1d", 72, []int{2, 2, 7}, []int{2, 3, 4}, true, attrs{"strides": AInts(3), "pads": AInts(1, 2)}),
		convT("3d", 75, []int{1, 2, 3, 4, 3}, []int{2, 2, 2, 3, 2}, true,
			attrs{"strides": AInts(2, 1, 2), "pads": AInts(0, 1, 0, 1, 0, 1)}),
		convT("output-shape", 78, []int{2, 2, 3, 3}, []int{2, 3, 3, 3}, true,
			attrs{"strides": AInts(3, 2), "output_shape": AInts(10, 8)}),
		convT("same-upper", 81, []int{1, 2, 4, 3}, []int{2, 2, 3, 3}, false,
			attrs{"strides": AInts(2, 2), "auto_pad": AStr("SAME_UPPER")}),
		convT("same-lower", 84, []int{1, 2, 4, 3}, []int{2, 2, 4, 3}, false,
			attrs{"strides": AInts(2, 3), "auto_pad": AStr("SAME_LOWER")}),
	)

	gemm := func(name string, seed uint64, a, b []int, c []int, at attrs) Case {
		in := []Input{{T: Rand(seed, -1, 1, a...)}, {T: Rand(seed+1, -1, 1, b...)}}
		if c != nil {
			in = append(in, Input{T: Rand(seed+2, -1, 1, c...), Const: true})
		}
		return Case{Name: "nn/Gemm/" + name, Op: "Gemm", Attrs: at, Inputs: in}
	}
	Add(
		gemm("plain", 90, []int{5, 7}, []int{7, 3}, nil, nil),
		gemm("bias-row", 93, []int{4, 9}, []int{9, 6}, []int{6}, nil),
		gemm("transA-alpha-beta", 96, []int{9, 4}, []int{9, 6}, []int{4, 6}, attrs{"transA": AInt(1), "alpha": AFloat(0.5), "beta": AFloat(-2)}),
		gemm("transB-column-bias", 99, []int{4, 9}, []int{6, 9}, []int{4, 1}, attrs{"transB": AInt(1)}),
		gemm("transAB-scalar-bias", 102, []int{9, 4}, []int{6, 9}, []int{}, attrs{"transA": AInt(1), "transB": AInt(1), "beta": AFloat(3)}),
		gemm("row-bias-2d", 105, []int{3, 5}, []int{5, 7}, []int{1, 7}, attrs{"alpha": AFloat(2)}),
		gemm("beta-zero", 108, []int{3, 5}, []int{5, 7}, []int{3, 7}, attrs{"beta": AFloat(0)}),
		gemm("one-row", 111, []int{1, 300}, []int{300, 17}, []int{17}, nil),
	)

	matmul := func(name string, seed uint64, a, b []int) Case {
		return Case{Name: "nn/MatMul/" + name, Op: "MatMul", Inputs: []Input{{T: Rand(seed, -1, 1, a...)}, {T: Rand(seed+1, -1, 1, b...)}}}
	}
	Add(
		matmul("2d", 120, []int{5, 7}, []int{7, 3}),
		matmul("batched", 122, []int{3, 4, 6}, []int{3, 6, 5}),
		matmul("batched-weights", 124, []int{2, 3, 4, 6}, []int{6, 5}),
		matmul("broadcast-a", 126, []int{4, 6}, []int{2, 3, 6, 5}),
		matmul("broadcast-both", 128, []int{2, 1, 3, 4}, []int{3, 4, 5}),
		matmul("broadcast-inner", 130, []int{3, 1, 2, 4}, []int{1, 4, 4, 3}),
		matmul("vector-matrix", 132, []int{6}, []int{2, 6, 4}),
		matmul("matrix-vector", 134, []int{2, 3, 6}, []int{6}),
		matmul("dot", 136, []int{9}, []int{9}),
	)

	pool := func(op, name string, seed uint64, x []int, a attrs) Case {
		return Case{Name: "nn/" + op + "/" + name, Op: op, Attrs: a, Inputs: []Input{{T: Rand(seed, -2, 2, x...)}}}
	}
	for _, op := range []string{"MaxPool", "AveragePool", "LpPool"} {
		Add(
			pool(op, "2d", 140, []int{2, 3, 7, 8}, attrs{"kernel_shape": AInts(3, 2)}),
			pool(op, "2d-pads-strides", 141, []int{2, 3, 9, 8}, attrs{"kernel_shape": AInts(3, 3), "strides": AInts(2, 2), "pads": AInts(1, 0, 1, 2)}),
			pool(op, "1d", 142, []int{3, 2, 11}, attrs{"kernel_shape": AInts(4), "strides": AInts(3), "pads": AInts(2, 1)}),
			pool(op, "3d", 143, []int{1, 2, 5, 6, 7}, attrs{"kernel_shape": AInts(2, 3, 2), "strides": AInts(2, 2, 1), "pads": AInts(0, 1, 1, 1, 0, 0)}),
			pool(op, "same-upper", 144, []int{1, 3, 7, 6}, attrs{"kernel_shape": AInts(3, 3), "strides": AInts(2, 2), "auto_pad": AStr("SAME_UPPER")}),
			pool(op, "same-lower", 145, []int{1, 2, 5, 6}, attrs{"kernel_shape": AInts(2, 3), "auto_pad": AStr("SAME_LOWER")}),
		)
	}
	for _, op := range []string{"MaxPool", "AveragePool"} {
		Add(
			pool(op, "ceil", 150, []int{2, 2, 8, 7}, attrs{"kernel_shape": AInts(3, 3), "strides": AInts(2, 2), "ceil_mode": AInt(1), "pads": AInts(1, 1, 0, 0)}),
			pool(op, "dilations", 151, []int{1, 3, 9, 10}, attrs{"kernel_shape": AInts(2, 3), "dilations": AInts(2, 3), "pads": AInts(1, 1, 1, 1)}),
		)
	}
	Add(
		pool("AveragePool", "include-pad", 155, []int{2, 3, 7, 8}, attrs{"kernel_shape": AInts(3, 3), "strides": AInts(2, 2), "pads": AInts(1, 1, 2, 1), "count_include_pad": AInt(1)}),
		// ceil_mode lets a last window reach past the end padding: it counts
		// only the taps inside the padded extent.
		pool("AveragePool", "include-pad-ceil", 156, []int{1, 2, 8, 8}, attrs{"kernel_shape": AInts(3, 3), "strides": AInts(2, 2), "pads": AInts(1, 1, 1, 1), "count_include_pad": AInt(1), "ceil_mode": AInt(1)}),
		pool("LpPool", "p3", 157, []int{2, 3, 6, 5}, attrs{"kernel_shape": AInts(2, 2), "p": AInt(3)}),
		pool("LpPool", "p1", 158, []int{2, 3, 6, 5}, attrs{"kernel_shape": AInts(3, 2), "p": AInt(1), "strides": AInts(2, 1)}),
		Case{Name: "nn/MaxPool/indices", Op: "MaxPool", Outputs: 2, Attrs: attrs{"kernel_shape": AInts(3, 2), "strides": AInts(2, 1), "pads": AInts(1, 0, 1, 1)},
			Inputs: []Input{{T: Rand(159, -2, 2, 2, 3, 7, 6)}}},
		Case{Name: "nn/MaxPool/indices-column-major", Op: "MaxPool", Outputs: 2, Attrs: attrs{"kernel_shape": AInts(2, 3), "storage_order": AInt(1), "pads": AInts(1, 1, 0, 1)},
			Inputs: []Input{{T: Rand(160, -2, 2, 2, 2, 5, 6)}}},
		Case{Name: "nn/MaxPool/indices-3d", Op: "MaxPool", Outputs: 2, Attrs: attrs{"kernel_shape": AInts(2, 2, 2), "storage_order": AInt(1), "strides": AInts(2, 2, 2)},
			Inputs: []Input{{T: Rand(161, -2, 2, 1, 2, 4, 5, 6)}}},
		Case{Name: "nn/MaxPool/indices-nan-ties", Op: "MaxPool", Outputs: 2, Attrs: attrs{"kernel_shape": AInts(2, 2)}, Inputs: []Input{{T: Floats([]int{1, 1, 3, 3},
			float32(math.NaN()), 1, 1, 3, float32(math.NaN()), 1, 3, 5, 5)}}},
		Case{Name: "nn/MaxPool/nan", Op: "MaxPool", Attrs: attrs{"kernel_shape": AInts(2, 2)}, Inputs: []Input{{T: Floats([]int{1, 1, 3, 3},
			float32(math.NaN()), 1, 2, 3, float32(math.NaN()), -1, 0, 5, 4)}}},
	)

	for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool"} {
		Add(
			pool(op, "2d", 160, []int{2, 3, 7, 9}, nil),
			pool(op, "large-plane", 161, []int{1, 2, 37, 29}, nil),
			pool(op, "1d", 162, []int{3, 5, 3}, nil),
			pool(op, "3d", 163, []int{2, 2, 3, 4, 5}, nil),
		)
	}
	Add(Case{Name: "nn/GlobalMaxPool/nan", Op: "GlobalMaxPool", Inputs: []Input{{T: Floats([]int{1, 2, 2, 2},
		1, float32(math.NaN()), 3, 2, -1, -2, -3, -4)}}})
}

package cpu

import (
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Kernels whose output shape comes from operand or attribute values, given
// values at int64's and float's extremes: the result is right, or an error
// wrapping inference.ErrShape; never a wrapped size, an empty tensor in
// place of an error, or a panic.

func TestKernelsRejectOverflowingValues(t *testing.T) {
	const maxDim = math.MaxInt32
	f32 := func(v float32) inference.Tensor { return tensorOf(t, []int{}, v) }
	i64 := func(v int64) inference.Tensor { return tensorOf(t, []int{}, v) }
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	x4 := tensorOf[float32](t, []int{4}, 1, 2, 3, 4)
	x115 := tensorOf[float32](t, []int{1, 1, 5}, 1, 2, 3, 4, 5)
	w113 := tensorOf[float32](t, []int{1, 1, 3}, 1, 1, 1)
	pad := testNode("Pad", 18, nil, 1)
	for _, tc := range []struct {
		name string
		n    opsem.Node
		in   []inference.Tensor
	}{
		{"Range int64 -2⁶³ to 2⁶³−1", testNode("Range", 11, nil, 1), []inference.Tensor{i64(math.MinInt64), i64(math.MaxInt64), i64(1)}},
		{"Range int64 2⁶³−1 to -2⁶³ down", testNode("Range", 11, nil, 1), []inference.Tensor{i64(math.MaxInt64), i64(math.MinInt64), i64(-1)}},
		{"Range int64 count past 2³¹−1", testNode("Range", 11, nil, 1), []inference.Tensor{i64(0), i64(math.MaxInt64), i64(1)}},
		{"Range float Inf to Inf", testNode("Range", 11, nil, 1), []inference.Tensor{f32(inf), f32(inf), f32(1)}},
		{"Range float -Inf to -Inf", testNode("Range", 11, nil, 1), []inference.Tensor{f32(-inf), f32(-inf), f32(1)}},
		{"Range float delta Inf", testNode("Range", 11, nil, 1), []inference.Tensor{f32(0), f32(1), f32(inf)}},
		{"Range float NaN", testNode("Range", 11, nil, 1), []inference.Tensor{f32(0), f32(nan), f32(1)}},
		{"Pad by -2⁶³", pad, []inference.Tensor{x4, i64s(t, math.MinInt64, 0)}},
		{"Pad by 2⁶³−1 twice", pad, []inference.Tensor{x4, i64s(t, math.MaxInt64, math.MaxInt64)}},
		{"Tile 2 by 2⁶²", testNode("Tile", 13, nil, 1), []inference.Tensor{tensorOf[float32](t, []int{2}, 1, 2), i64s(t, 1<<62)}},
		{"Tile past int", testNode("Tile", 13, nil, 1), []inference.Tensor{tensorOf[float32](t, []int{1, 1, 1}, 1), i64s(t, maxDim, maxDim, maxDim)}},
		{"Expand past int", testNode("Expand", 13, nil, 1), []inference.Tensor{f32(1), i64s(t, maxDim, maxDim, maxDim)}},
		{"OneHot depth NaN", testNode("OneHot", 11, nil, 1), []inference.Tensor{i64s(t, 0), f32(nan), tensorOf[float32](t, []int{2}, 0, 1)}},
		{"OneHot depth 1e20", testNode("OneHot", 11, nil, 1), []inference.Tensor{i64s(t, 0), f32(1e20), tensorOf[float32](t, []int{2}, 0, 1)}},
		{"OneHot depth 2⁶³−1", testNode("OneHot", 11, nil, 1), []inference.Tensor{i64s(t, 0), i64(math.MaxInt64), tensorOf[float32](t, []int{2}, 0, 1)}},
		{"ConstantOfShape -2⁶³", testNode("ConstantOfShape", 20, nil, 1), []inference.Tensor{i64s(t, math.MinInt64)}},
		{"ConstantOfShape past int", testNode("ConstantOfShape", 20, nil, 1), []inference.Tensor{i64s(t, maxDim, maxDim, maxDim)}},
		{"Reshape empty to [0, -1]", testNode("Reshape", 13, nil, 1), []inference.Tensor{tensorOf[float32](t, []int{0, 3}), i64s(t, 0, -1)}},
		{"Reshape past int with -1", testNode("Reshape", 13, nil, 1), []inference.Tensor{x4, i64s(t, maxDim, maxDim, maxDim, -1)}},
		{"Reshape shape NaN", testNode("Reshape", 13, nil, 1), []inference.Tensor{x4, tensorOf[float32](t, []int{2}, nan, 1)}},
		{"Resize scale Inf", testNode("Resize", 13, nil, 1), []inference.Tensor{x4, {}, tensorOf[float32](t, []int{1}, inf)}},
		{"Resize scale NaN", testNode("Resize", 13, nil, 1), []inference.Tensor{x4, {}, tensorOf[float32](t, []int{1}, nan)}},
		{"Resize scale 1e30", testNode("Resize", 13, nil, 1), []inference.Tensor{x4, {}, tensorOf[float32](t, []int{1}, 1e30)}},
		{"Resize size 2⁶³−1", testNode("Resize", 13, nil, 1), []inference.Tensor{x4, {}, {}, i64s(t, math.MaxInt64)}},
		{"DepthToSpace blocksize 2³²", testNode("DepthToSpace", 13, map[string]graph.Attr{"blocksize": attrInt(1 << 32)}, 1), []inference.Tensor{tensorOf[float32](t, []int{1, 4, 1, 1}, 1, 2, 3, 4)}},
		{"Split parts wrap to the axis", testNode("Split", 13, nil, 3), []inference.Tensor{tensorOf[float32](t, []int{2}, 1, 2), i64s(t, math.MaxInt64, math.MaxInt64, 4)}},
		{"MaxPool pads 2⁶³−1", testNode("MaxPool", 12, map[string]graph.Attr{"kernel_shape": attrInts(3), "pads": attrInts(math.MaxInt64, math.MaxInt64)}, 1), []inference.Tensor{x115}},
		{"ConvTranspose stride 2⁶²", testNode("ConvTranspose", 11, map[string]graph.Attr{"strides": attrInts(1 << 62)}, 1), []inference.Tensor{x115, w113}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := kernels[tc.n.OpType](tc.n, tc.in)
			if !errors.Is(err, inference.ErrShape) {
				t.Errorf("%s: %v, %v; want ErrShape", tc.name, out, err)
			}
		})
	}
}

func TestKernelsAtValueExtremes(t *testing.T) {
	x := tensorOf[int64](t, []int{5}, 0, 1, 2, 3, 4)
	// −2⁶³ + 2·(2⁶³−1) = 2⁶³−2, though 2·(2⁶³−1) wraps.
	y := runKernel(t, testNode("Range", 11, nil, 1), i64s(t, math.MinInt64), i64s(t, math.MaxInt64), i64s(t, math.MaxInt64))[0]
	checkExact[int64](t, y, []int{3}, math.MinInt64, -1, math.MaxInt64-1)
	// Steps of ±(2⁶³−1) and −2⁶³ keep the first element.
	y = runKernel(t, testNode("Slice", 13, nil, 1), x, i64s(t, 0), i64s(t, math.MaxInt64), i64s(t, 0), i64s(t, math.MaxInt64))[0]
	checkExact[int64](t, y, []int{1}, 0)
	y = runKernel(t, testNode("Slice", 13, nil, 1), x, i64s(t, -1), i64s(t, math.MinInt64), i64s(t, 0), i64s(t, math.MinInt64))[0]
	checkExact[int64](t, y, []int{1}, 4)
	y = runKernel(t, testNode("Slice", 13, nil, 1), x, i64s(t, math.MaxInt64), i64s(t, math.MinInt64), i64s(t, 0), i64s(t, -math.MaxInt64))[0]
	checkExact[int64](t, y, []int{1}, 4)
	y = runKernel(t, testNode("Slice", 13, nil, 1), x, i64s(t, math.MinInt64), i64s(t, math.MaxInt64), i64s(t, 0), i64s(t, 3))[0]
	checkExact[int64](t, y, []int{2}, 0, 3)
	// An empty tensor whose other dimensions multiply past int (a 64-bit
	// one: int64(int(h)) is h only there).
	if h := int64(1) << 40; int64(int(h)) == h {
		shape := []int{0, int(h), int(h)}
		y = runKernel(t, testNode("Softmax", 13, map[string]graph.Attr{"axis": attrInt(0)}, 1), tensorOf[float32](t, shape))[0]
		checkExact[float32](t, y, shape)
	}
}

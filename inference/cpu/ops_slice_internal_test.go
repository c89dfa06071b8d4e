package cpu

import (
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The kernels here copy elements, so results are compared exactly.

func TestSlice(t *testing.T) {
	x := tensorOf[int64](t, []int{5}, 0, 1, 2, 3, 4)
	// Negative step from the end, the end clamped to before index 0.
	y := runKernel(t, testNode("Slice", 13, nil, 1), x, i64s(t, -1), i64s(t, math.MinInt64), i64s(t, 0), i64s(t, -2))[0]
	checkExact[int64](t, y, []int{3}, 4, 2, 0)
	// Slice-1 takes attributes; an end past the dimension clamps.
	n := testNode("Slice", 1, map[string]graph.Attr{"starts": attrInts(1), "ends": attrInts(1000)}, 1)
	y = runKernel(t, n, x)[0]
	checkExact[int64](t, y, []int{4}, 1, 2, 3, 4)
}

func TestConcatSplit(t *testing.T) {
	a := tensorOf[float32](t, []int{2, 1}, 1, 2)
	b := tensorOf[float32](t, []int{2, 2}, 3, 4, 5, 6)
	y := runKernel(t, testNode("Concat", 13, map[string]graph.Attr{"axis": attrInt(-1)}, 1), a, b)[0]
	checkExact[float32](t, y, []int{2, 3}, 1, 3, 4, 2, 5, 6)
	// Split-18 num_outputs: chunks of ceil(7/3) = 3, the last one 1.
	x := tensorOf[int32](t, []int{7}, 0, 1, 2, 3, 4, 5, 6)
	outs := runKernel(t, testNode("Split", 18, map[string]graph.Attr{"num_outputs": attrInt(3)}, 3), x)
	checkExact[int32](t, outs[0], []int{3}, 0, 1, 2)
	checkExact[int32](t, outs[1], []int{3}, 3, 4, 5)
	checkExact[int32](t, outs[2], []int{1}, 6)
	// Split-2 reads the split attribute.
	outs = runKernel(t, testNode("Split", 2, map[string]graph.Attr{"split": attrInts(2, 5)}, 2), x)
	checkExact[int32](t, outs[0], []int{2}, 0, 1)
	checkExact[int32](t, outs[1], []int{5}, 2, 3, 4, 5, 6)
}

func TestPadModes(t *testing.T) {
	x := tensorOf[int64](t, []int{3}, 1, 2, 3)
	for _, c := range []struct {
		mode string
		want []int64
	}{
		{"constant", []int64{9, 9, 1, 2, 3, 9, 9, 9}},
		{"edge", []int64{1, 1, 1, 2, 3, 3, 3, 3}},
		{"reflect", []int64{3, 2, 1, 2, 3, 2, 1, 2}},
		{"wrap", []int64{2, 3, 1, 2, 3, 1, 2, 3}},
	} {
		n := testNode("Pad", 19, map[string]graph.Attr{"mode": attrString(c.mode)}, 1)
		y := runKernel(t, n, x, i64s(t, 2, 3), tensorOf[int64](t, []int{}, 9))[0]
		checkExact(t, y, []int{8}, c.want...)
	}
	// Pad-2: pads and value are attributes; a negative pad crops.
	n := testNode("Pad", 2, map[string]graph.Attr{"pads": attrInts(-1, 1), "value": attrFloat(7)}, 1)
	y := runKernel(t, n, x)[0]
	checkExact[int64](t, y, []int{3}, 2, 3, 7)
}

func TestExpandTile(t *testing.T) {
	x := tensorOf[bool](t, []int{2, 1}, true, false)
	y := runKernel(t, testNode("Expand", 13, nil, 1), x, i64s(t, 2, 1, 3))[0]
	checkExact(t, y, []int{2, 2, 3}, true, true, true, false, false, false, true, true, true, false, false, false)
	y = runKernel(t, testNode("Tile", 13, nil, 1), x, i64s(t, 2, 2))[0]
	checkExact(t, y, []int{4, 2}, true, true, false, false, true, true, false, false)
	if _, err := slExpand(testNode("Expand", 13, nil, 1), []inference.Tensor{x, i64s(t, 3, 2)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("Expand [2 1] to [3 2]: err %v, want ErrShape", err)
	}
}

func TestCenterCropPad(t *testing.T) {
	y := runKernel(t, testNode("CenterCropPad", 18, nil, 1), tensorOf[int64](t, []int{2, 3}, 1, 2, 3, 4, 5, 6), i64s(t, 3, 1))[0]
	checkExact[int64](t, y, []int{3, 1}, 2, 5, 0)
}

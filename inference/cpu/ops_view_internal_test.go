package cpu

import (
	"errors"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The kernels here copy elements, so results are compared exactly.

func TestReshape(t *testing.T) {
	x := tensorOf(t, []int{2, 3, 4}, make([]int32, 24)...)
	// 0 copies dimension 0, -1 takes the rest.
	y := runKernel(t, testNode("Reshape", 13, nil, 1), x, i64s(t, 0, -1))[0]
	if !slices.Equal(y.Shape(), []int{2, 12}) {
		t.Errorf("Reshape [0 -1] of [2 3 4] gave %v, want [2 12]", y.Shape())
	}
	// Reshape-1 reads the shape attribute.
	y = runKernel(t, testNode("Reshape", 1, map[string]graph.Attr{"shape": attrInts(4, -1)}, 1), x)[0]
	if !slices.Equal(y.Shape(), []int{4, 6}) {
		t.Errorf("Reshape-1 [4 -1] gave %v, want [4 6]", y.Shape())
	}
	// With allowzero, 0 is a zero-sized dimension, which 24 elements do not fit.
	_, err := vwReshape(testNode("Reshape", 14, map[string]graph.Attr{"allowzero": attrInt(1)}, 1), []inference.Tensor{x, i64s(t, 0, 24)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Reshape allowzero [0 24] of 24 elements: err %v, want ErrShape", err)
	}
}

func TestSqueezeOpsets(t *testing.T) {
	x := tensorOf(t, []int{1, 3, 1}, true, false, true)
	y := runKernel(t, testNode("Squeeze", 11, map[string]graph.Attr{"axes": attrInts(-1)}, 1), x)[0]
	checkExact(t, y, []int{1, 3}, true, false, true)
	y = runKernel(t, testNode("Squeeze", 13, nil, 1), x, i64s(t, 0))[0]
	checkExact(t, y, []int{3, 1}, true, false, true)
	y = runKernel(t, testNode("Squeeze", 13, nil, 1), x)[0]
	checkExact(t, y, []int{3}, true, false, true)
	y = runKernel(t, testNode("Unsqueeze", 13, nil, 1), y, i64s(t, 2, 0))[0]
	checkExact(t, y, []int{1, 3, 1}, true, false, true)
	if _, err := vwSqueeze(testNode("Squeeze", 13, nil, 1), []inference.Tensor{x, i64s(t, 1)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("Squeeze of a size-3 axis: err %v, want ErrShape", err)
	}
}

func TestDropout(t *testing.T) {
	x := tensorOf[float32](t, []int{2}, 1, 2)
	_, err := vwDropout(testNode("Dropout", 13, nil, 2), []inference.Tensor{x, {}, tensorOf(t, []int{}, true)})
	if !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("Dropout in training mode: err %v, want ErrUnsupportedOp", err)
	}
	outs := runKernel(t, testNode("Dropout", 13, nil, 2), x)
	checkExact[float32](t, outs[0], []int{2}, 1, 2)
	checkExact(t, outs[1], []int{2}, true, true)
	outs = runKernel(t, testNode("Dropout", 7, nil, 2), x)
	checkExact[float32](t, outs[1], []int{2}, 1, 1)
}

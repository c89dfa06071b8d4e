package cpu

import (
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func TestUnique(t *testing.T) {
	x := tensorOf(t, []int{5}, float32(2), 1, 2, 3, 1)
	out := runKernel(t, testNode("Unique", 24, nil, 4), x)
	checkExact[float32](t, out[0], []int{3}, 1, 2, 3)
	checkExact[int64](t, out[1], []int{3}, 1, 0, 3)
	checkExact[int64](t, out[2], []int{5}, 1, 0, 1, 2, 0)
	checkExact[int64](t, out[3], []int{3}, 2, 2, 1)

	out = runKernel(t, testNode("Unique", 24, map[string]graph.Attr{"sorted": attrInt(0)}, 4), x)
	checkExact[float32](t, out[0], []int{3}, 2, 1, 3)
	checkExact[int64](t, out[1], []int{3}, 0, 1, 3)
	checkExact[int64](t, out[2], []int{5}, 0, 1, 0, 2, 1)
	checkExact[int64](t, out[3], []int{3}, 2, 2, 1)

	// Columns of [[1 0 1] [2 5 2]]: (1,2), (0,5), (1,2).
	m := tensorOf(t, []int{2, 3}, int64(1), 0, 1, 2, 5, 2)
	out = runKernel(t, testNode("Unique", 24, map[string]graph.Attr{"axis": attrInt(-1)}, 4), m)
	checkExact[int64](t, out[0], []int{2, 2}, 0, 1, 5, 2)
	checkExact[int64](t, out[1], []int{2}, 1, 0)
	checkExact[int64](t, out[2], []int{3}, 1, 0, 1)
	checkExact[int64](t, out[3], []int{2}, 1, 2)

	if _, err := soUnique(testNode("Unique", 24, map[string]graph.Attr{"axis": attrInt(2)}, 4), []inference.Tensor{m}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("axis 2 of rank 2: err %v, want ErrShape", err)
	}
}

func TestTopK(t *testing.T) {
	x := tensorOf[float32](t, []int{5}, 2, 7, 2, 7, 1)
	outs := runKernel(t, testNode("TopK", 11, nil, 2), x, i64s(t, 3))
	checkExact[float32](t, outs[0], []int{3}, 7, 7, 2)
	checkExact[int64](t, outs[1], []int{3}, 1, 3, 0)
	outs = runKernel(t, testNode("TopK", 1, map[string]graph.Attr{"k": attrInt(2)}, 2), x)
	checkExact[int64](t, outs[1], []int{2}, 1, 3)
	outs = runKernel(t, testNode("TopK", 11, map[string]graph.Attr{"largest": attrInt(0)}, 2), x, i64s(t, 2))
	checkExact[int64](t, outs[1], []int{2}, 4, 0)
}

func TestNonZero(t *testing.T) {
	y := runKernel(t, testNode("NonZero", 13, nil, 1), tensorOf[uint8](t, []int{2, 2}, 0, 3, 4, 0))[0]
	checkExact[int64](t, y, []int{2, 2}, 0, 1, 1, 0)
}

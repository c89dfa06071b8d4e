package cpu

import (
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func TestGather(t *testing.T) {
	x := tensorOf[float32](t, []int{3, 2}, 1, 2, 3, 4, 5, 6)
	y := runKernel(t, testNode("Gather", 13, nil, 1), x, tensorOf[int64](t, []int{1, 2}, -1, 0))[0]
	checkExact[float32](t, y, []int{1, 2, 2}, 5, 6, 1, 2)
	_, err := gaGather(testNode("Gather", 13, nil, 1), []inference.Tensor{x, i64s(t, 3)})
	if !errors.Is(err, inference.ErrIndexOutOfRange) || errors.Is(err, inference.ErrShape) {
		t.Errorf("Gather index 3 of 3 rows: err %v, want ErrIndexOutOfRange alone", err)
	}
	y = runKernel(t, testNode("GatherElements", 13, map[string]graph.Attr{"axis": attrInt(1)}, 1), x, tensorOf[int64](t, []int{3, 1}, 1, 0, -1))[0]
	checkExact[float32](t, y, []int{3, 1}, 2, 3, 6)
	y = runKernel(t, testNode("GatherND", 13, map[string]graph.Attr{"batch_dims": attrInt(1)}, 1), x, tensorOf[int64](t, []int{3, 1}, 1, 0, 1))[0]
	checkExact[float32](t, y, []int{3}, 2, 3, 6)
}

func TestScatter(t *testing.T) {
	x := tensorOf[int64](t, []int{1, 3}, 1, 2, 3)
	n := testNode("ScatterElements", 18, map[string]graph.Attr{"axis": attrInt(1), "reduction": attrString("add")}, 1)
	y := runKernel(t, n, x, tensorOf[int64](t, []int{1, 2}, -1, 2), tensorOf[int64](t, []int{1, 2}, 10, 20))[0]
	checkExact[int64](t, y, []int{1, 3}, 1, 2, 33)
	checkExact[int64](t, x, []int{1, 3}, 1, 2, 3) // the input is not written
	d := tensorOf[float32](t, []int{2, 2}, 1, 2, 3, 4)
	n = testNode("ScatterND", 18, map[string]graph.Attr{"reduction": attrString("mul")}, 1)
	y = runKernel(t, n, d, tensorOf[int64](t, []int{1, 1}, 1), tensorOf[float32](t, []int{1, 2}, 10, -1))[0]
	checkExact[float32](t, y, []int{2, 2}, 1, 2, 30, -4)
}

func TestTensorScatter(t *testing.T) {
	// Cache [batch 2, seq 3, 1]; update [2, 2, 1] along axis 1.
	past := tensorOf(t, []int{2, 3, 1}, float32(1), 2, 3, 4, 5, 6)
	update := tensorOf(t, []int{2, 2, 1}, float32(10), 11, 20, 21)
	idx := tensorOf(t, []int{2}, int64(1), 0)
	axis1 := map[string]graph.Attr{"axis": attrInt(1)}
	got := runKernel(t, testNode("TensorScatter", 24, axis1, 1), past, update, idx)[0]
	checkFloats(t, got, []int{2, 3, 1}, 1, 10, 11, 20, 21, 6)

	circular := map[string]graph.Attr{"axis": attrInt(1), "mode": attrString("circular")}
	got = runKernel(t, testNode("TensorScatter", 24, circular, 1), past, update, tensorOf(t, []int{2}, int64(2), 0))[0]
	checkFloats(t, got, []int{2, 3, 1}, 11, 2, 10, 20, 21, 6)

	// Without write_indices, writing starts at 0.
	got = runKernel(t, testNode("TensorScatter", 24, axis1, 1), past, update)[0]
	checkFloats(t, got, []int{2, 3, 1}, 10, 11, 3, 20, 21, 6)

	_, err := gaTensorScatter(testNode("TensorScatter", 24, axis1, 1), []inference.Tensor{past, update, tensorOf(t, []int{2}, int64(2), 0)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("linear write at 2 of 2 steps into 3: err %v, want ErrShape", err)
	}
}

func TestCompress(t *testing.T) {
	y := runKernel(t, testNode("Compress", 11, map[string]graph.Attr{"axis": attrInt(1)}, 1), tensorOf[int64](t, []int{2, 3}, 1, 2, 3, 4, 5, 6), tensorOf(t, []int{2}, false, true))[0]
	checkExact[int64](t, y, []int{2, 1}, 2, 5)
}

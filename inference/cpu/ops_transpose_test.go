package cpu

import (
	"testing"

	"github.com/beamml/beamml/inference/graph"
)

// The kernels here copy elements, so results are compared exactly.

func TestSHTransposeUint8(t *testing.T) {
	x := tensorOf[uint8](t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	y := runKernel(t, testNode("Transpose", 13, nil, 1), x)[0]
	checkExact[uint8](t, y, []int{3, 2}, 1, 4, 2, 5, 3, 6)
}

func TestSHRearrange(t *testing.T) {
	// [1, 4, 1, 1] to [1, 1, 2, 2]: DCR reads the channels as (row, column).
	x := tensorOf[int64](t, []int{1, 4, 1, 1}, 0, 1, 2, 3)
	y := runKernel(t, testNode("DepthToSpace", 13, map[string]graph.Attr{"blocksize": attrInt(2)}, 1), x)[0]
	checkExact[int64](t, y, []int{1, 1, 2, 2}, 0, 1, 2, 3)
	z := runKernel(t, testNode("SpaceToDepth", 13, map[string]graph.Attr{"blocksize": attrInt(2)}, 1), y)[0]
	checkExact[int64](t, z, []int{1, 4, 1, 1}, 0, 1, 2, 3)
	y = runKernel(t, testNode("ReverseSequence", 10, map[string]graph.Attr{"time_axis": attrInt(1), "batch_axis": attrInt(0)}, 1), tensorOf[int64](t, []int{2, 3}, 1, 2, 3, 4, 5, 6), i64s(t, 2, 3))[0]
	checkExact[int64](t, y, []int{2, 3}, 2, 1, 3, 6, 5, 4)
}

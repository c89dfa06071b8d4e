package cpu

import (
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Most kernels here create or copy elements, so results are compared
// exactly; only Range's float values are computed, and are held to rtol
// 1e-4, atol 1e-5.

func TestGenerators(t *testing.T) {
	y := runKernel(t, testNode("ConstantOfShape", 20, nil, 1), i64s(t, 2))[0]
	checkExact[float32](t, y, []int{2}, 0, 0)
	y = runKernel(t, testNode("Trilu", 14, map[string]graph.Attr{"upper": attrInt(0)}, 1), tensorOf[int32](t, []int{2, 3}, 1, 2, 3, 4, 5, 6), tensorOf[int64](t, []int{}, 1))[0]
	checkExact[int32](t, y, []int{2, 3}, 1, 2, 0, 4, 5, 6)
	y = runKernel(t, testNode("OneHot", 11, map[string]graph.Attr{"axis": attrInt(0)}, 1), i64s(t, 1, -1, 5), i64s(t, 3), tensorOf[float32](t, []int{2}, 0, 1))[0]
	checkExact[float32](t, y, []int{3, 3}, 0, 0, 0, 1, 0, 0, 0, 1, 0)
	y = runKernel(t, testNode("EyeLike", 9, map[string]graph.Attr{"k": attrInt(1), "dtype": attrInt(9)}, 1), tensorOf[float32](t, []int{2, 3}, 0, 0, 0, 0, 0, 0))[0]
	checkExact(t, y, []int{2, 3}, false, true, false, false, false, true)
	y = runKernel(t, testNode("Range", 11, nil, 1), tensorOf[float32](t, []int{}, 1), tensorOf[float32](t, []int{}, 2), tensorOf[float32](t, []int{}, 0.3))[0]
	checkFloats(t, y, []int{4}, 1, 1.3, 1.6, 1.9)
}

func TestConstantUnsupported(t *testing.T) {
	n := testNode("Constant", 13, map[string]graph.Attr{"value_string": attrString("a")}, 1)
	if _, err := gnConstant(n, nil); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("Constant value_string: err %v, want ErrUnsupportedOp", err)
	}
}

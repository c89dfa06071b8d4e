package cpu

import (
	"errors"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func TestMatMul(t *testing.T) {
	n := testNode("MatMul", 13, nil, 1)
	// 1-D promotion on both sides: a dot product of rank 0.
	out := runKernel(t, n, tensorOf(t, []int{3}, float32(1), 2, 3), tensorOf(t, []int{3}, float32(4), 5, 6))
	checkFloats(t, out[0], []int{}, 32)

	// A [2,1,2,2] broadcasts against B [3,2,1] over the batch dimensions
	// to [2,3]; B's matrices are columns.
	a := tensorOf(t, []int{2, 1, 2, 2}, float32(1), 0, 0, 1, 2, 0, 0, 2)
	b := tensorOf(t, []int{3, 2, 1}, float32(1), 2, 3, 4, 5, 6)
	out = runKernel(t, n, a, b)
	checkFloats(t, out[0], []int{2, 3, 2, 1},
		1, 2, 3, 4, 5, 6, // identity
		2, 4, 6, 8, 10, 12, // 2·identity
	)

	// A vector times a batch of matrices: [2] · [2,2,2] → [2,2].
	out = runKernel(t, n, tensorOf(t, []int{2}, float32(1), 1), tensorOf(t, []int{2, 2, 2}, float32(1), 2, 3, 4, 5, 6, 7, 8))
	checkFloats(t, out[0], []int{2, 2}, 4, 6, 12, 14)

	// Integers multiply exactly.
	out = runKernel(t, n, tensorOf(t, []int{1, 2}, int64(3), 4), tensorOf(t, []int{2, 1}, int64(5), 6))
	if d, _ := inference.Data[int64](out[0]); !slices.Equal(out[0].Shape(), []int{1, 1}) || d[0] != 39 {
		t.Fatalf("int64 MatMul = %v %v, want [1 1] [39]", out[0], d)
	}

	_, err := laMatMul(n, []inference.Tensor{tensorOf(t, []int{2, 3}, make([]float32, 6)...), tensorOf(t, []int{2, 3}, make([]float32, 6)...)})
	if !errors.Is(err, inference.ErrShape) {
		t.Fatalf("MatMul [2,3]·[2,3]: err = %v, want ErrShape", err)
	}
}

func TestGemm(t *testing.T) {
	// A' = Aᵀ = [[1,2],[3,4]], B' = Bᵀ = [[1,0],[0,1]]; Y = 2·A'·B' + 0.5·[10, 20].
	n := testNode("Gemm", 13, map[string]graph.Attr{
		"transA": attrInt(1), "transB": attrInt(1), "alpha": attrFloat(2), "beta": attrFloat(0.5),
	}, 1)
	a := tensorOf(t, []int{2, 2}, float32(1), 3, 2, 4)
	b := tensorOf(t, []int{2, 2}, float32(1), 0, 0, 1)
	c := tensorOf(t, []int{2}, float32(10), 20)
	out := runKernel(t, n, a, b, c)
	checkFloats(t, out[0], []int{2, 2}, 7, 14, 11, 18)

	// Opset 6 without broadcast=1 wants C of shape [M, N] exactly.
	legacy := testNode("Gemm", 6, nil, 1)
	if _, err := laGemm(legacy, []inference.Tensor{a, b, c}); !errors.Is(err, inference.ErrShape) {
		t.Fatalf("Gemm-6 broadcast=0 with C [2]: err = %v, want ErrShape", err)
	}
	legacy = testNode("Gemm", 6, map[string]graph.Attr{"broadcast": attrInt(1)}, 1)
	out = runKernel(t, legacy, a, b, c)
	checkFloats(t, out[0], []int{2, 2}, 11, 23, 12, 24)

	// Without C, beta does not matter.
	out = runKernel(t, testNode("Gemm", 13, nil, 1), a, b)
	checkFloats(t, out[0], []int{2, 2}, 1, 3, 2, 4)
}

func TestDet(t *testing.T) {
	// det [[1 2] [3 4]] = -2, det diag(2, 3) = 6.
	x := tensorOf(t, []int{2, 2, 2}, float32(1), 2, 3, 4, 2, 0, 0, 3)
	checkFloats(t, runKernel(t, testNode("Det", 24, nil, 1), x)[0], []int{2}, -2, 6)
	// A permutation matrix needs a row swap: one transposition, det -1.
	p := tensorOf(t, []int{3, 3}, float32(0), 1, 0, 1, 0, 0, 0, 0, 1)
	checkFloats(t, runKernel(t, testNode("Det", 24, nil, 1), p)[0], []int{}, -1)
	singular := tensorOf(t, []int{2, 2}, float32(1), 2, 2, 4)
	checkFloats(t, runKernel(t, testNode("Det", 24, nil, 1), singular)[0], []int{}, 0)

	if _, err := laDet(testNode("Det", 24, nil, 1), []inference.Tensor{tensorOf(t, []int{2, 3}, make([]float32, 6)...)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("[2 3]: err %v, want ErrShape", err)
	}
}

package cpu

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func TestReduceSumAxesInput(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	axes := tensorOf[int64](t, []int{1}, -1)
	n := testNode("ReduceSum", 13, map[string]graph.Attr{"keepdims": attrInt(0)}, 1)
	checkFloats(t, runKernel(t, n, x, axes)[0], []int{2}, 6, 15)

	// Empty axes reduce everything, unless noop_with_empty_axes is set.
	empty := tensorOf[int64](t, []int{0})
	checkFloats(t, runKernel(t, testNode("ReduceSum", 13, nil, 1), x, empty)[0], []int{1, 1}, 21)
	noop := testNode("ReduceSum", 13, map[string]graph.Attr{"noop_with_empty_axes": attrInt(1)}, 1)
	checkFloats(t, runKernel(t, noop, x, empty)[0], []int{2, 3}, 1, 2, 3, 4, 5, 6)
}

func TestReduceAxesAttributeBeforeOpset18(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 2}, 1, 2, 3, 5)
	// ReduceMean-13 reads axes from the attribute; ReduceMean-18 from the
	// input, so the same attribute is ignored there and all axes reduce.
	attrs := map[string]graph.Attr{"axes": attrInts(0)}
	checkFloats(t, runKernel(t, testNode("ReduceMean", 13, attrs, 1), x)[0], []int{1, 2}, 2, 3.5)
	checkFloats(t, runKernel(t, testNode("ReduceMean", 18, attrs, 1), x)[0], []int{1, 1}, 2.75)

	l2 := runKernel(t, testNode("ReduceL2", 18, map[string]graph.Attr{"keepdims": attrInt(0)}, 1), x, tensorOf[int64](t, []int{1}, 1))
	checkFloats(t, l2[0], []int{2}, float32(math.Sqrt(5)), float32(math.Sqrt(34)))
	lse := runKernel(t, testNode("ReduceLogSumExp", 18, nil, 1), x, tensorOf[int64](t, []int{1}, 0))
	checkFloats(t, lse[0], []int{1, 2}, float32(math.Log(math.E+math.Exp(3))), float32(math.Log(math.Exp(2)+math.Exp(5))))
}

func TestReduceEmptySet(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 0})
	axes := tensorOf[int64](t, []int{1}, 1)
	inf := float32(math.Inf(1))
	for op, want := range map[string]float32{
		"ReduceMax": -inf, "ReduceMin": inf, "ReduceSum": 0, "ReduceProd": 1, "ReduceLogSum": -inf, "ReduceLogSumExp": -inf,
	} {
		opset := int64(20)
		out := runKernel(t, testNode(op, opset, nil, 1), x, axes)
		checkFloats(t, out[0], []int{2, 1}, want, want)
	}
}

func TestReduceInts(t *testing.T) {
	x := tensorOf[int64](t, []int{2, 2}, -7, 2, 4, 9)
	n := testNode("ReduceMean", 11, map[string]graph.Attr{"axes": attrInts(1), "keepdims": attrInt(0)}, 1)
	got, _ := inference.Data[int64](runKernel(t, n, x)[0])
	// Mean truncates toward zero: -5/2 = -2, 13/2 = 6.
	if !slices.Equal(got, []int64{-2, 6}) {
		t.Errorf("ReduceMean = %v, want [-2 6]", got)
	}
	got, _ = inference.Data[int64](runKernel(t, testNode("ReduceMax", 18, nil, 1), x)[0])
	if !slices.Equal(got, []int64{9}) {
		t.Errorf("ReduceMax = %v, want [9]", got)
	}
}

func TestReduceErrors(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 2}, 1, 2, 3, 4)
	n := testNode("ReduceSum", 13, nil, 1)
	if _, err := kernels["ReduceSum"](n, []inference.Tensor{x, tensorOf[int64](t, []int{1}, 2)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("axis 2 of a rank-2 input: err = %v, want ErrShape", err)
	}
	if _, err := kernels["ReduceSum"](n, []inference.Tensor{x, tensorOf[float32](t, []int{1}, 1)}); !errors.Is(err, inference.ErrType) {
		t.Errorf("float axes: err = %v, want ErrType", err)
	}
	b := tensorOf[bool](t, []int{2}, true, false)
	if _, err := kernels["ReduceSum"](n, []inference.Tensor{b}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("bool ReduceSum: err = %v, want ErrUnsupportedOp", err)
	}
}

func TestArgMaxSelectLast(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 3}, 1, 5, 5, 7, 2, 7)
	for _, tc := range []struct {
		op   string
		last int64
		want []int64
	}{
		{"ArgMax", 0, []int64{1, 0}},
		{"ArgMax", 1, []int64{2, 2}},
		{"ArgMin", 0, []int64{0, 1}},
	} {
		n := testNode(tc.op, 13, map[string]graph.Attr{"axis": attrInt(1), "select_last_index": attrInt(tc.last)}, 1)
		out := runKernel(t, n, x)[0]
		got, _ := inference.Data[int64](out)
		if !slices.Equal(got, tc.want) || !slices.Equal(out.Shape(), []int{2, 1}) {
			t.Errorf("%s select_last_index=%d = %v %v, want [2 1] %v", tc.op, tc.last, out.Shape(), got, tc.want)
		}
	}
}

func TestCumSum(t *testing.T) {
	x := tensorOf[float32](t, []int{3}, 1, 2, 3)
	axis := tensorOf[int32](t, []int{}, 0)
	n := testNode("CumSum", 14, map[string]graph.Attr{"exclusive": attrInt(1), "reverse": attrInt(1)}, 1)
	checkFloats(t, runKernel(t, n, x, axis)[0], []int{3}, 5, 3, 0)
	checkFloats(t, runKernel(t, testNode("CumSum", 14, nil, 1), x, axis)[0], []int{3}, 1, 3, 6)
}

// TestReduceRowsMatchPlan: the trailing-axes path gives bit for bit what
// the offset-table path gives, NaN and infinities included.
func TestReduceRowsMatchPlan(t *testing.T) {
	x := make([]float32, 6*7)
	for i := range x {
		x[i] = float32(math.Sin(float64(i))) * 100
	}
	x[9], x[20], x[30] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	shape, reduced := []int{6, 1, 7}, []bool{false, true, true}
	rows, count, ok := rdTrailing(shape, reduced)
	if !ok || rows != 6 || count != 7 {
		t.Fatalf("rdTrailing(%v, %v) = %d, %d, %v", shape, reduced, rows, count, ok)
	}
	if _, _, ok := rdTrailing([]int{6, 7, 2}, []bool{false, true, false}); ok {
		t.Fatal("rdTrailing took a kept axis inside the reduced ones")
	}
	p, err := newReducePlan(nil, shape, reduced, []int{6})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []rdOp{rdSum, rdMean, rdSumSquare, rdMax, rdMin} {
		want := rdReduceFloats(op, p, x)
		got := make([]float32, rows)
		rdRows(op, x, count, got)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Errorf("op %d row %d: %v, want %v", op, i, got[i], want[i])
			}
		}
	}
}

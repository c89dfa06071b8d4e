package cpu

import (
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The numeric kernels on the element types beyond baseTypes, where the
// conformance tests do not reach: each computes as Go's operators do on
// the element type itself. The expected values follow from the ONNX spec
// and Go's integer and float64 semantics.

// runOp runs one node of op (opset 19 unless the attributes say
// otherwise) on the inputs a, b, … in order, through Compile, so that the
// load-time type check runs too.
func runOp(t *testing.T, op string, attrs map[string]graph.Attr, in ...inference.Tensor) inference.Tensor {
	t.Helper()
	names := []string{"a", "b", "c"}[:len(in)]
	feeds := map[string]inference.Tensor{}
	for i, x := range in {
		feeds[names[i]] = x
	}
	return run1(t, oneNode(t, op, 19, attrs, names...), feeds)
}

// uint64 values at and above 2⁶³, which read as int64 would be negative:
// division, remainder, comparison, Max and ArgMax are unsigned.
func TestUint64AboveInt64(t *testing.T) {
	const big = 1 << 63
	u := func(v ...uint64) inference.Tensor { return tensorOf(t, []int{len(v)}, v...) }

	checkExact(t, runOp(t, "Div", nil, u(math.MaxUint64-1, big+1), u(2, 3)), []int{2},
		uint64(9223372036854775807), 3074457345618258603)
	// 2⁶⁴ − 1 ≡ 1 (mod 7), as 2³ ≡ 1; (2⁶³ + 1) mod 10 is 9.
	checkExact(t, runOp(t, "Mod", nil, u(math.MaxUint64, big+1), u(7, 10)), []int{2}, uint64(1), 9)
	checkExact(t, runOp(t, "Less", nil, u(big, 5, big), u(1, big, big+1)), []int{3}, false, true, true)
	checkExact(t, runOp(t, "Max", nil, u(big, 5), u(1, math.MaxUint64)), []int{2}, uint64(big), math.MaxUint64)
	checkExact(t, runOp(t, "Min", nil, u(big, 5), u(1, math.MaxUint64)), []int{2}, uint64(1), 5)
	argMax := map[string]graph.Attr{"axis": attrInt(0), "keepdims": attrInt(0)}
	checkExact(t, runOp(t, "ArgMax", argMax, u(1, big+7, big, 9)), []int{}, int64(1))
	checkExact(t, runOp(t, "ReduceMax", map[string]graph.Attr{"keepdims": attrInt(0)}, u(1, big+7, big)), []int{}, uint64(big+7))
	// The sum wraps past 2⁶⁴ before Mean divides it, unsigned.
	checkExact(t, runOp(t, "ReduceMean", map[string]graph.Attr{"keepdims": attrInt(0)}, u(big, big+2)), []int{}, uint64(1))
	checkExact(t, runOp(t, "Abs", nil, u(big+3)), []int{1}, uint64(big+3))
	checkExact(t, runOp(t, "Sign", nil, u(big, 0)), []int{2}, uint64(1), 0)
	checkExact(t, runOp(t, "BitShift", map[string]graph.Attr{"direction": attrString("RIGHT")}, u(big, 12), u(63, 64)), []int{2}, uint64(1), 0)
}

// int8 arithmetic wraps at 8 bits: 127 + 1 is −128, and −128 has no
// positive counterpart, so Neg and Abs give it back.
func TestInt8Wraps(t *testing.T) {
	i8 := func(v ...int8) inference.Tensor { return tensorOf(t, []int{len(v)}, v...) }
	checkExact(t, runOp(t, "Add", nil, i8(127, -128, 100), i8(1, -1, 100)), []int{3}, int8(-128), 127, -56)
	checkExact(t, runOp(t, "Mul", nil, i8(64, -128, 16), i8(2, -1, 16)), []int{3}, int8(-128), -128, 0)
	checkExact(t, runOp(t, "Div", nil, i8(-128, -7, 7), i8(-1, 2, -2)), []int{3}, int8(-128), -3, -3)
	checkExact(t, runOp(t, "Neg", nil, i8(-128, 5)), []int{2}, int8(-128), -5)
	checkExact(t, runOp(t, "Abs", nil, i8(-128, -5)), []int{2}, int8(-128), 5)
	checkExact(t, runOp(t, "Sub", nil, i8(-128), i8(1)), []int{1}, int8(127))
}

// Unsigned subtraction wraps modulo 2ⁿ.
func TestUnsignedSubWraps(t *testing.T) {
	checkExact(t, runOp(t, "Sub", nil, tensorOf(t, []int{2}, uint16(0), 3), tensorOf(t, []int{2}, uint16(1), 5)), []int{2}, uint16(65535), 65534)
	checkExact(t, runOp(t, "Sub", nil, tensorOf(t, []int{1}, uint32(3)), tensorOf(t, []int{1}, uint32(5))), []int{1}, uint32(math.MaxUint32-1))
	checkExact(t, runOp(t, "Sub", nil, tensorOf(t, []int{1}, uint64(0)), tensorOf(t, []int{1}, uint64(1))), []int{1}, uint64(math.MaxUint64))
}

// float64 is computed in float64: 1 + 2⁻⁴⁰, which float32 rounds to 1,
// survives Add, Sub, ReduceSum and CumSum; Exp, Log and Sqrt are math's.
func TestFloat64Precision(t *testing.T) {
	tiny := math.Pow(2, -40)
	f := func(v ...float64) inference.Tensor { return tensorOf(t, []int{len(v)}, v...) }
	checkExact(t, runOp(t, "Add", nil, f(1), f(tiny)), []int{1}, 1+tiny)
	checkExact(t, runOp(t, "Sub", nil, f(1+tiny), f(1)), []int{1}, tiny)
	checkExact(t, runOp(t, "ReduceSum", map[string]graph.Attr{"keepdims": attrInt(0)}, f(1, tiny)), []int{}, 1+tiny)
	checkExact(t, runOp(t, "CumSum", nil, f(1, tiny), tensorOf(t, []int{}, int64(0))), []int{2}, 1, 1+tiny)
	checkExact(t, runOp(t, "Max", nil, f(1+tiny), f(1)), []int{1}, 1+tiny)

	x := []float64{0.1, 2, 10, 1 + tiny}
	for _, tc := range []struct {
		op string
		f  func(float64) float64
	}{{"Exp", math.Exp}, {"Log", math.Log}, {"Sqrt", math.Sqrt}} {
		want := make([]float64, len(x))
		for i, v := range x {
			want[i] = tc.f(v)
		}
		checkExact(t, runOp(t, tc.op, nil, f(x...)), []int{len(x)}, want...)
	}
}

// Equal compares strings, broadcasting as numbers do.
func TestEqualStringsBroadcast(t *testing.T) {
	a := tensorOf(t, []int{2, 2}, "a", "b", "c", "")
	b := tensorOf(t, []int{2}, "a", "")
	checkExact(t, runOp(t, "Equal", nil, a, b), []int{2, 2}, true, false, false, true)
}

// bfloat16 is computed in float32 and rounded to bfloat16 once per node:
// 1 + 1/128 + 1/256 lies halfway between two bfloat16s and rounds to the
// even one, 1 + 2/128.
func TestBFloat16Rounds(t *testing.T) {
	bf := func(v ...float32) inference.Tensor {
		b := make([]inference.BF16, len(v))
		for i, x := range v {
			b[i] = inference.BF16FromFloat32(x)
		}
		return tensorOf(t, []int{len(v)}, b...)
	}
	got := runOp(t, "Add", nil, bf(1+1.0/128), bf(1.0/256))
	checkExact(t, got, []int{1}, inference.BF16FromFloat32(1+2.0/128))
	checkExact(t, runOp(t, "Less", nil, bf(1, 3), bf(2, 2)), []int{2}, true, false)
}

// A type the operator's ONNX schema does not admit still fails at load.
func TestNumericTypesOutsideTheSchema(t *testing.T) {
	for _, tc := range []struct {
		op string
		in []inference.Tensor
	}{
		{"Neg", []inference.Tensor{tensorOf(t, []int{1}, uint32(1))}},
		{"Exp", []inference.Tensor{tensorOf(t, []int{1}, int16(1))}},
		{"BitShift", []inference.Tensor{tensorOf(t, []int{1}, int8(1)), tensorOf(t, []int{1}, int8(1))}},
		{"ReduceSum", []inference.Tensor{tensorOf(t, []int{1}, int8(1))}},
		{"Pow", []inference.Tensor{tensorOf(t, []int{1}, int8(2)), tensorOf(t, []int{1}, int8(2))}},
		{"Less", []inference.Tensor{tensorOf(t, []int{1}, "a"), tensorOf(t, []int{1}, "b")}},
		{"Sum", []inference.Tensor{tensorOf(t, []int{1}, uint64(1)), tensorOf(t, []int{1}, uint64(1))}},
	} {
		names := []string{"a", "b"}[:len(tc.in)]
		feeds := map[string]inference.Tensor{}
		for i, x := range tc.in {
			feeds[names[i]] = x
		}
		_, err := Backend{}.Compile(typed(oneNode(t, tc.op, 19, nil, names...), feeds))
		if !errors.Is(err, inference.ErrUnsupportedType) {
			t.Errorf("%s of %v: %v, want ErrUnsupportedType", tc.op, tc.in[0].DType(), err)
		}
	}
	// Pow's exponent takes every number; its base does not.
	checkExact(t, runOp(t, "Pow", nil, tensorOf(t, []int{1}, int64(3)), tensorOf(t, []int{1}, uint16(3))), []int{1}, int64(27))
}

// float64 MatMul computes in float64, an activation the graph passes fold
// into it (FuseEpilogues) included, and Softmax too.
func TestFloat64MatMulSoftmax(t *testing.T) {
	tiny := math.Pow(2, -40)
	g := sorted(t, &graph.Graph{Name: "g", Opsets: map[string]int64{"": 19},
		Inputs:       []graph.Value{{Name: "a", DType: inference.Float64}},
		Outputs:      []graph.Value{{Name: "y"}, {Name: "s"}},
		Initializers: map[string]inference.Tensor{"b": tensorOf(t, []int{2, 2}, 1.0, 0, 1, 1)},
		Nodes: []*graph.Node{
			{Name: "p", OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"p"}},
			{Name: "y", OpType: "Relu", Inputs: []string{"p"}, Outputs: []string{"y"}},
			{Name: "s", OpType: "Softmax", Inputs: []string{"a"}, Outputs: []string{"s"}},
		}})
	out, err := compileRun(t, g, map[string]inference.Tensor{"a": tensorOf(t, []int{2, 2}, 1, tiny, -3, 1)})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, out["y"], []int{2, 2}, 1+tiny, tiny, 0, 1)
	s := dataOf[float64](out["s"])
	for i, want := range []float64{1 / (1 + math.Exp(tiny-1)), 1 / (1 + math.Exp(1-tiny)), 1 / (1 + math.Exp(4)), 1 / (1 + math.Exp(-4))} {
		if math.Abs(s[i]-want) > 1e-15 {
			t.Errorf("Softmax element %d is %v, want %v", i, s[i], want)
		}
	}
}

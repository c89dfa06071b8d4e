package check

import (
	"math"
	"math/rand/v2"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// randInts returns a T tensor with values uniform in [lo, hi].
func randInts[T int64 | int32 | uint8](seed uint64, lo, hi int64, shape ...int) inference.Tensor {
	r := rand.New(rand.NewPCG(seed, 0x1e7))
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]T, n)
	for i := range v {
		v[i] = T(lo + r.Int64N(hi-lo+1))
	}
	return must(inference.New(shape, v))
}

// randFloatInts returns a float32 tensor of whole numbers in [-hi, hi]:
// ties for comparisons, ArgMax and ArgMin.
func randFloatInts(seed uint64, hi int64, shape ...int) inference.Tensor {
	t := randInts[int64](seed, -hi, hi, shape...)
	d, _ := inference.Data[int64](t)
	v := make([]float32, len(d))
	for i, x := range d {
		v[i] = float32(x)
	}
	return must(inference.New(shape, v))
}

// randBools returns a bool tensor, each element true with probability 1/2.
func randBools(seed uint64, shape ...int) inference.Tensor {
	r := rand.New(rand.NewPCG(seed, 0xb001))
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = r.IntN(2) == 1
	}
	return must(inference.New(shape, v))
}

// tensorOf returns a tensor of the given values.
func tensorOf[T inference.Element](shape []int, v ...T) inference.Tensor {
	return must(inference.New(shape, v))
}

// withFloats returns a copy of the float32 tensor t with element i set
// to v[i] for each i in at (NaN, infinities, ties).
func withFloats(t inference.Tensor, at map[int]float32) inference.Tensor {
	d, _ := inference.Data[float32](t)
	d = append([]float32(nil), d...)
	for i, v := range at {
		d[i] = v
	}
	return must(inference.New(t.Shape(), d))
}

func must(t inference.Tensor, err error) inference.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}

var (
	nan  = float32(math.NaN())
	pinf = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
)

func init() {
	unary := []struct {
		op     string
		lo, hi float32
		attrs  map[string]graph.Attr
	}{
		{"Relu", -2, 2, nil}, {"Sigmoid", -8, 8, nil}, {"Tanh", -3, 3, nil}, {"Exp", -5, 5, nil},
		{"Log", 0.01, 10, nil}, {"Sqrt", 0, 10, nil}, {"Neg", -2, 2, nil}, {"Abs", -2, 2, nil},
		{"Reciprocal", 0.5, 4, nil}, {"Floor", -5, 5, nil}, {"Ceil", -5, 5, nil}, {"Round", -5, 5, nil},
		{"Sin", -3, 3, nil}, {"Cos", -3, 3, nil}, {"Tan", -1, 1, nil}, {"Asin", -0.9, 0.9, nil},
		{"Acos", -0.9, 0.9, nil}, {"Atan", -3, 3, nil}, {"Sinh", -3, 3, nil}, {"Cosh", -3, 3, nil},
		{"Asinh", -3, 3, nil}, {"Acosh", 1.1, 5, nil}, {"Atanh", -0.9, 0.9, nil}, {"Erf", -3, 3, nil},
		{"Sign", -2, 2, nil}, {"Identity", -2, 2, nil},
		{"LeakyRelu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.1)}},
		{"Elu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.7)}},
		{"Celu", -2, 2, map[string]graph.Attr{"alpha": AFloat(1.5)}},
		{"Selu", -2, 2, nil},
		{"HardSigmoid", -4, 4, map[string]graph.Attr{"alpha": AFloat(0.3), "beta": AFloat(0.4)}},
		{"HardSwish", -4, 4, nil}, {"Softplus", -5, 5, nil}, {"Softsign", -5, 5, nil}, {"Mish", -5, 5, nil},
		{"ThresholdedRelu", -2, 2, map[string]graph.Attr{"alpha": AFloat(0.5)}},
		{"Gelu", -3, 3, nil}, {"Gelu", -3, 3, map[string]graph.Attr{"approximate": AStr("tanh")}},
		{"Shrink", -2, 2, map[string]graph.Attr{"lambd": AFloat(0.7), "bias": AFloat(0.3)}},
		{"Swish", -6, 6, map[string]graph.Attr{"alpha": AFloat(1.5)}},
		{"Clip", -3, 3, map[string]graph.Attr{}},
	}
	for i, u := range unary {
		name := "unary/" + u.op
		opset := int64(0)
		if u.op == "Gelu" {
			opset = 20
			if u.attrs != nil {
				name += "-tanh"
			}
		}
		Add(Case{Name: name, Op: u.op, Attrs: u.attrs, Opset: opset,
			Inputs: []Input{{T: Rand(uint64(i), u.lo, u.hi, 3, 5, 7)}}})
	}
	Add(Case{Name: "unary/Clip-bounds", Op: "Clip", Inputs: []Input{
		{T: Rand(100, -3, 3, 4, 33)}, {T: Floats([]int{}, -1), Const: true}, {T: Floats([]int{}, 0.5), Const: true}}})
	Add(Case{Name: "unary/Clip-min-only", Op: "Clip", Inputs: []Input{
		{T: Rand(101, -3, 3, 4, 33)}, {T: Floats([]int{}, -1), Const: true}}})
	Add(Case{Name: "unary/Identity-int64", Op: "Identity", Inputs: []Input{{T: Ints([]int{3}, 1, -2, 3)}}})
	Add(Case{Name: "unary/large", Op: "Relu", Inputs: []Input{{T: Rand(102, -1, 1, 70000)}}})

	for i, op := range []string{"Add", "Sub", "Mul", "Div", "Pow", "PRelu"} {
		lo, hi := float32(-2), float32(2)
		if op == "Pow" {
			lo = 0.1
		}
		s := uint64(200 + 10*i)
		cs := []Case{
			Case{Name: "binary/" + op + "/same", Op: op, Inputs: []Input{{T: Rand(s, lo, hi, 2, 3, 4)}, {T: Rand(s+1, 0.5, 2, 2, 3, 4)}}},
			Case{Name: "binary/" + op + "/row", Op: op, Inputs: []Input{{T: Rand(s+2, lo, hi, 2, 3, 4)}, {T: Rand(s+3, 0.5, 2, 4)}}},
			Case{Name: "binary/" + op + "/column", Op: op, Inputs: []Input{{T: Rand(s+4, lo, hi, 2, 3, 4)}, {T: Rand(s+5, 0.5, 2, 3, 1)}}},
			Case{Name: "binary/" + op + "/both", Op: op, Inputs: []Input{{T: Rand(s+6, lo, hi, 2, 1, 4)}, {T: Rand(s+7, 0.5, 2, 3, 1)}}},
			Case{Name: "binary/" + op + "/const", Op: op, Inputs: []Input{{T: Rand(s+8, lo, hi, 1, 2, 1, 3, 1, 2)}, {T: Rand(s+9, 0.5, 2, 2, 1), Const: true}}},
		}
		if op == "PRelu" { // the slope broadcasts to the input, not both ways
			cs = cs[:3]
		}
		Add(cs...)
	}
	elementwiseIntCases()
	elementwiseMixedCases()
}

func elementwiseIntCases() {
	const minI64, maxI64 = math.MinInt64, math.MaxInt64
	for _, op := range []string{"Neg", "Abs", "Sign", "Relu"} {
		Add(Case{Name: "unary/" + op + "-int64", Op: op, Inputs: []Input{
			{T: Ints([]int{2, 4}, 3, -2, 0, minI64, maxI64, -7, 1<<40, -(1 << 40))}}})
		Add(Case{Name: "unary/" + op + "-int32", Op: op, Inputs: []Input{
			{T: tensorOf([]int{6}, int32(3), -2, 0, math.MinInt32, math.MaxInt32, -7)}}})
	}
	Add(Case{Name: "unary/Shrink-defaults", Op: "Shrink", Inputs: []Input{{T: Rand(110, -2, 2, 5, 9)}}})
	Add(Case{Name: "unary/Clip-int64", Op: "Clip", Inputs: []Input{
		{T: randInts[int64](111, -50, 50, 4, 17)}, {T: Ints([]int{}, -20), Const: true}, {T: Ints([]int{}, 30), Const: true}}})
	Add(Case{Name: "unary/Clip-int32-max-only", Op: "Clip", Inputs: []Input{
		{T: randInts[int32](112, -50, 50, 4, 17)}, {Absent: true}, {T: tensorOf([]int{}, int32(7)), Const: true}}})
	Add(Case{Name: "unary/Clip-no-bounds-inf", Op: "Clip", Inputs: []Input{
		{T: withFloats(Rand(113, -3, 3, 2, 5), map[int]float32{0: pinf, 1: ninf, 2: nan, 3: 3e38})}}})
	Add(Case{Name: "unary/Clip-min-above-max", Op: "Clip", Inputs: []Input{
		{T: Rand(114, -3, 3, 3, 7)}, {T: Floats([]int{}, 1), Const: true}, {T: Floats([]int{}, -1), Const: true}}})
	Add(Case{Name: "unary/Clip-device-bounds", Op: "Clip", Inputs: []Input{
		{T: withFloats(Rand(116, -3, 3, 3, 7), map[int]float32{0: nan, 1: pinf})}, {T: Floats([]int{}, -1)}, {T: Floats([]int{1}, 0.5)}}})
	Add(Case{Name: "unary/Clip-device-min-above-max", Op: "Clip", Inputs: []Input{
		{T: Rand(117, -3, 3, 3, 7)}, {T: Floats([]int{}, 1)}, {T: Floats([]int{}, -1), Const: true}}})
	Add(Case{Name: "unary/Clip-device-min-int64", Op: "Clip", Inputs: []Input{
		{T: randInts[int64](118, -50, 50, 4, 17)}, {T: Ints([]int{}, -20)}}})
	Add(Case{Name: "unary/Clip-device-max-int32", Op: "Clip", Inputs: []Input{
		{T: randInts[int32](119, -50, 50, 4, 17)}, {Absent: true}, {T: tensorOf([]int{}, int32(7))}}})
	Add(Case{Name: "unary/Clip-6-attrs", Op: "Clip", Opset: 6, Attrs: map[string]graph.Attr{"min": AFloat(-0.5)},
		Inputs: []Input{{T: withFloats(Rand(115, -3, 3, 3, 7), map[int]float32{0: pinf, 1: ninf})}}})

	// Integer arithmetic, wrapping on overflow as Go does.
	for i, op := range []string{"Add", "Sub", "Mul"} {
		s := uint64(300 + 10*i)
		Add(
			Case{Name: "binary/" + op + "/int64-same", Op: op, Inputs: []Input{
				{T: randInts[int64](s, -1000, 1000, 3, 4)}, {T: randInts[int64](s+1, -1000, 1000, 3, 4)}}},
			Case{Name: "binary/" + op + "/int64-row", Op: op, Inputs: []Input{
				{T: randInts[int64](s+2, -1000, 1000, 2, 3, 4)}, {T: randInts[int64](s+3, -9, 9, 4)}}},
			Case{Name: "binary/" + op + "/int64-overflow", Op: op, Inputs: []Input{
				{T: Ints([]int{4}, minI64, maxI64, 1<<62, -(1 << 62))}, {T: Ints([]int{4}, -1, 2, 4, 3)}}},
			Case{Name: "binary/" + op + "/int32-both", Op: op, Inputs: []Input{
				{T: randInts[int32](s+4, -1<<31, 1<<31-1, 2, 1, 5)}, {T: randInts[int32](s+5, -1<<31, 1<<31-1, 3, 1)}}},
		)
	}
	Add(
		Case{Name: "binary/Div/int64-const", Op: "Div", Inputs: []Input{
			{T: Ints([]int{2, 4}, 7, -7, 8, minI64, 100, -100, 0, maxI64)}, {T: Ints([]int{4}, 2, 3, -3, -1), Const: true}}},
		Case{Name: "binary/Div/int32-const", Op: "Div", Inputs: []Input{
			{T: randInts[int32](320, -1000, 1000, 3, 5)}, {T: tensorOf([]int{3, 1}, int32(-7), 4, 13), Const: true}}},
		Case{Name: "binary/PRelu/int64", Op: "PRelu", Inputs: []Input{
			{T: randInts[int64](321, -50, 50, 2, 3, 4)}, {T: randInts[int64](322, -3, 3, 4)}}},
		Case{Name: "binary/PRelu/int32", Op: "PRelu", Inputs: []Input{
			{T: randInts[int32](323, -50, 50, 2, 3, 4)}, {T: randInts[int32](324, -3, 3, 3, 1)}}},
		// Before opset 7 a 1-D slope as long as dimension 1 is per channel.
		Case{Name: "binary/PRelu/opset6-channel", Op: "PRelu", Opset: 6, Inputs: []Input{
			{T: Rand(325, -2, 2, 2, 3, 3)}, {T: Rand(326, 0.1, 0.9, 3)}}},
	)

	// Divisors computed on the device (graph inputs): the divmod_* kernels,
	// which would report a 0 (inference/cuda's errword_test.go); the least
	// integer by -1 wraps to itself, as in Go, and its remainder is 0.
	Add(
		Case{Name: "binary/Div/int64-device", Op: "Div", Inputs: []Input{
			{T: Ints([]int{2, 4}, 7, -7, 8, minI64, 100, -100, 0, maxI64)}, {T: Ints([]int{4}, 2, 3, -3, -1)}}},
		Case{Name: "binary/Div/int32-device", Op: "Div", Inputs: []Input{
			{T: tensorOf([]int{2, 3}, int32(math.MinInt32), 9, -9, math.MaxInt32, 5, -5)}, {T: tensorOf([]int{2, 1}, int32(-1), 4)}}},
		Case{Name: "binary/Mod/int64-python-device", Op: "Mod", Inputs: []Input{
			{T: Ints([]int{2, 4}, 7, -7, 8, minI64, 100, -100, 0, maxI64)}, {T: Ints([]int{4}, 3, 3, -3, -1)}}},
		Case{Name: "binary/Mod/int32-fmod-device", Op: "Mod", Attrs: map[string]graph.Attr{"fmod": AInt(1)}, Inputs: []Input{
			{T: randInts[int32](336, -100, 100, 3, 5)}, {T: tensorOf([]int{5}, int32(-7), 4, 13, -1, 2)}}},
		Case{Name: "binary/Mod/int32-python-device", Op: "Mod", Inputs: []Input{
			{T: tensorOf([]int{2, 3}, int32(math.MinInt32), 9, -9, math.MaxInt32, 5, -5)}, {T: tensorOf([]int{3}, int32(-1), 4, -7)}}},
	)

	// Mod: fmod=1 has the dividend's sign, fmod=0 the divisor's.
	Add(
		Case{Name: "binary/Mod/f32-fmod", Op: "Mod", Attrs: map[string]graph.Attr{"fmod": AInt(1)}, Inputs: []Input{
			{T: Rand(330, -10, 10, 3, 4)}, {T: withFloats(Rand(331, -3, 3, 4), map[int]float32{1: 0})}}},
		Case{Name: "binary/Mod/f32-python", Op: "Mod", Inputs: []Input{
			{T: withFloats(Rand(332, -10, 10, 3, 4), map[int]float32{0: nan, 1: pinf})}, {T: Rand(333, -3, 3, 3, 1)}}},
		Case{Name: "binary/Mod/int64-python-const", Op: "Mod", Inputs: []Input{
			{T: Ints([]int{2, 4}, 7, -7, 8, minI64, 100, -100, 0, maxI64)}, {T: Ints([]int{4}, 3, 3, -3, -1), Const: true}}},
		Case{Name: "binary/Mod/int32-fmod-const", Op: "Mod", Attrs: map[string]graph.Attr{"fmod": AInt(1)}, Inputs: []Input{
			{T: randInts[int32](334, -100, 100, 3, 5)}, {T: tensorOf([]int{5}, int32(-7), 4, 13, -1, 2), Const: true}}},
		Case{Name: "binary/Mod/int32-python-const", Op: "Mod", Inputs: []Input{
			{T: randInts[int32](335, -100, 100, 3, 5)}, {T: tensorOf([]int{5}, int32(-7), 4, 13, -1, 2), Const: true}}},
	)

	// Before opset 7, broadcasting needs broadcast=1 and aligns B at axis.
	Add(
		Case{Name: "binary/Add/opset6-axis0", Op: "Add", Opset: 6,
			Attrs:  map[string]graph.Attr{"broadcast": AInt(1), "axis": AInt(0)},
			Inputs: []Input{{T: Rand(340, -2, 2, 3, 3)}, {T: Rand(341, -2, 2, 3)}}},
		Case{Name: "binary/Mul/opset6-axis1", Op: "Mul", Opset: 6,
			Attrs:  map[string]graph.Attr{"broadcast": AInt(1), "axis": AInt(1)},
			Inputs: []Input{{T: Rand(342, -2, 2, 2, 3, 4, 5)}, {T: Rand(343, -2, 2, 3, 4)}}},
		Case{Name: "binary/Sub/opset6-scalar", Op: "Sub", Opset: 6, Attrs: map[string]graph.Attr{"broadcast": AInt(1)},
			Inputs: []Input{{T: Rand(344, -2, 2, 2, 3)}, {T: Rand(345, -2, 2, 1)}}},
		Case{Name: "binary/Div/opset6-same", Op: "Div", Opset: 6,
			Inputs: []Input{{T: Rand(346, -2, 2, 2, 3)}, {T: Rand(347, 0.5, 2, 2, 3)}}},
	)

	// Broadcasting: merged dimensions, ranks above 6 that merge, rank 6.
	Add(
		Case{Name: "binary/Add/rank8-merges", Op: "Add", Inputs: []Input{
			{T: Rand(350, -2, 2, 2, 1, 2, 3, 2, 1, 2, 3)}, {T: Rand(351, -2, 2, 2, 3, 1, 1, 1, 3)}}},
		Case{Name: "binary/Mul/rank6", Op: "Mul", Inputs: []Input{
			{T: Rand(352, -2, 2, 2, 1, 3, 1, 2, 3)}, {T: Rand(353, -2, 2, 1, 2, 1, 2, 1, 3)}}},
		Case{Name: "binary/Sub/scalar-left", Op: "Sub", Inputs: []Input{
			{T: Floats([]int{}, 1.5)}, {T: Rand(354, -2, 2, 70, 30)}}},
	)
}

func elementwiseMixedCases() {
	// Pow of every supported pair of types but float32^float32.
	Add(
		Case{Name: "binary/Pow/f32-int64", Op: "Pow", Inputs: []Input{
			{T: Rand(400, -3, 3, 3, 4)}, {T: randInts[int64](401, -3, 4, 4)}}},
		Case{Name: "binary/Pow/f32-int32", Op: "Pow", Inputs: []Input{
			{T: Rand(402, -3, 3, 3, 4)}, {T: randInts[int32](403, -3, 4, 3, 1)}}},
		Case{Name: "binary/Pow/f32-uint8", Op: "Pow", Inputs: []Input{
			{T: Rand(404, -3, 3, 3, 4)}, {T: randInts[uint8](405, 0, 5, 4)}}},
		Case{Name: "binary/Pow/int64-f32", Op: "Pow", Inputs: []Input{
			{T: randInts[int64](406, -5, 9, 3, 4)}, {T: tensorOf([]int{4}, float32(0), 1, 2, 3)}}},
		Case{Name: "binary/Pow/int32-f32", Op: "Pow", Inputs: []Input{
			{T: randInts[int32](407, 0, 9, 3, 4)}, {T: tensorOf([]int{4}, float32(0), 1, 2, 0.5)}}},
		Case{Name: "binary/Pow/int64-int64", Op: "Pow", Inputs: []Input{
			{T: Ints([]int{8}, 2, -3, 1, -1, -1, 0, 7, 3)}, {T: Ints([]int{8}, 10, 3, -5, -5, -4, -2, 25, 70)}}},
		Case{Name: "binary/Pow/int32-int32", Op: "Pow", Inputs: []Input{
			{T: randInts[int32](408, -6, 6, 2, 5)}, {T: randInts[int32](409, -2, 12, 5)}}},
		Case{Name: "binary/Pow/int64-int32", Op: "Pow", Inputs: []Input{
			{T: randInts[int64](410, -6, 6, 2, 5)}, {T: randInts[int32](411, 0, 12, 2, 1)}}},
		// An integer base with a float exponent truncates the double power
		// as Go's int64(v) and int32(v) do on amd64: NaN, infinities and
		// powers out of the base type's range give its least value (the
		// GPU's bare conversion would saturate and give 0 for NaN). 2^62 and
		// -2^63 are the int64 range's edges, 2^30 and -2^31 the int32's;
		// 2^40 fits int64 but not int32.
		Case{Name: "binary/Pow/int64-f32-nonfinite", Op: "Pow", Inputs: []Input{
			{T: Ints([]int{10}, 2, 0, 2, -2, 10, 3, 2, -2, -3, -2)},
			{T: tensorOf([]int{10}, nan, -1, 70, 0.5, pinf, ninf, 62, 63, 3, 71)}}},
		Case{Name: "binary/Pow/int64-f32-nonfinite-broadcast", Op: "Pow", Inputs: []Input{
			{T: Ints([]int{3, 1}, 2, -2, 0)}, {T: tensorOf([]int{4}, nan, pinf, ninf, 63)}}},
		Case{Name: "binary/Pow/int32-f32-nonfinite", Op: "Pow", Inputs: []Input{
			{T: tensorOf([]int{10}, int32(2), 2, 2, -2, 0, 7, -2, 3, -2, 10)},
			{T: tensorOf([]int{10}, float32(31), 30, 40, 31, -0.5, nan, 0.5, ninf, 33, pinf)}}},
		// Whole float exponents whose powers double holds exactly (Go's
		// repeated squaring gives them; a GPU's pow can come out an ulp
		// low, which truncation turns into the integer below), and int64
		// powers past 2^53, which double rounds as Go's squaring does; 4^±0.5
		// and 9^1.5 are Go's square roots and a fractional power.
		Case{Name: "binary/Pow/int-f32-whole-exponents", Op: "Pow", Inputs: []Input{
			{T: Ints([]int{12}, 3, -3, 10, 7, 3, -3, 5, 7, 4, 4, 9, 2)},
			{T: tensorOf([]int{12}, float32(19), 19, 18, 22, 39, 39, 27, 11, 0.5, -0.5, 1.5, -3)}}},
		Case{Name: "binary/Pow/int32-f32-whole-exponents", Op: "Pow", Inputs: []Input{
			{T: tensorOf([]int{8}, int32(3), -3, 10, 7, 3, 2, -2, 4)},
			{T: tensorOf([]int{8}, float32(19), 19, 9, 11, 20, 30, 30, 0.5)}}},
	)

	// The variadic operators: Sum, Max, Min and Mean.
	for i, op := range []string{"Sum", "Max", "Min", "Mean"} {
		s := uint64(500 + 10*i)
		Add(
			Case{Name: "binary/" + op + "/one", Op: op, Inputs: []Input{{T: Rand(s, -2, 2, 3, 4)}}},
			Case{Name: "binary/" + op + "/two-broadcast", Op: op, Inputs: []Input{
				{T: Rand(s+1, -2, 2, 3, 1)}, {T: Rand(s+2, -2, 2, 2, 1, 4)}}},
			Case{Name: "binary/" + op + "/three-broadcast", Op: op, Inputs: []Input{
				{T: Rand(s+3, -2, 2, 4)}, {T: withFloats(Rand(s+4, -2, 2, 2, 3, 4), map[int]float32{5: nan})},
				{T: Rand(s+5, -2, 2, 3, 1)}}},
			Case{Name: "binary/" + op + "/four-same", Op: op, Inputs: []Input{
				{T: Rand(s+6, -2, 2, 5, 7)}, {T: Rand(s+7, -2, 2, 5, 7)}, {T: Rand(s+8, -2, 2, 5, 7)}, {T: Rand(s+9, -2, 2, 5, 7)}}},
		)
		if op == "Mean" {
			continue
		}
		Add(
			Case{Name: "binary/" + op + "/int64-three", Op: op, Inputs: []Input{
				{T: randInts[int64](s+10, -100, 100, 3, 1)}, {T: randInts[int64](s+11, -100, 100, 3, 4)},
				{T: randInts[int64](s+12, -100, 100, 4)}}},
			Case{Name: "binary/" + op + "/int32-three", Op: op, Inputs: []Input{
				{T: randInts[int32](s+13, -100, 100, 2, 3)}, {T: randInts[int32](s+14, -100, 100, 3)},
				{T: randInts[int32](s+15, -100, 100, 2, 1)}}},
			Case{Name: "binary/" + op + "/int64-two", Op: op, Inputs: []Input{
				{T: randInts[int64](s+16, -100, 100, 3, 4)}, {T: randInts[int64](s+17, -100, 100, 4)}}},
			Case{Name: "binary/" + op + "/int32-two", Op: op, Inputs: []Input{
				{T: randInts[int32](s+18, -100, 100, 3, 4)}, {T: randInts[int32](s+19, -100, 100, 3, 1)}}},
		)
	}
}

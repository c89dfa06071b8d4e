package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

func TestElementwiseUnary(t *testing.T) {
	x := tensorOf(t, []int{5}, float32(-2), -0.5, 0, 0.5, 2.5)
	checkFloats(t, runKernel(t, testNode("Relu", 14, nil, 1), x)[0], []int{5}, 0, 0, 0, 0.5, 2.5)
	// Round is half to even.
	checkFloats(t, runKernel(t, testNode("Round", 11, nil, 1), x)[0], []int{5}, -2, 0, 0, 0, 2)
	// 1/(1+e^2) = 0.11920292, 1/(1+e^0.5) = 0.37754067.
	checkFloats(t, runKernel(t, testNode("Sigmoid", 13, nil, 1), x)[0], []int{5}, 0.11920292, 0.37754067, 0.5, 0.62245933, 0.92414182)
	checkFloats(t, runKernel(t, testNode("LeakyRelu", 16, map[string]graph.Attr{"alpha": attrFloat(0.1)}, 1), x)[0],
		[]int{5}, -0.2, -0.05, 0, 0.5, 2.5)
	// Gelu tanh at 2.5: 0.5·2.5·(1 + tanh(0.7978846·(2.5 + 0.044715·15.625))) = 2.4849157
	g := runKernel(t, testNode("Gelu", 20, map[string]graph.Attr{"approximate": attrString("tanh")}, 1), tensorOf(t, []int{1}, float32(2.5)))[0]
	checkFloats(t, g, []int{1}, 2.4849157)
	checkExact(t, runKernel(t, testNode("Sign", 13, nil, 1), tensorOf(t, []int{3}, int64(-7), 0, 9))[0], []int{3}, int64(-1), 0, 1)

	_, err := kernels["Sqrt"](testNode("Sqrt", 13, nil, 1), []inference.Tensor{tensorOf(t, []int{1}, int64(4))})
	if !errors.Is(err, inference.ErrType) {
		t.Errorf("Sqrt of int64: %v, want ErrType", err)
	}
	_, err = kernels["Gelu"](testNode("Gelu", 20, map[string]graph.Attr{"approximate": attrString("erf")}, 1), []inference.Tensor{x})
	if !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("Gelu approximate=erf: %v, want ErrUnsupportedOp", err)
	}
}

// TestUnaryFloat32Loops checks the float32 loops of Neg, Abs,
// Reciprocal, Sqrt, Floor, Ceil and Round against the same operators on
// float64 elements (the float path, a function value per element) rounded
// to float32, bit for bit: NaN, the infinities, both zeros, subnormals,
// halves for Round, the largest floats and random values of every
// magnitude. Both Neg and Abs act on the sign bit, so −0 and 0 change
// places and NaN stays NaN.
func TestUnaryFloat32Loops(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	xs := append([]float32{}, vecSpecials...)
	xs = append(xs, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0x1p23+1, -0x1p23-1, 0x1p-149, -0x1p-149, 0x1p-127)
	for range 500 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	x32 := tensorOf(t, []int{len(xs)}, xs...)
	wide := make([]float64, len(xs))
	for i, v := range xs {
		wide[i] = float64(v)
	}
	x64 := tensorOf(t, []int{len(xs)}, wide...)
	for _, op := range []string{"Neg", "Abs", "Reciprocal", "Sqrt", "Floor", "Ceil", "Round"} {
		got := floatsOf(t, runKernel(t, testNode(op, 13, nil, 1), x32)[0])
		want := dataOf[float64](runKernel(t, testNode(op, 13, nil, 1), x64)[0])
		for i := range xs {
			if w := float32(want[i]); !same(got[i], w) {
				t.Errorf("%s(%g): float32 loop %g (%#x), float64 path %g (%#x)", op, xs[i], got[i], math.Float32bits(got[i]), w, math.Float32bits(w))
			}
		}
	}
}

func TestElementwiseBroadcast(t *testing.T) {
	a := tensorOf(t, []int{2, 3}, float32(1), 2, 3, 4, 5, 6)
	// Same shape, scalar, trailing-dimension tile and general broadcasting.
	checkFloats(t, runKernel(t, testNode("Add", 14, nil, 1), a, a)[0], []int{2, 3}, 2, 4, 6, 8, 10, 12)
	checkFloats(t, runKernel(t, testNode("Sub", 14, nil, 1), tensorOf(t, nil, float32(10)), a)[0], []int{2, 3}, 9, 8, 7, 6, 5, 4)
	checkFloats(t, runKernel(t, testNode("Mul", 14, nil, 1), a, tensorOf(t, []int{3}, float32(1), 10, 100))[0], []int{2, 3}, 1, 20, 300, 4, 50, 600)
	checkFloats(t, runKernel(t, testNode("Div", 14, nil, 1), tensorOf(t, []int{2, 1}, float32(6), 12), tensorOf(t, []int{1, 3}, float32(1), 2, 3))[0],
		[]int{2, 3}, 6, 3, 2, 12, 6, 4)

	cond := tensorOf(t, []int{2, 1}, true, false)
	checkExact(t, runKernel(t, testNode("Where", 16, nil, 1), cond, tensorOf(t, []int{3}, int64(1), 2, 3), tensorOf(t, nil, int64(-1)))[0],
		[]int{2, 3}, int64(1), 2, 3, -1, -1, -1)

	// Max broadcasts from opset 8 and propagates NaN; Max-6 wants equal shapes.
	mx := runKernel(t, testNode("Max", 13, nil, 1), a, tensorOf(t, []int{3}, float32(0), 7, float32(math.NaN())))[0]
	checkFloats(t, mx, []int{2, 3}, 1, 7, float32(math.NaN()), 4, 7, float32(math.NaN()))
	checkFloats(t, runKernel(t, testNode("Mean", 13, nil, 1), a, a, tensorOf(t, nil, float32(3)))[0], []int{2, 3}, 5.0/3, 7.0/3, 3, 11.0/3, 13.0/3, 5)
	_, err := kernels["Max"](testNode("Max", 6, nil, 1), []inference.Tensor{a, tensorOf(t, []int{3}, float32(0), 7, 0)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Max-6 of [2 3] and [3]: %v, want ErrShape", err)
	}

	_, err = kernels["Add"](testNode("Add", 14, nil, 1), []inference.Tensor{a, tensorOf(t, []int{4}, float32(1), 2, 3, 4)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Add of [2 3] and [4]: %v, want ErrShape", err)
	}
	_, err = kernels["Add"](testNode("Add", 14, nil, 1), []inference.Tensor{a, {}})
	if !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("Add with input 1 left out: %v, want ErrBadModel", err)
	}
	_, err = kernels["Add"](testNode("Add", 14, nil, 1), []inference.Tensor{a, tensorOf(t, []int{1}, int64(1))})
	if !errors.Is(err, inference.ErrType) {
		t.Errorf("Add of float32 and int64: %v, want ErrType", err)
	}
}

// Before opset 7, Add broadcasts only with broadcast=1, aligning B at axis.
// TestElementwiseRows checks binary arithmetic where one operand holds one
// value per row of the output's trailing dimensions (broadcastRows: a
// squeeze-and-excitation's [N, C, 1, 1] gate, a per-channel [C, 1, 1]
// scale at batch 1), on either side, float32 and int64, against each
// output element computed from its indices, exactly; with rows enough to
// run in parallel at 2 threads. Shapes that only look alike ([C, 1, 1]
// over a batch of 8, a row operand with a trailing dimension that is not
// one) take the general walk, and are checked the same way.
func TestElementwiseRows(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	cases := []struct {
		out, rows []int
		isRows    bool
	}{
		{[]int{8, 96, 28, 28}, []int{8, 96, 1, 1}, true},
		{[]int{1, 64, 14, 14}, []int{64, 1, 1}, true},
		{[]int{1, 3, 4, 5}, []int{1, 3, 1, 1}, true},
		{[]int{4, 5, 6}, []int{4, 1, 1}, true},
		{[]int{2, 3, 0}, []int{2, 3, 1}, true},
		{[]int{8, 16, 5, 5}, []int{16, 1, 1}, false},
		{[]int{2, 3, 4}, []int{2, 1, 4}, false},
	}
	for _, c := range cases {
		if got := newBroadcastPlan(nil, c.out, c.out, c.rows).ops[1].mode == broadcastRows; got != c.isRows {
			t.Errorf("%v over %v: one value per row %v, want %v", c.rows, c.out, got, c.isRows)
		}
		n, size := opsem.Count(c.out), opsem.Count(c.rows)
		// The rows operand's element for output element i: its index
		// along each dimension it has, 0 where it has 1.
		at := func(i int) int {
			strides := opsem.Strides(c.out)
			pad := len(c.out) - len(c.rows)
			j, st := 0, 1
			for d := len(c.rows) - 1; d >= 0; d-- {
				if c.rows[d] != 1 {
					j += (i / strides[d+pad] % c.out[d+pad]) * st
				}
				st *= c.rows[d]
			}
			return j
		}
		withProcs(t, func(t *testing.T) {
			whole, rows := make([]float32, n), make([]float32, size)
			for i := range whole {
				whole[i] = r.Float32()*4 - 2
			}
			for i := range rows {
				rows[i] = r.Float32() + 0.5
			}
			wt, rt := tensorOf(t, c.out, whole...), tensorOf(t, c.rows, rows...)
			for _, op := range []string{"Mul", "Sub", "Div"} {
				for _, rowsFirst := range []bool{false, true} {
					in := []inference.Tensor{wt, rt}
					if rowsFirst {
						in = []inference.Tensor{rt, wt}
					}
					got := floatsOf(t, runKernel(t, testNode(op, 14, nil, 1), in...)[0])
					for i := range n {
						a, b := whole[i], rows[at(i)]
						if rowsFirst {
							a, b = b, a
						}
						var want float32
						switch op {
						case "Mul":
							want = a * b
						case "Sub":
							want = a - b
						case "Div":
							want = a / b
						}
						if got[i] != want {
							t.Fatalf("%s %v and %v (rows first %v): element %d = %g, want %g", op, c.out, c.rows, rowsFirst, i, got[i], want)
						}
					}
				}
			}
			ints := make([]int64, size)
			for i := range ints {
				ints[i] = int64(i%7) - 3
			}
			wi := make([]int64, n)
			for i := range wi {
				wi[i] = int64(i % 11)
			}
			got := dataOf[int64](runKernel(t, testNode("Mul", 14, nil, 1), tensorOf(t, c.rows, ints...), tensorOf(t, c.out, wi...))[0])
			for i := range n {
				if want := ints[at(i)] * wi[i]; got[i] != want {
					t.Fatalf("int64 Mul %v and %v: element %d = %d, want %d", c.rows, c.out, i, got[i], want)
				}
			}
		})
	}
}

func TestElementwiseLegacyBroadcast(t *testing.T) {
	a := tensorOf(t, []int{2, 2, 2}, float32(1), 2, 3, 4, 5, 6, 7, 8)
	b := tensorOf(t, []int{2}, float32(10), 20)
	at := func(axis int64) map[string]graph.Attr {
		return map[string]graph.Attr{"broadcast": attrInt(1), "axis": attrInt(axis)}
	}
	checkFloats(t, runKernel(t, testNode("Add", 6, at(0), 1), a, b)[0], []int{2, 2, 2}, 11, 12, 13, 14, 25, 26, 27, 28)
	checkFloats(t, runKernel(t, testNode("Add", 6, at(1), 1), a, b)[0], []int{2, 2, 2}, 11, 12, 23, 24, 15, 16, 27, 28)
	suffix := map[string]graph.Attr{"broadcast": attrInt(1)}
	checkFloats(t, runKernel(t, testNode("Add", 6, suffix, 1), a, b)[0], []int{2, 2, 2}, 11, 22, 13, 24, 15, 26, 17, 28)

	_, err := kernels["Add"](testNode("Add", 6, nil, 1), []inference.Tensor{a, b})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Add-6 without broadcast of [2 2 2] and [2]: %v, want ErrShape", err)
	}
	_, err = kernels["Add"](testNode("Add", 6, at(2), 1), []inference.Tensor{a, tensorOf(t, []int{2, 2}, float32(1), 2, 3, 4)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Add-6 of [2 2] at axis 2 of [2 2 2]: %v, want ErrShape", err)
	}

	// PRelu-6 takes a 1-D slope per channel (dimension 1).
	x := tensorOf(t, []int{1, 2, 3}, float32(-1), -2, 3, -4, 5, -6)
	checkFloats(t, runKernel(t, testNode("PRelu", 6, nil, 1), x, tensorOf(t, []int{2}, float32(0.5), 0.25))[0], []int{1, 2, 3}, -0.5, -1, 3, -1, 5, -1.5)
}

func TestElementwiseIntegerArithmetic(t *testing.T) {
	a := tensorOf(t, []int{4}, int64(-7), 7, -7, 7)
	b := tensorOf(t, []int{4}, int64(2), -2, 3, 3)
	checkExact(t, runKernel(t, testNode("Div", 14, nil, 1), a, b)[0], []int{4}, int64(-3), -3, -2, 2)
	// fmod=0 takes the divisor's sign, fmod=1 the dividend's.
	checkExact(t, runKernel(t, testNode("Mod", 13, nil, 1), a, b)[0], []int{4}, int64(1), -1, 2, 1)
	fmod := map[string]graph.Attr{"fmod": attrInt(1)}
	checkExact(t, runKernel(t, testNode("Mod", 13, fmod, 1), a, b)[0], []int{4}, int64(-1), 1, -1, 1)
	checkExact(t, runKernel(t, testNode("Pow", 15, nil, 1), tensorOf(t, []int{3}, int32(3), -2, 2), tensorOf(t, []int{3}, int64(4), 3, -1))[0],
		[]int{3}, int32(81), -8, 0)
	checkFloats(t, runKernel(t, testNode("Pow", 15, nil, 1), tensorOf(t, []int{2}, float32(4), 2), tensorOf(t, nil, int64(-1)))[0], []int{2}, 0.25, 0.5)

	_, err := kernels["Div"](testNode("Div", 14, nil, 1), []inference.Tensor{a, tensorOf(t, nil, int64(0))})
	if err == nil {
		t.Error("Div of int64 by 0: no error")
	}
}

func TestClip(t *testing.T) {
	x := tensorOf(t, []int{4}, float32(-3), -0.5, 0.5, 3)
	attrs := map[string]graph.Attr{"min": attrFloat(-1)}
	checkFloats(t, runKernel(t, testNode("Clip", 6, attrs, 1), x)[0], []int{4}, -1, -0.5, 0.5, 3)
	checkFloats(t, runKernel(t, testNode("Clip", 13, nil, 1), x, inference.Tensor{}, tensorOf(t, nil, float32(1)))[0], []int{4}, -3, -0.5, 0.5, 1)
	// min > max gives max everywhere.
	checkFloats(t, runKernel(t, testNode("Clip", 13, nil, 1), x, tensorOf(t, nil, float32(2)), tensorOf(t, nil, float32(1)))[0], []int{4}, 1, 1, 1, 1)
	checkExact(t, runKernel(t, testNode("Clip", 13, nil, 1), tensorOf(t, []int{3}, int32(-5), 0, 5), tensorOf(t, nil, int32(-1)), tensorOf(t, nil, int32(1)))[0],
		[]int{3}, int32(-1), 0, 1)
	_, err := kernels["Clip"](testNode("Clip", 13, nil, 1), []inference.Tensor{x, tensorOf(t, []int{2}, float32(0), 1)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("Clip with a 2-element min: %v, want ErrShape", err)
	}
}

func TestCast(t *testing.T) {
	to := func(code int64) map[string]graph.Attr {
		return map[string]graph.Attr{"to": attrInt(code)}
	}
	x := tensorOf(t, []int{4}, float32(-2.7), -0.5, 0, 2.7)
	checkExact(t, runKernel(t, testNode("Cast", 13, to(7), 1), x)[0], []int{4}, int64(-2), 0, 0, 2)
	checkExact(t, runKernel(t, testNode("Cast", 13, to(9), 1), x)[0], []int{4}, true, true, false, true)
	checkFloats(t, runKernel(t, testNode("CastLike", 15, nil, 1), tensorOf(t, []int{2}, true, false), x)[0], []int{2}, 1, 0)
	// Cast-1 names the type.
	name := map[string]graph.Attr{"to": attrString("INT32")}
	checkExact(t, runKernel(t, testNode("Cast", 1, name, 1), x)[0], []int{4}, int32(-2), 0, 0, 2)

	_, err := kernels["Cast"](testNode("Cast", 13, to(14), 1), []inference.Tensor{x})
	if !errors.Is(err, inference.ErrUnsupportedType) {
		t.Errorf("Cast to COMPLEX64: %v, want ErrUnsupportedType", err)
	}
}

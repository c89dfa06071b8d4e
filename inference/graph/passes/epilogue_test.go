package passes_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// activation appends an activation node (or for SiLU the two nodes of
// x·Sigmoid(x)) and returns its output.
func activation(m *model, op string, x string) string {
	switch op {
	case "SiLU":
		return m.op("Mul", nil, x, m.op("Sigmoid", nil, x))
	case "SiLU reversed":
		s := m.op("Sigmoid", nil, x)
		return m.op("Mul", nil, s, x)
	case "HardSwish gated":
		return m.op("Mul", nil, x, m.op("HardSigmoid", attrs("alpha", aFloat(1.0/6)), x))
	case "Clip":
		return m.op("Clip", nil, x, m.scalar("lo", -0.5), m.scalar("hi", 1.5))
	case "HardSigmoid":
		return m.op(op, attrs("alpha", aFloat(0.3), "beta", aFloat(0.4)), x)
	case "LeakyRelu":
		return m.op(op, attrs("alpha", aFloat(0.2)), x)
	case "Gelu tanh":
		return m.op("Gelu", attrs("approximate", aString("tanh")), x)
	}
	return m.op(op, nil, x)
}

var allActivations = []string{"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh", "Gelu", "Gelu tanh", "SiLU", "SiLU reversed", "HardSwish gated"}

// A MatMul's epilogue is applied with the unfused nodes' arithmetic (the
// same float32 additions in the same order, the activation kernels'
// functions), so the fused graph computes exactly what the nodes did:
// these comparisons have no tolerance.
func TestFuseEpiloguesMatMul(t *testing.T) {
	for _, act := range allActivations {
		t.Run(act, func(t *testing.T) {
			build := func() *model {
				m := newModel(20)
				y := m.op("MatMul", nil, m.input("x", 2, 3, 8), m.constant("w", []int{8, 6}))
				y = m.op("Add", nil, y, m.constant("bias", []int{6}))
				y = m.op("Add", nil, m.input("res", 2, 3, 6), y)
				m.output(activation(m, act, y))
				return m
			}
			g := rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "MatMul", 0, 0)
			n := g.Nodes[0]
			if n.Input(int(n.Int(passes.FusedBias, -1))) != "bias" || n.Input(int(n.Int(passes.FusedResidual, -1))) != "res" {
				t.Errorf("inputs %q, attributes %v: want the bias and the residual named", n.Inputs, n.Attrs)
			}
		})
	}
}

// Gemm takes a bias of one value per column ([N] or [1, N]) after its own
// C, then a residual and an activation.
func TestFuseEpiloguesGemm(t *testing.T) {
	for _, transB := range []bool{false, true} {
		build := func() *model {
			m := newModel(13)
			b, a := []int{8, 6}, attrs("alpha", aFloat(0.5))
			if transB {
				b, a["transB"] = []int{6, 8}, aInt(1)
			}
			y := m.op("Gemm", a, m.input("x", 4, 8), m.constant("w", b), m.constant("c", []int{4, 1}))
			y = m.op("Add", nil, m.constant("bias", []int{1, 6}), y)
			y = m.op("Add", nil, y, m.input("res", 4, 6))
			m.output(m.op("Relu", nil, y))
			return m
		}
		rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "Gemm", 0, 0)
	}
}

// A Conv takes a bias Add into its B (rounded once: within the package's
// tolerance of the unfused graph), then a residual and an activation,
// applied to each output block as it is computed: by the GEMM path and by
// the depthwise one.
func TestFuseEpiloguesConv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w     []int
		attrs map[string]graph.Attr
		bias  []int // the Add's bias shape
		act   string
	}{
		{"gemm, bias [1 C 1 1], Relu", []int{4, 3, 3, 3}, attrs("pads", aInts(1, 1, 1, 1)), []int{1, 4, 1, 1}, "Relu"},
		{"pointwise, bias [C 1 1], SiLU", []int{4, 3, 1, 1}, nil, []int{4, 1, 1}, "SiLU"},
		{"depthwise, scalar bias, HardSwish", []int{3, 1, 3, 3}, attrs("group", aInt(3), "pads", aInts(1, 1, 1, 1)), []int{}, "HardSwish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *model {
				m := newModel(17)
				c := m.op("Conv", tc.attrs, m.input("x", 2, 3, 6, 6), m.constant("w", tc.w), m.constant("b", tc.w[:1]))
				c = m.op("Add", nil, c, m.constant("bias", tc.bias))
				c = m.op("Add", nil, c, m.input("res", 2, tc.w[0], 6, 6))
				m.output(activation(m, tc.act, c))
				return m
			}
			g := rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "Conv", rtol, atol)
			if n := g.Nodes[0]; n.Int(passes.FusedResidual, -1) != 3 || n.Has(passes.FusedBias) {
				t.Errorf("Conv inputs %q, attributes %v: want the residual as input 3 and the bias in B", n.Inputs, n.Attrs)
			}
		})
	}
}

// A residual that broadcasts with the product rather than matching its
// shape is fused too; the kernel then adds it as Add does, after the
// product, with the same result. So do integer products.
func TestFuseEpiloguesUnfusedInKernel(t *testing.T) {
	for _, res := range [][]int{{3, 6}, {4, 2, 3, 6}} {
		build := func() *model {
			m := newModel(13)
			y := m.op("MatMul", nil, m.input("x", 2, 3, 8), m.constant("w", []int{8, 6}))
			m.output(m.op("Tanh", nil, m.op("Add", nil, y, m.input("res", res...))))
			return m
		}
		rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "MatMul", 0, 0)
	}
	ints := func() *model {
		m := newModel(13)
		a, _ := inference.New([]int{2, 3}, []int64{1, -2, 3, -4, 5, -6})
		m.g.Initializers["b"] = a
		m.g.Inputs = append(m.g.Inputs, graph.Value{Name: "x", DType: inference.Int64, Shape: []int{3, 2}})
		m.feeds["x"], _ = inference.New([]int{3, 2}, []int64{7, -1, 2, 0, -3, 4})
		m.output(m.op("Relu", nil, m.op("Add", nil, m.op("MatMul", nil, "x", "b"), "x2")))
		m.g.Inputs = append(m.g.Inputs, graph.Value{Name: "x2", DType: inference.Int64, Shape: []int{3}})
		m.feeds["x2"], _ = inference.New([]int{3}, []int64{-9, 0, 9})
		return m
	}
	rewrite(t, ints, passes.FuseEpilogues(passes.AllEpilogues), "MatMul", 0, 0)
}

func TestFuseEpiloguesLeavesAlone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"product read twice", func() *model {
			m := newModel(13)
			y := m.op("MatMul", nil, m.input("x", 2, 8), m.constant("w", []int{8, 6}))
			m.output(m.op("Relu", nil, y), m.op("Neg", nil, y))
			return m
		}},
		{"product is a graph output", func() *model {
			m := newModel(13)
			y := m.op("MatMul", nil, m.input("x", 2, 8), m.constant("w", []int{8, 6}))
			m.output(m.op("Relu", nil, y), y)
			return m
		}},
		{"opset 6 Add", func() *model {
			m := newModel(6)
			y := m.op("Conv", nil, m.input("x", 1, 2, 3, 3), m.constant("w", []int{2, 2, 1, 1}))
			m.output(m.op("Add", nil, y, m.input("res", 1, 2, 3, 3)))
			return m
		}},
		{"Clip bound fed", func() *model {
			m := newModel(13)
			y := m.op("Conv", nil, m.input("x", 1, 2, 3, 3), m.constant("w", []int{2, 2, 1, 1}))
			m.output(m.op("Clip", nil, y, m.input("lo")))
			return m
		}},
		{"HardSigmoid gate of another slope", func() *model {
			m := newModel(13)
			y := m.op("MatMul", nil, m.input("x", 2, 8), m.constant("w", []int{8, 6}))
			m.output(m.op("Mul", nil, y, m.op("HardSigmoid", nil, y)))
			return m
		}},
		{"Sigmoid read by more than the Mul", func() *model {
			m := newModel(13)
			y := m.op("MatMul", nil, m.input("x", 2, 8), m.constant("w", []int{8, 6}))
			s := m.op("Sigmoid", nil, y)
			m.output(m.op("Mul", nil, y, s), s)
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.FuseEpilogues(passes.AllEpilogues)) })
	}
}

// A bias the fusion cannot tell is one value per column (a MatMul whose B
// is fed, a bias of another length) is added as a residual instead.
func TestFuseEpiloguesBiasAsResidual(t *testing.T) {
	build := func() *model {
		m := newModel(13)
		y := m.op("MatMul", nil, m.input("x", 2, 8), m.input("w", 8, 6))
		m.output(m.op("Add", nil, y, m.constant("bias", []int{6})))
		return m
	}
	g := rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "MatMul", 0, 0)
	if n := g.Nodes[0]; n.Has(passes.FusedBias) || !n.Has(passes.FusedResidual) {
		t.Errorf("attributes %v, want the Add as a residual", n.Attrs)
	}
}

// The CUDA backend's epilogues, a Relu's or a Clip's clamp on a Conv, fuse
// nothing else.
func TestFuseEpiloguesConvClampOnly(t *testing.T) {
	clampOnly := passes.FuseEpilogues(passes.Epilogues{Ops: []string{"Conv"}, Activations: []string{"Relu", "Clip"}})
	for _, act := range []string{"Relu", "Clip"} {
		g := rewrite(t, func() *model {
			m := newModel(13)
			y := m.op("Conv", nil, m.input("x", 1, 2, 3, 3), m.constant("w", []int{2, 2, 1, 1}))
			m.output(activation(m, act, y))
			return m
		}, clampOnly, "Conv", 0, 0)
		if n := g.Nodes[0]; !n.Has(passes.FusedMin) || !n.Has(passes.FusedMax) || len(n.Attrs) != 2 {
			t.Errorf("%s: attributes %v, want only the clamp", act, n.Attrs)
		}
	}
	unchanged(t, func() *model {
		m := newModel(13)
		y := m.op("Conv", nil, m.input("x", 1, 2, 3, 3), m.constant("w", []int{2, 2, 1, 1}))
		y = m.op("Relu", nil, m.op("Add", nil, y, m.constant("bias", []int{2, 1, 1})))
		z := m.op("MatMul", nil, m.input("a", 2, 3), m.constant("b", []int{3, 3}))
		m.output(y, m.op("Relu", nil, z), m.op("Sigmoid", nil, m.op("Conv", nil, "x", "w")))
		return m
	}, clampOnly)
}

// A clamp after a clamp (ReLU6 exported as Relu then Clip) becomes one
// clamp to the intersection; clamps that do not intersect stay apart.
func TestFuseEpiloguesClampAfterClamp(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float32
		ops    string
		bounds [2]float32
	}{
		{-1, 6, "Conv", [2]float32{0, 6}},
		{-3, -1, "Conv Clip", [2]float32{0, float32(math.Inf(1))}},
	} {
		g := rewrite(t, func() *model {
			m := newModel(13)
			y := m.op("Conv", nil, m.input("x", 1, 2, 3, 3), m.constant("w", []int{2, 2, 1, 1}))
			y = m.op("Relu", nil, y)
			m.output(m.op("Clip", nil, y, m.scalar("lo", tc.lo), m.scalar("hi", tc.hi)))
			return m
		}, passes.FuseEpilogues(passes.AllEpilogues), tc.ops, 0, 0)
		if n := g.Nodes[0]; n.Float(passes.FusedMin, 7) != tc.bounds[0] || n.Float(passes.FusedMax, 7) != tc.bounds[1] {
			t.Errorf("Clip(%g, %g) after Relu: clamp [%g, %g], want %v", tc.lo, tc.hi, n.Float(passes.FusedMin, 7), n.Float(passes.FusedMax, 7), tc.bounds)
		}
	}
}

// When two products meet in an Add, the first takes the Add with the
// second's output as its residual; the second keeps its own epilogue.
func TestFuseEpiloguesTwoProductsInOneAdd(t *testing.T) {
	build := func() *model {
		m := newModel(13)
		x := m.input("x", 3, 8)
		a := m.op("MatMul", nil, x, m.constant("wa", []int{8, 4}))
		b := m.op("Tanh", nil, m.op("MatMul", nil, x, m.constant("wb", []int{8, 4})))
		m.output(m.op("Relu", nil, m.op("Add", nil, a, b)))
		return m
	}
	g := rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues), "MatMul MatMul", 0, 0)
	if first, second := g.Nodes[1], g.Nodes[0]; !first.Has(passes.FusedResidual) || !first.Has(passes.FusedMin) || second.Str(passes.FusedActivation, "") != "Tanh" {
		t.Errorf("attributes %v and %v: want the Add and the Relu on one product, the Tanh on the other", first.Attrs, second.Attrs)
	}
}

// A BatchNormalization takes the activation after it where the Epilogues
// name it (WithBatchNorm: the CPU's), one pass over the data: DenseNet's
// and ResNet-v2's BatchNormalization and Relu before each convolution.
// The fused kernel applies the activation's own function to the
// normalised values, so the outputs are equal. An Add after it is not a
// bias it takes, and without WithBatchNorm (the GPU's) it keeps its
// activation.
func TestFuseEpiloguesBatchNorm(t *testing.T) {
	for _, act := range allActivations {
		for _, training := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, training %v", act, training), func(t *testing.T) {
				build := func() *model {
					m := newModel(15)
					var a map[string]graph.Attr
					if training {
						a = attrs("training_mode", aInt(1))
					}
					y, _ := batchNorm(m, m.input("x", 2, 4, 5, 5), 4, a)
					m.output(activation(m, act, y))
					return m
				}
				g := rewrite(t, build, passes.FuseEpilogues(passes.AllEpilogues.WithBatchNorm()), "BatchNormalization", 0, 0)
				if n := g.Nodes[0]; !n.Has(passes.FusedMin) && !n.Has(passes.FusedActivation) {
					t.Errorf("attributes %v: no fused activation", n.Attrs)
				}
			})
		}
	}
	for _, tc := range []struct {
		name   string
		e      passes.Epilogues
		second string // the node after the BatchNormalization
	}{
		{"GPU's epilogues", passes.AllEpilogues, "Relu"},
		{"bias Add", passes.AllEpilogues.WithBatchNorm(), "Add"},
		{"residual Add", passes.AllEpilogues.WithBatchNorm(), "residual"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unchanged(t, func() *model {
				m := newModel(15)
				y, _ := batchNorm(m, m.input("x", 2, 4, 5, 5), 4, nil)
				switch tc.second {
				case "Add":
					y = m.op("Add", nil, y, m.constant("bias", []int{4, 1, 1}))
				case "residual":
					y = m.op("Add", nil, y, m.input("res", 2, 4, 5, 5))
				}
				m.output(m.op("Relu", nil, y))
				return m
			}, passes.FuseEpilogues(tc.e))
		})
	}
}

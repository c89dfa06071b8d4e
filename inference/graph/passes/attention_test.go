package passes_test

import (
	"testing"

	"github.com/beamml/beamml/inference/graph/passes"
)

// attention describes a decomposed attention to build: batch 2, 2 heads,
// 5 queries and keys of size 4.
type attention struct {
	opset     int64
	reshaped  bool   // Q, K, V reshaped from [2, 5, 8] and transposed, Kᵀ of perm [0 2 3 1]; else 4-D inputs, Kᵀ of perm [0 1 3 2]
	divide    bool   // Div by 2, else Mul by 0.5
	mask      string // "", "input" (from a [2, 5] input), "constant" (a [1 1 5 5] constant), "one column" ([1 1 5 1])
	softmaxAx int64  // 0: the attribute left out
}

func (a attention) build(edit func(m *model, v map[string]string)) func() *model {
	return func() *model {
		m := newModel(a.opset)
		var q, k, v, kt string
		if a.reshaped {
			shape := m.ints("shape", 2, 5, 2, 4)
			split := func(name string) string { return m.op("Reshape", nil, m.input(name, 2, 5, 8), shape) }
			q = m.op("Transpose", attrs("perm", aInts(0, 2, 1, 3)), split("q"))
			kt = m.op("Transpose", attrs("perm", aInts(0, 2, 3, 1)), split("k"))
			v = m.op("Transpose", attrs("perm", aInts(0, 2, 1, 3)), split("v"))
		} else {
			q, k, v = m.input("q", 2, 2, 5, 4), m.input("k", 2, 2, 5, 4), m.input("v", 2, 2, 5, 4)
			kt = m.op("Transpose", attrs("perm", aInts(0, 1, 3, 2)), k)
		}
		s := m.op("MatMul", nil, q, kt)
		if a.divide {
			s = m.op("Div", nil, s, m.scalar("c", 2))
		} else {
			s = m.op("Mul", nil, m.scalar("c", 0.5), s)
		}
		scores := s
		var mask string
		switch a.mask {
		case "input":
			in := m.input("mask", 2, 5)
			one := m.op("Unsqueeze", nil, in, m.ints("ax1", 1))
			two := m.op("Unsqueeze", nil, one, m.ints("ax2", 2))
			mask = m.op("Mul", nil, m.op("Sub", nil, m.scalar("one", 1), two), m.scalar("big", -10000))
		case "constant":
			mask = m.constant("mask", []int{1, 1, 5, 5})
		case "one column":
			mask = m.constant("mask", []int{1, 1, 5, 1})
		}
		if mask != "" {
			s = m.op("Add", nil, s, mask)
		}
		sm := attrs()
		if a.softmaxAx != 0 {
			sm["axis"] = aInt(a.softmaxAx)
		}
		y := m.op("MatMul", nil, m.op("Softmax", sm, s), v)
		names := map[string]string{"scores": scores, "y": y}
		if edit != nil {
			edit(m, names)
		}
		if len(m.g.Outputs) == 0 {
			m.output(y)
		}
		return m
	}
}

// Attention scales in float32 before a softmax summed in float64; the
// decomposition rounds the scaled scores, the softmax in float32. Its
// outputs, weighted means of V in [-2, 2], agree within the package's
// tolerance.
func TestRecognizeAttention(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    attention
		ops  string
	}{
		{"reshaped, Div, mask from an input", attention{opset: 13, reshaped: true, divide: true, mask: "input"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Unsqueeze Unsqueeze Sub Mul Attention"},
		{"4-D inputs, Mul, constant mask, opset 11", attention{opset: 11, mask: "constant", softmaxAx: -1}, "Attention"},
		{"no mask, axis 3", attention{opset: 17, reshaped: true, softmaxAx: 3},
			"Reshape Transpose Reshape Transpose Reshape Transpose Attention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rewrite(t, tc.a.build(nil), passes.RecognizeAttention(), tc.ops, rtol, atol)
			n := g.Nodes[len(g.Nodes)-1]
			if n.Float("scale", 0) != 0.5 {
				t.Errorf("scale %g, want 0.5", n.Float("scale", 0))
			}
			if want := map[bool]int{false: 3, true: 4}[tc.a.mask != ""]; len(n.Inputs) != want {
				t.Errorf("Attention reads %q, want %d inputs", n.Inputs, want)
			}
		})
	}
}

func TestRecognizeAttentionLeavesAlone(t *testing.T) {
	base := attention{opset: 13, reshaped: true, divide: true, mask: "input"}
	axis1, oneColumn, opset11 := base, base, base
	axis1.softmaxAx = 1
	oneColumn.mask = "one column"
	opset11.opset, opset11.mask = 11, "constant" // Softmax-11 defaults to axis 1
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"softmax over axis 1", axis1.build(nil)},
		{"softmax-11 without an axis", opset11.build(nil)},
		{"a mask of one column", oneColumn.build(nil)},
		{"scores are a graph output", base.build(func(m *model, v map[string]string) { m.output(v["y"], v["scores"]) })},
		{"mask given a last dimension of 1", base.build(func(m *model, v map[string]string) {
			m.g.Inputs[len(m.g.Inputs)-1].Shape = []int{2, 1}
			m.feeds["mask"] = tensor([]int{2, 1}, []float32{1, 0})
		})},
		{"mask unsqueezed at the end", base.build(func(m *model, v map[string]string) {
			m.ints("ax2", -1) // [2 1 5 1]: one column
		})},
		{"Q of unknown rank", attention{opset: 13, divide: true}.build(func(m *model, v map[string]string) {
			m.g.Inputs[0].Shape = nil
		})},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.RecognizeAttention()) })
	}
}

// torchAttention builds attention as torch.nn.MultiheadAttention exports
// it (torch 1.13, the TorchScript exporter): Q, K and V of 5 queries and
// keys for batch·heads = 4 and size 4, reshaped from [5, 4, 4] and
// transposed to [4, 5, 4] (Kᵀ straight to [4, 4, 5] by perm [1, 2, 0]), Q
// divided by √size before the product, no mask.
type torchAttention struct {
	qScale    string // "div" (Div(Q, 2), torch's), "mul" (Mul(0.5, Q)), "vector" (Div by a [4] constant)
	postScale bool   // the scores multiplied by 1 too, as baddbmm's alpha
	mask      string // "", "2-D" (a [5 5] constant), "3-D" (a [4 5 5] constant)
	kFirst    bool   // K given as [4, 5, 4] and Kᵀ of perm [0, 2, 1]
	softmaxAx int64  // 0: −1
}

func (a torchAttention) build(edit func(m *model, v map[string]string)) func() *model {
	return func() *model {
		m := newModel(17)
		shape := m.ints("shape", 5, 4, 4)
		split := func(name string) string { return m.op("Reshape", nil, m.input(name, 5, 16), shape) }
		q := m.op("Transpose", attrs("perm", aInts(1, 0, 2)), split("q"))
		var kt string
		if a.kFirst {
			kt = m.op("Transpose", attrs("perm", aInts(0, 2, 1)), m.input("k", 4, 5, 4))
		} else {
			kt = m.op("Transpose", attrs("perm", aInts(1, 2, 0)), split("k"))
		}
		v := m.op("Transpose", attrs("perm", aInts(1, 0, 2)), split("v"))
		switch a.qScale {
		case "div":
			q = m.op("Div", nil, q, m.scalar("c", 2))
		case "mul":
			q = m.op("Mul", nil, m.scalar("c", 0.5), q)
		case "vector":
			q = m.op("Div", nil, q, m.constant("c", []int{4}))
		}
		s := m.op("MatMul", nil, q, kt)
		if a.postScale {
			s = m.op("Mul", nil, s, m.scalar("alpha", 1))
		}
		switch a.mask {
		case "2-D":
			s = m.op("Add", nil, s, m.constant("mask", []int{5, 5}))
		case "3-D":
			s = m.op("Add", nil, s, m.constant("mask", []int{4, 5, 5}))
		}
		ax := a.softmaxAx
		if ax == 0 {
			ax = -1
		}
		y := m.op("MatMul", nil, m.op("Softmax", attrs("axis", aInt(ax)), s), v)
		names := map[string]string{"scores": s, "y": y, "q": q}
		if edit != nil {
			edit(m, names)
		}
		if len(m.g.Outputs) == 0 {
			m.output(y)
		}
		return m
	}
}

// The 3-D forms of torch.nn.MultiheadAttention (and so of
// TransformerEncoder and torchvision's ViT) become Attention with one head
// per batch·heads entry, their scalings of Q and of the scores
// multiplied into its scale.
func TestRecognizeAttention3D(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    torchAttention
		ops  string
	}{
		{"torch: Q divided, Kᵀ of perm [1 2 0]", torchAttention{qScale: "div"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Attention"},
		{"Q multiplied, the scores by 1 (baddbmm), a 2-D mask, axis 2", torchAttention{qScale: "mul", postScale: true, mask: "2-D", softmaxAx: 2},
			"Reshape Transpose Reshape Transpose Reshape Transpose Attention"},
		{"K given, Kᵀ of perm [0 2 1]", torchAttention{qScale: "div", kFirst: true},
			"Reshape Transpose Reshape Transpose Attention"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := rewrite(t, tc.a.build(nil), passes.RecognizeAttention(), tc.ops, rtol, atol)
			n := g.Nodes[len(g.Nodes)-1]
			if n.Float("scale", 0) != 0.5 || n.Int("q_num_heads", 0) != 1 || n.Int("kv_num_heads", 0) != 1 {
				t.Errorf("Attention %v, want scale 0.5 and one head of each", n.Attrs)
			}
			if want := map[bool]int{false: 3, true: 4}[tc.a.mask != ""]; len(n.Inputs) != want {
				t.Errorf("Attention reads %q, want %d inputs", n.Inputs, want)
			}
		})
	}
}

func TestRecognizeAttention3DLeavesAlone(t *testing.T) {
	base := torchAttention{qScale: "div"}
	mask3, axis1, vector := base, base, base
	mask3.mask, axis1.softmaxAx, vector.qScale = "3-D", 1, "vector"
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"a 3-D mask, which Attention would align with heads", mask3.build(nil)},
		{"softmax over axis 1", axis1.build(nil)},
		{"Q divided by a vector", vector.build(nil)},
		{"the scaled Q read twice", base.build(func(m *model, v map[string]string) { m.output(v["y"], v["q"]) })},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.RecognizeAttention()) })
	}
}

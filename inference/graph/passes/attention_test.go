package passes_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph/passes"
)

// attention describes a decomposed attention to build: batch 2, 2 heads,
// 5 queries and keys of size 4.
type attention struct {
	opset    int64
	reshaped bool // Q, K, V reshaped from [2, 5, 8] and transposed, Kᵀ of perm [0 2 3 1]; else 4-D inputs, Kᵀ of perm [0 1 3 2]
	divide   bool // Div by 2, else Mul by 0.5
	// mask is "" (none), added: "input" (from a [2, 5] input), "constant"
	// (a [1 1 5 5] constant), "one column" ([1 1 5 1]), "sliced" (a [5 5]
	// Slice of an [8 8] causal buffer, GPT-2's form), "rank 5" ([1 1 1 5 5]),
	// "unknown rank" (an input of undeclared shape); or Where-selected by a
	// causal condition: "where -inf" (Where(c, −inf, scores)), "where min"
	// (Where(c, scores, float32's lowest), Hugging Face's form), "where
	// -1e4" and "where 0" (fills that adding does not reproduce); or both:
	// "where then add" (Hugging Face's, then a [2 1 1 5] padding mask from
	// an input added) and "where then rank 5".
	mask      string
	softmaxAx int64 // 0: the attribute left out
	edit      func(m *model, v map[string]string)
}

// edited is build, for a table of cases.
func (a attention) edited(edit func(m *model, v map[string]string)) attention {
	a.edit = edit
	return a
}

func (a attention) build(edit func(m *model, v map[string]string)) func() *model {
	if edit == nil {
		edit = a.edit
	}
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
		case "sliced":
			buffer := make([]float32, 64)
			for i := range 8 {
				for j := i + 1; j < 8; j++ {
					buffer[i*8+j] = float32(math.Inf(-1))
				}
			}
			mask = m.op("Slice", nil, m.constant("buffer", []int{8, 8}, buffer...), m.ints("starts", 0, 0), m.ints("ends", 5, 5))
		case "rank 5":
			mask = m.constant("mask", []int{1, 1, 1, 5, 5})
		case "unknown rank":
			mask = m.input("mask", 1, 5)
			m.g.Inputs[len(m.g.Inputs)-1].Shape = nil
		case "where -inf", "where min", "where -1e4", "where 0", "where then add", "where then rank 5":
			// Keys after the query masked: above the diagonal of tri.
			tri := make([]float32, 25)
			for i := range 5 {
				for j := range 5 {
					tri[i*5+j] = float32(j - i)
				}
			}
			above := m.op("Greater", nil, m.constant("tri", []int{5, 5}, tri...), m.scalar("zero", 0))
			switch a.mask {
			case "where -inf":
				s = m.op("Where", nil, above, m.scalar("fill", float32(math.Inf(-1))), s)
			case "where min":
				s = m.op("Where", nil, m.op("Not", nil, above), s, m.scalar("fill", -math.MaxFloat32))
			case "where then add":
				s = m.op("Where", nil, m.op("Not", nil, above), s, m.scalar("fill", -math.MaxFloat32))
				mask = m.op("Unsqueeze", nil, m.input("pad", 2, 5), m.ints("axes", 1, 2))
			case "where then rank 5":
				s = m.op("Where", nil, above, m.scalar("fill", float32(math.Inf(-1))), s)
				mask = m.constant("mask", []int{1, 1, 1, 5, 5})
			case "where -1e4":
				s = m.op("Where", nil, above, m.scalar("fill", -1e4), s)
			case "where 0":
				s = m.op("Where", nil, above, m.scalar("fill", 0), s)
			}
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
		// Masks Add broadcasts over the keys: expanded to their count.
		{"a mask of one column", attention{opset: 13, mask: "one column"}, "Shape Gather Expand Attention"},
		{"a mask from an input of one column", attention{opset: 13, reshaped: true, divide: true, mask: "input"}.edited(func(m *model, v map[string]string) {
			m.g.Inputs[len(m.g.Inputs)-1].Shape = []int{2, 1}
			m.feeds["mask"] = tensor([]int{2, 1}, []float32{1, 0})
		}), "Reshape Transpose Reshape Transpose Reshape Transpose Unsqueeze Unsqueeze Sub Mul Shape Gather Expand Attention"},
		{"a mask unsqueezed at the end", attention{opset: 13, reshaped: true, divide: true, mask: "input"}.edited(func(m *model, v map[string]string) {
			m.ints("ax2", -1) // [2 1 5 1]: one column
		}), "Reshape Transpose Reshape Transpose Reshape Transpose Unsqueeze Unsqueeze Sub Mul Shape Gather Expand Attention"},
		{"a slice of a causal buffer (GPT-2)", attention{opset: 14, reshaped: true, mask: "sliced"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Slice Shape Gather Expand Attention"},
		// Where-selected fills: the mask Where(c, fill, 0), expanded.
		{"Where(c, −inf, scores)", attention{opset: 14, reshaped: true, mask: "where -inf"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Greater Where Shape Gather Expand Attention"},
		{"Where(c, scores, lowest) (Hugging Face)", attention{opset: 17, mask: "where min"},
			"Greater Not Where Shape Gather Expand Attention"},
		// Two masks: both added up into Attention's, whose width the
		// padding mask (an input) proves.
		{"Where(c, scores, lowest), then a padding mask added (GPT-2)", attention{opset: 17, mask: "where then add"},
			"Greater Not Unsqueeze Where Add Attention"},
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
	axis1, opset11 := base, base
	axis1.softmaxAx = 1
	opset11.opset, opset11.mask = 11, "constant" // Softmax-11 defaults to axis 1
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"softmax over axis 1", axis1.build(nil)},
		{"softmax-11 without an axis", opset11.build(nil)},
		{"scores are a graph output", base.build(func(m *model, v map[string]string) { m.output(v["y"], v["scores"]) })},
		{"a mask of rank 5, which makes the scores so", attention{opset: 13, mask: "rank 5"}.build(nil)},
		{"a mask of unknown rank", attention{opset: 13, mask: "unknown rank"}.build(nil)},
		{"Where(c, −10000, scores): adding −10000 is not selecting it", attention{opset: 14, mask: "where -1e4"}.build(nil)},
		{"Where(c, 0, scores)", attention{opset: 14, mask: "where 0"}.build(nil)},
		{"a causal Where, then a mask of rank 5", attention{opset: 14, mask: "where then rank 5"}.build(nil)},
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
	// mask is "", "2-D" (a [5 5] constant), "3-D" (a [4 5 5] constant),
	// "one column" (a [4 5 1] constant), "padding" (a [2 5] input
	// unsqueezed, expanded over the 2 heads and reshaped to [4 1 5] by a
	// shape computed from its own, TransformerEncoder's key-padding mask)
	// or "4-D" (a [1 4 5 5] constant, which makes the scores 4-D).
	mask      string
	kFirst    bool  // K given as [4, 5, 4] and Kᵀ of perm [0, 2, 1]
	softmaxAx int64 // 0: −1
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
		case "one column":
			s = m.op("Add", nil, s, m.constant("mask", []int{4, 5, 1}))
		case "4-D":
			s = m.op("Add", nil, s, m.constant("mask", []int{1, 4, 5, 5}))
		case "padding":
			scalar := func(name string, v int64) string {
				t, err := inference.New([]int{}, []int64{v})
				if err != nil {
					panic(err)
				}
				m.g.Initializers[name] = t
				return name
			}
			heads := m.op("Expand", nil, m.op("Unsqueeze", nil, m.input("pad", 2, 5), m.ints("axes", 1, 2)), m.ints("per_head", 2, 2, 1, 5))
			shape := m.op("Shape", nil, heads)
			dim := func(i int64) string { return m.op("Gather", nil, shape, scalar(fmt.Sprint("dim", i), i)) }
			row := func(v string) string { return m.op("Unsqueeze", nil, v, m.ints("axis0", 0)) }
			to := m.op("Concat", attrs("axis", aInt(0)), row(m.op("Mul", nil, dim(0), dim(1))), m.ints("one", 1), row(dim(3)))
			s = m.op("Add", nil, s, m.op("Reshape", nil, heads, to))
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
		// A mask of rank 3 gets Attention's heads axis, 1.
		{"a 3-D mask", torchAttention{qScale: "div", mask: "3-D"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Unsqueeze Attention"},
		{"a 3-D mask of one column", torchAttention{qScale: "div", mask: "one column"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Shape Gather Expand Unsqueeze Attention"},
		{"TransformerEncoder's key-padding mask", torchAttention{qScale: "div", postScale: true, mask: "padding"},
			"Reshape Transpose Reshape Transpose Reshape Transpose Unsqueeze Expand Shape Gather Gather Mul Unsqueeze Gather Unsqueeze Concat Reshape Shape Gather Expand Unsqueeze Attention"},
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
	mask4, axis1, vector := base, base, base
	mask4.mask, axis1.softmaxAx, vector.qScale = "4-D", 1, "vector"
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"a 4-D mask, which makes the scores 4-D", mask4.build(nil)},
		{"softmax over axis 1", axis1.build(nil)},
		{"Q divided by a vector", vector.build(nil)},
		{"the scaled Q read twice", base.build(func(m *model, v map[string]string) { m.output(v["y"], v["q"]) })},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.RecognizeAttention()) })
	}
}

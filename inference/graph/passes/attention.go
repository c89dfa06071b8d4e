package passes

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// RecognizeAttention replaces scaled dot-product attention written out as
// exporters write it for Q, K and V of shape [batch, heads, seq, size],
//
//	s = MatMul(Q, Kᵀ)
//	s = Mul(s, c) or Div(s, c)                 (c a float32 scalar)
//	s = Add(s, mask)                           (optional)
//	Y = MatMul(Softmax(s, last axis), V)
//
// by Attention(Q, K, V, mask) with scale c (or 1/c), the operator of
// ai.onnx opset 23 on 4-D inputs. Kᵀ is a Transpose of perm [0, 2, 3, 1]
// of the reshaped keys [batch, seq, heads, size] (its perm becomes
// [0, 2, 1, 3]: K) or of perm [0, 1, 3, 2] of K (it goes). Q and V must be
// 4-D for certain: outputs of a Transpose of four axes or a Reshape to a
// constant shape of four, or graph inputs declared 4-D. The Softmax works
// on the last axis (axis −1, or 3; before opset 13 given explicitly).
//
// Attention pads a mask with fewer columns than there are keys with −inf,
// where Add broadcasts a one-column mask; so the mask must have a column
// per key for certain: a float32 constant of rank 4 or less whose last
// dimension is more than 1, or a value whose last dimension is a graph
// input's (not declared 1) through Unsqueeze, Cast and elementwise
// arithmetic with scalars, as padding masks are computed. Every value of
// the pattern but Q, K, V and the mask has one reader and is not a graph
// output. Attention sums its softmax in float64, and gives a row that the
// mask sets to −inf everywhere zero weights, where the decomposition gives
// NaN.
func RecognizeAttention() Pass {
	return Pass{Name: "RecognizeAttention", Run: func(g *graph.Graph) (bool, error) {
		return recognizeAttention(g), nil
	}}
}

func recognizeAttention(g *graph.Graph) bool {
	x := newIndex(g)
	opset := g.Opset()
	gone := map[*graph.Node]bool{}
	for _, qk := range g.Nodes {
		if gone[qk] || !is(qk, "MatMul") || len(qk.Inputs) != 2 || len(qk.Outputs) != 1 {
			continue
		}
		q := qk.Inputs[0]
		kt := x.intermediate(qk.Inputs[1], qk)
		if !fourD(x, q) || !is(kt, "Transpose") || len(kt.Outputs) != 1 {
			continue
		}
		perm := kt.Ints("perm", nil)
		if !slices.Equal(perm, []int64{0, 2, 3, 1}) && !slices.Equal(perm, []int64{0, 1, 3, 2}) {
			continue
		}
		scaled := x.only(qk.Outputs[0])
		if scaled == nil || len(scaled.Outputs) != 1 {
			continue
		}
		cName, _ := other(scaled, qk.Outputs[0])
		c, ok := x.scalar(cName)
		var scale float64
		switch {
		case !ok || c == 0:
			continue
		case is(scaled, "Mul"):
			scale = c
		case is(scaled, "Div") && scaled.Inputs[0] == qk.Outputs[0]:
			scale = 1 / c
		default:
			continue
		}
		last, mask := scaled, ""
		if add := x.only(scaled.Outputs[0]); is(add, "Add") && len(add.Outputs) == 1 {
			m, _ := other(add, scaled.Outputs[0])
			if !maskPerKey(x, m) {
				continue
			}
			last, mask = add, m
		}
		softmax := x.only(last.Outputs[0])
		if !is(softmax, "Softmax") || len(softmax.Outputs) != 1 {
			continue
		}
		axis := softmax.Int("axis", 1) // Softmax-1 and -11 flatten from axis 1
		if opset >= 13 {
			axis = softmax.Int("axis", -1)
		}
		if axis != -1 && axis != 3 {
			continue
		}
		pv := x.only(softmax.Outputs[0])
		if !is(pv, "MatMul") || len(pv.Outputs) != 1 || pv.Inputs[0] != softmax.Outputs[0] || !fourD(x, pv.Input(1)) {
			continue
		}
		k := kt.Inputs[0]
		if perm[1] == 2 { // Kᵀ from [batch, seq, heads, size]: transpose to K instead
			kt.Attrs = withAttr(kt.Attrs, "perm", graph.Attr{Type: graph.AttrInts, Ints: []int64{0, 2, 1, 3}})
			k = kt.Outputs[0]
		} else {
			gone[kt] = true
		}
		x.become(pv, qk, "Attention", []string{q, k, pv.Inputs[1], mask}, map[string]graph.Attr{
			"scale": {Type: graph.AttrFloat, Float: float32(scale)},
		})
		if mask == "" {
			pv.Inputs = pv.Inputs[:3]
		}
		for _, n := range []*graph.Node{qk, scaled, last, softmax} {
			gone[n] = true
		}
	}
	removeNodes(g, gone)
	return len(gone) > 0
}

// fourD reports whether value is certainly 4-D: the output of a Transpose
// of four axes or of a Reshape to a constant shape of four, or a graph
// input declared 4-D.
func fourD(x *index, value string) bool {
	for _, in := range x.g.Inputs {
		if in.Name == value {
			return len(in.Shape) == 4
		}
	}
	p := x.producer[value]
	switch {
	case is(p, "Transpose"):
		return len(p.Ints("perm", nil)) == 4
	case is(p, "Reshape"):
		t, ok := x.constant(p.Input(1))
		return ok && t.Rank() == 1 && t.Len() == 4
	}
	return false
}

// maskPerKey reports whether the attention mask m has, for certain, one
// column per key: see RecognizeAttention.
func maskPerKey(x *index, m string) bool {
	if t, ok := x.constant(m); ok {
		s := t.Shape()
		return (t.DType() == inference.Float32) && len(s) >= 1 && len(s) <= 4 && s[len(s)-1] > 1
	}
	rank, ok := lastDimOfInput(x, m, 0)
	return ok && rank <= 4
}

// lastDimOfInput reports whether value's last dimension is that of a graph
// input declared with a last dimension other than 1, through the
// operators a padding mask is computed with, and returns value's rank.
func lastDimOfInput(x *index, value string, depth int) (rank int, ok bool) {
	if depth > 8 {
		return 0, false
	}
	for _, in := range x.g.Inputs {
		if in.Name == value {
			s := in.Shape
			return len(s), len(s) > 0 && s[len(s)-1] != 1
		}
	}
	p := x.producer[value]
	if p == nil || p.Domain != "" || len(p.Outputs) != 1 || len(p.Inputs) == 0 {
		return 0, false
	}
	switch p.OpType {
	case "Cast", "Not", "Neg":
		return lastDimOfInput(x, p.Inputs[0], depth+1)
	case "Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater":
		if len(p.Inputs) != 2 {
			return 0, false
		}
		for i, in := range p.Inputs {
			if t, isConst := x.constant(in); isConst && t.Len() == 1 && t.Rank() == 0 {
				return lastDimOfInput(x, p.Inputs[1-i], depth+1)
			}
		}
	case "Unsqueeze":
		r, ok := lastDimOfInput(x, p.Inputs[0], depth+1)
		axes := p.Ints("axes", nil)
		if name := p.Input(1); name != "" {
			t, isConst := x.constant(name)
			v, err := opsem.Int64s(t)
			if !isConst || err != nil {
				return 0, false
			}
			axes = v
		}
		out := r + len(axes)
		for _, a := range axes {
			if a == -1 || a == int64(out-1) {
				return 0, false // a new last dimension
			}
		}
		return out, ok && len(axes) > 0
	}
	return 0, false
}

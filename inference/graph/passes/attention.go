package passes

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// RecognizeAttention replaces scaled dot-product attention written out as
// exporters write it, for Q, K and V of shape [batch, heads, seq, size]
// (the form of hand-written and Hugging Face models) or [batch·heads,
// seq, size] (torch.nn.MultiheadAttention, which TransformerEncoder and
// torchvision's ViT use),
//
//	Q = Mul(Q, c) or Div(Q, c)                 (optional)
//	s = MatMul(Q, Kᵀ)
//	s = Mul(s, c) or Div(s, c)                 (optional; c a float32 scalar)
//	s = Add(s, mask), or                       (optional: one or more in a row)
//	s = Where(c, fill, s) or Where(c, s, fill) (fill −inf or at most −1e30)
//	Y = MatMul(Softmax(s, last axis), V)
//
// by Attention(Q, K, V, mask) with scale the product of the scalings, the
// operator of ai.onnx opset 23 on 4-D inputs, or on 3-D inputs with one
// head each (q_num_heads = kv_num_heads = 1, the batch being batch·heads).
// Kᵀ is a Transpose of the reshaped keys [batch, seq, heads, size] of perm
// [0, 2, 3, 1] (its perm becomes [0, 2, 1, 3]: K), or [seq, batch·heads,
// size] of perm [1, 2, 0] (it becomes [1, 0, 2]), or of K, of perm [0, 1,
// 3, 2] or [0, 2, 1] (it goes). Q and V must have Kᵀ's rank for certain:
// outputs of a Transpose of that many axes or a Reshape to a constant
// shape of that length, or graph inputs so declared. The Softmax works on
// the last axis (axis −1, or rank − 1; before opset 13 given explicitly).
//
// Up to four masks in a row are taken (GPT-2 selects with its causal mask,
// then adds its padding mask), and added up into Attention's one. Each must
// have, for certain, a rank no higher than the scores' (index.rankOf
// follows it back through the shape arithmetic exporters write), so that
// Attention broadcasts it as Add or Where does. A Where's
// fill becomes the mask Where(c, fill, 0) (or Where(c, 0, fill)): below
// −1e30, a score plus the fill is the fill, so adding it is selecting it;
// a fill such as −10000 or 0 leaves the pattern alone. Attention pads a
// mask with fewer columns than there are keys with −inf, where Add
// broadcasts a one-column mask: a mask not known to have a column per key
// (a float32 constant whose last dimension is more than 1, or a value
// whose last dimension is a graph input's, not declared 1, through
// Unsqueeze, Cast and elementwise arithmetic with scalars, as padding
// masks are computed) is expanded to the keys' count (Shape, Gather,
// Expand) first. With 3-D Q, a mask of rank 3 ([batch·heads, queries,
// keys], as TransformerEncoder reshapes its key-padding mask) gets
// Attention's heads axis (Unsqueeze at 1). Every value of the pattern but
// Q, K, V and the mask has one reader and is not a graph output. Attention
// sums its softmax in float64, and gives a row that the mask sets to −inf
// everywhere zero weights, where the decomposition gives NaN.
func RecognizeAttention() Pass {
	return Pass{Name: "RecognizeAttention", Run: func(g *graph.Graph) (bool, error) {
		return recognizeAttention(g), nil
	}}
}

// attentionKeys are the Transposes whose output is Kᵀ, by perm: to K
// (nil: K is the Transpose's input), and the rank of Q, K and V.
var attentionKeys = []struct {
	perm, toK []int64
}{
	{[]int64{0, 2, 3, 1}, []int64{0, 2, 1, 3}},
	{[]int64{0, 1, 3, 2}, nil},
	{[]int64{1, 2, 0}, []int64{1, 0, 2}},
	{[]int64{0, 2, 1}, nil},
}

// scaling matches n, a reader of value, against a Mul or Div of value by a
// nonzero float32 scalar (value the dividend) and returns the factor.
func scaling(x *index, n *graph.Node, value string) (float64, bool) {
	if n == nil || len(n.Outputs) != 1 {
		return 0, false
	}
	cName, ok := other(n, value)
	if !ok {
		return 0, false
	}
	c, ok := x.scalar(cName)
	switch {
	case !ok || c == 0:
		return 0, false
	case is(n, "Mul"):
		return c, true
	case is(n, "Div") && n.Inputs[0] == value:
		return 1 / c, true
	}
	return 0, false
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
		if !is(kt, "Transpose") || len(kt.Outputs) != 1 {
			continue
		}
		perm := kt.Ints("perm", nil)
		var toK []int64
		found := false
		for _, key := range attentionKeys {
			if slices.Equal(perm, key.perm) {
				toK, found = key.toK, true
			}
		}
		if !found {
			continue
		}
		rank := len(perm)
		// The scalings of Q, of the scores, or both.
		scale := 1.0
		var scaledQ *graph.Node
		if p := x.intermediate(q, qk); p != nil {
			for _, in := range p.Inputs { // scaling takes Q as Mul's either operand, Div's first
				if c, ok := scaling(x, p, in); ok && scaledQ == nil {
					scale, scaledQ, q = c, p, in
				}
			}
		}
		if !hasRank(x, q, rank) {
			continue
		}
		last := qk
		var scaled *graph.Node
		if n := x.only(qk.Outputs[0]); n != nil {
			if c, ok := scaling(x, n, qk.Outputs[0]); ok {
				scale *= c
				last, scaled = n, n
			}
		}
		masks, ok := matchMasks(x, last, rank)
		if !ok {
			continue // not masks, or ones Attention would not broadcast as the graph does
		}
		if len(masks) > 0 {
			last = masks[len(masks)-1].node
		}
		softmax := x.only(last.Outputs[0])
		if !is(softmax, "Softmax") || len(softmax.Outputs) != 1 {
			continue
		}
		axis := softmax.Int("axis", 1) // Softmax-1 and -11 flatten from axis 1
		if opset >= 13 {
			axis = softmax.Int("axis", -1)
		}
		if axis != -1 && axis != int64(rank-1) {
			continue
		}
		pv := x.only(softmax.Outputs[0])
		if !is(pv, "MatMul") || len(pv.Outputs) != 1 || pv.Inputs[0] != softmax.Outputs[0] || !hasRank(x, pv.Input(1), rank) {
			continue
		}
		k := kt.Inputs[0]
		if toK != nil { // Kᵀ from the reshaped keys: transpose to K instead
			kt.Attrs = withAttr(kt.Attrs, "perm", graph.Attr{Type: graph.AttrInts, Ints: toK})
			k = kt.Outputs[0]
		} else {
			gone[kt] = true
		}
		attrs := map[string]graph.Attr{"scale": {Type: graph.AttrFloat, Float: float32(scale)}}
		if rank == 3 {
			attrs["q_num_heads"] = graph.Attr{Type: graph.AttrInt, Int: 1}
			attrs["kv_num_heads"] = graph.Attr{Type: graph.AttrInt, Int: 1}
		}
		first := qk
		if scaledQ != nil {
			first = scaledQ
		}
		m := ""
		if len(masks) > 0 {
			m = x.buildMask(masks, first, k, rank)
		}
		x.become(pv, first, "Attention", []string{q, k, pv.Inputs[1], m}, attrs)
		if m == "" {
			pv.Inputs = pv.Inputs[:3]
		}
		for _, n := range []*graph.Node{scaledQ, qk, scaled, softmax} {
			if n != nil {
				gone[n] = true
			}
		}
		for _, mask := range masks {
			gone[mask.node] = true
		}
	}
	removeNodes(g, gone)
	return len(gone) > 0
}

// hasRank reports whether value certainly has rank dimensions: the output
// of a Transpose of that many axes or of a Reshape to a constant shape of
// that length, or a graph input so declared.
func hasRank(x *index, value string, rank int) bool {
	for _, in := range x.g.Inputs {
		if in.Name == value {
			return len(in.Shape) == rank
		}
	}
	p := x.producer[value]
	switch {
	case is(p, "Transpose"):
		return len(p.Ints("perm", nil)) == rank
	case is(p, "Reshape"):
		t, ok := x.constant(p.Input(1))
		return ok && t.Rank() == 1 && t.Len() == rank
	}
	return false
}

// attentionMask is one way a pattern masks its scores: node adds value to
// them, or is a Where that selects fill in their
// stead where cond holds (Where(cond, fill, scores)), or where it does not
// (fillLast: Where(cond, scores, fill)). rank is the rank of the mask this
// makes, and perKey says it has a column per key for certain.
type attentionMask struct {
	node             *graph.Node
	value            string
	cond, fill       string
	fillLast, perKey bool
	rank             int
}

// minMaskFill is the largest fill a Where may select for a masked score:
// below it, adding the fill to a score of float32 range short of 1e22
// gives the fill again, so that selecting it and adding it agree. (−inf,
// and torch.finfo(float32).min as Hugging Face writes it, are below.)
const minMaskFill = -1e30

// maxMasks is the most masks in a row that a pattern may apply to its
// scores: GPT-2 selects with its causal mask, then adds its padding mask.
const maxMasks = 4

// matchMasks matches the Adds and Wheres that follow the scores, the
// output of last, against masks (matchMask), and reports whether all are
// masks Attention can take; none is a match too.
func matchMasks(x *index, last *graph.Node, rank int) ([]attentionMask, bool) {
	var masks []attentionMask
	for {
		n := x.only(last.Outputs[0])
		if !is(n, "Add") && !is(n, "Where") {
			return masks, true
		}
		mask, ok := matchMask(x, n, last.Outputs[0], rank)
		if !ok || len(masks) == maxMasks {
			return nil, false
		}
		masks, last = append(masks, mask), n
	}
}

// matchMask matches n, an Add or a Where that reads the scores (of rank
// rank), against a mask Attention can take: a value added, or a scalar
// fill of minMaskFill or less selected, whose rank is known and no higher
// than the scores' (3-D scores take masks of rank 3 or less, as Add
// broadcasts them; buildMask makes a rank-3 mask Attention's rank 4).
func matchMask(x *index, n *graph.Node, scores string, rank int) (attentionMask, bool) {
	mask := attentionMask{node: n}
	var bounds []string // the values whose ranks make the mask's
	switch {
	case len(n.Outputs) != 1:
		return mask, false
	case is(n, "Add"):
		v, ok := other(n, scores)
		if !ok || v == scores {
			return mask, false
		}
		if t, isConst := x.constant(v); isConst {
			s := t.Shape()
			mask.perKey = t.DType() == inference.Float32 && len(s) >= 1 && s[len(s)-1] > 1
		} else {
			_, mask.perKey = lastDimOfInput(x, v, 0)
		}
		mask.value, bounds = v, []string{v}
	case is(n, "Where") && len(n.Inputs) == 3 && n.Inputs[0] != scores:
		mask.cond, mask.fill = n.Inputs[0], n.Inputs[1]
		if n.Inputs[1] == scores {
			mask.fill, mask.fillLast = n.Inputs[2], true
		} else if n.Inputs[2] != scores {
			return mask, false
		}
		if v, ok := x.scalar(mask.fill); !ok || v > minMaskFill {
			return mask, false
		}
		bounds = []string{mask.cond, mask.fill}
	default:
		return mask, false
	}
	for _, v := range bounds {
		r, ok := x.rankOf(v)
		if !ok {
			return mask, false
		}
		mask.rank = max(mask.rank, r)
	}
	return mask, mask.rank <= rank
}

// buildMask adds the nodes that make masks, applied in turn to the
// scores, Attention's attn_mask for keys k of rank rank (of the pattern
// whose first node is first), and returns the mask's name. A Where's fill
// becomes the mask Where(cond, fill, 0) (or Where(cond, 0, fill)); several
// masks are added up; a mask not known to have a column per key is
// expanded to the keys' count, as Add would broadcast it, where Attention
// would pad it with −inf; a rank-3 mask of 3-D scores [batch·heads,
// queries, keys] gets its heads axis (1), as Attention's scores are
// [batch·heads, 1, queries, keys].
func (x *index) buildMask(masks []attentionMask, first *graph.Node, k string, rank int) string {
	base := first.Name + "/mask"
	add := func(op string, inputs []string, attrs map[string]graph.Attr) string {
		n := &graph.Node{Name: x.fresh(base + "/" + op), OpType: op, Inputs: inputs, Outputs: []string{x.fresh(base)}, Attrs: attrs}
		x.g.Nodes = append(x.g.Nodes, n)
		for _, in := range inputs {
			x.readers[in] = append(x.readers[in], n)
		}
		return n.Outputs[0]
	}
	m, perKey, maskRank := "", false, 0
	for _, mask := range masks {
		v := mask.value
		if v == "" {
			zero := x.addInitializer(base+"/zero", mustTensor([]int{}, []float32{0}))
			if mask.fillLast {
				v = add("Where", []string{mask.cond, zero, mask.fill}, nil)
			} else {
				v = add("Where", []string{mask.cond, mask.fill, zero}, nil)
			}
		}
		if m == "" {
			m = v
		} else {
			m = add("Add", []string{m, v}, nil)
		}
		perKey, maskRank = perKey || mask.perKey, max(maskRank, mask.rank)
	}
	if !perKey {
		keysAxis := x.addInitializer(base+"/keys_axis", mustTensor([]int{1}, []int64{int64(rank - 2)}))
		keys := add("Gather", []string{add("Shape", []string{k}, nil), keysAxis}, nil)
		m = add("Expand", []string{m, keys}, nil)
	}
	if rank == 3 && maskRank == 3 {
		if x.g.Opset() < 13 {
			m = add("Unsqueeze", []string{m}, map[string]graph.Attr{"axes": {Type: graph.AttrInts, Ints: []int64{1}}})
		} else {
			m = add("Unsqueeze", []string{m, x.addInitializer(base+"/heads_axis", mustTensor([]int{1}, []int64{1}))}, nil)
		}
	}
	return m
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
		axes, given := x.axes(p, 13)
		if !given {
			return 0, false
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

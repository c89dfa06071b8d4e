package passes

import (
	"slices"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// RecognizeLayerNorm replaces the decomposed layer normalisation that
// exporters write for opsets without LayerNormalization,
//
//	m = ReduceMean(x, axes)      d = Sub(x, m)
//	v = ReduceMean(Pow(d, 2), axes)          (or Mul(d, d))
//	y = Div(d, Sqrt(Add(v, epsilon)))         (or Mul(d, Reciprocal(Sqrt(…))), TensorFlow's rsqrt)
//	y = Mul(y, scale)                         (optional)
//	y = Add(y, bias)                          (optional)
//
// by LayerNormalization(x, scale, bias) with axis −k and epsilon, when
// axes are the last k axes (−k … −1, or r − k … r − 1 where x's rank r
// is known before a run: index.rankOf), both ReduceMeans keep their
// dimensions, epsilon, scale and bias are float32 constants (scale and
// bias of rank k or less), and every value but x and the result has one
// reader and is not a graph output. ReduceMean takes its axes as an
// attribute before opset 18 and as a constant input from 18. Without a
// Mul the scale is a one-element 1. The LayerNormalization kernels keep
// their statistics in float64; the decomposed graph rounds each step to
// float32.
func RecognizeLayerNorm() Pass {
	return Pass{Name: "RecognizeLayerNorm", Run: func(g *graph.Graph) (bool, error) {
		return recognizeLayerNorm(g), nil
	}}
}

func recognizeLayerNorm(g *graph.Graph) bool {
	x := newIndex(g)
	opset := g.Opset()
	gone := map[*graph.Node]bool{}
	for _, mean := range g.Nodes {
		if gone[mean] || !is(mean, "ReduceMean") || len(mean.Outputs) != 1 {
			continue
		}
		in := mean.Input(0)
		rank, ranked := x.rankOf(in)
		if !ranked {
			rank = -1
		}
		axes, ok := reducedTail(x, opsem.Node{Node: mean, Opset: opset}, rank)
		if !ok {
			continue
		}
		p := pattern{nodes: []*graph.Node{mean}}
		sub := x.only(mean.Outputs[0])
		if !is(sub, "Sub") || len(sub.Inputs) != 2 || sub.Inputs[0] != in || sub.Inputs[1] != mean.Outputs[0] {
			continue
		}
		d := sub.Outputs[0]
		square, norm := centredReaders(x, d)
		if square == nil {
			continue
		}
		varMean := x.only(square.Outputs[0])
		if !is(varMean, "ReduceMean") || varMean.Inputs[0] != square.Outputs[0] {
			continue
		}
		if a, ok := reducedTail(x, opsem.Node{Node: varMean, Opset: opset}, rank); !ok || !slices.Equal(a, axes) {
			continue
		}
		addEps := x.only(varMean.Outputs[0])
		if !is(addEps, "Add") {
			continue
		}
		epsName, _ := other(addEps, varMean.Outputs[0])
		eps, ok := x.scalar(epsName)
		sqrt := x.only(addEps.Outputs[0])
		if !ok || !is(sqrt, "Sqrt") {
			continue
		}
		p.add(sub, square, varMean, addEps, sqrt, norm)
		// d / √(v + ε), or d · 1/√(v + ε).
		divisor := sqrt.Outputs[0]
		if is(norm, "Mul") {
			recip := x.only(sqrt.Outputs[0])
			if !is(recip, "Reciprocal") || len(recip.Outputs) != 1 {
				continue
			}
			p.add(recip)
			divisor = recip.Outputs[0]
		}
		if v, _ := other(norm, d); x.only(divisor) != norm || v != divisor {
			continue
		}
		last, scale, bias := norm, "", ""
		if mul := x.only(norm.Outputs[0]); is(mul, "Mul") {
			if s, _ := other(mul, norm.Outputs[0]); blockOperand(x, s, len(axes)) {
				last, scale = mul, s
				p.add(mul)
			}
		}
		if add := x.only(last.Outputs[0]); is(add, "Add") {
			if b, _ := other(add, last.Outputs[0]); blockOperand(x, b, len(axes)) {
				last, bias = add, b
				p.add(add)
			}
		}
		if scale == "" {
			scale = x.addInitializer(mean.Name+"_scale", mustTensor([]int{1}, []float32{1}))
		}
		inputs := []string{in, scale}
		if bias != "" {
			inputs = append(inputs, bias)
		}
		x.become(last, mean, "LayerNormalization", inputs, map[string]graph.Attr{
			"axis":    {Type: graph.AttrInt, Int: axes[0]},
			"epsilon": {Type: graph.AttrFloat, Float: float32(eps)},
		})
		for _, n := range p.nodes {
			if n != last {
				gone[n] = true
			}
		}
	}
	removeNodes(g, gone)
	return len(gone) > 0
}

// reducedTail returns the axes of a ReduceMean that keeps its dimensions
// when they are −k, …, −1 in order: written so, or, where the rank of its
// input is known (rank ≥ 0), as rank − k, …, rank − 1.
func reducedTail(x *index, n opsem.Node, rank int) ([]int64, bool) {
	if n.Int("keepdims", 1) != 1 || len(n.Inputs) == 0 {
		return nil, false
	}
	axes := n.Ints("axes", nil)
	if n.Opset >= 18 {
		t, ok := x.constant(n.Input(1))
		if !ok || n.Has("axes") {
			return nil, false
		}
		v, err := opsem.Int64s(t)
		if err != nil {
			return nil, false
		}
		axes = v
	} else if len(n.Inputs) > 1 {
		return nil, false
	}
	if len(axes) == 0 {
		return nil, false
	}
	tail := make([]int64, len(axes))
	for i, a := range axes {
		if a >= 0 && rank >= 0 {
			a -= int64(rank)
		}
		if a != int64(i-len(axes)) {
			return nil, false
		}
		tail[i] = a
	}
	return tail, true
}

// centredReaders returns the readers of d, the centred input, when they
// are a square of d (Pow(d, 2) or Mul(d, d)) and a Div(d, …) or a Mul of d
// by another value: the normaliser.
func centredReaders(x *index, d string) (square, norm *graph.Node) {
	if x.pinned[d] {
		return nil, nil
	}
	for _, r := range x.readers[d] {
		switch {
		case is(r, "Pow") && len(r.Inputs) == 2 && r.Inputs[0] == d && x.isNumber(r.Inputs[1], 2),
			is(r, "Mul") && len(r.Inputs) == 2 && r.Inputs[0] == d && r.Inputs[1] == d:
			if square != nil && square != r {
				return nil, nil
			}
			square = r
		case is(r, "Div") && len(r.Inputs) == 2 && r.Inputs[0] == d && r.Inputs[1] != d,
			is(r, "Mul") && len(r.Inputs) == 2 && (r.Inputs[0] == d) != (r.Inputs[1] == d):
			if norm != nil {
				return nil, nil
			}
			norm = r
		default:
			return nil, nil
		}
	}
	if norm == nil || square == nil || len(square.Outputs) != 1 || len(norm.Outputs) != 1 {
		return nil, nil
	}
	return square, norm
}

// blockOperand reports whether name is a float32 constant that can scale
// or shift blocks of k axes without changing the shape it multiplies: of
// rank k or less.
func blockOperand(x *index, name string, k int) bool {
	t, ok := x.constant(name)
	_, isFloat := x.floats(name)
	return ok && isFloat && t.Rank() <= k && t.Len() > 0
}

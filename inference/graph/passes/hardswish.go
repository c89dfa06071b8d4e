package passes

import (
	"github.com/beamml/beamml/inference/graph"
)

// RecognizeHardSwish replaces the forms exporters write hard-swish in
// (MobileNetV3's activation) by one HardSwish node:
//
//	x · HardSigmoid(x, alpha = 1/6, beta = 0.5)   (PyTorch before opset 14)
//	x · Clip(x + 3, 0, 6) / 6                      (x · relu6(x + 3) / 6, written out)
//
// The second with the division by 6 written Div(…, 6) or Mul(…, 1/6),
// before or after the product with x, the operands of each Add and Mul in
// either order, and Clip's bounds as attributes (before opset 11) or
// inputs. The constants are float32 scalars, matched within a relative
// 1e-5; every intermediate value has one reader and is not a graph
// output. Keras's hard sigmoid (alpha 0.2) is another function and is
// left alone. HardSwish computes x·max(0, min(1, x/6 + 0.5)), where the
// Clip form rounds x + 3 and the quotient: the two agree to a few units in
// the last place.
func RecognizeHardSwish() Pass {
	return Pass{Name: "RecognizeHardSwish", Run: func(g *graph.Graph) (bool, error) {
		return recognizeHardSwish(g), nil
	}}
}

func recognizeHardSwish(g *graph.Graph) bool {
	x := newIndex(g)
	gone := map[*graph.Node]bool{}
	for _, n := range g.Nodes {
		if gone[n] || len(n.Outputs) != 1 || len(n.Inputs) == 0 {
			continue
		}
		var in string
		var p pattern
		var last *graph.Node
		switch {
		case is(n, "HardSigmoid"):
			if !near(float64(n.Float("alpha", 0.2)), 1.0/6) || !near(float64(n.Float("beta", 0.5)), 0.5) {
				continue
			}
			in = n.Inputs[0]
			if m := x.only(n.Outputs[0]); productWith(m, n.Outputs[0], in) {
				last = m
			}
		case is(n, "Clip"):
			in, last = hardSwishOfClip(x, &p, n)
		default:
			continue
		}
		if last == nil {
			continue
		}
		p.add(n)
		x.become(last, n, "HardSwish", []string{in}, nil)
		for _, m := range p.nodes {
			if m != last {
				gone[m] = true
			}
		}
	}
	removeNodes(g, gone)
	return len(gone) > 0
}

// hardSwishOfClip matches clip against Clip(x + 3, 0, 6) and its readers
// against x · clip / 6, and returns x and the last node of the product,
// having added the others to p; or "", nil.
func hardSwishOfClip(x *index, p *pattern, clip *graph.Node) (string, *graph.Node) {
	lo, hi := 0.0, 0.0
	if x.g.OpsetOf(clip) < 11 {
		lo, hi = float64(clip.Float("min", -1)), float64(clip.Float("max", -1))
	} else {
		var ok1, ok2 bool
		lo, ok1 = x.scalar(clip.Input(1))
		hi, ok2 = x.scalar(clip.Input(2))
		if !ok1 || !ok2 {
			return "", nil
		}
	}
	add := x.intermediate(clip.Inputs[0], clip)
	if lo != 0 || hi != 6 || !is(add, "Add") || len(add.Outputs) != 1 {
		return "", nil
	}
	in := ""
	for i, v := range add.Inputs {
		if len(add.Inputs) == 2 && x.isScalar(v, 3) {
			in = add.Inputs[1-i]
		}
	}
	if in == "" {
		return "", nil
	}
	// x · (clip / 6), or (x · clip) / 6.
	first := x.only(clip.Outputs[0])
	if q := sixth(x, first, clip.Outputs[0]); q != "" {
		if m := x.only(q); productWith(m, q, in) {
			p.add(add, first)
			return in, m
		}
		return "", nil
	}
	if !productWith(first, clip.Outputs[0], in) {
		return "", nil
	}
	last := x.only(first.Outputs[0])
	if sixth(x, last, first.Outputs[0]) == "" {
		return "", nil
	}
	p.add(add, first)
	return in, last
}

// productWith reports whether n is the Mul of value and v, either way
// round.
func productWith(n *graph.Node, value, v string) bool {
	if !is(n, "Mul") || len(n.Outputs) != 1 {
		return false
	}
	w, ok := other(n, value)
	return ok && w == v && value != v
}

// sixth returns n's output when n divides value by 6 (Div(value, 6), or
// Mul by 1/6 either way round), or "".
func sixth(x *index, n *graph.Node, value string) string {
	if n == nil || len(n.Outputs) != 1 || len(n.Inputs) != 2 {
		return ""
	}
	switch {
	case is(n, "Div") && n.Inputs[0] == value && x.isScalar(n.Inputs[1], 6):
		return n.Outputs[0]
	case is(n, "Mul"):
		if c, ok := other(n, value); ok && x.isScalar(c, 1.0/6) {
			return n.Outputs[0]
		}
	}
	return ""
}

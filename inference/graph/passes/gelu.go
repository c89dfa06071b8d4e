package passes

import (
	"math"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// RecognizeGelu replaces the two forms exporters write GELU in by one
// Gelu node:
//
//	erf:  x · 0.5 · (1 + Erf(x/√2))                      → Gelu(x)
//	tanh: x · 0.5 · (1 + Tanh(√(2/π)·(x + 0.044715·x³)))  → Gelu(x, approximate="tanh")
//
// with x/√2 written Div(x, 1.4142135) or Mul(x, 0.70710678), x³ written
// Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x), the factors 0.5, x
// and (1 + …) multiplied in any order, and the operands of each Add and
// Mul in either order. The constants are float32 scalars, matched within
// a relative 1e-5; every intermediate value has one reader and is not a
// graph output. The Gelu computes in float64 and rounds once, where the
// decomposed graph rounds at each step: the two agree to a few units in
// the last place.
func RecognizeGelu() Pass {
	return Pass{Name: "RecognizeGelu", Run: func(g *graph.Graph) (bool, error) {
		return recognizeGelu(g), nil
	}}
}

func recognizeGelu(g *graph.Graph) bool {
	x := newIndex(g)
	gone := map[*graph.Node]bool{}
	for _, n := range g.Nodes {
		if gone[n] || len(n.Inputs) != 1 || len(n.Outputs) != 1 {
			continue
		}
		var p pattern
		var in string
		approximate := ""
		switch {
		case is(n, "Erf"):
			in = geluErfArg(x, &p, n)
		case is(n, "Tanh"):
			in, approximate = geluTanhArg(x, &p, n), "tanh"
		default:
			continue
		}
		if in == "" {
			continue
		}
		p.add(n)
		one := x.only(n.Outputs[0])
		if !is(one, "Add") {
			continue
		}
		if c, _ := other(one, n.Outputs[0]); !x.isScalar(c, 1) {
			continue
		}
		p.add(one)
		last := geluProduct(x, &p, one.Outputs[0], in)
		if last == nil {
			continue
		}
		attrs := map[string]graph.Attr{}
		if approximate != "" {
			attrs["approximate"] = graph.Attr{Type: graph.AttrString, String: approximate}
		}
		x.become(last, n, "Gelu", []string{in}, attrs)
		for _, m := range p.nodes {
			if m != last {
				gone[m] = true
			}
		}
	}
	removeNodes(g, gone)
	return len(gone) > 0
}

// pattern collects the nodes of a match.
type pattern struct{ nodes []*graph.Node }

func (p *pattern) add(n ...*graph.Node) { p.nodes = append(p.nodes, n...) }

// intermediate returns the producer of value when value's only reader is
// reader: a node of the pattern may go.
func (x *index) intermediate(value string, reader *graph.Node) *graph.Node {
	if x.only(value) != reader {
		return nil
	}
	return x.producer[value]
}

// geluErfArg matches the argument of erf against x/√2 and returns x, or
// "".
func geluErfArg(x *index, p *pattern, erf *graph.Node) string {
	d := x.intermediate(erf.Inputs[0], erf)
	switch {
	case is(d, "Div") && len(d.Inputs) == 2 && x.isScalar(d.Inputs[1], math.Sqrt2):
		p.add(d)
		return d.Inputs[0]
	case is(d, "Mul"):
		for i, in := range d.Inputs {
			if len(d.Inputs) == 2 && x.isScalar(in, 1/math.Sqrt2) {
				p.add(d)
				return d.Inputs[1-i]
			}
		}
	}
	return ""
}

// geluTanhArg matches the argument of tanh against √(2/π)·(x + 0.044715·x³)
// and returns x, or "".
func geluTanhArg(x *index, p *pattern, tanh *graph.Node) string {
	scaled := x.intermediate(tanh.Inputs[0], tanh)
	sum := scaledBy(x, scaled, math.Sqrt(2/math.Pi))
	add := x.intermediate(sum, scaled)
	if !is(add, "Add") || len(add.Inputs) != 2 {
		return ""
	}
	for i, term := range add.Inputs {
		cubeTerm := x.intermediate(term, add)
		cube := x.intermediate(scaledBy(x, cubeTerm, 0.044715), cubeTerm)
		in := add.Inputs[1-i]
		if cube == nil || in == term {
			continue
		}
		square := cubeOf(x, cube, in)
		if square == nil {
			continue
		}
		if square != cube {
			p.add(square)
		}
		p.add(cube, cubeTerm, add, scaled)
		return in
	}
	return ""
}

// scaledBy returns the other operand of n when n is a Mul of it by the
// scalar c, or "".
func scaledBy(x *index, n *graph.Node, c float64) string {
	if !is(n, "Mul") || len(n.Inputs) != 2 {
		return ""
	}
	for i, in := range n.Inputs {
		if x.isScalar(in, c) {
			return n.Inputs[1-i]
		}
	}
	return ""
}

// cubeOf reports whether n computes in³: as Pow(in, 3) (it returns n), or
// as a Mul of in and a Mul(in, in) that only n reads (it returns that
// square). It returns nil otherwise.
func cubeOf(x *index, n *graph.Node, in string) *graph.Node {
	if is(n, "Pow") && len(n.Inputs) == 2 && n.Inputs[0] == in && x.isNumber(n.Inputs[1], 3) {
		return n
	}
	if !is(n, "Mul") {
		return nil
	}
	sq, ok := other(n, in)
	if !ok {
		return nil
	}
	square := x.intermediate(sq, n)
	if is(square, "Mul") && len(square.Inputs) == 2 && square.Inputs[0] == in && square.Inputs[1] == in {
		return square
	}
	return nil
}

// geluProduct matches the product of x, u (the 1 + … factor) and 0.5, in
// any order, starting from u, and returns its last Mul, having added the
// Muls to p; or nil.
func geluProduct(x *index, p *pattern, u, in string) *graph.Node {
	m1 := x.only(u)
	if !is(m1, "Mul") {
		return nil
	}
	f, ok := other(m1, u)
	if !ok || f == u {
		return nil
	}
	switch {
	case f == in: // (x·u)·0.5
		if m2 := x.only(m1.Outputs[0]); is(m2, "Mul") && scaledBy(x, m2, 0.5) == m1.Outputs[0] {
			p.add(m1, m2)
			return m2
		}
	case x.isScalar(f, 0.5): // (u·0.5)·x
		if m2 := x.only(m1.Outputs[0]); is(m2, "Mul") {
			if g, _ := other(m2, m1.Outputs[0]); g == in {
				p.add(m1, m2)
				return m2
			}
		}
	default: // u·(x·0.5)
		if h := x.intermediate(f, m1); is(h, "Mul") && scaledBy(x, h, 0.5) == in {
			p.add(h, m1)
			return m1
		}
	}
	return nil
}

// isNumber reports whether name is a one-element constant equal to want,
// of a floating-point or integer type.
func (x *index) isNumber(name string, want float64) bool {
	if v, ok := x.scalar(name); ok {
		return v == want
	}
	t, ok := x.constant(name)
	if !ok || t.Len() != 1 || t.Rank() > 1 {
		return false
	}
	v, err := opsem.Int64s(t)
	return err == nil && float64(v[0]) == want
}

package passes

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// RecognizeGelu replaces the two forms exporters write GELU in by one
// Gelu node:
//
//	erf:  x · 0.5 · (1 + Erf(x/√2))                      → Gelu(x)
//	tanh: x · 0.5 · (1 + Tanh(√(2/π)·(x + 0.044715·x³)))  → Gelu(x, approximate="tanh")
//
// with x/√2 written Div(x, 1.4142135) or Mul(x, 0.70710678), the factors
// of 0.044715·x³ (x³ as Pow(x, 3) or x·x·x) and of 0.5·x·(1 + …)
// multiplied in any order and grouping, and the operands of each Add in
// either order. The constants are float32 scalars, matched within
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
		in := add.Inputs[1-i]
		root := x.intermediate(term, add)
		if in == term || !is(root, "Mul") {
			continue
		}
		nodes, leaves := x.product(root)
		// x³ may be a Pow(x, 3) that only the product reads.
		var cubes []*graph.Node
		for j := 0; j < len(leaves); j++ {
			if pow := x.producer[leaves[j]]; is(pow, "Pow") && len(pow.Inputs) == 2 && pow.Inputs[0] == in &&
				x.isNumber(pow.Inputs[1], 3) && slices.Contains(nodes, x.only(leaves[j])) {
				leaves = slices.Replace(leaves, j, j+1, in, in, in)
				cubes = append(cubes, pow)
			}
		}
		if x.productOf(leaves, in, in, in, 0.044715) {
			p.add(nodes...)
			p.add(cubes...)
			p.add(add, scaled)
			return in
		}
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

// product returns the Muls of the product whose last Mul is root, and the
// values it multiplies: a Mul's operand is a leaf unless it is the output
// of a Mul that only it reads (and that is not pinned).
func (x *index) product(root *graph.Node) (nodes []*graph.Node, leaves []string) {
	nodes = []*graph.Node{root}
	for _, in := range root.Inputs {
		if m := x.intermediate(in, root); is(m, "Mul") && len(m.Inputs) == 2 && len(m.Outputs) == 1 {
			n, l := x.product(m)
			nodes, leaves = append(nodes, n...), append(leaves, l...)
			continue
		}
		leaves = append(leaves, in)
	}
	return nodes, leaves
}

// productOf reports whether leaves are, in some order, the factors: value
// names (strings) and float32 scalar constants (float64s, within
// isScalar's tolerance), each used once.
func (x *index) productOf(leaves []string, factors ...any) bool {
	if len(leaves) != len(factors) {
		return false
	}
	used := make([]bool, len(leaves))
	for _, f := range factors {
		found := false
		for i, l := range leaves {
			if used[i] {
				continue
			}
			if v, isValue := f.(string); (isValue && l == v) || (!isValue && x.isScalar(l, f.(float64))) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// geluProduct finds the product of x, u (the 1 + … factor) and 0.5, in
// any order and grouping, among the Muls above u, and returns its last
// Mul, having added the Muls to p; or nil.
func geluProduct(x *index, p *pattern, u, in string) *graph.Node {
	m := x.only(u)
	for range 2 { // the factors take two Muls
		if !is(m, "Mul") || len(m.Inputs) != 2 || len(m.Outputs) != 1 {
			return nil
		}
		if nodes, leaves := x.product(m); x.productOf(leaves, in, u, 0.5) {
			p.add(nodes...)
			return m
		}
		m = x.only(m.Outputs[0])
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

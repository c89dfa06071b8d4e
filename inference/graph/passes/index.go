package passes

import (
	"math"
	"strconv"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// index is what a rewrite needs to know about a graph to match a pattern:
// which node produces each value, which nodes read it, which values must
// stay (graph outputs, values read inside subgraphs), the constants, and
// every name in use. It is built once per pass; a pass that renames or
// removes values keeps it right for the values it goes on to look at.
type index struct {
	g        *graph.Graph
	producer map[string]*graph.Node
	// readers lists the nodes of g that read each value, a node once per
	// input that names it.
	readers map[string][]*graph.Node
	// pinned are the graph outputs and the values nodes' subgraphs read:
	// a rewrite must keep them, under their names.
	pinned      map[string]bool
	overridable map[string]bool
	// taken are the value and node names in use, subgraphs included:
	// built by the first fresh, as a deep graph's levels would otherwise
	// each walk all the levels below.
	taken map[string]bool
}

func newIndex(g *graph.Graph) *index {
	return newIndexOver(g, (*graph.Graph).FreeValues)
}

// newIndexOver is newIndex with the free values of g's subgraphs given by
// free (graph.FreeValuesOver).
func newIndexOver(g *graph.Graph, free func(*graph.Graph) map[string]bool) *index {
	x := &index{
		g:           g,
		producer:    map[string]*graph.Node{},
		readers:     map[string][]*graph.Node{},
		pinned:      map[string]bool{},
		overridable: map[string]bool{},
	}
	for _, v := range g.Overridable {
		x.overridable[v.Name] = true
	}
	for _, o := range g.Outputs {
		x.pinned[o.Name] = true
	}
	for _, n := range g.Nodes {
		for _, out := range n.Outputs {
			if out != "" {
				x.producer[out] = n
			}
		}
		for _, in := range n.Inputs {
			if in != "" {
				x.readers[in] = append(x.readers[in], n)
			}
		}
		for _, sub := range n.Subgraphs() {
			if sub == nil {
				continue
			}
			for name := range free(sub) {
				x.pinned[name] = true
			}
		}
	}
	return x
}

// takeNames records the names g and its subgraphs use. A new value of g
// must differ from the values of its subgraphs too: a subgraph may not
// define a name its enclosing graph defines (graph.Sort).
func (x *index) takeNames(g *graph.Graph) {
	for _, vs := range [][]graph.Value{g.Inputs, g.Overridable, g.Outputs} {
		for _, v := range vs {
			x.taken[v.Name] = true
		}
	}
	for name := range g.Initializers {
		x.taken[name] = true
	}
	for _, n := range g.Nodes {
		x.taken[n.Name] = true
		for _, names := range [][]string{n.Inputs, n.Outputs} {
			for _, name := range names {
				x.taken[name] = true
			}
		}
		for _, sub := range n.Subgraphs() {
			if sub != nil {
				x.takeNames(sub)
			}
		}
	}
}

// fresh returns a name starting with base that nothing in the graph uses,
// and takes it: base itself, or base_2, base_3, ….
func (x *index) fresh(base string) string {
	if x.taken == nil {
		// The names in use now, and those the index was built from,
		// which a pass may have renamed or removed since.
		x.taken = map[string]bool{}
		for _, m := range []map[string]bool{x.pinned, x.overridable} {
			for name := range m {
				x.taken[name] = true
			}
		}
		for name := range x.producer {
			x.taken[name] = true
		}
		for name := range x.readers {
			x.taken[name] = true
		}
		x.takeNames(x.g)
	}
	name := base
	for i := 2; x.taken[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	x.taken[name] = true
	return name
}

// only returns the one node that reads value, once, when value is not
// pinned; nil otherwise. A rewrite may fold value's producer into that
// node.
func (x *index) only(value string) *graph.Node {
	if value == "" || x.pinned[value] || len(x.readers[value]) != 1 {
		return nil
	}
	return x.readers[value][0]
}

// constant returns the initializer named name when it is a constant:
// an initializer that no feed may override.
func (x *index) constant(name string) (inference.Tensor, bool) {
	if name == "" || x.overridable[name] {
		return inference.Tensor{}, false
	}
	t, ok := x.g.Initializers[name]
	return t, ok
}

// floats returns the values of the float32 constant name.
func (x *index) floats(name string) ([]float32, bool) {
	t, ok := x.constant(name)
	if !ok || t.DType() != inference.Float32 {
		return nil, false
	}
	v, err := inference.Data[float32](t)
	return v, err == nil
}

// scalar returns the value of the float32 constant name when it holds one
// element and has rank 0 or 1. (A rank-1 operand makes the result of a
// rank-0 operand rank 1; the rewrites take the scalars of real exports,
// whose other operand is not a scalar, and their rank does not matter
// then.)
func (x *index) scalar(name string) (float64, bool) {
	t, ok := x.constant(name)
	if !ok || t.Rank() > 1 {
		return 0, false
	}
	v, ok := x.floats(name)
	if !ok || len(v) != 1 {
		return 0, false
	}
	return float64(v[0]), true
}

// isScalar reports whether name is a float32 constant holding want within
// a relative tolerance of 1e-5 (exporters write constants such as √2 in
// float32, and some round them to fewer digits).
func (x *index) isScalar(name string, want float64) bool {
	v, ok := x.scalar(name)
	return ok && near(v, want)
}

// near reports whether v is want within a relative 1e-5, the tolerance of
// the constants the rewrites match.
func near(v, want float64) bool { return math.Abs(v-want) <= 1e-5*math.Abs(want) }

// is reports whether n is the ai.onnx operator op.
func is(n *graph.Node, op string) bool {
	return n != nil && n.OpType == op && n.Domain == ""
}

// other returns the input of the binary node n that is not value, and
// whether value is one of n's two inputs (for a node reading value twice,
// other is value).
func other(n *graph.Node, value string) (string, bool) {
	if len(n.Inputs) != 2 {
		return "", false
	}
	switch value {
	case n.Inputs[0]:
		return n.Inputs[1], true
	case n.Inputs[1]:
		return n.Inputs[0], true
	}
	return "", false
}

// addInitializer stores t under a fresh name starting with base and
// returns the name.
func (x *index) addInitializer(base string, t inference.Tensor) string {
	name := x.fresh(base)
	x.g.Initializers[name] = t
	return name
}

// removeNodes drops the nodes in gone from g.
func removeNodes(g *graph.Graph, gone map[*graph.Node]bool) {
	if len(gone) == 0 {
		return
	}
	kept := g.Nodes[:0]
	for _, n := range g.Nodes {
		if !gone[n] {
			kept = append(kept, n)
		}
	}
	clear(g.Nodes[len(kept):])
	g.Nodes = kept
}

// dropUnusedInitializers deletes the initializers of g that no node reads,
// directly or inside a subgraph (whose free values free gives), and that
// are not graph outputs.
func dropUnusedInitializers(g *graph.Graph, free func(*graph.Graph) map[string]bool) {
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
		for _, sub := range n.Subgraphs() {
			if sub == nil {
				continue
			}
			for name := range free(sub) {
				used[name] = true
			}
		}
	}
	for _, o := range g.Outputs {
		used[o.Name] = true
	}
	for name := range g.Initializers {
		if !used[name] {
			delete(g.Initializers, name)
		}
	}
}

// become turns n, the last node of a matched pattern, into the node that
// replaces the pattern: operator op on inputs with attrs, named after
// first, the pattern's first node, as fresh makes it. n keeps its outputs,
// so their readers are untouched.
func (x *index) become(n *graph.Node, first *graph.Node, op string, inputs []string, attrs map[string]graph.Attr) {
	for _, in := range n.Inputs {
		x.readers[in] = removeReader(x.readers[in], n)
	}
	for _, in := range inputs {
		if in != "" {
			x.readers[in] = append(x.readers[in], n)
		}
	}
	base := first.Name
	if base == "" {
		base = n.Name
	}
	n.Name = x.fresh(base + "/" + op)
	n.OpType, n.Domain, n.Inputs, n.Attrs = op, "", inputs, attrs
}

// removeReader returns readers without the entries for n.
func removeReader(readers []*graph.Node, n *graph.Node) []*graph.Node {
	var kept []*graph.Node
	for _, r := range readers {
		if r != n {
			kept = append(kept, r)
		}
	}
	return kept
}

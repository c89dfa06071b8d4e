// Package graph is the model IR that backends execute: nodes in topological
// order, with their attributes decoded, the graph's inputs, outputs and
// initializers as tensors, the opset each domain was exported with, and the
// last use of every value (which lets an executor free or reuse buffers).
//
// Decoders (inference/onnx) build a Graph and Sort it, which checks it: a
// sorted Graph is acyclic and every node input has a producer.
//
// Who it is for: writers of a model format, whose loader builds a Graph,
// and of a backend, which compiles one (Compiler; the rewrites it may run
// are in graph/passes). Pipeline authors never need it.
package graph

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Graph is a model's computation.
type Graph struct {
	Name string
	// Opsets maps an operator domain ("" for ai.onnx) to the version the
	// model imports. Op semantics follow it (Softmax-1 vs Softmax-13, …).
	Opsets map[string]int64
	// Inputs are the values fed at run time, in order; initializers that
	// old exporters also list as graph inputs are not among them.
	Inputs []Value
	// Outputs are the values a run returns, in order.
	Outputs []Value
	// Initializers are the constant tensors: weights, biases, shapes.
	Initializers map[string]inference.Tensor
	// Nodes are in topological order: every input of a node is a graph
	// input, an initializer, an outer-scope value (subgraphs only), or an
	// output of an earlier node.
	Nodes []*Node
	// LastUse maps each value to the index of the last node that reads it;
	// values the graph outputs are absent (they live to the end).
	LastUse map[string]int
}

// Value describes a graph input or output. Shape holds inference.Dynamic for
// a dimension without a fixed size (a dim_param such as "batch_size", or
// none); Shape is nil when the model does not declare the rank.
type Value struct {
	Name  string
	DType inference.DType
	Shape []int
}

// Node is one operator application.
type Node struct {
	Name   string
	OpType string
	Domain string // "" for ai.onnx
	// Inputs names the values read, in the operator's order; "" marks an
	// optional input left out.
	Inputs  []string
	Outputs []string
	Attrs   map[string]Attr
}

// String names the node as errors do: `"conv1" (Conv)`.
func (n *Node) String() string { return fmt.Sprintf("%q (%s)", n.Name, n.OpType) }

// AttrType is the kind of value an attribute holds.
type AttrType int

// Attribute kinds, as in ONNX's AttributeProto.
const (
	AttrFloat AttrType = iota + 1
	AttrInt
	AttrString
	AttrTensor
	AttrGraph
	AttrFloats
	AttrInts
	AttrStrings
	AttrTensors
	AttrGraphs
)

// Attr is a node attribute; the field its Type names holds the value.
type Attr struct {
	Type    AttrType
	Float   float32
	Int     int64
	String  string
	Tensor  inference.Tensor
	Graph   *Graph
	Floats  []float32
	Ints    []int64
	Strings []string
	Tensors []inference.Tensor
	Graphs  []*Graph
}

// Int returns the integer attribute name, or def when the node lacks it.
func (n *Node) Int(name string, def int64) int64 {
	if a, ok := n.Attrs[name]; ok && a.Type == AttrInt {
		return a.Int
	}
	return def
}

// Float returns the float attribute name, or def.
func (n *Node) Float(name string, def float32) float32 {
	if a, ok := n.Attrs[name]; ok && a.Type == AttrFloat {
		return a.Float
	}
	return def
}

// Str returns the string attribute name, or def.
func (n *Node) Str(name, def string) string {
	if a, ok := n.Attrs[name]; ok && a.Type == AttrString {
		return a.String
	}
	return def
}

// Ints returns the integer-list attribute name, or def.
func (n *Node) Ints(name string, def []int64) []int64 {
	if a, ok := n.Attrs[name]; ok && (a.Type == AttrInts || a.Type == AttrInt) {
		if a.Type == AttrInt {
			return []int64{a.Int}
		}
		return a.Ints
	}
	return def
}

// Floats returns the float-list attribute name, or def.
func (n *Node) Floats(name string, def []float32) []float32 {
	if a, ok := n.Attrs[name]; ok && a.Type == AttrFloats {
		return a.Floats
	}
	return def
}

// Has reports whether the node carries the attribute name.
func (n *Node) Has(name string) bool {
	_, ok := n.Attrs[name]
	return ok
}

// Input returns the name of input i, or "" when the node has fewer inputs
// or leaves input i out.
func (n *Node) Input(i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

// Opset returns the version of ai.onnx the graph imports (1 when unset).
func (g *Graph) Opset() int64 {
	if v, ok := g.Opsets[""]; ok {
		return v
	}
	if v, ok := g.Opsets["ai.onnx"]; ok {
		return v
	}
	return 1
}

// Sort orders g.Nodes topologically and fills LastUse. outer lists the
// values a subgraph may read from its enclosing graphs. It fails with
// inference.ErrBadModel on a cycle, a node input nothing produces, or a
// value produced twice, naming the node and the value.
func (g *Graph) Sort(outer map[string]bool) error {
	available := map[string]bool{}
	for name := range outer {
		available[name] = true
	}
	for _, in := range g.Inputs {
		available[in.Name] = true
	}
	for name := range g.Initializers {
		available[name] = true
	}
	producer := map[string]*Node{}
	for _, n := range g.Nodes {
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if p, dup := producer[out]; dup {
				return fmt.Errorf("graph %q: value %q is produced by node %v and by node %v: %w", g.Name, out, p, n, inference.ErrBadModel)
			}
			producer[out] = n
		}
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !available[in] && producer[in] == nil {
				return fmt.Errorf("graph %q: node %v reads %q, which no node, input or initializer produces: %w", g.Name, n, in, inference.ErrBadModel)
			}
		}
	}
	// Kahn's algorithm, stable: among ready nodes the earliest in file order
	// runs first, so already sorted graphs keep their order.
	waiting := make(map[*Node]int, len(g.Nodes))
	users := map[string][]*Node{}
	for _, n := range g.Nodes {
		deps := 0
		for _, in := range uniqueInputs(n) {
			if !available[in] {
				deps++
				users[in] = append(users[in], n)
			}
		}
		waiting[n] = deps
	}
	index := make(map[*Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		index[n] = i
	}
	var ready, order []*Node
	for _, n := range g.Nodes {
		if waiting[n] == 0 {
			ready = append(ready, n)
		}
	}
	for len(ready) > 0 {
		slices.SortFunc(ready, func(a, b *Node) int { return index[a] - index[b] })
		n := ready[0]
		ready = ready[1:]
		order = append(order, n)
		for _, out := range n.Outputs {
			for _, u := range users[out] {
				if waiting[u]--; waiting[u] == 0 {
					ready = append(ready, u)
				}
			}
		}
	}
	if len(order) != len(g.Nodes) {
		for _, n := range g.Nodes {
			if waiting[n] > 0 {
				return fmt.Errorf("graph %q: node %v is on a cycle (or reads a value produced on one): %w", g.Name, n, inference.ErrBadModel)
			}
		}
	}
	g.Nodes = order

	outputs := map[string]bool{}
	for _, o := range g.Outputs {
		outputs[o.Name] = true
	}
	g.LastUse = map[string]int{}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !outputs[in] {
				g.LastUse[in] = i
			}
		}
		for _, sub := range n.Subgraphs() {
			for name := range sub.FreeValues() {
				if !outputs[name] {
					g.LastUse[name] = i
				}
			}
		}
	}
	return nil
}

func uniqueInputs(n *Node) []string {
	var out []string
	for _, in := range n.Inputs {
		if in != "" && !slices.Contains(out, in) {
			out = append(out, in)
		}
	}
	for _, sub := range n.Subgraphs() {
		for name := range sub.FreeValues() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// Subgraphs returns the graphs in the node's attributes (If, Loop, Scan).
func (n *Node) Subgraphs() []*Graph {
	var gs []*Graph
	for _, a := range n.Attrs {
		switch a.Type {
		case AttrGraph:
			gs = append(gs, a.Graph)
		case AttrGraphs:
			gs = append(gs, a.Graphs...)
		}
	}
	return gs
}

// FreeValues returns the values g reads from enclosing graphs: node inputs
// that are neither produced inside g (by its nodes, nested subgraphs
// included) nor its inputs or initializers.
func (g *Graph) FreeValues() map[string]bool {
	local := map[string]bool{}
	for _, in := range g.Inputs {
		local[in.Name] = true
	}
	for name := range g.Initializers {
		local[name] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			local[o] = true
		}
	}
	free := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !local[in] {
				free[in] = true
			}
		}
		for _, sub := range n.Subgraphs() {
			for name := range sub.FreeValues() {
				if !local[name] {
					free[name] = true
				}
			}
		}
	}
	for _, o := range g.Outputs {
		if !local[o.Name] {
			free[o.Name] = true
		}
	}
	return free
}

// Package graph is the model IR that backends execute: nodes in topological
// order, with their attributes decoded, the graph's inputs, outputs and
// initializers as tensors, the opset each domain was exported with, and the
// last use of every value (which lets an executor free or reuse buffers).
//
// Decoders (inference/onnx) build a Graph and Sort it, which checks that
// it can run: a sorted Graph and its subgraphs are acyclic, define each
// value once, and have a producer for every value they read (see Sort).
//
// Who it is for: writers of a model format, whose loader builds a Graph,
// and of a backend, which compiles one (Compiler; the rewrites it may run
// are in graph/passes). Pipeline authors never need it.
package graph

import (
	"container/heap"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Graph is a model's computation.
type Graph struct {
	Name string
	// Opsets maps an operator domain ("" for ai.onnx) to the version the
	// model imports. Op semantics follow it (Softmax-1 vs Softmax-13, …).
	Opsets map[string]int64
	// Inputs are the values fed at run time, in order. A model's graph
	// leaves out the inputs that have an initializer of the same name
	// (see Overridable); a subgraph lists all its inputs, which the node
	// that runs it binds by position.
	Inputs []Value
	// Overridable are the inputs of a model's graph that need not be fed:
	// each has an initializer of the same name, its default (ONNX IR ≥ 4).
	// A tensor fed under such a name replaces the initializer for that
	// run, so graph passes must not take those initializers for constants.
	Overridable []Value
	// Outputs are the values a run returns, in order.
	Outputs []Value
	// Initializers are the constant tensors: weights, biases, shapes.
	Initializers map[string]inference.Tensor
	// Nodes are in topological order: every input of a node is a graph
	// input, an initializer, an outer-scope value (subgraphs only), or an
	// output of an earlier node.
	Nodes []*Node
	// LastUse maps each value of the graph (an input, an initializer or a
	// node output) that nodes read, directly or inside their subgraphs, to
	// the index of the last of them; values the graph outputs are absent
	// (they live to the end).
	LastUse map[string]int
}

// Value describes a graph input or output. Shape holds inference.Dynamic for
// a dimension without a fixed size (a dim_param such as "batch_size", or
// none); Shape is nil when the model does not declare the rank.
type Value struct {
	Name  string
	DType inference.DType
	Shape []int
	// Labels are, for an output the model declares as a sequence of maps
	// from class label to score (ai.onnx.ml's ZipMap, scikit-learn
	// exports' output_probability), the labels in the order of the last
	// axis of the tensor that holds the scores instead (onnx.Decode
	// explains); nil for any other value.
	Labels []string
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

// OpsetOf returns the version of n's operator set that g imports: Opset
// for an operator of ai.onnx, the version of ai.onnx.ml for one of that
// domain, 0 for a domain g does not import.
func (g *Graph) OpsetOf(n *Node) int64 {
	if n.Domain == "" || n.Domain == "ai.onnx" {
		return g.Opset()
	}
	return g.Opsets[n.Domain]
}

// MaxOpset is the newest version of the ai.onnx operator set the runtime
// implements, the newest its conformance suite (testing/conformance)
// covers. Sort refuses a graph that imports a newer one.
const MaxOpset = 26

// Sort orders the nodes of g, and of every graph nested in its nodes'
// attributes, topologically, and fills their LastUse. Among nodes whose
// inputs are ready the earliest in file order comes first, so a sorted
// graph keeps its order. outer lists the values g may read from enclosing
// graphs (nil for a model's graph). Sort's work is O((V + E) log V) for V
// nodes and E node inputs and graph outputs, nested graphs included.
//
// Sort also checks that the graph can run, and fails with
// inference.ErrBadModel, naming the graph and the node or value, on:
//   - a cycle, or a node input or graph output that nothing produces;
//   - a value produced twice, or a node output named like a graph input, an
//     initializer or a value of an enclosing graph (graphs are in SSA form,
//     as ONNX's checker requires; a subgraph may reuse the names of its own
//     node's outputs, which the checker allows too);
//   - two graph inputs of one name (Inputs and Overridable together);
//   - a declared input or output dimension that is negative but not
//     inference.Dynamic, or fixed dimensions whose size in bytes overflows
//     int;
//   - in g.Opsets (which subgraphs share), a version below 1, an ai.onnx
//     version above MaxOpset, or another domain's above math.MaxInt32.
func (g *Graph) Sort(outer map[string]bool) error {
	if err := checkOpsets(g); err != nil {
		return err
	}
	s := sorter{scope: scope{levels: make(map[string]int, len(outer))}}
	for name := range outer {
		s.levels[name] = outerLevel
	}
	return s.graph(g, 0)
}

// EnsureSorted sorts g if nothing has (a graph built by hand rather than
// decoded): a backend's Compile calls it, since Sort both checks the graph
// and records each value's last reader (LastUse), by which an executor
// frees buffers; without it, a run could hand a value's buffer to a later
// node while the value still lives.
func (g *Graph) EnsureSorted() error {
	if g.LastUse != nil {
		return nil
	}
	return g.Sort(nil)
}

// checkOpsets checks the versions g imports.
func checkOpsets(g *Graph) error {
	for _, domain := range slices.Sorted(maps.Keys(g.Opsets)) {
		v, name := g.Opsets[domain], domain
		if name == "" {
			name = "ai.onnx"
		}
		switch {
		case v < 1:
			return fmt.Errorf("graph %q: imports %s version %d, want 1 or more: %w", g.Name, name, v, inference.ErrBadModel)
		case name == "ai.onnx" && v > MaxOpset:
			return fmt.Errorf("graph %q: imports ai.onnx version %d; the newest this runtime implements is %d: %w", g.Name, v, MaxOpset, inference.ErrBadModel)
		case v > math.MaxInt32:
			return fmt.Errorf("graph %q: imports %s version %d, out of range: %w", g.Name, name, v, inference.ErrBadModel)
		}
	}
	return nil
}

// checkShape checks a declared shape: each dimension is inference.Dynamic
// or at least 0, and the product of the fixed ones times the element size
// fits in an int.
func checkShape(v Value) error {
	bytes := max(v.DType.Size(), 1)
	for i, d := range v.Shape {
		switch {
		case d == inference.Dynamic || d == 0:
		case d < 0:
			return fmt.Errorf("dimension %d is %d", i, d)
		case bytes > math.MaxInt/d:
			return fmt.Errorf("shape %v: the size in bytes of its fixed dimensions overflows", v.Shape)
		default:
			bytes *= d
		}
	}
	return nil
}

// Levels in a scope: the graph Sort was called on is level 0, the graphs
// in its nodes' attributes level 1, and so on.
const (
	outerLevel = -1 // a value of an enclosing graph Sort was told of
	hidden     = -2 // a value the graph being walked may not see
)

// scope maps the values visible in the graph being walked to the level of
// the graph that defines them. Entering a graph adds its values; leaving
// it restores what they shadowed, so one map serves any nesting depth.
type scope struct {
	levels map[string]int
	undo   []binding
}

// binding is a scope entry as it was before a define.
type binding struct {
	name  string
	level int
	had   bool
}

func (s *scope) define(name string, level int) {
	prev, had := s.levels[name]
	s.undo = append(s.undo, binding{name, prev, had})
	s.levels[name] = level
}

// lookup returns the level that defines name.
func (s *scope) lookup(name string) (int, bool) {
	level, ok := s.levels[name]
	return level, ok && level != hidden
}

// restore undoes the defines made since len(s.undo) was mark.
func (s *scope) restore(mark int) {
	for i := len(s.undo) - 1; i >= mark; i-- {
		if b := s.undo[i]; b.had {
			s.levels[b.name] = b.level
		} else {
			delete(s.levels, b.name)
		}
	}
	s.undo = s.undo[:mark]
}

// sorter sorts a graph and the graphs nested in it in one walk. A value
// read inside a subgraph counts as read by the node of the level that
// defines the value: by the node there whose subgraphs are being walked.
// So each read is recorded once, at the one level where it orders nodes
// and ends a lifetime, and nesting costs nothing more.
type sorter struct {
	scope
	walking []*walk // walking[l]: the graph being walked at level l
}

// walk is the state of one graph's walk.
type walk struct {
	node int // the node whose inputs and subgraphs are being walked
	// reads[start[i]:start[i+1]] lists the values of this graph that node
	// i reads, directly or inside its subgraphs, each once. (All reads of
	// node i are recorded while it is the node being walked.)
	reads []string
	start []int
	seen  map[string]int // value → 1 + the last node whose reads hold it
}

// readsOf returns the values node i reads.
func (w *walk) readsOf(i int) []string { return w.reads[w.start[i]:w.start[i+1]] }

// read records a read of the value name, defined at level.
func (s *sorter) read(name string, level int) {
	if level < 0 {
		return
	}
	w := s.walking[level]
	if w.seen[name] != w.node+1 {
		w.seen[name] = w.node + 1
		w.reads = append(w.reads, name)
	}
}

func (s *sorter) graph(g *Graph, level int) error {
	defer s.restore(len(s.undo))
	for _, in := range slices.Concat(g.Inputs, g.Overridable) {
		if err := checkShape(in); err != nil {
			return fmt.Errorf("graph %q: input %q: %v: %w", g.Name, in.Name, err, inference.ErrBadModel)
		}
		if def, ok := s.lookup(in.Name); ok && def == level {
			return fmt.Errorf("graph %q: input %q is declared twice: %w", g.Name, in.Name, inference.ErrBadModel)
		}
		s.define(in.Name, level)
	}
	for name := range g.Initializers {
		if def, ok := s.lookup(name); !ok || def != level {
			s.define(name, level)
		}
	}
	for _, out := range g.Outputs {
		if err := checkShape(out); err != nil {
			return fmt.Errorf("graph %q: output %q: %v: %w", g.Name, out.Name, err, inference.ErrBadModel)
		}
	}
	producer := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			if p, dup := producer[out]; dup {
				return fmt.Errorf("graph %q: value %q is produced by node %v and by node %v: %w", g.Name, out, g.Nodes[p], n, inference.ErrBadModel)
			}
			if def, ok := s.lookup(out); ok {
				what := "a graph input"
				if _, isInit := g.Initializers[out]; isInit {
					what = "an initializer"
				}
				if def != level {
					what = "a value of an enclosing graph"
				}
				return fmt.Errorf("graph %q: node %v outputs %q, which is %s: %w", g.Name, n, out, what, inference.ErrBadModel)
			}
			producer[out] = i
			s.define(out, level)
		}
	}

	w := &walk{start: make([]int, len(g.Nodes)+1), seen: map[string]int{}}
	s.walking = append(s.walking[:level], w)
	for i, n := range g.Nodes {
		w.node, w.start[i] = i, len(w.reads)
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			def, ok := s.lookup(in)
			if !ok {
				return fmt.Errorf("graph %q: node %v reads %q, which no node, input or initializer produces: %w", g.Name, n, in, inference.ErrBadModel)
			}
			s.read(in, def)
		}
		if err := s.subgraphs(g, n, level); err != nil {
			return err
		}
		w.start[i+1] = len(w.reads)
	}
	for _, out := range g.Outputs {
		def, ok := s.lookup(out.Name)
		if !ok {
			return fmt.Errorf("graph %q: output %q is produced by no node, input or initializer: %w", g.Name, out.Name, inference.ErrBadModel)
		}
		if def != level {
			s.read(out.Name, def)
		}
	}

	// Kahn's algorithm, taking the earliest ready node in file order.
	waiting := make([]int, len(g.Nodes))
	users := map[string][]int{}
	for i := range g.Nodes {
		for _, name := range w.readsOf(i) {
			if _, ok := producer[name]; ok {
				waiting[i]++
				users[name] = append(users[name], i)
			}
		}
	}
	var ready readyNodes
	for i, n := range waiting {
		if n == 0 {
			ready = append(ready, i) // ascending: already a heap
		}
	}
	order := make([]int, 0, len(g.Nodes))
	for len(ready) > 0 {
		i := heap.Pop(&ready).(int)
		order = append(order, i)
		for _, out := range g.Nodes[i].Outputs {
			for _, u := range users[out] {
				if waiting[u]--; waiting[u] == 0 {
					heap.Push(&ready, u)
				}
			}
		}
	}
	if len(order) != len(g.Nodes) {
		for i, n := range g.Nodes {
			if waiting[i] > 0 {
				return fmt.Errorf("graph %q: node %v is on a cycle (or reads a value produced on one): %w", g.Name, n, inference.ErrBadModel)
			}
		}
	}

	outputs := make(map[string]bool, len(g.Outputs))
	for _, o := range g.Outputs {
		outputs[o.Name] = true
	}
	sorted := make([]*Node, len(order))
	g.LastUse = map[string]int{}
	for k, i := range order {
		sorted[k] = g.Nodes[i]
		for _, name := range w.readsOf(i) {
			if !outputs[name] {
				g.LastUse[name] = k
			}
		}
	}
	g.Nodes = sorted
	return nil
}

// subgraphs walks the graphs in n's attributes, in the order of the
// attribute names. They may not see n's own outputs. An error in one names
// the graph it is in; at level 0 it also names n, so that a deep error's
// message does not grow with the depth.
func (s *sorter) subgraphs(g *Graph, n *Node, level int) error {
	var attrs []string
	for name, a := range n.Attrs {
		if a.Type == AttrGraph || a.Type == AttrGraphs {
			attrs = append(attrs, name)
		}
	}
	if attrs == nil {
		return nil
	}
	slices.Sort(attrs)
	for _, out := range n.Outputs {
		if out != "" {
			s.levels[out] = hidden
		}
	}
	for _, name := range attrs {
		a := n.Attrs[name]
		subs := a.Graphs
		if a.Type == AttrGraph {
			subs = []*Graph{a.Graph}
		}
		for _, sub := range subs {
			if sub == nil {
				return fmt.Errorf("graph %q: node %v: attribute %q holds no graph: %w", g.Name, n, name, inference.ErrBadModel)
			}
			if err := s.graph(sub, level+1); err != nil {
				if level == 0 {
					return fmt.Errorf("graph %q: node %v: attribute %q: %w", g.Name, n, name, err)
				}
				return err
			}
		}
	}
	for _, out := range n.Outputs {
		if out != "" {
			s.levels[out] = level
		}
	}
	return nil
}

// readyNodes is a min-heap of node indices.
type readyNodes []int

func (h readyNodes) Len() int           { return len(h) }
func (h readyNodes) Less(i, j int) bool { return h[i] < h[j] }
func (h readyNodes) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *readyNodes) Push(x any)        { *h = append(*h, x.(int)) }
func (h *readyNodes) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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
// and outputs of g that are neither produced inside g (by its nodes,
// nested subgraphs included) nor its inputs or initializers. Its work is
// linear in the size of g and its subgraphs.
func (g *Graph) FreeValues() map[string]bool {
	free := map[string]bool{}
	s := scope{levels: map[string]int{}}
	s.free(g, free)
	return free
}

// FreeValuesOver is FreeValues with the free values of g's subgraphs
// given by sub rather than worked out again: a caller that walks a tree
// of graphs from the innermost out gets each level's in time linear in
// that level alone.
func (g *Graph) FreeValuesOver(sub func(*Graph) map[string]bool) map[string]bool {
	defined := map[string]bool{}
	for _, in := range slices.Concat(g.Inputs, g.Overridable) {
		defined[in.Name] = true
	}
	for name := range g.Initializers {
		defined[name] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			defined[o] = true
		}
	}
	free := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !defined[in] {
				free[in] = true
			}
		}
		for _, s := range n.Subgraphs() {
			if s == nil {
				continue
			}
			for name := range sub(s) {
				if !defined[name] {
					free[name] = true
				}
			}
		}
	}
	for _, o := range g.Outputs {
		if !defined[o.Name] {
			free[o.Name] = true
		}
	}
	return free
}

func (s *scope) free(g *Graph, free map[string]bool) {
	defer s.restore(len(s.undo))
	for _, in := range slices.Concat(g.Inputs, g.Overridable) {
		s.define(in.Name, 0)
	}
	for name := range g.Initializers {
		s.define(name, 0)
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			s.define(o, 0)
		}
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if _, ok := s.lookup(in); in != "" && !ok {
				free[in] = true
			}
		}
		for _, sub := range n.Subgraphs() {
			if sub != nil {
				s.free(sub, free)
			}
		}
	}
	for _, o := range g.Outputs {
		if _, ok := s.lookup(o.Name); !ok {
			free[o.Name] = true
		}
	}
}

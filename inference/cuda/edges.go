package cuda

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// A classical model's strings (categories, class labels) are Go strings,
// which device memory cannot hold; they are at its edges: encoders read
// the string columns first (LabelEncoder, OneHotEncoder, CategoryMapper),
// and a classifier's labels come last (a Gather of the labels once
// passes.IndexClassLabels has made the classifier one of indices). Such a
// model is split in three: the string operations before (the prefix) and
// after (the suffix) run on the CPU backend, the rest on the device
// (edgeModel). A model whose strings are elsewhere runs whole on the CPU
// backend, as does one whose prefix fails on a probe of its inputs.

// edgeModel runs a model whose strings are at its edges: prefix on the
// CPU backend, then middle on the device, then suffix on the CPU backend.
type edgeModel struct {
	g              *graph.Graph // the whole model's
	whole          *cpu.Model   // its inputs and outputs
	outputs        []string
	prefix, suffix *edgePart // nil when empty
	middle         edgePart
}

// edgePart is one part of an edgeModel: its model and the values it reads.
type edgePart struct {
	model  inference.Model
	inputs []string
	ops    []string // the operator types of its nodes, for HostNodes
}

// splitEdges splits g, which holds strings, into an edgeModel whose middle
// compile compiles, or says why it cannot.
func splitEdges(g *graph.Graph, compile func(*graph.Graph) (inference.Model, error)) (*edgeModel, string, error) {
	switch {
	case !g.Batched():
		return nil, "its inputs have no batch dimension", nil
	case len(g.Overridable) > 0:
		return nil, "initializers may be fed", nil
	}
	for _, n := range g.Nodes {
		if cpu.IsControlFlow(n.OpType) {
			return nil, fmt.Sprintf("node %v runs subgraphs or sequences", n), nil
		}
	}
	types := opsem.ValueTypes(g, nil)
	stringSide := func(n *graph.Node) bool {
		return slices.ContainsFunc(slices.Concat(n.Inputs, n.Outputs), func(v string) bool { return v != "" && types[v] == inference.String })
	}
	// The prefix: each string operation that reads only the inputs, the
	// initializers and the prefix's outputs.
	before := map[string]bool{}
	for _, v := range g.Inputs {
		before[v.Name] = true
	}
	for name := range g.Initializers {
		before[name] = true
	}
	var prefix, middle, suffix []*graph.Node
	for _, n := range g.Nodes {
		switch {
		case stringSide(n) && !slices.ContainsFunc(n.Inputs, func(v string) bool { return v != "" && !before[v] }):
			prefix = append(prefix, n)
			for _, o := range n.Outputs {
				before[o] = true
			}
		case stringSide(n):
			suffix = append(suffix, n)
		default:
			middle = append(middle, n)
		}
	}
	if len(middle) == 0 {
		return nil, "every node reads or writes strings", nil
	}
	// The suffix's outputs are the model's: no device node reads them.
	after := map[string]*graph.Node{}
	for _, n := range suffix {
		for _, o := range n.Outputs {
			after[o] = n
		}
	}
	for _, n := range middle {
		for _, in := range n.Inputs {
			if p := after[in]; p != nil {
				return nil, fmt.Sprintf("node %v reads %q, which node %v computes from strings", n, in, p), nil
			}
		}
	}

	// What each part reads from the parts before it, and computes for the
	// parts after it (or the model).
	wanted := map[string]bool{}
	for _, o := range g.Outputs {
		wanted[o.Name] = true
	}
	reads := func(nodes []*graph.Node) []string {
		made := map[string]bool{}
		var in []string
		for _, n := range nodes {
			for _, v := range n.Inputs {
				if v != "" && !made[v] && g.Initializers[v].DType() == 0 && !slices.Contains(in, v) {
					in = append(in, v)
				}
			}
			for _, o := range n.Outputs {
				made[o] = true
			}
		}
		return in
	}
	suffixIn := reads(suffix)
	middleIn := reads(middle)
	for _, v := range suffixIn {
		wanted[v] = true
	}
	middleWants := maps.Clone(wanted)
	for _, v := range middleIn {
		wanted[v] = true
	}

	declared := map[string]graph.Value{}
	for _, v := range g.Inputs {
		declared[v.Name] = v
	}
	m := &edgeModel{g: g, whole: cpu.NewModel(g)}
	for _, o := range g.Outputs {
		m.outputs = append(m.outputs, o.Name)
	}
	var closers []inference.Model
	fail := func(err error, why string) (*edgeModel, string, error) {
		for _, c := range closers {
			c.Close()
		}
		return nil, why, err
	}
	if len(prefix) > 0 {
		prefixIn := reads(prefix)
		sub, err := subgraph(g, "(strings before)", prefix, prefixIn, wanted, declared)
		if err != nil {
			return fail(err, "")
		}
		m.prefix = &edgePart{model: cpu.NewModel(sub), inputs: prefixIn, ops: opTypes(prefix)}
		closers = append(closers, m.prefix.model)
		// The prefix's outputs that the device reads are declared as the
		// probe of the prefix shows them: their types, their ranks, every
		// dimension dynamic.
		out, err := probe(m.prefix.model, sub)
		if err != nil {
			return fail(nil, fmt.Sprintf("the string operations before the device fail on a probe: %v", err))
		}
		for name, t := range out {
			declared[name] = graph.Value{Name: name, DType: t.DType(), Shape: slices.Repeat([]int{inference.Dynamic}, t.Rank())}
		}
	}
	sub, err := subgraph(g, "(device)", middle, middleIn, middleWants, declared)
	if err != nil {
		return fail(err, "")
	}
	model, err := compile(sub)
	if err != nil {
		return fail(err, "")
	}
	m.middle = edgePart{model: model, inputs: middleIn}
	closers = append(closers, model)
	if len(suffix) > 0 {
		for _, v := range suffixIn {
			if _, ok := declared[v]; !ok {
				declared[v] = graph.Value{Name: v, DType: types[v]}
			}
		}
		sub, err := subgraph(g, "(strings after)", suffix, suffixIn, map[string]bool{}, declared)
		if err != nil {
			return fail(err, "")
		}
		m.suffix = &edgePart{model: cpu.NewModel(sub), inputs: suffixIn, ops: opTypes(suffix)}
	}
	return m, "", nil
}

// subgraph is the graph of g's nodes that reads inputs (declared as
// declared says) and outputs what they compute of wanted and of g's
// outputs.
func subgraph(g *graph.Graph, suffix string, nodes []*graph.Node, inputs []string, wanted map[string]bool, declared map[string]graph.Value) (*graph.Graph, error) {
	sub := &graph.Graph{Name: g.Name + suffix, Opsets: g.Opsets, Initializers: map[string]inference.Tensor{}, Nodes: nodes}
	for _, v := range inputs {
		sub.Inputs = append(sub.Inputs, declared[v])
	}
	outs := map[string]bool{}
	for _, n := range nodes {
		for _, in := range n.Inputs {
			if t, ok := g.Initializers[in]; ok {
				sub.Initializers[in] = t
			}
		}
		for _, o := range n.Outputs {
			if o != "" && !outs[o] && (wanted[o] || slices.ContainsFunc(g.Outputs, func(v graph.Value) bool { return v.Name == o })) {
				outs[o] = true
				sub.Outputs = append(sub.Outputs, graph.Value{Name: o})
			}
		}
	}
	if err := sub.Sort(nil); err != nil {
		return nil, fmt.Errorf("cuda: split %q at its strings: %w", g.Name, err)
	}
	return sub, nil
}

// probe runs model, g's prefix, on one row of zeros and empty strings
// (dynamic dimensions 1).
func probe(model inference.Model, g *graph.Graph) (map[string]inference.Tensor, error) {
	feeds := map[string]inference.Tensor{}
	for _, in := range g.Inputs {
		shape := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			shape[i] = max(d, 1)
		}
		t, err := inference.Zeros(in.DType, shape)
		if err != nil {
			return nil, err
		}
		feeds[in.Name] = t
	}
	return model.Run(context.Background(), feeds)
}

func opTypes(nodes []*graph.Node) []string {
	ops := make([]string, len(nodes))
	for i, n := range nodes {
		ops[i] = n.OpType
	}
	return ops
}

// Inputs describes the model's inputs.
func (m *edgeModel) Inputs() []inference.TensorInfo { return m.whole.Inputs() }

// Outputs describes the model's outputs.
func (m *edgeModel) Outputs() []inference.TensorInfo { return m.whole.Outputs() }

// ByteSize is the device memory of the middle's weights.
func (m *edgeModel) ByteSize() int64 { return m.middle.model.ByteSize() }

// MaxBatch is the middle's, where it has one.
func (m *edgeModel) MaxBatch() int {
	if b, ok := m.middle.model.(inference.BatchLimiter); ok {
		return b.MaxBatch()
	}
	return 0
}

// Fallback is "": the model runs on the device, its edges on the host.
func (m *edgeModel) Fallback() string { return "" }

// HostNodes returns the operator types of the nodes run on the host: the
// edges' and the middle's own (sorted, with repeats).
func (m *edgeModel) HostNodes() []string {
	var ops []string
	for _, p := range []*edgePart{m.prefix, m.suffix} {
		if p != nil {
			ops = append(ops, p.ops...)
		}
	}
	if h, ok := m.middle.model.(interface{ HostNodes() []string }); ok {
		ops = append(ops, h.HostNodes()...)
	}
	slices.Sort(ops)
	return ops
}

// Run runs the prefix, the middle and the suffix in turn, each on the
// values it reads.
func (m *edgeModel) Run(ctx context.Context, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	if err := checkFeeds(m.g, feeds); err != nil {
		return nil, err
	}
	values := maps.Clone(feeds)
	for _, p := range []*edgePart{m.prefix, &m.middle, m.suffix} {
		if p == nil {
			continue
		}
		in := make(map[string]inference.Tensor, len(p.inputs))
		for _, name := range p.inputs {
			in[name] = values[name]
		}
		out, err := p.model.Run(ctx, in)
		if err != nil {
			return nil, err
		}
		maps.Copy(values, out)
	}
	out := make(map[string]inference.Tensor, len(m.outputs))
	for _, name := range m.outputs {
		out[name] = values[name]
	}
	return out, nil
}

// Close closes the parts.
func (m *edgeModel) Close() error {
	var errs []error
	for _, p := range []*edgePart{m.prefix, &m.middle, m.suffix} {
		if p != nil {
			errs = append(errs, p.model.Close())
		}
	}
	return errors.Join(errs...)
}

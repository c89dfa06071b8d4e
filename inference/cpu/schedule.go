package cpu

import (
	"maps"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// A schedule is a graph's run laid out before it starts: every value the
// graph's nodes read or write has a slot, so that a run holds its values
// in a slice read and written by index rather than in a map by name; and
// each node has its step, what running it takes beyond its inputs. A
// Model makes its graph's schedule once (NewModel); a loop's body makes
// one per loop; any other subgraph, one per run.
type schedule struct {
	names []string // the value in each slot
	// presets are the slots a run starts with: the initializers, and the
	// values of the enclosing graphs a subgraph reads (outer), each
	// filled again at every run.
	presets []preset
	// feeds are the slots of the graph's inputs, then of its overridable
	// initializers, in order; a feed replaces what presets put there.
	feeds []int32
	steps []step
	// outputs are the slots of the graph's outputs, in order.
	outputs []int32
}

// A preset is a value a run starts with: an initializer (t set), or an
// enclosing graph's value (name set), read from the outer scope.
type preset struct {
	slot  int32
	t     inference.Tensor
	outer string
}

// A step is one node of a schedule: its call, its packed weights, and
// for each input and output its slot (−1 for a name left empty) and where
// it stands in the graph.
type step struct {
	call     nodeCall
	prepared any       // the node's packed weights (prepare), or nil
	control  bool      // the node runs subgraphs (If, Loop, Scan)
	seq      seqKernel // the node's kernel when it is a sequence operator
	in, out  []int32
	// lastRead: the node is the last to read input j, which dies after
	// it. computed: input j is a value a node of the graph computed, not a
	// feed, an initializer or an outer value (only those are counted
	// against the run's budget and held in its pool). readLater: a later
	// node or the graph's outputs read output j.
	lastRead, computed, readLater []bool
}

// noSlot is the slot of a name left empty, an optional input or output
// left out.
const noSlot = -1

// newSchedule lays out g's run. outer holds the values the enclosing
// graphs let a subgraph read (nil for a model's graph); a name g reads that
// no node computes and that is none of g's inputs, initializers or outer
// values gets a slot that stays empty, and the run fails there as it
// reads it.
func newSchedule(g *graph.Graph, outer map[string]inference.Tensor) *schedule {
	s := &schedule{steps: make([]step, len(g.Nodes))}
	slots := make(map[string]int32, len(g.Inputs)+len(g.Overridable)+len(g.Nodes))
	slotOf := func(name string) int32 {
		if name == "" {
			return noSlot
		}
		i, ok := slots[name]
		if !ok {
			i = int32(len(s.names))
			slots[name] = i
			s.names = append(s.names, name)
		}
		return i
	}
	fed := make(map[string]bool, len(g.Inputs)+len(g.Overridable)) // the names a feed may set
	for _, ins := range [2][]graph.Value{g.Inputs, g.Overridable} {
		for _, v := range ins {
			s.feeds = append(s.feeds, slotOf(v.Name))
			fed[v.Name] = true
		}
	}
	made := make(map[string]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				made[o] = true
			}
		}
	}
	filled := map[string]bool{}
	// source presets name's slot when the graph neither computes nor is fed
	// it: with an initializer, else with an outer value.
	source := func(name string) int32 {
		i := slotOf(name)
		if name == "" || made[name] || filled[name] {
			return i
		}
		filled[name] = true
		if t, ok := g.Initializers[name]; ok {
			s.presets = append(s.presets, preset{slot: i, t: t})
		} else if _, ok := outer[name]; ok && !fed[name] {
			s.presets = append(s.presets, preset{slot: i, outer: name})
		}
		return i
	}
	for i, n := range g.Nodes {
		st := &s.steps[i]
		st.call, st.control, st.seq = newNodeCall(kernelOf(n), n), control[n.OpType], seqKernels[n.OpType]
		st.in, st.out = make([]int32, len(n.Inputs)), make([]int32, len(n.Outputs))
		st.lastRead, st.computed, st.readLater = make([]bool, len(n.Inputs)), make([]bool, len(n.Inputs)), make([]bool, len(n.Outputs))
		for j, name := range n.Inputs {
			st.in[j] = source(name)
			last, ok := g.LastUse[name]
			st.lastRead[j], st.computed[j] = ok && last == i, made[name]
		}
		for j, name := range n.Outputs {
			st.out[j] = slotOf(name)
			st.readLater[j] = g.LastUse[name] > i || graphOutput(g, name)
		}
	}
	for _, o := range g.Outputs {
		s.outputs = append(s.outputs, source(o.Name))
	}
	return s
}

// attachPrepared gives each step its node's packed weights.
func (s *schedule) attachPrepared(g *graph.Graph, prepared map[*graph.Node]any) {
	for i, n := range g.Nodes {
		s.steps[i].prepared = prepared[n]
	}
}

// A valueKind says what a slot holds in a run.
type valueKind uint8

const (
	noValue valueKind = iota
	tensorValue
	sequenceValue
)

// values are a run's slots: a tensor or a sequence of tensors each, and
// which of the two (or neither: not computed yet, or dead).
type values struct {
	tensors []inference.Tensor
	seqs    [][]inference.Tensor
	kinds   []valueKind
}

// start readies v for a run of s: every slot empty, then the presets and
// the feeds (a feed the graph's inputs name but feeds lacks stays empty).
func (v *values) start(s *schedule, feeds, outer map[string]inference.Tensor) {
	n := len(s.names)
	if cap(v.tensors) < n {
		v.tensors, v.seqs, v.kinds = make([]inference.Tensor, n), make([][]inference.Tensor, n), make([]valueKind, n)
	}
	v.tensors, v.seqs, v.kinds = v.tensors[:n], v.seqs[:n], v.kinds[:n]
	clear(v.kinds)
	for _, f := range s.presets {
		if f.outer == "" {
			v.setTensor(f.slot, f.t)
		} else if t, ok := outer[f.outer]; ok {
			v.setTensor(f.slot, t)
		}
	}
	for _, slot := range s.feeds {
		if t, ok := feeds[s.names[slot]]; ok {
			v.setTensor(slot, t) // shadows an overridable initializer
		}
	}
}

// end drops every value, so that a kept frame holds none of the run's
// buffers.
func (v *values) end() {
	clear(v.tensors)
	clear(v.seqs)
	clear(v.kinds)
}

func (v *values) setTensor(slot int32, t inference.Tensor) {
	v.tensors[slot], v.seqs[slot], v.kinds[slot] = t, nil, tensorValue
}

func (v *values) setSeq(slot int32, seq []inference.Tensor) {
	v.tensors[slot], v.seqs[slot], v.kinds[slot] = inference.Tensor{}, seq, sequenceValue
}

func (v *values) drop(slot int32) {
	v.tensors[slot], v.seqs[slot], v.kinds[slot] = inference.Tensor{}, nil, noValue
}

// scope returns what a control-flow node's subgraphs see: outer's values,
// shadowed by g's initializers, shadowed by g's live tensors.
func (v *values) scope(s *schedule, g *graph.Graph, outer map[string]inference.Tensor) map[string]inference.Tensor {
	m := make(map[string]inference.Tensor, len(outer)+len(g.Initializers)+len(s.names))
	maps.Copy(m, outer)
	maps.Copy(m, g.Initializers)
	for slot, name := range s.names {
		if v.kinds[slot] == tensorValue {
			m[name] = v.tensors[slot]
		}
	}
	return m
}

package passes

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// EliminateDeadNodes removes the nodes a run does not need, in g and in
// the graphs nested in its nodes:
//   - an Identity, a Dropout that does not train (opsem.DropoutMode,
//     with its ratio and training_mode constants or left out) whose mask
//     nothing reads, and a Pad whose pads are all 0: its readers read its
//     input instead. When its output
//     is a graph output, or is read inside a subgraph, the node stays,
//     unless its input is the output of a node that only it reads: that
//     node then outputs the value under the pinned name;
//   - a node none of whose outputs a graph output depends on, through
//     later nodes or the subgraphs of the nodes that stay.
//
// Initializers that nothing reads any more are dropped.
func EliminateDeadNodes() Pass {
	return Pass{Name: "EliminateDeadNodes", Run: func(g *graph.Graph) (bool, error) {
		changed, _ := eliminateDead(g, g.Opset())
		return changed, nil
	}}
}

// eliminateDead rewrites g and its subgraphs, innermost first, and returns
// whether it changed any, and g's free values once rewritten: each level
// works out its own from those of the levels below, so that a graph
// nested n deep costs O(n), not O(n²).
func eliminateDead(g *graph.Graph, opset int64) (bool, map[string]bool) {
	changed := false
	subFree := map[*graph.Graph]map[string]bool{}
	for _, n := range g.Nodes {
		for _, sub := range n.Subgraphs() {
			if sub == nil {
				continue
			}
			c, free := eliminateDead(sub, opset)
			changed = changed || c
			subFree[sub] = free
		}
	}
	free := func(sub *graph.Graph) map[string]bool { return subFree[sub] }
	x := newIndexOver(g, free)
	gone := map[*graph.Node]bool{}
	for _, n := range g.Nodes {
		if in, out, ok := passThrough(x, n, opset); ok && bypass(x, n, in, out) {
			gone[n] = true
		}
	}
	removeNodes(g, gone)

	live := map[string]bool{}
	for _, o := range g.Outputs {
		live[o.Name] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		needed := false
		for _, out := range n.Outputs {
			needed = needed || (out != "" && live[out])
		}
		if !needed {
			gone[n] = true
			continue
		}
		for _, in := range n.Inputs {
			live[in] = true
		}
		for _, sub := range n.Subgraphs() {
			if sub == nil {
				continue
			}
			for name := range free(sub) {
				live[name] = true
			}
		}
	}
	removeNodes(g, gone)
	if len(gone) > 0 {
		dropUnusedInitializers(g, free)
	}
	return changed || len(gone) > 0, g.FreeValuesOver(free)
}

// passThrough reports whether n hands its input in on as out unchanged:
// an Identity, or a Dropout that does not train and whose mask nothing
// reads.
func passThrough(x *index, n *graph.Node, opset int64) (in, out string, ok bool) {
	if n.Domain != "" || len(n.Inputs) == 0 || n.Inputs[0] == "" || len(n.Outputs) == 0 || n.Outputs[0] == "" {
		return "", "", false
	}
	switch n.OpType {
	case "Identity":
		return n.Inputs[0], n.Outputs[0], len(n.Outputs) == 1
	case "Dropout":
		for _, mask := range n.Outputs[1:] {
			if mask != "" && (x.pinned[mask] || len(x.readers[mask]) > 0) {
				return "", "", false
			}
		}
		var ratio []float32
		var training []int64
		if name := n.Input(1); name != "" {
			r, ok := x.floats(name)
			if !ok {
				return "", "", false
			}
			ratio = r
		}
		if name := n.Input(2); name != "" {
			t, ok := x.constant(name)
			if !ok || t.DType() != inference.Bool {
				return "", "", false
			}
			b, _ := inference.Data[bool](t)
			for _, v := range b {
				mode := int64(0)
				if v {
					mode = 1
				}
				training = append(training, mode)
			}
		}
		if _, err := opsem.DropoutMode(opsem.Node{Node: n, Opset: opset}, ratio, training); err != nil {
			return "", "", false // the error surfaces when the node runs
		}
		return n.Inputs[0], n.Outputs[0], true
	case "Pad":
		return n.Inputs[0], n.Outputs[0], len(n.Outputs) == 1 && zeroPads(x, n, opset)
	}
	return "", "", false
}

// zeroPads reports whether Pad node n pads nothing: its pads (the
// constant input 1 from opset 11, the attribute pads before, paddings in
// Pad-1) are all 0, whatever its mode and axes. PyTorch writes one before
// an AveragePool with count_include_pad.
func zeroPads(x *index, n *graph.Node, opset int64) bool {
	var pads []int64
	switch {
	case opset >= 11:
		t, ok := x.constant(n.Input(1))
		if !ok || t.DType() != inference.Int64 {
			return false
		}
		pads, _ = inference.Data[int64](t)
	case n.Attrs["pads"].Type == graph.AttrInts:
		pads = n.Attrs["pads"].Ints
	default:
		pads = n.Attrs["paddings"].Ints
	}
	for _, p := range pads {
		if p != 0 {
			return false
		}
	}
	return len(pads) > 0
}

// bypass makes the readers of out read in, so that n, which passes in on
// as out, can go, and reports whether it did.
func bypass(x *index, n *graph.Node, in, out string) bool {
	if x.pinned[out] {
		// The name out must stay: give it to in's producer instead, when
		// in is a node output that nothing else needs under its own name.
		p := x.producer[in]
		if p == nil || x.pinned[in] || len(x.readers[in]) != 1 {
			return false
		}
		for i, o := range p.Outputs {
			if o == in {
				p.Outputs[i] = out
			}
		}
		x.producer[out] = p
		delete(x.producer, in)
		delete(x.readers, in)
		return true
	}
	for _, r := range x.readers[out] {
		for i, name := range r.Inputs {
			if name == out {
				r.Inputs[i] = in
			}
		}
	}
	x.readers[in] = append(removeReader(x.readers[in], n), x.readers[out]...)
	delete(x.readers, out)
	return true
}

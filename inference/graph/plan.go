package graph

import (
	"slices"
	"sort"
)

// Plan places the intermediate values of a graph at one batch size in one
// arena: each value gets an offset, and values whose lifetimes do not
// overlap share bytes. Graph inputs, initializers and outputs are not in
// the arena (they are fed, uploaded once, or handed back).
type Plan struct {
	Batch   int
	Size    int64            // bytes of the arena
	Offsets map[string]int64 // value → byte offset in the arena
	Bytes   map[string]int64 // value → its size in bytes
	// Aliases maps the output of a view (PlanMemoryViews) to the value
	// whose bytes it is, never itself an alias. An alias of an arena value
	// has that value's offset in Offsets too; an alias of a graph input,
	// an initializer or a graph output is not in the arena: the executor
	// places it where it places that value.
	Aliases map[string]string
	// Unplanned lists intermediates without a known shape; an executor
	// allocates those when they are computed.
	Unplanned []string
}

// Align is the alignment of every planned value, in bytes (what GPU
// kernels want for vectorised loads).
const Align = 256

// PlanMemory computes the arena plan of g's intermediate values at batch
// size b from their symbolic shapes. A value lives from the node that
// produces it to its LastUse; the plan assigns offsets greedily, largest
// first among values born at the same node, reusing the lowest free gap
// that fits (first fit).
func PlanMemory(g *Graph, shapes map[string]Shape, b int) Plan {
	return planMemory(g, shapes, b, false)
}

// PlanMemoryViews is PlanMemory where a view's output (IsView) takes its
// input's bytes instead of bytes of its own, so that an executor runs the
// view as nothing at all: the two values, and views of views, share one
// block that lives to the last use of any of them. A view whose output is
// a graph output, or whose output's size differs from its input's, keeps
// bytes of its own (the executor copies).
func PlanMemoryViews(g *Graph, shapes map[string]Shape, b int) Plan {
	return planMemory(g, shapes, b, true)
}

// viewOps are the operators whose output is their first input's bytes,
// in the same order, under another shape.
var viewOps = map[string]bool{"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Identity": true}

// IsView reports whether n's one output is its first input's bytes under
// another shape: Reshape, Flatten, Squeeze, Unsqueeze, Identity.
func IsView(n *Node) bool {
	return n.Domain == "" && viewOps[n.OpType] && len(n.Inputs) > 0 && n.Inputs[0] != "" && len(n.Outputs) == 1
}

func planMemory(g *Graph, shapes map[string]Shape, b int, views bool) Plan {
	p := Plan{Batch: b, Offsets: map[string]int64{}, Bytes: map[string]int64{}, Aliases: map[string]string{}}
	skip := map[string]bool{}
	for _, in := range g.Inputs {
		skip[in.Name] = true
	}
	for _, o := range g.Outputs {
		skip[o.Name] = true
	}
	for name := range g.Initializers {
		skip[name] = true
	}
	type block struct {
		off, size int64
		name      string
	}
	var live []block // sorted by offset
	// last is the node after which a block's bytes are free: the last use
	// of its value and of the views that alias it.
	last := map[string]int{}
	lastUse := func(name string, born int) int {
		if l, read := g.LastUse[name]; read {
			return l
		}
		return born // nothing reads it: free once its node ran
	}
	for i, n := range g.Nodes {
		if views && IsView(n) && p.alias(n, shapes, skip, b) {
			y := n.Outputs[0]
			x := p.Aliases[y]
			if _, inArena := p.Offsets[x]; inArena {
				p.Offsets[y] = p.Offsets[x]
				last[x] = max(last[x], lastUse(y, i))
			}
			p.Bytes[y] = shapes[y].Bytes(b)
			continue
		}
		var born []string
		for _, out := range n.Outputs {
			if out == "" || skip[out] {
				continue
			}
			if _, ok := shapes[out]; !ok {
				p.Unplanned = append(p.Unplanned, out)
				continue
			}
			born = append(born, out)
		}
		sort.SliceStable(born, func(x, y int) bool { return shapes[born[x]].Bytes(b) > shapes[born[y]].Bytes(b) })
		for _, name := range born {
			size := (shapes[name].Bytes(b) + Align - 1) / Align * Align
			off := int64(0)
			for _, blk := range live { // first gap that fits
				if blk.off-off >= size {
					break
				}
				off = max(off, blk.off+blk.size)
			}
			live = append(live, block{off, size, name})
			slices.SortFunc(live, func(x, y block) int { return int(x.off - y.off) })
			p.Offsets[name], p.Bytes[name] = off, shapes[name].Bytes(b)
			p.Size = max(p.Size, off+size)
			last[name] = lastUse(name, i)
		}
		// Values read for the last time here (with their views), and
		// outputs nothing reads, free their bytes for the next node's
		// outputs.
		live = slices.DeleteFunc(live, func(blk block) bool { return last[blk.name] <= i })
	}
	return p
}

// alias records view n's output as an alias of its input's block, and
// reports whether it did: not for a graph output (its bytes are handed
// back), a value without a shape, or sizes that differ.
func (p *Plan) alias(n *Node, shapes map[string]Shape, skip map[string]bool, b int) bool {
	x, y := n.Inputs[0], n.Outputs[0]
	if r, ok := p.Aliases[x]; ok {
		x = r
	}
	sx, okx := shapes[x]
	sy, oky := shapes[y]
	if skip[y] || !okx || !oky || sx.Bytes(b) != sy.Bytes(b) {
		return false
	}
	if _, inArena := p.Offsets[x]; !inArena && !skip[x] {
		return false // an intermediate not planned: it has no place yet
	}
	p.Aliases[y] = x
	return true
}

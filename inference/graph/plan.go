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
	p := Plan{Batch: b, Offsets: map[string]int64{}, Bytes: map[string]int64{}}
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
	for i, n := range g.Nodes {
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
		}
		// Values read for the last time here, and outputs nothing reads,
		// free their bytes for the next node's outputs.
		live = slices.DeleteFunc(live, func(blk block) bool {
			last, read := g.LastUse[blk.name]
			return (read && last <= i) || (!read && slices.Contains(n.Outputs, blk.name))
		})
	}
	return p
}

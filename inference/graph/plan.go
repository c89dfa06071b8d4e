package graph

import (
	"fmt"
	"slices"
	"sort"

	"github.com/beamml/beamml/inference"
)

// Dim is one dimension of a value as a function of the batch size b:
// Scale·b + Offset. Static dimensions have Scale 0.
type Dim struct{ Scale, Offset int }

// At returns the dimension's size at batch size b.
func (d Dim) At(b int) int { return d.Scale*b + d.Offset }

func (d Dim) String() string {
	if d.Scale == 0 {
		return fmt.Sprint(d.Offset)
	}
	s := fmt.Sprintf("%d·b", d.Scale)
	if d.Scale == 1 {
		s = "b"
	}
	if d.Offset != 0 {
		s += fmt.Sprintf("%+d", d.Offset)
	}
	return s
}

// Shape is a value's element type and symbolic shape.
type Shape struct {
	DType inference.DType
	Dims  []Dim
}

// At returns the concrete shape at batch size b.
func (s Shape) At(b int) []int {
	out := make([]int, len(s.Dims))
	for i, d := range s.Dims {
		out[i] = d.At(b)
	}
	return out
}

// Bytes returns the value's size in bytes at batch size b.
func (s Shape) Bytes(b int) int64 {
	n := int64(s.DType.Size())
	for _, d := range s.Dims {
		n *= int64(d.At(b))
	}
	return n
}

// SymbolicShapes derives each value's symbolic shape from its concrete
// shapes at two batch sizes b1 < b2 (shapes[i] at sizes[i]): a dimension
// that differs is taken to grow linearly with the batch. A value whose rank
// or type differs between the two, or that is missing from either, is left
// out: its shape depends on the data, and a plan cannot place it.
func SymbolicShapes(b1, b2 int, s1, s2 map[string]inference.Tensor) (map[string]Shape, error) {
	if b1 >= b2 {
		return nil, fmt.Errorf("graph: batch sizes %d and %d: want b1 < b2", b1, b2)
	}
	out := map[string]Shape{}
	for name, t1 := range s1 {
		t2, ok := s2[name]
		if !ok || t1.DType() != t2.DType() || t1.Rank() != t2.Rank() {
			continue
		}
		d1, d2 := t1.Shape(), t2.Shape()
		dims := make([]Dim, len(d1))
		linear := true
		for i := range d1 {
			diff := d2[i] - d1[i]
			if diff%(b2-b1) != 0 {
				linear = false
				break
			}
			scale := diff / (b2 - b1)
			dims[i] = Dim{Scale: scale, Offset: d1[i] - scale*b1}
		}
		if linear {
			out[name] = Shape{DType: t1.DType(), Dims: dims}
		}
	}
	return out, nil
}

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

// shapeOperands lists operators whose output shape depends on the values
// of some inputs, by the index of the first such input: Reshape's shape,
// Slice's starts and ends, Range's bounds, …
var shapeOperands = map[string]int{
	"Reshape": 1, "Expand": 1, "Tile": 1, "Slice": 1, "Range": 0, "ConstantOfShape": 0,
	"OneHot": 1, "TopK": 1, "Resize": 1, "Upsample": 1, "Pad": 1, "Split": 1,
	"Squeeze": 1, "Unsqueeze": 1, "CenterCropPad": 1, "ReduceSum": 1, "ReduceMean": 1,
	"ReduceMax": 1, "ReduceMin": 1, "ReduceProd": 1, "ReduceL1": 1, "ReduceL2": 1,
	"ReduceLogSum": 1, "ReduceLogSumExp": 1, "ReduceSumSquare": 1, "NonMaxSuppression": 0,
	"AffineGrid": 1, "Col2Im": 1,
}

// dataShaped lists operators whose output shape depends on their data.
var dataShaped = map[string]bool{
	"NonZero": true, "Unique": true, "NonMaxSuppression": true, "Compress": true,
	"If": true, "Loop": true, "SequenceAt": true, "ConcatFromSequence": true,
}

// DataDependentShapes marks true the values whose shapes depend on the values
// (not only the shapes) of the graph's inputs: outputs of data-shaped
// operators (NonZero, Unique, If, …), of operators whose shape operand
// (Reshape's shape, Slice's bounds, …) is computed from input data, and
// everything computed from those. Shape and Size read only shapes, so
// Reshape(x, Shape(y)) is not data-dependent.
func DataDependentShapes(g *Graph) map[string]bool {
	valueTainted := map[string]bool{}
	for _, in := range g.Inputs {
		valueTainted[in.Name] = true
	}
	shapeTainted := map[string]bool{}
	for _, n := range g.Nodes {
		anyValue, anyShape := false, false
		for _, in := range n.Inputs {
			anyValue = anyValue || valueTainted[in]
			anyShape = anyShape || shapeTainted[in]
		}
		if from, ok := shapeOperands[n.OpType]; ok {
			for _, in := range n.Inputs[min(from, len(n.Inputs)):] {
				anyShape = anyShape || valueTainted[in]
			}
		}
		anyShape = anyShape || dataShaped[n.OpType]
		for _, out := range n.Outputs {
			if n.OpType != "Shape" && n.OpType != "Size" {
				valueTainted[out] = anyValue
			}
			shapeTainted[out] = anyShape
		}
	}
	return shapeTainted
}

package graph

import (
	"context"
	"fmt"

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

// symbolicShapes derives each value's symbolic shape from its concrete
// shapes at two batch sizes b1 < b2 (shapes[i] at sizes[i]): a dimension
// that differs is taken to grow linearly with the batch. A value whose rank
// or type differs between the two, or that is missing from either, is left
// out: its shape depends on the data, and a plan cannot place it.
func symbolicShapes(b1, b2 int, s1, s2 map[string]inference.Tensor) (map[string]Shape, error) {
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

// Runner runs a graph on feeds with a backend's reference kernels and
// calls observe with every value a node computes (cpu.Model.RunObserved).
type Runner func(ctx context.Context, feeds map[string]inference.Tensor, observe func(name string, t inference.Tensor)) error

// Batched reports whether every input of g has a dynamic first dimension:
// then the graph runs at any batch size, and its values' shapes are
// functions of it.
func (g *Graph) Batched() bool {
	for _, in := range g.Inputs {
		if len(in.Shape) == 0 || in.Shape[0] != inference.Dynamic {
			return false
		}
	}
	return len(g.Inputs) > 0
}

// InferShapes returns the shape of every value g's nodes compute for
// inputs shaped like feeds: the one shape inference of the runtime, read
// off the reference kernels (run) so that every operator they run has a
// shape rule, the one it computes with.
//
// When g is Batched and every feed has the same batch size b ≥ 1, the
// shapes are symbolic in the batch size: g runs at batch 1 and at batch 2
// on rows of feeds (row i is feeds' row i mod b) and symbolicShapes reads
// them off, so the result holds for every batch size of those non-batch
// dimensions. Otherwise g runs once on feeds and the shapes are exact.
// Real rows are used, not zeros, because an index, a divisor or a size
// read from the inputs must be valid for the run to succeed. Values whose
// shape depends on the input data (DataDependentShapes) are left out.
func InferShapes(ctx context.Context, g *Graph, run Runner, feeds map[string]inference.Tensor) (map[string]Shape, error) {
	observe := func(feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
		seen := map[string]inference.Tensor{}
		for name, t := range feeds {
			seen[name] = t
		}
		err := run(ctx, feeds, func(name string, t inference.Tensor) { seen[name] = t })
		return seen, err
	}
	var shapes map[string]Shape
	if b := feedBatch(g, feeds); b > 0 {
		var seen [2]map[string]inference.Tensor
		for i, size := range []int{1, 2} {
			probe, err := rowsOf(g, feeds, size)
			if err != nil {
				return nil, err
			}
			if seen[i], err = observe(probe); err != nil {
				return nil, fmt.Errorf("graph %q: shapes at batch %d: %w", g.Name, size, err)
			}
		}
		var err error
		if shapes, err = symbolicShapes(1, 2, seen[0], seen[1]); err != nil {
			return nil, err
		}
	} else {
		seen, err := observe(feeds)
		if err != nil {
			return nil, fmt.Errorf("graph %q: shapes: %w", g.Name, err)
		}
		shapes = map[string]Shape{}
		for name, t := range seen {
			dims := make([]Dim, t.Rank())
			for i, d := range t.Shape() {
				dims[i] = Dim{Offset: d}
			}
			shapes[name] = Shape{DType: t.DType(), Dims: dims}
		}
	}
	for name, dependent := range DataDependentShapes(g) {
		if dependent {
			delete(shapes, name)
		}
	}
	return shapes, nil
}

// feedBatch is the batch size every feed shares when g is Batched, and 0
// otherwise (also when the feeds disagree).
func feedBatch(g *Graph, feeds map[string]inference.Tensor) int {
	if !g.Batched() {
		return 0
	}
	b := -1
	for _, in := range g.Inputs {
		t, ok := feeds[in.Name]
		if !ok || t.Rank() == 0 || (b >= 0 && t.Shape()[0] != b) {
			return 0
		}
		b = t.Shape()[0]
	}
	return max(b, 0)
}

// rowsOf stacks size rows of each feed: row i is the feed's row i mod its
// batch size.
func rowsOf(g *Graph, feeds map[string]inference.Tensor, size int) (map[string]inference.Tensor, error) {
	probe := make(map[string]inference.Tensor, len(g.Inputs))
	for _, in := range g.Inputs {
		rows, err := inference.Unstack(feeds[in.Name])
		if err != nil {
			return nil, fmt.Errorf("graph %q: input %q: %w", g.Name, in.Name, err)
		}
		pick := make([]inference.Tensor, size)
		for i := range pick {
			pick[i] = rows[i%len(rows)]
		}
		if probe[in.Name], err = inference.Stack(pick); err != nil {
			return nil, fmt.Errorf("graph %q: input %q: %w", g.Name, in.Name, err)
		}
	}
	return probe, nil
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

// nondeterministic lists the operators whose outputs differ from run to
// run on the same inputs.
var nondeterministic = map[string]bool{
	"RandomNormal": true, "RandomUniform": true, "RandomNormalLike": true, "RandomUniformLike": true,
	"Bernoulli": true, "Multinomial": true,
}

// ShapeDetermined marks the nodes of g whose outputs the shapes of g's
// inputs determine, without their values: Shape and Size of values whose
// shapes are not data-dependent (DataDependentShapes), constant
// initializers (not overridable ones), and deterministic ai.onnx nodes
// without subgraphs computing only from those: the shape arithmetic
// exporters emit before a Reshape or an Expand. An executor that ran g
// once for given input shapes may keep these nodes' outputs for later
// runs with the same shapes.
func ShapeDetermined(g *Graph) []bool {
	shapeTainted := DataDependentShapes(g)
	static := map[string]bool{}
	for name := range g.Initializers {
		static[name] = true
	}
	for _, v := range g.Overridable {
		static[v.Name] = false
	}
	marks := make([]bool, len(g.Nodes))
	for i, n := range g.Nodes {
		ok := n.Domain == "" && len(n.Subgraphs()) == 0 && !nondeterministic[n.OpType]
		switch {
		case !ok:
		case n.OpType == "Shape" || n.OpType == "Size":
			ok = n.Input(0) != "" && !shapeTainted[n.Input(0)]
		default:
			for _, in := range n.Inputs {
				ok = ok && (in == "" || static[in])
			}
		}
		marks[i] = ok
		for _, out := range n.Outputs {
			static[out] = ok
		}
	}
	return marks
}

package cpu

import (
	"fmt"
	"slices"
	"sort"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Operators that cut, join, repeat or pad tensors: Slice, Concat, Split,
// Pad, Tile, Expand and CenterCropPad. Most build index tables (take.go)
// that select, repeat or pad along each axis.

func init() {
	register("Slice", slSlice)
	register("Concat", slConcat)
	register("Split", slSplit)
	register("Pad", slPad)
	register("Tile", slTile)
	register("Expand", slExpand)
	register("CenterCropPad", slCenterCropPad)
}

// slSlicePlan is what a Slice node keeps from run to run: the input's
// shape, what it keeps of each axis and the output's shape, all of which
// its starts, ends, axes and steps key (their values, while they are
// small: valuesKeyed), and the tables of the take, made on first use.
type slSlicePlan struct {
	shape, out []int
	kept       []opsem.SliceAxis
	take       *tableTake
}

func slSlice(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	required := 3 // data, starts, ends
	if n.Opset < 10 {
		required = 1 // Slice-1 takes the rest as attributes
	}
	if err := needInputs(in, required); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1, 2, 3, 4)
	p, err := opsem.Plan(n, in, func() (*slSlicePlan, error) {
		var operands [4][]int64 // starts, ends, axes, steps
		for i := range operands {
			t := arg(in, i+1)
			if !present(t) {
				continue
			}
			var err error
			if operands[i], err = opsem.Int64s(t); err != nil {
				return nil, fmt.Errorf("input %d: %w", i+1, err)
			}
		}
		shape := x.Shape()
		kept, _, err := opsem.Slice(n, shape, operands[0], operands[1], operands[2], operands[3])
		if err != nil {
			return nil, err
		}
		out := slices.Clone(shape)
		for _, k := range kept {
			out[k.Axis] = k.Count
		}
		return &slSlicePlan{shape: shape, out: out, kept: kept}, nil
	})
	if err != nil {
		return nil, err
	}
	if y, empty, err := emptyResult(n.Run, x, p.out); empty {
		return []inference.Tensor{y}, err
	}
	if p.take == nil {
		tabs, err := keptTables(n.Run, p.shape)
		if err != nil {
			return nil, err
		}
		st := opsem.Strides(p.shape)
		for _, k := range p.kept {
			if tabs[k.Axis], err = keptAxisTable(n.Run, k.Count, func(j int) int { return (k.First + j*k.Step) * st[k.Axis] }); err != nil {
				return nil, err
			}
		}
		p.take = newTableTake(tabs, p.out)
	}
	return p.take.output(n, x, p.out)
}

// slConcatPlan is what a Concat node keeps from run to run: the output's
// shape, the input blocks it joins (slConcatOf), and the inputs' data,
// set each run, in a [][]T of the element type.
type slConcatPlan struct {
	shape        []int
	outer, inner int
	blocks       []int // input i's block: its size along the axis × inner
	prefix       []int // the blocks' starts in a row of the output: Σ blocks[:i]
	state        any   // *slCat[T], made by the first run
}

// slCat is a Concat plan's state for its element type: the inputs' data
// and the output of the run under way, and the copy of a range of the
// output bound once (a closure per run would allocate), which parallelFor
// splits among the cores.
type slCat[T inference.Element] struct {
	p    *slConcatPlan
	srcs [][]T
	out  []T
	body func(lo, hi int)
}

// copyRange copies output elements lo…hi−1 from the inputs: element x is
// row x / rowLen of the outer dimensions, where input i's block starts at
// prefix[i].
func (c *slCat[T]) copyRange(lo, hi int) {
	p := c.p
	rowLen := p.prefix[len(p.prefix)-1]
	for x := lo; x < hi; {
		o, r := x/rowLen, x%rowLen
		i := sort.Search(len(p.blocks), func(i int) bool { return p.prefix[i+1] > r })
		n := min(hi-x, p.prefix[i+1]-r)
		at := o*p.blocks[i] + r - p.prefix[i]
		copy(c.out[x:x+n], c.srcs[i][at:at+n])
		x += n
	}
}

func slConcat(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("no inputs: %w", inference.ErrBadModel)
	}
	first := in[0]
	p, err := opsem.Plan(n, in, func() (*slConcatPlan, error) {
		axis, err := opsem.ConcatAxis(n, first.Rank())
		if err != nil {
			return nil, fmt.Errorf("input 0 %v: %w", first, err)
		}
		shapes := make([][]int, len(in))
		for i, t := range in {
			if !present(t) {
				return nil, fmt.Errorf("input %d is missing: %w", i, inference.ErrBadModel)
			}
			if t.DType() != first.DType() {
				return nil, fmt.Errorf("input %d is %v, input 0 is %v: %w", i, t, first, inference.ErrType)
			}
			shapes[i] = t.Shape()
		}
		shape, err := opsem.ConcatShape(shapes, axis)
		if err != nil {
			return nil, err
		}
		p := &slConcatPlan{shape: shape, blocks: make([]int, len(in)), prefix: make([]int, len(in)+1)}
		if opsem.Count(shape) > 0 { // else the other dimensions may not count within int
			p.outer, _, p.inner = opsem.SplitAxis(shape, axis)
			for i, s := range shapes {
				p.blocks[i] = s[axis] * p.inner
				p.prefix[i+1] = p.prefix[i] + p.blocks[i]
			}
		}
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	switch first.DType() {
	case inference.Float32:
		return slConcatOf[float32](n, p, in)
	case inference.Int64:
		return slConcatOf[int64](n, p, in)
	case inference.Int32:
		return slConcatOf[int32](n, p, in)
	case inference.Bool:
		return slConcatOf[bool](n, p, in)
	case inference.Uint8:
		return slConcatOf[uint8](n, p, in)
	}
	return nil, fmt.Errorf("%v: %w", first, inference.ErrType)
}

// slConcatOf joins tensors that agree off the axis into p's shape: for
// each index over the axes before the axis, it copies each input's block
// in turn.
func slConcatOf[T inference.Element](n opsem.Node, p *slConcatPlan, in []inference.Tensor) ([]inference.Tensor, error) {
	out, err := limit.MakeOverwritten[T](n.Run, p.shape...) // every element is copied
	if err != nil {
		return nil, err
	}
	if len(out) == 0 { // no elements: the other dimensions may not count within int
		return opsem.Single(n, p.shape, out)
	}
	c, _ := p.state.(*slCat[T])
	if c == nil || len(c.srcs) != len(in) {
		c = &slCat[T]{p: p, srcs: make([][]T, len(in))}
		c.body = c.copyRange
		p.state = c
	}
	for i, t := range in {
		d, err := inference.Data[T](t)
		if err != nil {
			return nil, err
		}
		c.srcs[i] = d
	}
	c.out = out
	parallelFor(len(out), 1, c.body)
	clear(c.srcs) // not to hold the buffers until the next run
	c.out = nil
	return opsem.Single(n, p.shape, out)
}

// slSplitPlan is what a Split node keeps from run to run: for each
// output, the take of its part (the tables along the axis cut to it) and
// its shape; the values of the split operand key it while it is small
// (valuesKeyed).
type slSplitPlan struct {
	parts []*tableTake
}

func slSplit(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1)
	p, err := opsem.Plan(n, in, func() (*slSplitPlan, error) {
		shape := x.Shape()
		var split []int64
		if t := arg(in, 1); present(t) {
			var err error
			if split, err = opsem.Int64s(t); err != nil {
				return nil, fmt.Errorf("split: %w", err)
			}
			split = given(split)
		}
		axis, parts, err := opsem.SplitParts(n, shape, split)
		if err != nil {
			return nil, err
		}
		st := opsem.Strides(shape)
		p := &slSplitPlan{parts: make([]*tableTake, len(parts))}
		start := 0
		for k, s := range parts {
			tabs, err := keptTables(n.Run, shape)
			if err != nil {
				return nil, err
			}
			if tabs[axis], err = keptAxisTable(n.Run, s, func(i int) int { return (start + i) * st[axis] }); err != nil {
				return nil, err
			}
			p.parts[k] = newTableTake(tabs, tableShape(tabs))
			start += s
		}
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	res := n.Results(len(p.parts))
	for k, part := range p.parts {
		if res[k], err = part.outputAt(n, k, x, part.shape); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func slPad(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	var pads, axes []int64
	var fill inference.Tensor
	var err error
	if n.Opset < 11 {
		// Pad-1 and Pad-2 take the pads and the constant as attributes.
		if in, err = inputs(in, 1, 1); err != nil {
			return nil, err
		}
		if fill, err = scalarOf(in[0].DType(), float64(opsem.PadValue(n))); err != nil {
			return nil, err
		}
	} else {
		if in, err = inputs(in, 4, 2); err != nil {
			return nil, err
		}
		if pads, err = opsem.Int64s(in[1]); err != nil {
			return nil, fmt.Errorf("pads: %w", err)
		}
		fill = in[2]
		if present(fill) && fill.DType() != in[0].DType() {
			return nil, fmt.Errorf("constant_value %v for data %v: %w", fill, in[0], inference.ErrType)
		}
		if present(in[3]) {
			if axes, err = opsem.Int64s(in[3]); err != nil {
				return nil, fmt.Errorf("axes: %w", err)
			}
		}
	}
	x := in[0]
	shape := x.Shape()
	p, err := opsem.PadGeometry(n, shape, pads, axes)
	if err != nil {
		return nil, err
	}
	tabs := make([][]int, len(shape))
	st := opsem.Strides(shape)
	for a, d := range p.Dims {
		tab, err := slPadTable(n.Run, p.Mode, d)
		if err != nil {
			return nil, err
		}
		for o, v := range tab {
			if v >= 0 {
				tab[o] = v * st[a]
			}
		}
		tabs[a] = tab
	}
	y, err := takeTables(n.Run, x, tabs, fill)
	return []inference.Tensor{y}, err
}

// slPadTable maps each output coordinate of a dimension Pad pads as d says
// to the input coordinate it copies, -1 for the constant. The modes extend
// what the crop left: edge repeats the border, reflect mirrors without
// repeating it (period 2(n-1)), wrap repeats the whole (period n).
func slPadTable(r *limit.Run, mode string, d opsem.PadDim) ([]int, error) {
	l := d.Kept
	tab, err := limit.Make[int](r, d.Size)
	if err != nil {
		return nil, err
	}
	for o := range tab {
		i := o - d.Before
		if i < 0 || i >= l {
			switch mode {
			case "constant":
				tab[o] = -1
				continue
			case "edge":
				i = min(max(i, 0), l-1)
			case "reflect":
				if l == 1 {
					i = 0
					break
				}
				p := 2 * (l - 1)
				i = (i%p + p) % p
				if i >= l {
					i = p - i
				}
			case "wrap":
				i = (i%l + l) % l
			}
		}
		tab[o] = d.Crop + i
	}
	return tab, nil
}

func slTile(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	required := 2 // input, repeats
	if n.Opset < 6 {
		required = 3 // Tile-1: input, tiles, axis
	}
	in, err := inputs(in, 3, required)
	if err != nil {
		return nil, err
	}
	x := in[0]
	// Input 1 is Tile-6's repeats or Tile-1's tiles; TileRepeats reads the
	// one the node's version takes.
	v, err := opsem.Int64s(in[1])
	if err != nil {
		return nil, fmt.Errorf("input 1: %w", err)
	}
	var axis []int64
	if present(in[2]) {
		if axis, err = opsem.Int64s(in[2]); err != nil {
			return nil, fmt.Errorf("axis: %w", err)
		}
	}
	shape := x.Shape()
	_, out, err := opsem.TileRepeats(n, shape, v, v, axis)
	if err != nil {
		return nil, err
	}
	st := opsem.Strides(shape)
	tabs := make([][]int, len(shape))
	for j, d := range shape {
		if tabs[j], err = axisTable(n.Run, out[j], func(i int) int { return i % d * st[j] }); err != nil {
			return nil, err
		}
	}
	y, err := takeTables(n.Run, x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

// slExpandPlan is what an Expand node keeps from run to run: the output's
// shape, which the values of its shape operand key while it is small
// (valuesKeyed), and the strides and odometer of the offsets.
type slExpandPlan struct {
	out, strides, idx []int
}

func slExpand(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	x := in[0]
	n = valuesKeyed(n, in, 1)
	p, err := opsem.Plan(n, in, func() (*slExpandPlan, error) {
		target, err := opsem.Int64s(in[1])
		if err != nil {
			return nil, fmt.Errorf("shape: %w", err)
		}
		shape := x.Shape()
		out, err := opsem.ExpandShape(shape, target)
		if err != nil {
			return nil, err
		}
		st, err := opsem.BroadcastStrides(shape, out)
		if err != nil {
			return nil, err
		}
		return &slExpandPlan{out: out, strides: st, idx: make([]int, len(out))}, nil
	})
	if err != nil {
		return nil, err
	}
	offs, err := limit.MakeOverwritten[int](n.Run, p.out...) // StridedOffsets writes every entry
	if err != nil {
		return nil, err
	}
	opsem.StridedOffsets(offs, p.strides, p.out, p.idx) // opsem.BroadcastOffsets
	return takeOutput(n, x, p.out, offs)
}

func slCenterCropPad(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	v, err := opsem.Int64s(in[1])
	if err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	target, err := opsem.Dims(v, "shape")
	if err != nil {
		return nil, err
	}
	axes := n.Ints("axes", nil)
	if axes == nil {
		for i := range shape {
			axes = append(axes, int64(i))
		}
	}
	ax, err := opsem.NormAxes(axes, len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	if len(target) != len(ax) {
		return nil, fmt.Errorf("shape %v for axes %v: %w", target, ax, inference.ErrShape)
	}
	tabs, err := tables(n.Run, shape)
	if err != nil {
		return nil, err
	}
	st := opsem.Strides(shape)
	// Crop and pad are centered, the odd element going to the end.
	for i, a := range ax {
		d, t := shape[a], target[i]
		off := (t - d) / 2
		if t < d {
			off = -((d - t) / 2)
		}
		tabs[a], err = axisTable(n.Run, t, func(o int) int {
			if j := o - off; j >= 0 && j < d {
				return j * st[a]
			}
			return -1
		})
		if err != nil {
			return nil, err
		}
	}
	y, err := takeTables(n.Run, x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// SliceRange clamps a slice of a dimension of size dim as ONNX Slice does
// and returns its first index and element count. Negative start and end
// count from the end; then for step > 0 both clamp to [0, dim], for step < 0
// start clamps to [0, dim-1] and end to [-1, dim-1]. Step 0 is an error;
// every other int64 start, end and step (−2⁶³ included) is a slice.
func SliceRange(start, end, step int64, dim int) (first, count int, err error) {
	if step == 0 {
		return 0, 0, fmt.Errorf("step 0: %w", inference.ErrShape)
	}
	d := int64(dim)
	// Adding d ≥ 0 to a negative index, and the differences of the clamped
	// indices below, stay within int64; the count divides the span less one
	// by |step| so that neither span + step nor −step is needed.
	if start < 0 {
		start += d
	}
	if end < 0 {
		end += d
	}
	if step > 0 {
		start = min(max(start, 0), d)
		end = min(max(end, 0), d)
		if end <= start {
			return 0, 0, nil
		}
		return int(start), int((end-start-1)/step + 1), nil
	}
	start = min(max(start, 0), d-1)
	end = min(max(end, -1), d-1)
	if start <= end {
		return 0, 0, nil
	}
	return int(start), int(uint64(start-end-1)/magnitude(step) + 1), nil
}

// SliceAxis is what Slice keeps of one dimension: Count elements from
// First on, Step apart. Step is 1 when Count is 0 or 1, where the step
// reaches nothing: a backend may multiply it by a stride without overflow.
type SliceAxis struct {
	Axis, First, Count, Step int
}

// Slice returns what Slice keeps of data of shape shape, one SliceAxis per
// dimension the node names, and the output shape. Slice-1 takes starts,
// ends and axes as attributes (the operands are ignored); from Slice-10 they
// are the operands: starts and ends, and axes and steps, which are nil
// when the node leaves them out (all axes in order, steps of 1).
func Slice(n Node, shape []int, starts, ends, axes, steps []int64) ([]SliceAxis, []int, error) {
	if n.Opset < 10 {
		starts, ends, axes, steps = n.Ints("starts", nil), n.Ints("ends", nil), n.Ints("axes", nil), nil
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, nil, fmt.Errorf("starts %v, ends %v, axes %v, steps %v differ in length: %w", starts, ends, axes, steps, inference.ErrShape)
	}
	ax, err := NormAxes(axes, len(shape))
	if err != nil {
		return nil, nil, fmt.Errorf("data %v: %w", shape, err)
	}
	out := slices.Clone(shape)
	kept := make([]SliceAxis, len(ax))
	for i, a := range ax {
		first, count, err := SliceRange(starts[i], ends[i], steps[i], shape[a])
		if err != nil {
			return nil, nil, fmt.Errorf("data %v, axis %d: %w", shape, a, err)
		}
		step := 1
		if count > 1 {
			step = int(steps[i]) // |step| < dim: the second element lies inside
		}
		kept[i] = SliceAxis{Axis: a, First: first, Count: count, Step: step}
		out[a] = count
	}
	return kept, out, nil
}

// PadDim is what Pad does to one dimension: it drops Crop elements at the
// start (a negative begin pad) and keeps Kept, puts Before elements ahead
// of them (a positive begin pad), and makes the dimension Size long.
type PadDim struct {
	Crop, Kept, Before, Size int
}

// Pad is what Pad does to its data: the mode (constant, edge, reflect or
// wrap), one PadDim per dimension, and the output shape.
type Pad struct {
	Mode string
	Dims []PadDim
	Out  []int
}

// PadGeometry returns what Pad does to data of shape shape. Pad-1 and Pad-2
// take the pads as an attribute (paddings, then pads; the operands are
// ignored); from Pad-11 they are the operand pads, for the axes of the
// operand axes (nil: every axis, from Pad-18 on). pads holds the begin pads
// of the axes, then their end pads; negative pads crop (as onnxruntime
// does), and the modes other than constant need something left to
// extend.
func PadGeometry(n Node, shape []int, pads, axes []int64) (Pad, error) {
	if n.Opset < 11 {
		switch {
		case n.Has("pads"):
			pads = n.Ints("pads", nil)
		case n.Has("paddings"):
			pads = n.Ints("paddings", nil)
		default:
			return Pad{}, fmt.Errorf("no pads attribute: %w", inference.ErrBadModel)
		}
		axes = nil
	}
	p := Pad{Mode: n.Str("mode", "constant")}
	switch p.Mode {
	case "constant", "reflect", "edge", "wrap":
	default:
		return Pad{}, n.Unsupported("mode %q", p.Mode)
	}
	if axes == nil {
		for i := range shape {
			axes = append(axes, int64(i))
		}
	}
	ax, err := NormAxes(axes, len(shape))
	if err != nil {
		return Pad{}, fmt.Errorf("data %v: %w", shape, err)
	}
	if len(pads) != 2*len(ax) {
		return Pad{}, fmt.Errorf("pads %v for data %v and axes %v: want %d values: %w", pads, shape, ax, 2*len(ax), inference.ErrShape)
	}
	p.Dims = make([]PadDim, len(shape))
	p.Out = slices.Clone(shape)
	for i, d := range shape {
		p.Dims[i] = PadDim{Kept: d, Size: d}
	}
	for i, a := range ax {
		begin, end := pads[i], pads[i+len(ax)]
		// A pad below −dim crops more than there is (and −2⁶³ would
		// overflow when negated); from −dim up, the crops are exact.
		kept := int64(shape[a])
		if begin < -kept || end < -kept || max(-end, 0) > kept-max(-begin, 0) {
			return Pad{}, fmt.Errorf("data %v, axis %d, pads %v: negative pads crop more than the dimension: %w", shape, a, pads, inference.ErrShape)
		}
		crop := max(-begin, 0)
		kept -= crop + max(-end, 0)
		var c checked
		size := c.add(c.add(kept, max(begin, 0)), max(end, 0))
		if c.overflow || size > maxDim {
			return Pad{}, fmt.Errorf("data %v, axis %d, pads %v: padded dimension above 2³¹−1: %w", shape, a, pads, inference.ErrShape)
		}
		if kept == 0 && p.Mode != "constant" && size > 0 {
			return Pad{}, fmt.Errorf("data %v, axis %d, pads %v: %s padding of an empty dimension: %w", shape, a, pads, p.Mode, inference.ErrShape)
		}
		p.Dims[a] = PadDim{Crop: int(crop), Kept: int(kept), Before: int(max(begin, 0)), Size: int(size)}
		p.Out[a] = int(size)
	}
	if _, err := inference.NumElements(p.Out); err != nil {
		return Pad{}, fmt.Errorf("data %v, pads %v: output %v: %w", shape, pads, p.Out, err)
	}
	return p, nil
}

// PadValue is the constant of Pad-1 and Pad-2: the attribute value
// (default 0). From Pad-11 it is the optional operand constant_value.
func PadValue(n Node) float32 { return n.Float("value", 0) }

// ConcatAxis is Concat's axis for inputs of the given rank: the attribute
// axis, which Concat-4 and later require and Concat-1 defaults to 1.
func ConcatAxis(n Node, rank int) (int, error) {
	if !n.Has("axis") && n.Opset >= 4 {
		return 0, fmt.Errorf("no axis attribute: %w", inference.ErrBadModel)
	}
	return NormAxis(n.Int("axis", 1), rank)
}

// ConcatShape returns the output shape of Concat of inputs of the given
// shapes along axis: equal off axis, summed along it.
func ConcatShape(shapes [][]int, axis int) ([]int, error) {
	if len(shapes) == 0 {
		return nil, fmt.Errorf("no inputs: %w", inference.ErrBadModel)
	}
	out := slices.Clone(shapes[0])
	out[axis] = 0
	for i, s := range shapes {
		if len(s) != len(out) {
			return nil, fmt.Errorf("input %d has shape %v, input 0 %v: %w", i, s, shapes[0], inference.ErrShape)
		}
		for j := range s {
			if j != axis && s[j] != out[j] {
				return nil, fmt.Errorf("input %d has shape %v, input 0 %v: sizes differ off axis %d: %w", i, s, shapes[0], axis, inference.ErrShape)
			}
		}
		out[axis] += s[axis]
	}
	return out, nil
}

// SplitParts returns Split's axis and the length along it of each of its
// outputs (as many as the node names), for an input of shape shape. The
// lengths are split when given (Split-1 and from Split-13 the operand,
// which is nil when left out; Split-2 to Split-12 the attribute split), or
// from Split-18 num_outputs chunks of ceil(dim/num_outputs) with a smaller
// last one, or else equal parts.
func SplitParts(n Node, shape []int, split []int64) (axis int, parts []int, err error) {
	axis, err = NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return 0, nil, fmt.Errorf("input %v: %w", shape, err)
	}
	dim := shape[axis]
	outputs := len(n.Outputs)
	switch {
	case split != nil && (n.Opset < 2 || n.Opset >= 13):
	case n.Opset < 13 && n.Has("split"):
		split = n.Ints("split", nil)
	case n.Opset >= 18 && n.Has("num_outputs"):
		k := n.Int("num_outputs", 0)
		if k <= 0 || k != int64(outputs) {
			return 0, nil, fmt.Errorf("num_outputs %d with %d outputs: %w", k, outputs, inference.ErrBadModel)
		}
		chunk := (int64(dim) + k - 1) / k
		split = nil
		for range k - 1 {
			split = append(split, chunk)
		}
		split = append(split, int64(dim)-chunk*(k-1))
	default:
		if outputs == 0 || dim%outputs != 0 {
			return 0, nil, fmt.Errorf("input %v: axis %d of size %d does not split into %d equal parts: %w", shape, axis, dim, outputs, inference.ErrShape)
		}
		split = nil
		for range outputs {
			split = append(split, int64(dim/outputs))
		}
	}
	if len(split) != outputs {
		return 0, nil, fmt.Errorf("split %v for %d outputs: %w", split, outputs, inference.ErrShape)
	}
	var sum int64
	parts = make([]int, len(split))
	for i, s := range split {
		if s < 0 {
			return 0, nil, fmt.Errorf("split %v of axis %d of %v: negative part: %w", split, axis, shape, inference.ErrShape)
		}
		if s > int64(dim)-sum {
			return 0, nil, fmt.Errorf("split %v sums to more than axis %d of %v, %d: %w", split, axis, shape, dim, inference.ErrShape)
		}
		sum += s
		parts[i] = int(s)
	}
	if sum != int64(dim) {
		return 0, nil, fmt.Errorf("split %v sums to %d, axis %d of %v has %d: %w", split, sum, axis, shape, dim, inference.ErrShape)
	}
	return axis, parts, nil
}

// TileRepeats returns how many times Tile repeats each dimension of an
// input of shape shape, and the output shape. Tile-6 and later take the
// operand repeats (one per dimension); Tile-1 repeats tiles times along
// axis (operands tiles and axis, single integers).
func TileRepeats(n Node, shape []int, repeats, tiles, axis []int64) (reps []int, out []int, err error) {
	if n.Opset < 6 {
		if len(tiles) != 1 || len(axis) != 1 {
			return nil, nil, fmt.Errorf("tiles %v and axis %v must be single integers: %w", tiles, axis, inference.ErrShape)
		}
		a, err := NormAxis(axis[0], len(shape))
		if err != nil {
			return nil, nil, fmt.Errorf("input %v: %w", shape, err)
		}
		repeats = make([]int64, len(shape))
		for i := range repeats {
			repeats[i] = 1
		}
		repeats[a] = tiles[0]
	}
	if len(repeats) != len(shape) {
		return nil, nil, fmt.Errorf("repeats %v for input %v: %w", repeats, shape, inference.ErrShape)
	}
	reps, out = make([]int, len(shape)), make([]int, len(shape))
	for j, d := range shape {
		var c checked
		size := c.mul(int64(d), repeats[j])
		rep := c.toInt(repeats[j])
		if repeats[j] < 0 || c.overflow || size > maxDim {
			return nil, nil, fmt.Errorf("repeats %v for input %v: axis %d repeated %d times, want [0, 2³¹) elements: %w", repeats, shape, j, repeats[j], inference.ErrShape)
		}
		reps[j], out[j] = rep, int(size)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, nil, fmt.Errorf("repeats %v for input %v: %w", repeats, shape, err)
	}
	return reps, out, nil
}

// ExpandShape returns the output shape of Expand of an input of shape x to
// the operand shape: the two broadcast together.
func ExpandShape(x []int, shape []int64) ([]int, error) {
	target, err := Dims(shape, "shape")
	if err != nil {
		return nil, err
	}
	out, err := BroadcastShape(x, target)
	if err != nil {
		return nil, fmt.Errorf("input %v to shape %v: %w", x, shape, err)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, fmt.Errorf("input %v to shape %v: %w", x, shape, err)
	}
	return out, nil
}

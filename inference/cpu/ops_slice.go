package cpu

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
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

func slSlice(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	var starts, ends, axes, steps []int64
	if n.Opset < 10 {
		var err error
		if in, err = inputs(in, 1, 1); err != nil {
			return nil, err
		}
		starts, ends, axes = n.Ints("starts", nil), n.Ints("ends", nil), n.Ints("axes", nil)
	} else {
		var err error
		if in, err = inputs(in, 5, 3); err != nil {
			return nil, err
		}
		ops := []*[]int64{&starts, &ends, &axes, &steps}
		for i, p := range ops {
			if !Present(in[i+1]) {
				continue
			}
			if *p, err = Int64s(in[i+1]); err != nil {
				return nil, fmt.Errorf("input %d: %w", i+1, err)
			}
		}
	}
	x := in[0]
	shape := x.Shape()
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
		return nil, fmt.Errorf("starts %v, ends %v, axes %v, steps %v differ in length: %w", starts, ends, axes, steps, inference.ErrShape)
	}
	ax, err := normAxes(axes, len(shape))
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	tabs := tables(shape)
	st := Strides(shape)
	for i, a := range ax {
		start, count, err := slSliceRange(starts[i], ends[i], steps[i], shape[a])
		if err != nil {
			return nil, fmt.Errorf("data %v, axis %d: %w", x, a, err)
		}
		step := int(steps[i])
		tabs[a] = axisTable(count, func(j int) int { return (start + j*step) * st[a] })
	}
	y, err := takeTables(x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

// slSliceRange clamps a slice of a dimension as ONNX Slice does and returns
// its first index and element count. Negative start and end count from the
// end; then for step > 0 both clamp to [0, dim], for step < 0 start clamps
// to [0, dim-1] and end to [-1, dim-1].
func slSliceRange(start, end, step int64, dim int) (first, count int, err error) {
	if step == 0 {
		return 0, 0, fmt.Errorf("step 0: %w", inference.ErrShape)
	}
	d := int64(dim)
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
		return int(start), int((end - start + step - 1) / step), nil
	}
	start = min(max(start, 0), d-1)
	end = min(max(end, -1), d-1)
	if start <= end {
		return 0, 0, nil
	}
	return int(start), int((start - end - step - 1) / -step), nil
}

func slConcat(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("no inputs: %w", inference.ErrBadModel)
	}
	first := in[0]
	if !n.Has("axis") && n.Opset >= 4 {
		return nil, fmt.Errorf("no axis attribute: %w", inference.ErrBadModel)
	}
	// Concat-1 defaults axis to 1.
	axis, err := NormAxis(n.Int("axis", 1), first.Rank())
	if err != nil {
		return nil, fmt.Errorf("input 0 %v: %w", first, err)
	}
	shape := first.Shape()
	shape[axis] = 0
	for i, t := range in {
		if !Present(t) {
			return nil, fmt.Errorf("input %d is missing: %w", i, inference.ErrBadModel)
		}
		if t.DType() != first.DType() {
			return nil, fmt.Errorf("input %d is %v, input 0 is %v: %w", i, t, first, inference.ErrType)
		}
		s := t.Shape()
		if len(s) != len(shape) {
			return nil, fmt.Errorf("input %d is %v, input 0 is %v: %w", i, t, first, inference.ErrShape)
		}
		for j := range s {
			if j != axis && s[j] != shape[j] {
				return nil, fmt.Errorf("input %d is %v, input 0 is %v: sizes differ off axis %d: %w", i, t, first, axis, inference.ErrShape)
			}
		}
		shape[axis] += s[axis]
	}
	var y inference.Tensor
	switch first.DType() {
	case inference.Float32:
		y, err = slConcatOf[float32](in, shape, axis)
	case inference.Int64:
		y, err = slConcatOf[int64](in, shape, axis)
	case inference.Int32:
		y, err = slConcatOf[int32](in, shape, axis)
	case inference.Bool:
		y, err = slConcatOf[bool](in, shape, axis)
	case inference.Uint8:
		y, err = slConcatOf[uint8](in, shape, axis)
	default:
		err = fmt.Errorf("%v: %w", first, inference.ErrType)
	}
	return []inference.Tensor{y}, err
}

// slConcatOf joins tensors that agree off axis into shape: for each index
// over the axes before axis, it copies each input's block in turn.
func slConcatOf[T inference.Element](in []inference.Tensor, shape []int, axis int) (inference.Tensor, error) {
	outer := product(shape[:axis])
	inner := product(shape[axis+1:])
	out := make([]T, 0, product(shape))
	srcs := make([][]T, len(in))
	for i, t := range in {
		d, err := inference.Data[T](t)
		if err != nil {
			return inference.Tensor{}, err
		}
		srcs[i] = d
	}
	for o := range outer {
		for i, t := range in {
			block := t.Shape()[axis] * inner
			out = append(out, srcs[i][o*block:(o+1)*block]...)
		}
	}
	return inference.New(shape, out)
}

func slSplit(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	axis, err := NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	dim := shape[axis]
	outputs := len(n.Outputs)
	var split []int64
	switch {
	case Present(in[1]) && (n.Opset < 2 || n.Opset >= 13):
		// Split-1 takes split as an input or an attribute; Split-13 as an input.
		if split, err = Int64s(in[1]); err != nil {
			return nil, fmt.Errorf("split: %w", err)
		}
	case n.Opset < 13 && n.Has("split"):
		split = n.Ints("split", nil)
	case n.Opset >= 18 && n.Has("num_outputs"):
		// Chunks of ceil(dim/num_outputs), the last one smaller.
		k := n.Int("num_outputs", 0)
		if k <= 0 || k != int64(outputs) {
			return nil, fmt.Errorf("num_outputs %d with %d outputs: %w", k, outputs, inference.ErrBadModel)
		}
		chunk := (int64(dim) + k - 1) / k
		for range k - 1 {
			split = append(split, chunk)
		}
		split = append(split, int64(dim)-chunk*(k-1))
	default:
		if outputs == 0 || dim%outputs != 0 {
			return nil, fmt.Errorf("input %v: axis %d of size %d does not split into %d equal parts: %w", x, axis, dim, outputs, inference.ErrShape)
		}
		for range outputs {
			split = append(split, int64(dim/outputs))
		}
	}
	if len(split) != outputs {
		return nil, fmt.Errorf("split %v for %d outputs: %w", split, outputs, inference.ErrShape)
	}
	var sum int64
	for _, s := range split {
		if s < 0 {
			return nil, fmt.Errorf("split %v of axis %d of %v: negative part: %w", split, axis, x, inference.ErrShape)
		}
		sum += s
	}
	if sum != int64(dim) {
		return nil, fmt.Errorf("split %v sums to %d, axis %d of %v has %d: %w", split, sum, axis, x, dim, inference.ErrShape)
	}
	st := Strides(shape)
	outs := make([]inference.Tensor, outputs)
	start := 0
	for k, s := range split {
		tabs := tables(shape)
		tabs[axis] = axisTable(int(s), func(i int) int { return (start + i) * st[axis] })
		if outs[k], err = takeTables(x, tabs, inference.Tensor{}); err != nil {
			return nil, err
		}
		start += int(s)
	}
	return outs, nil
}

func slPad(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	var pads []int64
	var axes []int64
	var fill inference.Tensor
	var err error
	if n.Opset < 11 {
		// Pad-1 names the attribute paddings, Pad-2 pads.
		if in, err = inputs(in, 1, 1); err != nil {
			return nil, err
		}
		switch {
		case n.Has("pads"):
			pads = n.Ints("pads", nil)
		case n.Has("paddings"):
			pads = n.Ints("paddings", nil)
		default:
			return nil, fmt.Errorf("no pads attribute: %w", inference.ErrBadModel)
		}
		if fill, err = scalarOf(in[0].DType(), float64(n.Float("value", 0))); err != nil {
			return nil, err
		}
	} else {
		if in, err = inputs(in, 4, 2); err != nil {
			return nil, err
		}
		if pads, err = Int64s(in[1]); err != nil {
			return nil, fmt.Errorf("pads: %w", err)
		}
		fill = in[2]
		if Present(fill) && fill.DType() != in[0].DType() {
			return nil, fmt.Errorf("constant_value %v for data %v: %w", fill, in[0], inference.ErrType)
		}
		if Present(in[3]) {
			if axes, err = Int64s(in[3]); err != nil {
				return nil, fmt.Errorf("axes: %w", err)
			}
		}
	}
	x := in[0]
	shape := x.Shape()
	if axes == nil {
		for i := range shape {
			axes = append(axes, int64(i))
		}
	}
	ax, err := normAxes(axes, len(shape))
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	if len(pads) != 2*len(ax) {
		return nil, fmt.Errorf("pads %v for data %v and axes %v: want %d values: %w", pads, x, ax, 2*len(ax), inference.ErrShape)
	}
	mode := n.Str("mode", "constant")
	if mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap" {
		return nil, Unsupported(n, "mode %q", mode)
	}
	tabs := tables(shape)
	st := Strides(shape)
	for i, a := range ax {
		tab, err := slPadTable(mode, pads[i], pads[i+len(ax)], shape[a])
		if err != nil {
			return nil, fmt.Errorf("data %v, axis %d, pads %v: %w", x, a, pads, err)
		}
		for o, v := range tab {
			if v >= 0 {
				tab[o] = v * st[a]
			}
		}
		tabs[a] = tab
	}
	y, err := takeTables(x, tabs, fill)
	return []inference.Tensor{y}, err
}

// slPadTable maps each output coordinate of a padded dimension to the
// input coordinate it copies, -1 for the constant. Negative pads first crop
// the input (as onnxruntime does); the modes then extend what is left:
// edge repeats the border, reflect mirrors without repeating it (period
// 2(n-1)), wrap repeats the whole (period n).
func slPadTable(mode string, begin, end int64, dim int) ([]int, error) {
	cropBegin, cropEnd := max(-begin, 0), max(-end, 0)
	padBegin, padEnd := max(begin, 0), max(end, 0)
	kept := int64(dim) - cropBegin - cropEnd
	if kept < 0 {
		return nil, fmt.Errorf("negative pads crop more than dimension %d: %w", dim, inference.ErrShape)
	}
	size := kept + padBegin + padEnd
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("padded dimension %d too large: %w", size, inference.ErrShape)
	}
	if kept == 0 && mode != "constant" && size > 0 {
		return nil, fmt.Errorf("%s padding of an empty dimension: %w", mode, inference.ErrShape)
	}
	l := int(kept)
	tab := make([]int, size)
	for o := range tab {
		i := o - int(padBegin)
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
		tab[o] = int(cropBegin) + i
	}
	return tab, nil
}

func slTile(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	var x inference.Tensor
	var reps []int64
	if n.Opset < 6 {
		// Tile-1: tiles copies along one axis.
		in, err := inputs(in, 3, 3)
		if err != nil {
			return nil, err
		}
		x = in[0]
		tiles, err1 := Int64s(in[1])
		axis, err2 := Int64s(in[2])
		if err1 != nil || err2 != nil || len(tiles) != 1 || len(axis) != 1 {
			return nil, fmt.Errorf("tiles %v and axis %v must be single integers: %w", in[1], in[2], inference.ErrShape)
		}
		a, err := NormAxis(axis[0], x.Rank())
		if err != nil {
			return nil, fmt.Errorf("input %v: %w", x, err)
		}
		reps = make([]int64, x.Rank())
		for i := range reps {
			reps[i] = 1
		}
		reps[a] = tiles[0]
	} else {
		in, err := inputs(in, 2, 2)
		if err != nil {
			return nil, err
		}
		x = in[0]
		if reps, err = Int64s(in[1]); err != nil {
			return nil, fmt.Errorf("repeats: %w", err)
		}
	}
	shape := x.Shape()
	if len(reps) != len(shape) {
		return nil, fmt.Errorf("repeats %v for input %v: %w", reps, x, inference.ErrShape)
	}
	st := Strides(shape)
	tabs := make([][]int, len(shape))
	for j, d := range shape {
		if reps[j] < 0 || int64(d)*reps[j] > math.MaxInt32 {
			return nil, fmt.Errorf("repeats %v for input %v: %w", reps, x, inference.ErrShape)
		}
		tabs[j] = axisTable(d*int(reps[j]), func(i int) int { return i % d * st[j] })
	}
	y, err := takeTables(x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func slExpand(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	target, err := dimsOf(in[1], "shape")
	if err != nil {
		return nil, err
	}
	out, err := BroadcastShape(x.Shape(), target)
	if err != nil {
		return nil, fmt.Errorf("input %v to shape %v: %w", x, target, err)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, err
	}
	y, err := take(x, out, BroadcastOffsets(x.Shape(), out), inference.Tensor{})
	return []inference.Tensor{y}, err
}

func slCenterCropPad(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	target, err := dimsOf(in[1], "shape")
	if err != nil {
		return nil, err
	}
	axes := n.Ints("axes", nil)
	if axes == nil {
		for i := range shape {
			axes = append(axes, int64(i))
		}
	}
	ax, err := normAxes(axes, len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	if len(target) != len(ax) {
		return nil, fmt.Errorf("shape %v for axes %v: %w", target, ax, inference.ErrShape)
	}
	tabs := tables(shape)
	st := Strides(shape)
	// Crop and pad are centered, the odd element going to the end.
	for i, a := range ax {
		d, t := shape[a], target[i]
		off := (t - d) / 2
		if t < d {
			off = -((d - t) / 2)
		}
		tabs[a] = axisTable(t, func(o int) int {
			if j := o - off; j >= 0 && j < d {
				return j * st[a]
			}
			return -1
		})
	}
	y, err := takeTables(x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

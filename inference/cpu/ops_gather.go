package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Indexing operators: Gather, GatherElements, GatherND and Compress read
// the input at given indices; Scatter, ScatterElements, ScatterND and
// TensorScatter write updates into a copy of it.

func init() {
	register("Gather", gaGather)
	register("GatherElements", gaGatherElements)
	register("GatherND", gaGatherND)
	register("Scatter", gaScatterElements)
	register("ScatterElements", gaScatterElements)
	register("ScatterND", gaScatterND)
	register("TensorScatter", gaTensorScatter)
	register("Compress", gaCompress)
}

// gaIndex maps an index in [-dim, dim) to [0, dim).
func gaIndex(i int64, dim int, what string) (int, error) {
	if i < -int64(dim) || i >= int64(dim) {
		return 0, fmt.Errorf("%s %d out of range for dimension %d: %w", what, i, dim, inference.ErrShape)
	}
	if i < 0 {
		i += int64(dim)
	}
	return int(i), nil
}

func gaGather(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	shape := x.Shape()
	axis, err := NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	idx, err := Int64s(ind)
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	st := Strides(shape)
	tabs := tables(shape)
	tabs[axis] = make([]int, len(idx))
	for i, v := range idx {
		k, err := gaIndex(v, shape[axis], "index")
		if err != nil {
			return nil, fmt.Errorf("data %v, axis %d: %w", x, axis, err)
		}
		tabs[axis][i] = k * st[axis]
	}
	y, err := takeTables(x, tabs, inference.Tensor{})
	if err != nil {
		return nil, err
	}
	y, err = viewAs(y, slices.Concat(shape[:axis], ind.Shape(), shape[axis+1:]))
	return []inference.Tensor{y}, err
}

// gaElementOffsets returns, for each element of indices (same rank as
// data, no larger off axis), the offset in data of the element whose
// coordinates are the index's own with the axis coordinate replaced by the
// index value: GatherElements and ScatterElements addressing.
func gaElementOffsets(data []int, ind inference.Tensor, axis int) ([]int, error) {
	is := ind.Shape()
	if len(is) != len(data) {
		return nil, fmt.Errorf("indices %v and data %v differ in rank: %w", ind, data, inference.ErrShape)
	}
	for j := range is {
		if j != axis && is[j] > data[j] {
			return nil, fmt.Errorf("indices %v exceed data %v on axis %d: %w", ind, data, j, inference.ErrShape)
		}
	}
	idx, err := Int64s(ind)
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	st := Strides(data)
	offs := make([]int, len(idx))
	err = eachIndex(is, func(c []int, pos int) error {
		k, err := gaIndex(idx[pos], data[axis], "index")
		if err != nil {
			return fmt.Errorf("indices %v at %v: %w", ind, c, err)
		}
		o := k * st[axis]
		for j, v := range c {
			if j != axis {
				o += v * st[j]
			}
		}
		offs[pos] = o
		return nil
	})
	return offs, err
}

func gaGatherElements(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	axis, err := NormAxis(n.Int("axis", 0), x.Rank())
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	offs, err := gaElementOffsets(x.Shape(), ind, axis)
	if err != nil {
		return nil, err
	}
	y, err := take(x, ind.Shape(), offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

// gaNDOffsets resolves GatherND/ScatterND indices: indices of shape
// [..., m] address slices data[b..., i_0, …, i_{m-1}, :] where the first
// batchDims axes of indices and data agree. It returns the offset of each
// slice, the slice shape (data's axes after the addressed ones) and the
// index shape (indices' without the last axis).
func gaNDOffsets(data []int, ind inference.Tensor, batchDims int) (offs, slice, lead []int, err error) {
	is := ind.Shape()
	q, r := len(is), len(data)
	if q < 1 || batchDims < 0 || batchDims >= min(q, r) {
		return nil, nil, nil, fmt.Errorf("indices %v, data %v, batch_dims %d: %w", ind, data, batchDims, inference.ErrShape)
	}
	m := is[q-1]
	if m < 1 || m > r-batchDims || !slices.Equal(is[:batchDims], data[:batchDims]) {
		return nil, nil, nil, fmt.Errorf("indices %v do not address data %v with batch_dims %d: %w", ind, data, batchDims, inference.ErrShape)
	}
	idx, err := Int64s(ind)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("indices: %w", err)
	}
	st := Strides(data)
	lead = is[:q-1]
	count := product(lead)
	perBatch := product(is[batchDims : q-1])
	batchSize := product(data[batchDims:])
	offs = make([]int, count)
	for p := range count {
		o := 0
		if perBatch > 0 {
			o = p / perBatch * batchSize
		}
		for k := range m {
			a := batchDims + k
			v, err := gaIndex(idx[p*m+k], data[a], "index")
			if err != nil {
				return nil, nil, nil, fmt.Errorf("indices %v, tuple %d, data %v axis %d: %w", ind, p, data, a, err)
			}
			o += v * st[a]
		}
		offs[p] = o
	}
	return offs, data[batchDims+m:], lead, nil
}

func gaGatherND(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	starts, slice, lead, err := gaNDOffsets(x.Shape(), ind, int(n.Int("batch_dims", 0)))
	if err != nil {
		return nil, err
	}
	inner := product(slice)
	offs := make([]int, 0, len(starts)*inner)
	for _, s := range starts {
		for t := range inner {
			offs = append(offs, s+t)
		}
	}
	y, err := take(x, slices.Concat(lead, slice), offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gaScatterElements(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	x, ind, upd := in[0], in[1], in[2]
	axis, err := NormAxis(n.Int("axis", 0), x.Rank())
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	if !slices.Equal(ind.Shape(), upd.Shape()) {
		return nil, fmt.Errorf("indices %v and updates %v differ in shape: %w", ind, upd, inference.ErrShape)
	}
	offs, err := gaElementOffsets(x.Shape(), ind, axis)
	if err != nil {
		return nil, err
	}
	y, err := gaScatter(n, x, offs, 1, upd)
	return []inference.Tensor{y}, err
}

func gaScatterND(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	x, ind, upd := in[0], in[1], in[2]
	starts, slice, lead, err := gaNDOffsets(x.Shape(), ind, 0)
	if err != nil {
		return nil, err
	}
	if want := slices.Concat(lead, slice); !slices.Equal(upd.Shape(), want) {
		return nil, fmt.Errorf("updates %v for indices %v into data %v: want shape %v: %w", upd, ind, x, want, inference.ErrShape)
	}
	y, err := gaScatter(n, x, starts, product(slice), upd)
	return []inference.Tensor{y}, err
}

// gaScatter returns a copy of x where the block of size elements at
// offs[i] is combined, by the node's reduction, with updates block i.
func gaScatter(n Node, x inference.Tensor, offs []int, size int, upd inference.Tensor) (inference.Tensor, error) {
	if upd.DType() != x.DType() {
		return inference.Tensor{}, fmt.Errorf("updates %v for data %v: %w", upd, x, inference.ErrType)
	}
	red := n.Str("reduction", "none")
	switch red {
	case "none", "add", "mul", "max", "min":
	default:
		return inference.Tensor{}, Unsupported(n, "reduction %q", red)
	}
	switch x.DType() {
	case inference.Float32:
		return gaScatterOf[float32](x, offs, size, upd, red)
	case inference.Int64:
		return gaScatterOf[int64](x, offs, size, upd, red)
	case inference.Int32:
		return gaScatterOf[int32](x, offs, size, upd, red)
	case inference.Uint8:
		return gaScatterOf[uint8](x, offs, size, upd, red)
	case inference.Bool:
		if red != "none" {
			return inference.Tensor{}, Unsupported(n, "reduction %q on bool", red)
		}
		d, _ := inference.Data[bool](x)
		u, _ := inference.Data[bool](upd)
		out := slices.Clone(d)
		for i, o := range offs {
			copy(out[o:o+size], u[i*size:(i+1)*size])
		}
		return inference.New(x.Shape(), out)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", x, inference.ErrType)
}

func gaScatterOf[T float32 | int64 | int32 | uint8](x inference.Tensor, offs []int, size int, upd inference.Tensor, reduction string) (inference.Tensor, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return inference.Tensor{}, err
	}
	u, err := inference.Data[T](upd)
	if err != nil {
		return inference.Tensor{}, err
	}
	out := slices.Clone(d)
	for i, o := range offs {
		dst, src := out[o:o+size], u[i*size:(i+1)*size]
		switch reduction {
		case "none":
			copy(dst, src)
		case "add":
			for k, v := range src {
				dst[k] += v
			}
		case "mul":
			for k, v := range src {
				dst[k] *= v
			}
		case "max":
			for k, v := range src {
				dst[k] = max(dst[k], v)
			}
		case "min":
			for k, v := range src {
				dst[k] = min(dst[k], v)
			}
		}
	}
	return inference.New(x.Shape(), out)
}

// gaTensorScatter is TensorScatter: a copy of past_cache with update written
// along the sequence axis from write_indices[b] on for batch entry b (0 when
// left out); mode "circular" wraps positions modulo the cache's length,
// "linear" requires them to fit.
func gaTensorScatter(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%d inputs, want 2 or 3 (past_cache, update, write_indices): %w", len(in), inference.ErrBadModel)
	}
	mode := n.Str("mode", "linear")
	if mode != "linear" && mode != "circular" {
		return nil, Unsupported(n, "mode %q", mode)
	}
	past, update := in[0], in[1]
	if past.DType() != update.DType() {
		return nil, fmt.Errorf("past_cache %v and update %v differ in element type: %w", past, update, inference.ErrType)
	}
	shape, ushape := past.Shape(), update.Shape()
	axis, err := NormAxis(n.Int("axis", -2), len(shape))
	if err != nil {
		return nil, err
	}
	if axis == 0 {
		return nil, fmt.Errorf("axis 0 is the batch dimension, not a sequence axis: %w", inference.ErrBadModel)
	}
	ok := len(ushape) == len(shape) && ushape[axis] <= shape[axis]
	for i := range ushape {
		ok = ok && (i == axis || ushape[i] == shape[i])
	}
	if !ok {
		return nil, fmt.Errorf("update %v for past_cache %v, want the same shape but at most %d along axis %d: %w", update, past, shape[axis], axis, inference.ErrShape)
	}
	batch := shape[0]
	starts := make([]int64, batch)
	if w := Arg(in, 2); Present(w) {
		if w.Len() != batch {
			return nil, fmt.Errorf("write_indices %v, want [%d]: %w", w, batch, inference.ErrShape)
		}
		if starts, err = Int64s(w); err != nil {
			return nil, err
		}
	}
	seq, length := ushape[axis], int64(shape[axis])
	// positions[b*seq+s] is where update step s of batch entry b goes.
	positions := make([]int, batch*seq)
	for b, start := range starts {
		if mode == "linear" && (start < 0 || start+int64(seq) > length) {
			return nil, fmt.Errorf("write_indices[%d] = %d with %d steps does not fit %d positions: %w", b, start, seq, length, inference.ErrShape)
		}
		for s := range seq {
			p := start + int64(s)
			if mode == "circular" {
				p = ((p % length) + length) % length
			}
			positions[b*seq+s] = int(p)
		}
	}
	switch past.DType() {
	case inference.Float32:
		return gaScatterSeq[float32](past, update, axis, positions)
	case inference.Int64:
		return gaScatterSeq[int64](past, update, axis, positions)
	case inference.Int32:
		return gaScatterSeq[int32](past, update, axis, positions)
	case inference.Bool:
		return gaScatterSeq[bool](past, update, axis, positions)
	case inference.Uint8:
		return gaScatterSeq[uint8](past, update, axis, positions)
	}
	return nil, Unsupported(n, "element type %v", past.DType())
}

// gaScatterSeq copies past and writes update into it along axis at the
// positions gaTensorScatter computed.
func gaScatterSeq[T inference.Element](past, update inference.Tensor, axis int, positions []int) ([]inference.Tensor, error) {
	shape := past.Shape()
	src, _ := inference.Data[T](past)
	upd, _ := inference.Data[T](update)
	out := slices.Clone(src)
	outer, length, inner := splitAxis(shape, axis)
	seq := update.Shape()[axis]
	perBatch := 1
	if shape[0] > 0 {
		perBatch = outer / shape[0]
	}
	for o := range outer {
		b := o / perBatch
		for s := range seq {
			p := positions[b*seq+s]
			copy(out[(o*length+p)*inner:(o*length+p+1)*inner], upd[(o*seq+s)*inner:(o*seq+s+1)*inner])
		}
	}
	return singleOutput(shape, out)
}

func gaCompress(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	cond, err := Int64s(in[1])
	if err != nil {
		return nil, fmt.Errorf("condition: %w", err)
	}
	if in[1].Rank() != 1 {
		return nil, fmt.Errorf("condition %v is not 1-D: %w", in[1], inference.ErrShape)
	}
	// selected lists the kept indices of a dimension; the condition may be
	// shorter than it (the rest is false).
	selected := func(dim, stride int) ([]int, error) {
		var keep []int
		for i, c := range cond {
			if c == 0 {
				continue
			}
			if i >= dim {
				return nil, fmt.Errorf("condition %v selects index %d of a dimension of %d: %w", in[1], i, dim, inference.ErrShape)
			}
			keep = append(keep, i*stride)
		}
		return keep, nil
	}
	if !n.Has("axis") {
		offs, err := selected(x.Len(), 1)
		if err != nil {
			return nil, err
		}
		y, err := take(x, []int{len(offs)}, offs, inference.Tensor{})
		return []inference.Tensor{y}, err
	}
	shape := x.Shape()
	axis, err := NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	tabs := tables(shape)
	if tabs[axis], err = selected(shape[axis], Strides(shape)[axis]); err != nil {
		return nil, err
	}
	y, err := takeTables(x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
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

// gaGatherPlan is what a Gather node keeps from run to run: the data's
// shape, the axis and its stride, the output's shape, and the tables of
// the take (made on first use), the axis's replaced each run by the one
// the indices give, whose values the plan does not depend on.
type gaGatherPlan struct {
	shape, out   []int
	axis, stride int
	picks        []int // the indices' element count, as limit.Make's shape
	take         *tableTake
}

func gaGather(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	p, err := opsem.Plan(n, in, func() (*gaGatherPlan, error) {
		shape := x.Shape()
		axis, out, err := opsem.GatherShape(n, shape, ind.Shape())
		if err != nil {
			return nil, err
		}
		return &gaGatherPlan{shape: shape, out: out, axis: axis, stride: opsem.Strides(shape)[axis], picks: []int{ind.Len()}}, nil
	})
	if err != nil {
		return nil, err
	}
	var picked []int
	switch ind.DType() {
	case inference.Int64:
		picked, err = gaPick(n.Run, p, x, dataOf[int64](ind))
	case inference.Int32:
		picked, err = gaPick(n.Run, p, x, dataOf[int32](ind))
	default:
		idx, ierr := int64sUnder(n.Run, ind)
		if ierr != nil {
			return nil, fmt.Errorf("indices: %w", ierr)
		}
		picked, err = gaPick(n.Run, p, x, idx)
	}
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
		shape := slices.Clone(p.shape)
		shape[p.axis] = len(picked)
		p.take = newTableTake(tabs, shape)
	}
	p.take.tabs[p.axis] = picked
	outs, err := p.take.output(n, x, p.out)
	p.take.tabs[p.axis] = nil
	return outs, err
}

// gaPick returns, in a buffer from the run's pool, the offset along p's
// axis of each of the indices idx into data x.
func gaPick[I int64 | int32](r *limit.Run, p *gaGatherPlan, x inference.Tensor, idx []I) ([]int, error) {
	picked, err := limit.MakeOverwritten[int](r, p.picks...) // len(idx) elements
	if err != nil {
		return nil, err
	}
	dim := p.shape[p.axis]
	for i, v := range idx {
		k, err := opsem.Index(int64(v), dim)
		if err != nil {
			return nil, fmt.Errorf("data %v, axis %d: %w", x, p.axis, err)
		}
		picked[i] = k * p.stride
	}
	return picked, nil
}

// int64sUnder is opsem.Int64s of t, the copy it makes of t's elements
// unless they are int64 claimed under r first: indices and targets of
// another type are widened, one int64 per element.
func int64sUnder(r *limit.Run, t inference.Tensor) ([]int64, error) {
	if t.DType() != inference.Int64 {
		if _, err := limit.Claim[int64](r, t.Len()); err != nil {
			return nil, err
		}
	}
	return opsem.Int64s(t)
}

// gaElementOffsets returns opsem.ElementOffsets of the indices ind into
// data of shape data along axis: GatherElements and ScatterElements
// addressing. The table, one int per index, is claimed under r.
func gaElementOffsets(r *limit.Run, data []int, ind inference.Tensor, axis int) ([]int, error) {
	idx, err := int64sUnder(r, ind)
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	if _, err := limit.Claim[int](r, len(idx)); err != nil {
		return nil, err
	}
	return opsem.ElementOffsets(data, ind.Shape(), idx, axis)
}

func gaGatherElements(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	axis, err := opsem.GatherAxis(n, x.Rank())
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	offs, err := gaElementOffsets(n.Run, x.Shape(), ind, axis)
	if err != nil {
		return nil, err
	}
	y, err := take(n.Run, x, ind.Shape(), offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

// gaNDOffsets returns opsem.NDOffsets of GatherND or ScatterND indices ind
// into data of shape data. Its table, one int per index tuple of the last
// axis, is claimed under r.
func gaNDOffsets(r *limit.Run, data []int, ind inference.Tensor, batchDims int) (opsem.NDAddress, error) {
	idx, err := int64sUnder(r, ind)
	if err != nil {
		return opsem.NDAddress{}, fmt.Errorf("indices: %w", err)
	}
	tuples := len(idx)
	if q := ind.Rank(); q > 0 && ind.Dim(q-1) > 0 {
		tuples /= ind.Dim(q - 1)
	}
	if _, err := limit.Claim[int](r, tuples); err != nil {
		return opsem.NDAddress{}, err
	}
	return opsem.NDOffsets(data, ind.Shape(), idx, batchDims)
}

// gaSliceSize is the element count of each slice a addresses, 0 when it
// addresses none: a slice of data without elements may count past int.
func gaSliceSize(a opsem.NDAddress) int {
	if len(a.Offsets) == 0 {
		return 0
	}
	return opsem.Count(a.Slice)
}

func gaGatherND(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x, ind := in[0], in[1]
	a, err := gaNDOffsets(n.Run, x.Shape(), ind, opsem.GatherNDBatchDims(n))
	if err != nil {
		return nil, err
	}
	inner := gaSliceSize(a)
	offs, err := limit.Make[int](n.Run, len(a.Offsets), inner)
	if err != nil {
		return nil, err
	}
	for i, s := range a.Offsets {
		for t := range inner {
			offs[i*inner+t] = s + t
		}
	}
	y, err := take(n.Run, x, a.Shape(), offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gaScatterElements(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	x, ind, upd := in[0], in[1], in[2]
	axis, err := opsem.GatherAxis(n, x.Rank())
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", x, err)
	}
	if !slices.Equal(ind.Shape(), upd.Shape()) {
		return nil, fmt.Errorf("indices %v and updates %v differ in shape: %w", ind, upd, inference.ErrShape)
	}
	offs, err := gaElementOffsets(n.Run, x.Shape(), ind, axis)
	if err != nil {
		return nil, err
	}
	y, err := gaScatter(n, x, offs, 1, upd)
	return []inference.Tensor{y}, err
}

func gaScatterND(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	x, ind, upd := in[0], in[1], in[2]
	a, err := gaNDOffsets(n.Run, x.Shape(), ind, 0)
	if err != nil {
		return nil, err
	}
	if want := a.Shape(); !slices.Equal(upd.Shape(), want) {
		return nil, fmt.Errorf("updates %v for indices %v into data %v: want shape %v: %w", upd, ind, x, want, inference.ErrShape)
	}
	y, err := gaScatter(n, x, a.Offsets, gaSliceSize(a), upd)
	return []inference.Tensor{y}, err
}

// gaScatter returns a copy of x where the block of size elements at
// offs[i] is combined, by the node's reduction, with updates block i.
func gaScatter(n opsem.Node, x inference.Tensor, offs []int, size int, upd inference.Tensor) (inference.Tensor, error) {
	if upd.DType() != x.DType() {
		return inference.Tensor{}, fmt.Errorf("updates %v for data %v: %w", upd, x, inference.ErrType)
	}
	red, err := opsem.ScatterReduction(n)
	if err != nil {
		return inference.Tensor{}, err
	}
	switch x.DType() {
	case inference.Float32:
		return gaScatterOf[float32](n.Run, x, offs, size, upd, red)
	case inference.Int64:
		return gaScatterOf[int64](n.Run, x, offs, size, upd, red)
	case inference.Int32:
		return gaScatterOf[int32](n.Run, x, offs, size, upd, red)
	case inference.Uint8:
		return gaScatterOf[uint8](n.Run, x, offs, size, upd, red)
	case inference.Bool:
		if red != "none" {
			return inference.Tensor{}, n.Unsupported("reduction %q on bool", red)
		}
		d, _ := inference.Data[bool](x)
		u, _ := inference.Data[bool](upd)
		out, err := cloneOf(n.Run, d)
		if err != nil {
			return inference.Tensor{}, err
		}
		for i, o := range offs {
			copy(out[o:o+size], u[i*size:(i+1)*size])
		}
		return inference.New(x.Shape(), out)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", x, inference.ErrType)
}

func gaScatterOf[T float32 | int64 | int32 | uint8](r *limit.Run, x inference.Tensor, offs []int, size int, upd inference.Tensor, reduction string) (inference.Tensor, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return inference.Tensor{}, err
	}
	u, err := inference.Data[T](upd)
	if err != nil {
		return inference.Tensor{}, err
	}
	out, err := cloneOf(r, d)
	if err != nil {
		return inference.Tensor{}, err
	}
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
func gaTensorScatter(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%d inputs, want 2 or 3 (past_cache, update, write_indices): %w", len(in), inference.ErrBadModel)
	}
	mode := n.Str("mode", "linear")
	if mode != "linear" && mode != "circular" {
		return nil, n.Unsupported("mode %q", mode)
	}
	past, update := in[0], in[1]
	if past.DType() != update.DType() {
		return nil, fmt.Errorf("past_cache %v and update %v differ in element type: %w", past, update, inference.ErrType)
	}
	shape, ushape := past.Shape(), update.Shape()
	axis, err := opsem.NormAxis(n.Int("axis", -2), len(shape))
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
	starts, err := limit.Make[int64](n.Run, batch) // the batch of an empty cache can be huge
	if err != nil {
		return nil, err
	}
	if w := arg(in, 2); present(w) {
		if w.Len() != batch {
			return nil, fmt.Errorf("write_indices %v, want [%d]: %w", w, batch, inference.ErrShape)
		}
		if starts, err = opsem.Int64s(w); err != nil {
			return nil, err
		}
	}
	seq, length := ushape[axis], int64(shape[axis])
	// positions[b*seq+s] is where update step s of batch entry b goes.
	positions, err := limit.Make[int](n.Run, batch, seq)
	if err != nil {
		return nil, err
	}
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
		return gaScatterSeq[float32](n, past, update, axis, positions)
	case inference.Int64:
		return gaScatterSeq[int64](n, past, update, axis, positions)
	case inference.Int32:
		return gaScatterSeq[int32](n, past, update, axis, positions)
	case inference.Bool:
		return gaScatterSeq[bool](n, past, update, axis, positions)
	case inference.Uint8:
		return gaScatterSeq[uint8](n, past, update, axis, positions)
	}
	return nil, n.Unsupported("element type %v", past.DType())
}

// gaScatterSeq copies past and writes update into it along axis at the
// positions gaTensorScatter computed.
func gaScatterSeq[T inference.Element](n opsem.Node, past, update inference.Tensor, axis int, positions []int) ([]inference.Tensor, error) {
	shape := past.Shape()
	src, _ := inference.Data[T](past)
	upd, _ := inference.Data[T](update)
	out, err := cloneOf(n.Run, src)
	if err != nil {
		return nil, err
	}
	outer, length, inner := opsem.SplitAxis(shape, axis)
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
	return opsem.Single(n, shape, out)
}

func gaCompress(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	cond, err := int64sUnder(n.Run, in[1])
	if err != nil {
		return nil, fmt.Errorf("condition: %w", err)
	}
	if in[1].Rank() != 1 {
		return nil, fmt.Errorf("condition %v is not 1-D: %w", in[1], inference.ErrShape)
	}
	// selected lists the kept indices of a dimension; the condition may be
	// shorter than it (the rest is false).
	selected := func(dim, stride int) ([]int, error) {
		count := 0
		for _, c := range cond {
			if c != 0 {
				count++
			}
		}
		if _, err := limit.Claim[int](n.Run, count); err != nil {
			return nil, err
		}
		keep := make([]int, 0, count)
		for i, c := range cond {
			if c == 0 {
				continue
			}
			if i >= dim {
				return nil, fmt.Errorf("condition %v selects index %d of a dimension of %d: %w", in[1], i, dim, inference.ErrIndexOutOfRange)
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
		y, err := take(n.Run, x, []int{len(offs)}, offs, inference.Tensor{})
		return []inference.Tensor{y}, err
	}
	shape := x.Shape()
	axis, err := opsem.NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	tabs, err := tables(n.Run, shape)
	if err != nil {
		return nil, err
	}
	if tabs[axis], err = selected(shape[axis], opsem.Strides(shape)[axis]); err != nil {
		return nil, err
	}
	y, err := takeTables(n.Run, x, tabs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

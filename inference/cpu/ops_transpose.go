package cpu

import (
	"fmt"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Operators that reorder elements: Transpose, DepthToSpace, SpaceToDepth
// (the permutations opsem gives) and ReverseSequence. Each output element
// is copied from the input offset that index tables give (take.go).

func init() {
	register("Transpose", tpTranspose)
	register("DepthToSpace", tpDepthToSpace)
	register("SpaceToDepth", tpSpaceToDepth)
	register("ReverseSequence", tpReverseSequence)
}

func tpTranspose(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return tpRearrange(n, in, opsem.Transpose)
}

func tpDepthToSpace(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return tpRearrange(n, in, opsem.DepthToSpace)
}

func tpSpaceToDepth(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return tpRearrange(n, in, opsem.SpaceToDepth)
}

// tpRearrange runs an operator whose output is a permutation of its input,
// as rule gives it. The permutation and the walk that carries it out are
// planned once for the input's type and shape (opsem.Plan).
func tpRearrange(n opsem.Node, in []inference.Tensor, rule func(opsem.Node, []int) (opsem.Permutation, error)) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	p, err := opsem.Plan(n, in, func() (*tpPlan, error) {
		p, err := rule(n, x.Shape())
		if err != nil {
			return nil, err
		}
		w, err := newTpPermuter(x, p.View, p.Perm)
		if err != nil {
			return nil, err
		}
		return &tpPlan{out: p.Out, permuter: w}, nil
	})
	if err != nil {
		return nil, err
	}
	if p.permuter == nil { // no elements: the permuted shape may be too large for tables
		y, err := inference.Zeros(x.DType(), p.out)
		return []inference.Tensor{y}, err
	}
	return p.permuter.permute(n, x, p.out)
}

// tpPlan is what tpRearrange keeps for one input type and shape: the
// output's shape and the permutation's walk (nil for an input without
// elements).
type tpPlan struct {
	out      []int
	permuter tpPermuter
}

// A tpPermuter copies an input of one element type and shape into its
// permutation.
type tpPermuter interface {
	// permute returns x permuted, as n's one output of the given shape
	// (the permuted shape's element count), in a buffer of n.Run.
	permute(n opsem.Node, x inference.Tensor, out []int) ([]inference.Tensor, error)
	// shape is the permuted shape.
	shape() []int
}

// tpPermute returns x, read with the given shape (same element count),
// with its axes permuted: output axis j is input axis perm[j].
func tpPermute(r *limit.Run, x inference.Tensor, shape []int, perm []int) (inference.Tensor, error) {
	w, err := newTpPermuter(x, shape, perm)
	if err != nil {
		return inference.Tensor{}, err
	}
	if w == nil { // its other dimensions may be too large for tables
		out := make([]int, len(perm))
		for j, p := range perm {
			out[j] = shape[p]
		}
		return inference.Zeros(x.DType(), out)
	}
	y, err := w.permute(opsem.Node{Run: r}, x, w.shape())
	if err != nil {
		return inference.Tensor{}, err
	}
	return y[0], nil
}

// newTpPermuter plans permuting x, read with shape, by perm (tpPermute's
// arguments); it is nil when x has no elements.
func newTpPermuter(x inference.Tensor, shape, perm []int) (tpPermuter, error) {
	if x.Len() == 0 {
		return nil, nil
	}
	switch x.DType() {
	case inference.Float32:
		return newTpWalk[float32](shape, perm), nil
	case inference.Int64:
		return newTpWalk[int64](shape, perm), nil
	case inference.Int32:
		return newTpWalk[int32](shape, perm), nil
	case inference.Bool:
		return newTpWalk[bool](shape, perm), nil
	case inference.Uint8:
		return newTpWalk[uint8](shape, perm), nil
	}
	return nil, fmt.Errorf("%v: %w", x, inference.ErrType)
}

// tpWalk copies its input into the permuted shape out. The output's axes
// of size 1 are dropped and neighbours that stay neighbours in the input
// merged (stridedWalker); the innermost run is copied whole when it is
// contiguous in the input (the heads of attention, [B,S,H,D] to
// [B,H,S,D]), else element by element at its stride. src and y are the
// operands of the permute under way, which run (bound to body once) reads.
type tpWalk[T inference.Element] struct {
	out         []int
	walker      *stridedWalker
	inner, step int
	src, y      []T
	body        func(o int, at []int)

	// A walk large enough splits among goroutines (parallelParts) into
	// parts of whole runs, each part with an odometer of its own: odo[c]
	// is part c's offset, then its odometer. chunks runs parts, bound
	// once.
	runs, parts int
	odo         [][]int
	chunks      func(lo, hi int)

	// A float32 permutation whose last two merged axes swap (NCHW to
	// NHWC and back, [B, S, D] to [B, D, S]) is a batch of 2-D transposes
	// of rows × cols, the input's row stride lds: outer lists each one's
	// input offset, and transpose2D moves 8×8 blocks. nil otherwise. They
	// split among goroutines by blocks of tpRowBlock rows (rowBlocks a
	// transpose), run by blocks, bound once, from src32 into y32.
	outer           []int
	rows, cols, lds int
	rowBlocks       int
	src32, y32      []float32
	blocks          func(lo, hi int)
}

// tpCopyCost is the work per element parallelFor weighs for a permute:
// one, so that permutes split from 256K elements. At ewVecCost (from 16K)
// the small permutes of attention and of ShuffleNet's channel shuffle at
// batch 1 took 7–10% longer on two cores than on one: the split's hand-off
// and the next node reading half its input from the other core's cache
// cost more than half the copy saves.
const tpCopyCost = 1

// tpRowBlock is the rows of a 2-D transpose a goroutine takes at a time:
// whole 8×8 blocks.
const tpRowBlock = 64

// tpTransposeOuter bounds the 2-D transposes a tpWalk lists.
const tpTransposeOuter = 1 << 16

func newTpWalk[T inference.Element](shape, perm []int) *tpWalk[T] {
	out := make([]int, len(perm))
	for j, p := range perm {
		out[j] = shape[p]
	}
	st := opsem.Strides(shape)
	steps := make([]int, len(perm))
	for j, p := range perm {
		steps[j] = st[p]
	}
	w := &tpWalk[T]{out: out, walker: newStridedWalker(out, [][]int{steps})}
	w.inner, w.step = innerRun(w.walker.dims, w.walker.strides, 0)
	w.body, w.chunks, w.blocks = w.run, w.chunk, w.rowsBlocks
	w.planTranspose()
	return w
}

// planTranspose sets w.outer, rows, cols and lds where w's merged axes end
// in a swap of two axes of at least 8 each (for float32).
func (w *tpWalk[T]) planTranspose() {
	var zero T
	if _, ok := any(zero).(float32); !ok {
		return
	}
	dims, st := w.walker.dims, w.walker.strides[0]
	k := len(dims) - 1
	if k < 1 || st[k] == 1 || st[k-1] != 1 || dims[k] < 8 || dims[k-1] < 8 {
		return
	}
	n := 1
	for _, d := range dims[:k-1] {
		n *= d
		if n > tpTransposeOuter {
			return
		}
	}
	w.rows, w.cols, w.lds = dims[k-1], dims[k], st[k]
	w.rowBlocks = (w.rows + tpRowBlock - 1) / tpRowBlock
	w.outer = make([]int, n)
	for o := range w.outer {
		at, rest := 0, o
		for d := k - 2; d >= 0; d-- {
			at += rest % dims[d] * st[d]
			rest /= dims[d]
		}
		w.outer[o] = at
	}
}

func (w *tpWalk[T]) shape() []int { return w.out }

func (w *tpWalk[T]) permute(n opsem.Node, x inference.Tensor, out []int) ([]inference.Tensor, error) {
	y, err := limit.MakeOverwritten[T](n.Run, w.out...)
	if err != nil {
		return nil, err
	}
	w.src, w.y = dataOf[T](x), y
	switch {
	case w.outer != nil:
		// T is float32 (planTranspose): the same memory, without an
		// interface conversion, which would allocate.
		w.src32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w.src))), len(w.src))
		w.y32 = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(y))), len(y))
		parallelFor(len(w.outer)*w.rowBlocks, min(w.rows, tpRowBlock)*w.cols*tpCopyCost, w.blocks)
		w.src32, w.y32 = nil, nil
	case len(w.walker.dims) > 0 && len(y) > 0:
		w.runs = len(y) / w.inner
		w.parts = parallelParts(w.runs, w.inner*tpCopyCost)
		if w.parts == 1 {
			w.walker.walk(len(y), w.body)
			break
		}
		for len(w.odo) < w.parts {
			w.odo = append(w.odo, make([]int, len(w.walker.dims))) // the offset, then len(dims)−1 digits
		}
		parallelSplit(w.parts, w.parts, w.chunks)
	default:
		w.walker.walk(len(y), w.body)
	}
	w.src, w.y = nil, nil // not to hold the buffers until the next run
	return opsem.Single(n, out, y)
}

// chunk copies the runs of parts lo…hi−1 of the walk.
func (w *tpWalk[T]) chunk(lo, hi int) {
	for c := lo; c < hi; c++ {
		at, idx := w.odo[c][:1], w.odo[c][1:]
		r0, r1 := w.runs*c/w.parts, w.runs*(c+1)/w.parts
		w.walker.start(r0, at, idx)
		for r := r0; r < r1; r++ {
			w.run(r*w.inner, at)
			w.walker.next(at, idx)
		}
	}
}

// rowsBlocks runs blocks lo…hi−1 of the 2-D transposes: block u is rows
// of transpose u / rowBlocks.
func (w *tpWalk[T]) rowsBlocks(lo, hi int) {
	size := w.rows * w.cols
	for u := lo; u < hi; u++ {
		o, i0 := u/w.rowBlocks, u%w.rowBlocks*tpRowBlock
		i1 := min(w.rows, i0+tpRowBlock)
		transpose2D(w.y32[o*size+i0*w.cols:(o+1)*size], w.cols, w.src32[w.outer[o]+i0:], i1-i0, w.cols, w.lds)
	}
}

// run copies the run of output elements at o from src at at[0].
func (w *tpWalk[T]) run(o int, at []int) {
	inner, step, src, y := w.inner, w.step, w.src, w.y
	if step == 1 {
		copy(y[o:o+inner], src[at[0]:at[0]+inner])
		return
	}
	row := y[o : o+inner]
	for i := range row {
		row[i] = src[at[0]+i*step]
	}
}

func tpReverseSequence(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 2)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	timeAxis, batchAxis := int(n.Int("time_axis", 0)), int(n.Int("batch_axis", 1))
	if len(shape) < 2 || timeAxis < 0 || timeAxis > 1 || batchAxis < 0 || batchAxis > 1 || timeAxis == batchAxis {
		return nil, fmt.Errorf("input %v with time_axis %d and batch_axis %d: %w", x, timeAxis, batchAxis, inference.ErrShape)
	}
	lens, err := opsem.Int64s(in[1])
	if err != nil {
		return nil, fmt.Errorf("sequence_lens: %w", err)
	}
	if len(lens) != shape[batchAxis] {
		return nil, fmt.Errorf("sequence_lens %v for batch of %d: %w", in[1], shape[batchAxis], inference.ErrShape)
	}
	for _, l := range lens {
		if l < 0 || l > int64(shape[timeAxis]) {
			return nil, fmt.Errorf("sequence_lens %v: length %d outside [0, %d]: %w", lens, l, shape[timeAxis], inference.ErrShape)
		}
	}
	st := opsem.Strides(shape)
	offs, err := limit.Make[int](n.Run, x.Len())
	if err != nil {
		return nil, err
	}
	err = eachIndex(shape, func(c []int, pos int) error {
		t, l := c[timeAxis], int(lens[c[batchAxis]])
		if t < l {
			t = l - 1 - t
		}
		offs[pos] = pos + (t-c[timeAxis])*st[timeAxis]
		return nil
	})
	if err != nil {
		return nil, err
	}
	y, err := take(n.Run, x, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

// transposeGo sets dst[i·ldd + j] = src[j·lds + i] for i in [i0, i1),
// j in [j0, j1).
func transposeGo(dst, src []float32, i0, i1, j0, j1, ldd, lds int) {
	for i := i0; i < i1; i++ {
		row := dst[i*ldd : i*ldd+j1]
		for j := j0; j < j1; j++ {
			row[j] = src[j*lds+i]
		}
	}
}

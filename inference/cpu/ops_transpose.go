package cpu

import (
	"fmt"

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
// as rule gives it.
func tpRearrange(n opsem.Node, in []inference.Tensor, rule func(opsem.Node, []int) (opsem.Permutation, error)) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	p, err := rule(n, x.Shape())
	if err != nil {
		return nil, err
	}
	y, err := tpPermute(n.Run, x, p.View, p.Perm)
	if err != nil {
		return nil, err
	}
	y, err = viewAs(y, p.Out)
	return []inference.Tensor{y}, err
}

// tpPermute returns x, read with the given shape (same element count),
// with its axes permuted: output axis j is input axis perm[j].
func tpPermute(r *limit.Run, x inference.Tensor, shape []int, perm []int) (inference.Tensor, error) {
	out := make([]int, len(perm))
	for j, p := range perm {
		out[j] = shape[p]
	}
	if x.Len() == 0 { // its other dimensions may be too large for tables
		return inference.Zeros(x.DType(), out)
	}
	switch x.DType() {
	case inference.Float32:
		return tpPermuteOf[float32](r, x, shape, perm, out)
	case inference.Int64:
		return tpPermuteOf[int64](r, x, shape, perm, out)
	case inference.Int32:
		return tpPermuteOf[int32](r, x, shape, perm, out)
	case inference.Bool:
		return tpPermuteOf[bool](r, x, shape, perm, out)
	case inference.Uint8:
		return tpPermuteOf[uint8](r, x, shape, perm, out)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", x, inference.ErrType)
}

// tpPermuteOf copies x, read with shape, into the permuted shape out. The
// output's axes of size 1 are dropped and neighbours that stay neighbours
// in the input merged; the innermost run is copied whole when it is
// contiguous in the input (the heads of attention, [B,S,H,D] to
// [B,H,S,D]), else element by element at its stride.
func tpPermuteOf[T inference.Element](r *limit.Run, x inference.Tensor, shape, perm, out []int) (inference.Tensor, error) {
	src, _ := inference.Data[T](x)
	y, err := limit.MakeOverwritten[T](r, out...)
	if err != nil {
		return inference.Tensor{}, err
	}
	st := opsem.Strides(shape)
	steps := make([]int, len(perm))
	for j, p := range perm {
		steps[j] = st[p]
	}
	dims, strides := mergeDims(out, [][]int{steps})
	inner, step := innerRun(dims, strides, 0)
	stridedWalk(len(y), dims, strides, func(o int, at []int) {
		if step == 1 {
			copy(y[o:o+inner], src[at[0]:at[0]+inner])
			return
		}
		row := y[o : o+inner]
		for i := range row {
			row[i] = src[at[0]+i*step]
		}
	})
	return inference.New(out, y)
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

package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// Operators that reorder elements: Transpose, DepthToSpace, SpaceToDepth
// and ReverseSequence. Each output element is copied from the input offset
// that index tables give (take.go).

func init() {
	register("Transpose", tpTranspose)
	register("DepthToSpace", tpDepthToSpace)
	register("SpaceToDepth", tpSpaceToDepth)
	register("ReverseSequence", tpReverseSequence)
}

func tpTranspose(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	rank := x.Rank()
	perm := n.Ints("perm", nil)
	if len(perm) == 0 {
		for i := rank - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != rank {
		return nil, fmt.Errorf("perm %v for %v: %w", perm, x, inference.ErrShape)
	}
	p, err := normAxes(perm, rank)
	if err != nil {
		return nil, fmt.Errorf("perm %v for %v: %w", perm, x, err)
	}
	y, err := tpPermute(x, x.Shape(), p)
	return []inference.Tensor{y}, err
}

// tpPermute returns x, read with the given shape (same element count),
// with its axes permuted: output axis j is input axis perm[j].
func tpPermute(x inference.Tensor, shape []int, perm []int) (inference.Tensor, error) {
	st := Strides(shape)
	tabs := make([][]int, len(perm))
	for j, p := range perm {
		tabs[j] = axisTable(shape[p], func(i int) int { return i * st[p] })
	}
	return takeTables(x, tabs, inference.Tensor{})
}

func tpDepthToSpace(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	b := int(n.Int("blocksize", 0))
	s := x.Shape()
	if len(s) != 4 || b <= 0 || s[1]%(b*b) != 0 {
		return nil, fmt.Errorf("input %v with blocksize %d: want [N, C, H, W] with C divisible by blocksize²: %w", x, b, inference.ErrShape)
	}
	c := s[1] / (b * b)
	var view []int
	var perm []int
	switch mode := n.Str("mode", "DCR"); mode {
	case "DCR":
		view, perm = []int{s[0], b, b, c, s[2], s[3]}, []int{0, 3, 4, 1, 5, 2}
	case "CRD":
		view, perm = []int{s[0], c, b, b, s[2], s[3]}, []int{0, 1, 4, 2, 5, 3}
	default:
		return nil, Unsupported(n, "mode %q", mode)
	}
	y, err := tpPermute(x, view, perm)
	if err != nil {
		return nil, err
	}
	y, err = viewAs(y, []int{s[0], c, s[2] * b, s[3] * b})
	return []inference.Tensor{y}, err
}

func tpSpaceToDepth(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	b := int(n.Int("blocksize", 0))
	s := x.Shape()
	if len(s) != 4 || b <= 0 || s[2]%b != 0 || s[3]%b != 0 {
		return nil, fmt.Errorf("input %v with blocksize %d: want [N, C, H, W] with H and W divisible by blocksize: %w", x, b, inference.ErrShape)
	}
	view := []int{s[0], s[1], s[2] / b, b, s[3] / b, b}
	y, err := tpPermute(x, view, []int{0, 3, 5, 1, 2, 4})
	if err != nil {
		return nil, err
	}
	y, err = viewAs(y, []int{s[0], s[1] * b * b, s[2] / b, s[3] / b})
	return []inference.Tensor{y}, err
}

func tpReverseSequence(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
	lens, err := Int64s(in[1])
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
	st := Strides(shape)
	offs := make([]int, x.Len())
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
	y, err := take(x, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

package opsem

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
)

// Permutation is a rearrangement of a tensor's elements as a transpose: the
// input, read with shape View (same element count), has its axes permuted
// (output axis j is view axis Perm[j]), and the result has shape Out.
type Permutation struct {
	View, Perm, Out []int
}

// Transpose returns Transpose's permutation of an input of shape shape: the
// attribute perm, by default the axes reversed.
func Transpose(n Node, shape []int) (Permutation, error) {
	rank := len(shape)
	perm := n.Ints("perm", nil)
	if len(perm) == 0 {
		for i := rank - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != rank {
		return Permutation{}, fmt.Errorf("perm %v for input %v: %w", perm, shape, inference.ErrShape)
	}
	p, err := NormAxes(perm, rank)
	if err != nil {
		return Permutation{}, fmt.Errorf("perm %v for input %v: %w", perm, shape, err)
	}
	out := make([]int, rank)
	for j, a := range p {
		out[j] = shape[a]
	}
	return Permutation{View: shape, Perm: p, Out: out}, nil
}

// DepthToSpace returns DepthToSpace's rearrangement of [N, C, H, W] with
// blocksize b: viewed as [N, b, b, C/b², H, W] (mode DCR, the default) or
// [N, C/b², b, b, H, W] (CRD) and permuted into [N, C/b², H·b, W·b]; b
// is in [1, 2³¹) and the output's dimensions within int.
func DepthToSpace(n Node, shape []int) (Permutation, error) {
	b := int(n.Int("blocksize", 0))
	s := shape
	if len(s) != 4 || b <= 0 || b > math.MaxInt32 || s[1]%(b*b) != 0 {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: want [N, C, H, W] with C divisible by blocksize²: %w", shape, b, inference.ErrShape)
	}
	if max(s[2], s[3]) > math.MaxInt/b {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: output dimensions overflow: %w", shape, b, inference.ErrShape)
	}
	c := s[1] / (b * b)
	out := []int{s[0], c, s[2] * b, s[3] * b}
	switch mode := n.Str("mode", "DCR"); mode {
	case "DCR":
		return Permutation{View: []int{s[0], b, b, c, s[2], s[3]}, Perm: []int{0, 3, 4, 1, 5, 2}, Out: out}, nil
	case "CRD":
		return Permutation{View: []int{s[0], c, b, b, s[2], s[3]}, Perm: []int{0, 1, 4, 2, 5, 3}, Out: out}, nil
	default:
		return Permutation{}, n.Unsupported("mode %q", mode)
	}
}

// SpaceToDepth returns SpaceToDepth's rearrangement of [N, C, H, W] with
// blocksize b: viewed as [N, C, H/b, b, W/b, b] and permuted into
// [N, C·b², H/b, W/b]; b is in [1, 2³¹) and the output's dimensions
// within int.
func SpaceToDepth(n Node, shape []int) (Permutation, error) {
	b := int(n.Int("blocksize", 0))
	s := shape
	if len(s) != 4 || b <= 0 || b > math.MaxInt32 || s[2]%b != 0 || s[3]%b != 0 {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: want [N, C, H, W] with H and W divisible by blocksize: %w", shape, b, inference.ErrShape)
	}
	if s[1] > math.MaxInt/(b*b) {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: output dimensions overflow: %w", shape, b, inference.ErrShape)
	}
	return Permutation{
		View: []int{s[0], s[1], s[2] / b, b, s[3] / b, b},
		Perm: []int{0, 3, 5, 1, 2, 4},
		Out:  []int{s[0], s[1] * b * b, s[2] / b, s[3] / b},
	}, nil
}

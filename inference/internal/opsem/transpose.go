package opsem

import (
	"fmt"

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
	b, err := blocksize(n, shape)
	if err != nil {
		return Permutation{}, err
	}
	s, bb := shape, int64(b)*int64(b)
	if int64(s[1])%bb != 0 {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: want C divisible by blocksize²: %w", shape, b, inference.ErrShape)
	}
	c := int(int64(s[1]) / bb)
	var ck checked
	out := []int{s[0], c, ck.toInt(ck.mul(int64(s[2]), int64(b))), ck.toInt(ck.mul(int64(s[3]), int64(b)))}
	if ck.overflow {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: H·blocksize or W·blocksize overflows: %w", shape, b, inference.ErrShape)
	}
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
	b, err := blocksize(n, shape)
	if err != nil {
		return Permutation{}, err
	}
	s := shape
	if s[2]%b != 0 || s[3]%b != 0 {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: want H and W divisible by blocksize: %w", shape, b, inference.ErrShape)
	}
	var c checked
	channels := c.toInt(c.mul(int64(s[1]), int64(b)*int64(b)))
	if c.overflow {
		return Permutation{}, fmt.Errorf("input %v with blocksize %d: C·blocksize² overflows: %w", shape, b, inference.ErrShape)
	}
	return Permutation{
		View: []int{s[0], s[1], s[2] / b, b, s[3] / b, b},
		Perm: []int{0, 3, 5, 1, 2, 4},
		Out:  []int{s[0], channels, s[2] / b, s[3] / b},
	}, nil
}

// blocksize is DepthToSpace's and SpaceToDepth's blocksize (attribute,
// required) for an input of shape shape, which must be [N, C, H, W]: in
// [1, 2³¹), so that its square is an int64.
func blocksize(n Node, shape []int) (int, error) {
	b := n.Int("blocksize", 0)
	if len(shape) != 4 || b < 1 || b > maxDim {
		return 0, fmt.Errorf("input %v with blocksize %d: want [N, C, H, W] and blocksize in [1, 2³¹): %w", shape, b, inference.ErrShape)
	}
	return int(b), nil
}

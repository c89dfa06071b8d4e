package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// BroadcastShape returns the shape that numpy-style (multidirectional)
// broadcasting gives shapes: aligned at the right, each dimension equal to
// the others or 1. The result must count within int as a tensor's shape
// (inference.NumElements): the dimensions of shapes with no elements need
// not.
func BroadcastShape(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast: %w", shapes, inference.ErrShape)
			}
		}
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, fmt.Errorf("shapes %v broadcast: %w", shapes, err)
	}
	return out, nil
}

// BroadcastStrides returns the element strides of a row-major tensor of
// shape in, read along the dimensions of out as broadcasting reads it:
// aligned at the right, 0 where in has size 1 (or lacks the dimension).
// It fails when in does not broadcast to out.
func BroadcastStrides(in, out []int) ([]int, error) {
	if len(in) > len(out) {
		return nil, fmt.Errorf("shape %v does not broadcast to %v: %w", in, out, inference.ErrShape)
	}
	s := make([]int, len(out))
	st := Strides(in)
	for k := range in {
		o := len(out) - len(in) + k
		switch {
		case in[k] == out[o]:
			if in[k] != 1 {
				s[o] = st[k]
			}
		case in[k] != 1:
			return nil, fmt.Errorf("shape %v does not broadcast to %v: %w", in, out, inference.ErrShape)
		}
	}
	return s, nil
}

// BroadcastOffsets returns, for each element of a tensor of shape out in
// row-major order, the offset of the element of a tensor of shape in that
// broadcasting maps to it. in must broadcast to out.
func BroadcastOffsets(in, out []int) []int {
	offs := make([]int, Count(out))
	if len(offs) == 0 {
		return offs
	}
	if slices.Equal(in, out) {
		for i := range offs {
			offs[i] = i
		}
		return offs
	}
	st, err := BroadcastStrides(in, out)
	if err != nil {
		panic("opsem: BroadcastOffsets: " + err.Error())
	}
	StridedOffsets(offs, st, out, make([]int, len(out)))
	return offs
}

// StridedOffsets fills offs, which has an entry for each element of a
// tensor of shape out, with the offsets a walk over out in row-major order
// reaches stepping by st along each dimension: BroadcastOffsets with the
// strides of BroadcastStrides. idx, with an entry per dimension of out, is
// its odometer, so that a caller that keeps st and idx (a kernel's plan)
// fills a table without allocating.
func StridedOffsets(offs, st, out, idx []int) {
	rank := len(out)
	clear(idx)
	off := 0
	for i := range offs {
		offs[i] = off
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < out[d] {
				break
			}
			off -= st[d] * idx[d]
			idx[d] = 0
		}
	}
}

// LegacyBroadcast returns the shape b takes in a binary operator of
// opset < 7 (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less):
// those broadcast only with broadcast=1, and then only b to a's shape, b's
// dimensions aligned with a's starting at axis (default: aligned at the
// right), or b a single element (returned as a scalar); with broadcast=0 the shapes must be
// equal. From opset 7 on it returns b unchanged: numpy broadcasting.
func LegacyBroadcast(n Node, a, b []int) ([]int, error) {
	if n.Opset >= 7 {
		return b, nil
	}
	if n.Int("broadcast", 0) == 0 {
		if !slices.Equal(a, b) {
			return nil, fmt.Errorf("input shapes %v and %v differ and broadcast is 0: %w", a, b, inference.ErrShape)
		}
		return b, nil
	}
	if Count(b) == 1 {
		return []int{}, nil // a scalar
	}
	axis := int64(len(a) - len(b))
	if n.Has("axis") {
		if axis = n.Int("axis", 0); axis < 0 {
			axis += int64(len(a))
		}
	}
	if axis < 0 || axis > int64(len(a)-len(b)) {
		return nil, fmt.Errorf("input 1 of shape %v does not fit input 0 of shape %v at axis %d: %w", b, a, axis, inference.ErrShape)
	}
	aligned := make([]int, len(a))
	for i := range aligned {
		aligned[i] = 1
	}
	copy(aligned[axis:], b)
	if out, err := BroadcastShape(a, aligned); err != nil || !slices.Equal(out, a) {
		return nil, fmt.Errorf("input 1 of shape %v does not broadcast to input 0 of shape %v at axis %d: %w", b, a, axis, inference.ErrShape)
	}
	return aligned, nil
}

// PReluSlope returns the shape PRelu's slope takes against an input of
// shape x: before opset 7 a 1-D slope as long as x's dimension 1 is per
// channel ([C, 1, …, 1]); otherwise the slope broadcasts as it is. The
// slope must broadcast to x's shape (unidirectionally).
func PReluSlope(n Node, x, slope []int) ([]int, error) {
	s := slope
	if n.Opset < 7 && len(slope) == 1 && len(x) >= 2 && slope[0] == x[1] && slope[0] != 1 {
		s = make([]int, len(x)-1)
		for i := range s {
			s[i] = 1
		}
		s[0] = x[1]
	}
	if out, err := BroadcastShape(x, s); err != nil || !slices.Equal(out, x) {
		return nil, fmt.Errorf("slope of shape %v does not broadcast to input shape %v: %w", slope, x, inference.ErrShape)
	}
	return s, nil
}

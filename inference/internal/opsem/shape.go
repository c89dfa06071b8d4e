package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Strides returns the row-major strides of shape, in elements: stride[i]
// = ∏ shape[i+1:], or 0 where that product overflows, which only a shape
// with no elements (a zero dimension ahead of the huge ones) allows.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		if d := shape[i]; d > 0 && acc > math.MaxInt/d {
			acc = 0
		} else {
			acc *= d
		}
	}
	return s
}

// Count is the element count of dims, a part of a shape that is already
// known to be valid (a tensor's, or one that inference.NumElements has
// checked): ∏ dims, 1 for none. A part whose product overflows int, such
// as [2⁴⁰, 2⁴⁰] of [0, 2⁴⁰, 2⁴⁰], belongs to a shape with no elements, and
// counts 0: nothing iterates over it. Shapes from attributes or operands
// are counted with inference.NumElements, which fails on overflow.
func Count(dims []int) int {
	if slices.Contains(dims, 0) {
		return 0
	}
	n := 1
	for _, d := range dims {
		if d < 0 {
			panic(fmt.Sprintf("opsem: Count of an unchecked shape %v", dims))
		}
		if n > math.MaxInt/d {
			return 0
		}
		n *= d
	}
	return n
}

// SplitAxis views shape as [outer, shape[axis], inner] around axis. A
// shape with no elements has outer = inner = 0, nothing to loop over: its
// dimensions other than the 0 may be too large to count together.
func SplitAxis(shape []int, axis int) (outer, n, inner int) {
	if Count(shape) == 0 {
		return 0, shape[axis], 0
	}
	return Count(shape[:axis]), shape[axis], Count(shape[axis+1:])
}

// Dims returns the shape an operand gives (Expand's shape,
// ConstantOfShape's input, …; what names it in errors): every dimension in
// [0, 2³¹), and an element count that does not overflow.
func Dims(v []int64, what string) ([]int, error) {
	out := make([]int, len(v))
	for i, d := range v {
		if d < 0 || d > maxDim {
			return nil, fmt.Errorf("%s %v: dimension %d is %d, want [0, 2³¹): %w", what, v, i, d, inference.ErrShape)
		}
		out[i] = int(d)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, fmt.Errorf("%s %v: %w", what, v, err)
	}
	return out, nil
}

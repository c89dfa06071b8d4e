package opsem

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
)

// Strides returns the row-major strides of shape, in elements: stride[i]
// = ∏ shape[i+1:].
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// Count is the element count of dims, a part of a shape that is already
// known to be valid (a tensor's, or one that inference.NumElements has
// checked): ∏ dims, 1 for none. Shapes from attributes or operands are
// counted with inference.NumElements, which fails on overflow.
func Count(dims []int) int {
	n, err := inference.NumElements(dims)
	if err != nil {
		panic("opsem: Count of an unchecked shape: " + err.Error())
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
		if d < 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("%s %v: dimension %d is %d: %w", what, v, i, d, inference.ErrShape)
		}
		out[i] = int(d)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, err
	}
	return out, nil
}

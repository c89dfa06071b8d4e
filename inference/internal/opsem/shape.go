package opsem

import "github.com/beamml/beamml/inference"

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

// SplitAxis views shape as [outer, shape[axis], inner] around axis.
func SplitAxis(shape []int, axis int) (outer, n, inner int) {
	return Count(shape[:axis]), shape[axis], Count(shape[axis+1:])
}

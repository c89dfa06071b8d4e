package opsem

import "fmt"

// SoftmaxRows returns how Softmax, LogSoftmax and Hardmax view an input of
// shape shape: as [outer, size, inner], each of the outer·inner rows of
// size elements (stride inner) normalised on its own. Before opset 13 the
// input is flattened to 2-D at axis (default 1), so a row is the whole
// trailing block; from 13 the rows run along axis (default −1). A shape
// with no elements has no rows (all three are 0): its dimensions other
// than the 0 may be too large to count together.
func SoftmaxRows(n Node, shape []int) (outer, size, inner int, err error) {
	def := int64(-1)
	if n.Opset < 13 {
		def = 1
	}
	axis, err := NormAxis(n.Int("axis", def), len(shape))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("input %v: %w", shape, err)
	}
	switch {
	case Count(shape) == 0:
		return 0, 0, 0, nil
	case n.Opset < 13:
		return Count(shape[:axis]), Count(shape[axis:]), 1, nil
	}
	outer, size, inner = SplitAxis(shape, axis)
	return outer, size, inner, nil
}

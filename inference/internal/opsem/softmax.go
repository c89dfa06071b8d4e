package opsem

import "fmt"

// SoftmaxRows returns how Softmax, LogSoftmax and Hardmax view an input of
// shape shape: as [outer, size, inner], each of the outer·inner rows of
// size elements (stride inner) normalised on its own. Before opset 13 the
// input is flattened to 2-D at axis (default 1), so a row is the whole
// trailing block; from 13 the rows run along axis (default −1).
func SoftmaxRows(n Node, shape []int) (outer, size, inner int, err error) {
	if n.Opset < 13 {
		axis, err := NormAxis(n.Int("axis", 1), len(shape))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("input %v: %w", shape, err)
		}
		return Count(shape[:axis]), Count(shape[axis:]), 1, nil
	}
	axis, err := NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("input %v: %w", shape, err)
	}
	outer, size, inner = SplitAxis(shape, axis)
	return outer, size, inner, nil
}

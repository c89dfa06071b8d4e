package opsem

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// ReduceAxesInput reports whether a Reduce node takes its axes as the
// optional input 1 rather than the attribute axes: ReduceSum from opset
// 13, the other Reduce operators from 18.
func ReduceAxesInput(n Node) bool {
	if n.OpType == "ReduceSum" {
		return n.Opset >= 13
	}
	return n.Opset >= 18
}

// ReduceAxes returns which dimensions of an input of the given rank a
// Reduce node reduces. The axes are the attribute, or (ReduceAxesInput) the
// operand axes, nil when left out; none given means all, except that with
// the operand form and noop_with_empty_axes=1 the node is an identity
// (noop). An axis may be named twice.
func ReduceAxes(n Node, rank int, axes []int64) (reduced []bool, noop bool, err error) {
	if !ReduceAxesInput(n) {
		axes = n.Ints("axes", nil)
	} else if len(axes) == 0 && n.Int("noop_with_empty_axes", 0) != 0 {
		return nil, true, nil
	}
	reduced = make([]bool, rank)
	for i := range reduced {
		reduced[i] = len(axes) == 0
	}
	for _, a := range axes {
		ax, err := NormAxis(a, rank)
		if err != nil {
			return nil, false, fmt.Errorf("axes %v: %w", axes, err)
		}
		reduced[ax] = true
	}
	return reduced, false, nil
}

// ReducedShape is the output shape of a reduction of shape over the
// reduced dimensions: those kept as 1 with keepdims (the attribute,
// default 1), dropped without.
func ReducedShape(n Node, shape []int, reduced []bool) []int {
	keep := n.Int("keepdims", 1) != 0
	out := []int{}
	for i, d := range shape {
		switch {
		case !reduced[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

// ArgAxis returns the axis ArgMax and ArgMin search along in an input of
// shape shape (attribute axis, default 0; it must not be empty), whether
// they pick the last index of equal extremes (select_last_index), and the
// output shape (the axis kept as 1 with keepdims, default 1).
func ArgAxis(n Node, shape []int) (axis int, last bool, out []int, err error) {
	axis, err = NormAxis(n.Int("axis", 0), len(shape))
	if err != nil {
		return 0, false, nil, fmt.Errorf("input %v: %w", shape, err)
	}
	if shape[axis] == 0 {
		return 0, false, nil, fmt.Errorf("input %v: axis %d is empty, it has no %s: %w", shape, axis, n.OpType, inference.ErrShape)
	}
	reduced := make([]bool, len(shape))
	reduced[axis] = true
	return axis, n.Int("select_last_index", 0) != 0, ReducedShape(n, shape, reduced), nil
}

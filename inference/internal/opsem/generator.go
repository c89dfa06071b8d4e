package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// RangeCountFloat is the element count of Range(start, limit, delta) in
// floating point: max(ceil((limit − start)/delta), 0), as numpy.arange
// sizes its result. delta 0, a NaN, or more than 2³¹−1 elements is an
// error.
func RangeCountFloat(start, limit, delta float64) (int, error) {
	if delta == 0 || math.IsNaN(start) || math.IsNaN(limit) || math.IsNaN(delta) {
		return 0, fmt.Errorf("range(%v, %v, %v): %w", start, limit, delta, inference.ErrShape)
	}
	count := max(math.Ceil((limit-start)/delta), 0)
	if count > math.MaxInt32 {
		return 0, fmt.Errorf("range(%v, %v, %v) has %v elements: %w", start, limit, delta, count, inference.ErrShape)
	}
	return int(count), nil
}

// RangeCountInt is the element count of Range(start, limit, delta) in
// integers: max(ceil((limit − start)/delta), 0). delta 0 or more than
// 2³¹−1 elements is an error.
func RangeCountInt(start, limit, delta int64) (int, error) {
	if delta == 0 {
		return 0, fmt.Errorf("range(%d, %d, %d): %w", start, limit, delta, inference.ErrShape)
	}
	span := limit - start
	count := span / delta
	if span%delta != 0 {
		count++
	}
	count = max(count, 0)
	if count > math.MaxInt32 {
		return 0, fmt.Errorf("range(%d, %d, %d) has %d elements: %w", start, limit, delta, count, inference.ErrShape)
	}
	return int(count), nil
}

// OneHot returns OneHot's output for indices of shape indices with the
// operand depth (one integer in [0, 2³¹)) and values (two of them, off and
// on): where the depth axis goes (attribute axis, default −1: last; it lies
// in [−r−1, r] for indices of rank r) and the output shape. The output
// holds values[0] everywhere but at each index along the depth axis,
// values[1]; an index outside [−depth, depth) gives an all-off row.
func OneHot(n Node, indices []int, depth []int64, values int) (axis, d int, out []int, err error) {
	if len(depth) != 1 || depth[0] < 0 || depth[0] > math.MaxInt32 {
		return 0, 0, nil, fmt.Errorf("depth %v is not one non-negative integer: %w", depth, inference.ErrShape)
	}
	if values != 2 {
		return 0, 0, nil, fmt.Errorf("values has %d elements, want 2 (off, on): %w", values, inference.ErrShape)
	}
	a := n.Int("axis", -1)
	if a < 0 {
		a += int64(len(indices)) + 1
	}
	if a < 0 || a > int64(len(indices)) {
		return 0, 0, nil, fmt.Errorf("axis %d out of range for indices %v: %w", n.Int("axis", -1), indices, inference.ErrShape)
	}
	axis, d = int(a), int(depth[0])
	out = slices.Concat(indices[:axis], []int{d}, indices[axis:])
	if _, err := inference.NumElements(out); err != nil {
		return 0, 0, nil, err
	}
	return axis, d, out, nil
}

// ConstantOfShapeValue is the one element ConstantOfShape repeats: the
// attribute value, by default a float32 0.
func ConstantOfShapeValue(n Node) (inference.Tensor, error) {
	value := n.Attrs["value"].Tensor
	if value.DType() == 0 {
		return inference.New([]int{}, []float32{0})
	}
	if value.Len() != 1 {
		return inference.Tensor{}, fmt.Errorf("value %v is not one element: %w", value, inference.ErrBadModel)
	}
	return value, nil
}

// TriluUpper reports whether Trilu keeps the upper triangle, j − i ≥ k
// (attribute upper, default 1), rather than the lower, j − i ≤ k; k is the
// optional operand k (default 0).
func TriluUpper(n Node) bool { return n.Int("upper", 1) == 1 }

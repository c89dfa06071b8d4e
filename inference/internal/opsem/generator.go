package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// RangeCountFloat is the element count of Range(start, limit, delta) in
// floating point: max(ceil((limit − start)/delta), 0), as numpy.arange
// sizes its result. delta 0, an operand that is not finite (NaN or ±Inf),
// or a count above 2³¹−1 is an error.
func RangeCountFloat(start, limit, delta float64) (int, error) {
	for _, v := range [...]float64{start, limit, delta} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("start %v, limit %v, delta %v: operands must be finite: %w", start, limit, delta, inference.ErrShape)
		}
	}
	if delta == 0 {
		return 0, fmt.Errorf("start %v, limit %v, delta %v: delta is 0: %w", start, limit, delta, inference.ErrShape)
	}
	// The quotient of finite operands is a number or, past float64's range,
	// ±Inf, whose ceil compares as it should.
	count := math.Ceil((limit - start) / delta)
	if count > maxDim {
		return 0, fmt.Errorf("start %v, limit %v, delta %v: %v elements, more than 2³¹−1: %w", start, limit, delta, count, inference.ErrShape)
	}
	return int(max(count, 0)), nil
}

// RangeCountInt is the element count of Range(start, limit, delta) in
// integers: max(ceil((limit − start)/delta), 0), computed exactly for all
// int64 operands (limit − start may need 64 bits unsigned). delta 0 or a
// count above 2³¹−1 is an error.
func RangeCountInt(start, limit, delta int64) (int, error) {
	if delta == 0 {
		return 0, fmt.Errorf("start %d, limit %d, delta %d: delta is 0: %w", start, limit, delta, inference.ErrShape)
	}
	var span uint64 // |limit − start|, toward delta's sign
	switch {
	case delta > 0 && limit > start:
		span = uint64(limit) - uint64(start)
	case delta < 0 && limit < start:
		span = uint64(start) - uint64(limit)
	default:
		return 0, nil
	}
	count := (span-1)/magnitude(delta) + 1
	if count > maxDim {
		return 0, fmt.Errorf("start %d, limit %d, delta %d: %d elements, more than 2³¹−1: %w", start, limit, delta, count, inference.ErrShape)
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
	if len(depth) != 1 || depth[0] < 0 || depth[0] > maxDim {
		return 0, 0, nil, fmt.Errorf("depth %v is not one integer in [0, 2³¹): %w", depth, inference.ErrShape)
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
		return 0, 0, nil, fmt.Errorf("indices %v, depth %d: %w", indices, d, err)
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

package opsem

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// Int64s returns the values of an operand that holds integers, such as a
// shape, axes or indices: any numeric tensor, floats truncated toward zero,
// bools as 0 and 1. A float that is NaN, ±Inf or outside int64's range is
// an error.
func Int64s(t inference.Tensor) ([]int64, error) {
	switch t.DType() {
	case inference.Int64:
		return inference.Data[int64](t)
	case inference.Int32:
		return widen[int32](t), nil
	case inference.Uint8:
		return widen[uint8](t), nil
	case inference.Float32:
		d, _ := inference.Data[float32](t)
		out := make([]int64, len(d))
		for i, v := range d {
			var ok bool
			if out[i], ok = truncInt64(float64(v)); !ok {
				return nil, fmt.Errorf("%v: element %d is %v, not an integer in int64's range: %w", t, i, v, inference.ErrShape)
			}
		}
		return out, nil
	case inference.Float16:
		d, _ := inference.Data[inference.Half](t)
		out := make([]int64, len(d))
		for i, v := range d {
			var ok bool
			if out[i], ok = truncInt64(float64(v.Float32())); !ok {
				return nil, fmt.Errorf("%v: element %d is %v, not an integer in int64's range: %w", t, i, v, inference.ErrShape)
			}
		}
		return out, nil
	case inference.Bool:
		d, _ := inference.Data[bool](t)
		out := make([]int64, len(d))
		for i, v := range d {
			if v {
				out[i] = 1
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%v is not numeric: %w", t, inference.ErrType)
}

// widen converts t's elements, which the caller knows to be T, to int64.
func widen[T int32 | uint8](t inference.Tensor) []int64 {
	d, _ := inference.Data[T](t)
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

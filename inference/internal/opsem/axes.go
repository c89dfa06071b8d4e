package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// NormAxis maps an axis in [-rank, rank) to [0, rank).
func NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d: %w", axis, rank, inference.ErrShape)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// NormAxes maps each axis of axes with NormAxis, and fails when two name
// the same dimension.
func NormAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		ax, err := NormAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out[:i], ax) {
			return nil, fmt.Errorf("axes %v name dimension %d twice: %w", axes, ax, inference.ErrShape)
		}
		out[i] = ax
	}
	return out, nil
}

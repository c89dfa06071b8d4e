package cpu

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Forwarders to opsem for the callers in inference/cuda that still name
// them here. Delete this file once inference/cuda calls opsem itself.

// Int64s is opsem.Int64s.
//
// Deprecated: use opsem.Int64s.
func Int64s(t inference.Tensor) ([]int64, error) { return opsem.Int64s(t) }

// NormAxis is opsem.NormAxis.
//
// Deprecated: use opsem.NormAxis.
func NormAxis(axis int64, rank int) (int, error) { return opsem.NormAxis(axis, rank) }

// BroadcastShape is opsem.BroadcastShape.
//
// Deprecated: use opsem.BroadcastShape.
func BroadcastShape(shapes ...[]int) ([]int, error) { return opsem.BroadcastShape(shapes...) }

// BroadcastOffsets is opsem.BroadcastOffsets.
//
// Deprecated: use opsem.BroadcastOffsets.
func BroadcastOffsets(in, out []int) []int { return opsem.BroadcastOffsets(in, out) }

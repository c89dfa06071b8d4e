package cuda

import (
	"context"
	"fmt"

	"github.com/beamml/beamml/inference"
)

// The headroom is the device memory MaxBatch leaves free: a tenth of the
// device, and at least minHeadroom bytes. cuBLAS workspaces, the CUDA
// context, other processes sharing the GPU through MPS and fragmentation
// live there.
const (
	headroomFraction = 0.10
	minHeadroom      = 256 << 20
)

// maxBatchLimit is the largest batch size MaxBatch considers.
const maxBatchLimit = 1 << 16

// MaxBatch returns the largest batch size whose workspace fits in the
// device memory free now, less the headroom, at the model's declared
// input shapes (other dynamic dimensions at 1). It returns 0 (no bound)
// for a model without a batch dimension or one that runs on the CPU.
// RunInference caps its MaxBatchSize at it (inference.BatchLimiter).
func (m *Model) MaxBatch() int {
	if !m.batched || m.fallback != "" {
		return 0
	}
	budget, err := m.Budget()
	if err != nil {
		return 0
	}
	if budget <= 0 {
		return 1
	}
	size, err := m.workspaceSizer()
	if err != nil {
		return 0
	}
	if s, err := size(1); err != nil || s > budget {
		return 1
	}
	lo, hi := 1, maxBatchLimit // size(lo) fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if s, err := size(mid); err == nil && s <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// WorkspaceBytes returns the device memory one Run at batch size b takes
// (its workspace and its plan's constants), at the model's declared input
// shapes with other dynamic dimensions at 1. Weights are not included
// (ByteSize).
func (m *Model) WorkspaceBytes(b int) (int64, error) {
	if !m.batched || m.fallback != "" {
		return 0, fmt.Errorf("cuda: workspace size: the model has no batch dimension or runs on the CPU")
	}
	size, err := m.workspaceSizer()
	if err != nil {
		return 0, err
	}
	return size(b)
}

// Budget returns the device bytes MaxBatch lets one batch use: the free
// memory less the headroom.
func (m *Model) Budget() (int64, error) {
	info, err := m.dev.MemInfo()
	if err != nil {
		return 0, err
	}
	return info.Free - max(int64(float64(info.Total)*headroomFraction), minHeadroom), nil
}

// workspaceSizer returns the device bytes one Run needs at batch b: its
// workspace and its plan's constants.
func (m *Model) workspaceSizer() (func(b int) (int64, error), error) {
	feeds := map[string]inference.Tensor{}
	for _, in := range m.g.Inputs {
		shape := make([]int, len(in.Shape))
		for k, d := range in.Shape {
			shape[k] = max(d, 1) // dynamic dimensions at 1
		}
		t, err := inference.Zeros(in.DType, shape)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		feeds[in.Name] = t
	}
	_, class, _ := m.signature(feeds)
	m.mu.Lock()
	c, err := m.shapeClass(context.Background(), class, feeds)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func(b int) (int64, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		p, err := m.layout(c, feeds, b, true)
		if err != nil {
			return 0, err
		}
		return p.size + p.constBytes, nil
	}, nil
}

var _ inference.BatchLimiter = (*Model)(nil)

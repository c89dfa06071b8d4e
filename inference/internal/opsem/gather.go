package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Index maps an index into a dimension of size dim, in [−dim, dim), to
// [0, dim); one outside is an error of the model's input.
func Index(i int64, dim int) (int, error) {
	if i < -int64(dim) || i >= int64(dim) {
		return 0, fmt.Errorf("index %d out of range for dimension %d: %w", i, dim, inference.ErrIndexOutOfRange)
	}
	if i < 0 {
		i += int64(dim)
	}
	return int(i), nil
}

// GatherAxis is the axis Gather, GatherElements and ScatterElements index
// along for data of the given rank: the attribute axis, default 0.
func GatherAxis(n Node, rank int) (int, error) { return NormAxis(n.Int("axis", 0), rank) }

// GatherShape returns Gather's axis and output shape for data of shape data
// and indices of shape ind: data's shape with the axis replaced by ind's.
func GatherShape(n Node, data, ind []int) (axis int, out []int, err error) {
	axis, err = GatherAxis(n, len(data))
	if err != nil {
		return 0, nil, fmt.Errorf("data %v: %w", data, err)
	}
	return axis, slices.Concat(data[:axis], ind, data[axis+1:]), nil
}

// ElementOffsets returns, for each element of indices of shape ind (the
// rank of data, no larger off axis) with values idx, the offset in data of
// the element whose coordinates are the index's own with the axis
// coordinate replaced by the index value: GatherElements and
// ScatterElements addressing.
func ElementOffsets(data, ind []int, idx []int64, axis int) ([]int, error) {
	if len(ind) != len(data) {
		return nil, fmt.Errorf("indices %v and data %v differ in rank: %w", ind, data, inference.ErrShape)
	}
	for j := range ind {
		if j != axis && ind[j] > data[j] {
			return nil, fmt.Errorf("indices %v exceed data %v on axis %d: %w", ind, data, j, inference.ErrShape)
		}
	}
	st := Strides(data)
	offs := make([]int, len(idx))
	coord := make([]int, len(ind))
	for p, v := range idx {
		k, err := Index(v, data[axis])
		if err != nil {
			return nil, fmt.Errorf("indices %v at %v: %w", ind, coord, err)
		}
		o := k * st[axis]
		for j, c := range coord {
			if j != axis {
				o += c * st[j]
			}
		}
		offs[p] = o
		for j := len(coord) - 1; j >= 0; j-- {
			if coord[j]++; coord[j] < ind[j] {
				break
			}
			coord[j] = 0
		}
	}
	return offs, nil
}

// NDAddress is how GatherND and ScatterND indices of shape [..., M] address
// data: tuple p names the slice data[b…, i₀, …, i_{M−1}, :] at Offsets[p],
// where the first batch_dims axes of indices and data agree (tuples
// PerBatch at a time share a batch, whose data holds BatchSize elements).
// Lead is the indices' shape without its last axis and Slice the shape of
// one slice (data's axes after the addressed ones); the gathered output
// (and the scattered updates) have shape Lead ++ Slice.
type NDAddress struct {
	Offsets, Lead, Slice   []int
	M, PerBatch, BatchSize int
}

// NDOffsets resolves GatherND and ScatterND indices of shape ind with
// values idx into data of shape data, with batchDims leading batch axes.
func NDOffsets(data, ind []int, idx []int64, batchDims int) (NDAddress, error) {
	q, r := len(ind), len(data)
	if q < 1 || batchDims < 0 || batchDims >= min(q, r) {
		return NDAddress{}, fmt.Errorf("indices %v, data %v, batch_dims %d: %w", ind, data, batchDims, inference.ErrShape)
	}
	m := ind[q-1]
	if m < 1 || m > r-batchDims || !slices.Equal(ind[:batchDims], data[:batchDims]) {
		return NDAddress{}, fmt.Errorf("indices %v do not address data %v with batch_dims %d: %w", ind, data, batchDims, inference.ErrShape)
	}
	st := Strides(data)
	a := NDAddress{Lead: ind[:q-1], Slice: data[batchDims+m:], M: m}
	a.Offsets = make([]int, Count(a.Lead))
	if len(a.Offsets) > 0 { // else the dimensions beside the 0 may not count within int
		a.PerBatch, a.BatchSize = Count(ind[batchDims:q-1]), Count(data[batchDims:])
	}
	for p := range a.Offsets {
		o := 0
		if a.PerBatch > 0 {
			o = p / a.PerBatch * a.BatchSize
		}
		for k := range m {
			ax := batchDims + k
			v, err := Index(idx[p*m+k], data[ax])
			if err != nil {
				return NDAddress{}, fmt.Errorf("indices %v, tuple %d, data %v axis %d: %w", ind, p, data, ax, err)
			}
			o += v * st[ax]
		}
		a.Offsets[p] = o
	}
	return a, nil
}

// GatherNDBatchDims is GatherND's batch_dims: how many leading axes indices
// and data share (attribute, default 0).
func GatherNDBatchDims(n Node) int { return int(n.Int("batch_dims", 0)) }

// ScatterReduction is how ScatterElements and ScatterND combine an update
// with the data: the attribute reduction, "none" (replace, the default),
// "add", "mul", "max" or "min".
func ScatterReduction(n Node) (string, error) {
	switch red := n.Str("reduction", "none"); red {
	case "none", "add", "mul", "max", "min":
		return red, nil
	default:
		return "", n.Unsupported("reduction %q", red)
	}
}

// Shape is the shape of what the indices address: Lead ++ Slice, GatherND's
// output and ScatterND's updates.
func (a NDAddress) Shape() []int { return slices.Concat(a.Lead, a.Slice) }

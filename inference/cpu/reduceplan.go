package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Reduction plans, shared by the Reduce operators (ops_reduce.go) and
// MeanVarianceNormalization (ops_norm.go): the output element each input
// element folds into.

// reducePlan maps each element of a reduction's input to the output
// element it folds into.
type reducePlan struct {
	in    []int // input shape
	keep  []int // output shape with each reduced axis kept as size 1
	out   []int // output shape as returned (opsem.ReducedShape)
	count int   // input elements per output element
	offs  []int // offs[i]: output element of input element i (row-major)
}

// newReducePlan plans reducing shape over the reduced dimensions into the
// output shape out (nil when the caller returns none). It claims from r the
// offset table and what a reduction allocates per output element: the
// output and two float64 accumulators.
func newReducePlan(r *limit.Run, shape []int, reduced []bool, out []int) (*reducePlan, error) {
	p := &reducePlan{in: shape, keep: make([]int, len(shape)), out: out, count: 1}
	for i, d := range shape {
		if reduced[i] {
			p.keep[i] = 1
			p.count *= d
			continue
		}
		p.keep[i] = d
	}
	// Keeping the dimensions beside a reduced 0 can give a shape that does
	// not count within int.
	if _, err := inference.NumElements(p.keep); err != nil {
		return nil, fmt.Errorf("input %v reduced: %w", shape, err)
	}
	if _, err := limit.Claim[int](r, shape...); err != nil {
		return nil, err
	}
	if _, err := limit.Claim[[3]float64](r, p.keep...); err != nil {
		return nil, err
	}
	p.offs = opsem.BroadcastOffsets(p.keep, shape)
	return p, nil
}

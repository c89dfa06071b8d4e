package cpu

import "fmt"

// Reduction plans, shared by the Reduce operators (ops_reduce.go) and
// MeanVarianceNormalization (ops_norm.go): the output element each input
// element folds into.

// reducePlan maps each element of a reduction's input to the output
// element it folds into.
type reducePlan struct {
	in    []int // input shape
	keep  []int // output shape with each reduced axis kept as size 1
	out   []int // output shape as returned (reduced axes dropped unless keepdims)
	count int   // input elements per output element
	offs  []int // offs[i]: output element of input element i (row-major)
}

// newReducePlan plans reducing shape over axes (all axes when axes is empty).
func newReducePlan(shape []int, axes []int64, keepdims bool) (*reducePlan, error) {
	reduced := make([]bool, len(shape))
	if len(axes) == 0 {
		for i := range reduced {
			reduced[i] = true
		}
	}
	for _, a := range axes {
		ax, err := NormAxis(a, len(shape))
		if err != nil {
			return nil, fmt.Errorf("axes %v: %w", axes, err)
		}
		reduced[ax] = true
	}
	p := &reducePlan{in: shape, keep: make([]int, len(shape)), count: 1}
	for i, d := range shape {
		if reduced[i] {
			p.keep[i] = 1
			p.count *= d
			if keepdims {
				p.out = append(p.out, 1)
			}
			continue
		}
		p.keep[i] = d
		p.out = append(p.out, d)
	}
	if p.out == nil {
		p.out = []int{}
	}
	p.offs = BroadcastOffsets(p.keep, shape)
	return p, nil
}

package cpu

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Broadcasting plans, shared by the elementwise and logic operators: how
// each operand's elements map to the output's under numpy
// (multidirectional) broadcasting, or under the broadcast and axis
// attributes of the binary operators before opset 7. The shape rules are
// opsem's (BroadcastShape, LegacyBroadcast); a plan picks the loop.

// broadcastMode says how an operand's elements map to the output's.
type broadcastMode uint8

const (
	broadcastSame    broadcastMode = iota // same shape as the output: element i
	broadcastScalar                       // one element: element 0
	broadcastTile                         // the output's trailing dimensions: element i mod size
	broadcastGeneral                      // anything else: opsem.BroadcastOffsets
)

type broadcastOperand struct {
	shape []int
	size  int
	mode  broadcastMode
}

// broadcastPlan maps the output of a broadcasting operator to its operands.
// Its output, and the offset tables of operands broadcast in general, are
// allocated under the run's limits.
type broadcastPlan struct {
	shape []int
	n     int
	ops   []broadcastOperand
	run   *limit.Run
}

// newBroadcastPlan plans an output of shape out over operands that
// broadcast to it.
func newBroadcastPlan(r *limit.Run, out []int, shapes ...[]int) broadcastPlan {
	p := broadcastPlan{shape: out, n: opsem.Count(out), ops: make([]broadcastOperand, len(shapes)), run: r}
	for i, s := range shapes {
		o := broadcastOperand{shape: s, size: opsem.Count(s), mode: broadcastGeneral}
		trimmed := s
		for len(trimmed) > 0 && trimmed[0] == 1 {
			trimmed = trimmed[1:]
		}
		switch {
		case slices.Equal(s, out):
			o.mode = broadcastSame
		case o.size == 1:
			o.mode = broadcastScalar
		case o.size > 0 && slices.Equal(trimmed, out[len(out)-len(trimmed):]):
			o.mode = broadcastTile
		}
		p.ops[i] = o
	}
	return p
}

// offsets returns, for each output element, the offset of operand k's
// element: a table as large as the output.
func (p broadcastPlan) offsets(k int) ([]int, error) {
	if _, err := limit.Claim[int](p.run, p.shape...); err != nil {
		return nil, err
	}
	return opsem.BroadcastOffsets(p.ops[k].shape, p.shape), nil
}

// offsetsOf returns the offsets of the operands ks.
func (p broadcastPlan) offsetsOf(ks ...int) ([][]int, error) {
	offs := make([][]int, len(ks))
	for i, k := range ks {
		var err error
		if offs[i], err = p.offsets(k); err != nil {
			return nil, err
		}
	}
	return offs, nil
}

// runs calls f for each run of the output along which operands a and b
// both step by 0 or 1 elements: the n output elements from o read operand
// a from ia with step sa, and b from ib with step sb. Dimensions of 1 are
// dropped and neighbours that step alike in both operands merged, so
// [N,C,H,W]·[N,C,1,1] is N·C runs of H·W (a with step 1, b with step 0),
// and [B,H,S,S]+[B,1,1,S] is B·H·S runs of S. No offset tables are
// built.
func (p broadcastPlan) runs(a, b int, f func(o, ia, ib, n, sa, sb int)) {
	rank := len(p.shape)
	steps := [][]int{make([]int, rank), make([]int, rank)}
	for k, op := range []int{a, b} {
		shape := p.ops[op].shape
		st := 1
		for d := rank - 1; d >= 0; d-- { // the step along output dimension d
			if j := d - (rank - len(shape)); j >= 0 && shape[j] != 1 {
				steps[k][d] = st
				st *= shape[j]
			}
		}
	}
	dims, strides := mergeDims(p.shape, steps)
	inner, sa := innerRun(dims, strides, 0)
	_, sb := innerRun(dims, strides, 1)
	stridedWalk(p.n, dims, strides, func(o int, at []int) { f(o, at[0], at[1], inner, sa, sb) })
}

// planBroadcast plans numpy (multidirectional) broadcasting of ts.
func planBroadcast(r *limit.Run, ts ...inference.Tensor) (broadcastPlan, error) {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape()
	}
	return planShapes(r, shapes...)
}

// planShapes plans numpy broadcasting of operands of the given shapes.
func planShapes(r *limit.Run, shapes ...[]int) (broadcastPlan, error) {
	out, err := opsem.BroadcastShape(shapes...)
	if err != nil {
		return broadcastPlan{}, err
	}
	return newBroadcastPlan(r, out, shapes...), nil
}

// binaryInputs checks the two required inputs of a binary operator,
// which share one element type, and plans their broadcasting.
func binaryInputs(n opsem.Node, in []inference.Tensor) (broadcastPlan, error) {
	if err := needInputs(in, 2); err != nil {
		return broadcastPlan{}, err
	}
	if err := sameType(in[:2]); err != nil {
		return broadcastPlan{}, err
	}
	return binaryPlan(n, in[0], in[1])
}

// binaryPlan plans a binary operator: B takes the shape
// opsem.LegacyBroadcast gives it (its own from opset 7; aligned with A by
// the broadcast and axis attributes before), then the two broadcast.
func binaryPlan(n opsem.Node, a, b inference.Tensor) (broadcastPlan, error) {
	bs, err := opsem.LegacyBroadcast(n, a.Shape(), b.Shape())
	if err != nil {
		return broadcastPlan{}, err
	}
	return planShapes(n.Run, a.Shape(), bs)
}

// zip applies f to the broadcast pairs of a and b, and returns the result
// as the node's one output.
func zip[A, B, U inference.Element](p broadcastPlan, a []A, b []B, f func(A, B) U) ([]inference.Tensor, error) {
	out, err := limit.Make[U](p.run, p.shape...)
	if err != nil {
		return nil, err
	}
	switch ma, mb := p.ops[0].mode, p.ops[1].mode; {
	case ma == broadcastSame && mb == broadcastSame:
		a, b = a[:len(out)], b[:len(out)]
		for i := range out {
			out[i] = f(a[i], b[i])
		}
	case ma == broadcastSame && mb == broadcastScalar:
		s := b[0]
		a = a[:len(out)]
		for i := range out {
			out[i] = f(a[i], s)
		}
	case ma == broadcastScalar && mb == broadcastSame:
		s := a[0]
		b = b[:len(out)]
		for i := range out {
			out[i] = f(s, b[i])
		}
	case ma == broadcastSame && mb == broadcastTile:
		m := len(b)
		for s := 0; s < len(out); s += m {
			o, x := out[s:s+m], a[s:s+m]
			for j := range o {
				o[j] = f(x[j], b[j])
			}
		}
	case ma == broadcastTile && mb == broadcastSame:
		m := len(a)
		for s := 0; s < len(out); s += m {
			o, y := out[s:s+m], b[s:s+m]
			for j := range o {
				o[j] = f(a[j], y[j])
			}
		}
	default:
		p.runs(0, 1, func(o, ia, ib, n, sa, sb int) {
			for j := range n {
				out[o+j] = f(a[ia+j*sa], b[ib+j*sb])
			}
		})
	}
	return singleOutput(p.shape, out)
}

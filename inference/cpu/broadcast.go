package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Broadcasting plans, shared by the elementwise and logic operators: how
// each operand's elements map to the output's under numpy
// (multidirectional) broadcasting, or under the broadcast and axis
// attributes of the binary operators before opset 7.

// broadcastMode says how an operand's elements map to the output's.
type broadcastMode uint8

const (
	broadcastSame    broadcastMode = iota // same shape as the output: element i
	broadcastScalar                       // one element: element 0
	broadcastTile                         // the output's trailing dimensions: element i mod size
	broadcastGeneral                      // anything else: BroadcastOffsets
)

type broadcastOperand struct {
	shape []int
	size  int
	mode  broadcastMode
}

// broadcastPlan maps the output of a broadcasting operator to its operands.
type broadcastPlan struct {
	shape []int
	n     int
	ops   []broadcastOperand
}

// newBroadcastPlan plans an output of shape out over operands that
// broadcast to it.
func newBroadcastPlan(out []int, shapes ...[]int) broadcastPlan {
	p := broadcastPlan{shape: out, n: product(out), ops: make([]broadcastOperand, len(shapes))}
	for i, s := range shapes {
		o := broadcastOperand{shape: s, size: product(s), mode: broadcastGeneral}
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

// offsets returns, for each output element, the offset of operand k's element.
func (p broadcastPlan) offsets(k int) []int { return BroadcastOffsets(p.ops[k].shape, p.shape) }

// planBroadcast plans numpy (multidirectional) broadcasting of ts.
func planBroadcast(ts ...inference.Tensor) (broadcastPlan, error) {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape()
	}
	out, err := BroadcastShape(shapes...)
	if err != nil {
		return broadcastPlan{}, err
	}
	return newBroadcastPlan(out, shapes...), nil
}

// binaryInputs checks the two required inputs of a binary operator,
// which share one element type, and plans their broadcasting.
func binaryInputs(n Node, in []inference.Tensor) (broadcastPlan, error) {
	if err := needInputs(in, 2); err != nil {
		return broadcastPlan{}, err
	}
	if err := sameType(in[:2]); err != nil {
		return broadcastPlan{}, err
	}
	return binaryPlan(n, in[0], in[1])
}

// binaryPlan plans a binary operator. Before opset 7 the binary operators
// (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less) broadcast
// only with broadcast=1, and then only B to A's shape: B's dimensions are
// aligned with A's starting at axis (default: aligned at the right), or B
// holds a single element. With broadcast=0 the shapes must be equal.
func binaryPlan(n Node, a, b inference.Tensor) (broadcastPlan, error) {
	if n.Opset >= 7 {
		return planBroadcast(a, b)
	}
	as, bs := a.Shape(), b.Shape()
	if n.Int("broadcast", 0) == 0 {
		if !slices.Equal(as, bs) {
			return broadcastPlan{}, fmt.Errorf("input shapes %v and %v differ and broadcast is 0: %w", as, bs, inference.ErrShape)
		}
		return newBroadcastPlan(as, as, bs), nil
	}
	if b.Len() == 1 {
		return newBroadcastPlan(as, as, bs), nil
	}
	axis := int64(len(as) - len(bs))
	if n.Has("axis") {
		axis = n.Int("axis", 0)
		if axis < 0 {
			axis += int64(len(as))
		}
	}
	if axis < 0 || axis+int64(len(bs)) > int64(len(as)) {
		return broadcastPlan{}, fmt.Errorf("input 1 of shape %v does not fit input 0 of shape %v at axis %d: %w", bs, as, axis, inference.ErrShape)
	}
	aligned := make([]int, len(as))
	for i := range aligned {
		aligned[i] = 1
	}
	copy(aligned[axis:], bs)
	out, err := BroadcastShape(as, aligned)
	if err != nil || !slices.Equal(out, as) {
		return broadcastPlan{}, fmt.Errorf("input 1 of shape %v does not broadcast to input 0 of shape %v at axis %d: %w", bs, as, axis, inference.ErrShape)
	}
	return newBroadcastPlan(as, as, aligned), nil
}

// zip applies f to the broadcast pairs of a and b.
func zip[A, B, U inference.Element](p broadcastPlan, a []A, b []B, f func(A, B) U) []U {
	out := make([]U, p.n)
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
		oa, ob := p.offsets(0), p.offsets(1)
		for i := range out {
			out[i] = f(a[oa[i]], b[ob[i]])
		}
	}
	return out
}

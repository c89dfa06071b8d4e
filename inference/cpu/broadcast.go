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
	broadcastRows                         // the output's leading dimensions, then ones: element i / (n / size)
	broadcastGeneral                      // anything else: opsem.BroadcastOffsets
)

type broadcastOperand struct {
	shape []int
	size  int
	mode  broadcastMode
}

// broadcastPlan maps the output of a broadcasting operator to its operands.
// It depends only on the operands' shapes (and the node's attributes), so
// a kernel keeps it from run to run (opsem.Plan), together with what it
// works out on first use: the walk of runs, and the strides and odometer
// of offsets. Its output, and the offset tables of operands broadcast in
// general, are allocated under run, which the kernel sets to the node's
// each run.
type broadcastPlan struct {
	shape []int
	n     int
	ops   []broadcastOperand
	run   *limit.Run

	walk    *broadcastWalk // runs's, for the operands it last walked
	strides [][]int        // offsets's: operand k's opsem.BroadcastStrides, once asked for
	idx     []int          // offsets's odometer
	offs    [][]int        // offsetsOf's result
	fn      any            // planFunc's
}

// planFunc returns the elementwise function of the operator op that p
// keeps, made by mk(op) on p's first run: a closure that a generic
// function returns holds its dictionary, and would be allocated every
// run.
func planFunc[F any](p *broadcastPlan, mk func(op string) F, op string) F {
	if f, ok := p.fn.(F); ok {
		return f
	}
	f := mk(op)
	p.fn = f
	return f
}

// newBroadcastPlan plans an output of shape out over operands that
// broadcast to it.
func newBroadcastPlan(r *limit.Run, out []int, shapes ...[]int) *broadcastPlan {
	p := &broadcastPlan{shape: out, n: opsem.Count(out), ops: make([]broadcastOperand, len(shapes)), run: r}
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
		case o.size > 0 && leadingRows(s, out):
			o.mode = broadcastRows
		}
		p.ops[i] = o
	}
	return p
}

// leadingRows reports whether an operand of shape s, aligned to out's last
// dimensions, is out's leading dimensions followed by ones: one value for
// each row of out's trailing dimensions (a squeeze-and-excitation's
// [N, C, 1, 1] gate over [N, C, H, W]).
func leadingRows(s, out []int) bool {
	if len(s) > len(out) {
		return false
	}
	pad := len(out) - len(s)
	k := len(out) // out's dimensions from k on are ones in s
	for k > pad && s[k-1-pad] == 1 {
		k--
	}
	for d := range k {
		sd := 1 // s aligned to out's last dimensions: ones before it
		if d >= pad {
			sd = s[d-pad]
		}
		if sd != out[d] {
			return false
		}
	}
	return k < len(out)
}

// offsets returns, for each output element, the offset of operand k's
// element (opsem.BroadcastOffsets): a table as large as the output, taken
// from the run's pool, so that it is the kernel's scratch. The strides it
// is computed from are kept in the plan.
func (p *broadcastPlan) offsets(k int) ([]int, error) {
	offs, err := limit.MakeOverwritten[int](p.run, p.shape...) // StridedOffsets writes every entry
	if err != nil {
		return nil, err
	}
	if p.strides == nil {
		p.strides, p.idx = make([][]int, len(p.ops)), make([]int, len(p.shape))
	}
	if p.strides[k] == nil {
		st, err := opsem.BroadcastStrides(p.ops[k].shape, p.shape)
		if err != nil {
			panic("cpu: broadcast offsets: " + err.Error()) // the plan's operands broadcast to its shape
		}
		p.strides[k] = st
	}
	opsem.StridedOffsets(offs, p.strides[k], p.shape, p.idx)
	return offs, nil
}

// offsetsOf returns the offsets of the operands ks, in a slice the next
// call reuses.
func (p *broadcastPlan) offsetsOf(ks ...int) ([][]int, error) {
	if len(p.offs) < len(ks) {
		p.offs = make([][]int, len(ks))
	}
	offs := p.offs[:len(ks)]
	for i, k := range ks {
		var err error
		if offs[i], err = p.offsets(k); err != nil {
			return nil, err
		}
	}
	return offs, nil
}

// A broadcastWalk is how runs walks the output for operands a and b: a
// stridedWalker over the output's dimensions, merged (mergeDims), the
// length of a run and the operands' steps along it, kept in the plan so
// that a walk allocates nothing.
type broadcastWalk struct {
	a, b          int
	walker        *stridedWalker
	inner, sa, sb int
}

// runs calls f for each run of the output along which operands a and b
// both step by 0 or 1 elements: the n output elements from o read operand
// a from ia with step sa, and b from ib with step sb. Dimensions of 1 are
// dropped and neighbours that step alike in both operands merged, so
// [N,C,H,W]·[N,C,1,1] is N·C runs of H·W (a with step 1, b with step 0),
// and [B,H,S,S]+[B,1,1,S] is B·H·S runs of S. No offset tables are
// built.
func (p *broadcastPlan) runs(a, b int, f func(o, ia, ib, n, sa, sb int)) {
	w := p.walk
	if w == nil || w.a != a || w.b != b {
		w = p.newWalk(a, b)
		p.walk = w
	}
	w.walker.walk(p.n, func(o int, at []int) { f(o, at[0], at[1], w.inner, w.sa, w.sb) })
}

// newWalk plans runs's walk for operands a and b.
func (p *broadcastPlan) newWalk(a, b int) *broadcastWalk {
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
	w := &broadcastWalk{a: a, b: b, walker: newStridedWalker(p.shape, steps)}
	w.inner, w.sa = innerRun(w.walker.dims, w.walker.strides, 0)
	_, w.sb = innerRun(w.walker.dims, w.walker.strides, 1)
	return w
}

// planBroadcast plans numpy (multidirectional) broadcasting of ts.
func planBroadcast(r *limit.Run, ts ...inference.Tensor) (*broadcastPlan, error) {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape()
	}
	return planShapes(r, shapes...)
}

// planShapes plans numpy broadcasting of operands of the given shapes.
func planShapes(r *limit.Run, shapes ...[]int) (*broadcastPlan, error) {
	out, err := opsem.BroadcastShape(shapes...)
	if err != nil {
		return nil, err
	}
	return newBroadcastPlan(r, out, shapes...), nil
}

// binaryInputs checks the two required inputs of a binary operator,
// which share one element type, and returns the plan of their broadcasting
// (keptBinary).
func binaryInputs(n opsem.Node, in []inference.Tensor) (*broadcastPlan, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	if err := sameType(in[:2]); err != nil {
		return nil, err
	}
	return keptBinary(n, in)
}

// keptBinary returns binaryPlan of the node's first two inputs, kept from
// run to run in its memo (opsem.Plan), with its run set to the node's.
func keptBinary(n opsem.Node, in []inference.Tensor) (*broadcastPlan, error) {
	p, err := opsem.Plan(n, in, func() (*broadcastPlan, error) { return binaryPlan(n, in[0], in[1]) })
	if err != nil {
		return nil, err
	}
	p.run = n.Run
	return p, nil
}

// binaryPlan plans a binary operator: B takes the shape
// opsem.LegacyBroadcast gives it (its own from opset 7; aligned with A by
// the broadcast and axis attributes before), then the two broadcast.
func binaryPlan(n opsem.Node, a, b inference.Tensor) (*broadcastPlan, error) {
	bs, err := opsem.LegacyBroadcast(n, a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	return planShapes(n.Run, a.Shape(), bs)
}

// zip applies f to the broadcast pairs of a and b, and returns the result
// as the node's one output.
func zip[A, B, U inference.Element](n opsem.Node, p *broadcastPlan, a []A, b []B, f func(A, B) U) ([]inference.Tensor, error) {
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
	return opsem.Single(n, p.shape, out)
}

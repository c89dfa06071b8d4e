package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The epilogues passes.FuseEpilogues folds into Conv, Gemm and MatMul:
// y = act(product + bias + residual), applied by the kernel to each block
// of its output while the block is in cache. The arithmetic is the
// unfused nodes': the same float32 additions in the same order, and the
// activation through the standalone kernel's function (ewUnaryOps), so a
// fused node computes what the nodes it replaced computed.

// clamp is a fused activation: y = min(max(y, lo), hi) when on.
type clamp struct {
	on     bool
	lo, hi float32
}

func (c clamp) apply(y []float32) {
	if !c.on {
		return
	}
	clamps(y, c.lo, c.hi) // NaN stays, as Relu and Clip keep it
}

// epilogue is a node's fused epilogue on a float32 output. The zero
// epilogue, and a nil one, do nothing.
//
// A kernel makes its epilogue once, in its plan (opsem.Plan), and binds it
// to each run's inputs (bind): only the bias's and the residual's data
// change from run to run.
type epilogue struct {
	bias     []float32 // added to each row of len(bias) elements (Gemm, MatMul)
	residual []float32 // as long as the output
	clamp    clamp
	act      func(y []float32) // the activation other than a clamp, in place

	biasIn, residualIn int // the inputs bias and residual are read from, or −1
}

// bind sets e's bias and residual to the data of this run's inputs.
func (e *epilogue) bind(in []inference.Tensor) {
	if e == nil {
		return
	}
	if e.biasIn >= 0 {
		e.bias = dataOf[float32](in[e.biasIn])
	}
	if e.residualIn >= 0 {
		e.residual = dataOf[float32](in[e.residualIn])
	}
}

// apply applies e to y, the elements of the output from off on.
func (e *epilogue) apply(y []float32, off int) {
	if e == nil {
		return
	}
	if cols := len(e.bias); cols > 0 {
		// Row by row: y's first element is column off mod cols.
		for rest, j := y, off%cols; len(rest) > 0; j = 0 {
			n := min(len(rest), cols-j)
			addInto(rest[:n], e.bias[j:])
			rest = rest[n:]
		}
	}
	if e.residual != nil {
		addInto(y, e.residual[off:])
	}
	e.clamp.apply(y)
	if e.act != nil {
		e.act(y)
	}
}

// epTail is the nnTail that applies an epilogue e to the blocks of a
// product as they complete, the product's element (i, j) being the
// output's element base + i·ld + j. Kernels keep theirs in their plans.
type epTail struct {
	e        *epilogue
	base, ld int
}

// tail returns t as an nnTail, nil when it has no epilogue.
func (t *epTail) tail() nnTail {
	if t.e == nil {
		return nil
	}
	return t
}

func (t *epTail) finish(c []float32, ldc, i, j, rows, cols int) {
	if ldc == t.ld && cols == t.ld { // whole rows: one run of elements
		t.e.apply(c[:rows*cols], t.base+i*t.ld)
		return
	}
	for r := range rows {
		t.e.apply(c[r*ldc:r*ldc+cols], t.base+(i+r)*t.ld+j)
	}
}

// applyRows applies e to out, rows of cols elements, rows in parallel.
func (e *epilogue) applyRows(out []float32, cols int) {
	if e == nil || cols == 0 {
		return
	}
	parallelFor(len(out)/cols, 4*cols, func(lo, hi int) { e.apply(out[lo*cols:hi*cols], lo*cols) })
}

// addInto sets y[i] += x[i] for i < len(y); x is at least as long.
//
// Through axpy with a = 1 (1·x is exact, so its fused multiply-add rounds
// y + x once, as an add does), whose loop is called directly: the
// epilogues add short rows, where the elementwise dispatch cost more
// than the adds.
func addInto(y, x []float32) { axpy(y, x, 1) }

// fusedEpilogue returns the epilogue n carries for its float32 output of
// shape out: nil when n carries none, or when its residual has another
// shape than out (it broadcasts, as Add's operands do), which the kernel
// then leaves to unfusedEpilogue.
func fusedEpilogue(n opsem.Node, in []inference.Tensor, out []int) (*epilogue, error) {
	if !hasEpilogue(n) {
		return nil, nil
	}
	e := &epilogue{clamp: fusedClamp(n), biasIn: -1, residualIn: -1}
	if i, ok := fusedInput(n, passes.FusedResidual); ok {
		r := arg(in, i)
		if r.DType() != inference.Float32 || !slices.Equal(r.Shape(), out) {
			return nil, nil
		}
		e.residual, e.residualIn = dataOf[float32](r), i
	}
	if i, ok := fusedInput(n, passes.FusedBias); ok {
		b := arg(in, i)
		if b.DType() != inference.Float32 || b.Rank() != 1 || len(out) == 0 || b.Len() != out[len(out)-1] {
			return nil, fmt.Errorf("fused bias (input %d) is %v, want float32 [%d] for output %v: %w", i, b, out[len(out)-1:], out, inference.ErrShape)
		}
		e.bias, e.biasIn = dataOf[float32](b), i
	}
	act, err := fusedActivation(n)
	if err != nil {
		return nil, err
	}
	e.act = act
	return e, nil
}

// hasEpilogue reports whether n carries a fused epilogue.
func hasEpilogue(n opsem.Node) bool {
	for _, a := range []string{passes.FusedMin, passes.FusedActivation, passes.FusedBias, passes.FusedResidual} {
		if n.Has(a) {
			return true
		}
	}
	return false
}

// fusedInput returns the input the attribute attr names.
func fusedInput(n opsem.Node, attr string) (int, bool) {
	i := n.Int(attr, -1)
	return int(i), n.Has(attr) && i >= 0 && int(i) < len(n.Inputs)
}

// fusedClamp reads the clamp passes.FuseEpilogues put on n for a Relu or
// a Clip.
func fusedClamp(n opsem.Node) clamp {
	if !n.Has(passes.FusedMin) {
		return clamp{}
	}
	return clamp{on: true, lo: n.Float(passes.FusedMin, float32(math.Inf(-1))), hi: n.Float(passes.FusedMax, float32(math.Inf(1)))}
}

// fusedActivation returns n's fused activation other than a clamp (nil
// without one), applied in place to float32 values: the standalone
// kernel's function (its vector loop where it has one), and when it
// gates, v·act(v) rounded after each step as Mul(v, act(v)) is.
func fusedActivation(n opsem.Node) (func(y []float32), error) {
	op := n.Str(passes.FusedActivation, "")
	if op == "" {
		return nil, nil
	}
	attrs, ok := ewUnaryOps[op]
	if !ok {
		return nil, n.Unsupported("fused activation %q", op)
	}
	u, err := attrs(activationNode(n))
	if err != nil {
		return nil, err
	}
	vec := u.vec
	if vec == nil {
		f := u.float
		vec = func(y, x []float32) {
			for i, v := range x {
				y[i] = float32(f(float64(v)))
			}
		}
	}
	if n.Int(passes.FusedGate, 0) == 0 {
		return func(y []float32) { vec(y, y) }, nil
	}
	if op == "Sigmoid" { // SiLU, in one pass
		return func(y []float32) { silus(y, y) }, nil
	}
	return func(y []float32) {
		bufp := gateBuffers.get()
		defer gateBuffers.put(bufp)
		buf := *bufp
		for lo := 0; lo < len(y); lo += len(buf) {
			ys := y[lo:min(lo+len(buf), len(y))]
			a := buf[:len(ys)]
			vec(a, ys)
			for i, v := range a {
				ys[i] *= v
			}
		}
	}, nil
}

// gateBuffers holds the blocks a gating activation computes act(v) into
// before it multiplies: a buffer on the stack would escape through vec,
// a function value, and cost an allocation per block.
var gateBuffers = freeList[[]float32]{make: func() *[]float32 {
	buf := make([]float32, 1024)
	return &buf
}}

// activationNode is the activation node that n's epilogue replaced
// (passes.Activation), with n's opset.
func activationNode(n opsem.Node) opsem.Node {
	act, _ := passes.Activation(n.Node)
	return opsem.Node{Node: act, Opset: n.Opset, Run: n.Run}
}

// unfusedEpilogue applies n's epilogue to outs[0], the output its kernel
// computed without it, when applied (what fusedEpilogue returned) is nil:
// for a residual that broadcasts, or elements other than float32. It runs
// the kernels of the nodes the epilogue replaced, in their order. It
// returns outs as they are when the kernel failed, applied the epilogue,
// or n carries none.
func unfusedEpilogue(n opsem.Node, in []inference.Tensor, applied *epilogue, outs []inference.Tensor, err error) ([]inference.Tensor, error) {
	if err != nil || applied != nil || !hasEpilogue(n) {
		return outs, err
	}
	step := func(op string, attrs map[string]graph.Attr, opset int64, args ...inference.Tensor) error {
		node := opsem.Node{Node: &graph.Node{Name: n.Name, OpType: op, Attrs: attrs}, Opset: opset, Run: n.Run}
		r, err := kernels[op](node, args)
		if err == nil {
			outs = r[:1]
		}
		return err
	}
	for _, attr := range []string{passes.FusedBias, passes.FusedResidual} {
		if i, ok := fusedInput(n, attr); ok {
			if err := step("Add", nil, n.Opset, outs[0], arg(in, i)); err != nil {
				return nil, fmt.Errorf("fused Add of input %d: %w", i, err)
			}
		}
	}
	var err2 error
	switch c := fusedClamp(n); {
	case c.on && c.lo == 0 && math.IsInf(float64(c.hi), 1):
		err2 = step("Relu", nil, n.Opset, outs[0])
	case c.on: // Clip-6 takes the bounds as attributes
		err2 = step("Clip", map[string]graph.Attr{"min": {Type: graph.AttrFloat, Float: c.lo}, "max": {Type: graph.AttrFloat, Float: c.hi}}, 6, outs[0])
	}
	if err2 != nil {
		return nil, fmt.Errorf("fused clamp: %w", err2)
	}
	if op := n.Str(passes.FusedActivation, ""); op != "" {
		if _, ok := kernels[op]; !ok {
			return nil, n.Unsupported("fused activation %q", op)
		}
		v := outs[0]
		if err := step(op, activationNode(n).Attrs, n.Opset, v); err != nil {
			return nil, fmt.Errorf("fused %s: %w", op, err)
		}
		if n.Int(passes.FusedGate, 0) != 0 {
			if err := step("Mul", nil, n.Opset, v, outs[0]); err != nil {
				return nil, fmt.Errorf("fused %s gate: %w", op, err)
			}
		}
	}
	return outs, nil
}

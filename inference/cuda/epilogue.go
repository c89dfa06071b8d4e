package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// The epilogues passes.FuseEpilogues folds into Conv, Gemm and MatMul, as
// the device applies them after the product's GEMM: in one epilogue_f32
// launch, y = act(clamp(y + bias + residual)), in the CPU backend's order
// (cpu.fusedEpilogue).

// epilogue is the work a product's node carries past its GEMM.
type epilogue struct {
	bias     kernelArg // one per channel; a null pointer for none
	size     int64     // elements per channel and image: the bias is bias[(i / size) % channels]
	channels int64
	residual operand   // FusedResidual, absent for none
	resBias  kernelArg // the bias the residual's producer deferred to this read; a null pointer for none
	clamp    bool      // FusedMin and FusedMax
	lo, hi   float32
	act      int // a U_* code (FusedActivation), −1 for none
	a, b     float64
	gate     bool
}

// productEpilogue reads the epilogue l's node carries for its output y,
// with the bias the product's lowering found (a null pointer: none), of
// one value per channel of y's [images][channels][size].
func productEpilogue(l *lowering, y operand, bias kernelArg, size, channels int64) (epilogue, error) {
	e := epilogue{bias: bias, size: max(size, 1), channels: max(channels, 1), act: -1, resBias: intArg(0)}
	res, err := fusedResidual(l, y)
	if err != nil {
		return e, err
	}
	e.residual = res
	if l.Node.Has(passes.FusedMin) {
		e.clamp = true
		e.lo = l.Float(passes.FusedMin, float32(math.Inf(-1)))
		e.hi = l.Float(passes.FusedMax, float32(math.Inf(1)))
	}
	act, gate := passes.Activation(l.Node.Node)
	if act == nil {
		return e, nil
	}
	code, ok := unaryOps[act.OpType]
	if !ok {
		return e, l.NoKernel("fused activation %s", act.OpType)
	}
	n := opsem.Node{Node: act, Opset: l.Opset}
	if code == kernels.U_GELU {
		tanh, err := opsem.GeluTanh(n)
		if err != nil {
			return e, l.NoKernel("%v", err)
		}
		if tanh {
			code = kernels.U_GELU_TANH
		}
	}
	e.act, e.gate = code, gate
	e.a, e.b = opsem.ActivationAttrs(n)
	return e, nil
}

// pointwise reports whether the epilogue is at most a bias and a clamp: a
// function of each element and its channel alone, which a consumer that
// gathers the elements may apply as it reads them (lower_conv.go's
// deferred epilogues).
func (e epilogue) pointwise() bool { return !e.residual.Present() && e.act < 0 }

// none reports whether there is nothing to do.
func (e epilogue) none() bool {
	return !e.bias.ptr && !e.residual.Present() && !e.clamp && e.act < 0
}

// apply finishes y in place: one epilogue_f32 launch, or none when there
// is nothing to do. A residual of another shape than y (it broadcasts, as
// Add's operands do) is read in the same launch when it is constant along
// y's outer and inner dimensions (a row of columns, a channel's values:
// residualRun), else added by a broadcasting Add between the bias and the
// rest; one of y's shape takes the bias its producer offered
// (takeResidualBias).
func (e epilogue) apply(l *lowering, y operand) error {
	return e.finish(l, y, y)
}

// finish is apply for a product accumulated in prod: y itself for a
// float32 product, float32 scratch for a float16 one (y), into which one
// epilogue_f16 launch rounds the finished values once (even when there is
// no epilogue). A float16 product rounded into y itself (the GEMM's, by
// accumulator's choice, with a pointwise epilogue; FP16 mode's depthwise
// Conv, with any) takes its epilogue in place, in epilogue_rounded_f16:
// one rounding more, which FP16 mode allows.
func (e epilogue) finish(l *lowering, prod, y operand) error {
	half := y.DType == inference.Float16
	if prod.DType == inference.Float16 {
		if e.none() {
			return nil
		}
		if e.residual.Present() && !slices.Equal(e.residual.Shape, y.Shape) {
			return l.NoKernel("float16 product rounded before an epilogue whose residual %v broadcasts to %v", e.residual.Shape, y.Shape)
		}
		return l.Launch(kernels.EpilogueRoundedF16, y.Len(), append([]kernelArg{ptrArg(y)}, e.args(y.Len(), 1, 1)...)...)
	}
	rsize, rcount := int64(1), y.Len()
	if e.residual.Present() && !slices.Equal(e.residual.Shape, y.Shape) {
		if s, c, ok := residualRun(e.residual.Shape, y.Shape); ok {
			rsize, rcount = s, c
		} else if half {
			return l.NoKernel("fused residual %v broadcast to %v", e.residual.Shape, y.Shape)
		} else {
			if err := e.addResidual(l, y); err != nil {
				return err
			}
			e.bias, e.residual, e.resBias = intArg(0), operand{}, intArg(0)
		}
	} else {
		e.takeResidualBias(l, y)
	}
	args := e.args(y.Len(), rsize, rcount)
	if half {
		return l.Launch(kernels.EpilogueF16, y.Len(), append([]kernelArg{ptrArg(y), ptrArg(prod)}, args...)...)
	}
	if e.none() {
		return nil
	}
	return l.Launch(kernels.EpilogueF32, y.Len(), append([]kernelArg{ptrArg(y)}, args...)...)
}

// args are the epilogue kernels' arguments after the output (and the
// float32 product of epilogue_f16), for n elements and a residual read at
// (i / rsize) % rcount.
func (e epilogue) args(n, rsize, rcount int64) []kernelArg {
	return []kernelArg{e.bias, optionalArg(e.residual), intArg(n),
		intArg(e.size), intArg(e.channels), intArg(btoi(e.clamp)), floatArg(e.lo), floatArg(e.hi),
		intArg(e.act), floatArg(e.a), floatArg(e.b), intArg(btoi(e.gate)), e.resBias, intArg(rsize), intArg(rcount)}
}

// residualRun reports whether a residual of shape r, broadcast to y's
// shape, is residual[(i / size) % count] at y's element i: r's dimensions
// that are not 1 are one run that matches y's there, so the residual
// repeats along y's dimensions before the run and each of its elements
// along those after.
func residualRun(r, y []int) (size, count int64, ok bool) {
	if len(r) > len(y) {
		return 0, 0, false
	}
	pad := len(y) - len(r)
	first, last := -1, -1
	for i, d := range r {
		if d != 1 {
			if first < 0 {
				first = pad + i
			} else if last != pad+i-1 {
				return 0, 0, false // a gap of 1s between dimensions that are not
			}
			last = pad + i
			if d != y[pad+i] {
				return 0, 0, false
			}
		}
	}
	size, count = 1, 1
	if first < 0 {
		return 1, 1, true // a scalar
	}
	for i := first; i <= last; i++ {
		count *= int64(y[i])
	}
	for _, d := range y[last+1:] {
		size *= int64(d)
	}
	return size, count, true
}

// addResidual adds a residual that residualRun cannot index to the float32
// y, after the bias: a bias-only epilogue, then a broadcasting Add; the
// caller applies the rest.
func (e epilogue) addResidual(l *lowering, y operand) error {
	if e.residual.Present() && !slices.Equal(e.residual.Shape, y.Shape) {
		if e.bias.ptr {
			first := epilogue{bias: e.bias, size: e.size, channels: e.channels, act: -1}
			if err := first.apply(l, y); err != nil {
				return err
			}
		}
		return launchBroadcast(l, kernels.BinaryF32, kernels.B_ADD, y, y, e.residual)
	}
	return nil
}

// btoi is 1 for true, 0 for false: a kernel's flag.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fusedResidual returns the residual input the graph passes fused into the
// node (FusedResidual), or an absent operand: a tensor of y's type that
// y's shape broadcasts from.
func fusedResidual(l *lowering, y operand) (operand, error) {
	i := int(l.Int(passes.FusedResidual, -1))
	if !l.Node.Has(passes.FusedResidual) || i < 0 || i >= len(l.In) {
		return operand{}, nil // as the CPU backend reads it (cpu.fusedInput)
	}
	res := l.input(i)
	if !res.Present() || res.DType != y.DType {
		return operand{}, l.NoKernel("fused residual %v", res.DType)
	}
	if shape, err := opsem.BroadcastShape(y.Shape, res.Shape); err != nil || !slices.Equal(shape, y.Shape) {
		return operand{}, l.NoKernel("fused residual %v does not broadcast to the output %v", res.Shape, y.Shape)
	}
	return res, nil
}

// fusedBias returns the bias input the graph passes fused into a Gemm or
// MatMul (FusedBias), one per column of y, or a null pointer for none.
func fusedBias(l *lowering, y operand) (kernelArg, error) {
	i := int(l.Int(passes.FusedBias, -1))
	if !l.Node.Has(passes.FusedBias) || i < 0 || i >= len(l.In) {
		return intArg(0), nil
	}
	b := l.input(i)
	if y.Rank() == 0 || !b.Present() || b.DType != y.DType || b.Rank() != 1 || b.Shape[0] != y.Shape[y.Rank()-1] {
		return intArg(0), l.NoKernel("fused bias %v %v for the output %v", b.DType, b.Shape, y.Shape)
	}
	return ptrArg(b), nil
}

// A pointwise epilogue (a bias and a clamp) of a product whose output has
// one reader may run in that reader instead, when the reader gathers its
// input with a kernel that can apply it on the way (conv_im2col*_f32): the
// product's epilogue launch, and a pass over its output, go. The product
// queues its epilogue step and offers it (deferEpilogue); a reader that
// takes it (takeEpilogue) has the plan builder drop the step once the
// reader's lowering succeeds, so a reader sent to the host reads finished
// values.

// offeredEpilogue is a pointwise epilogue offered to the reader of value,
// applied by step (of the node's steps while lowering, of the plan's
// after).
type offeredEpilogue struct {
	value string
	step  int
	ep    epilogue
}

// applyOrOffer finishes the product prod into y (finish), and offers
// the epilogue to y's reader when it is pointwise, y has exactly one
// reader and is not a graph output, and prod is y (a float32 product, or
// a float16 one that roundsFirst).
func (e epilogue) applyOrOffer(l *lowering, prod, y operand) error {
	before := len(l.steps)
	if err := e.finish(l, prod, y); err != nil {
		return err
	}
	if len(l.steps) == before+1 && e.offerable(l, y) && prod.DType == y.DType {
		l.offer = &offeredEpilogue{value: y.Name, step: before, ep: e}
	}
	return nil
}

// offerable reports whether y's reader may apply e: a pointwise
// epilogue of y's only reader.
func (e epilogue) offerable(l *lowering, y operand) bool {
	return e.pointwise() && deferEpilogues && l.p.m.readers[y.Name] == 1
}

// roundsFirst reports whether the float16 product y, in FP16 mode, is
// rounded before its pointwise epilogue, because the Conv reading it
// applies the epilogue as it gathers (convPrologue) or with its residual
// (takeResidualBias), and the epilogue's launch goes: one more rounding
// than the float32 accumulator's, which FP16 mode's tolerance allows
// (inference.FP16). A float16 model's own products, in FP32 mode, round
// once.
func (e epilogue) roundsFirst(l *lowering, y operand) bool {
	if y.DType != inference.Float16 || l.p.m.precision != inference.FP16 || e.none() || !e.offerable(l, y) {
		return false
	}
	n := l.p.m.readBy[y.Name]
	if n == nil || n.OpType != "Conv" || n.Domain != "" {
		return false
	}
	r := &lowering{Node: opsem.Node{Node: n, Opset: l.Opset}, p: l.p}
	for _, name := range n.Inputs {
		r.In = append(r.In, l.p.operand(name))
	}
	if res := int(r.Int(passes.FusedResidual, -1)); r.Node.Has(passes.FusedResidual) && res > 0 && res < len(n.Inputs) &&
		n.Inputs[res] == y.Name {
		return !e.clamp && e.bias.ptr && len(n.Outputs) > 0 && slices.Equal(y.Shape, l.p.shapes[n.Outputs[0]])
	}
	if len(n.Inputs) < 2 || n.Inputs[0] != y.Name {
		return false
	}
	group, win, err := convOperands(r, r.In[0], r.In[1], false)
	return err == nil && gathers(r.In[0], group, win)
}

// takeResidualBias takes the epilogue offered to the reader of e's
// residual when it is a bias alone, of e's channels, which e then adds
// with the residual.
func (e *epilogue) takeResidualBias(l *lowering, y operand) {
	if !e.residual.Present() || !slices.Equal(e.residual.Shape, y.Shape) {
		return
	}
	o, ok := l.p.offered[e.residual.Name]
	if !ok || !takeEpilogues || o.ep.clamp || !o.ep.bias.ptr || o.ep.size != e.size || o.ep.channels != e.channels {
		return
	}
	l.absorbed = append(l.absorbed, e.residual.Name)
	e.resBias = o.ep.bias
}

// takeEpilogue returns the epilogue offered to the reader of x, which this
// node then applies, and whether there is one.
func (l *lowering) takeEpilogue(x operand) (epilogue, bool) {
	o, ok := l.p.offered[x.Name]
	if !ok || !takeEpilogues || o.ep.channels != int64(x.Shape[1]) {
		return epilogue{}, false
	}
	l.absorbed = append(l.absorbed, x.Name)
	return o.ep, true
}

// deferEpilogues lets products offer their epilogues, and takeEpilogues
// readers take them; tests turn them off to compare, and to see a
// product's own step finish what no reader took.
var deferEpilogues, takeEpilogues = true, true

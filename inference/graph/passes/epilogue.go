package passes

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The attributes FuseEpilogues gives a Conv, Gemm or MatMul that absorbed
// the nodes after it. The node then computes
//
//	y = act(product + bias + residual)
//
// in that order, as ONNX Runtime's FusedConv and FusedMatMul do, while the
// output is still in cache. The names carry a prefix no ONNX operator
// uses. A node carries FusedMin and FusedMax, or FusedActivation, or
// neither.
const (
	// FusedMin and FusedMax (floats) clamp the output to [FusedMin,
	// FusedMax]: a Relu (0, +inf), a Clip with constant bounds, or the
	// intersection of such clamps one after the other.
	FusedMin = "beamml.fused_min"
	FusedMax = "beamml.fused_max"
	// FusedActivation (a string) names the activation applied last, an
	// ONNX operator: Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Tanh or
	// Gelu. Its attributes are FusedAlpha and FusedBeta (floats:
	// LeakyRelu's alpha, HardSigmoid's alpha and beta, as
	// opsem.ActivationAttrs gives them) and FusedApproximate (a string:
	// Gelu's approximate). With FusedGate (an int, 1) the activation gates
	// its argument: y = v·act(v), as Mul(v, act(v)) computes it (SiLU is
	// a gated Sigmoid; exporters write HardSwish as a gated HardSigmoid).
	FusedActivation  = "beamml.activation"
	FusedAlpha       = "beamml.activation_alpha"
	FusedBeta        = "beamml.activation_beta"
	FusedApproximate = "beamml.activation_approximate"
	FusedGate        = "beamml.activation_gate"
	// FusedBias (an int) is the input that holds a bias added to each row
	// of a Gemm's or MatMul's output: a float32 constant of one value per
	// column, shape [N]. (A Conv's bias goes into its own input B.)
	FusedBias = "beamml.bias"
	// FusedResidual (an int) is the input that holds a tensor added to the
	// output: of the output's shape, or one that broadcasts with it as
	// Add's operands do, which the kernel may then add unfused.
	FusedResidual = "beamml.residual"
)

// Epilogues says what FuseEpilogues folds into the products: what a
// backend's kernels honour.
type Epilogues struct {
	// Ops lists the operators that take epilogues: "Conv", "Gemm",
	// "MatMul", and "BatchNormalization", which takes an activation
	// alone (a pre-activation network's BatchNormalization and Relu
	// before each convolution: DenseNet's, ResNet-v2's).
	Ops []string
	// Bias folds an Add of a constant bias: one value per output channel
	// of a Conv (into its input B, computed in float64: plain ONNX), or per
	// column of a Gemm or of a MatMul whose B is a constant matrix (input
	// FusedBias). A bias of one element counts as one per channel.
	Bias bool
	// Residual folds an Add of another tensor (input FusedResidual), after
	// the bias.
	Residual bool
	// Activations lists the activations folded last: "Relu" and "Clip"
	// (with constant bounds) as the clamp FusedMin/FusedMax; "Sigmoid",
	// "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh" and "Gelu" as
	// FusedActivation; "SiLU", Mul(x, Sigmoid(x)), and HardSwish written
	// Mul(x, HardSigmoid(x)) with alpha 1/6 and beta 1/2 (either operand
	// order), as FusedActivation with FusedGate.
	Activations []string
}

// AllEpilogues is every epilogue FuseEpilogues knows on the products;
// WithBatchNorm adds BatchNormalization.
var AllEpilogues = Epilogues{
	Ops:         []string{"Conv", "Gemm", "MatMul"},
	Bias:        true,
	Residual:    true,
	Activations: []string{"Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh", "Gelu", "SiLU"},
}

// WithBatchNorm returns e with BatchNormalization among its Ops.
func (e Epilogues) WithBatchNorm() Epilogues {
	e.Ops = append(slices.Clip(e.Ops), "BatchNormalization")
	return e
}

// FuseEpilogues folds into each Conv, Gemm and MatMul (those e.Ops names)
// the chain of nodes that follows it: a bias Add, then a residual Add, then
// an activation, each optional and each as e allows. A node joins the
// chain only when it is the only reader of the chain's output so far and
// that output is not a graph output; the product then outputs the chain's
// last value, and the nodes go; a BatchNormalization (where e.Ops names
// it) takes only the activation. A product that outputs float16 keeps its
// chain: the model rounds its output before the chain reads it. Every
// backend that runs the result must honour the attributes above on the
// operators it was given.
func FuseEpilogues(e Epilogues) Pass {
	return Pass{Name: "FuseEpilogues", Run: func(g *graph.Graph) (bool, error) {
		return fuseEpilogues(g, e), nil
	}}
}

func fuseEpilogues(g *graph.Graph, e Epilogues) bool {
	x := newIndex(g)
	opset := g.Opset()
	gone := map[*graph.Node]bool{}
	half := float16Values(g) // a float16 product is rounded before its epilogue
	for _, p := range g.Nodes {
		if gone[p] || p.Domain != "" || !slices.Contains(e.Ops, p.OpType) || len(p.Outputs) != 1 || fused(p) || half[p.Outputs[0]] {
			continue
		}
		var absorbed []*graph.Node
		// Before opset 7 an Add broadcasts only with its attributes, which
		// a fused Add would lose. A BatchNormalization takes its
		// activation alone.
		product := p.OpType != "BatchNormalization"
		if product && e.Bias && opset >= 7 {
			if add := fuseBias(x, p); add != nil {
				absorbed = append(absorbed, add)
			}
		}
		if product && e.Residual && opset >= 7 {
			if add := fuseResidual(x, p); add != nil {
				absorbed = append(absorbed, add)
			}
		}
		absorbed = append(absorbed, fuseActivation(x, p, e.Activations, opset)...)
		for _, n := range absorbed {
			gone[n] = true
		}
	}
	removeNodes(g, gone)
	if len(gone) > 0 {
		dropUnusedInitializers(g, (*graph.Graph).FreeValues)
	}
	return len(gone) > 0
}

// fused reports whether n carries an epilogue already.
func fused(n *graph.Node) bool {
	for _, a := range []string{FusedMin, FusedActivation, FusedBias, FusedResidual} {
		if n.Has(a) {
			return true
		}
	}
	return false
}

// absorb makes p output what n, its output's only reader, outputs; n is
// to go.
func (x *index) absorb(p, n *graph.Node) {
	for _, in := range n.Inputs {
		x.readers[in] = removeReader(x.readers[in], n)
	}
	p.Outputs[0] = n.Outputs[0]
	x.producer[n.Outputs[0]] = p
}

// appendInput gives p the input name at position at or later (after its
// own inputs, left out ones named ""), and records the position in the
// attribute attr.
func (x *index) appendInput(p *graph.Node, at int, name, attr string) {
	for len(p.Inputs) < at {
		p.Inputs = append(p.Inputs, "")
	}
	p.Attrs = withAttr(p.Attrs, attr, graph.Attr{Type: graph.AttrInt, Int: int64(len(p.Inputs))})
	p.Inputs = append(p.Inputs, name)
	x.readers[name] = append(x.readers[name], p)
}

// fuseBias folds the Add of a constant bias after p, and returns it.
func fuseBias(x *index, p *graph.Node) *graph.Node {
	add := x.only(p.Outputs[0])
	if !is(add, "Add") || len(add.Outputs) != 1 {
		return nil
	}
	name, ok := other(add, p.Outputs[0])
	bt, isConst := x.constant(name)
	b, isFloat := x.floats(name)
	if !ok || !isConst || !isFloat || len(b) == 0 {
		return nil
	}
	w, _ := x.constant(p.Input(1))
	switch p.OpType {
	case "Conv":
		if w.Rank() < 3 || w.DType() != inference.Float32 || !perChannel(bt.Shape(), w.Rank(), w.Shape()[0]) {
			return nil
		}
		if !convAddBias(x, p, b, w.Shape()[0]) {
			return nil
		}
	case "Gemm", "MatMul":
		if w.Rank() != 2 {
			return nil
		}
		cols := w.Shape()[1]
		if p.OpType == "Gemm" && p.Int("transB", 0) != 0 {
			cols = w.Shape()[0]
		}
		// The bias may not change the output's shape: [N] or one value,
		// or for Gemm's [M, N] output [1, N] too.
		sh := bt.Shape()
		fits := len(sh) <= 1 || (p.OpType == "Gemm" && len(sh) == 2 && sh[0] == 1)
		if !fits || (len(b) != cols && len(b) != 1) {
			return nil
		}
		if len(b) != cols || bt.Rank() != 1 {
			full := make([]float32, cols)
			for i := range full {
				full[i] = b[i%len(b)]
			}
			name = x.addInitializer(name+"_columns", mustTensor([]int{cols}, full))
		}
		own := 2
		if p.OpType == "Gemm" {
			own = 3
		}
		x.appendInput(p, own, name, FusedBias)
	default:
		return nil
	}
	x.absorb(p, add)
	return add
}

// perChannel reports whether a bias of shape s, added to a convolution's
// output of the given rank and channels, adds one value per channel (or
// one value) without changing the output's shape.
func perChannel(s []int, rank, channels int) bool {
	if len(s) > rank {
		return false
	}
	padded := append(slices.Repeat([]int{1}, rank-len(s)), s...)
	for i, d := range padded {
		if d != 1 && (i != 1 || d != channels) {
			return false
		}
	}
	return true
}

// convAddBias adds b (one value per channel, or one value) to the bias
// input of conv, as a new initializer.
func convAddBias(x *index, conv *graph.Node, b []float32, channels int) bool {
	sum := make([]float64, channels)
	if name := conv.Input(2); name != "" {
		own, ok := x.floats(name)
		if !ok || len(own) != channels {
			return false
		}
		for c, v := range own {
			sum[c] = float64(v)
		}
	}
	nb := make([]float32, channels)
	for c := range nb {
		nb[c] = float32(sum[c] + float64(b[c%len(b)]))
	}
	for len(conv.Inputs) < 3 {
		conv.Inputs = append(conv.Inputs, "")
	}
	conv.Inputs[2] = x.addInitializer(conv.Name+"_bias", mustTensor([]int{channels}, nb))
	return true
}

// fuseResidual folds the Add of another tensor after p, and returns it.
func fuseResidual(x *index, p *graph.Node) *graph.Node {
	add := x.only(p.Outputs[0])
	if !is(add, "Add") || len(add.Outputs) != 1 {
		return nil
	}
	res, ok := other(add, p.Outputs[0])
	if !ok || res == "" || res == p.Outputs[0] {
		return nil
	}
	own := map[string]int{"Conv": 3, "Gemm": 3, "MatMul": 2}[p.OpType]
	x.appendInput(p, own, res, FusedResidual)
	x.absorb(p, add)
	return add
}

// fuseActivation folds the activation after p, when acts allows it, and
// returns the nodes it replaces.
func fuseActivation(x *index, p *graph.Node, acts []string, opset int64) []*graph.Node {
	out := p.Outputs[0]
	if x.pinned[out] {
		return nil
	}
	if gate, mul := gateOf(x, out, opset); gate != nil {
		name := map[string]string{"Sigmoid": "SiLU", "HardSigmoid": "HardSwish"}[gate.OpType]
		if !slices.Contains(acts, name) {
			return nil
		}
		setActivation(p, opsem.Node{Node: gate, Opset: opset})
		p.Attrs[FusedGate] = graph.Attr{Type: graph.AttrInt, Int: 1}
		x.absorb(p, mul)
		return []*graph.Node{gate, mul}
	}
	act := x.only(out)
	if act == nil || act.Domain != "" || len(act.Outputs) != 1 || act.Input(0) != out || !slices.Contains(acts, act.OpType) {
		return nil
	}
	n := opsem.Node{Node: act, Opset: opset}
	switch act.OpType {
	case "Relu", "Clip":
		lo, hi, ok := activationBounds(x, n)
		if !ok {
			return nil
		}
		absorbed := []*graph.Node{act}
		x.absorb(p, act)
		// A clamp after a clamp (ReLU6 written Relu then Clip) is one
		// clamp to the intersection, when they intersect.
		for {
			next := x.only(p.Outputs[0])
			if next == nil || next.Domain != "" || len(next.Outputs) != 1 || next.Input(0) != p.Outputs[0] || !slices.Contains(acts, next.OpType) {
				break
			}
			l, h, ok := activationBounds(x, opsem.Node{Node: next, Opset: opset})
			if !ok || max(lo, l) > min(hi, h) {
				break
			}
			lo, hi = max(lo, l), min(hi, h)
			absorbed = append(absorbed, next)
			x.absorb(p, next)
		}
		p.Attrs = withAttr(p.Attrs, FusedMin, graph.Attr{Type: graph.AttrFloat, Float: lo})
		p.Attrs[FusedMax] = graph.Attr{Type: graph.AttrFloat, Float: hi}
		return absorbed
	case "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu", "Tanh", "Gelu":
		if _, err := opsem.GeluTanh(n); len(act.Inputs) != 1 || err != nil {
			return nil // a bad approximate fails when the node runs
		}
		setActivation(p, n)
	default:
		return nil
	}
	x.absorb(p, act)
	return []*graph.Node{act}
}

// setActivation gives p the activation act as FusedActivation and its
// attributes.
func setActivation(p *graph.Node, act opsem.Node) {
	p.Attrs = withAttr(p.Attrs, FusedActivation, graph.Attr{Type: graph.AttrString, String: act.OpType})
	alpha, beta := opsem.ActivationAttrs(act)
	if act.OpType == "LeakyRelu" || act.OpType == "HardSigmoid" {
		p.Attrs[FusedAlpha] = graph.Attr{Type: graph.AttrFloat, Float: float32(alpha)}
		p.Attrs[FusedBeta] = graph.Attr{Type: graph.AttrFloat, Float: float32(beta)}
	}
	if tanh, _ := opsem.GeluTanh(act); act.OpType == "Gelu" && tanh {
		p.Attrs[FusedApproximate] = graph.Attr{Type: graph.AttrString, String: "tanh"}
	}
}

// Activation returns the activation node p's epilogue applies last
// (FusedActivation), named as p and with the attributes of the node it
// replaced (alpha, beta, approximate), and whether it gates (FusedGate):
// what a backend runs with its standalone kernel for the operator. It is
// nil when p carries none.
func Activation(p *graph.Node) (act *graph.Node, gate bool) {
	op := p.Str(FusedActivation, "")
	if op == "" {
		return nil, false
	}
	attrs := map[string]graph.Attr{}
	for fused, name := range map[string]string{FusedAlpha: "alpha", FusedBeta: "beta", FusedApproximate: "approximate"} {
		if a, ok := p.Attrs[fused]; ok {
			attrs[name] = a
		}
	}
	return &graph.Node{Name: p.Name, OpType: op, Attrs: attrs}, p.Int(FusedGate, 0) != 0
}

// gateOf returns the nodes of Mul(v, gate(v)) when they are v's only
// readers and the gate's output has no other: gate a Sigmoid (SiLU), or a
// HardSigmoid of alpha 1/6 and beta 1/2 (HardSwish).
func gateOf(x *index, v string, opset int64) (gate, mul *graph.Node) {
	readers := x.readers[v]
	if len(readers) != 2 || readers[0] == readers[1] {
		return nil, nil
	}
	gate, mul = readers[0], readers[1]
	if is(gate, "Mul") {
		gate, mul = mul, gate
	}
	if !is(mul, "Mul") || len(gate.Inputs) != 1 || len(gate.Outputs) != 1 || len(mul.Outputs) != 1 || gate.Domain != "" {
		return nil, nil
	}
	switch gate.OpType {
	case "Sigmoid":
	case "HardSigmoid":
		alpha, beta := opsem.ActivationAttrs(opsem.Node{Node: gate, Opset: opset})
		if math.Abs(alpha-1.0/6) > 1e-6 || beta != 0.5 {
			return nil, nil
		}
	default:
		return nil, nil
	}
	if s, ok := other(mul, v); !ok || s != gate.Outputs[0] || x.only(s) != mul {
		return nil, nil
	}
	return gate, mul
}

// activationBounds returns the clamp a Relu or a constant-bounded float
// Clip applies.
func activationBounds(x *index, n opsem.Node) (lo, hi float32, ok bool) {
	switch {
	case n.OpType == "Relu":
		return 0, float32(math.Inf(1)), len(n.Inputs) == 1
	case n.OpType != "Clip":
		return 0, 0, false
	case n.Opset < 11:
		lo, hi = opsem.ClipBounds(n)
		return lo, hi, lo <= hi
	}
	lo, hi = float32(math.Inf(-1)), float32(math.Inf(1))
	for i, bound := range []*float32{&lo, &hi} {
		name := n.Input(i + 1)
		if name == "" {
			continue
		}
		v, ok := x.floats(name)
		if !ok || len(v) != 1 {
			return 0, 0, false
		}
		*bound = v[0]
	}
	return lo, hi, lo <= hi
}

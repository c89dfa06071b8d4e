package passes

import (
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// FoldBatchNorm folds each BatchNormalization that normalises with
// constant statistics into the Conv, ConvTranspose or Gemm that produces
// its input: with a = scale/√(var + epsilon) and b = B − mean·a per
// channel,
//
//	Conv:           W'[m, …] = a[m]·W[m, …]      bias'[m] = a[m]·bias[m] + b[m]
//	ConvTranspose:  W'[c, j, …] = a[m]·W[c, j, …], m = g·M/group + j for input channel c of group g
//	                                            bias'[m] = a[m]·bias[m] + b[m]
//	Gemm:           B'[·, n] = a[n]·B[·, n]      C'[n] = a[n]·beta·C[n] + b[n], beta' = 1
//
// (B' along its rows when transB), computed in float64 and stored as new
// float32 initializers. It folds only when the Conv's or Gemm's output has
// the BatchNormalization as its only reader and is not a graph output; the
// weights, the bias and the four statistics are constants (initializers no
// feed may override); the BatchNormalization does not train
// (training_mode) nor normalise per element (spatial=0 before opset 9) and
// names no output but Y; a Gemm's C, when given, is one value per column
// (shape [N], [1, N] or one element), and the model imports opset 7 or
// later. The result is plain ONNX, which every backend runs; its rounding
// differs from the unfolded graph's by a few units in the last place.
func FoldBatchNorm() Pass {
	return Pass{Name: "FoldBatchNorm", Run: func(g *graph.Graph) (bool, error) {
		return foldBatchNorm(g), nil
	}}
}

func foldBatchNorm(g *graph.Graph) bool {
	x := newIndex(g)
	opset := g.Opset()
	gone := map[*graph.Node]bool{}
	for _, bn := range g.Nodes {
		if !is(bn, "BatchNormalization") || len(bn.Inputs) < 5 {
			continue
		}
		p := x.producer[bn.Inputs[0]]
		if p == nil || x.only(bn.Inputs[0]) != bn || len(p.Outputs) != 1 || gone[p] {
			continue
		}
		a, b, ok := batchNormAffine(x, opsem.Node{Node: bn, Opset: opset})
		if !ok {
			continue
		}
		var folded bool
		switch {
		case is(p, "Conv"):
			folded = foldIntoConv(x, p, a, b)
		case is(p, "ConvTranspose"):
			folded = foldIntoConvTranspose(x, p, a, b)
		case is(p, "Gemm") && opset >= 7:
			folded = foldIntoGemm(x, p, a, b)
		}
		if folded {
			p.Outputs[0] = bn.Outputs[0]
			x.producer[bn.Outputs[0]] = p
			gone[bn] = true
		}
	}
	removeNodes(g, gone)
	if len(gone) > 0 {
		dropUnusedInitializers(g, (*graph.Graph).FreeValues)
	}
	return len(gone) > 0
}

// batchNormAffine returns the per-channel y = a·x + b of a
// BatchNormalization with constant statistics that does not train.
func batchNormAffine(x *index, bn opsem.Node) (a, b []float64, ok bool) {
	for _, o := range bn.Outputs[1:] {
		if o != "" {
			return nil, nil, false
		}
	}
	if (bn.Opset < 9 && bn.Int("spatial", 1) == 0) || (bn.Opset >= 14 && bn.Int("training_mode", 0) != 0) {
		return nil, nil, false
	}
	var stats [4][]float32 // scale, B, mean, var
	for i := range stats {
		if stats[i], ok = x.floats(bn.Inputs[i+1]); !ok || len(stats[i]) != len(stats[0]) {
			return nil, nil, false
		}
	}
	eps := opsem.Epsilon(bn)
	a, b = make([]float64, len(stats[0])), make([]float64, len(stats[0]))
	for c := range a {
		a[c] = float64(stats[0][c]) / math.Sqrt(float64(stats[3][c])+eps)
		b[c] = float64(stats[1][c]) - float64(stats[2][c])*a[c]
	}
	return a, b, true
}

// foldIntoConv scales the Conv's output channels by a and adds b.
func foldIntoConv(x *index, conv *graph.Node, a, b []float64) bool {
	w, ok := x.floats(conv.Input(1))
	wt, _ := x.constant(conv.Input(1))
	if !ok || wt.Rank() < 3 || wt.Shape()[0] != len(a) || len(w) == 0 {
		return false
	}
	nb, ok := foldedBias(x, conv.Input(2), a, b)
	if !ok {
		return false
	}
	per := len(w) / len(a)
	nw := make([]float32, len(w))
	for i, v := range w {
		nw[i] = float32(float64(v) * a[i/per])
	}
	conv.Inputs = []string{conv.Inputs[0],
		x.addInitializer(conv.Inputs[1]+"_bn", mustTensor(wt.Shape(), nw)),
		x.addInitializer(conv.Name+"_bias_bn", mustTensor([]int{len(a)}, nb))}
	return true
}

// foldIntoConvTranspose scales the ConvTranspose's output channels by a
// and adds b. Its W is [C, M/group, …]: input channel c (of group
// c/(C/group)) reaches output channel g·(M/group) + j through W[c, j, …].
func foldIntoConvTranspose(x *index, ct *graph.Node, a, b []float64) bool {
	w, ok := x.floats(ct.Input(1))
	wt, _ := x.constant(ct.Input(1))
	group := int(ct.Int("group", 1))
	if !ok || wt.Rank() < 3 || group < 1 || len(w) == 0 {
		return false
	}
	chans, per := wt.Shape()[0], wt.Shape()[1]
	if chans%group != 0 || per*group != len(a) {
		return false
	}
	nb, ok := foldedBias(x, ct.Input(2), a, b)
	if !ok {
		return false
	}
	taps := len(w) / (chans * per)
	nw := make([]float32, len(w))
	for i, v := range w {
		c, j := i/(per*taps), i/taps%per
		nw[i] = float32(float64(v) * a[c/(chans/group)*per+j])
	}
	ct.Inputs = []string{ct.Inputs[0],
		x.addInitializer(ct.Inputs[1]+"_bn", mustTensor(wt.Shape(), nw)),
		x.addInitializer(ct.Name+"_bias_bn", mustTensor([]int{len(a)}, nb))}
	return true
}

// foldedBias returns a·bias + b per output channel for a Conv's or
// ConvTranspose's optional bias input name (none: 0), or false when it is
// not a constant of one value per channel.
func foldedBias(x *index, name string, a, b []float64) ([]float32, bool) {
	bias := make([]float64, len(a))
	if name != "" {
		v, ok := x.floats(name)
		if !ok || len(v) != len(a) {
			return nil, false
		}
		for c, f := range v {
			bias[c] = float64(f)
		}
	}
	nb := make([]float32, len(a))
	for c := range a {
		nb[c] = float32(a[c]*bias[c] + b[c])
	}
	return nb, true
}

// foldIntoGemm scales the Gemm's output columns by a and adds b.
func foldIntoGemm(x *index, gemm *graph.Node, a, b []float64) bool {
	bw, ok := x.floats(gemm.Input(1))
	bt, _ := x.constant(gemm.Input(1))
	if !ok || bt.Rank() != 2 {
		return false
	}
	transB := gemm.Int("transB", 0) != 0
	rows, cols := bt.Shape()[0], bt.Shape()[1]
	if (transB && rows != len(a)) || (!transB && cols != len(a)) {
		return false
	}
	beta := float64(gemm.Float("beta", 1))
	bias := make([]float64, len(a))
	if name := gemm.Input(2); name != "" {
		ct, isConst := x.constant(name)
		v, ok := x.floats(name)
		s := ct.Shape()
		perColumn := (len(s) == 1 && s[0] == len(a)) || (len(s) == 2 && s[0] == 1 && s[1] == len(a))
		if !isConst || !ok || !(perColumn || len(v) == 1) {
			return false
		}
		for c := range bias {
			bias[c] = beta * float64(v[c%len(v)])
		}
	}
	nw := make([]float32, len(bw))
	for i, v := range bw {
		col := i % cols
		if transB {
			col = i / cols
		}
		nw[i] = float32(float64(v) * a[col])
	}
	nc := make([]float32, len(a))
	for c := range a {
		nc[c] = float32(a[c]*bias[c] + b[c])
	}
	gemm.Inputs = []string{gemm.Inputs[0],
		x.addInitializer(gemm.Inputs[1]+"_bn", mustTensor(bt.Shape(), nw)),
		x.addInitializer(gemm.Name+"_bias_bn", mustTensor([]int{len(a)}, nc))}
	gemm.Attrs = withAttr(gemm.Attrs, "beta", graph.Attr{Type: graph.AttrFloat, Float: 1})
	return true
}

// mustTensor builds a tensor whose data the caller sized for shape.
func mustTensor[T inference.Element](shape []int, data []T) inference.Tensor {
	t, err := inference.New(shape, data)
	if err != nil {
		panic("passes: " + err.Error()) // a bug in the pass, not in the model
	}
	return t
}

// withAttr returns attrs, allocated when nil, with name set to a.
func withAttr(attrs map[string]graph.Attr, name string, a graph.Attr) map[string]graph.Attr {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	attrs[name] = a
	return attrs
}

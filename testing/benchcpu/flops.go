package main

import (
	"fmt"

	"github.com/beamml/beamml/inference/graph"
)

// countedOps is the table header's note on what flops counts.
const countedOps = "2 per multiply-add of Conv, ConvTranspose, Gemm, MatMul and the LSTM, GRU and RNN gate products; other operators count 0"

// flops returns the floating-point operations of one run of g, 2 per
// multiply-add, from the shapes of the values the counted nodes read and
// write (shape returns a value's shape at the batch size of interest):
//
//	Conv            2·|Y|·|W|/W[0]   (every output element: C/group·∏kernel)
//	ConvTranspose   2·|X|·|W|/W[0]   (every input element: M/group·∏kernel)
//	Gemm            2·|Y|·K          (K: A's dimension 1, or 0 with transA)
//	MatMul          2·|Y|·K          (K: A's last dimension)
//	LSTM, GRU, RNN  2·(|X|/X[2])·(|W|+|R|)   (|X|/X[2] = steps·sequences
//	                in either layout; every step: x·Wᵀ and h·Rᵀ for all
//	                directions and gates)
//
// where |T| is T's element count. Other operators (elementwise,
// normalisation, softmax, pooling, bias adds) count 0, and so do the nodes
// of subgraphs. A counted node whose operand shape is unknown is an error.
func flops(g *graph.Graph, shape func(name string) ([]int, bool)) (int64, error) {
	var total int64
	for _, n := range g.Nodes {
		count, err := nodeFLOPs(n, shape)
		if err != nil {
			return 0, fmt.Errorf("node %s: %v", n, err)
		}
		total += count
	}
	return total, nil
}

// nodeFLOPs is flops for one node.
func nodeFLOPs(n *graph.Node, shape func(name string) ([]int, bool)) (int64, error) {
	if !countedOp[n.OpType] {
		return 0, nil
	}
	if len(n.Outputs) == 0 {
		return 0, fmt.Errorf("no outputs")
	}
	var shapes [3][]int
	for i, name := range [3]string{n.Input(0), n.Input(1), n.Outputs[0]} {
		s, ok := shape(name)
		if !ok {
			return 0, fmt.Errorf("shape of %q is unknown", name)
		}
		shapes[i] = s
	}
	x, w, y := shapes[0], shapes[1], shapes[2]
	switch n.OpType {
	case "Conv", "ConvTranspose":
		if len(w) == 0 || w[0] == 0 {
			return 0, fmt.Errorf("weights %q have shape %v", n.Input(1), w)
		}
		each := y
		if n.OpType == "ConvTranspose" {
			each = x
		}
		return 2 * elements(each) * (elements(w) / int64(w[0])), nil
	case "Gemm":
		if len(x) != 2 {
			return 0, fmt.Errorf("input %q has shape %v, want rank 2", n.Input(0), x)
		}
		return 2 * elements(y) * int64(x[1-min(int(n.Int("transA", 0)), 1)]), nil
	case "MatMul":
		if len(x) == 0 {
			return 0, fmt.Errorf("input %q is a scalar", n.Input(0))
		}
		return 2 * elements(y) * int64(x[len(x)-1]), nil
	}
	// LSTM, GRU, RNN.
	r, ok := shape(n.Input(2))
	if !ok {
		return 0, fmt.Errorf("shape of %q is unknown", n.Input(2))
	}
	if len(x) != 3 || x[2] == 0 {
		return 0, fmt.Errorf("input %q has shape %v, want rank 3 with input size > 0", n.Input(0), x)
	}
	return 2 * elements(x) / int64(x[2]) * (elements(w) + elements(r)), nil
}

// countedOp lists the operators flops counts.
var countedOp = map[string]bool{
	"Conv": true, "ConvTranspose": true, "Gemm": true, "MatMul": true, "LSTM": true, "GRU": true, "RNN": true,
}

func elements(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// shapesAt returns the shape of every value of g at batch size b: an
// initializer's own, else symbolic's (graph.InferShapes) at b.
func shapesAt(g *graph.Graph, symbolic map[string]graph.Shape, b int) func(string) ([]int, bool) {
	return func(name string) ([]int, bool) {
		if t, ok := g.Initializers[name]; ok {
			return t.Shape(), true
		}
		s, ok := symbolic[name]
		if !ok {
			return nil, false
		}
		return s.At(b), true
	}
}

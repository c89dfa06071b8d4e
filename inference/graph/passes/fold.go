package passes

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Evaluator computes one node on constant inputs, with the semantics of
// the given ai.onnx opset; backends pass the CPU's reference kernels
// (cpu.RunNode).
type Evaluator func(n *graph.Node, opset int64, in []inference.Tensor) ([]inference.Tensor, error)

// FoldConstants replaces every node whose inputs are all constants
// (initializers, or outputs of nodes folded before it) by initializers
// holding its outputs, computed with eval: Constant nodes, and the
// Shape-free arithmetic on weights that exporters emit. Nodes with
// subgraphs are left alone, and so is a node eval fails on (the error
// surfaces when the graph runs). Initializers that nothing reads any more
// are dropped.
func FoldConstants(eval Evaluator) Pass {
	return Pass{Name: "FoldConstants", Run: func(g *graph.Graph) (bool, error) {
		return foldConstants(g, eval) > 0, nil
	}}
}

func foldConstants(g *graph.Graph, eval Evaluator) int {
	feeds := map[string]bool{}
	for _, in := range g.Inputs {
		feeds[in.Name] = true
	}
	for _, in := range g.Overridable { // initializers a run may replace
		feeds[in.Name] = true
	}
	opset := g.Opset()
	var kept []*graph.Node
	folded := 0
	for _, n := range g.Nodes {
		if !foldable(g, n, feeds) {
			kept = append(kept, n)
			continue
		}
		in := make([]inference.Tensor, len(n.Inputs))
		for i, name := range n.Inputs {
			if name != "" {
				in[i] = g.Initializers[name]
			}
		}
		out, err := eval(n, opset, in)
		if err != nil || len(out) < countNamed(n.Outputs) {
			kept = append(kept, n)
			continue
		}
		for i, name := range n.Outputs {
			if name != "" {
				g.Initializers[name] = out[i]
			}
		}
		folded++
	}
	if folded == 0 {
		return 0
	}
	g.Nodes = kept
	used := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
		for _, sub := range n.Subgraphs() {
			for name := range sub.FreeValues() {
				used[name] = true
			}
		}
	}
	for _, o := range g.Outputs {
		used[o.Name] = true
	}
	for name := range g.Initializers {
		if !used[name] {
			delete(g.Initializers, name)
		}
	}
	return folded
}

func foldable(g *graph.Graph, n *graph.Node, feeds map[string]bool) bool {
	if len(n.Subgraphs()) > 0 || n.Domain != "" {
		return false
	}
	for _, in := range n.Inputs {
		if in == "" {
			continue
		}
		if _, ok := g.Initializers[in]; !ok || feeds[in] {
			return false
		}
	}
	return true
}

// countNamed is the number of outputs up to the last one the node names.
func countNamed(names []string) int {
	n := 0
	for i, s := range names {
		if s != "" {
			n = i + 1
		}
	}
	return n
}

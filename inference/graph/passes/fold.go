package passes

import (
	"context"
	"errors"
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

// Evaluator computes one node on constant inputs, with the semantics of
// the given ai.onnx opset, allocating under the limits r; backends pass the
// CPU's reference kernels (cpu.RunNode).
type Evaluator func(r *limit.Run, n *graph.Node, opset int64, in []inference.Tensor) ([]inference.Tensor, error)

// MinFoldBudget is the least memory constant folding may fill with new
// constants; a model may fold twice the size of its initializers if that
// is more. A model whose folding needs more (a ConstantOfShape of 10^12
// elements in a 162-byte file) fails to load.
const MinFoldBudget = 256 << 20

// FoldConstants replaces every node whose inputs are all constants
// (initializers, or outputs of nodes folded before it) by initializers
// holding its outputs, computed with eval: Constant nodes, and the
// Shape-free arithmetic on weights that exporters emit. Nodes with
// subgraphs are left alone, and so is a node eval fails on (the error
// surfaces when the graph runs). Initializers that nothing reads any more
// are dropped. The constants folded count against a budget, the larger of
// MinFoldBudget and twice the initializers' size: a graph that needs more
// fails with an error wrapping inference.ErrBadModel and
// inference.ErrResourceExhausted.
func FoldConstants(eval Evaluator) Pass {
	return Pass{Name: "FoldConstants", Run: func(g *graph.Graph) (bool, error) {
		folded, err := foldConstants(g, eval)
		return folded > 0, err
	}}
}

func foldConstants(g *graph.Graph, eval Evaluator) (int, error) {
	var weights int64
	for _, t := range g.Initializers {
		weights += t.ByteSize()
	}
	r := limit.New(context.Background(), max(MinFoldBudget, 2*weights))
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
		mark := r.InUse()
		out, err := eval(r, n, opset, in)
		r.Reset(mark)
		if errors.Is(err, inference.ErrResourceExhausted) {
			return folded, fmt.Errorf("graph %q: folding constant node %v: %w: %w", g.Name, n, inference.ErrBadModel, err)
		}
		if err != nil || len(out) < countNamed(n.Outputs) {
			kept = append(kept, n)
			continue
		}
		for i, name := range n.Outputs {
			if name != "" {
				g.Initializers[name] = out[i]
				r.Hold(out[i].ByteSize())
			}
		}
		folded++
	}
	if folded == 0 {
		return 0, nil
	}
	g.Nodes = kept
	dropUnusedInitializers(g, (*graph.Graph).FreeValues)
	return folded, nil
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

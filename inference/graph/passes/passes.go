// Package passes holds the graph rewrites that backends run at compile
// time: the float32 computation of float16 values (with float16
// rounding), constant folding, dead-node elimination, BatchNormalization
// folding, the recognition of the decomposed forms exporters write for
// LayerNormalization, Gelu, HardSwish and Attention, the fusion of bias, residual
// and activation epilogues into Conv, Gemm and MatMul, and, for a backend
// whose memory holds no strings, classifiers of string labels made ones
// of indices (IndexClassLabels). It is for backend writers. A backend's
// Compile composes the passes whose results its kernels run, and runs
// them with Optimize before it plans the rewritten graph (see
// graph.Compiler): the CPU backend runs all but IndexClassLabels, the
// CUDA backend those its lowerings honour.
//
// Every rewrite keeps the values a run returns under their names and
// leaves alone a value that is a graph output or is read inside a
// subgraph; it takes for constants only the initializers that no feed may
// override (graph.Graph's Overridable). (ComputeFloat16InFloat32, which
// gives float16 its meaning rather than optimising, computes those values
// in float32 too, and keeps their names and the graph's outputs' types.)
// The nodes a rewrite creates carry standard ONNX operators where one
// exists (LayerNormalization, Gelu, HardSwish, Attention, Cast), whatever opset the
// model imports, and names derived from the nodes they replace.
package passes

import (
	"fmt"

	"github.com/beamml/beamml/inference/graph"
)

// A Pass rewrites a graph in place. Run reports whether it changed the
// graph; it may leave the nodes out of order, since Optimize sorts them
// again.
type Pass struct {
	Name string
	Run  func(g *graph.Graph) (changed bool, err error)
}

// Optimize runs passes on g in order. After each pass that changed the
// graph it sorts g again (graph.Sort), so that every pass, and the
// executor after them, sees the nodes in topological order with LastUse
// right.
func Optimize(g *graph.Graph, passes ...Pass) error {
	for _, p := range passes {
		changed, err := p.Run(g)
		if err != nil {
			return fmt.Errorf("graph %q: pass %s: %w", g.Name, p.Name, err)
		}
		if changed {
			if err := g.Sort(nil); err != nil {
				return fmt.Errorf("graph %q: after pass %s: %w", g.Name, p.Name, err)
			}
		}
	}
	return nil
}

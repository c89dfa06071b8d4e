// Package passes holds the graph rewrites that backends run at compile
// time: constant folding and the fusions their kernels rely on. It is for
// backend writers. A backend's Compile composes the passes it needs and
// runs them with Optimize before it plans the rewritten graph (see
// graph.Compiler); the CPU and CUDA backends run FoldConstants with the
// CPU's reference kernels, then FuseActivations.
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

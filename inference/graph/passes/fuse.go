package passes

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The attributes FuseActivations gives a Conv whose only reader was a
// Relu or a Clip with constant bounds: the backend's Conv clamps its
// output to [FusedMin, FusedMax] while it is still in cache, and the
// activation node, its pass over memory and its output are gone. The names
// carry a prefix no ONNX operator uses.
const (
	FusedMin = "beamml.fused_min"
	FusedMax = "beamml.fused_max"
)

// FuseActivations folds each Relu, and each Clip whose bounds are
// constants, into the Conv that produces its input, when that Conv output
// has no other reader and is not a graph output. Every backend that runs
// the result must honour FusedMin and FusedMax on Conv.
func FuseActivations() Pass {
	return Pass{Name: "FuseActivations", Run: func(g *graph.Graph) (bool, error) {
		return fuseActivations(g), nil
	}}
}

func fuseActivations(g *graph.Graph) bool {
	readers := map[string]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in]++
		}
		for _, sub := range n.Subgraphs() {
			for name := range sub.FreeValues() {
				readers[name] += 2 // read inside a subgraph: never fuse it away
			}
		}
	}
	for _, o := range g.Outputs {
		readers[o.Name] += 2
	}
	producer := map[string]*graph.Node{}
	for _, n := range g.Nodes {
		if n.OpType == "Conv" && n.Domain == "" && len(n.Outputs) == 1 {
			producer[n.Outputs[0]] = n
		}
	}
	opset := g.Opset()
	var kept []*graph.Node
	changed := false
	for _, n := range g.Nodes {
		conv := producer[n.Input(0)]
		lo, hi, ok := activationBounds(g, opsem.Node{Node: n, Opset: opset})
		if !ok || conv == nil || readers[n.Input(0)] != 1 || len(n.Outputs) != 1 || conv.Has(FusedMin) {
			kept = append(kept, n)
			continue
		}
		conv.Attrs[FusedMin] = graph.Attr{Type: graph.AttrFloat, Float: lo}
		conv.Attrs[FusedMax] = graph.Attr{Type: graph.AttrFloat, Float: hi}
		conv.Outputs = []string{n.Outputs[0]}
		changed = true
	}
	g.Nodes = kept
	return changed
}

// activationBounds returns the clamp a Relu or a constant-bounded float
// Clip applies.
func activationBounds(g *graph.Graph, n opsem.Node) (lo, hi float32, ok bool) {
	switch {
	case n.Domain != "":
		return 0, 0, false
	case n.OpType == "Relu":
		return 0, float32(math.Inf(1)), true
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
		t, isConst := g.Initializers[name]
		overridable := slices.ContainsFunc(g.Overridable, func(v graph.Value) bool { return v.Name == name })
		v, err := inference.Data[float32](t)
		if !isConst || overridable || err != nil || len(v) != 1 {
			return 0, 0, false
		}
		*bound = v[0]
	}
	return lo, hi, lo <= hi
}

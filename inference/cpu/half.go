package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The CPU's kernels compute in float32, not in the 16-bit floats. A node
// that reads or makes float16 or bfloat16 values runs them widened
// (callKernel): each such input widened to float32 exactly
// (opsem.WidenToFloat32), the float16 tensor and dtype attributes likewise
// (opsem.WidenFloat16Attrs), the kernel run, and every output the model
// types float16 or bfloat16 (opsem.OutputDTypes) rounded to the nearest of
// its type (opsem.NarrowFromFloat32): node by node. For float16 that is
// the meaning passes.ComputeFloat16InFloat32 gives the whole graph (the
// CPU backend's Compile runs that pass, after which only Casts meet
// float16); bfloat16 meets the kernels that register it (registerTypes)
// this way in every graph. Graphs that keep their float16 reach the
// kernels this way too: another backend's (inference/cuda keeps float16
// on the device) when it runs a node on the host (RunNode), folds
// constants with RunNode, or infers its plans' shapes with a Model of its
// graph (NewModel). A bfloat16 tensor attribute (ConstantOfShape's value)
// reaches its kernel as it is.

// halfNative are the operators whose kernels take the 16-bit floats as
// they are: Cast converts from and to them, Shape and Size read only the
// shape, and TreeEnsemble (ai.onnx.ml) reads its float16 input and
// attributes as they are, rather than having its attributes widened at
// every run.
var halfNative = map[string]bool{"Cast": true, "Shape": true, "Size": true, "TreeEnsemble": true}

// callKernel runs k on n, widening the 16-bit floats as above when n reads
// or makes them.
func callKernel(k kernel, n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return newNodeCall(k, n.Node).call(n, in)
}

// nodeCall is what running a node takes beyond its inputs, read off the
// node once (a Model reads its nodes' at NewModel) rather than looked up
// by operator and attribute name at every run: its kernel, the inputs it
// moves (carried.go), and how it meets the 16-bit floats.
type nodeCall struct {
	k          kernel
	positions  []int // moves's
	moves      bool
	halfNative bool // halfNative: the kernel takes the 16-bit floats as they are
	halfAttrs  bool // opsem.HasFloat16Attrs
	// Where the node is in a model's graph (withPlace; nil otherwise):
	// whether it is the last reader of each input, whether a node of the
	// graph computed each input, and whether a later node or the graph's
	// outputs read each output.
	lastRead, computedIn, readLater []bool
	// weights holds the inputs that are initializers no feed overrides;
	// the others are zero Tensors (no element type).
	weights []inference.Tensor
}

func newNodeCall(k kernel, n *graph.Node) nodeCall {
	c := nodeCall{k: k, halfNative: halfNative[n.OpType], halfAttrs: opsem.HasFloat16Attrs(n)}
	c.positions, c.moves = moves(opsem.Node{Node: n})
	return c
}

// withPlace is c with the facts of node i of g's place in it; made holds
// the outputs of the nodes before it, overridable g's initializers that a
// feed may override.
func (c nodeCall) withPlace(g *graph.Graph, i int, made, overridable map[string]bool) nodeCall {
	n := g.Nodes[i]
	c.lastRead, c.computedIn, c.readLater = make([]bool, len(n.Inputs)), make([]bool, len(n.Inputs)), make([]bool, len(n.Outputs))
	c.weights = make([]inference.Tensor, len(n.Inputs))
	for j, name := range n.Inputs {
		last, ok := g.LastUse[name]
		c.lastRead[j], c.computedIn[j] = ok && last == i, made[name]
		if t, ok := g.Initializers[name]; ok && !overridable[name] && !made[name] {
			c.weights[j] = t
		}
	}
	for j, name := range n.Outputs {
		c.readLater[j] = g.LastUse[name] > i || graphOutput(g, name)
	}
	return c
}

// lastReads reports whether node i of g, whose call c is, is the last to
// read its input j, name.
func (c nodeCall) lastReads(g *graph.Graph, i, j int, name string) bool {
	if c.lastRead != nil {
		return c.lastRead[j]
	}
	last, ok := g.LastUse[name]
	return ok && last == i
}

// weight returns input j when it is an initializer no feed overrides.
func (c nodeCall) weight(j int) (inference.Tensor, bool) {
	if c.weights == nil || c.weights[j].DType() == 0 {
		return inference.Tensor{}, false
	}
	return c.weights[j], true
}

// computed reports whether node i's input j, name, is a value a node
// computed, not one fed (feeds) or an initializer.
func (c nodeCall) computed(feeds map[string]inference.Tensor, j int, name string) bool {
	if c.computedIn != nil {
		return c.computedIn[j]
	}
	_, fed := feeds[name]
	return !fed
}

// readsLater reports whether a node after node i of g, whose call c is,
// or g's outputs read its output j, name.
func (c nodeCall) readsLater(g *graph.Graph, i, j int, name string) bool {
	if c.readLater != nil {
		return c.readLater[j]
	}
	return g.LastUse[name] > i || graphOutput(g, name)
}

// call runs the kernel on n, carrying or widening as callKernel says.
func (c nodeCall) call(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	k := c.k
	if c.moves && needsCarrying(in, c.positions) {
		return runCarried(k, n, in, c.positions)
	}
	if c.halfNative || !c.halfAttrs && !hasHalf(in) {
		return k(n, in)
	}
	types := make([]inference.DType, len(in))
	wide := make([]inference.Tensor, len(in))
	for i, t := range in {
		types[i] = t.DType()
		w, err := opsem.WidenToFloat32(n.Run, t)
		if err != nil {
			return nil, fmt.Errorf("input %d widened to float32: %w", i, err)
		}
		wide[i] = w
	}
	node, err := opsem.WidenFloat16Attrs(n.Node)
	if err != nil {
		return nil, err
	}
	wn := n
	wn.Node = node
	out, err := k(wn, wide)
	if err != nil {
		return nil, err
	}
	want := opsem.OutputDTypes(n, types)
	for j, t := range out {
		if j < len(want) && isHalf(want[j]) {
			if out[j], err = opsem.NarrowFromFloat32(n.Run, t, want[j]); err != nil {
				return nil, fmt.Errorf("output %d rounded to %v: %w", j, want[j], err)
			}
		}
	}
	return out, nil
}

// isHalf reports whether d is a 16-bit float: float16 or bfloat16.
func isHalf(d inference.DType) bool { return d == inference.Float16 || d == inference.BFloat16 }

// hasHalf reports whether a tensor of in is float16 or bfloat16.
func hasHalf(in []inference.Tensor) bool {
	for _, t := range in {
		if isHalf(t.DType()) {
			return true
		}
	}
	return false
}

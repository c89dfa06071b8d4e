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
// node once (its schedule's step holds it) rather than looked up by
// operator and attribute name at every run: its kernel, the inputs it
// moves (carried.go), and how it meets the 16-bit floats.
type nodeCall struct {
	k          kernel
	positions  []int // moves's
	moves      bool
	halfNative bool // halfNative: the kernel takes the 16-bit floats as they are
	halfAttrs  bool // opsem.HasFloat16Attrs
}

func newNodeCall(k kernel, n *graph.Node) nodeCall {
	c := nodeCall{k: k, halfNative: halfNative[n.OpType], halfAttrs: opsem.HasFloat16Attrs(n)}
	c.positions, c.moves = moves(opsem.Node{Node: n})
	return c
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

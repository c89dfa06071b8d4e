package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The CPU's kernels compute in float32. A node that reads or makes float16
// values runs them widened (callKernel): each float16 input widened to
// float32 exactly, the float16 tensor and dtype attributes likewise
// (opsem.WidenFloat16Attrs), the kernel run, and every output the model
// types float16 (opsem.OutputDTypes) rounded to the nearest float16: node
// by node, the meaning passes.ComputeFloat16InFloat32 gives the whole
// graph (the CPU backend's Compile runs that pass, after which only Casts
// meet float16). Graphs that keep their float16 reach the kernels this way:
// another backend's (inference/cuda keeps float16 on the device) when it
// runs a node on the host (RunNode), folds constants with RunNode, or
// infers its plans' shapes with a Model of its graph (NewModel).

// halfNative are the operators whose kernels take float16 as it is: Cast
// converts from and to it, Shape and Size read only the shape, and
// TreeEnsemble (ai.onnx.ml) reads its float16 input and attributes as
// they are, rather than having its attributes widened at every run.
var halfNative = map[string]bool{"Cast": true, "Shape": true, "Size": true, "TreeEnsemble": true}

// callKernel runs k on n, widening float16 as above when n reads or makes
// float16.
func callKernel(k kernel, n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if positions, ok := moves(n); ok && needsCarrying(in, positions) {
		return runCarried(k, n, in, positions)
	}
	if halfNative[n.OpType] || !readsFloat16(n.Node, in) {
		return k(n, in)
	}
	types := make([]inference.DType, len(in))
	wide := make([]inference.Tensor, len(in))
	for i, t := range in {
		types[i] = t.DType()
		w, err := opsem.WidenFloat16(n.Run, t)
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
		if j < len(want) && want[j] == inference.Float16 {
			if out[j], err = opsem.NarrowToFloat16(n.Run, t); err != nil {
				return nil, fmt.Errorf("output %d rounded to float16: %w", j, err)
			}
		}
	}
	return out, nil
}

// readsFloat16 reports whether n has a float16 input, a float16 tensor
// attribute or a dtype attribute of float16.
func readsFloat16(n *graph.Node, in []inference.Tensor) bool {
	for _, t := range in {
		if t.DType() == inference.Float16 {
			return true
		}
	}
	return opsem.HasFloat16Attrs(n)
}

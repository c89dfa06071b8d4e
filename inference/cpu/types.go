package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// baseTypes are the element types every kernel is written for (float16
// reaching most of them widened, callKernel): a kernel that refuses one of
// them for its operator does so when it runs, with ErrType, as it always
// has. The other types a Tensor holds reach only the kernels that name
// them (registerTypes, or movement below); checkTypes refuses the rest at
// load.
var baseTypes = []inference.DType{inference.Float32, inference.Int64, inference.Int32, inference.Bool, inference.Uint8, inference.Float16}

// kernelTypes maps an operator (its opKey) to the element types beyond
// baseTypes that its kernel computes.
var kernelTypes = map[string][]inference.DType{}

// registerTypes records that the kernel of op (an opKey: "Cast",
// "ai.onnx.ml.TreeEnsemble") computes the element types ds besides
// baseTypes; called from the init functions of the op files.
func registerTypes(op string, ds ...inference.DType) {
	kernelTypes[op] = append(kernelTypes[op], ds...)
}

// computes reports whether op's kernel takes or makes values of type d.
func computes(op string, d inference.DType) bool {
	_, moved := movement[op]
	return d == 0 || slices.Contains(baseTypes, d) || moved || slices.Contains(kernelTypes[op], d)
}

// checkTypes reports the first node of g, or of the graphs nested in it,
// that reads or makes a value of an element type its kernel does not
// compute, as an *inference.UnsupportedOpError wrapping
// inference.ErrUnsupportedType that names the node, the value and the type.
// The types are the graph's declared inputs, its initializers and what
// opsem.OutputDTypes gives each node; outer holds those of the values a
// nested graph sees from its enclosing ones.
func checkTypes(g *graph.Graph, outer map[string]inference.DType) error {
	types := map[string]inference.DType{}
	for name, d := range outer {
		types[name] = d
	}
	for _, v := range slices.Concat(g.Inputs, g.Overridable) {
		types[v.Name] = v.DType
	}
	for name, t := range g.Initializers {
		types[name] = t.DType()
	}
	for _, n := range g.Nodes {
		in := make([]inference.DType, len(n.Inputs))
		for i, name := range n.Inputs {
			in[i] = types[name]
		}
		subs := n.Subgraphs()
		for _, sub := range subs {
			if err := checkTypes(sub, types); err != nil {
				return err
			}
		}
		var out []inference.DType
		if len(subs) == 0 {
			out = opsem.OutputDTypes(opsem.Node{Node: n, Opset: g.Opset()}, in)
		}
		for i, name := range n.Outputs {
			if i < len(out) && name != "" {
				types[name] = out[i]
			}
		}
		if len(subs) > 0 || seqKernels[n.OpType] != nil {
			continue // their values pass through; the nodes that compute them are checked
		}
		for _, side := range []struct {
			what  string
			names []string
			types []inference.DType
		}{{"input", n.Inputs, in}, {"output", n.Outputs, out}} {
			for i, d := range side.types {
				if i < len(side.names) && side.names[i] != "" && !computes(opKey(n), d) {
					return &inference.UnsupportedOpError{Node: n.Name, Op: opKey(n), Opset: g.OpsetOf(n), Type: true,
						Detail: fmt.Sprintf("%s %q of element type %s", side.what, side.names[i], inference.ONNXTypeName(inference.DTypeToONNX(d)))}
				}
			}
		}
	}
	return nil
}

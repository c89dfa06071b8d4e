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

// The element types beyond baseTypes, grouped as the ONNX schemas of the
// numeric operators admit them.
var (
	moreFloats   = []inference.DType{inference.Float64, inference.BFloat16}
	moreSigned   = []inference.DType{inference.Int8, inference.Int16}
	moreUnsigned = []inference.DType{inference.Uint16, inference.Uint32, inference.Uint64}
	moreNumbers  = slices.Concat(moreFloats, moreSigned, moreUnsigned)
)

// kernelTypes maps an operator to the element types beyond baseTypes that
// its kernel computes in every input and output; inputTypes to those it
// computes in one input only (Pow's exponent), by the input's position.
var (
	kernelTypes = map[string][]inference.DType{}
	inputTypes  = map[string]map[int][]inference.DType{}
)

// registerTypes records that op's kernel (op an opKey: "Cast",
// "ai.onnx.ml.Scaler") computes the element types ds besides baseTypes;
// called from the init functions of the op files.
func registerTypes(op string, ds ...inference.DType) {
	kernelTypes[op] = append(kernelTypes[op], ds...)
}

// registerInputTypes records that op's kernel computes the element types
// ds in its input i besides those registerTypes gives.
func registerInputTypes(op string, i int, ds ...inference.DType) {
	if inputTypes[op] == nil {
		inputTypes[op] = map[int][]inference.DType{}
	}
	inputTypes[op][i] = append(inputTypes[op][i], ds...)
}

// computes reports whether op's kernel takes or makes values of type d,
// in input i when input (else in an output); moved says the node only
// moves elements (moves), which every type can.
func computes(op string, moved bool, d inference.DType, input bool, i int) bool {
	return d == 0 || slices.Contains(baseTypes, d) || moved || slices.Contains(kernelTypes[op], d) ||
		input && slices.Contains(inputTypes[op][i], d)
}

// checkTypes reports the first node of g, or of the graphs nested in it,
// that reads or makes a value of an element type its kernel does not
// compute, as an *inference.UnsupportedOpError wrapping
// inference.ErrUnsupportedType that names the node, the value and the type.
// The types are opsem.ValueTypes'; outer holds those of the values a
// nested graph sees from its enclosing ones.
func checkTypes(g *graph.Graph, outer map[string]inference.DType) error {
	types := opsem.ValueTypes(g, outer)
	typesOf := func(names []string) []inference.DType {
		ds := make([]inference.DType, len(names))
		for i, name := range names {
			ds[i] = types[name]
		}
		return ds
	}
	for _, n := range g.Nodes {
		subs := n.Subgraphs()
		for _, sub := range subs {
			if err := checkTypes(sub, types); err != nil {
				return err
			}
		}
		if len(subs) > 0 || seqKernels[n.OpType] != nil {
			continue // their values pass through; the nodes that compute them are checked
		}
		in, out := typesOf(n.Inputs), typesOf(n.Outputs)
		_, moved := moves(opsem.Node{Node: n, Opset: g.OpsetOf(n)})
		for _, side := range []struct {
			what  string
			names []string
			types []inference.DType
		}{{"input", n.Inputs, in}, {"output", n.Outputs, out}} {
			for i, d := range side.types {
				if i < len(side.names) && side.names[i] != "" && !computes(opKey(n), moved, d, side.what == "input", i) {
					return &inference.UnsupportedOpError{Node: n.Name, Op: opKey(n), Opset: g.OpsetOf(n), Type: true,
						Detail: fmt.Sprintf("%s %q of element type %s", side.what, side.names[i], inference.ONNXTypeName(inference.DTypeToONNX(d)))}
				}
			}
		}
	}
	return nil
}

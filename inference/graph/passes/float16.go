package passes

import (
	"fmt"
	"maps"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// ComputeFloat16InFloat32 rewrites a graph that holds float16 values so
// that every backend runs it with float32 kernels, with float16 storage
// semantics: each value the model computes in float16 is computed in
// float32 and rounded to the nearest float16 (ties to even,
// inference.HalfFromFloat32) before anything reads it, so a run gives
// what a model that stores float16 between its operators gives when each
// operator computes in float32. The rewrite, in g and the graphs nested
// in its nodes:
//   - a float16 initializer becomes a float32 one, exactly; an overridable
//     one (graph.Graph's Overridable) stays float16 and is cast like an
//     input;
//   - a float16 input of the model's graph keeps its name and type (feeds
//     are float16) and is read through a Cast to float32;
//   - a node output the model computes in float16 is computed in float32
//     (the node outputs a new name) and rounded by a Cast to float16 and a
//     Cast back to float32 under the old name, which its readers read;
//     a Cast to float16 needs only the Cast back. Operators that only move
//     or select their inputs' values (Reshape, Transpose, Gather, Concat,
//     Relu, Max, Where, …, and If, Loop and Scan, whose bodies round) are
//     not rounded: their outputs are float16 values already;
//   - a float16 output of the model's graph keeps its name and type: it is
//     the Cast to float16 of its float32 value (read, where nodes read it,
//     through a Cast back to float32);
//   - float16 tensors in attributes (Constant's and ConstantOfShape's
//     value) become float32 ones, and an attribute dtype of 10 (ONNX's
//     FLOAT16: EyeLike, RandomNormal, RandomUniform and their Like forms,
//     Bernoulli) becomes 1 (FLOAT), rounded as above;
//   - the declared float16 inputs and outputs of nested graphs are
//     declared float32.
//
// Which values are float16 follows the element types the ONNX operators
// give their outputs (the type of input 0 for most; Shape's int64, Cast's
// to, Where's input 1, …). The graph's outputs keep their names, and a
// graph without float16 is left as it is (changed is false). Backends run
// it before their other passes, optimised or not: it gives the model its
// meaning, and the CPU's and the GPU's Cast kernels do the rounding.
func ComputeFloat16InFloat32() Pass {
	return Pass{Name: "ComputeFloat16InFloat32", Run: func(g *graph.Graph) (bool, error) {
		if !mentionsFloat16(g) {
			return false, nil
		}
		r := &halfRewrite{x: newIndex(g), opset: g.Opset(), types: map[*graph.Graph]map[string]inference.DType{}}
		r.inferTypes(g, nil, nil)
		return true, r.graph(g, true)
	}}
}

// onnxFloat16 and onnxFloat are ONNX's TensorProto.DataType numbers of
// float16 and float32.
const (
	onnxFloat16 = 10
	onnxFloat   = 1
)

// mentionsFloat16 reports whether g, or a graph nested in it, holds a
// float16 value: a declared input or output, an initializer, a tensor
// attribute, a Cast to float16 or an attribute dtype of float16.
func mentionsFloat16(g *graph.Graph) bool {
	for _, v := range slices.Concat(g.Inputs, g.Overridable, g.Outputs) {
		if v.DType == inference.Float16 {
			return true
		}
	}
	for _, t := range g.Initializers {
		if t.DType() == inference.Float16 {
			return true
		}
	}
	for _, n := range g.Nodes {
		if n.OpType == "Cast" && n.Domain == "" {
			if to, err := opsem.CastTarget(opsem.Node{Node: n}); err == nil && to == inference.Float16 {
				return true
			}
		}
		if opsem.HasFloat16Attrs(n) {
			return true
		}
		for _, sub := range n.Subgraphs() {
			if sub != nil && mentionsFloat16(sub) {
				return true
			}
		}
	}
	return false
}

// float16Values returns the values of g that the model computes in
// float16 (its inputs, initializers and node outputs; not those of nested
// graphs), or nil when g holds no float16 (mentionsFloat16). A pass that
// merges nodes must not merge across one: the model rounds it, a fused
// kernel would not (backends that keep float16, inference/cuda, run the
// graph passes after it, ComputeFloat16InFloat32 does not run there).
func float16Values(g *graph.Graph) map[string]bool {
	if !mentionsFloat16(g) {
		return nil
	}
	r := &halfRewrite{opset: g.Opset(), types: map[*graph.Graph]map[string]inference.DType{}}
	half := map[string]bool{}
	for name, t := range r.inferTypes(g, nil, nil) {
		if t == inference.Float16 {
			half[name] = true
		}
	}
	return half
}

// halfRewrite is the state of one ComputeFloat16InFloat32 rewrite.
type halfRewrite struct {
	x     *index // of the model's graph: its fresh names are unique in every nested graph too
	opset int64
	// types holds, for g and each graph nested in it, the element type of
	// every value visible there, as the model computes it: worked out
	// before anything is rewritten.
	types map[*graph.Graph]map[string]inference.DType
}

// inferTypes fills r.types for g, whose enclosing graphs' values have the
// types outer, and for the graphs nested in it; it returns g's. An input
// of g that declares no type has the type bound at its position, the type
// of what the node running g binds to it. A value whose type it cannot
// tell is 0.
func (r *halfRewrite) inferTypes(g *graph.Graph, outer map[string]inference.DType, bound []inference.DType) map[string]inference.DType {
	types := maps.Clone(outer)
	if types == nil {
		types = map[string]inference.DType{}
	}
	for i, v := range slices.Concat(g.Inputs, g.Overridable) {
		types[v.Name] = v.DType
		if v.DType == 0 && i < len(bound) && i < len(g.Inputs) {
			types[v.Name] = bound[i]
		}
	}
	for name, t := range g.Initializers {
		types[name] = t.DType()
	}
	for _, n := range g.Nodes {
		out := r.outputTypes(n, types)
		for i, name := range n.Outputs {
			if name != "" && i < len(out) {
				types[name] = out[i]
			}
		}
	}
	r.types[g] = types
	return types
}

// outputTypes returns the element types of n's outputs, the types of
// the values it reads being types (opsem.OutputDTypes); the graphs nested
// in n get theirs on the way.
func (r *halfRewrite) outputTypes(n *graph.Node, types map[string]inference.DType) []inference.DType {
	if len(n.Subgraphs()) > 0 {
		return r.subgraphOutputTypes(n, types, make([]inference.DType, len(n.Outputs)))
	}
	in := make([]inference.DType, len(n.Inputs))
	for i, name := range n.Inputs {
		if name != "" {
			in[i] = types[name]
		}
	}
	return opsem.OutputDTypes(opsem.Node{Node: n, Opset: r.opset}, in)
}

// subgraphOutputTypes gives out, the outputs of n, which runs graphs (If,
// Loop, Scan, …), the types their bodies compute, and fills r.types for
// those graphs: an untyped input of a body takes the type of what n binds
// to it.
func (r *halfRewrite) subgraphOutputTypes(n *graph.Node, types map[string]inference.DType, out []inference.DType) []inference.DType {
	typeOf := func(i int) inference.DType { return types[n.Input(i)] }
	results := func(sub *graph.Graph, inner map[string]inference.DType, skip int) {
		for i, o := range sub.Outputs[min(skip, len(sub.Outputs)):] {
			if i < len(out) {
				out[i] = o.DType
				if out[i] == 0 {
					out[i] = inner[o.Name]
				}
			}
		}
	}
	var subs []*graph.Graph
	for _, name := range slices.Sorted(maps.Keys(n.Attrs)) {
		switch a := n.Attrs[name]; a.Type {
		case graph.AttrGraph:
			subs = append(subs, a.Graph)
		case graph.AttrGraphs:
			subs = append(subs, a.Graphs...)
		}
	}
	for _, sub := range subs {
		if sub == nil {
			continue
		}
		var inputs []inference.DType
		skip := 0
		switch {
		case n.Domain == "" && n.OpType == "Loop":
			// The body reads the iteration number, the condition and the
			// loop-carried values; it returns the condition first.
			inputs = []inference.DType{inference.Int64, inference.Bool}
			for i := 2; i < len(n.Inputs); i++ {
				inputs = append(inputs, typeOf(i))
			}
			skip = 1
		case n.Domain == "" && n.OpType == "Scan":
			from := 0
			if r.opset < 9 {
				from = 1 // Scan-8's first input is sequence_lens
			}
			for i := from; i < len(n.Inputs); i++ {
				inputs = append(inputs, typeOf(i))
			}
		}
		inner := r.inferTypes(sub, types, inputs)
		if n.Domain == "" && n.OpType == "If" && sub != n.Attrs["then_branch"].Graph {
			continue // the branches agree; then_branch says
		}
		results(sub, inner, skip)
	}
	return out
}

// exactOps are the operators whose outputs are values of their inputs or
// constants (0, 1, a value attribute): given values a float16 holds, they
// produce values a float16 holds, and need no rounding.
var exactOps = map[string]bool{
	"Identity": true, "Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true,
	"Transpose": true, "Expand": true, "Tile": true, "Concat": true, "Split": true, "Slice": true,
	"Gather": true, "GatherElements": true, "GatherND": true, "Compress": true, "ReverseSequence": true,
	"DepthToSpace": true, "SpaceToDepth": true, "Trilu": true, "CenterCropPad": true,
	"Where": true, "Max": true, "Min": true, "ReduceMax": true, "ReduceMin": true,
	"MaxPool": true, "GlobalMaxPool": true, "MaxUnpool": true, "TopK": true, "Unique": true,
	"Relu": true, "Abs": true, "Neg": true, "Sign": true, "Ceil": true, "Floor": true, "Round": true,
	"Hardmax": true, "Constant": true, "ConstantOfShape": true, "EyeLike": true, "OneHot": true, "Bernoulli": true,
	"SequenceConstruct": true, "SequenceEmpty": true, "SequenceInsert": true, "SequenceErase": true,
	"SequenceAt": true, "SplitToSequence": true, "ConcatFromSequence": true,
	"Optional": true, "OptionalGetElement": true,
}

// exact reports whether n's float16 outputs need no rounding: n is in
// exactOps; or a Pad or Clip whose constant and bounds are float16 inputs
// (Pad-11 and Clip-11 on; before, float32 attributes); or n runs graphs
// (If, Loop, Scan, SequenceMap), whose nodes round what they compute.
func (r *halfRewrite) exact(n *graph.Node) bool {
	if len(n.Subgraphs()) > 0 {
		return true
	}
	if n.Domain != "" {
		return false
	}
	switch n.OpType {
	case "Pad", "Clip":
		return r.opset >= 11
	}
	return exactOps[n.OpType]
}

// readValues returns the values that g's nodes read, directly or inside
// their subgraphs.
func readValues(g *graph.Graph) map[string]bool {
	read := map[string]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" {
				read[in] = true
			}
		}
		for _, sub := range n.Subgraphs() {
			if sub != nil {
				maps.Copy(read, sub.FreeValues())
			}
		}
	}
	return read
}

// cast returns a Cast node named name (made fresh) from value in to value
// out of the ONNX type to.
func (r *halfRewrite) cast(name, in, out string, to int64) *graph.Node {
	return &graph.Node{Name: r.x.fresh(name), OpType: "Cast", Inputs: []string{in}, Outputs: []string{out},
		Attrs: map[string]graph.Attr{"to": {Type: graph.AttrInt, Int: to}}}
}

// graph rewrites g and the graphs nested in it, with the types inferTypes
// found. g is the model's graph when top: then its inputs and outputs keep
// their float16 type; a nested graph's are float32 like everything else.
func (r *halfRewrite) graph(g *graph.Graph, top bool) error {
	types := r.types[g]
	for _, n := range g.Nodes {
		for _, sub := range n.Subgraphs() {
			if sub != nil {
				if err := r.graph(sub, false); err != nil {
					return err
				}
			}
		}
	}
	read := readValues(g)
	returned := map[string]bool{}
	for _, o := range g.Outputs {
		returned[o.Name] = true
	}
	// renames are the float16 values whose readers read a float32 copy
	// under another name; added are the Casts that read the float16 ones.
	renames := map[string]string{}
	added := map[*graph.Node]bool{}
	var front []*graph.Node

	overridable := map[string]bool{}
	for _, v := range g.Overridable {
		overridable[v.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(g.Initializers)) {
		t := g.Initializers[name]
		if t.DType() != inference.Float16 || overridable[name] {
			continue
		}
		f, err := opsem.WidenToFloat32(nil, t)
		if err != nil {
			return err
		}
		if top && returned[name] { // a float16 constant the graph returns as it is
			if read[name] {
				renames[name] = r.x.fresh(name + "/float32")
				g.Initializers[renames[name]] = f
			}
			continue
		}
		g.Initializers[name] = f
	}
	if top {
		for _, v := range slices.Concat(g.Inputs, g.Overridable) {
			if v.DType == inference.Float16 && read[v.Name] {
				renames[v.Name] = r.x.fresh(v.Name + "/float32")
				c := r.cast(v.Name+"/ToFloat32", v.Name, renames[v.Name], onnxFloat)
				front, added[c] = append(front, c), true
			}
		}
	} else {
		for _, vs := range [][]graph.Value{g.Inputs, g.Outputs} {
			for i := range vs {
				if vs[i].DType == inference.Float16 {
					vs[i].DType = inference.Float32
				}
			}
		}
	}

	var nodes []*graph.Node
	for _, n := range g.Nodes {
		w, err := opsem.WidenFloat16Attrs(n)
		if err != nil {
			return fmt.Errorf("node %v: %w", n, err)
		}
		n.Attrs = w.Attrs
		nodes = append(nodes, n)
		for j, v := range n.Outputs {
			if v == "" || types[v] != inference.Float16 {
				continue
			}
			toHalf := n.OpType == "Cast" && n.Domain == "" // to float16: its output is rounded
			if !toHalf && r.exact(n) && !(top && returned[v]) {
				continue
			}
			if top && returned[v] {
				if !toHalf {
					u := r.x.fresh(v + "/float32")
					n.Outputs[j] = u
					nodes = append(nodes, r.cast(n.Name+"/ToFloat16", u, v, onnxFloat16))
				}
				if read[v] {
					renames[v] = r.x.fresh(v + "/rounded")
					c := r.cast(n.Name+"/ToFloat32", v, renames[v], onnxFloat)
					nodes, added[c] = append(nodes, c), true
				}
				continue
			}
			h := r.x.fresh(v + "/float16")
			if toHalf {
				n.Outputs[j] = h
			} else {
				u := r.x.fresh(v + "/float32")
				n.Outputs[j] = u
				nodes = append(nodes, r.cast(n.Name+"/ToFloat16", u, h, onnxFloat16))
			}
			nodes = append(nodes, r.cast(n.Name+"/ToFloat32", h, v, onnxFloat))
		}
	}
	g.Nodes = append(front, nodes...)
	renameReads(g, renames, added, false)
	return nil
}

// renameReads makes the nodes of g, but for those in skip, and of the
// graphs nested in them read renames[v] where they read v; with outputs,
// g's outputs too. A nested graph that defines v itself keeps it.
func renameReads(g *graph.Graph, renames map[string]string, skip map[*graph.Node]bool, outputs bool) {
	if len(renames) == 0 {
		return
	}
	if outputs {
		for i, o := range g.Outputs {
			if to, ok := renames[o.Name]; ok {
				g.Outputs[i].Name = to
			}
		}
	}
	for _, n := range g.Nodes {
		if skip[n] {
			continue
		}
		for i, in := range n.Inputs {
			if to, ok := renames[in]; ok {
				n.Inputs[i] = to
			}
		}
		for _, sub := range n.Subgraphs() {
			if sub == nil {
				continue
			}
			inner, cloned := renames, false
			for _, name := range definedIn(sub) {
				if _, ok := inner[name]; ok {
					if !cloned {
						inner, cloned = maps.Clone(renames), true
					}
					delete(inner, name)
				}
			}
			renameReads(sub, inner, nil, true)
		}
	}
}

// definedIn lists the values g defines: its inputs, initializers and node
// outputs.
func definedIn(g *graph.Graph) []string {
	var names []string
	for _, v := range slices.Concat(g.Inputs, g.Overridable) {
		names = append(names, v.Name)
	}
	for name := range g.Initializers {
		names = append(names, name)
	}
	for _, n := range g.Nodes {
		names = append(names, n.Outputs...)
	}
	return names
}

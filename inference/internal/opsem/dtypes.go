package opsem

import (
	"maps"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

// OutputDTypes returns the element types of n's outputs when its inputs
// have the types in (0 for an absent one), as ONNX's operator schemas give
// them: the type of the first present input for most operators; int64 for
// Shape, Size, ArgMax, …; bool for the comparisons and logic; Cast's to;
// a dtype attribute where the operator has one; Where's and OneHot's
// values; LayerNormalization's Mean and InvStdDev in float32 whatever X
// is. A type it cannot tell is 0. n runs no graphs (If, Loop and Scan
// take theirs from their bodies).
func OutputDTypes(n Node, in []inference.DType) []inference.DType {
	typeOf := func(i int) inference.DType {
		if i < len(in) {
			return in[i]
		}
		return 0
	}
	var first inference.DType
	for i, name := range n.Inputs {
		if name != "" {
			first = typeOf(i)
			break
		}
	}
	out := make([]inference.DType, len(n.Outputs))
	all := func(d inference.DType) []inference.DType {
		for i := range out {
			out[i] = d
		}
		return out
	}
	// each gives the outputs the types ds in turn, the last of ds to the
	// outputs after them: a node may name fewer outputs than the operator
	// has, or more (a bad model, which a later check refuses).
	each := func(ds ...inference.DType) []inference.DType {
		for i := range out {
			out[i] = ds[min(i, len(ds)-1)]
		}
		return out
	}
	dtypeAttr := func(def inference.DType) []inference.DType {
		if a, ok := n.Attrs["dtype"]; ok && a.Type == graph.AttrInt {
			d, _ := inference.DTypeFromONNX(a.Int)
			return all(d)
		}
		return all(def)
	}
	if n.Domain == "ai.onnx.ml" {
		return mlOutputDTypes(n, first, out)
	}
	if n.Domain != "" {
		return all(first)
	}
	switch n.OpType {
	case "Shape", "Size", "ArgMax", "ArgMin", "NonZero", "NonMaxSuppression", "SequenceLength":
		return all(inference.Int64)
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf",
		"OptionalHasElement":
		return all(inference.Bool)
	case "Cast":
		to, _ := CastTarget(n)
		return all(to)
	case "CastLike":
		return all(typeOf(1))
	case "Constant":
		for name, a := range n.Attrs {
			switch name {
			case "value":
				return all(a.Tensor.DType())
			case "value_float", "value_floats":
				return all(inference.Float32)
			case "value_int", "value_ints":
				return all(inference.Int64)
			}
		}
		return all(0)
	case "ConstantOfShape":
		if v := n.Attrs["value"].Tensor; v.DType() != 0 {
			return all(v.DType())
		}
		return all(inference.Float32)
	case "EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli":
		return dtypeAttr(first)
	case "RandomNormal", "RandomUniform":
		return dtypeAttr(inference.Float32)
	case "Multinomial":
		return dtypeAttr(inference.Int32)
	case "Where":
		return all(typeOf(1))
	case "OneHot":
		return all(typeOf(2))
	case "DequantizeLinear":
		return all(typeOf(1))
	case "QuantizeLinear":
		if n.Input(2) != "" {
			return all(typeOf(2))
		}
		return all(inference.Uint8)
	case "DynamicQuantizeLinear":
		return each(inference.Uint8, inference.Float32, inference.Uint8)
	case "TopK", "MaxPool", "Unique":
		return each(first, inference.Int64)
	case "Dropout":
		return each(first, inference.Bool)
	case "LayerNormalization":
		// Mean and InvStdDev are float32 whatever X is (stash_type 1).
		return each(first, inference.Float32)
	}
	return all(first)
}

// ValueTypes returns the element types of g's values: its declared inputs,
// its initializers, and what OutputDTypes gives each node's outputs (not
// those of a node that runs graphs, whose types come from its bodies), with
// outer, the types of the values a nested graph sees from its enclosing
// ones. A type it cannot tell is 0.
func ValueTypes(g *graph.Graph, outer map[string]inference.DType) map[string]inference.DType {
	types := maps.Clone(outer)
	if types == nil {
		types = map[string]inference.DType{}
	}
	for _, v := range slices.Concat(g.Inputs, g.Overridable) {
		types[v.Name] = v.DType
	}
	for name, t := range g.Initializers {
		types[name] = t.DType()
	}
	for _, n := range g.Nodes {
		if len(n.Subgraphs()) > 0 {
			continue
		}
		in := make([]inference.DType, len(n.Inputs))
		for i, name := range n.Inputs {
			in[i] = types[name]
		}
		out := OutputDTypes(Node{Node: n, Opset: g.OpsetOf(n)}, in)
		for i, name := range n.Outputs {
			if i < len(out) && name != "" {
				types[name] = out[i]
			}
		}
	}
	return types
}

// onnxFloat16 and onnxFloat are ONNX's TensorProto.DataType numbers of
// float16 and float32.
const (
	onnxFloat16 = 10
	onnxFloat   = 1
)

// HasFloat16Attrs reports whether n has a float16 tensor attribute or an
// attribute dtype of float16: what WidenFloat16Attrs widens.
func HasFloat16Attrs(n *graph.Node) bool {
	for name, a := range n.Attrs {
		switch {
		case a.Type == graph.AttrTensor && a.Tensor.DType() == inference.Float16,
			a.Type == graph.AttrInt && name == "dtype" && a.Int == onnxFloat16:
			return true
		case a.Type == graph.AttrTensors:
			for _, t := range a.Tensors {
				if t.DType() == inference.Float16 {
					return true
				}
			}
		}
	}
	return false
}

// WidenFloat16Attrs returns n with its float16 tensor attributes (Constant's
// and ConstantOfShape's value) made float32, exactly, and an attribute
// dtype of float16 (EyeLike, RandomNormal, RandomUniform and their Like
// forms, Bernoulli) made float32: a copy sharing everything else with n,
// or n itself when it has neither. With float16 inputs widened the same
// way, the node computes in float32 what it computes in float16 but for
// the rounding.
func WidenFloat16Attrs(n *graph.Node) (*graph.Node, error) {
	var attrs map[string]graph.Attr
	var err error
	for name, a := range n.Attrs {
		switch {
		case a.Type == graph.AttrTensor && a.Tensor.DType() == inference.Float16:
			if a.Tensor, err = WidenToFloat32(nil, a.Tensor); err != nil {
				return nil, err
			}
		case a.Type == graph.AttrTensors && slices.ContainsFunc(a.Tensors, func(t inference.Tensor) bool { return t.DType() == inference.Float16 }):
			a.Tensors = slices.Clone(a.Tensors)
			for i, t := range a.Tensors {
				if a.Tensors[i], err = WidenToFloat32(nil, t); err != nil {
					return nil, err
				}
			}
		case a.Type == graph.AttrInt && name == "dtype" && a.Int == onnxFloat16:
			a.Int = onnxFloat
		default:
			continue
		}
		if attrs == nil {
			attrs = maps.Clone(n.Attrs)
		}
		attrs[name] = a
	}
	if attrs == nil {
		return n, nil
	}
	c := *n
	c.Attrs = attrs
	return &c, nil
}

// WidenToFloat32 returns the float32 tensor of a float16 or bfloat16
// tensor's values, which it holds exactly; a tensor of another type comes
// back as it is. It allocates under r.
func WidenToFloat32(r *limit.Run, t inference.Tensor) (inference.Tensor, error) {
	switch t.DType() {
	case inference.Float16:
		return convert(r, t, inference.Half.Float32)
	case inference.BFloat16:
		return convert(r, t, inference.BF16.Float32)
	}
	return t, nil
}

// NarrowFromFloat32 returns the tensor of type to, float16 or bfloat16, of
// a float32 tensor's values, each rounded to the nearest (ties to even:
// inference.HalfFromFloat32, BF16FromFloat32); a tensor of another type,
// or a to of another, comes back as it is. It allocates under r.
func NarrowFromFloat32(r *limit.Run, t inference.Tensor, to inference.DType) (inference.Tensor, error) {
	if t.DType() != inference.Float32 {
		return t, nil
	}
	switch to {
	case inference.Float16:
		return convert(r, t, inference.HalfFromFloat32)
	case inference.BFloat16:
		return convert(r, t, inference.BF16FromFloat32)
	}
	return t, nil
}

// convert returns the tensor of f of each of t's elements, of type S.
func convert[S, D inference.Element](r *limit.Run, t inference.Tensor, f func(S) D) (inference.Tensor, error) {
	s, _ := inference.Data[S](t)
	d, err := limit.MakeOverwritten[D](r, t.Shape()...)
	if err != nil {
		return inference.Tensor{}, err
	}
	for i, v := range s {
		d[i] = f(v)
	}
	return inference.New(t.Shape(), d)
}

package onnx

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/onnxpb"
)

// ZipMap (ai.onnx.ml) turns a [rows, classes] tensor of scores into a
// sequence of maps from class label to score, one per row: the last node
// scikit-learn's and XGBoost's classifiers write by default, before their
// output_probability. A Tensor holds no maps, so the runtime keeps the
// tensor: such an output decodes as float32 with its graph.Value's Labels
// the ZipMap's class labels (an integer label in decimal), in column
// order, and the ZipMap node checks, when it runs, that each row has one
// score per label. A ZipMap whose maps another node reads, or a sequence
// of maps from another operator, is unsupported.

// mapOutput reports whether vi's type is a sequence of maps from int64 or
// string to float, ZipMap's output type.
func mapOutput(vi *onnxpb.ValueInfoProto) bool {
	seq := vi.GetType().GetSequenceType()
	if seq == nil {
		return false
	}
	m := seq.GetElemType().GetMapType()
	if m == nil {
		return false
	}
	k := onnxpb.TensorProto_DataType(m.GetKeyType())
	v := m.GetValueType().GetTensorType()
	return (k == onnxpb.TensorProto_INT64 || k == onnxpb.TensorProto_STRING) && v != nil && v.GetElemType() == int32(onnxpb.TensorProto_FLOAT)
}

// zipMapOutputs gives the outputs of g that mapOutput found (by name) the
// labels of the ZipMap that makes each, and refuses a ZipMap whose maps
// are not one of them.
func zipMapOutputs(g *graph.Graph, maps map[string]bool) error {
	producer := map[string]*graph.Node{}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			producer[o] = n
		}
		if n.Domain == "ai.onnx.ml" && n.OpType == "ZipMap" && (len(n.Outputs) != 1 || !maps[n.Outputs[0]]) {
			return &inference.UnsupportedOpError{Node: n.Name, Op: "ai.onnx.ml.ZipMap", Opset: g.Opsets["ai.onnx.ml"],
				Detail: "its maps are not a graph output (a Tensor holds no maps; a ZipMap is supported as the node that makes an output)"}
		}
	}
	for i, v := range g.Outputs {
		if !maps[v.Name] {
			continue
		}
		n := producer[v.Name]
		if n == nil || n.Domain != "ai.onnx.ml" || n.OpType != "ZipMap" {
			op := "(no node)"
			if n != nil {
				op = n.OpType
				if n.Domain != "" {
					op = n.Domain + "." + n.OpType
				}
			}
			return &inference.UnsupportedOpError{Op: op, Detail: fmt.Sprintf("output %q is a sequence of maps, which only a ZipMap's output may be", v.Name)}
		}
		labels, err := opsem.ZipMapLabels(n)
		if err != nil {
			return err
		}
		g.Outputs[i].DType = inference.Float32
		g.Outputs[i].Labels = labels
	}
	return nil
}

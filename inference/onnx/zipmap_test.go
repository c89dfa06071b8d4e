package onnx_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// mapInfo is ZipMap's output type: a sequence of maps from key to float.
func mapInfo(name string, key onnxpb.TensorProto_DataType) *onnxpb.ValueInfoProto {
	value := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT)}}}
	m := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_MapType{MapType: &onnxpb.TypeProto_Map{KeyType: int32(key), ValueType: value}}}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: m}}}}
}

// zipMapModel is probabilities x [N, 3] → ZipMap → a sequence of maps, as
// scikit-learn classifiers end; more nodes may follow.
func zipMapModel(attr *onnxpb.AttributeProto, key onnxpb.TensorProto_DataType, more ...*onnxpb.NodeProto) *onnxpb.ModelProto {
	m := model(nil, append([]*onnxpb.NodeProto{{Name: "zipmap", OpType: "ZipMap", Domain: "ai.onnx.ml", Input: []string{"x"}, Output: []string{"y"},
		Attribute: []*onnxpb.AttributeProto{attr}}}, more...)...)
	m.Graph.Input = []*onnxpb.ValueInfoProto{floatInfo("x", -1, 3)}
	m.Graph.Output = []*onnxpb.ValueInfoProto{mapInfo("y", key)}
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: "ai.onnx.ml", Version: 1})
	return m
}

func intLabels(v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: "classlabels_int64s", Type: onnxpb.AttributeProto_INTS, Ints: v}
}

func stringLabels(v ...string) *onnxpb.AttributeProto {
	a := &onnxpb.AttributeProto{Name: "classlabels_strings", Type: onnxpb.AttributeProto_STRINGS}
	for _, s := range v {
		a.Strings = append(a.Strings, []byte(s))
	}
	return a
}

// A ZipMap's sequence of maps is the [rows, classes] tensor of its scores,
// the output's Labels its classes in column order, integers in decimal; a
// row whose width is not the number of labels fails.
func TestZipMapOutputIsScoresWithLabels(t *testing.T) {
	for _, tc := range []struct {
		m      *onnxpb.ModelProto
		labels []string
	}{
		{zipMapModel(intLabels(-1, 3, 7), onnxpb.TensorProto_INT64), []string{"-1", "3", "7"}},
		{zipMapModel(stringLabels("cat", "dog", "né"), onnxpb.TensorProto_STRING), []string{"cat", "dog", "né"}},
	} {
		m, err := load(t, writeModel(t, t.TempDir(), tc.m))
		if err != nil {
			t.Fatal(err)
		}
		out := m.Outputs()
		if len(out) != 1 || out[0].DType != inference.Float32 || !slices.Equal(out[0].Labels, tc.labels) {
			t.Errorf("Outputs() = %+v, want float32 y with labels %v", out, tc.labels)
		}
		x, _ := inference.New([]int{2, 3}, []float32{0.1, 0.2, 0.7, 1, 0, 0})
		got, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x})
		if err != nil || !inference.Equal(got["y"], x) {
			t.Errorf("Run = %v, %v, want the scores %v", got["y"], err, x)
		}
		narrow, _ := inference.New([]int{1, 2}, []float32{0.5, 0.5})
		if _, err := m.Run(context.Background(), map[string]inference.Tensor{"x": narrow}); !errors.Is(err, inference.ErrShape) {
			t.Errorf("2 scores for 3 labels: %v, want ErrShape", err)
		}
	}
}

// What the runtime cannot hold as a tensor with labels is refused at
// load, naming it: maps another node reads, maps another operator makes;
// labels twice or of both kinds are a bad model.
func TestZipMapRefused(t *testing.T) {
	read := zipMapModel(intLabels(1, 2, 3), onnxpb.TensorProto_INT64,
		&onnxpb.NodeProto{Name: "after", OpType: "Identity", Input: []string{"y"}, Output: []string{"z"}})
	read.Graph.Output = []*onnxpb.ValueInfoProto{mapInfo("z", onnxpb.TensorProto_INT64)}
	other := zipMapModel(intLabels(1, 2, 3), onnxpb.TensorProto_INT64)
	other.Graph.Node[0].OpType, other.Graph.Node[0].Domain = "Identity", ""
	both := zipMapModel(intLabels(1, 2, 3), onnxpb.TensorProto_INT64)
	both.Graph.Node[0].Attribute = append(both.Graph.Node[0].Attribute, stringLabels("a", "b", "c"))
	for name, tc := range map[string]struct {
		m     *onnxpb.ModelProto
		want  error
		parts []string
	}{
		"maps read by a node": {read, inference.ErrUnsupportedOp, []string{"ai.onnx.ml.ZipMap", "not a graph output"}},
		"maps from Identity":  {other, inference.ErrUnsupportedOp, []string{"Identity", `output "y" is a sequence of maps`}},
		"a label twice":       {zipMapModel(stringLabels("a", "b", "a"), onnxpb.TensorProto_STRING), inference.ErrBadModel, []string{`"a" appears twice`}},
		"both kinds of label": {both, inference.ErrBadModel, []string{"want one of classlabels_strings and classlabels_int64s"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, writeModel(t, t.TempDir(), tc.m))
			wantErr(t, err, tc.want, tc.parts...)
		})
	}
}

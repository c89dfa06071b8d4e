package runinference_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

func init() { register.DoFn2x1[runinference.PredictionResult, func(string)](&byLabelFn{}) }

// zipMapModelFile writes the last node of a scikit-learn classifier:
// probabilities [N, 3] → ZipMap with labels bird, cat, dog.
func zipMapModelFile(t *testing.T) string {
	t.Helper()
	f := int32(onnxpb.TensorProto_FLOAT)
	dim := func(d int64) *onnxpb.TensorShapeProto_Dimension {
		return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
	}
	in := &onnxpb.ValueInfoProto{Name: "probabilities", Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: f, Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{dim(-1), dim(3)}}}}}}
	value := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: f}}}
	maps := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_MapType{MapType: &onnxpb.TypeProto_Map{KeyType: int32(onnxpb.TensorProto_STRING), ValueType: value}}}
	out := &onnxpb.ValueInfoProto{Name: "output_probability", Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: maps}}}}
	m := &onnxpb.ModelProto{IrVersion: 8,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 15}, {Domain: "ai.onnx.ml", Version: 1}},
		Graph: &onnxpb.GraphProto{Name: "zipmap", Input: []*onnxpb.ValueInfoProto{in}, Output: []*onnxpb.ValueInfoProto{out},
			Node: []*onnxpb.NodeProto{{Name: "zipmap", OpType: "ZipMap", Domain: "ai.onnx.ml", Input: []string{"probabilities"}, Output: []string{"output_probability"},
				Attribute: []*onnxpb.AttributeProto{{Name: "classlabels_strings", Type: onnxpb.AttributeProto_STRINGS, Strings: [][]byte{[]byte("bird"), []byte("cat"), []byte("dog")}}}}}}}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "zipmap.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// byLabelFn prints each result's probabilities by label, the labels read
// once in Setup.
type byLabelFn struct {
	Path   string
	labels []string
}

func (f *byLabelFn) Setup(ctx context.Context) error {
	var err error
	f.labels, err = runinference.OutputLabels(ctx, onnx.Model(f.Path), "output_probability")
	return err
}

func (f *byLabelFn) ProcessElement(r runinference.PredictionResult, emit func(string)) error {
	p, err := runinference.ScoresByLabel(r, "output_probability", f.labels)
	if err != nil {
		return err
	}
	emit(fmt.Sprint(p))
	return nil
}

// A classifier's probabilities by class label: OutputLabels reads the
// labels of the ZipMap's output, ScoresByLabel makes each result's map.
func TestScoresByLabel(t *testing.T) {
	path := zipMapModelFile(t)
	labels, err := runinference.OutputLabels(context.Background(), onnx.Model(path), "output_probability")
	if err != nil || !slices.Equal(labels, []string{"bird", "cat", "dog"}) {
		t.Fatalf("OutputLabels = %v, %v, want [bird cat dog]", labels, err)
	}
	if _, err := runinference.OutputLabels(context.Background(), onnx.Model(path), "label"); !errors.Is(err, inference.ErrMissingOutput) {
		t.Errorf("OutputLabels of a missing output: %v, want ErrMissingOutput", err)
	}

	p, s := beam.NewPipelineWithRoot()
	row := func(v ...float32) inference.Example {
		x, _ := inference.New([]int{3}, v)
		return inference.Example{"probabilities": x}
	}
	results := runinference.RunInference(s, onnx.Model(path), beam.CreateList(s, []inference.Example{row(0.1, 0.2, 0.7), row(1, 0, 0)}))
	passert.Equals(s, beam.ParDo(s, &byLabelFn{Path: path}, results), "map[bird:0.1 cat:0.2 dog:0.7]", "map[bird:1 cat:0 dog:0]")
	ptest.RunAndValidate(t, p)

	two, _ := inference.New([]int{2}, []float32{0.5, 0.5})
	r := runinference.PredictionResult{Outputs: inference.OutputsOf(map[string]inference.Tensor{"output_probability": two})}
	if _, err := runinference.ScoresByLabel(r, "output_probability", labels); !errors.Is(err, inference.ErrShape) {
		t.Errorf("2 values for 3 labels: %v, want ErrShape", err)
	}
}

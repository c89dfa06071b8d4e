package onnx_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

func dims(ds ...any) []onnx.Dim {
	out := []onnx.Dim{}
	for _, d := range ds {
		switch d := d.(type) {
		case int:
			out = append(out, onnx.Dim{Size: d})
		case string:
			out = append(out, onnx.Dim{Size: inference.Dynamic, Param: d})
		}
	}
	return out
}

// The digits model of examples/classify. The expected values were read
// with ONNX's own Python package, independently of this decoder:
//
//	m = onnx.load("examples/classify/digits.onnx")
//	m.ir_version, m.producer_name, m.producer_version, m.opset_import
//	  → 7, "pytorch", "1.13.0", [("", 13)]
//	m.graph.input / output → pixels FLOAT [batch, 64]; logits FLOAT [batch, 10]
//	Counter(n.op_type for n in m.graph.node) → Gemm 2, Relu 1
//
// Its four initializers (0.weight, 0.bias, 2.weight, 2.bias) are not
// listed among the graph's inputs, so there are no defaults.
func TestDescribeDigits(t *testing.T) {
	uri := "../../examples/classify/digits.onnx"
	got, err := onnx.Describe(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	want := onnx.Description{
		URI:       uri,
		IRVersion: 7,
		Producer:  "pytorch 1.13.0",
		Inputs:    []onnx.ValueInfo{{Name: "pixels", DType: inference.Float32, Shape: dims("batch", 64)}},
		Outputs:   []onnx.ValueInfo{{Name: "logits", DType: inference.Float32, Shape: dims("batch", 10)}},
		Opsets:    []onnx.Opset{{Domain: "", Version: 13}},
		Ops:       []onnx.OpCount{{Op: "Gemm", Count: 2}, {Op: "Relu", Count: 1}},
		// This test binary links no inference/cuda: the CPU alone.
		Backends: []onnx.Support{{Device: inference.CPU}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe(digits) =\n%#v\nwant\n%#v", got, want)
	}
}

// testdata/symbolic.onnx is written by testdata/symbolic.py, whose source
// gives every value below.
func TestDescribeSymbolicDims(t *testing.T) {
	uri := "testdata/symbolic.onnx"
	got, err := onnx.Describe(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	want := onnx.Description{
		URI:       uri,
		IRVersion: 8,
		Producer:  "symbolic.py",
		Inputs: []onnx.ValueInfo{
			{Name: "input_ids", DType: inference.Int64, Shape: dims("batch", "sequence")},
			{Name: "flag", DType: inference.Bool, Shape: dims()},
			{Name: "attention_mask", DType: inference.Int64, Shape: dims("batch", "")}, // an unnamed dimension
		},
		Defaults: []onnx.ValueInfo{{Name: "scale", DType: inference.Float32, Shape: dims()}},
		Outputs: []onnx.ValueInfo{
			{Name: "out", DType: inference.Float32}, // no shape declared
			{Name: "branch", DType: inference.Float32, Shape: dims("batch", 4)},
		},
		Opsets: []onnx.Opset{{Domain: "", Version: 17}, {Domain: "com.example", Version: 1}},
		// Identity and Neg are the If's branches.
		Ops: []onnx.OpCount{{Op: "Cast", Count: 1}, {Op: "Identity", Count: 1}, {Op: "If", Count: 1},
			{Op: "Mul", Count: 1}, {Op: "Neg", Count: 1}, {Op: "com.example.Custom", Count: 1}},
		Backends: []onnx.Support{{Device: inference.CPU, Unsupported: []string{"com.example.Custom"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe(symbolic) =\n%#v\nwant\n%#v", got, want)
	}
	wantText := `testdata/symbolic.onnx
  producer: symbolic.py, IR version 8
  opsets:   ai.onnx 17, com.example 1
  inputs:   input_ids int64[batch sequence]
            flag bool[]
            attention_mask int64[batch ?]
  defaults: scale float32[]
  outputs:  out float32, shape not declared
            branch float32[batch 4]
  operators (6 nodes): Cast 1, Identity 1, If 1, Mul 1, Neg 1, com.example.Custom 1
  cpu:      cannot run com.example.Custom (the model does not load)
  cuda:     not linked into this binary (cmd/beamml-inspect reports it)
`
	if got.String() != wantText {
		t.Errorf("String() =\n%s\nwant\n%s", got, wantText)
	}
}

// A file that would not load for being malformed fails Describe with the
// loader's error, naming the file.
func TestDescribeRefusesBrokenModels(t *testing.T) {
	dir := t.TempDir()
	notModel := filepath.Join(dir, "notes.onnx")
	if err := os.WriteFile(notModel, []byte("not a protobuf \xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := model(nil, &onnxpb.NodeProto{Name: "add", OpType: "Add", Input: []string{"x", "nowhere"}, Output: []string{"y"}})
	for name, tc := range map[string]struct {
		uri  string
		says string
	}{
		"missing file":   {filepath.Join(dir, "none.onnx"), "no such file"},
		"not a model":    {notModel, notModel + ": onnx: not a model file"},
		"dangling input": {writeModel(t, dir, dangling), `"nowhere"`},
		"unknown scheme": {"nosuch://bucket/m.onnx", "no opener for nosuch://"},
	} {
		_, err := onnx.Describe(context.Background(), tc.uri)
		if !errors.Is(err, inference.ErrBadModel) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want ErrBadModel saying %q", name, err, tc.says)
		}
	}
}

// Before writing a pipeline for a model, see what it takes and returns:
// the names, element types and shapes (symbolic dimensions by name) that
// the code on either side of RunInference must use.
func ExampleDescribe() {
	d, err := onnx.Describe(context.Background(), "../../examples/classify/digits.onnx")
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Inputs[0].Name, d.Inputs[0].DType, d.Inputs[0].Shape)
	fmt.Print(d)
	// Output:
	// pixels float32 [batch 64]
	// ../../examples/classify/digits.onnx
	//   producer: pytorch 1.13.0, IR version 7
	//   opsets:   ai.onnx 13
	//   inputs:   pixels float32[batch 64]
	//   outputs:  logits float32[batch 10]
	//   operators (3 nodes): Gemm 2, Relu 1
	//   cpu:      runs every operator
	//   cuda:     not linked into this binary (cmd/beamml-inspect reports it)
}

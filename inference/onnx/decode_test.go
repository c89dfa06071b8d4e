package onnx_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

func floatInfo(name string, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT), Shape: shape}}}}
}

// model builds y = x + w with w an initializer the caller may replace.
func model(w *onnxpb.TensorProto, nodes ...*onnxpb.NodeProto) *onnxpb.ModelProto {
	if nodes == nil {
		nodes = []*onnxpb.NodeProto{{Name: "add", OpType: "Add", Input: []string{"x", "w"}, Output: []string{"y"}}}
	}
	g := &onnxpb.GraphProto{
		Name:   "g",
		Node:   nodes,
		Input:  []*onnxpb.ValueInfoProto{floatInfo("x", 2)},
		Output: []*onnxpb.ValueInfoProto{floatInfo("y", 2)},
	}
	if w != nil {
		g.Initializer = []*onnxpb.TensorProto{w}
	}
	return &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g}
}

func weights() *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: "w", Dims: []int64{2}, DataType: int32(onnxpb.TensorProto_FLOAT), FloatData: []float32{1, 2}}
}

func marshal(t *testing.T, m *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeModel saves m as dir/model.onnx and returns the path.
func writeModel(t *testing.T, dir string, m *onnxpb.ModelProto) string {
	t.Helper()
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, marshal(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, path string) (inference.Model, error) {
	t.Helper()
	h, err := inference.NewCache(0).Acquire(context.Background(), onnx.Model(path))
	if err != nil {
		return nil, err
	}
	t.Cleanup(h.Release)
	return h.Model(), nil
}

func wantErr(t *testing.T, err, target error, parts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func external(location string, length int) *onnxpb.TensorProto {
	w := weights()
	w.FloatData = nil
	w.DataLocation = onnxpb.TensorProto_EXTERNAL
	w.ExternalData = []*onnxpb.StringStringEntryProto{{Key: "location", Value: location}, {Key: "offset", Value: "0"}, {Key: "length", Value: strconv.Itoa(length)}}
	return w
}

func TestLoadRuns(t *testing.T) {
	m, err := load(t, writeModel(t, t.TempDir(), model(weights())))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Inputs(); len(got) != 1 || got[0].Name != "x" || got[0].Shape[0] != 2 {
		t.Errorf("Inputs() = %v, want x float32[2]", got)
	}
	if m.ByteSize() != 8 {
		t.Errorf("ByteSize() = %d, want 8", m.ByteSize())
	}
}

func TestExternalDataInsideFolderLoads(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), []byte{0, 0, 128, 63, 0, 0, 0, 64}, 0o644); err != nil { // 1.0, 2.0
		t.Fatal(err)
	}
	if _, err := load(t, writeModel(t, dir, model(external("w.bin", 8)))); err != nil {
		t.Fatal(err)
	}
}

func TestExternalDataEscapingFolderFails(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secret.bin"), make([]byte, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "secret.bin"), filepath.Join(dir, "link.bin")); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"../secret.bin", filepath.Join(root, "secret.bin"), "sub/../../secret.bin", "link.bin"} {
		_, err := load(t, writeModel(t, dir, model(external(loc, 8))))
		wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "outside the model's folder")
	}
}

func TestDeclaredTensorLargerThanItsBytesFails(t *testing.T) {
	for name, w := range map[string]*onnxpb.TensorProto{
		"raw":   {Name: "w", Dims: []int64{1 << 20, 1 << 10}, DataType: int32(onnxpb.TensorProto_FLOAT), RawData: make([]byte, 8)},
		"typed": {Name: "w", Dims: []int64{1 << 30}, DataType: int32(onnxpb.TensorProto_FLOAT), FloatData: []float32{1, 2}},
	} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := load(t, writeModel(t, t.TempDir(), model(w)))
			runtime.ReadMemStats(&after)
			wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "declares")
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
				t.Errorf("decoding allocated %d bytes before refusing the tensor, want under 16 MiB", grew)
			}
		})
	}
}

func TestShapeOverflowFails(t *testing.T) {
	w := &onnxpb.TensorProto{Name: "w", Dims: []int64{1<<31 - 1, 1<<31 - 1, 1<<31 - 1}, DataType: int32(onnxpb.TensorProto_FLOAT)}
	_, err := load(t, writeModel(t, t.TempDir(), model(w)))
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "overflows")
}

func TestCycleFails(t *testing.T) {
	m := model(weights(),
		&onnxpb.NodeProto{Name: "a", OpType: "Add", Input: []string{"x", "b_out"}, Output: []string{"a_out"}},
		&onnxpb.NodeProto{Name: "b", OpType: "Relu", Input: []string{"a_out"}, Output: []string{"b_out"}},
		&onnxpb.NodeProto{Name: "c", OpType: "Identity", Input: []string{"a_out"}, Output: []string{"y"}},
	)
	_, err := load(t, writeModel(t, t.TempDir(), m))
	wantErr(t, err, inference.ErrBadModel, "cycle", `"a" (Add)`)
}

func TestDanglingInputFails(t *testing.T) {
	m := model(weights(), &onnxpb.NodeProto{Name: "n", OpType: "Add", Input: []string{"x", "nowhere"}, Output: []string{"y"}})
	_, err := load(t, writeModel(t, t.TempDir(), m))
	wantErr(t, err, inference.ErrBadModel, `"n" (Add)`, `"nowhere"`)
}

func TestUnsupportedOpFails(t *testing.T) {
	m := model(weights(), &onnxpb.NodeProto{Name: "dict", OpType: "DictVectorizer", Domain: "ai.onnx.ml", Input: []string{"x"}, Output: []string{"y"}})
	_, err := load(t, writeModel(t, t.TempDir(), m))
	wantErr(t, err, inference.ErrUnsupportedOp, "ai.onnx.ml.DictVectorizer", `"dict"`)
	var u *inference.UnsupportedOpError
	if !errors.As(err, &u) || u.Op != "ai.onnx.ml.DictVectorizer" {
		t.Errorf("errors.As UnsupportedOpError = %+v, want Op ai.onnx.ml.DictVectorizer", u)
	}
}

// A model whose input or initializer is of an element type the node that
// reads it does not compute (an LpNormalization of a scikit-learn export's
// DOUBLE, an Add of STRINGs, a MatMul of INT8 weights), or whose Cast names
// a type a Tensor does not hold, fails at load with ErrUnsupportedType, naming the type as ONNX
// does and where; it is ErrUnsupportedOp too, for callers that ask whether
// a model can run.
func TestUnsupportedElementTypeFails(t *testing.T) {
	double := func(m *onnxpb.ModelProto) *onnxpb.ModelProto {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_DOUBLE)
		return m
	}
	lpNorm := &onnxpb.NodeProto{Name: "norm", OpType: "LpNormalization", Input: []string{"x"}, Output: []string{"y"}}
	matMul := &onnxpb.NodeProto{Name: "matmul", OpType: "MatMul", Input: []string{"x", "w"}, Output: []string{"y"}}
	str := func(m *onnxpb.ModelProto) *onnxpb.ModelProto {
		m.Graph.Input[0].Type.GetTensorType().ElemType = int32(onnxpb.TensorProto_STRING)
		return m
	}
	int8w := weights()
	int8w.DataType = int32(onnxpb.TensorProto_INT8)
	int8w.FloatData, int8w.Int32Data = nil, []int32{1, 2}
	cast := model(weights(), &onnxpb.NodeProto{Name: "to_complex", OpType: "Cast", Input: []string{"x"}, Output: []string{"y"},
		Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: int64(onnxpb.TensorProto_COMPLEX64)}}})
	for name, tc := range map[string]struct {
		m    *onnxpb.ModelProto
		want []string
	}{
		"double input":    {double(model(nil, lpNorm)), []string{"DOUBLE (11)", `"x"`, "LpNormalization"}},
		"string input":    {str(model(weights())), []string{"STRING (8)", `"x"`, "Add"}},
		"int8 weights":    {model(int8w, matMul), []string{"INT8 (3)", `"w"`, "MatMul"}},
		"cast to complex": {cast, []string{"COMPLEX64 (14)", `"to_complex"`}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, writeModel(t, t.TempDir(), tc.m))
			wantErr(t, err, inference.ErrUnsupportedType, tc.want...)
			if !errors.Is(err, inference.ErrUnsupportedOp) {
				t.Errorf("error %v is not ErrUnsupportedOp too", err)
			}
			if errors.Is(err, inference.ErrBadModel) {
				t.Errorf("error %v is ErrBadModel: the model is well formed", err)
			}
		})
	}
	// An operator it lacks is not a type it lacks.
	_, err := load(t, writeModel(t, t.TempDir(), model(weights(), &onnxpb.NodeProto{Name: "dict", OpType: "DictVectorizer", Domain: "ai.onnx.ml", Input: []string{"x"}, Output: []string{"y"}})))
	if errors.Is(err, inference.ErrUnsupportedType) {
		t.Errorf("an unsupported operator's error %v is ErrUnsupportedType", err)
	}
}

// An attribute typed GRAPH or TENSOR without its value (found by
// FuzzDecode: the GRAPH case dereferenced nil) is a bad model, named.
func TestAttributeWithoutValueFails(t *testing.T) {
	for _, typ := range []onnxpb.AttributeProto_AttributeType{onnxpb.AttributeProto_GRAPH, onnxpb.AttributeProto_TENSOR} {
		m := model(weights(), &onnxpb.NodeProto{Name: "cond", OpType: "If", Input: []string{"x"}, Output: []string{"y"},
			Attribute: []*onnxpb.AttributeProto{{Name: "then_branch", Type: typ}}})
		_, err := onnx.Decode(marshal(t, m), "")
		wantErr(t, err, inference.ErrBadModel, `"cond" (If)`, `"then_branch"`, "missing")
	}
}

func TestNotAModelFails(t *testing.T) {
	_, err := onnx.Decode([]byte("this is not protobuf \xff\xff"), "")
	wantErr(t, err, inference.ErrBadModel)
}

// conformanceData is ONNX's backend test data in the repository
// (testing/conformance/testdata/README.md).
var conformanceData = filepath.Join("..", "..", "testing", "conformance", "testdata")

// FuzzDecode feeds the decoder mutations of real models: it must never
// panic, and never allocate more than 64 times the input plus 4 MiB (it
// checks declared sizes against the bytes present before allocating). Its
// seeds are models of the conformance data: a missing one fails the test
// rather than leaving the fuzzer without them.
func FuzzDecode(f *testing.F) {
	for _, m := range []string{"simple/test_single_relu_model", "node/test_add_bcast", "node/test_conv_with_strides_padding", "pytorch-converted/test_Conv1d"} {
		b, err := os.ReadFile(filepath.Join(conformanceData, m, "model.onnx"))
		if err != nil {
			f.Fatalf("seeds from the conformance data: %v", err) // the error names the path
		}
		f.Add(b)
	}
	b, _ := proto.Marshal(model(weights()))
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		onnx.Decode(data, "")
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64*uint64(len(data))+4<<20 {
			t.Errorf("decoding %d bytes allocated %d bytes", len(data), grew)
		}
	})
}

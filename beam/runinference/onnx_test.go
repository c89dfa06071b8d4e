package runinference_test

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

func init() {
	register.Function1x1(formatSumProd)
	register.Function1x1(formatHalves)
}

// tensorInfo declares a float32 value; batch 0 means a dynamic batch axis.
func tensorInfo(name string, batch int64, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	first := &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}}
	if batch > 0 {
		first = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: batch}}
	}
	shape.Dim = append(shape.Dim, first)
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT), Shape: shape}}}}
}

// memModel saves an ONNX graph under memfs:// and returns its Spec.
func memModel(t *testing.T, name string, g *onnxpb.GraphProto) inference.Spec {
	t.Helper()
	uri := "memfs://" + t.Name() + "/" + name
	memfs.Write(uri, modelBytes(t, g))
	return onnx.Model(uri)
}

// modelBytes is the ONNX file of g (opset 17).
func modelBytes(t *testing.T, g *onnxpb.GraphProto) []byte {
	t.Helper()
	b, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func formatSumProd(r runinference.PredictionResult) string {
	return fmt.Sprintf("%v %v -> sum %v prod %v", values(r.Example["a"]), values(r.Example["b"]), values(r.Outputs.Get("sum")), values(r.Outputs.Get("prod")))
}

// A model with two inputs and two outputs, read from a Beam filesystem:
// inputs and outputs are matched by name.
func TestONNXMultiInputMultiOutput(t *testing.T) {
	spec := memModel(t, "sumprod.onnx", &onnxpb.GraphProto{
		Name: "sumprod",
		Node: []*onnxpb.NodeProto{
			{Name: "add", OpType: "Add", Input: []string{"a", "b"}, Output: []string{"sum"}},
			{Name: "mul", OpType: "Mul", Input: []string{"a", "b"}, Output: []string{"prod"}},
		},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("a", 0, 2), tensorInfo("b", 0, 2)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("sum", 0, 2), tensorInfo("prod", 0, 2)},
	})
	ab := func(a0, a1, b0, b1 float32) inference.Example {
		return inference.Example{"a": row(a0, a1)["x"], "b": row(b0, b1)["x"]}
	}
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{ab(1, 2, 3, 4), ab(-1, 0.5, 2, 2), ab(0, 0, 7, 7)}
	results := runinference.RunInference(s, spec, beam.CreateList(s, in))
	passert.Equals(s, beam.ParDo(s, formatSumProd, results),
		"[1 2] [3 4] -> sum [4 6] prod [3 8]",
		"[-1 0.5] [2 2] -> sum [1 2.5] prod [-2 1]",
		"[0 0] [7 7] -> sum [7 7] prod [0 0]")
	ptest.RunAndValidate(t, p)
}

func formatHalves(r runinference.PredictionResult) string {
	x, _ := inference.Data[inference.Half](r.Example["x"])
	y, _ := inference.Data[inference.Half](r.Outputs.Get("y"))
	return fmt.Sprintf("%v %v -> %v %v", r.Example["x"], x, r.Outputs.Get("y"), y)
}

// A float16 model: its float16 examples and outputs cross the pipeline
// (encoded by the tensor coder), and the product is rounded to float16.
func TestONNXFloat16(t *testing.T) {
	x := tensorInfo("x", 0, 2)
	x.GetType().GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
	y := tensorInfo("y", 0, 2)
	y.GetType().GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
	spec := memModel(t, "square.onnx", &onnxpb.GraphProto{
		Name:   "square",
		Node:   []*onnxpb.NodeProto{{Name: "square", OpType: "Mul", Input: []string{"x", "x"}, Output: []string{"y"}}},
		Input:  []*onnxpb.ValueInfoProto{x},
		Output: []*onnxpb.ValueInfoProto{y},
	})
	half := func(a, b float32) inference.Example {
		return inference.Example{"x": inference.Row(inference.HalfFromFloat32(a), inference.HalfFromFloat32(b))}
	}
	p, s := beam.NewPipelineWithRoot()
	results := runinference.RunInference(s, spec, beam.CreateList(s, []inference.Example{half(1.5, -3), half(0.1, 300)}))
	passert.Equals(s, beam.ParDo(s, formatHalves, results),
		"float16[2] [1.5 -3] -> float16[2] [2.25 9]",
		"float16[2] [0.1 300] -> float16[2] [0.009995 +Inf]") // 0.1 is 0.0999755859375; 300² overflows
	ptest.RunAndValidate(t, p)
}

// A model exported without a dynamic batch axis (batch fixed at 1) runs
// element by element, and an element of the wrong shape fails alone with
// the input, the shape found and the shape wanted.
func TestONNXFixedBatchOneAndWrongShape(t *testing.T) {
	spec := memModel(t, "relu1.onnx", &onnxpb.GraphProto{
		Name:   "relu",
		Node:   []*onnxpb.NodeProto{{Name: "relu", OpType: "Relu", Input: []string{"x"}, Output: []string{"y"}}},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 1, 3)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 1, 3)},
	})
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{row(1, -2, 3), row(-1, 5, -6), row(1, 2), row(0, 0, 9)}
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(16))
	passert.Equals(s, beam.ParDo(s, formatResult, results), "[1 -2 3] -> [1 0 3]", "[-1 5 -6] -> [0 5 0]", "[0 0 9] -> [0 0 9]")
	passert.Equals(s, beam.ParDo(s, describeFailure, failures),
		`[1 2] at input (shape): inference: input "x": shape [2], want [3] (the model's [1 3] without the batch dimension): inference: shape mismatch (model true)`)
	pr := ptest.RunAndValidate(t, p)
	if d := distribution(t, pr, "inference_request_batch_size"); d.Max != 1 || d.Count != 3 {
		t.Errorf("inference_request_batch_size = %+v, want 3 batches of 1", d)
	}
}

func init() {
	register.Function1x1(formatSquaredSum)
	register.Function1x1(describeOverBudget)
}

func formatSquaredSum(r runinference.PredictionResult) string {
	if x := values(r.Example["x"]); len(x) > 8 {
		return fmt.Sprintf("%d values -> %v", len(x), values(r.Outputs.Get("y")))
	}
	return fmt.Sprintf("%v -> %v", values(r.Example["x"]), values(r.Outputs.Get("y")))
}

// describeOverBudget keeps an element's length, its stage and whether its
// error names the budget it went over.
func describeOverBudget(f runinference.Failure) string {
	return fmt.Sprintf("%d values at %s (%s): over budget %t", len(values(f.Example["x"])), f.Stage, f.Kind, contains(f.Err, "over the memory budget of 1.0 MiB"))
}

// dynamicDim is a dimension named name, of any size.
func dynamicDim(name string) *onnxpb.TensorShapeProto_Dimension {
	return &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: name}}
}

// floatValue declares a float32 value of the given dimensions.
func floatValue(name string, dims ...*onnxpb.TensorShapeProto_Dimension) *onnxpb.ValueInfoProto {
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_FLOAT), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}}
}

// int64s is an int64 initializer.
func int64s(name string, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: name, Dims: []int64{int64(len(v))}, DataType: int32(onnxpb.TensorProto_INT64), Int64Data: v}
}

// A real model under a memory budget: y = (Σx)², computed through the
// outer product of x with itself, [n, n] for an element of n values. An
// element of 1,024 values needs 4 MiB for it, over the budget of 1 MiB,
// and fails alone at stage inference; elements of 4 values need 64 bytes.
//
// This needs the CPU backend's kernels to allocate under the run's budget
// (inference/internal/limit); until they do, the large element succeeds.
func TestONNXMemoryBudget(t *testing.T) {
	dyn, vector := dynamicDim, floatValue
	spec := memModel(t, "squaredsum.onnx", &onnxpb.GraphProto{
		Name: "squaredsum",
		Node: []*onnxpb.NodeProto{
			{Name: "column", OpType: "Unsqueeze", Input: []string{"x", "axis2"}, Output: []string{"column"}},
			{Name: "row", OpType: "Unsqueeze", Input: []string{"x", "axis1"}, Output: []string{"row"}},
			{Name: "outer", OpType: "Mul", Input: []string{"column", "row"}, Output: []string{"outer"}},
			{Name: "sum", OpType: "ReduceSum", Input: []string{"outer", "axes12"}, Output: []string{"y"},
				Attribute: []*onnxpb.AttributeProto{{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}},
		},
		Initializer: []*onnxpb.TensorProto{int64s("axis1", 1), int64s("axis2", 2), int64s("axes12", 1, 2)},
		Input:       []*onnxpb.ValueInfoProto{vector("x", dyn("batch"), dyn("n"))},
		Output:      []*onnxpb.ValueInfoProto{vector("y", dyn("batch"))},
	})
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{row(1, 2, 3, 4), row(make([]float32, 1024)...), row(0, 0, 0, -1)}
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in), runinference.MemoryBudget(1<<20))
	passert.Equals(s, beam.ParDo(s, formatSquaredSum, results), "[1 2 3 4] -> [100]", "[0 0 0 -1] -> [1]")
	passert.Equals(s, beam.ParDo(s, describeOverBudget, failures), "1024 values at inference (memory_budget): over budget true")
	ptest.RunAndValidate(t, p)
}

package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

// The models are built here, as protos, and written to the case's
// temporary folder: the suite carries no model files.

// opset is the ai.onnx version the models import: the Reduce operators
// take their axes as an input, and ReduceMax of nothing is −Inf.
const opset = 18

const (
	f32 = onnxpb.TensorProto_FLOAT
	i64 = onnxpb.TensorProto_INT64
	str = onnxpb.TensorProto_STRING
	boo = onnxpb.TensorProto_BOOL
)

// model wraps g in a ModelProto of IR version 8 importing ai.onnx at
// version opset.
func model(g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return modelAt(opset, g)
}

func modelAt(version int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: version}}, Graph: g}
}

// graphOf is the graph named g of nodes, with the given inputs, outputs
// and initializers.
func graphOf(nodes []*onnxpb.NodeProto, inputs, outputs []*onnxpb.ValueInfoProto, inits ...*onnxpb.TensorProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: "g", Node: nodes, Input: inputs, Output: outputs, Initializer: inits}
}

// single is a model of the one node n, whose first output is the graph
// output y of element type out and any shape; inputs are the graph inputs.
func single(n *onnxpb.NodeProto, out onnxpb.TensorProto_DataType, inputs []*onnxpb.ValueInfoProto, inits ...*onnxpb.TensorProto) *onnxpb.ModelProto {
	y := info("y", out)
	y.Type.GetTensorType().Shape = nil
	return model(graphOf([]*onnxpb.NodeProto{n}, inputs, vals(y), inits...))
}

func vals(v ...*onnxpb.ValueInfoProto) []*onnxpb.ValueInfoProto { return v }

// op is a node named name of type opType, reading inputs and writing y.
func op(name, opType string, inputs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: name, OpType: opType, Input: inputs, Output: []string{"y"}, Attribute: attrs}
}

func names(s ...string) []string { return s }

// info declares a tensor value of the given dimensions (none: a scalar); a
// negative dimension is dynamic (a dim_param).
func info(name string, elem onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for i, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
		if d < 0 {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: fmt.Sprintf("%s_%d", name, i)}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(elem), Shape: shape}}}}
}

func floatInit(name string, dims []int64, v ...float32) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: name, Dims: dims, DataType: int32(f32), FloatData: v}
}

func int64Init(name string, dims []int64, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: name, Dims: dims, DataType: int32(i64), Int64Data: v}
}

func dims(d ...int64) []int64 { return d }

// iota64 is the int64 initializer name holding 0, 1, …, n−1.
func iota64(name string, n int) *onnxpb.TensorProto {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return int64Init(name, dims(int64(n)), v...)
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INT, I: v}
}

func intsAttr(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INTS, Ints: v}
}

func tensorAttr(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_TENSOR, T: t}
}

func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_GRAPH, G: g}
}

// Feeds.

type feeds = map[string]inference.Tensor

func tensor[T inference.Element](shape []int, data []T) inference.Tensor {
	t, err := inference.New(shape, data)
	if err != nil {
		panic(err) // a mistake in a case's table
	}
	return t
}

// vec is a 1-D int64 tensor.
func vec(v ...int64) inference.Tensor { return tensor([]int{len(v)}, v) }

func scalar[T inference.Element](v T) inference.Tensor { return tensor([]int{}, []T{v}) }

// empty is a float32 tensor of the given shape, which has a zero in it.
func empty(shape ...int) inference.Tensor { return tensor(shape, []float32{}) }

func ones(shape ...int) inference.Tensor {
	n, err := inference.NumElements(shape)
	if err != nil {
		panic(err)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return tensor(shape, v)
}

// Loading and running.

// write saves m in a temporary folder of t and returns its path.
func write(t *testing.T, m *onnxpb.ModelProto) string {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// load loads the model file at path onto the CPU under ctx, through a
// cache of its own, and returns it with its release.
func load(ctx context.Context, path string) (inference.Model, func(), error) {
	h, err := inference.NewCache(0).Acquire(ctx, onnx.Model(path).WithDevice(inference.CPU))
	if err != nil {
		return nil, nil, err
	}
	return h.Model(), h.Release, nil
}

// loadErr is the error of loading the model file at path under lim.
func loadErr(t *testing.T, path string, lim limits) error {
	t.Helper()
	_, err := bounded(t, lim, func(ctx context.Context) (struct{}, error) {
		_, release, err := load(ctx, path)
		if err == nil {
			release()
		}
		return struct{}{}, err
	})
	return err
}

// run loads m and runs it on in, under lim; a failed load is returned as
// the error.
func run(t *testing.T, lim limits, m *onnxpb.ModelProto, in feeds) (feeds, error) {
	t.Helper()
	path := write(t, m)
	return bounded(t, lim, func(ctx context.Context) (feeds, error) {
		model, release, err := load(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		defer release()
		return model.Run(ctx, in)
	})
}

// Assertions.

// wantExhausted fails t unless err is an *inference.ResourceError whose
// node is one of nodes, checked against the run's budget, asking for more
// than the budget leaves (or for a size that overflows, -1).
func wantExhausted(t *testing.T, err error, lim limits, nodes ...string) {
	t.Helper()
	var re *inference.ResourceError
	if !errors.As(err, &re) || !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("error %v, want an *inference.ResourceError (inference.ErrResourceExhausted)", err)
	}
	if !namesOne(re.Node, nodes) {
		t.Errorf("ResourceError.Node = %q, want the node %q", re.Node, nodes)
	}
	if re.Bytes != -1 && re.Bytes <= re.Budget-re.InUse {
		t.Errorf("ResourceError asks for %d bytes, within what its budget of %d leaves (%d in use): want more, or -1 for an overflow", re.Bytes, re.Budget, re.InUse)
	}
	if re.Budget != lim.budget {
		t.Errorf("ResourceError.Budget = %d, want the run's budget %d", re.Budget, lim.budget)
	}
}

// wantRefused fails t unless err refuses a size that overflows int64:
// a ResourceError as wantExhausted checks it, or inference.ErrShape
// naming the node.
func wantRefused(t *testing.T, err error, lim limits, node string) {
	t.Helper()
	if errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrPanic) {
		wantNamed(t, err, node)
		return
	}
	if !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("error %v, want one wrapping inference.ErrShape or inference.ErrResourceExhausted", err)
	}
	wantExhausted(t, err, lim, node)
}

// wantNamed fails t unless err's text names node.
func wantNamed(t *testing.T, err error, node string) {
	t.Helper()
	if !strings.Contains(err.Error(), strconv.Quote(node)) {
		t.Errorf("error %q does not name the node %q", err, node)
	}
}

// namesOne reports whether the node text of a ResourceError (`"name" (Op)`)
// names one of nodes.
func namesOne(node string, nodes []string) bool {
	for _, n := range nodes {
		if strings.Contains(node, strconv.Quote(n)) {
			return true
		}
	}
	return false
}

// wantFailed fails t at once if the run returned outputs rather than an
// error.
func wantFailed(t *testing.T, out feeds, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("Run returned %v, want an error", out)
	}
}

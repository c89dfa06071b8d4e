package hostile_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// TestEmptyTensors: x = float32[0, 2⁶²] holds nothing, and no operator may
// loop over its huge dimension or size a buffer by it. Where ONNX defines
// the result it is returned: the output shape ONNX gives, and for a
// reduction over no elements its identity (ReduceSum 0, ReduceMax −Inf
// from opset 18). Where that result would hold 2⁶² or more elements the
// run fails with inference.ErrResourceExhausted; where a dimension of it
// does not fit in int64 (2⁶² + 2⁶²), with ErrShape or ErrResourceExhausted.
func TestEmptyTensors(t *testing.T) {
	const h = 1 << 62
	x := empty(0, h)
	cases := []emptyCase{
		{name: "Softmax_axis-1", node: op("op", "Softmax", names("x"), intAttr("axis", -1)), want: emptyWant{shape: []int{0, h}}},
		{name: "Softmax_axis0", node: op("op", "Softmax", names("x"), intAttr("axis", 0)), want: emptyWant{shape: []int{0, h}}},
		{name: "CumSum_axis1", node: op("op", "CumSum", names("x", "axis")), inits: inits(int64Init("axis", nil, 1)), want: emptyWant{shape: []int{0, h}}},
		{name: "CumSum_axis0", node: op("op", "CumSum", names("x", "axis")), inits: inits(int64Init("axis", nil, 0)), want: emptyWant{shape: []int{0, h}}},
		{name: "Transpose", node: op("op", "Transpose", names("x"), intsAttr("perm", 1, 0)), want: emptyWant{shape: []int{h, 0}}},
		// [0, 2⁶²]·[2⁶², 0]: an empty product over 2⁶² terms.
		{name: "MatMul_empty", node: op("op", "MatMul", names("x", "w")), w: empty(h, 0), want: emptyWant{shape: []int{0, 0}}},
		// [2⁶², 0]·[0, 2⁶²] would be 2¹²⁴ zeros.
		{name: "MatMul_outer", node: op("op", "MatMul", names("w", "x")), w: empty(h, 0), want: emptyWant{err: errOverflow}},
		{name: "Relu", node: op("op", "Relu", names("x")), want: emptyWant{shape: []int{0, h}}},
		{name: "Concat_axis0", node: op("op", "Concat", names("x", "x"), intAttr("axis", 0)), want: emptyWant{shape: []int{0, h}}},
		{name: "Concat_axis1", node: op("op", "Concat", names("x", "x"), intAttr("axis", 1)), want: emptyWant{err: errOverflow}},
		{name: "Gather_axis0", node: op("op", "Gather", names("x", "i"), intAttr("axis", 0)), inits: inits(int64Init("i", dims(0))), want: emptyWant{shape: []int{0, h}}},
		{name: "Gather_axis1", node: op("op", "Gather", names("x", "i"), intAttr("axis", 1)), inits: inits(int64Init("i", dims(2), 0, h-1)), want: emptyWant{shape: []int{0, 2}}},
		// x[:, 1::2]
		{name: "Slice", node: op("op", "Slice", names("x", "starts", "ends", "axes", "steps")),
			inits: inits(int64Init("starts", dims(1), 1), int64Init("ends", dims(1), math.MaxInt64), int64Init("axes", dims(1), 1), int64Init("steps", dims(1), 2)),
			want:  emptyWant{shape: []int{0, h / 2}}},
		// Dimensions given as values (shape operands) are at most 2³¹−1.
		{name: "Reshape_allowzero", node: op("op", "Reshape", names("x", "shape"), intAttr("allowzero", 1)), inits: inits(int64Init("shape", dims(2), h, 0)), want: emptyWant{err: errOverflow}},
		{name: "Reshape_flat", node: op("op", "Reshape", names("x", "shape")), inits: inits(int64Init("shape", dims(1), -1)), want: emptyWant{shape: []int{0}}},
		{name: "Flatten_axis0", node: op("op", "Flatten", names("x"), intAttr("axis", 0)), want: emptyWant{shape: []int{1, 0}}},
		{name: "Flatten_axis1", node: op("op", "Flatten", names("x"), intAttr("axis", 1)), want: emptyWant{shape: []int{0, h}}},
		{name: "Flatten_axis2", node: op("op", "Flatten", names("x"), intAttr("axis", 2)), want: emptyWant{shape: []int{0, 1}}},
	}
	// The reductions, with keepdims 0 and 1, over every axis (axes left
	// out), the huge one and the empty one.
	for _, r := range []struct {
		op       string
		identity float32
	}{{"ReduceSum", 0}, {"ReduceMax", float32(math.Inf(-1))}} {
		for _, keep := range []int64{0, 1} {
			k := fmt.Sprintf("_keepdims%d", keep)
			all := emptyWant{shape: []int{}, data: []float32{r.identity}}
			overHuge := emptyWant{shape: []int{0}}
			overEmpty := emptyWant{err: inference.ErrResourceExhausted} // 2⁶² identities
			if keep == 1 {
				all.shape, overHuge.shape = []int{1, 1}, []int{0, 1}
			}
			cases = append(cases,
				emptyCase{name: r.op + "_all" + k, node: op("op", r.op, names("x"), intAttr("keepdims", keep)), want: all},
				emptyCase{name: r.op + "_axis1" + k, node: op("op", r.op, names("x", "axes"), intAttr("keepdims", keep)), inits: inits(int64Init("axes", dims(1), 1)), want: overHuge},
				emptyCase{name: r.op + "_axis0" + k, node: op("op", r.op, names("x", "axes"), intAttr("keepdims", keep)), inits: inits(int64Init("axes", dims(1), 0)), want: overEmpty},
			)
		}
	}
	for _, c := range cases {
		isolate(t, c.name, func(t *testing.T) {
			in := vals(info("x", f32, -1, -1))
			fed := feeds{"x": x}
			if c.w.DType() != 0 {
				in = append(in, info("w", f32, -1, -1))
				fed["w"] = c.w
			}
			out, err := run(t, std, single(c.node, f32, in, c.inits...), fed)
			switch {
			case c.want.err == errOverflow:
				wantFailed(t, out, err)
				wantRefused(t, err, std, "op")
			case c.want.err != nil:
				wantFailed(t, out, err)
				wantExhausted(t, err, std, "op")
			case err != nil:
				t.Fatalf("Run: %v; want y of shape %v", err, c.want.shape)
			default:
				y := out["y"]
				if !slices.Equal(y.Shape(), c.want.shape) {
					t.Fatalf("y has shape %v, want %v", y.Shape(), c.want.shape)
				}
				got, err := inference.Data[float32](y)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, c.want.data) {
					t.Errorf("y = %v, want %v", got, c.want.data)
				}
			}
		})
	}
}

type emptyCase struct {
	name  string
	node  *onnxpb.NodeProto // reads x (and w), writes y
	inits []*onnxpb.TensorProto
	w     inference.Tensor // the second input, where the node has one
	want  emptyWant
}

type emptyWant struct {
	shape []int     // y's shape, when the run succeeds
	data  []float32 // y's elements, where it has any
	err   error     // the error wanted instead: inference.ErrResourceExhausted, or errOverflow
}

// errOverflow marks a case whose result has a dimension or a size int64
// cannot hold: inference.ErrShape and inference.ErrResourceExhausted are
// both right.
var errOverflow = errors.New("overflow")

func inits(t ...*onnxpb.TensorProto) []*onnxpb.TensorProto { return t }

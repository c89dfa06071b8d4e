package hostile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beamml/beamml/internal/onnxpb"
)

// TestLoops: a Loop of 10¹⁵ iterations stops at the context's deadline
// (an error wrapping context.DeadlineExceeded), and one whose scan output
// or loop-carried value grows each iteration stops at the memory budget
// (an *inference.ResourceError naming the Loop or the body's node that
// asked); the heap stays within its bound meanwhile.
func TestLoops(t *testing.T) {
	x := info("x", f32, -1)
	isolate(t, "trip_count_1e15", func(t *testing.T) {
		short := std
		short.deadline = 500 * time.Millisecond
		out, err := run(t, short, loopModel(nil), feeds{"x": ones(1)})
		wantFailed(t, out, err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want one wrapping context.DeadlineExceeded", err)
		}
	})
	// Each iteration adds 1 MiB of zeros to the scan output s.
	isolate(t, "scan_output_grows", func(t *testing.T) {
		fill := &onnxpb.NodeProto{Name: "fill", OpType: "ConstantOfShape", Input: names("size"), Output: names("s_out")}
		m := loopModel(fill, int64Init("size", dims(1), 1<<18))
		out, err := run(t, std, m, feeds{"x": ones(1)})
		wantFailed(t, out, err)
		wantExhausted(t, err, std, "loop", "fill")
	})
	// v doubles each iteration: 2²⁴ floats fill the budget.
	isolate(t, "carried_value_doubles", func(t *testing.T) {
		double := &onnxpb.NodeProto{Name: "double", OpType: "Concat", Input: names("v", "v"), Output: names("v_out"), Attribute: []*onnxpb.AttributeProto{intAttr("axis", 0)}}
		body := graphOf([]*onnxpb.NodeProto{double, {Name: "go_on", OpType: "Identity", Input: names("c"), Output: names("c_out")}},
			vals(info("i", i64), info("c", boo), info("v", f32, -1)), vals(info("c_out", boo), info("v_out", f32, -1)))
		m := model(graphOf([]*onnxpb.NodeProto{loopNode(body, "y")}, vals(x), vals(info("y", f32, -1)),
			int64Init("trips", nil, 1e15), boolInit("go", true)))
		out, err := run(t, std, m, feeds{"x": ones(1)})
		wantFailed(t, out, err)
		wantExhausted(t, err, std, "loop", "double")
	})
}

// loopModel is y = x + 10¹⁵, as a Loop named "loop" of 10¹⁵ iterations
// adding 1. With scan, a node of the body writing s_out from the
// initializers inits of the body, the Loop's second output s stacks s_out.
func loopModel(scan *onnxpb.NodeProto, inits ...*onnxpb.TensorProto) *onnxpb.ModelProto {
	nodes := []*onnxpb.NodeProto{
		{Name: "add", OpType: "Add", Input: names("v", "one"), Output: names("v_out")},
		{Name: "go_on", OpType: "Identity", Input: names("c"), Output: names("c_out")},
	}
	outs := vals(info("c_out", boo), info("v_out", f32, -1))
	loopOuts := names("y")
	graphOuts := vals(info("y", f32, -1))
	if scan != nil {
		nodes = append(nodes, scan)
		outs = append(outs, info("s_out", f32, -1))
		loopOuts = append(loopOuts, "s")
		graphOuts = append(graphOuts, info("s", f32, -1, -1))
	}
	body := graphOf(nodes, vals(info("i", i64), info("c", boo), info("v", f32, -1)), outs,
		append(inits, floatInit("one", dims(1), 1))...)
	return model(graphOf([]*onnxpb.NodeProto{loopNode(body, loopOuts...)}, vals(info("x", f32, -1)), graphOuts,
		int64Init("trips", nil, 1e15), boolInit("go", true)))
}

// loopNode is the Loop "loop" over body, of trip count "trips", condition
// "go" and initial value x.
func loopNode(body *onnxpb.GraphProto, outputs ...string) *onnxpb.NodeProto {
	body.Name = "body"
	return &onnxpb.NodeProto{Name: "loop", OpType: "Loop", Input: names("trips", "go", "x"), Output: outputs,
		Attribute: []*onnxpb.AttributeProto{graphAttr("body", body)}}
}

func boolInit(name string, v bool) *onnxpb.TensorProto {
	b := int32(0)
	if v {
		b = 1
	}
	return &onnxpb.TensorProto{Name: name, DataType: int32(boo), Int32Data: []int32{b}}
}

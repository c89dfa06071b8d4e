package hostile_test

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// TestLoadRefuses: a model that cannot run fails to load with an error
// wrapping inference.ErrBadModel. A model whose constant folding would
// fill more than the load's budget fails so before it allocates, with
// inference.ErrResourceExhausted in the chain too.
func TestLoadRefuses(t *testing.T) {
	x, y := info("x", f32, -1), info("y", f32, -1)
	relu := op("relu", "Relu", names("x"))
	fill := tensorAttr("value", floatInit("", dims(1), 1))
	cases := []struct {
		name      string
		model     *onnxpb.ModelProto
		exhausted bool // the folding budget refused it
	}{
		// A few hundred bytes that fold into 4 TB.
		{"fold_ConstantOfShape_1e12", single(op("bomb", "ConstantOfShape", names("shape"), fill), f32, nil,
			int64Init("shape", dims(2), 1e6, 1e6)), true},
		{"fold_Expand_1e12", single(op("bomb", "Expand", names("one", "shape")), f32, nil,
			floatInit("one", dims(1), 1), int64Init("shape", dims(2), 1e6, 1e6)), true},
		// 2 GiB: a size a slice can have, far over the folding budget.
		{"fold_ConstantOfShape_2GiB", single(op("bomb", "ConstantOfShape", names("shape"), fill), f32, nil,
			int64Init("shape", dims(1), 1<<29)), true},

		{"duplicate_input", single(relu, f32, vals(x, x)), false},
		{"input_size_overflows", single(relu, f32, vals(info("x", f32, 1<<40, 1<<40))), false},
		{"node_overwrites_input", model(graphOf([]*onnxpb.NodeProto{
			relu, {Name: "neg", OpType: "Neg", Input: names("y"), Output: names("x")},
		}, vals(x), vals(y))), false},
		{"node_overwrites_initializer", model(graphOf([]*onnxpb.NodeProto{
			{Name: "neg", OpType: "Neg", Input: names("x"), Output: names("w")},
			{Name: "add", OpType: "Add", Input: names("x", "w"), Output: names("y")},
		}, vals(x), vals(y), floatInit("w", dims(1), 1))), false},
		// Tensors of the element types classical models bring: strings
		// that are not UTF-8, a billion strings declared with two
		// present, integers out of their type's range in the wider field
		// ONNX stores them in, a string tensor in raw_data.
		{"string_not_utf8", single(op("id", "Identity", names("s")), str, nil,
			&onnxpb.TensorProto{Name: "s", Dims: dims(2), DataType: int32(str), StringData: [][]byte{[]byte("ok"), {0xff, 0xfe}}}), false},
		{"strings_1e9_declared", single(op("id", "Identity", names("s")), str, nil,
			&onnxpb.TensorProto{Name: "s", Dims: dims(1e9), DataType: int32(str), StringData: [][]byte{[]byte("a"), []byte("b")}}), false},
		{"strings_in_raw_data", single(op("id", "Identity", names("s")), str, nil,
			&onnxpb.TensorProto{Name: "s", Dims: dims(2), DataType: int32(str), RawData: []byte("ab")}), false},
		{"uint32_out_of_range", single(op("id", "Identity", names("u")), onnxpb.TensorProto_UINT32, nil,
			&onnxpb.TensorProto{Name: "u", Dims: dims(1), DataType: int32(onnxpb.TensorProto_UINT32), Uint64Data: []uint64{1 << 40}}), false},
		{"int8_out_of_range", single(op("id", "Identity", names("i")), onnxpb.TensorProto_INT8, nil,
			&onnxpb.TensorProto{Name: "i", Dims: dims(1), DataType: int32(onnxpb.TensorProto_INT8), Int32Data: []int32{200}}), false},
		{"double_raw_short", single(op("id", "Identity", names("d")), onnxpb.TensorProto_DOUBLE, nil,
			&onnxpb.TensorProto{Name: "d", Dims: dims(4), DataType: int32(onnxpb.TensorProto_DOUBLE), RawData: make([]byte, 31)}), false},
		{"opset_99", modelAt(99, graphOf([]*onnxpb.NodeProto{relu}, vals(x), vals(y))), false},
		{"opset_-5", modelAt(-5, graphOf([]*onnxpb.NodeProto{relu}, vals(x), vals(y))), false},
	}
	for _, c := range cases {
		isolate(t, c.name, func(t *testing.T) {
			err := loadErr(t, write(t, c.model), std)
			if !errors.Is(err, inference.ErrBadModel) {
				t.Fatalf("load: %v, want an error wrapping inference.ErrBadModel", err)
			}
			if c.exhausted && !errors.Is(err, inference.ErrResourceExhausted) {
				t.Errorf("load: %v, want inference.ErrResourceExhausted in the chain too", err)
			}
		})
	}
}

// TestLoadScales: graphs that are large or deep, but not wrong, load (a
// deep one may instead fail with inference.ErrBadModel), in a heap that
// grows at most 64 bytes for each byte of the file.
func TestLoadScales(t *testing.T) {
	const perByte = 64
	// 100,000 nodes that do not depend on each other, each writing an
	// output of the graph.
	isolate(t, "100000_independent_nodes", func(t *testing.T) {
		const n = 100_000
		g := graphOf(nil, vals(info("x", f32, 1)), nil)
		for i := range n {
			name := fmt.Sprintf("y%d", i)
			g.Node = append(g.Node, &onnxpb.NodeProto{Name: fmt.Sprintf("neg%d", i), OpType: "Neg", Input: names("x"), Output: names(name)})
			g.Output = append(g.Output, info(name, f32, 1))
		}
		path := write(t, model(g))
		err := loadErr(t, path, limits{budget: std.budget, deadline: time.Minute, heap: perByte * fileSize(t, path)})
		if err != nil {
			t.Fatalf("load: %v", err)
		}
	})
	// If inside If, 3,000 deep: each level's then-branch holds the next.
	isolate(t, "If_nested_3000_deep", func(t *testing.T) {
		const depth = 3000
		branch := func(level int, nodes ...*onnxpb.NodeProto) *onnxpb.GraphProto {
			out := fmt.Sprintf("out%d", level)
			nodes[len(nodes)-1].Output = names(out)
			return graphOf(nodes, nil, vals(info(out, f32, 1)))
		}
		leaf := func(level int) *onnxpb.NodeProto {
			return &onnxpb.NodeProto{Name: fmt.Sprintf("id%d", level), OpType: "Identity", Input: names("x")}
		}
		inner := branch(depth+1, leaf(depth+1))
		for level := depth; level > 0; level-- {
			ifNode := &onnxpb.NodeProto{Name: fmt.Sprintf("if%d", level), OpType: "If", Input: names("c"),
				Attribute: []*onnxpb.AttributeProto{graphAttr("then_branch", inner), graphAttr("else_branch", branch(-level, leaf(-level)))}}
			inner = branch(level, ifNode)
		}
		top := inner.Node[0]
		top.Output = names("y")
		m := model(graphOf([]*onnxpb.NodeProto{top}, vals(info("c", boo), info("x", f32, 1)), vals(info("y", f32, 1))))
		path := write(t, m)
		err := loadErr(t, path, limits{budget: std.budget, deadline: std.deadline, heap: perByte * fileSize(t, path)})
		if err != nil && !errors.Is(err, inference.ErrBadModel) {
			t.Fatalf("load: %v, want success or an error wrapping inference.ErrBadModel", err)
		}
	})
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

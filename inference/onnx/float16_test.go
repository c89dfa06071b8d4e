package onnx_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

// halfInfo is floatInfo for a FLOAT16 value.
func halfInfo(name string, dims ...int64) *onnxpb.ValueInfoProto {
	vi := floatInfo(name, dims...)
	vi.GetType().GetTensorType().ElemType = int32(onnxpb.TensorProto_FLOAT16)
	return vi
}

// halfModel is y = Mul(x, w) + c with x, y, w float16 and c a Constant
// node's float16 tensor, and z = Cast(y, to=FLOAT) float32: the weights'
// bits in w's raw_data or int32_data as ONNX specifies, and c's in
// int32_data.
func halfModel(w *onnxpb.TensorProto) *onnxpb.ModelProto {
	c := &onnxpb.TensorProto{Dims: []int64{2}, DataType: int32(onnxpb.TensorProto_FLOAT16), Int32Data: []int32{0x3800, 0xbc00}} // 0.5, -1
	m := model(w,
		&onnxpb.NodeProto{Name: "c", OpType: "Constant", Output: []string{"c"},
			Attribute: []*onnxpb.AttributeProto{{Name: "value", Type: onnxpb.AttributeProto_TENSOR, T: c}}},
		&onnxpb.NodeProto{Name: "mul", OpType: "Mul", Input: []string{"x", "w"}, Output: []string{"p"}},
		&onnxpb.NodeProto{Name: "add", OpType: "Add", Input: []string{"p", "c"}, Output: []string{"y"}},
		&onnxpb.NodeProto{Name: "cast", OpType: "Cast", Input: []string{"y"}, Output: []string{"z"},
			Attribute: []*onnxpb.AttributeProto{{Name: "to", Type: onnxpb.AttributeProto_INT, I: 1}}},
	)
	m.Graph.Input = []*onnxpb.ValueInfoProto{halfInfo("x", 2)}
	m.Graph.Output = []*onnxpb.ValueInfoProto{halfInfo("y", 2), floatInfo("z", 2)}
	return m
}

// Float16 initializers in raw_data (little-endian) and in int32_data (one
// bit pattern each), float16 inputs and outputs, and Constant nodes with
// float16 tensors decode, load, and run on the CPU.
func TestFloat16ModelLoadsAndRuns(t *testing.T) {
	for name, w := range map[string]*onnxpb.TensorProto{
		"raw_data":   {Name: "w", Dims: []int64{2}, DataType: int32(onnxpb.TensorProto_FLOAT16), RawData: []byte{0x00, 0x3e, 0x66, 0x2e}}, // 1.5, 0.1
		"int32_data": {Name: "w", Dims: []int64{2}, DataType: int32(onnxpb.TensorProto_FLOAT16), Int32Data: []int32{0x3e00, 0x2e66}},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := onnx.Decode(marshal(t, halfModel(w)), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Initializers["w"]; got.DType() != inference.Float16 {
				t.Errorf("w decodes as %v, want float16", got)
			} else if h, _ := inference.Data[inference.Half](got); !slices.Equal(h, []inference.Half{0x3e00, 0x2e66}) {
				t.Errorf("w holds %v, want [1.5 0.1]", h)
			}
			if g.Inputs[0].DType != inference.Float16 || g.Outputs[0].DType != inference.Float16 || g.Outputs[1].DType != inference.Float32 {
				t.Errorf("inputs %v, outputs %v: want x float16, y float16, z float32", g.Inputs, g.Outputs)
			}
			if c := g.Nodes[0].Attrs["value"].Tensor; c.DType() != inference.Float16 {
				t.Errorf("the Constant's value decodes as %v, want float16", c)
			}

			m, err := load(t, writeModel(t, t.TempDir(), halfModel(w)))
			if err != nil {
				t.Fatal(err)
			}
			x, _ := inference.New([]int{2}, []inference.Half{inference.HalfFromFloat32(3), inference.HalfFromFloat32(-2.5)})
			out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			round := func(v float32) float32 { return inference.HalfFromFloat32(v).Float32() }
			want := []float32{round(round(3*1.5) + 0.5), round(round(-2.5*inference.Half(0x2e66).Float32()) - 1)}
			y, err := inference.Data[inference.Half](out["y"])
			if err != nil {
				t.Fatalf("y: %v", err)
			}
			z, err := inference.Data[float32](out["z"])
			if err != nil {
				t.Fatalf("z: %v", err)
			}
			for i := range want {
				if y[i].Float32() != want[i] || z[i] != want[i] {
					t.Errorf("element %d: y %v, z %v, want %v", i, y[i], z[i], want[i])
				}
			}
		})
	}
}

// int32_data holds a float16's 16 bits; a value outside [0, 65535] is
// not one, and the model is bad.
func TestFloat16Int32DataOutOfRangeFails(t *testing.T) {
	w := &onnxpb.TensorProto{Name: "w", Dims: []int64{2}, DataType: int32(onnxpb.TensorProto_FLOAT16), Int32Data: []int32{0x3c00, 0x10000}}
	_, err := onnx.Decode(marshal(t, halfModel(w)), "")
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "int32_data[1] is 65536")
	w.Int32Data = []int32{0x3c00}
	_, err = onnx.Decode(marshal(t, halfModel(w)), "")
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "declares 2 values, 1 present")
	w.Int32Data, w.RawData = nil, []byte{0, 0x3c, 0}
	_, err = onnx.Decode(marshal(t, halfModel(w)), "")
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "declares 4 bytes of data, 3 present")
}

// ReadTensor reads float16 tensor files, as ONNX's test data writes them.
func TestReadTensorFloat16(t *testing.T) {
	b, err := proto.Marshal(&onnxpb.TensorProto{Name: "y", Dims: []int64{3}, DataType: int32(onnxpb.TensorProto_FLOAT16), RawData: []byte{0x00, 0x7c, 0xff, 0x7b, 0x01, 0x80}})
	if err != nil {
		t.Fatal(err)
	}
	name, x, err := onnx.ReadTensor(b)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := inference.Data[inference.Half](x); name != "y" || !slices.Equal(h, []inference.Half{0x7c00, 0x7bff, 0x8001}) {
		t.Errorf("ReadTensor = %q, %v %v; want y [+Inf 65504 -6e-08]", name, x, h)
	}
}

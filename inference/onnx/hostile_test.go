package onnx_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

// allocated returns the bytes f allocates, garbage included.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A model of 100,000 nodes, none depending on another, decodes in file
// order (sorting them used to take minutes).
func TestDecodeHundredThousandNodes(t *testing.T) {
	const n = 100_000
	g := &onnxpb.GraphProto{Name: "wide", Input: []*onnxpb.ValueInfoProto{floatInfo("x", 2)}, Output: []*onnxpb.ValueInfoProto{floatInfo("r0", 2)}}
	for i := range n {
		g.Node = append(g.Node, &onnxpb.NodeProto{Name: "relu" + strconv.Itoa(i), OpType: "Relu", Input: []string{"x"}, Output: []string{"r" + strconv.Itoa(i)}})
	}
	dg, err := onnx.Decode(marshal(t, &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g}), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(dg.Nodes) != n || dg.Nodes[0].Name != "relu0" || dg.Nodes[n-1].Name != "relu"+strconv.Itoa(n-1) {
		t.Errorf("decoded %d nodes, %v … %v; want %d in file order", len(dg.Nodes), dg.Nodes[0], dg.Nodes[len(dg.Nodes)-1], n)
	}
}

// nestedIf returns a model whose If holds a then_branch whose If holds …
// depth graphs deep; every level adds the top graph's input x to the value
// the level above computed, and its else_branch returns that value.
func nestedIf(depth int) *onnxpb.ModelProto {
	var inner *onnxpb.GraphProto
	for level := depth; level >= 0; level-- {
		l := strconv.Itoa(level)
		parent := "v" + strconv.Itoa(level-1)
		if level == 0 {
			parent = "x"
		}
		g := &onnxpb.GraphProto{Name: "level" + l, Output: []*onnxpb.ValueInfoProto{floatInfo("out"+l, 2)},
			Node: []*onnxpb.NodeProto{{Name: "add" + l, OpType: "Add", Input: []string{"x", parent}, Output: []string{"v" + l}}}}
		if inner == nil {
			g.Node[0].Output[0] = "out" + l
		} else {
			elseBranch := &onnxpb.GraphProto{Name: "else" + l, Output: []*onnxpb.ValueInfoProto{floatInfo("v"+l, 2)}}
			g.Node = append(g.Node, &onnxpb.NodeProto{Name: "if" + l, OpType: "If", Input: []string{"cond"}, Output: []string{"out" + l},
				Attribute: []*onnxpb.AttributeProto{
					{Name: "then_branch", Type: onnxpb.AttributeProto_GRAPH, G: inner},
					{Name: "else_branch", Type: onnxpb.AttributeProto_GRAPH, G: elseBranch}}})
		}
		inner = g
	}
	cond := &onnxpb.ValueInfoProto{Name: "cond", Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnxpb.TensorProto_BOOL), Shape: &onnxpb.TensorShapeProto{}}}}}
	inner.Input = []*onnxpb.ValueInfoProto{floatInfo("x", 2), cond}
	return &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: inner}
}

// Decoding If nested 3,000 deep allocates in proportion to the file, not
// to the square of the depth (it allocated 6 GB). The bound, 64 times the
// file: the protobuf decoder alone allocates about 10 bytes per byte of a
// graph of small messages, and each level adds a handful of maps and
// slices that the few dozen bytes of its messages pay for.
func TestDecodeDeepNestingIsBounded(t *testing.T) {
	data := marshal(t, nestedIf(3000))
	var g *graph.Graph
	var err error
	grew := allocated(func() { g, err = onnx.Decode(data, "") })
	if err != nil {
		t.Fatal(err)
	}
	if limit := 64 * uint64(len(data)); grew > limit {
		t.Errorf("decoding %d bytes of nested Ifs allocated %d bytes, want at most 64× the file (%d)", len(data), grew, limit)
	}
	// The model runs: with cond true, level l computes v_l = (l+2)·x, and
	// the deepest, level 3000, outputs x + v_2999 = 3002·x.
	m, err := cpu.Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := inference.New([]int{2}, []float32{1, 2})
	cond, _ := inference.New([]int{}, []bool{true})
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x, "cond": cond})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := inference.Data[float32](out["out0"]); !slices.Equal(got, []float32{3002, 6004}) {
		t.Errorf("out0 = %v, want [3002 6004]", got)
	}
}

// An error deep in nested subgraphs names the graph it is in and the node
// of the model's graph that holds it; the message does not grow with the
// depth (wrapping it at every level took memory quadratic in the depth).
func TestDeepErrorIsNamedOnce(t *testing.T) {
	for name, spoil := range map[string]func(*onnxpb.GraphProto){
		"dangling input": func(g *onnxpb.GraphProto) { g.Node[0].Input[1] = "nowhere" },
		"bad initializer": func(g *onnxpb.GraphProto) {
			g.Initializer = []*onnxpb.TensorProto{{Name: "nowhere", Dims: []int64{1 << 20}, DataType: int32(onnxpb.TensorProto_FLOAT)}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := nestedIf(3000)
			deepest := m.Graph
			for len(deepest.Node) > 1 {
				deepest = deepest.Node[1].Attribute[0].G
			}
			spoil(deepest)
			data := marshal(t, m)
			var err error
			grew := allocated(func() { _, err = onnx.Decode(data, "") })
			wantErr(t, err, inference.ErrBadModel, `graph "level0"`, `"if0" (If)`, `graph "level3000"`, `"nowhere"`)
			if len(err.Error()) > 500 {
				t.Errorf("error message of %d bytes, want under 500: %.500s…", len(err.Error()), err)
			}
			if limit := 64 * uint64(len(data)); grew > limit {
				t.Errorf("decoding allocated %d bytes, want at most 64× the file (%d)", grew, limit)
			}
		})
	}
}

// Nesting deeper than the protobuf decoder's recursion limit is a bad
// model, not a crash.
func TestDecodeTooDeepFails(t *testing.T) {
	_, err := onnx.Decode(marshal(t, nestedIf(4000)), "")
	wantErr(t, err, inference.ErrBadModel)
}

// decodeGraph decodes a model whose graph is g, with opset 17 and IR 8.
func decodeGraph(t *testing.T, g *onnxpb.GraphProto) error {
	t.Helper()
	_, err := onnx.Decode(marshal(t, &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g}), "")
	return err
}

func TestModelsThatCannotRunFail(t *testing.T) {
	add := func(out string) []*onnxpb.NodeProto {
		return []*onnxpb.NodeProto{{Name: "add", OpType: "Add", Input: []string{"x", "w"}, Output: []string{out}}}
	}
	for name, tc := range map[string]struct {
		g    *onnxpb.GraphProto
		want []string
	}{
		"two inputs with one name": {
			&onnxpb.GraphProto{Name: "g", Node: add("y"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", 2), floatInfo("x", 2)}, Output: []*onnxpb.ValueInfoProto{floatInfo("y", 2)}, Initializer: []*onnxpb.TensorProto{weights()}},
			[]string{`graph "g"`, `input "x"`},
		},
		"two initializers with one name": {
			&onnxpb.GraphProto{Name: "g", Node: add("y"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", 2)}, Output: []*onnxpb.ValueInfoProto{floatInfo("y", 2)}, Initializer: []*onnxpb.TensorProto{weights(), weights()}},
			[]string{`graph "g"`, `initializer "w"`, "twice"},
		},
		"node output overwrites an initializer": {
			&onnxpb.GraphProto{Name: "g", Node: add("w"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", 2)}, Output: []*onnxpb.ValueInfoProto{floatInfo("w", 2)}, Initializer: []*onnxpb.TensorProto{weights()}},
			[]string{`graph "g"`, `"add" (Add)`, `"w"`, "initializer"},
		},
		"node output overwrites an input": {
			&onnxpb.GraphProto{Name: "g", Node: add("x"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", 2)}, Output: []*onnxpb.ValueInfoProto{floatInfo("x", 2)}, Initializer: []*onnxpb.TensorProto{weights()}},
			[]string{`graph "g"`, `"add" (Add)`, `"x"`, "input"},
		},
		"input element count overflows": {
			&onnxpb.GraphProto{Name: "g", Node: add("y"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", 1<<40, 1<<40)}, Output: []*onnxpb.ValueInfoProto{floatInfo("y", 2)}, Initializer: []*onnxpb.TensorProto{weights()}},
			[]string{`graph "g"`, `input "x"`, "overflows"},
		},
		"negative input dimension": {
			&onnxpb.GraphProto{Name: "g", Node: add("y"), Input: []*onnxpb.ValueInfoProto{floatInfo("x", -7)}, Output: []*onnxpb.ValueInfoProto{floatInfo("y", 2)}, Initializer: []*onnxpb.TensorProto{weights()}},
			[]string{`graph "g"`, `input "x"`, "-7"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			wantErr(t, decodeGraph(t, tc.g), inference.ErrBadModel, tc.want...)
		})
	}
}

// dim_value -1 is how some exporters write a dimension of any size.
func TestMinusOneDimensionIsDynamic(t *testing.T) {
	g := model(weights()).Graph
	g.Input[0] = floatInfo("x", -1)
	dg, err := onnx.Decode(marshal(t, &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g}), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := dg.Inputs[0].Shape; !slices.Equal(got, []int{inference.Dynamic}) {
		t.Errorf("x has shape %v, want [Dynamic]", got)
	}
}

func TestOpsetOutsideTheRuntimeFails(t *testing.T) {
	for name, tc := range map[string]struct {
		opsets []*onnxpb.OperatorSetIdProto
		want   string
	}{
		"ai.onnx too new":      {[]*onnxpb.OperatorSetIdProto{{Version: graph.MaxOpset + 1}}, "version " + strconv.Itoa(graph.MaxOpset+1)},
		"ai.onnx zero":         {[]*onnxpb.OperatorSetIdProto{{Domain: "ai.onnx", Version: 0}}, "version 0"},
		"ai.onnx.ml negative":  {[]*onnxpb.OperatorSetIdProto{{Version: 17}, {Domain: "ai.onnx.ml", Version: -1}}, "version -1"},
		"other domain absurd":  {[]*onnxpb.OperatorSetIdProto{{Version: 17}, {Domain: "com.example", Version: math.MaxInt64}}, "com.example"},
		"ai.onnx huge version": {[]*onnxpb.OperatorSetIdProto{{Version: math.MaxInt64}}, "ai.onnx"},
	} {
		t.Run(name, func(t *testing.T) {
			m := model(weights())
			m.OpsetImport = tc.opsets
			_, err := onnx.Decode(marshal(t, m), "")
			wantErr(t, err, inference.ErrBadModel, tc.want)
		})
	}
}

// A tensor whose byte size overflows int while its element count does
// not: 2^62 float32s (or 2^61 int64s), in external data of 0 bytes (it
// crashed: the overflowed size was 0, which matched).
func TestTensorByteSizeOverflowFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "empty.bin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*onnxpb.TensorProto{
		"raw": {Name: "w", Dims: []int64{1 << 30, 1 << 30, 4}, DataType: int32(onnxpb.TensorProto_FLOAT), RawData: []byte{0}},
		"external": {Name: "w", Dims: []int64{1 << 30, 1 << 30, 4}, DataType: int32(onnxpb.TensorProto_FLOAT), DataLocation: onnxpb.TensorProto_EXTERNAL,
			ExternalData: []*onnxpb.StringStringEntryProto{{Key: "location", Value: "empty.bin"}, {Key: "length", Value: "0"}}},
		"int64": {Name: "w", Dims: []int64{1 << 30, 1 << 29, 1 << 2}, DataType: int32(onnxpb.TensorProto_INT64), RawData: []byte{0}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := onnx.Decode(marshal(t, model(w)), dir)
			wantErr(t, err, inference.ErrBadModel, `initializer "w"`, "overflows")
		})
	}
}

func TestExternalDataOffsetAndLengthAreChecked(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), []byte{0, 0, 128, 63, 0, 0, 0, 64}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"offset", strconv.FormatInt(math.MaxInt64, 10)},
		{"offset", "-8"},
		{"offset", "0x10"},
		{"offset", "4 trailing"},
		{"length", "99999999999999999999"},
		{"length", "7"},
	} {
		w := external("w.bin", 8)
		for _, e := range w.ExternalData {
			if e.Key == kv[0] {
				e.Value = kv[1]
			}
		}
		_, err := onnx.Decode(marshal(t, model(w)), dir)
		wantErr(t, err, inference.ErrBadModel, `initializer "w"`, `"w.bin"`)
	}
}

// External data must be a regular file: a folder (or a FIFO, see
// fifo_test.go) is refused, named, before anything reads it.
func TestExternalDataDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "w.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := onnx.Decode(marshal(t, model(external("w.bin", 8))), dir)
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, `"w.bin"`, "not a regular file")
}

// overridable returns y = x + Neg(w) where w is both a graph input and an
// initializer holding [1 2]: from IR 4 on, the initializer is the input's
// default.
func overridable(irVersion int64) *onnxpb.ModelProto {
	m := model(weights(),
		&onnxpb.NodeProto{Name: "neg", OpType: "Neg", Input: []string{"w"}, Output: []string{"nw"}},
		&onnxpb.NodeProto{Name: "add", OpType: "Add", Input: []string{"x", "nw"}, Output: []string{"y"}})
	m.IrVersion = irVersion
	m.Graph.Input = append(m.Graph.Input, floatInfo("w", 2))
	return m
}

func runFloats(t *testing.T, m inference.Model, feeds map[string][]float32) []float32 {
	t.Helper()
	in := map[string]inference.Tensor{}
	for name, v := range feeds {
		in[name], _ = inference.New([]int{len(v)}, v)
	}
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := inference.Data[float32](out["y"])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An initializer named like a graph input (IR ≥ 4) is the input's default:
// a run without the feed uses it, a run with the feed uses the feed, even
// though the constant folder could have folded Neg(w).
func TestInitializerIsAnInputsDefault(t *testing.T) {
	g, err := onnx.Decode(marshal(t, overridable(8)), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || len(g.Overridable) != 1 || g.Overridable[0].Name != "w" {
		t.Fatalf("Inputs %v, Overridable %v; want x required and w overridable", g.Inputs, g.Overridable)
	}
	m, err := cpu.Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	if got := runFloats(t, m, map[string][]float32{"x": {10, 20}}); !slices.Equal(got, []float32{9, 18}) {
		t.Errorf("without w: y = %v, want x - [1 2] = [9 18]", got)
	}
	if got := runFloats(t, m, map[string][]float32{"x": {10, 20}, "w": {5, 5}}); !slices.Equal(got, []float32{5, 15}) {
		t.Errorf("with w = [5 5]: y = %v, want [5 15]", got)
	}
	bad, _ := inference.New([]int{2}, []int64{5, 5})
	x, _ := inference.New([]int{2}, []float32{10, 20})
	if _, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x, "w": bad}); err == nil {
		t.Error("feeding w as int64 ran; want a type error")
	}
}

// Before IR 4 every initializer is listed among the inputs: they are
// weights, not inputs to feed, and a feed of their name is ignored.
func TestInitializersListedAsInputsBeforeIR4AreWeights(t *testing.T) {
	g, err := onnx.Decode(marshal(t, overridable(3)), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || len(g.Overridable) != 0 {
		t.Fatalf("Inputs %v, Overridable %v; want x alone", g.Inputs, g.Overridable)
	}
	m, err := cpu.Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	if got := runFloats(t, m, map[string][]float32{"x": {10, 20}, "w": {5, 5}}); !slices.Equal(got, []float32{9, 18}) {
		t.Errorf("y = %v, want [9 18]", got)
	}
}

// A subgraph keeps every declared input, an initializer of the same name
// or not: its node binds them by position (Scan failed here, the body's
// state input having been dropped for its initializer).
func TestSubgraphInputNamedLikeItsInitializerIsBound(t *testing.T) {
	body := &onnxpb.GraphProto{Name: "body",
		Input:       []*onnxpb.ValueInfoProto{floatInfo("s_in", 1), floatInfo("x_in", 1)},
		Output:      []*onnxpb.ValueInfoProto{floatInfo("s_out", 1), floatInfo("y", 1)},
		Initializer: []*onnxpb.TensorProto{{Name: "s_in", Dims: []int64{1}, DataType: int32(onnxpb.TensorProto_FLOAT), FloatData: []float32{100}}},
		Node: []*onnxpb.NodeProto{
			{Name: "add", OpType: "Add", Input: []string{"s_in", "x_in"}, Output: []string{"s_out"}},
			{Name: "copy", OpType: "Identity", Input: []string{"s_out"}, Output: []string{"y"}},
		}}
	g := &onnxpb.GraphProto{Name: "main",
		Input:  []*onnxpb.ValueInfoProto{floatInfo("s0", 1), floatInfo("xs", 3, 1)},
		Output: []*onnxpb.ValueInfoProto{floatInfo("s", 1), floatInfo("ys", 3, 1)},
		Node: []*onnxpb.NodeProto{{Name: "scan", OpType: "Scan", Input: []string{"s0", "xs"}, Output: []string{"s", "ys"},
			Attribute: []*onnxpb.AttributeProto{
				{Name: "body", Type: onnxpb.AttributeProto_GRAPH, G: body},
				{Name: "num_scan_inputs", Type: onnxpb.AttributeProto_INT, I: 1}}}}}
	dg, err := onnx.Decode(marshal(t, &onnxpb.ModelProto{IrVersion: 8, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}, Graph: g}), "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := cpu.Backend{}.Compile(dg)
	if err != nil {
		t.Fatal(err)
	}
	s0, _ := inference.New([]int{1}, []float32{0})
	xs, _ := inference.New([]int{3, 1}, []float32{1, 2, 3})
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"s0": s0, "xs": xs})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := inference.Data[float32](out["ys"]); !slices.Equal(got, []float32{1, 3, 6}) {
		t.Errorf("ys = %v, want the running sum [1 3 6]", got)
	}
}

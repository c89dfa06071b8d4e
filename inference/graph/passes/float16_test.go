package passes_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/internal/check"
)

// round16 is v rounded to float16 and back: what a float16 value the
// model stores holds.
func round16(v float32) float32 { return inference.HalfFromFloat32(v).Float32() }

// halves returns the float16 tensor of v, rounded.
func halves(shape []int, v ...float32) inference.Tensor {
	h := make([]inference.Half, len(v))
	for i, x := range v {
		h[i] = inference.HalfFromFloat32(x)
	}
	t, err := inference.New(shape, h)
	if err != nil {
		panic(err)
	}
	return t
}

// runHalf optimises g with the float16 pass alone, checks it, and runs it
// with the CPU's reference kernels.
func runHalf(t *testing.T, g *graph.Graph, feeds map[string]inference.Tensor) map[string]inference.Tensor {
	t.Helper()
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if err := passes.Optimize(g, passes.ComputeFloat16InFloat32()); err != nil {
		t.Fatal(err)
	}
	if err := cpu.Check(g); err != nil {
		t.Fatal(err)
	}
	out, err := cpu.NewModel(g).Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%v\nnodes: %s", err, ops(g))
	}
	return out
}

// A graph without float16 is left alone: the pass reports no change.
func TestFloat16PassLeavesFloat32Alone(t *testing.T) {
	m := newModel(17)
	x := m.input("x", 2, 3)
	y := m.op("Cast", attrs("to", aInt(7)), m.op("Add", nil, x, m.constant("w", []int{3})))
	m.output(y)
	g := m.sorted(t)
	before := ops(g)
	changed, err := passes.ComputeFloat16InFloat32().Run(g)
	if err != nil || changed {
		t.Fatalf("Run = %v, %v; want no change", changed, err)
	}
	if ops(g) != before || g.Initializers["w"].DType() != inference.Float32 {
		t.Errorf("nodes %q, want %q", ops(g), before)
	}
}

// A float16 model: its inputs, weights and outputs are float16. The
// rewritten graph keeps the inputs' and outputs' names and types, casts
// the input to float32 once, holds the weights in float32, rounds after
// every arithmetic node and not after those that move values (Relu,
// Reshape), and returns float16 through a final Cast. Its results are, bit
// for bit, float32 arithmetic rounded to float16 after each node.
func TestFloat16ModelComputesInFloat32WithFloat16Rounding(t *testing.T) {
	xv := []float32{0.1, -2.5, 3.3, 1000.7, -0.0001, 7}
	wv := []float32{1.1, 0.3, -3.7}
	bv := []float32{0.05, -0.001, 2049}
	build := func() (*graph.Graph, map[string]inference.Tensor) {
		g := &graph.Graph{
			Name:    "half",
			Opsets:  map[string]int64{"": 17},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float16, Shape: []int{2, 3}}},
			Outputs: []graph.Value{{Name: "y", DType: inference.Float16}, {Name: "m", DType: inference.Float16}, {Name: "s", DType: inference.Int64}},
			Initializers: map[string]inference.Tensor{
				"w": halves([]int{3}, wv...), "b": halves([]int{3}, bv...),
				"shape": mustInts([]int{2}, 3, 2),
			},
			Nodes: []*graph.Node{
				{Name: "mul", OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"m"}},
				{Name: "add", OpType: "Add", Inputs: []string{"m", "b"}, Outputs: []string{"a"}},
				{Name: "relu", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"r"}},
				{Name: "reshape", OpType: "Reshape", Inputs: []string{"r", "shape"}, Outputs: []string{"y"}},
				{Name: "shape_of", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}},
			},
		}
		return g, map[string]inference.Tensor{"x": halves([]int{2, 3}, xv...)}
	}
	g, feeds := build()
	out := runHalf(t, g, feeds)

	for _, v := range slices.Concat(g.Inputs, g.Outputs) {
		if want := map[string]inference.DType{"x": inference.Float16, "y": inference.Float16, "m": inference.Float16, "s": inference.Int64}[v.Name]; v.DType != want {
			t.Errorf("%s is declared %v after the pass, want %v", v.Name, v.DType, want)
		}
	}
	for name, w := range g.Initializers {
		if name != "shape" && w.DType() != inference.Float32 {
			t.Errorf("initializer %s is %v, want float32", name, w)
		}
	}
	// x is cast once; m, an output the graph also reads, is cast to
	// float16 and read back; a is rounded; Relu and Reshape move values;
	// y is cast to float16 at the end.
	if got, want := ops(g), "Cast Mul Cast Cast Add Cast Cast Relu Reshape Cast Shape"; got != want {
		t.Errorf("nodes %q, want %q", got, want)
	}

	x := check.Float32s(feeds["x"])
	wantM := make([]float32, 6)
	wantY := make([]float32, 6)
	for i := range x {
		wantM[i] = round16(x[i] * round16(wv[i%3]))
		wantY[i] = max(round16(wantM[i]+round16(bv[i%3])), 0)
	}
	for name, want := range map[string][]float32{"m": wantM, "y": wantY} {
		got := out[name]
		if got.DType() != inference.Float16 {
			t.Fatalf("output %s is %v, want float16", name, got)
		}
		if v := check.Float32s(got); !slices.Equal(v, want) {
			t.Errorf("output %s = %v, want %v", name, v, want)
		}
	}
	if s, _ := inference.Data[int64](out["s"]); !slices.Equal(s, []int64{2, 3}) {
		t.Errorf("output s = %v, want [2 3]", out["s"])
	}
}

func mustInts(shape []int, v ...int64) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// A float32 model that casts to float16 and back (a mixed-precision
// export): the Cast to float16 is the rounding, and what follows it in
// float16 is rounded after each node; the float32 output is float32.
func TestFloat16CastsInAFloat32Model(t *testing.T) {
	m := newModel(17)
	x := m.input("x", 4, 5)
	h := m.op("Cast", attrs("to", aInt(10)), x)
	sq := m.op("Mul", nil, h, h)
	q := m.op("Div", nil, sq, h)
	y := m.op("Cast", attrs("to", aInt(1)), q)
	m.output(y)
	g := m.sorted(t)
	out := runHalf(t, g, m.feeds)
	if got, want := ops(g), "Cast Cast Mul Cast Cast Div Cast Cast Cast"; got != want {
		t.Errorf("nodes %q, want %q", got, want)
	}
	if out[y].DType() != inference.Float32 {
		t.Fatalf("output is %v, want float32", out[y])
	}
	got := check.Float32s(out[y])
	for i, v := range check.Float32s(m.feeds["x"]) {
		hv := round16(v)
		if want := round16(round16(hv*hv) / hv); got[i] != want {
			t.Errorf("element %d: %g, want %g", i, got[i], want)
		}
	}
}

// float16AttributesGraph is TestFloat16Attributes' graph and feeds: float16
// in tensor attributes and in an attribute dtype.
func float16AttributesGraph() (*graph.Graph, map[string]inference.Tensor) {
	tensorAttr := func(x inference.Tensor) graph.Attr { return graph.Attr{Type: graph.AttrTensor, Tensor: x} }
	g := &graph.Graph{
		Name:   "attrs",
		Opsets: map[string]int64{"": 17},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2, 2}}},
		Outputs: []graph.Value{{Name: "c"}, {Name: "k"}, {Name: "e"}, {Name: "old"},
			{Name: "sum", DType: inference.Float16}},
		Initializers: map[string]inference.Tensor{"dims": mustInts([]int{2}, 2, 2)},
		Nodes: []*graph.Node{
			{Name: "const", OpType: "Constant", Outputs: []string{"c"}, Attrs: map[string]graph.Attr{"value": tensorAttr(halves([]int{2, 2}, 1.5, -2, 0.1, 65504))}},
			{Name: "fill", OpType: "ConstantOfShape", Inputs: []string{"dims"}, Outputs: []string{"k"}, Attrs: map[string]graph.Attr{"value": tensorAttr(halves([]int{1}, 0.3))}},
			{Name: "eye", OpType: "EyeLike", Inputs: []string{"x"}, Outputs: []string{"e"}, Attrs: map[string]graph.Attr{"dtype": aInt(10)}},
			{Name: "cast1", OpType: "Cast", Inputs: []string{"x"}, Outputs: []string{"old"}, Attrs: map[string]graph.Attr{"to": aString("float16")}},
			{Name: "sum", OpType: "Sum", Inputs: []string{"c", "k", "e", "old"}, Outputs: []string{"sum"}},
		},
	}
	feeds := map[string]inference.Tensor{"x": tensor([]int{2, 2}, []float32{1, 2.0001, -3, 0.7})}
	return g, feeds
}

// Constants and attributes naming float16: a Constant node's tensor,
// ConstantOfShape's value, EyeLike's dtype and Cast-1's type name become
// float32; the outputs stay float16.
func TestFloat16Attributes(t *testing.T) {
	g, feeds := float16AttributesGraph()
	out := runHalf(t, g, feeds)
	for _, n := range g.Nodes {
		for name, a := range n.Attrs {
			if a.Type == graph.AttrTensor && a.Tensor.DType() != inference.Float32 || name == "dtype" && a.Int != 1 {
				t.Errorf("node %v: attribute %s is %+v after the pass", n, name, a)
			}
		}
	}
	want := map[string][]float32{
		"c":   {1.5, -2, round16(0.1), 65504},
		"k":   {round16(0.3), round16(0.3), round16(0.3), round16(0.3)},
		"e":   {1, 0, 0, 1},
		"old": {1, round16(2.0001), -3, round16(0.7)},
	}
	want["sum"] = make([]float32, 4)
	for i := range want["sum"] {
		want["sum"][i] = round16(want["c"][i] + want["k"][i] + want["e"][i] + want["old"][i])
	}
	for name, w := range want {
		if out[name].DType() != inference.Float16 {
			t.Errorf("output %s is %v, want float16", name, out[name])
			continue
		}
		if got := check.Float32s(out[name]); !slices.Equal(got, w) {
			t.Errorf("output %s = %v, want %v", name, got, w)
		}
	}
}

// A generator of float16 values (RandomNormal, RandomUniform and their
// Like forms; no backend runs them yet) is asked for float32 and rounded.
func TestFloat16GeneratorDType(t *testing.T) {
	m := newModel(17)
	u := m.op("RandomUniform", attrs("dtype", aInt(10), "shape", aInts(2, 2)))
	m.output(u)
	g := m.sorted(t)
	if err := passes.Optimize(g, passes.ComputeFloat16InFloat32()); err != nil {
		t.Fatal(err)
	}
	if got, want := ops(g), "RandomUniform Cast"; got != want {
		t.Errorf("nodes %q, want %q", got, want)
	}
	if d := g.Nodes[0].Int("dtype", 0); d != 1 {
		t.Errorf("RandomUniform's dtype is %d after the pass, want 1", d)
	}
	if c := g.Nodes[1]; c.Int("to", 0) != 10 || c.Outputs[0] != u || c.Inputs[0] != g.Nodes[0].Outputs[0] {
		t.Errorf("the output is %v from %q to %d, want a Cast to 10 of the generator's output to %q", c, c.Inputs, c.Int("to", 0), u)
	}
}

// An overridable float16 weight stays float16, under its name, and is
// read through a Cast: a feed replaces it, and without one its default
// is used.
func TestFloat16OverridableInitializer(t *testing.T) {
	build := func() *graph.Graph {
		return &graph.Graph{
			Name:         "override",
			Opsets:       map[string]int64{"": 17},
			Inputs:       []graph.Value{{Name: "x", DType: inference.Float16, Shape: []int{3}}},
			Overridable:  []graph.Value{{Name: "scale", DType: inference.Float16, Shape: []int{}}},
			Outputs:      []graph.Value{{Name: "y", DType: inference.Float16}},
			Initializers: map[string]inference.Tensor{"scale": halves([]int{}, 2)},
			Nodes:        []*graph.Node{{Name: "mul", OpType: "Mul", Inputs: []string{"x", "scale"}, Outputs: []string{"y"}}},
		}
	}
	x := halves([]int{3}, 1, 0.3, -5)
	for _, tc := range []struct {
		feeds map[string]inference.Tensor
		scale float32
	}{
		{map[string]inference.Tensor{"x": x}, 2},
		{map[string]inference.Tensor{"x": x, "scale": halves([]int{}, 0.1)}, round16(0.1)},
	} {
		g := build()
		out := runHalf(t, g, tc.feeds)
		if g.Initializers["scale"].DType() != inference.Float16 {
			t.Errorf("the overridable weight is %v after the pass, want float16", g.Initializers["scale"])
		}
		got := check.Float32s(out["y"])
		for i, v := range check.Float32s(x) {
			if want := round16(v * tc.scale); got[i] != want {
				t.Errorf("scale %g: element %d is %g, want %g", tc.scale, i, got[i], want)
			}
		}
	}
}

// Nested graphs compute in float32 too: an If whose branches read a
// float16 input of the model and a float16 weight of their own, and
// declare float16 outputs, which become float32; the If's output, a graph
// output, is cast to float16.
func TestFloat16InSubgraphs(t *testing.T) {
	branch := func(name, op string) *graph.Graph {
		return &graph.Graph{
			Name:         name,
			Opsets:       map[string]int64{"": 17},
			Outputs:      []graph.Value{{Name: name + "_out", DType: inference.Float16}},
			Initializers: map[string]inference.Tensor{name + "_w": halves([]int{}, 0.1)},
			Nodes:        []*graph.Node{{Name: name + "_op", OpType: op, Inputs: []string{"x", name + "_w"}, Outputs: []string{name + "_out"}}},
		}
	}
	for _, cond := range []bool{true, false} {
		g := &graph.Graph{
			Name:    "if",
			Opsets:  map[string]int64{"": 17},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float16, Shape: []int{2}}, {Name: "c", DType: inference.Bool, Shape: []int{}}},
			Outputs: []graph.Value{{Name: "y", DType: inference.Float16}},
			Nodes: []*graph.Node{{Name: "if", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{
				"then_branch": {Type: graph.AttrGraph, Graph: branch("then", "Add")},
				"else_branch": {Type: graph.AttrGraph, Graph: branch("else", "Mul")},
			}}},
		}
		c, _ := inference.New([]int{}, []bool{cond})
		x := halves([]int{2}, 1.3, -7.1)
		out := runHalf(t, g, map[string]inference.Tensor{"x": x, "c": c})
		for _, sub := range g.Nodes[1].Subgraphs() {
			if sub.Outputs[0].DType != inference.Float32 || sub.Initializers[strings.TrimSuffix(sub.Outputs[0].Name, "_out")+"_w"].DType() != inference.Float32 {
				t.Errorf("branch %s: output %v, weights %v after the pass; want float32", sub.Name, sub.Outputs[0], sub.Initializers)
			}
		}
		got := check.Float32s(out["y"])
		for i, v := range check.Float32s(x) {
			want := round16(v + round16(0.1))
			if !cond {
				want = round16(v * round16(0.1))
			}
			if got[i] != want {
				t.Errorf("cond %v: element %d is %g, want %g", cond, i, got[i], want)
			}
		}
	}
}

// The pass runs first in the CPU backend, optimised and not: both run a
// float16 model, and agree.
func TestFloat16OnTheCPUBackend(t *testing.T) {
	build := func() (*graph.Graph, map[string]inference.Tensor) {
		g := &graph.Graph{
			Name:    "mlp",
			Opsets:  map[string]int64{"": 17},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float16, Shape: []int{inference.Dynamic, 4}}},
			Outputs: []graph.Value{{Name: "y", DType: inference.Float16}},
			Initializers: map[string]inference.Tensor{
				"w": halves([]int{4, 3}, 0.5, -0.25, 0.125, 1, 2, -3, 0.3, 0.7, -0.1, 1.5, 1e-3, 9),
				"b": halves([]int{3}, 0.1, 0.2, -0.3),
			},
			Nodes: []*graph.Node{
				{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"p"}},
				{Name: "bias", OpType: "Add", Inputs: []string{"p", "b"}, Outputs: []string{"q"}},
				{Name: "relu", OpType: "Relu", Inputs: []string{"q"}, Outputs: []string{"r"}},
				{Name: "softmax", OpType: "Softmax", Inputs: []string{"r"}, Outputs: []string{"y"}},
			},
		}
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		return g, map[string]inference.Tensor{"x": halves([]int{2, 4}, 1, -2, 3, 0.5, 0.1, 0.2, 0.3, 0.4)}
	}
	var results []inference.Tensor
	for _, b := range []cpu.Backend{{}, {Unoptimized: true}} {
		g, feeds := build()
		m, err := b.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		if out["y"].DType() != inference.Float16 || !slices.Equal(out["y"].Shape(), []int{2, 3}) {
			t.Fatalf("unoptimized %v: output %v, want float16[2 3]", b.Unoptimized, out["y"])
		}
		results = append(results, out["y"])
	}
	if !inference.Equal(results[0], results[1]) {
		t.Errorf("optimised %v, unoptimized %v", check.Float32s(results[0]), check.Float32s(results[1]))
	}
}

// The float16 PyTorch exports (inference/cuda/testdata/float16, written by
// its export.py) on the CPU backend, optimised and not: every output
// element within rtol 1e-2 and atol 1e-3 of PyTorch's, and at least 90% of
// them PyTorch's bit for bit. inference/cuda's TestFloat16Exports, which
// runs them on the simulated device too, says why; this runs without cgo.
func TestFloat16ExportsOnTheCPU(t *testing.T) {
	for _, name := range []string{"halfnet_opset17", "mixed_opset17"} {
		dir := filepath.Join("..", "..", "cuda", "testdata", "float16", name)
		for _, b := range []cpu.Backend{{}, {Unoptimized: true}} {
			m, _ := compileExport(t, dir, b)
			feeds, want := check.ExportData(t, dir, m.Graph())
			got, err := m.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			for o, w := range want {
				if got[o].DType() != w.DType() || !slices.Equal(got[o].Shape(), w.Shape()) {
					t.Fatalf("%s: output %q is %v, want %v", name, o, got[o], w)
				}
				g, wv := check.Float32s(got[o]), check.Float32s(w)
				differ := 0
				for i := range wv {
					if math.Float32bits(g[i]) != math.Float32bits(wv[i]) {
						differ++
					}
					if d := math.Abs(float64(g[i] - wv[i])); d > 1e-3+1e-2*math.Abs(float64(wv[i])) {
						t.Errorf("%s (unoptimized %v): output %q element %d is %g, PyTorch's %g", name, b.Unoptimized, o, i, g[i], wv[i])
					}
				}
				if differ*10 > len(wv) {
					t.Errorf("%s (unoptimized %v): %d of the %d elements of %q differ from PyTorch's, want at most 10%%", name, b.Unoptimized, differ, len(wv), o)
				}
			}
		}
	}
}

// Outputs that are not float16 though the node reads float16 (Shape's,
// ArgMax's, a comparison's, TopK's indices, LayerNormalization's mean) are
// neither rounded nor cast: they keep their types.
func TestFloat16OtherOutputTypes(t *testing.T) {
	scale, bias := halves([]int{4}, 1, 2, 0.5, 1), halves([]int{4}, 0, 0.1, 0, -0.1)
	g := &graph.Graph{
		Name:         "types",
		Opsets:       map[string]int64{"": 17},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float16, Shape: []int{2, 4}}},
		Initializers: map[string]inference.Tensor{"k": mustInts([]int{1}, 2), "scale": scale, "bias": bias},
		Outputs: []graph.Value{{Name: "argmax"}, {Name: "less"}, {Name: "top"}, {Name: "top_i"}, {Name: "norm"},
			{Name: "mean"}, {Name: "inv"}},
		Nodes: []*graph.Node{
			{Name: "argmax", OpType: "ArgMax", Inputs: []string{"x"}, Outputs: []string{"argmax"}, Attrs: map[string]graph.Attr{"axis": aInt(1)}},
			{Name: "less", OpType: "Less", Inputs: []string{"x", "bias"}, Outputs: []string{"less"}},
			{Name: "topk", OpType: "TopK", Inputs: []string{"x", "k"}, Outputs: []string{"top", "top_i"}},
			{Name: "ln", OpType: "LayerNormalization", Inputs: []string{"x", "scale", "bias"}, Outputs: []string{"norm", "mean", "inv"}},
		},
	}
	x := halves([]int{2, 4}, 0.5, -1, 3, 2, 7, 7.5, -3, 0)
	out := runHalf(t, g, map[string]inference.Tensor{"x": x})
	for name, want := range map[string]inference.DType{"argmax": inference.Int64, "less": inference.Bool, "top": inference.Float16,
		"top_i": inference.Int64, "norm": inference.Float16, "mean": inference.Float32, "inv": inference.Float32} {
		if got := out[name].DType(); got != want {
			t.Errorf("output %s is %v, want %v", name, out[name], want)
		}
	}
	if top := check.Float32s(out["top"]); !slices.Equal(top, []float32{3, 2, 7.5, 7}) {
		t.Errorf("TopK values %v, want [3 2 7.5 7]", top)
	}
	if got, want := ops(g), "Cast ArgMax Less TopK Cast LayerNormalization Cast"; got != want {
		t.Errorf("nodes %q, want %q", got, want)
	}
}

// A node that reads float16 runs on the CPU's kernels widened (cpu's
// callKernel): inputs and attributes widened to float32, outputs the model
// types float16 rounded. That is the pass's meaning node by node, so a
// graph run as it is, float16 and all (what a backend that keeps float16
// values hands cpu.NewModel to infer shapes, and cpu.RunNode for a node it
// runs on the host), gives the pass's outputs bit for bit: the
// hand-written graphs here, and the PyTorch exports.
func TestFloat16WidenedNodeByNodeIsThePass(t *testing.T) {
	type run struct {
		name  string
		build func() (*graph.Graph, map[string]inference.Tensor)
	}
	var runs []run
	for _, name := range []string{"halfnet_opset17", "mixed_opset17"} {
		dir := filepath.Join("..", "..", "cuda", "testdata", "float16", name)
		runs = append(runs, run{name, func() (*graph.Graph, map[string]inference.Tensor) {
			g := check.DecodeExport(t, dir)
			feeds, _ := check.ExportData(t, dir, g)
			return g, feeds
		}})
	}
	runs = append(runs, run{"attributes", float16AttributesGraph})
	for _, r := range runs {
		g, feeds := r.build()
		want := runHalf(t, g, feeds)
		g, feeds = r.build()
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		got, err := cpu.NewModel(g).Run(context.Background(), feeds)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		for name, w := range want {
			if got[name].DType() != w.DType() || !slices.Equal(got[name].Shape(), w.Shape()) {
				t.Fatalf("%s: output %q is %v, the pass gives %v", r.name, name, got[name], w)
			}
			if !bytes.Equal(got[name].Bytes(), w.Bytes()) {
				t.Errorf("%s: output %q differs from the pass's", r.name, name)
			}
		}
	}
}

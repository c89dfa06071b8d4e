//go:build cgo

package cuda_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
)

// edgeGraph is a classical model with strings at both edges: a string
// column mapped to numbers (CategoryMapper, then Cast), concatenated with
// two numeric columns, into a LinearClassifier of string labels. With
// labelsRead, the labels are mapped back to numbers (LabelEncoder) and
// added to the scores, so strings sit in the middle of the model.
func edgeGraph(labelsRead bool) func() *graph.Graph {
	return func() *graph.Graph {
		ml := func(op string, attrs map[string]graph.Attr, in []string, out ...string) *graph.Node {
			return &graph.Node{Name: op, OpType: op, Domain: cpu.MLDomain, Attrs: attrs, Inputs: in, Outputs: out}
		}
		g := &graph.Graph{Name: "edges", Opsets: map[string]int64{"": 21, cpu.MLDomain: 2}, Initializers: map[string]inference.Tensor{},
			Inputs: []graph.Value{
				{Name: "color", DType: inference.String, Shape: []int{inference.Dynamic, 1}},
				{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 2}},
			},
			Nodes: []*graph.Node{
				ml("CategoryMapper", map[string]graph.Attr{"cats_strings": aStrs("red", "green", "blue"), "cats_int64s": aInts(0, 1, 2),
					"default_int64": aInt(-1)}, []string{"color"}, "color_id"),
				{Name: "cast", OpType: "Cast", Attrs: map[string]graph.Attr{"to": aInt(1)}, Inputs: []string{"color_id"}, Outputs: []string{"color_f"}},
				{Name: "concat", OpType: "Concat", Attrs: map[string]graph.Attr{"axis": aInt(1)}, Inputs: []string{"color_f", "x"}, Outputs: []string{"features"}},
				ml("LinearClassifier", map[string]graph.Attr{"coefficients": aFloats(1, -2, 0.5, -1, 1.5, 2, 0.25, 0.75, -0.5),
					"intercepts": aFloats(0.1, -0.2, 0.3), "classlabels_strings": aStrs("cat", "dog", "fish")}, []string{"features"}, "label", "scores"),
			},
			Outputs: []graph.Value{{Name: "label"}, {Name: "scores"}},
		}
		if labelsRead {
			g.Nodes = append(g.Nodes,
				ml("LabelEncoder", map[string]graph.Attr{"keys_strings": aStrs("cat", "dog", "fish"), "values_floats": aFloats(10, 20, 30)},
					[]string{"label"}, "label_value"),
				&graph.Node{Name: "unsqueeze", OpType: "Unsqueeze", Inputs: []string{"label_value", "axes"}, Outputs: []string{"label_column"}},
				&graph.Node{Name: "add", OpType: "Add", Inputs: []string{"scores", "label_column"}, Outputs: []string{"shifted"}})
			axes, _ := inference.New([]int{1}, []int64{1})
			g.Initializers["axes"] = axes
			g.Outputs = append(g.Outputs, graph.Value{Name: "shifted"})
		}
		if err := g.Sort(nil); err != nil {
			panic(err)
		}
		return g
	}
}

func edgeFeeds(t *testing.T) map[string]inference.Tensor {
	t.Helper()
	color, err := inference.New([]int{5, 1}, []string{"red", "blue", "mauve", "green", ""})
	if err != nil {
		t.Fatal(err)
	}
	x, err := inference.New([]int{5, 2}, []float32{0.5, -1, 2, 0, -3, 1.25, 1, 1, 0, -0.5})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]inference.Tensor{"color": color, "x": x}
}

// cpuAndSimModel compiles g twice: its outputs on feeds as the CPU backend
// runs it, and its model on the simulated device, closed with the test.
func cpuAndSimModel(t *testing.T, g func() *graph.Graph, feeds map[string]inference.Tensor) (map[string]inference.Tensor, inference.Model) {
	t.Helper()
	ref, err := cpu.Backend{}.Compile(g())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newSim(t, 0)
	m, err := b.Compile(g())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return want, m
}

// A model whose strings are at its edges runs on the device but for them:
// the encoder before (CategoryMapper) and the labels after (the Gather
// that passes.IndexClassLabels makes of the classifier's string labels)
// run on the host, the rest on the device; the outputs equal the CPU
// backend's, on fresh and on reused buffers.
func TestStringsAtTheEdgesStayOnTheHost(t *testing.T) {
	ctx := context.Background()
	feeds := edgeFeeds(t)
	want, m := cpuAndSimModel(t, edgeGraph(false), feeds)
	if _, ok := m.(*cuda.Model); ok {
		t.Fatalf("the model runs whole as one: %s", m.(*cuda.Model).Fallback())
	}
	for run := range 2 {
		before := runner.Launched()
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		if launched := launchedSince(before); launched["linear_f32"] != 1 {
			t.Errorf("run %d: launches %v, want one linear_f32", run, launched)
		}
		for _, name := range []string{"label", "scores"} {
			if !inference.Equal(got[name], want[name]) {
				t.Errorf("run %d: %s = %v, want %v", run, name, got[name].Values(), want[name].Values())
			}
		}
	}
	host := m.(interface{ HostNodes() []string }).HostNodes()
	if want := []string{"CategoryMapper", "Gather"}; !slices.Equal(host, want) {
		t.Errorf("host nodes %v, want %v", host, want)
	}
	if got := m.Inputs(); len(got) != 2 || got[0].Name != "color" || got[0].DType != inference.String {
		t.Errorf("inputs %v, want the model's own (color, x)", got)
	}
}

// A model that computes from its strings in its middle runs whole on the
// CPU backend, and says why.
func TestStringsInTheMiddleRunOnTheCPU(t *testing.T) {
	ctx := context.Background()
	feeds := edgeFeeds(t)
	want, m := cpuAndSimModel(t, edgeGraph(true), feeds)
	cm, ok := m.(*cuda.Model)
	if !ok {
		t.Fatalf("model %T, want the whole model on the CPU backend", m)
	}
	if !strings.Contains(cm.Fallback(), "not all at the model's edges: node") {
		t.Errorf("fallback %q, want it to say where the strings are", cm.Fallback())
	}
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if !inference.Equal(got[name], w) {
			t.Errorf("%s = %v, want %v", name, got[name].Values(), w.Values())
		}
	}
}

// A model whose encoder fails on the probe's row of empty strings (a
// OneHotEncoder that rejects unknown categories, zeros = 0) runs whole on
// the CPU backend, and says so; its runs on known categories are the CPU
// backend's.
func TestStringsWhoseProbeFailsRunOnTheCPU(t *testing.T) {
	build := func() *graph.Graph {
		g := &graph.Graph{Name: "onehot", Opsets: map[string]int64{"": 21, cpu.MLDomain: 1}, Initializers: map[string]inference.Tensor{},
			Inputs: []graph.Value{{Name: "color", DType: inference.String, Shape: []int{inference.Dynamic, 1}}},
			Nodes: []*graph.Node{
				{Name: "onehot", OpType: "OneHotEncoder", Domain: cpu.MLDomain, Inputs: []string{"color"}, Outputs: []string{"hot"},
					Attrs: map[string]graph.Attr{"cats_strings": aStrs("red", "green"), "zeros": aInt(0)}},
				{Name: "relu", OpType: "Relu", Inputs: []string{"hot"}, Outputs: []string{"y"}},
			},
			Outputs: []graph.Value{{Name: "y"}},
		}
		if err := g.Sort(nil); err != nil {
			panic(err)
		}
		return g
	}
	b, _ := newSim(t, 0)
	m, err := b.Compile(build())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cm, ok := m.(*cuda.Model)
	if !ok {
		t.Fatalf("model %T, want the whole model on the CPU backend", m)
	}
	if !strings.Contains(cm.Fallback(), "fail on a probe") {
		t.Errorf("fallback %q, want it to say the probe failed", cm.Fallback())
	}
	color, err := inference.New([]int{2, 1}, []string{"green", "red"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Run(context.Background(), map[string]inference.Tensor{"color": color})
	if err != nil {
		t.Fatal(err)
	}
	if y, _ := inference.Data[float32](got["y"]); !slices.Equal(y, []float32{0, 1, 1, 0}) {
		t.Errorf("y = %v, want one-hot [0 1 1 0]", y)
	}
}

package passes_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// The rewrites are checked numerically by running the graph before and
// after a pass through the CPU backend's kernels (cpu.NewModel, which runs
// a graph as it is). Float32 results are held to |got − want| ≤ atol +
// rtol·|want| with rtol 1e-4 and atol 1e-5 unless a test says otherwise.
const (
	rtol = 1e-4
	atol = 1e-5
)

// model builds a test graph: float32 inputs fed with random values,
// constants, and nodes named n1, n2, … whose outputs are v1, v2, ….
// Building twice with the same seed gives the same graph and feeds, so a
// test builds the reference and the graph it rewrites from one function.
type model struct {
	g     *graph.Graph
	feeds map[string]inference.Tensor
	rng   *rand.Rand
	count int
}

func newModel(opset int64) *model {
	return &model{
		g:     &graph.Graph{Name: "test", Opsets: map[string]int64{"": opset}, Initializers: map[string]inference.Tensor{}},
		feeds: map[string]inference.Tensor{},
		rng:   rand.New(rand.NewPCG(1, 2)),
	}
}

// randoms returns n values uniform in [-2, 2).
func (m *model) randoms(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = m.rng.Float32()*4 - 2
	}
	return v
}

// input declares a float32 graph input fed with random values of shape.
func (m *model) input(name string, shape ...int) string {
	m.g.Inputs = append(m.g.Inputs, graph.Value{Name: name, DType: inference.Float32, Shape: shape})
	m.feeds[name] = tensor(shape, m.randoms(count(shape)))
	return name
}

// constant adds an initializer of shape holding v, or random values when
// v is empty.
func (m *model) constant(name string, shape []int, v ...float32) string {
	if len(v) == 0 {
		v = m.randoms(count(shape))
	}
	m.g.Initializers[name] = tensor(shape, v)
	return name
}

// scalar adds a rank-0 float32 initializer.
func (m *model) scalar(name string, v float32) string { return m.constant(name, []int{}, v) }

// ints adds an int64 initializer.
func (m *model) ints(name string, v ...int64) string {
	t, err := inference.New([]int{len(v)}, v)
	if err != nil {
		panic(err)
	}
	m.g.Initializers[name] = t
	return name
}

// overridable makes the initializer name a graph input with a default.
func (m *model) overridable(name string) {
	t := m.g.Initializers[name]
	m.g.Overridable = append(m.g.Overridable, graph.Value{Name: name, DType: t.DType(), Shape: t.Shape()})
}

// op adds a node of op with attributes (nil for none) on inputs and
// returns its output.
func (m *model) op(op string, attrs map[string]graph.Attr, inputs ...string) string {
	return m.opN(op, attrs, 1, inputs...)[0]
}

// opN adds a node with outputs outputs.
func (m *model) opN(op string, attrs map[string]graph.Attr, outputs int, inputs ...string) []string {
	m.count++
	attrs = maps.Clone(attrs) // a pass may edit them; the next build must not see it
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	outs := make([]string, outputs)
	for i := range outs {
		outs[i] = fmt.Sprintf("v%d", m.count)
		if i > 0 {
			outs[i] += fmt.Sprintf("_%d", i)
		}
	}
	m.g.Nodes = append(m.g.Nodes, &graph.Node{Name: fmt.Sprintf("n%d", m.count), OpType: op, Inputs: inputs, Outputs: outs, Attrs: attrs})
	return outs
}

// output declares graph outputs.
func (m *model) output(names ...string) {
	for _, n := range names {
		m.g.Outputs = append(m.g.Outputs, graph.Value{Name: n})
	}
}

func (m *model) sorted(t *testing.T) *graph.Graph {
	t.Helper()
	if err := m.g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return m.g
}

func tensor(shape []int, v []float32) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

func count(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func aInt(v int64) graph.Attr     { return graph.Attr{Type: graph.AttrInt, Int: v} }
func aInts(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
func aFloat(v float32) graph.Attr { return graph.Attr{Type: graph.AttrFloat, Float: v} }
func aString(v string) graph.Attr { return graph.Attr{Type: graph.AttrString, String: v} }
func attrs(kv ...any) map[string]graph.Attr {
	a := map[string]graph.Attr{}
	for i := 0; i < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1].(graph.Attr)
	}
	return a
}

// ops lists the operators of g's nodes in order.
func ops(g *graph.Graph) string {
	var s []string
	for _, n := range g.Nodes {
		s = append(s, n.OpType)
	}
	return strings.Join(s, " ")
}

// rewrite builds a model twice, runs pass on the second, checks that its
// nodes are then wantOps, and that it computes what the first computes
// on the model's feeds, within rtol and atol. It returns the rewritten
// graph.
func rewrite(t *testing.T, build func() *model, pass passes.Pass, wantOps string, rtol, atol float64) *graph.Graph {
	t.Helper()
	ref := build()
	got := build()
	refG, g := ref.sorted(t), got.sorted(t)
	if err := passes.Optimize(g, pass); err != nil {
		t.Fatal(err)
	}
	if o := ops(g); o != wantOps {
		t.Errorf("after %s: nodes %q, want %q", pass.Name, o, wantOps)
	}
	sameOutputs(t, refG, g, ref.feeds, rtol, atol)
	return g
}

// sameOutputs runs both graphs on feeds and compares their outputs.
func sameOutputs(t *testing.T, want, got *graph.Graph, feeds map[string]inference.Tensor, rtol, atol float64) {
	t.Helper()
	w, err := cpu.NewModel(want).Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("reference graph: %v", err)
	}
	g, err := cpu.NewModel(got).Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("rewritten graph: %v", err)
	}
	for _, o := range want.Outputs {
		if msg := compare(g[o.Name], w[o.Name], rtol, atol); msg != "" {
			t.Errorf("output %q: %s", o.Name, msg)
		}
	}
}

// compare returns "" when got matches want within the tolerances (NaN
// matches NaN), and what differs first otherwise.
func compare(got, want inference.Tensor, rtol, atol float64) string {
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	if want.DType() != inference.Float32 {
		if !inference.Equal(got, want) {
			return fmt.Sprintf("got %v, want %v: values differ", got, want)
		}
		return ""
	}
	g, _ := inference.Data[float32](got)
	w, _ := inference.Data[float32](want)
	for i := range w {
		gi, wi := float64(g[i]), float64(w[i])
		if math.IsNaN(gi) && math.IsNaN(wi) || gi == wi {
			continue
		}
		if !(math.Abs(gi-wi) <= atol+rtol*math.Abs(wi)) {
			return fmt.Sprintf("element %d is %g, want %g (rtol %g, atol %g)", i, gi, wi, rtol, atol)
		}
	}
	return ""
}

// unchanged builds a model twice, runs pass on the second and checks that
// it left the nodes as they were.
func unchanged(t *testing.T, build func() *model, pass passes.Pass) {
	t.Helper()
	want := ops(build().sorted(t))
	rewrite(t, build, pass, want, 0, 0)
}

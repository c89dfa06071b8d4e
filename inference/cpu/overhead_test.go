package cpu_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
)

// chain is a graph of n unary nodes (op) in a row on x [2, 16]: a run's
// cost is the executor's per-node overhead, the arithmetic next to nothing.
func chain(op string, n int) *graph.Graph {
	g := &graph.Graph{Name: fmt.Sprintf("%s×%d", op, n), Opsets: map[string]int64{"": 17}, Initializers: map[string]inference.Tensor{},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 16}}}}
	prev := "x"
	for i := range n {
		out := fmt.Sprintf("v%d", i)
		g.Nodes = append(g.Nodes, &graph.Node{Name: out, OpType: op, Inputs: []string{prev}, Outputs: []string{out}})
		prev = out
	}
	g.Outputs = []graph.Value{{Name: prev}}
	if err := g.Sort(nil); err != nil {
		panic(err)
	}
	return g
}

// BenchmarkRunOverhead times runs of chains of 1, 16 and 64 Relu and Neg
// nodes on [2, 16] (ns/op a run; ns/node the slope between chains is the
// per-node cost), the executor's overhead per run and per node.
func BenchmarkRunOverhead(b *testing.B) {
	x, err := inference.New([]int{2, 16}, make([]float32, 32))
	if err != nil {
		b.Fatal(err)
	}
	feeds := map[string]inference.Tensor{"x": x}
	for _, op := range []string{"Relu", "Neg", "Flatten"} {
		for _, n := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/nodes=%d", op, n), func(b *testing.B) {
				m, err := cpu.Backend{}.Compile(chain(op, n))
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.Run(ctx, feeds); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
			})
		}
	}
}

// A graph built by hand and never sorted (no LastUse; nodes in order or
// not) compiles and runs right: Compile sorts it. Out of order, a node
// read a value not computed yet and compiling failed; in order but without
// LastUse, the pool took each computed value for its node's scratch and
// handed the value's buffer out again while the value still lived.
func TestCompileSortsAHandBuiltGraph(t *testing.T) {
	for _, reversed := range []bool{false, true} {
		g := &graph.Graph{Name: "transposes", Opsets: map[string]int64{"": 17}, Initializers: map[string]inference.Tensor{},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2, 3}}},
			Outputs: []graph.Value{{Name: "t3"}}}
		for i := 1; i <= 3; i++ {
			g.Nodes = append(g.Nodes, &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: "Transpose",
				Inputs: []string{fmt.Sprintf("t%d", i-1)}, Outputs: []string{fmt.Sprintf("t%d", i)}})
		}
		g.Nodes[0].Inputs[0] = "x"
		if reversed {
			slices.Reverse(g.Nodes)
		}
		m, err := cpu.Backend{}.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		x, err := inference.New([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
		if err != nil {
			t.Fatal(err)
		}
		for run := range 3 {
			out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := inference.Data[float32](out["t3"])
			if want := []float32{1, 4, 2, 5, 3, 6}; !slices.Equal(got, want) || !slices.Equal(out["t3"].Shape(), []int{3, 2}) {
				t.Errorf("reversed %v, run %d: %v %v, want [3 2] %v", reversed, run, out["t3"].Shape(), got, want)
			}
		}
		m.Close()
	}
}

// TestProfile checks Model.Profile on a MatMul of 128×128 matrices
// followed by a Softmax and a chain of Neg: one entry per node of the
// compiled graph, in its order, with its name (or "#i") and operator; no
// time negative, some positive, and all of them adding up to no more than
// the calls took (which of them is larger is the machine's business: no
// test asserts a speed); and the outputs of a Run after it are still
// right.
func TestProfile(t *testing.T) {
	g := chain("Neg", 4)
	g.Nodes[0].Inputs[0] = "s"
	g.Nodes = append([]*graph.Node{
		{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "x"}, Outputs: []string{"p"}},
		{OpType: "Softmax", Inputs: []string{"p"}, Outputs: []string{"s"}},
	}, g.Nodes...)
	g.Inputs[0].Shape = []int{128, 128}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m, err := cpu.Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, 128*128)
	for i := range data {
		data[i] = float32(i%7) / 7
	}
	x, err := inference.New([]int{128, 128}, data)
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]inference.Tensor{"x": x}
	ctx := context.Background()
	want, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nodes, err := m.(*cpu.Model).Profile(ctx, feeds, 5)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	compiled := m.(*cpu.Model).Graph().Nodes
	if len(nodes) != len(compiled) {
		t.Fatalf("%d entries, want one per node of the compiled graph (%d)", len(nodes), len(compiled))
	}
	var sum time.Duration
	for i, n := range compiled {
		name := n.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if nodes[i].Node != name || nodes[i].Op != n.OpType {
			t.Errorf("entry %d: %s %s, want %s %s", i, nodes[i].Node, nodes[i].Op, name, n.OpType)
		}
		if nodes[i].Time < 0 {
			t.Errorf("entry %d: time %v", i, nodes[i].Time)
		}
		sum += nodes[i].Time
	}
	if sum <= 0 || sum > wall {
		t.Errorf("times add up to %v in %v", sum, wall)
	}
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if !inference.Equal(got[k], v) {
			t.Errorf("output %s after Profile differs", k)
		}
	}
}

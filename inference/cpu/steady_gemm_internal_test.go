package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// TestSteadyRunAllocatesOnlyOutputs runs small graphs of the operators the
// exported image, text and sequence models are made of, and requires that
// a run with the shapes of the one before allocates nothing beyond its
// outputs.
func TestSteadyRunAllocatesOnlyOutputs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	node := func(op string, in []string, out string, attrs map[string]graph.Attr) *graph.Node {
		return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
	}
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	cases := []struct {
		name  string
		g     *graph.Graph
		feeds map[string]inference.Tensor
	}{
		{
			name: "mlp",
			g: &graph.Graph{
				Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2, 16}}},
				Outputs: []graph.Value{{Name: "y"}},
				Initializers: map[string]inference.Tensor{
					"w1": randomFloats(t, r, 32, 16), "b1": randomFloats(t, r, 32),
					"w2": randomFloats(t, r, 32, 8), "b2": randomFloats(t, r, 8),
				},
				Nodes: []*graph.Node{
					node("Gemm", []string{"x", "w1", "b1"}, "h", map[string]graph.Attr{"transB": {Type: graph.AttrInt, Int: 1}}),
					node("Relu", []string{"h"}, "a", nil),
					node("MatMul", []string{"a", "w2"}, "mm", nil),
					node("Add", []string{"mm", "b2"}, "y", nil),
				},
			},
			feeds: map[string]inference.Tensor{"x": randomFloats(t, r, 2, 16)},
		},
		{
			name: "conv block",
			g: &graph.Graph{
				Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{1, 8, 10, 10}}},
				Outputs: []graph.Value{{Name: "y"}},
				Initializers: map[string]inference.Tensor{
					"w": randomFloats(t, r, 8, 8, 3, 3), "b": randomFloats(t, r, 8),
					"pw": randomFloats(t, r, 8, 8, 1, 1), "dw": randomFloats(t, r, 8, 1, 3, 3),
				},
				Nodes: []*graph.Node{
					node("Conv", []string{"x", "w", "b"}, "c", map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}),
					node("Relu", []string{"c"}, "r", nil),
					node("Conv", []string{"r", "dw"}, "d", map[string]graph.Attr{"pads": ints(1, 1, 1, 1), "group": {Type: graph.AttrInt, Int: 8}}),
					node("Conv", []string{"d", "pw"}, "p", nil),
					node("Add", []string{"p", "x"}, "s", nil),
					node("GlobalAveragePool", []string{"s"}, "y", nil),
				},
			},
			feeds: map[string]inference.Tensor{"x": randomFloats(t, r, 1, 8, 10, 10)},
		},
		{
			name: "decoder", // an autoencoder's: ConvTranspose at stride 2, large enough to split
			g: &graph.Graph{
				Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{1, 64, 8, 8}}},
				Outputs: []graph.Value{{Name: "y"}},
				Initializers: map[string]inference.Tensor{
					"w": randomFloats(t, r, 64, 32, 3, 3), "b": randomFloats(t, r, 32),
				},
				Nodes: []*graph.Node{
					node("ConvTranspose", []string{"x", "w", "b"}, "c", map[string]graph.Attr{"pads": ints(1, 1, 1, 1),
						"strides": ints(2, 2), "output_padding": ints(1, 1)}),
					node("Relu", []string{"c"}, "y", nil),
				},
			},
			feeds: map[string]inference.Tensor{"x": randomFloats(t, r, 1, 64, 8, 8)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.g.Name = c.name
			c.g.Opsets = map[string]int64{"": 17}
			g := sorted(t, c.g)
			for _, procs := range []int{1, 2} {
				if got := steadyAllocsAt(t, procs, g, c.feeds); got != 0 {
					t.Errorf("GOMAXPROCS %d: a steady run allocates %v times beyond its outputs, want 0", procs, got)
				}
			}
		})
	}
}

// TestSteadyRerunsGemmConv runs MatMul (batched B, broadcast A), Gemm
// with C and fused epilogues, and convolutions (through SGEMM, depthwise,
// 1×1, 1-D, transposed) on feeds whose values, then shapes, change and
// come back, against fresh models: the plans these kernels keep (mmPlan,
// gemmPlan, cvPlan, cvTransposePlan) must follow.
func TestSteadyRerunsGemmConv(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	node := func(op string, in []string, out string, attrs map[string]graph.Attr) *graph.Node {
		return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
	}
	w := map[string]inference.Tensor{
		"w": randomFloats(t, r, 6, 4, 3, 3), "b": randomFloats(t, r, 6), "dw": randomFloats(t, r, 6, 1, 3, 3),
		"pw": randomFloats(t, r, 4, 6, 1, 1), "w1": randomFloats(t, r, 5, 4, 3), "gw": randomFloats(t, r, 8, 4), "gc": randomFloats(t, r, 8),
		"bb": randomFloats(t, r, 3, 4, 5), "tw": randomFloats(t, r, 4, 3, 3, 3),
	}
	build := func() *graph.Graph {
		inits := map[string]inference.Tensor{}
		for k, v := range w {
			inits[k] = v
		}
		return sorted(t, &graph.Graph{
			Name:   "gemm-conv",
			Opsets: map[string]int64{"": 17},
			Inputs: []graph.Value{
				{Name: "img", DType: inference.Float32, Shape: []int{-1, 4, -1, -1}},
				{Name: "seq", DType: inference.Float32, Shape: []int{-1, 4, -1}},
				{Name: "rows", DType: inference.Float32, Shape: []int{-1, 4}},
				{Name: "a", DType: inference.Float32, Shape: []int{-1, 3, -1, 4}},
			},
			Outputs:      []graph.Value{{Name: "y"}, {Name: "s1"}, {Name: "g"}, {Name: "mm"}, {Name: "t"}},
			Initializers: inits,
			Nodes: []*graph.Node{
				node("Conv", []string{"img", "w", "b"}, "c", map[string]graph.Attr{"pads": ints(1, 1, 1, 1), "strides": ints(2, 2)}),
				node("Relu", []string{"c"}, "r", nil),
				node("Conv", []string{"r", "dw"}, "d", map[string]graph.Attr{"pads": ints(1, 1, 1, 1), "group": {Type: graph.AttrInt, Int: 6}}),
				node("Conv", []string{"d", "pw"}, "y", nil),
				node("Conv", []string{"seq", "w1"}, "s1", map[string]graph.Attr{"pads": ints(1, 1)}),
				node("Gemm", []string{"rows", "gw", "gc"}, "g0", map[string]graph.Attr{"transB": {Type: graph.AttrInt, Int: 1}}),
				node("Sigmoid", []string{"g0"}, "g", nil),
				node("MatMul", []string{"a", "bb"}, "mm", nil),
				node("ConvTranspose", []string{"img", "tw"}, "t", map[string]graph.Attr{"pads": ints(1, 1, 1, 1),
					"strides": ints(2, 2), "output_padding": ints(1, 1)}),
			},
		})
	}
	feeds := func(n, h, l int) map[string]inference.Tensor {
		return map[string]inference.Tensor{
			"img": randomFloats(t, r, n, 4, h, h), "seq": randomFloats(t, r, n, 4, l),
			"rows": randomFloats(t, r, n, 4), "a": randomFloats(t, r, 2, 3, n, 4),
		}
	}
	checkReruns(t, build, feeds(1, 9, 7), feeds(1, 9, 7), feeds(2, 12, 5), feeds(1, 9, 7), feeds(3, 8, 16))
}

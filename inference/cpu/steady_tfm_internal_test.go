package cpu

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The operators of a transformer as our passes leave a BERT, ViT or GPT
// export: LayerNormalization, Softmax along the last axis, the Transposes
// that split and join the heads, and the Attention that RecognizeAttention
// makes of the scores' MatMul, scale, mask, Softmax and MatMul. A run with
// the shapes of the one before allocates nothing but its outputs, and
// what a node keeps from the run before never stands in for what new
// values or shapes compute.

// The graphs below return every value their nodes compute, so that each
// output's buffer leaves with the caller and the next run's is new
// (steadyAllocs counts it): what remains is what the kernels allocate,
// whichever buffers the pool hands them.

// tfmNode is a node of the transformer graphs, its attributes those given.
func tfmNode(op string, in, out []string, attrs map[string]graph.Attr) *graph.Node {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	return &graph.Node{Name: out[0], OpType: op, Inputs: in, Outputs: out, Attrs: attrs}
}

// tfmNormGraph is LayerNormalization over the last axis of x [batch, seq,
// 8], then Softmax along the last axis, Transposes by [0, 2, 1] and back,
// and LayerNormalization without a bias that returns its Mean too.
func tfmNormGraph(t *testing.T) *graph.Graph {
	r := rand.New(rand.NewPCG(1, 2))
	dyn := inference.Dynamic
	return sorted(t, &graph.Graph{
		Name:   "norm",
		Opsets: map[string]int64{"": 17},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{dyn, dyn, 8}}},
		Initializers: map[string]inference.Tensor{
			"scale": randomFloats(t, r, 8),
			"bias":  randomFloats(t, r, 8),
		},
		Outputs: tfmValues("ln", "sm", "tr", "back", "y", "mean"),
		Nodes: []*graph.Node{
			tfmNode("LayerNormalization", []string{"x", "scale", "bias"}, []string{"ln"}, map[string]graph.Attr{"axis": attrInt(-1), "epsilon": attrFloat(1e-5)}),
			tfmNode("Softmax", []string{"ln"}, []string{"sm"}, map[string]graph.Attr{"axis": attrInt(-1)}),
			tfmNode("Transpose", []string{"sm"}, []string{"tr"}, map[string]graph.Attr{"perm": attrInts(0, 2, 1)}),
			tfmNode("Transpose", []string{"tr"}, []string{"back"}, map[string]graph.Attr{"perm": attrInts(0, 2, 1)}),
			tfmNode("LayerNormalization", []string{"back", "scale"}, []string{"y", "mean"}, nil),
		},
	})
}

// tfmValues is the graph values named.
func tfmValues(names ...string) []graph.Value {
	vs := make([]graph.Value, len(names))
	for i, name := range names {
		vs[i] = graph.Value{Name: name}
	}
	return vs
}

// tfmAttentionGraph is multi-head attention as an exporter writes it, on
// q and k [batch, seq, 2 heads, 4], v [batch, seq, 2, 3] (present_key and
// present_value, which the node computes and no one reads, differ in
// size, so that the pool hands each the same buffer every run) and, with
// mask, an additive mask
// [batch, 1, 1, seq]: the heads split by Transposes of [0, 2, 1, 3] (keys
// [0, 2, 3, 1]), scores MatMul(Q, Kᵀ)/2 (+ mask), Softmax, MatMul with V,
// and the heads joined by a Transpose of [0, 2, 1, 3], then a Transpose
// of [0, 2, 3, 1] for one more of the kind. RecognizeAttention makes
// Attention of the middle.
func tfmAttentionGraph(t *testing.T, mask bool) *graph.Graph {
	dyn := inference.Dynamic
	qkv := func(name string, size int) graph.Value {
		return graph.Value{Name: name, DType: inference.Float32, Shape: []int{dyn, dyn, 2, size}}
	}
	perm := func(p ...int64) map[string]graph.Attr { return map[string]graph.Attr{"perm": attrInts(p...)} }
	g := &graph.Graph{
		Name:         "attention",
		Opsets:       map[string]int64{"": 17},
		Inputs:       []graph.Value{qkv("q", 4), qkv("k", 4), qkv("v", 3)},
		Initializers: map[string]inference.Tensor{"c": tensorOf(t, []int{}, float32(2))},
		Outputs:      tfmValues("qh", "vh", "o", "joined", "y"), // kt must have one reader to be fused
		Nodes: []*graph.Node{
			tfmNode("Transpose", []string{"q"}, []string{"qh"}, perm(0, 2, 1, 3)),
			tfmNode("Transpose", []string{"k"}, []string{"kt"}, perm(0, 2, 3, 1)),
			tfmNode("Transpose", []string{"v"}, []string{"vh"}, perm(0, 2, 1, 3)),
			tfmNode("MatMul", []string{"qh", "kt"}, []string{"s"}, nil),
			tfmNode("Div", []string{"s", "c"}, []string{"scaled"}, nil),
			tfmNode("Softmax", []string{"masked"}, []string{"p"}, map[string]graph.Attr{"axis": attrInt(-1)}),
			tfmNode("MatMul", []string{"p", "vh"}, []string{"o"}, nil),
			tfmNode("Transpose", []string{"o"}, []string{"joined"}, perm(0, 2, 1, 3)),
			tfmNode("Transpose", []string{"joined"}, []string{"y"}, perm(0, 2, 3, 1)),
		},
	}
	if mask {
		g.Inputs = append(g.Inputs, graph.Value{Name: "mask", DType: inference.Float32, Shape: []int{dyn, 1, 1, dyn}})
		g.Nodes = append(g.Nodes, tfmNode("Add", []string{"scaled", "mask"}, []string{"masked"}, nil))
	} else {
		g.Nodes[5].Inputs[0] = "scaled"
	}
	return sorted(t, g)
}

// tfmAttentionFeeds returns q for batch and qSeq, k and v (and mask, when
// asked) for batch and seq, from r.
func tfmAttentionFeeds(t *testing.T, r *rand.Rand, mask bool, batch, qSeq, seq int) map[string]inference.Tensor {
	f := map[string]inference.Tensor{
		"q": randomFloats(t, r, batch, qSeq, 2, 4),
		"k": randomFloats(t, r, batch, seq, 2, 4),
		"v": randomFloats(t, r, batch, seq, 2, 3),
	}
	if mask {
		m := make([]float32, batch*seq)
		for i := range m {
			if r.IntN(4) == 0 {
				m[i] = -10000
			}
		}
		f["mask"] = tensorOf(t, []int{batch, 1, 1, seq}, m...)
	}
	return f
}

// withProcs runs f with GOMAXPROCS 1, then 2 (the parallel loops take
// other paths), as a subtest each.
func withProcs(t *testing.T, f func(t *testing.T)) {
	for _, procs := range []int{1, 2} {
		t.Run("procs"+strconv.Itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			f(t)
		})
	}
}

// TestSteadyTransformer: a run of the transformer operators with the
// shapes of the run before allocates nothing beyond its outputs and what
// the executor allocates for any run (executorAllocs), at one processor
// and at two.
func TestSteadyTransformer(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	withProcs(t, func(t *testing.T) {
		t.Run("norm", func(t *testing.T) {
			g := tfmNormGraph(t)
			feeds := map[string]inference.Tensor{"x": randomFloats(t, r, 2, 64, 8)}
			if a := steadyAllocs(t, g, feeds); a != 0 {
				t.Errorf("%v allocations a run beyond the outputs, want 0", a)
			}
		})
		for _, mask := range []bool{false, true} {
			t.Run("attention/mask="+strconv.FormatBool(mask), func(t *testing.T) {
				m, err := Backend{}.Compile(tfmAttentionGraph(t, mask))
				if err != nil {
					t.Fatal(err)
				}
				if !hasOp(m.(*Model).Graph(), "Attention") {
					t.Fatal("RecognizeAttention left the attention unfused")
				}
				g := tfmAttentionGraph(t, mask)
				feeds := tfmAttentionFeeds(t, r, mask, 2, 40, 48)
				if a := steadyAllocs(t, g, feeds); a != 0 {
					t.Errorf("%v allocations a run beyond the outputs, want 0", a)
				}
			})
		}
	})
}

// hasOp reports whether g has a node of op.
func hasOp(g *graph.Graph, op string) bool {
	for _, n := range g.Nodes {
		if n.OpType == op {
			return true
		}
	}
	return false
}

// TestRerunTransformer: a model of the transformer operators run on
// changing values, then sequence lengths and batches, then the first
// shapes again, computes what a fresh model does each time.
func TestRerunTransformer(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	withProcs(t, func(t *testing.T) {
		t.Run("norm", func(t *testing.T) {
			x := func(batch, seq int) map[string]inference.Tensor {
				return map[string]inference.Tensor{"x": randomFloats(t, r, batch, seq, 8)}
			}
			checkReruns(t, func() *graph.Graph { return tfmNormGraph(t) },
				x(2, 16), x(2, 16), x(2, 5), x(1, 16), x(3, 40), x(2, 16))
		})
		for _, mask := range []bool{false, true} {
			t.Run("attention/mask="+strconv.FormatBool(mask), func(t *testing.T) {
				f := func(batch, qSeq, seq int) map[string]inference.Tensor {
					return tfmAttentionFeeds(t, r, mask, batch, qSeq, seq)
				}
				checkReruns(t, func() *graph.Graph { return tfmAttentionGraph(t, mask) },
					f(2, 16, 16), f(2, 16, 16), f(2, 5, 5), f(2, 5, 16), f(1, 16, 16), f(3, 33, 20), f(2, 16, 16))
			})
		}
	})
}

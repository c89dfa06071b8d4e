package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Pooling, reductions and the recurrent cells allocate nothing in a run
// with the shapes of the run before (their plans, outputs and loop bodies
// kept in the node's opsem.Memo), and what they keep never stands in for
// what new values or shapes compute.

// steadyNode is a graph of one node of op (opset 17 unless attrs' node
// says otherwise) reading graph inputs ins (and initializers inits), with
// the outputs outs, the graph's outputs those named.
func steadyNode(t *testing.T, op string, opset int64, attrs map[string]graph.Attr, ins []string, inits map[string]inference.Tensor, outs ...string) *graph.Graph {
	t.Helper()
	if inits == nil {
		inits = map[string]inference.Tensor{}
	}
	g := &graph.Graph{Name: op, Opsets: map[string]int64{"": opset}, Initializers: inits,
		Nodes: []*graph.Node{{Name: "n", OpType: op, Inputs: ins, Outputs: outs, Attrs: attrs}}}
	for _, name := range ins {
		if _, ok := inits[name]; !ok && name != "" {
			g.Inputs = append(g.Inputs, graph.Value{Name: name})
		}
	}
	for _, name := range outs {
		if name != "" {
			g.Outputs = append(g.Outputs, graph.Value{Name: name})
		}
	}
	return sorted(t, g)
}

type steadyCase struct {
	name  string
	build func() *graph.Graph
	feeds []map[string]inference.Tensor // the first for the allocation count, all for checkReruns
}

func steadyPoolCases(t *testing.T) []steadyCase {
	r := rand.New(rand.NewPCG(3, 4))
	x := func(shape ...int) map[string]inference.Tensor {
		return map[string]inference.Tensor{"x": randomFloats(t, r, shape...)}
	}
	// Images large enough for the loops to split at GOMAXPROCS 2, then
	// new values, a new batch and image size, and back.
	images := func(big ...int) []map[string]inference.Tensor {
		return []map[string]inference.Tensor{x(big...), x(big...), x(1, 3, 9, 11), x(2, 3, 9, 11), x(big...)}
	}
	pool := func(op string, attrs map[string]graph.Attr, outs ...string) func() *graph.Graph {
		return func() *graph.Graph {
			a := map[string]graph.Attr{"kernel_shape": attrInts(3, 3), "strides": attrInts(2, 2)}
			for k, v := range attrs {
				a[k] = v
			}
			return steadyNode(t, op, 17, a, []string{"x"}, nil, outs...)
		}
	}
	rows := func(big ...int) []map[string]inference.Tensor {
		return []map[string]inference.Tensor{x(big...), x(big...), x(3, 7, 5), x(5, 2, 5), x(big...)}
	}
	axes := map[string]inference.Tensor{"axes": tensorOf(t, []int{1}, int64(-1))}
	reduce := func(op string, opset int64, attrs map[string]graph.Attr, inits map[string]inference.Tensor) func() *graph.Graph {
		return func() *graph.Graph {
			a := map[string]graph.Attr{}
			for k, v := range attrs {
				a[k] = v
			}
			ins := []string{"x"}
			for name := range inits {
				ins = append(ins, name)
			}
			return steadyNode(t, op, opset, a, ins, inits, "y")
		}
	}
	// Axes fed as a graph input: new values key a new plan.
	fedAxes := func(axes ...int64) []map[string]inference.Tensor {
		var feeds []map[string]inference.Tensor
		for i, a := range axes {
			f := x(8, 64, 512)
			if i == 2 {
				f = x(3, 4, 5)
			}
			f["axes"] = tensorOf(t, []int{1}, a)
			feeds = append(feeds, f)
		}
		return feeds
	}
	// Recurrent cells over x [seq, batch, 4] (hidden 6, W, R and B
	// initializers), fed changing values, then a longer sequence, a larger
	// batch, and back.
	recurrent := func(op string, attrs map[string]graph.Attr, extra map[string]inference.Tensor, outs ...string) func() *graph.Graph {
		return func() *graph.Graph {
			r := rand.New(rand.NewPCG(13, 14))
			dirs, gates := 1, map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[op]
			a := map[string]graph.Attr{"hidden_size": attrInt(6)}
			for k, v := range attrs {
				a[k] = v
			}
			if a["direction"].String == "bidirectional" {
				dirs = 2
			}
			inits := map[string]inference.Tensor{
				"w": tensorOf(t, []int{dirs, gates * 6, 4}, nnRandom(r, dirs*gates*6*4)...),
				"r": tensorOf(t, []int{dirs, gates * 6, 6}, nnRandom(r, dirs*gates*6*6)...),
				"b": tensorOf(t, []int{dirs, 2 * gates * 6}, nnRandom(r, dirs*2*gates*6)...),
			}
			// X, W, R, B, sequence_lens, initial_h, initial_c.
			ins := []string{"x", "w", "r", "b"}
			for _, name := range []string{"lens", "h0", "c0"} {
				if v, ok := extra[name]; ok {
					inits[name] = v
					ins = append(ins, name)
				} else {
					ins = append(ins, "")
				}
			}
			for len(ins) > 4 && ins[len(ins)-1] == "" {
				ins = ins[:len(ins)-1]
			}
			return steadyNode(t, op, 17, a, ins, inits, outs...)
		}
	}
	sequences := func(seq, batch int) []map[string]inference.Tensor {
		return []map[string]inference.Tensor{x(seq, batch, 4), x(seq, batch, 4), x(seq+3, batch, 4), x(seq+3, batch+2, 4), x(seq, batch, 4)}
	}
	bi := map[string]graph.Attr{"direction": attrString("bidirectional")}
	keep0 := map[string]graph.Attr{"keepdims": attrInt(0)}
	return []steadyCase{
		{"ReduceMean axes input", reduce("ReduceMean", 18, nil, axes), rows(8, 8, 4096)},
		{"ReduceMean axes input keepdims 0", reduce("ReduceMean", 18, keep0, axes), rows(8, 8, 4096)},
		{"ReduceMean axes attribute", reduce("ReduceMean", 13, map[string]graph.Attr{"axes": attrInts(-1)}, nil), rows(8, 8, 4096)},
		{"ReduceMean axes attribute keepdims 0", reduce("ReduceMean", 13, map[string]graph.Attr{"axes": attrInts(2), "keepdims": attrInt(0)}, nil), rows(8, 8, 4096)},
		{"ReduceSum all", reduce("ReduceSum", 17, nil, nil), rows(8, 8, 4096)},
		{"ReduceSum axes fed", func() *graph.Graph {
			return steadyNode(t, "ReduceSum", 17, map[string]graph.Attr{}, []string{"x", "axes"}, nil, "y")
		}, fedAxes(-1, 1, 0, -1)},
		{"ReduceSum middle axis", reduce("ReduceSum", 17, nil, map[string]inference.Tensor{"axes": tensorOf(t, []int{1}, int64(1))}), rows(8, 64, 512)},
		{"ReduceLogSumExp middle axis", reduce("ReduceLogSumExp", 18, keep0, map[string]inference.Tensor{"axes": tensorOf(t, []int{1}, int64(1))}), rows(8, 64, 512)},
		{"ReduceMax first axes", reduce("ReduceMax", 13, map[string]graph.Attr{"axes": attrInts(0, 1)}, nil), rows(8, 64, 512)},
		{"LSTM bidirectional", recurrent("LSTM", bi, nil, "y", "h", "c"), sequences(5, 3)},
		{"LSTM", recurrent("LSTM", nil, nil, "y"), sequences(5, 3)},
		{"LSTM skipping Y_h", recurrent("LSTM", bi, nil, "y", "", "c"), sequences(5, 3)},
		{"LSTM reverse clip", recurrent("LSTM", map[string]graph.Attr{"direction": attrString("reverse"), "clip": attrFloat(0.5)}, nil, "y", "h"), sequences(5, 3)},
		{"LSTM initial states", recurrent("LSTM", bi, map[string]inference.Tensor{
			"h0": randomFloats(t, r, 2, 3, 6), "c0": randomFloats(t, r, 2, 3, 6)}, "y", "h", "c"), sequences(5, 3)[:2]},
		{"LSTM sequence_lens", recurrent("LSTM", bi, map[string]inference.Tensor{
			"lens": tensorOf(t, []int{3}, int32(5), 2, 0)}, "y", "h", "c"), sequences(5, 3)[:3]},
		{"LSTM layout 1", recurrent("LSTM", map[string]graph.Attr{"direction": attrString("bidirectional"), "layout": attrInt(1)}, nil, "y", "h", "c"), sequences(3, 5)},
		{"GRU bidirectional", recurrent("GRU", bi, nil, "y", "h"), sequences(5, 3)},
		{"GRU linear_before_reset", recurrent("GRU", map[string]graph.Attr{"linear_before_reset": attrInt(1)}, nil, "y", "h"), sequences(5, 3)},
		{"RNN", recurrent("RNN", bi, nil, "y", "h"), sequences(5, 3)},
		{"MaxPool", pool("MaxPool", nil, "y"), images(2, 16, 64, 64)},
		{"MaxPool pads ceil", pool("MaxPool", map[string]graph.Attr{"pads": attrInts(1, 0, 1, 1), "ceil_mode": attrInt(1)}, "y"), images(2, 16, 63, 64)},
		{"MaxPool stride 1", pool("MaxPool", map[string]graph.Attr{"strides": attrInts(1, 1)}, "y"), images(2, 16, 64, 64)},
		{"MaxPool indices", pool("MaxPool", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}, "y", "i"), images(2, 16, 64, 64)},
		{"AveragePool", pool("AveragePool", map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1), "count_include_pad": attrInt(1)}, "y"), images(2, 16, 64, 64)},
		{"AveragePool ceil", pool("AveragePool", map[string]graph.Attr{"ceil_mode": attrInt(1)}, "y"), images(2, 16, 63, 63)},
		{"LpPool", pool("LpPool", nil, "y"), images(2, 16, 64, 64)},
		{"GlobalAveragePool", func() *graph.Graph { return steadyNode(t, "GlobalAveragePool", 17, nil, []string{"x"}, nil, "y") }, images(2, 32, 64, 64)},
		{"GlobalMaxPool", func() *graph.Graph { return steadyNode(t, "GlobalMaxPool", 17, nil, []string{"x"}, nil, "y") }, images(2, 32, 64, 64)},
		{"BatchNormalization", func() *graph.Graph {
			params := map[string]inference.Tensor{}
			for i, name := range []string{"scale", "b", "mean", "var"} {
				params[name] = tensorOf(t, []int{3}, float32(i)+0.5, 1, 2)
			}
			return steadyNode(t, "BatchNormalization", 15, nil, []string{"x", "scale", "b", "mean", "var"}, params, "y")
		}, images(2, 3, 64, 64)},
	}
}

func TestSteadyPoolReduceRNN(t *testing.T) {
	cases := steadyPoolCases(t)
	for _, procs := range []int{1, 2} {
		for _, c := range cases {
			g := c.build()
			if got := steadyAllocsAt(t, procs, g, c.feeds[0]); got != 0 {
				t.Errorf("%s at GOMAXPROCS %d: %v allocations a run beyond the outputs, want 0", c.name, procs, got)
			}
		}
	}
}

func TestSteadyPoolReduceRNNReruns(t *testing.T) {
	for _, c := range steadyPoolCases(t) {
		t.Run(c.name, func(t *testing.T) { checkReruns(t, c.build, c.feeds...) })
	}
}

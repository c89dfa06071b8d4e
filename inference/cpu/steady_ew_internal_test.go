package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The elementwise, view, slice and gather kernels keep their plans from
// run to run (opsem.Plan) and return their outputs through opsem.Single:
// a run with the shapes of the one before allocates nothing beyond its
// outputs. These graphs use them in the shapes that exported image and
// text models do.

// ewChannels is the channel count of the image-like test graphs: with
// 64×64 planes an operand holds 2¹⁸ elements, enough for Add and Mul to
// split their loops (parallelFor) when GOMAXPROCS allows.
const ewChannels = 64

// ewGraph returns a graph of opset 17 over the float32 input x of shape
// [1, ewChannels, 64, 64], with the given initializers and nodes, whose
// outputs are y and, when a node computes it, z.
func ewGraph(t *testing.T, name string, inits map[string]inference.Tensor, nodes ...*graph.Node) *graph.Graph {
	t.Helper()
	g := &graph.Graph{
		Name:         name,
		Opsets:       map[string]int64{"": 17},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{1, ewChannels, 64, 64}}},
		Outputs:      []graph.Value{{Name: "y"}},
		Initializers: inits,
		Nodes:        nodes,
	}
	for _, n := range nodes {
		if n.Outputs[0] == "z" {
			g.Outputs = append(g.Outputs, graph.Value{Name: "z"})
		}
	}
	return sorted(t, g)
}

func ewNode(op string, attrs map[string]graph.Attr, out string, in ...string) *graph.Node {
	return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
}

// ewSteadyCases are the graphs and feeds of TestSteadyElementwise.
func ewSteadyCases(t *testing.T) []struct {
	g     *graph.Graph
	feeds map[string]inference.Tensor
} {
	r := rand.New(rand.NewPCG(3, 4))
	x := randomFloats(t, r, 1, ewChannels, 64, 64)
	c := ewChannels
	feeds := map[string]inference.Tensor{"x": x}
	type tc = struct {
		g     *graph.Graph
		feeds map[string]inference.Tensor
	}
	return []tc{
		{ewGraph(t, "arith", map[string]inference.Tensor{
			"half":    tensorOf(t, []int{}, float32(0.5)),
			"channel": randomFloats(t, r, 1, c, 1, 1),
			"plane":   randomFloats(t, r, 64, 64),
			"row":     randomFloats(t, r, 1, c, 1, 64),
			"two":     tensorOf(t, []int{1}, float32(2)),
		},
			ewNode("Add", nil, "a", "x", "x"),         // same shape
			ewNode("Mul", nil, "b", "a", "half"),      // scalar
			ewNode("Add", nil, "d", "b", "channel"),   // per channel
			ewNode("Sub", nil, "e", "plane", "d"),     // trailing dimensions, operand 0
			ewNode("Div", nil, "f", "e", "row"),       // general broadcast
			ewNode("Pow", nil, "g", "f", "two"),       // a small exponent
			ewNode("Mul", nil, "h", "g", "plane"),     // trailing dimensions, operand 1
			ewNode("Sum", nil, "i", "h", "x", "half"), // variadic
			ewNode("Sub", nil, "y", "half", "i"),      // scalar first
		), feeds},
		{ewGraph(t, "unary", map[string]inference.Tensor{
			"lo": tensorOf(t, []int{}, float32(-0.5)),
			"hi": tensorOf(t, []int{}, float32(0.75)),
		},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Sigmoid", nil, "b", "a"),
			ewNode("Erf", nil, "d", "b"),
			ewNode("Tanh", nil, "e", "d"),
			ewNode("Neg", nil, "f", "e"),
			ewNode("Abs", nil, "g", "f"),
			ewNode("LeakyRelu", map[string]graph.Attr{"alpha": attrFloat(0.2)}, "h", "g"),
			ewNode("Clip", nil, "y", "h", "lo", "hi"),
		), feeds},
		{ewGraph(t, "view", map[string]inference.Tensor{
			"shape": tensorOf(t, []int{3}, int64(1), int64(c), -1),
			"axes":  tensorOf(t, []int{1}, int64(0)),
			"back":  tensorOf(t, []int{4}, int64(0), int64(c), 64, 64),
		},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Reshape", nil, "b", "a", "shape"),
			ewNode("Unsqueeze", nil, "d", "b", "axes"),
			ewNode("Squeeze", nil, "e", "d", "axes"),
			ewNode("Reshape", nil, "f", "e", "back"),
			ewNode("Identity", nil, "g", "f"),
			ewNode("Flatten", map[string]graph.Attr{"axis": attrInt(1)}, "h", "g"),
			ewNode("Sigmoid", nil, "y", "h"),
		), feeds},
		{ewGraph(t, "slice", map[string]inference.Tensor{
			"starts": tensorOf(t, []int{2}, int64(8), int64(1)),
			"ends":   tensorOf(t, []int{2}, int64(24), int64(-1)),
			"axes":   tensorOf(t, []int{2}, int64(1), int64(3)),
			"steps":  tensorOf(t, []int{2}, int64(2), int64(1)),
			"head":   tensorOf(t, []int{1}, int64(0)),
			"mid":    tensorOf(t, []int{1}, int64(c/2)),
			"chan":   tensorOf(t, []int{1}, int64(1)),
			"parts":  tensorOf(t, []int{2}, int64(c), int64(c)),
		},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Slice", nil, "b", "a", "starts", "ends", "axes", "steps"), // a window of every other channel
			ewNode("Slice", nil, "d", "a", "head", "mid", "chan"),             // the first half of the channels: runs
			ewNode("Concat", map[string]graph.Attr{"axis": attrInt(1)}, "e", "d", "a", "d"),
			ewNode("Concat", map[string]graph.Attr{"axis": attrInt(3)}, "f", "b", "b"),
			&graph.Node{Name: "split", OpType: "Split", Inputs: []string{"e", "parts"}, Outputs: []string{"s1", "s2"}, Attrs: map[string]graph.Attr{"axis": attrInt(1)}},
			ewNode("Add", nil, "z", "s1", "s2"),
			ewNode("Relu", nil, "y", "f"),
		), feeds},
		{sorted(t, &graph.Graph{
			Name:    "gather",
			Opsets:  map[string]int64{"": 17},
			Inputs:  []graph.Value{{Name: "ids", DType: inference.Int64, Shape: []int{1, 32}}, {Name: "mask", DType: inference.Int64, Shape: []int{1, 32}}},
			Outputs: []graph.Value{{Name: "y"}},
			Initializers: map[string]inference.Tensor{
				"table": randomFloats(t, r, 100, 32),
				"pos":   randomFloats(t, r, 32, 32),
				"zero":  tensorOf(t, []int{}, int64(0)),
				"ax0":   tensorOf(t, []int{1}, int64(0)),
				"ax":    tensorOf(t, []int{2}, int64(1), int64(2)),
				"shape": tensorOf(t, []int{4}, int64(1), int64(2), int64(32), int64(32)),
				"neg":   tensorOf(t, []int{}, float32(-1e4)),
				"one":   tensorOf(t, []int{}, float32(1)),
			},
			Nodes: []*graph.Node{
				ewNode("Gather", nil, "emb", "table", "ids"),
				ewNode("Add", nil, "a", "emb", "pos"),
				ewNode("Gather", map[string]graph.Attr{"axis": attrInt(1)}, "first", "a", "zero"),
				ewNode("Unsqueeze", nil, "m", "mask", "ax"),
				ewNode("Cast", map[string]graph.Attr{"to": attrInt(1)}, "mf", "m"),
				ewNode("Sub", nil, "inv", "one", "mf"),
				ewNode("Mul", nil, "bias", "inv", "neg"),
				ewNode("Equal", nil, "pad", "m", "zero"),
				ewNode("Where", nil, "w", "pad", "neg", "bias"),
				ewNode("Greater", nil, "pos1", "first", "one"),
				ewNode("Cast", map[string]graph.Attr{"to": attrInt(1)}, "p", "pos1"),
				ewNode("Unsqueeze", nil, "pe", "p", "ax0"),
				ewNode("Add", nil, "s", "w", "pe"),
				ewNode("Expand", nil, "y", "s", "shape"),
			},
		}), map[string]inference.Tensor{
			"ids":  tensorOf(t, []int{1, 32}, ewIndices(32, 7, 100)...),
			"mask": tensorOf(t, []int{1, 32}, ewIndices(32, 1, 2)...),
		}},
	}
}

// ewIndices returns n int64s i·step mod m.
func ewIndices(n, step, m int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i * step % m)
	}
	return v
}

func TestSteadyElementwise(t *testing.T) {
	for _, procs := range []int{1, 2} {
		for _, c := range ewSteadyCases(t) {
			if got := steadyAllocsAt(t, procs, c.g, c.feeds); got != 0 {
				t.Errorf("GOMAXPROCS %d, graph %s: %v allocations beyond the outputs in a steady run, want 0", procs, c.g.Name, got)
			}
		}
	}
}

// TestRerunElementwise runs kept models on feeds whose values, then
// shapes, change and go back, among them the small int64 inputs whose
// values key a plan (Reshape's shape, Slice's starts, Unsqueeze's axes,
// Expand's shape, Gather's indices) fed as graph inputs: a kept plan must
// never give what the feeds before computed.
func TestRerunElementwise(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := func(shape ...int) inference.Tensor { return randomFloats(t, r, shape...) }
	ints := func(v ...int64) inference.Tensor { return tensorOf(t, []int{len(v)}, v...) }
	type feeds = map[string]inference.Tensor
	graphOf := func(name string, inputs []string, nodes ...*graph.Node) func() *graph.Graph {
		return func() *graph.Graph {
			g := &graph.Graph{Name: name, Opsets: map[string]int64{"": 17}, Outputs: []graph.Value{{Name: "y"}}, Initializers: map[string]inference.Tensor{}}
			for _, in := range inputs {
				g.Inputs = append(g.Inputs, graph.Value{Name: in})
			}
			for _, n := range nodes {
				if n.Outputs[0] == "z" {
					g.Outputs = append(g.Outputs, graph.Value{Name: "z"})
				}
			}
			g.Nodes = nodes
			return sorted(t, g)
		}
	}
	t.Run("arith", func(t *testing.T) {
		build := graphOf("arith", []string{"a", "b", "c"},
			ewNode("Add", nil, "s", "a", "b"),
			ewNode("Mul", nil, "m", "s", "c"),
			ewNode("Div", nil, "d", "m", "b"),
			ewNode("Pow", nil, "p", "d", "c"),
			ewNode("Max", nil, "y", "p", "a", "c"),
			ewNode("Sigmoid", nil, "z", "s"),
		)
		same := feeds{"a": f(2, 3, 4, 5), "b": f(2, 3, 4, 5), "c": f(2, 3, 4, 5)}
		checkReruns(t, build,
			same,
			feeds{"a": f(2, 3, 4, 5), "b": f(2, 3, 4, 5), "c": f(2, 3, 4, 5)},
			feeds{"a": f(2, 3, 4, 5), "b": f(1, 3, 1, 1), "c": tensorOf(t, []int{}, float32(2))}, // per channel, a small exponent
			feeds{"a": f(2, 3, 4, 5), "b": f(4, 5), "c": f(3, 1, 5)},                             // trailing, general
			feeds{"a": f(1, 3, 1, 5), "b": f(2, 1, 4, 1), "c": tensorOf(t, []int{1}, float32(3))},
			same,
		)
	})
	t.Run("compare", func(t *testing.T) {
		build := graphOf("compare", []string{"a", "b", "i", "j"},
			ewNode("Greater", nil, "g", "a", "b"),
			ewNode("Equal", nil, "e", "i", "j"),
			ewNode("And", nil, "both", "g", "e"),
			ewNode("Where", nil, "y", "both", "a", "b"),
			ewNode("Cast", map[string]graph.Attr{"to": attrInt(7)}, "z", "both"),
		)
		i1 := tensorOf(t, []int{3, 1}, int64(1), 2, 3)
		checkReruns(t, build,
			feeds{"a": f(3, 4), "b": f(3, 4), "i": i1, "j": tensorOf(t, []int{1, 4}, int64(1), 2, 3, 1)},
			feeds{"a": f(3, 4), "b": f(4), "i": i1, "j": tensorOf(t, []int{1, 4}, int64(3), 3, 2, 1)},
			feeds{"a": f(2, 3, 4), "b": f(3, 1), "i": i1, "j": tensorOf(t, []int{}, int64(2))},
			feeds{"a": f(3, 4), "b": f(3, 4), "i": i1, "j": tensorOf(t, []int{1, 4}, int64(1), 2, 3, 1)},
		)
	})
	t.Run("unary", func(t *testing.T) {
		build := graphOf("unary", []string{"x", "lo"},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Erf", nil, "b", "a"),
			ewNode("Tanh", nil, "c", "b"),
			ewNode("Clip", nil, "y", "x", "lo"),
			ewNode("Sub", nil, "z", "c", "x"),
		)
		checkReruns(t, build,
			feeds{"x": f(2, 70000), "lo": tensorOf(t, []int{}, float32(-0.5))},
			feeds{"x": f(2, 70000), "lo": tensorOf(t, []int{}, float32(0.25))},
			feeds{"x": f(3, 5), "lo": tensorOf(t, []int{}, float32(0.25))},
			feeds{"x": f(2, 70000), "lo": tensorOf(t, []int{}, float32(-0.5))},
		)
	})
	t.Run("view", func(t *testing.T) {
		build := graphOf("view", []string{"x", "shape", "axes"},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Reshape", nil, "b", "a", "shape"),
			ewNode("Unsqueeze", nil, "c", "b", "axes"),
			ewNode("Squeeze", nil, "d", "c", "axes"),
			ewNode("Flatten", map[string]graph.Attr{"axis": attrInt(1)}, "e", "c"),
			ewNode("Sigmoid", nil, "y", "d"),
			ewNode("Neg", nil, "z", "e"),
		)
		x := f(2, 3, 4)
		checkReruns(t, build,
			feeds{"x": x, "shape": ints(4, 6), "axes": ints(0)},
			feeds{"x": x, "shape": ints(6, 4), "axes": ints(0)},
			feeds{"x": x, "shape": ints(6, 4), "axes": ints(1)},
			feeds{"x": x, "shape": ints(2, -1), "axes": ints(2, 0)},
			feeds{"x": f(3, 4, 4), "shape": ints(4, -1), "axes": ints(1)},
			feeds{"x": f(2, 3, 4), "shape": ints(1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 12), "axes": ints(0)}, // a shape too long to key the plan
			feeds{"x": f(2, 3, 4), "shape": ints(1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 12, 1), "axes": ints(0)},
			feeds{"x": x, "shape": ints(4, 6), "axes": ints(0)},
		)
	})
	t.Run("slice", func(t *testing.T) {
		build := graphOf("slice", []string{"x", "starts", "ends", "w", "to", "parts"},
			ewNode("Relu", nil, "a", "x"),
			ewNode("Slice", nil, "b", "a", "starts", "ends"),
			ewNode("Concat", map[string]graph.Attr{"axis": attrInt(1)}, "y", "b", "w", "b"),
			ewNode("Expand", nil, "e", "b", "to"),
			&graph.Node{Name: "split", OpType: "Split", Inputs: []string{"e", "parts"}, Outputs: []string{"s1", "s2"}, Attrs: map[string]graph.Attr{"axis": attrInt(-1)}},
			ewNode("Concat", map[string]graph.Attr{"axis": attrInt(-1)}, "z", "s2", "s1"),
		)
		checkReruns(t, build,
			feeds{"x": f(4, 6), "starts": ints(0, 1), "ends": ints(4, 5), "w": f(4, 2), "to": ints(1, 1), "parts": ints(1, 3)},
			feeds{"x": f(4, 6), "starts": ints(1, 0), "ends": ints(4, 5), "w": f(3, 1), "to": ints(2, 1, 1), "parts": ints(2, 3)},
			feeds{"x": f(4, 6), "starts": ints(-2, 2), "ends": ints(4, 6), "w": f(2, 3), "to": ints(3, 2, 1), "parts": ints(3, 1)},
			feeds{"x": f(5, 7), "starts": ints(1, 1), "ends": ints(5, 6), "w": f(4, 2), "to": ints(1), "parts": ints(2, 3)},
			feeds{"x": f(4, 6), "starts": ints(0, 1), "ends": ints(4, 5), "w": f(4, 2), "to": ints(1, 1), "parts": ints(1, 3)},
		)
	})
	t.Run("gather", func(t *testing.T) {
		build := graphOf("gather", []string{"table", "ids", "shape"},
			ewNode("Gather", nil, "e", "table", "ids"),
			ewNode("Gather", map[string]graph.Attr{"axis": attrInt(-1)}, "y", "table", "ids"),
			ewNode("Expand", nil, "z", "e", "shape"),
		)
		table := f(20, 20)
		many := tensorOf(t, []int{3, 8}, ewIndices(24, 7, 20)...)
		checkReruns(t, build,
			feeds{"table": table, "ids": ints(3, 1, 4), "shape": ints(1, 1)},
			feeds{"table": table, "ids": ints(5, -1, 9), "shape": ints(2, 1, 1)},
			feeds{"table": table, "ids": many, "shape": ints(1)},
			feeds{"table": table, "ids": tensorOf(t, []int{3, 8}, ewIndices(24, 3, 20)...), "shape": ints(1)}, // more indices than key a plan
			feeds{"table": f(20, 21), "ids": tensorOf(t, []int{}, int64(2)), "shape": ints(1)},
			feeds{"table": table, "ids": ints(3, 1, 4), "shape": ints(1, 1)},
		)
	})
}

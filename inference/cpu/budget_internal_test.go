package cpu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

// The kernels count their outputs, tables and scratch against the run's
// budget: each case below runs an operator under 1 MiB on inputs (which a
// run does not count) for which it allocates a few MiB, and must be
// refused, then on small inputs, and must succeed. The inputs are chosen
// so that what the kernels counted before passes the budget.

const budgetTestBytes = 1 << 20

// budgetCase is an operator's graph, with feeds it allocates past the
// budget for and feeds it runs within it on.
type budgetCase struct {
	name       string
	g          *graph.Graph
	big, small map[string]inference.Tensor
}

func runBudgetCases(t *testing.T, cases []budgetCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkBudget(t, tc.g, tc.big, tc.g, tc.small) })
	}
}

// checkBudget requires that big refuses its feeds under the budget and
// that small runs on its own.
func checkBudget(t *testing.T, big *graph.Graph, bigFeeds map[string]inference.Tensor, small *graph.Graph, smallFeeds map[string]inference.Tensor) {
	t.Helper()
	if _, err := runLimited(t, big, budgetTestBytes, bigFeeds); !errors.Is(err, inference.ErrResourceExhausted) {
		t.Errorf("large inputs: got %v, want ErrResourceExhausted", err)
	}
	if _, err := runLimited(t, small, budgetTestBytes, smallFeeds); err != nil {
		t.Errorf("small inputs: %v", err)
	}
}

// zeros is a float32 tensor of the given shape, all 0.
func zeros(t *testing.T, shape ...int) inference.Tensor {
	return tensorOf(t, shape, make([]float32, limit.Count(shape...))...)
}

// counting is a float32 tensor of the given shape holding 0, 1, 2, ….
func counting(t *testing.T, shape ...int) inference.Tensor {
	d := make([]float32, limit.Count(shape...))
	for i := range d {
		d[i] = float32(i)
	}
	return tensorOf(t, shape, d...)
}

// feeds names the inputs a, b, c, … in order.
func feeds(in ...inference.Tensor) map[string]inference.Tensor {
	f := map[string]inference.Tensor{}
	for i, x := range in {
		f[string(rune('a'+i))] = x
	}
	return f
}

// names is a, b, c, … for k inputs.
func names(k int) []string {
	s := make([]string, k)
	for i := range s {
		s[i] = string(rune('a' + i))
	}
	return s
}

// graphOf is a graph of nodes reading the graph inputs in and writing
// output y.
func graphOf(t *testing.T, opset int64, nodes []*graph.Node, in ...string) *graph.Graph {
	t.Helper()
	g := &graph.Graph{Name: "g", Opsets: map[string]int64{"": opset}, Initializers: map[string]inference.Tensor{},
		Outputs: []graph.Value{{Name: "y"}}, Nodes: nodes}
	for _, name := range in {
		g.Inputs = append(g.Inputs, graph.Value{Name: name})
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBudgetCountsNormalization(t *testing.T) {
	const wide = 300_000 // 1.2 MB of float32
	bn := func(c int) map[string]inference.Tensor {
		return feeds(zeros(t, 1, c), zeros(t, c), zeros(t, c), zeros(t, c), zeros(t, c))
	}
	runBudgetCases(t, []budgetCase{
		// y (400 kB) was counted; the four statistics (1.6 MB) were not.
		{"BatchNormalization training statistics",
			oneNode(t, "BatchNormalization", 15, map[string]graph.Attr{"training_mode": attrInt(1)}, names(5)...),
			bn(100_000), bn(4)},
		{"InstanceNormalization output", oneNode(t, "InstanceNormalization", 6, nil, names(3)...),
			feeds(zeros(t, 1, 1, wide), zeros(t, 1), zeros(t, 1)), feeds(zeros(t, 1, 1, 4), zeros(t, 1), zeros(t, 1))},
		{"LRN output", oneNode(t, "LRN", 13, map[string]graph.Attr{"size": attrInt(3)}, "a"),
			feeds(zeros(t, 1, 1, wide)), feeds(zeros(t, 1, 1, 4))},
		{"LpNormalization output", oneNode(t, "LpNormalization", 1, nil, "a"),
			feeds(zeros(t, 1, wide)), feeds(zeros(t, 1, 4))},
		// y (800 kB) was counted; the table mapping the block to the
		// broadcast scale (1.6 MB) was not.
		{"LayerNormalization scale table", oneNode(t, "LayerNormalization", 17, nil, "a", "b"),
			feeds(zeros(t, 1, 200_000), zeros(t, 1)), feeds(zeros(t, 1, 4), zeros(t, 1))},
	})
}

func TestBudgetCountsLoss(t *testing.T) {
	int64Targets := func(n int) inference.Tensor { return tensorOf(t, []int{n}, make([]int64, n)...) }
	int32Targets := func(n int) inference.Tensor { return tensorOf(t, []int{n}, make([]int32, n)...) }
	runBudgetCases(t, []budgetCase{
		{"NegativeLogLikelihoodLoss losses",
			oneNode(t, "NegativeLogLikelihoodLoss", 13, map[string]graph.Attr{"reduction": attrString("none")}, "a", "b"),
			feeds(zeros(t, 300_000, 1), int64Targets(300_000)), feeds(zeros(t, 4, 1), int64Targets(4))},
		{"NegativeLogLikelihoodLoss int32 targets widened",
			oneNode(t, "NegativeLogLikelihoodLoss", 13, map[string]graph.Attr{"reduction": attrString("sum")}, "a", "b"),
			feeds(zeros(t, 200_000, 1), int32Targets(200_000)), feeds(zeros(t, 4, 1), int32Targets(4))},
	})
}

func TestBudgetCountsSortAndSearch(t *testing.T) {
	allFalse := func(n int) inference.Tensor { return tensorOf(t, []int{n}, make([]bool, n)...) }
	runBudgetCases(t, []budgetCase{
		// 20,000 distinct values: the counted tables (960 kB) passed, the
		// outputs and the group tables (560 kB) were not counted.
		{"Unique outputs", oneNode(t, "Unique", 11, nil, "a"),
			feeds(counting(t, 20_000)), feeds(counting(t, 4))},
		// The slices along axis 1 gathered from 200,000 rows (1.6 MB).
		{"Unique slices", oneNode(t, "Unique", 11, map[string]graph.Attr{"axis": attrInt(1)}, "a"),
			feeds(counting(t, 200_000, 2)), feeds(counting(t, 4, 2))},
		{"NonZero mask", oneNode(t, "NonZero", 13, nil, "a"),
			feeds(allFalse(2_000_000)), feeds(allFalse(4))},
		{"ArgMax indices", oneNode(t, "ArgMax", 13, map[string]graph.Attr{"axis": attrInt(1)}, "a"),
			feeds(tensorOf(t, []int{200_000, 1}, make([]uint8, 200_000)...)), feeds(tensorOf(t, []int{4, 1}, make([]uint8, 4)...))},
	})
}

func TestBudgetCountsIndexTables(t *testing.T) {
	const n = 200_000 // 1.6 MB of int
	at0 := func(shape ...int) inference.Tensor {
		return tensorOf(t, shape, make([]int64, limit.Count(shape...))...)
	}
	allFalse := func(n int) inference.Tensor { return tensorOf(t, []int{n}, make([]bool, n)...) }
	// Every update goes to data's one element: the output is 4 bytes, the
	// offsets table n ints.
	runBudgetCases(t, []budgetCase{
		{"ScatterElements offsets", oneNode(t, "ScatterElements", 13, nil, names(3)...),
			feeds(zeros(t, 1), at0(n), zeros(t, n)), feeds(zeros(t, 1), at0(4), zeros(t, 4))},
		{"ScatterND offsets", oneNode(t, "ScatterND", 13, nil, names(3)...),
			feeds(zeros(t, 1), at0(n, 1), zeros(t, n)), feeds(zeros(t, 1), at0(4, 1), zeros(t, 4))},
		// A false condition selects nothing; it is widened to int64.
		{"Compress condition", oneNode(t, "Compress", 11, nil, "a", "b"),
			feeds(zeros(t, n), allFalse(n)), feeds(zeros(t, 4), allFalse(4))},
	})
}

// The window's offsets, gathered and built (1 MB of scratch), beside its
// taps (200 kB), on the general path: a 1-D pool (2-D pools take the row
// paths, maxPool2D and avgPool2D, whose padded row and taps a 50,000-wide
// window keeps under the budget).
func TestBudgetCountsPoolTables(t *testing.T) {
	pool1D := func(k int) *graph.Graph {
		return oneNode(t, "AveragePool", 12, map[string]graph.Attr{"kernel_shape": attrInts(int64(k))}, "a")
	}
	checkBudget(t, pool1D(25_000), feeds(zeros(t, 1, 1, 25_000)), pool1D(3), feeds(zeros(t, 1, 1, 8)))
}

func TestBudgetCountsNonMaxSuppressionTables(t *testing.T) {
	// Identical boxes: one is kept, but the candidates and the room for
	// the kept ones are as many as the boxes (32 bytes each).
	boxes := func(n int) map[string]inference.Tensor {
		b := make([]float32, 4*n)
		for i := range n {
			copy(b[4*i:], []float32{0, 0, 1, 1})
		}
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = 0.5
		}
		return feeds(tensorOf(t, []int{1, n, 4}, b...), tensorOf(t, []int{1, 1, n}, scores...),
			tensorOf(t, []int{1}, int64(n)), tensorOf(t, []int{1}, float32(0.5)))
	}
	runBudgetCases(t, []budgetCase{
		{"NonMaxSuppression", oneNode(t, "NonMaxSuppression", 11, nil, names(4)...), boxes(40_000), boxes(3)},
	})
}

// scanGraph is a Scan node over a body whose outputs out are Identity
// nodes of its first inputs in, reading the graph inputs scanIn (a
// leading "" leaves Scan-8's sequence_lens out).
func scanGraph(t *testing.T, opset int64, scans int, in, out, scanIn []string) *graph.Graph {
	t.Helper()
	body := &graph.Graph{Name: "body", Opsets: map[string]int64{"": opset}, Initializers: map[string]inference.Tensor{}}
	for _, name := range in {
		body.Inputs = append(body.Inputs, graph.Value{Name: name})
	}
	for i, name := range out {
		body.Outputs = append(body.Outputs, graph.Value{Name: name})
		body.Nodes = append(body.Nodes, &graph.Node{Name: "copy" + in[i], OpType: "Identity", Inputs: []string{in[i]}, Outputs: []string{name}})
	}
	if err := body.Sort(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	g := oneNode(t, "Scan", opset, map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}, "num_scan_inputs": attrInt(int64(scans))}, scanIn...)
	g.Inputs = nil
	for _, name := range scanIn {
		if name != "" {
			g.Inputs = append(g.Inputs, graph.Value{Name: name})
		}
	}
	return g
}

func TestBudgetCountsScan(t *testing.T) {
	runBudgetCases(t, []budgetCase{
		// Two batch entries of 100 steps of 500 floats (400 kB in all):
		// the scan outputs each entry keeps and stacks (870 kB) were
		// counted, the batch's stack of them (400 kB) was not.
		{"Scan-8 stacked outputs", scanGraph(t, 8, 1, []string{"x"}, []string{"y"}, []string{"", "a"}),
			feeds(zeros(t, 2, 100, 500)), feeds(zeros(t, 1, 2, 2))},
		// 100,000 steps without elements, and no scan output: the records
		// of the steps (4.8 MB).
		{"Scan steps without elements", scanGraph(t, 11, 1, []string{"s", "x"}, []string{"y"}, []string{"a", "b"}),
			feeds(zeros(t, 1), zeros(t, 100_000, 0)), feeds(zeros(t, 1), zeros(t, 2, 3))},
	})
}

func TestBudgetCountsSequences(t *testing.T) {
	// SequenceConstruct of k empty tensors, and its length.
	construct := func(k int) *graph.Graph {
		in := make([]string, k)
		for i := range in {
			in[i] = fmt.Sprint("x", i)
		}
		return graphOf(t, 13, []*graph.Node{
			{Name: "seq", OpType: "SequenceConstruct", Inputs: in, Outputs: []string{"s"}},
			{Name: "len", OpType: "SequenceLength", Inputs: []string{"s"}, Outputs: []string{"y"}},
		}, in...)
	}
	empties := func(k int) map[string]inference.Tensor {
		f := map[string]inference.Tensor{}
		for i := range k {
			f[fmt.Sprint("x", i)] = zeros(t, 0)
		}
		return f
	}
	for _, tc := range []struct {
		name string
		g    *graph.Graph
		f    map[string]inference.Tensor
		ok   bool
	}{
		// 30,000 records and shapes (1.9 MB), of tensors without
		// elements.
		{"SequenceConstruct records", construct(30_000), empties(30_000), false},
		{"SequenceConstruct records, few", construct(3), empties(3), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runLimited(t, tc.g, budgetTestBytes, tc.f)
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, inference.ErrResourceExhausted) {
				t.Errorf("got %v, want success %v", err, tc.ok)
			}
		})
	}
	// ConcatFromSequence's concatenation (1.2 MB) counts under the run's
	// budget.
	concat := graphOf(t, 13, []*graph.Node{
		{Name: "seq", OpType: "SequenceConstruct", Inputs: []string{"a", "b"}, Outputs: []string{"s"}},
		{Name: "cat", OpType: "ConcatFromSequence", Inputs: []string{"s"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{"axis": attrInt(0)}},
	}, "a", "b")
	runBudgetCases(t, []budgetCase{
		{"ConcatFromSequence", concat, feeds(zeros(t, 150_000), zeros(t, 150_000)), feeds(zeros(t, 2), zeros(t, 2))},
	})
}

package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Benchmarks of the tree ensembles on models of the usual shapes, through
// a compiled model as a pipeline runs it; each reports ns/row. Run them
// at one and two threads with
//
//	go test -run '^$' -bench TreeEnsemble -cpu 1,2 ./inference/cpu/

// randomForest is a TreeEnsembleRegressor of trees trees over features
// features, as scikit-learn's RandomForestRegressor(max_depth=depth)
// writes one (BRANCH_LEQ, one weight per leaf, each over the number of
// trees, SUM): each node above depth splits with probability split (the
// top three levels always), on a random feature at a threshold drawn as
// the features are, N(0, 1).
func randomForest(rng *rand.Rand, trees, depth, features int, split float64) *graph.Node {
	b := newTreeBuilder()
	for t := range trees {
		b.tree(rng, t, depth, features, split, "BRANCH_LEQ", false)
	}
	n := b.node("TreeEnsembleRegressor", "target_")
	for i := range n.Attrs["target_weights"].Floats {
		n.Attrs["target_weights"].Floats[i] /= float32(trees)
	}
	n.Attrs["n_targets"] = attrInt(1)
	return n
}

// gradientBoosted is a binary TreeEnsembleClassifier of rounds trees of
// depth depth, as onnxmltools writes an XGBClassifier (BRANCH_LT, NaN to
// the true branch, one score per leaf for class 0, a base value,
// LOGISTIC).
func gradientBoosted(rng *rand.Rand, rounds, depth, features int) *graph.Node {
	b := newTreeBuilder()
	for t := range rounds {
		b.tree(rng, t, depth, features, 0.85, "BRANCH_LT", true)
	}
	n := b.node("TreeEnsembleClassifier", "class_")
	n.Attrs["classlabels_int64s"] = attrInts(0, 1)
	n.Attrs["post_transform"] = attrString("LOGISTIC")
	n.Attrs["base_values"] = attrFloats(-0.2)
	return n
}

// treeBuilder collects the legacy attributes of trees.
type treeBuilder struct {
	ints   map[string][]int64
	floats map[string][]float32
	modes  []string
}

func newTreeBuilder() *treeBuilder {
	return &treeBuilder{ints: map[string][]int64{}, floats: map[string][]float32{}}
}

func (b *treeBuilder) tree(rng *rand.Rand, t, depth, features int, split float64, mode string, missingTrue bool) {
	next := int64(0)
	var grow func(d int) int64
	grow = func(d int) int64 {
		id := next
		next++
		at := len(b.modes)
		b.ints["nodes_treeids"] = append(b.ints["nodes_treeids"], int64(t))
		b.ints["nodes_nodeids"] = append(b.ints["nodes_nodeids"], id)
		if d == depth || d >= 3 && rng.Float64() > split {
			b.modes = append(b.modes, "LEAF")
			b.ints["nodes_featureids"] = append(b.ints["nodes_featureids"], 0)
			b.ints["nodes_truenodeids"] = append(b.ints["nodes_truenodeids"], 0)
			b.ints["nodes_falsenodeids"] = append(b.ints["nodes_falsenodeids"], 0)
			b.ints["nodes_missing_value_tracks_true"] = append(b.ints["nodes_missing_value_tracks_true"], 0)
			b.floats["nodes_values"] = append(b.floats["nodes_values"], 0)
			b.ints["w_treeids"] = append(b.ints["w_treeids"], int64(t))
			b.ints["w_nodeids"] = append(b.ints["w_nodeids"], id)
			b.ints["w_ids"] = append(b.ints["w_ids"], 0)
			b.floats["w_weights"] = append(b.floats["w_weights"], float32(rng.NormFloat64()))
			return id
		}
		b.modes = append(b.modes, mode)
		b.ints["nodes_featureids"] = append(b.ints["nodes_featureids"], int64(rng.IntN(features)))
		b.ints["nodes_missing_value_tracks_true"] = append(b.ints["nodes_missing_value_tracks_true"], map[bool]int64{true: 1}[missingTrue])
		b.floats["nodes_values"] = append(b.floats["nodes_values"], float32(rng.NormFloat64()))
		b.ints["nodes_truenodeids"] = append(b.ints["nodes_truenodeids"], 0)
		b.ints["nodes_falsenodeids"] = append(b.ints["nodes_falsenodeids"], 0)
		tr := grow(d + 1)
		fa := grow(d + 1)
		b.ints["nodes_truenodeids"][at], b.ints["nodes_falsenodeids"][at] = tr, fa
		return id
	}
	grow(0)
}

// node is the node of the trees built, its weights' attributes named
// with prefix (target_ or class_).
func (b *treeBuilder) node(op, prefix string) *graph.Node {
	attrs := map[string]graph.Attr{"nodes_modes": attrStrings(b.modes...)}
	for name, v := range b.ints {
		if name[:2] == "w_" {
			name = prefix + name[2:]
		}
		attrs[name] = attrInts(v...)
	}
	for name, v := range b.floats {
		if name[:2] == "w_" {
			name = prefix + name[2:]
		}
		attrs[name] = attrFloats(v...)
	}
	outs := []string{"y"}
	if op == "TreeEnsembleClassifier" {
		outs = []string{"label", "y"}
	}
	return &graph.Node{Name: "trees", OpType: op, Domain: MLDomain, Inputs: []string{"x"}, Outputs: outs, Attrs: attrs}
}

// compileTrees compiles the graph of node n on an input x of features
// columns.
func compileTrees(tb testing.TB, n *graph.Node, features int) inference.Model {
	tb.Helper()
	g := &graph.Graph{
		Name:         "trees",
		Opsets:       map[string]int64{"": 15, MLDomain: 3},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, features}}},
		Outputs:      []graph.Value{{Name: "y", DType: inference.Float32}},
		Nodes:        []*graph.Node{n},
		Initializers: map[string]inference.Tensor{},
	}
	if err := g.Sort(nil); err != nil {
		tb.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func benchmarkTrees(b *testing.B, n *graph.Node, features, rows int) {
	m := compileTrees(b, n, features)
	rng := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, rows*features)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	feeds := map[string]inference.Tensor{"x": must(inference.New([]int{rows, features}, x))}
	ctx := context.Background()
	if _, err := m.Run(ctx, feeds); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Run(ctx, feeds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkTreeEnsembleRandomForest: 500 trees of depth 10 over 50
// features, 10,000 rows.
func BenchmarkTreeEnsembleRandomForest(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	benchmarkTrees(b, randomForest(rng, 500, 10, 50, 0.9), 50, 10_000)
}

// BenchmarkTreeEnsembleGradientBoosted: 300 rounds of depth 6 over 50
// features, 10,000 rows.
func BenchmarkTreeEnsembleGradientBoosted(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	benchmarkTrees(b, gradientBoosted(rng, 300, 6, 50), 50, 10_000)
}

//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/kernels"
)

// Random tree ensembles on the simulated device against the CPU backend:
// every branch mode with and without missing-value tracking, member sets,
// one-leaf trees, leaves of no, one and several weights, each aggregate
// and post transform, regressors, binary classifiers (one class id or
// two, positive or signed weights, zero, one or two base values) and
// multi-class ones, on rows of thresholds, their float32 neighbours, NaN
// and infinities, in float32 and float64, with float and double
// thresholds. Each node must run on the device, in two launches.
//
// Labels must be equal. The weights of the classifiers are multiples of
// 1/8, whose sums are exact in any order, so that the rows whose classes
// tie, which are many, check the tie rules rather than rounding. Scores
// must be within |Δ| ≤ treeATol + treeRTol·|want|: both backends sum in
// float64, but a launch splits the trees into lanes (blocks of trees)
// whose sums it adds in turn, which rounds differently from the CPU
// backend's tree-by-tree sum (by about n·2⁻⁵³ of the sum of |w|, n the
// trees, far below float32's 2⁻²⁴ once rounded to float32), and the
// transforms' exp and log are the C library's, within an ulp of Go's.
// Where the ensemble has one lane, the sums are the CPU backend's bit for
// bit.
const (
	treeRTol = 1e-5
	treeATol = 1e-6
)

// treeValues are the thresholds and most of the row values.
func treeValues(rng *rand.Rand) []float32 {
	values := []float32{0, 1, -1, 0.5, 2.5, -3.75, 1e-3, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for range 8 {
		v := float32(rng.NormFloat64())
		values = append(values, v, math.Nextafter32(v, 10), math.Nextafter32(v, -10))
	}
	return values
}

// treeWeight is a random weight: a multiple of 1/8 in [−2, 2] (exact
// sums), or a normal one; positive keeps it ≥ 0.
func treeWeight(rng *rand.Rand, dyadic, positive bool) float32 {
	w := float32(rng.NormFloat64())
	if dyadic {
		w = float32(rng.IntN(33)-16) / 8
	}
	if positive && w < 0 {
		w = -w
	}
	return w
}

func aInts(v ...int64) graph.Attr     { return graph.Attr{Type: graph.AttrInts, Ints: v} }
func aInt(v int64) graph.Attr         { return graph.Attr{Type: graph.AttrInt, Int: v} }
func aFloats(v ...float32) graph.Attr { return graph.Attr{Type: graph.AttrFloats, Floats: v} }
func aStrs(v ...string) graph.Attr    { return graph.Attr{Type: graph.AttrStrings, Strings: v} }
func aStr(v string) graph.Attr        { return graph.Attr{Type: graph.AttrString, String: v} }

func aTensor[T inference.Element](v ...T) graph.Attr {
	t, err := inference.New([]int{len(v)}, v)
	if err != nil {
		panic(err)
	}
	return graph.Attr{Type: graph.AttrTensor, Tensor: t}
}

// ensemble5 is a random TreeEnsemble (ml 5) of trees trees over features
// features: depths up to 10, every mode (member sets included), missing
// flags, one-leaf trees, one weight a leaf.
func ensemble5(rng *rand.Rand, trees, features, targets int, values []float32, attrs map[string]graph.Attr) *graph.Node {
	var feat, trues, tleaf, falses, fleaf, missing, roots, leafTargets []int64
	var modes []uint8
	var splits, weights, members []float32
	leaf := func() int64 {
		leafTargets = append(leafTargets, int64(rng.IntN(targets)))
		weights = append(weights, treeWeight(rng, rng.IntN(2) == 0, false))
		return int64(len(weights) - 1)
	}
	var grow func(depth, limit int) (int64, bool)
	grow = func(depth, limit int) (int64, bool) {
		if depth == limit || depth > 1 && rng.IntN(4) == 0 {
			return leaf(), true
		}
		at := len(feat)
		mode := uint8(rng.IntN(7))
		feat, modes = append(feat, int64(rng.IntN(features))), append(modes, mode)
		splits = append(splits, values[rng.IntN(len(values))])
		if mode == 6 {
			for range 1 + rng.IntN(3) {
				if v := values[rng.IntN(len(values))]; v == v {
					members = append(members, v)
				}
			}
			members = append(members, float32(math.NaN()))
		}
		missing = append(missing, int64(rng.IntN(2)))
		trues, tleaf, falses, fleaf = append(trues, 0), append(tleaf, 0), append(falses, 0), append(fleaf, 0)
		id, l := grow(depth+1, limit)
		trues[at], tleaf[at] = id, int64(b2i(l))
		id, l = grow(depth+1, limit)
		falses[at], fleaf[at] = id, int64(b2i(l))
		return int64(at), false
	}
	for range trees {
		if id, isLeaf := grow(0, rng.IntN(11)); isLeaf { // a node whose branches both lead to the leaf
			feat, modes, splits, missing = append(feat, 0), append(modes, 0), append(splits, 0), append(missing, 0)
			trues, tleaf, falses, fleaf = append(trues, id), append(tleaf, 1), append(falses, id), append(fleaf, 1)
			roots = append(roots, int64(len(feat)-1))
		} else {
			roots = append(roots, id)
		}
	}
	a := map[string]graph.Attr{
		"tree_roots": aInts(roots...), "nodes_featureids": aInts(feat...), "nodes_modes": aTensor(modes...),
		"nodes_splits": aTensor(splits...), "nodes_truenodeids": aInts(trues...), "nodes_trueleafs": aInts(tleaf...),
		"nodes_falsenodeids": aInts(falses...), "nodes_falseleafs": aInts(fleaf...),
		"nodes_missing_value_tracks_true": aInts(missing...),
		"leaf_targetids":                  aInts(leafTargets...), "leaf_weights": aTensor(weights...), "n_targets": aInt(int64(targets)),
	}
	if len(members) > 0 {
		a["membership_values"] = aTensor(members...)
	}
	for k, v := range attrs {
		a[k] = v
	}
	return &graph.Node{Name: "trees", OpType: "TreeEnsemble", Domain: cpu.MLDomain, Attrs: a}
}

// legacyTrees is a random TreeEnsembleRegressor or TreeEnsembleClassifier
// (ml 1): trees of depth up to 8 (a root may be a leaf), the modes
// BRANCH_LEQ … BRANCH_NEQ, nodes numbered in preorder. A leaf gets up to
// three weights, each of a target drawn by target (the classifiers' class
// ids), from weight.
func legacyTrees(rng *rand.Rand, op string, trees, features int, values []float32, target func() int64, weight func() float32) *graph.Node {
	modeNames := []string{"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"}
	var treeIDs, nodeIDs, feat, trues, falses, missing, wIDs, wNodes, wTrees []int64
	var modes []string
	var splits, weights []float32
	for t := range trees {
		next := int64(0)
		var grow func(depth, limit int) int64
		grow = func(depth, limit int) int64 {
			id := next
			next++
			at := len(treeIDs)
			treeIDs, nodeIDs = append(treeIDs, int64(t)), append(nodeIDs, id)
			feat, splits, missing = append(feat, int64(rng.IntN(features))), append(splits, values[rng.IntN(len(values))]), append(missing, int64(rng.IntN(2)))
			trues, falses = append(trues, 0), append(falses, 0)
			if depth == limit || depth > 0 && rng.IntN(4) == 0 {
				modes = append(modes, "LEAF")
				for range rng.IntN(4) {
					wIDs, wNodes, wTrees = append(wIDs, target()), append(wNodes, id), append(wTrees, int64(t))
					weights = append(weights, weight())
				}
				return id
			}
			modes = append(modes, modeNames[rng.IntN(len(modeNames))])
			trues[at] = grow(depth+1, limit)
			falses[at] = grow(depth+1, limit)
			return id
		}
		grow(0, rng.IntN(9))
	}
	prefix := "target_"
	if op == "TreeEnsembleClassifier" {
		prefix = "class_"
	}
	a := map[string]graph.Attr{
		"nodes_treeids": aInts(treeIDs...), "nodes_nodeids": aInts(nodeIDs...), "nodes_featureids": aInts(feat...),
		"nodes_modes": aStrs(modes...), "nodes_values": aFloats(splits...), "nodes_truenodeids": aInts(trues...),
		"nodes_falsenodeids": aInts(falses...), "nodes_missing_value_tracks_true": aInts(missing...),
		prefix + "ids": aInts(wIDs...), prefix + "nodeids": aInts(wNodes...), prefix + "treeids": aInts(wTrees...),
		prefix + "weights": aFloats(weights...),
	}
	return &graph.Node{Name: "trees", OpType: op, Domain: cpu.MLDomain, Attrs: a}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// treeRows are rows rows of features values: mostly thresholds (so
// their neighbours), some NaN and infinities, in dtype (float64 rows
// sometimes between two float32s).
func treeRows(t *testing.T, rng *rand.Rand, dtype inference.DType, rows, features int, values []float32) inference.Tensor {
	t.Helper()
	x32 := make([]float32, rows*features)
	x64 := make([]float64, rows*features)
	for i := range x32 {
		x32[i] = values[rng.IntN(len(values))]
		x64[i] = float64(x32[i])
		if rng.IntN(5) == 0 {
			x64[i] += 1e-9
		}
	}
	var x inference.Tensor
	var err error
	if dtype == inference.Float64 {
		x, err = inference.New([]int{rows, features}, x64)
	} else {
		x, err = inference.New([]int{rows, features}, x32)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// treeGraph is a graph of node n on input x: outputs y (and label for a
// classifier, first, unless noLabel).
func treeGraph(n *graph.Node, x inference.DType, mlOpset int64, noLabel bool) func() *graph.Graph {
	return func() *graph.Graph {
		n := &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Attrs: n.Attrs, Inputs: []string{"x"}, Outputs: []string{"y"}}
		g := &graph.Graph{Name: n.OpType, Opsets: map[string]int64{"": 21, cpu.MLDomain: mlOpset}, Initializers: map[string]inference.Tensor{},
			Inputs: []graph.Value{{Name: "x", DType: x, Shape: []int{inference.Dynamic, inference.Dynamic}}},
			Nodes:  []*graph.Node{n}}
		switch {
		case n.OpType == "TreeEnsembleClassifier" && noLabel:
			n.Outputs = []string{"", "y"}
		case n.OpType == "TreeEnsembleClassifier":
			n.Outputs = []string{"label", "y"}
			g.Outputs = append(g.Outputs, graph.Value{Name: "label"})
		}
		g.Outputs = append(g.Outputs, graph.Value{Name: "y"})
		if err := g.Sort(nil); err != nil {
			panic(err)
		}
		return g
	}
}

// treeCase runs graph g on x on the CPU backend and twice on the
// simulated device (the second run replays a CUDA graph), and compares.
// It returns the largest relative difference of the scores (|Δ| over
// max(|want|, treeATol/treeRTol)).
func treeCase(t *testing.T, g func() *graph.Graph, x inference.Tensor, exact bool) float64 {
	t.Helper()
	return mlCase(t, g, x, exact, func(launched map[string]int) bool {
		return len(launched) == 2 && launched[treeKernel(launched)] == 1 && launched[kernels.TreeFinish] == 1
	}, "one tree_walk_* and one tree_finish")
}

// mlCase is treeCase for any graph of ai.onnx.ml nodes on input x, whose
// second run's launches must pass launches (described by wantLaunches). Labels
// and integers must be equal, floats equal when exact, else within
// |Δ| ≤ treeATol + treeRTol·|want|.
func mlCase(t *testing.T, g func() *graph.Graph, x inference.Tensor, exact bool, launches func(map[string]int) bool, wantLaunches string) float64 {
	t.Helper()
	ctx := context.Background()
	feeds := map[string]inference.Tensor{"x": x}
	want, m := cpuAndSimModel(t, g, feeds)
	if _, err := m.Run(ctx, feeds); err != nil {
		t.Fatal(err)
	}
	before := runner.Launched()
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	if host := m.(*cuda.Model).HostNodes(); len(host) > 0 {
		t.Fatalf("nodes on the host: %v (%v)", host, m.(*cuda.Model).Stats().HostNodes)
	}
	if launched := launchedSince(before); !launches(launched) {
		t.Errorf("launches %v; want %s", launched, wantLaunches)
	}
	worst := 0.0
	for name, w := range want {
		gt := got[name]
		if gt.DType() != w.DType() || !slices.Equal(gt.Shape(), w.Shape()) {
			t.Fatalf("%s: got %v, want %v", name, gt, w)
		}
		var gv, wv []float64
		switch w.DType() {
		case inference.Int64, inference.Int32:
			if !inference.Equal(w, gt) {
				t.Fatalf("%s: got %v, want %v", name, gt.Values(), w.Values())
			}
			continue
		case inference.Float32:
			a, _ := inference.Data[float32](gt)
			e, _ := inference.Data[float32](w)
			for i := range e {
				gv, wv = append(gv, float64(a[i])), append(wv, float64(e[i]))
			}
		case inference.Float64:
			gv, _ = inference.Data[float64](gt)
			wv, _ = inference.Data[float64](w)
		}
		for i := range wv {
			a, e := gv[i], wv[i]
			if a == e || a != a && e != e {
				continue
			}
			if exact || math.IsInf(a, 0) || math.IsInf(e, 0) || a != a || e != e || math.Abs(a-e) > treeATol+treeRTol*math.Abs(e) {
				t.Fatalf("%s: element %d: got %v, want %v (exact %v)", name, i, a, e, exact)
			}
			worst = max(worst, math.Abs(a-e)/max(math.Abs(e), treeATol/treeRTol))
		}
	}
	return worst
}

func treeKernel(launched map[string]int) string {
	for k := range launched {
		if strings.HasPrefix(k, "tree_walk_") {
			return k
		}
	}
	return ""
}

var (
	postTransforms = []string{"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"}
	aggregates     = []string{"AVERAGE", "SUM", "MIN", "MAX"}
	xTypes         = []inference.DType{inference.Float32, inference.Float64}
)

// TreeEnsemble (ml 5): each aggregate and post transform, one and three
// targets, float32 and float64 rows, float and double splits.
func TestTreeEnsembleMatchesCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 5))
	values := treeValues(rng)
	worst := 0.0
	for agg := range aggregates {
		for post := range postTransforms {
			for _, targets := range []int{1, 3} {
				for _, double := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/targets=%d/double=%v", aggregates[agg], postTransforms[post], targets, double)
					t.Run(name, func(t *testing.T) {
						const features = 6
						n := ensemble5(rng, 1+rng.IntN(40), features, targets, values, map[string]graph.Attr{
							"aggregate_function": aInt(int64(agg)), "post_transform": aInt(int64(post))})
						if double {
							s, _ := inference.Data[float32](n.Attrs["nodes_splits"].Tensor)
							d := make([]float64, len(s))
							for i, v := range s {
								d[i] = float64(v) + 1e-9*float64(i%3-1) // between the float32s
							}
							n.Attrs["nodes_splits"] = aTensor(d...)
						}
						for _, x := range xTypes {
							rows := []int{1, 37, 700}[rng.IntN(3)]
							worst = max(worst, treeCase(t, treeGraph(n, x, 5, false), treeRows(t, rng, x, rows, features, values), false))
						}
					})
				}
			}
		}
	}
	t.Logf("largest relative difference of a score: %.3g", worst)
}

// TreeEnsembleRegressor (ml 1): leaves of several weights and targets,
// base values, each aggregate and post transform.
func TestTreeEnsembleRegressorMatchesCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 6))
	values := treeValues(rng)
	for agg, aggName := range aggregates {
		for post, postName := range postTransforms {
			t.Run(aggName+"/"+postName, func(t *testing.T) {
				const features = 5
				targets := 1 + (agg+post)%3
				n := legacyTrees(rng, "TreeEnsembleRegressor", 1+rng.IntN(30), features, values,
					func() int64 { return int64(rng.IntN(targets)) }, func() float32 { return treeWeight(rng, false, false) })
				n.Attrs["n_targets"] = aInt(int64(targets))
				n.Attrs["aggregate_function"], n.Attrs["post_transform"] = aStr(aggName), aStr(postName)
				if post%2 == 0 {
					base := make([]float32, targets)
					for i := range base {
						base[i] = treeWeight(rng, false, false)
					}
					n.Attrs["base_values"] = aFloats(base...)
				}
				x := xTypes[post%2]
				treeCase(t, treeGraph(n, x, 1, false), treeRows(t, rng, x, 1+rng.IntN(400), features, values), false)
			})
		}
	}
}

// TreeEnsembleClassifier (ml 1): binary classifiers of one class id or
// two, positive or signed weights, zero, one or two base values; three
// and five classes with and without base values; each post transform.
func TestTreeEnsembleClassifierMatchesCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 7))
	values := treeValues(rng)
	type kind struct {
		classes, base int
		oneClass      int64 // the one class id, or −1
		positive      bool
	}
	var kinds []kind
	for _, base := range []int{0, 1, 2} {
		for _, oneClass := range []int64{-1, 0, 1} {
			for _, positive := range []bool{false, true} {
				kinds = append(kinds, kind{2, base, oneClass, positive})
			}
		}
	}
	kinds = append(kinds, kind{3, 0, -1, true}, kind{3, 3, -1, false}, kind{5, 0, -1, false}, kind{5, 5, -1, true})
	for _, k := range kinds {
		for _, post := range postTransforms {
			name := fmt.Sprintf("classes=%d/base=%d/oneclass=%d/positive=%v/%s", k.classes, k.base, k.oneClass, k.positive, post)
			t.Run(name, func(t *testing.T) {
				const features = 4
				target := func() int64 { return int64(rng.IntN(k.classes)) }
				if k.oneClass >= 0 {
					target = func() int64 { return k.oneClass }
				}
				n := legacyTrees(rng, "TreeEnsembleClassifier", 1+rng.IntN(30), features, values, target,
					func() float32 { return treeWeight(rng, true, k.positive) })
				labels := make([]int64, k.classes)
				for i := range labels {
					labels[i] = int64(10*i - 7)
				}
				n.Attrs["classlabels_int64s"], n.Attrs["post_transform"] = aInts(labels...), aStr(post)
				if k.base > 0 {
					base := make([]float32, k.base)
					for i := range base {
						base[i] = treeWeight(rng, true, false)
					}
					n.Attrs["base_values"] = aFloats(base...)
				}
				x := xTypes[rng.IntN(2)]
				rows := treeRows(t, rng, x, 1+rng.IntN(500), features, values)
				treeCase(t, treeGraph(n, x, 1, false), rows, false)
				treeCase(t, treeGraph(n, x, 1, true), rows, false) // the label not used
			})
		}
	}
}

// With one lane (one tree, or as many rows as fill the device) the
// device sums as the CPU backend does: equal scores, bit for bit.
func TestTreeEnsembleOneLaneIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 8))
	values := treeValues(rng)
	for _, tc := range []struct {
		trees, rows int
	}{{1, 500}, {6, 1 << 15}} {
		n := legacyTrees(rng, "TreeEnsembleRegressor", tc.trees, 5, values,
			func() int64 { return int64(rng.IntN(2)) }, func() float32 { return treeWeight(rng, false, false) })
		n.Attrs["n_targets"] = aInt(2)
		treeCase(t, treeGraph(n, inference.Float32, 1, false), treeRows(t, rng, inference.Float32, tc.rows, 5, values), true)
	}
}

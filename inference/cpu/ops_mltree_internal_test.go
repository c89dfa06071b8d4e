package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The tree ensembles' conventions on small trees, the expected values
// worked out by hand from ONNX's operator documents and ONNX Runtime's
// rules (opsem/mltree.go says which); then random ensembles in every
// layout against a walk of the ensemble node by node.

// teLayouts are the layouts a test runs each ensemble in: the chosen
// one, and every tree perfect (where its depth allows), pointer or
// general.
var teLayouts = map[string]func(depth, nodes int, general bool) uint8{
	"chosen":  teChooseLayout,
	"perfect": func(int, int, bool) uint8 { return tePerfect },
	"pointer": func(int, int, bool) uint8 { return tePointer },
	"general": func(int, int, bool) uint8 { return teGeneral },
}

// teNodeOf is a node of op in ai.onnx.ml with attrs, reading x.
func teNodeOf(op string, attrs map[string]graph.Attr) opsem.Node {
	outs := []string{"y"}
	if op == "TreeEnsembleClassifier" {
		outs = []string{"label", "y"}
	}
	return opsem.Node{Node: &graph.Node{Name: "trees", OpType: op, Domain: MLDomain, Inputs: []string{"x"}, Outputs: outs, Attrs: attrs}, Opset: 3}
}

// runTrees runs n on x in every layout, prepared and not, with a Memo
// (twice, the second reusing the plan) and without, requires the same
// outputs from all, and returns them.
func runTrees(t *testing.T, n opsem.Node, x inference.Tensor) []inference.Tensor {
	t.Helper()
	var first []inference.Tensor
	check := func(how string, out []inference.Tensor) {
		t.Helper()
		if first == nil {
			first = out
			return
		}
		for j := range first {
			if !inference.Equal(out[j], first[j]) {
				t.Fatalf("%s: output %d is %v, where the first run gave %v", how, j, out[j], first[j])
			}
		}
	}
	e, err := opsem.TreeEnsembleOf(n)
	if err != nil {
		t.Fatal(err)
	}
	for name, choose := range teLayouts {
		e, _ := opsem.TreeEnsembleOf(n)
		m, err := teCompile(e, choose)
		if err != nil {
			t.Fatal(err)
		}
		pn := n
		pn.Prepared = m
		for run := range 2 {
			pn.Memo = &opsem.Memo{}
			if run == 1 {
				pn.Memo = nil
			}
			for range 2 {
				out, err := callKernel(teKernel, pn, []inference.Tensor{x})
				if err != nil {
					t.Fatalf("layout %s: %v", name, err)
				}
				check("layout "+name, slices.Clone(out))
			}
		}
	}
	out, err := callKernel(teKernel, n, []inference.Tensor{x}) // not prepared: compiled at run
	if err != nil {
		t.Fatal(err)
	}
	check("not prepared", out)
	_ = e
	return first
}

// wantFloats fails t unless got's elements are want's, within rtol 1e-4
// and atol 1e-5 (exact where want holds an infinity or NaN).
func wantFloats(t *testing.T, what string, got inference.Tensor, want []float64) {
	t.Helper()
	var g []float64
	switch got.DType() {
	case inference.Float32:
		for _, v := range dataOf[float32](got) {
			g = append(g, float64(v))
		}
	case inference.Float64:
		g = dataOf[float64](got)
	case inference.Float16:
		for _, v := range dataOf[inference.Half](got) {
			g = append(g, float64(v.Float32()))
		}
	default:
		t.Fatalf("%s: %v is not a float tensor", what, got)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %v, want %d values %v", what, got, len(want), want)
	}
	for i, w := range want {
		if !(math.Abs(g[i]-w) <= 1e-5+1e-4*math.Abs(w)) && !(g[i] == w) && !(w != w && g[i] != g[i]) {
			t.Fatalf("%s: element %d is %v, want %v (all: %v, want %v)", what, i, g[i], w, g, want)
		}
	}
}

func tensorAttr[T inference.Element](v ...T) graph.Attr {
	t, err := inference.New([]int{len(v)}, v)
	if err != nil {
		panic(err)
	}
	return graph.Attr{Type: graph.AttrTensor, Tensor: t}
}

func column[T inference.Element](t *testing.T, v ...T) inference.Tensor {
	return tensorOf(t, []int{len(v), 1}, v...)
}

// stump5 is a TreeEnsemble of one node testing x0 with mode against 1
// (members {1, 1.5} for BRANCH_MEMBER): its true branch gives 10, its
// false branch 20.
func stump5(mode uint8, missingTrue int64, split graph.Attr) opsem.Node {
	n := teNodeOf("TreeEnsemble", map[string]graph.Attr{
		"tree_roots": attrInts(0), "nodes_featureids": attrInts(0), "nodes_modes": tensorAttr(mode),
		"nodes_splits":      split,
		"nodes_truenodeids": attrInts(0), "nodes_trueleafs": attrInts(1),
		"nodes_falsenodeids": attrInts(1), "nodes_falseleafs": attrInts(1),
		"nodes_missing_value_tracks_true": attrInts(missingTrue),
		"leaf_targetids":                  attrInts(0, 0), "leaf_weights": tensorAttr[float32](10, 20),
		"n_targets": attrInt(1),
	})
	if mode == 6 {
		n.Attrs["membership_values"] = tensorAttr[float32](1, 1.5)
	}
	return n
}

// Each mode at the threshold, the floats next to it, NaN and the
// infinities, in float32 and float64, with NaN sent to the false branch
// (missing_value_tracks_true 0: BRANCH_NEQ's comparison is true for NaN)
// and to the true one (1).
func TestTreeEnsembleBranchModes(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	below, above := float64(math.Nextafter32(1, 0)), float64(math.Nextafter32(1, 2))
	xs := []float64{0.5, below, 1, above, 1.5, nan, -inf, inf}
	const T, F = 10, 20
	for mode, want := range map[uint8][]float64{
		0: {T, T, T, F, F, F, T, F}, // LEQ
		1: {T, T, F, F, F, F, T, F}, // LT
		2: {F, F, T, T, T, F, F, T}, // GTE
		3: {F, F, F, T, T, F, F, T}, // GT
		4: {F, F, T, F, F, F, F, F}, // EQ
		5: {T, T, F, T, T, T, T, T}, // NEQ
		6: {F, F, T, F, T, F, F, F}, // MEMBER {1, 1.5}
	} {
		for _, missingTrue := range []int64{0, 1} {
			w := slices.Clone(want)
			if missingTrue == 1 {
				w[5] = T
			}
			n := stump5(mode, missingTrue, tensorAttr[float32](1))
			x32 := make([]float32, len(xs))
			for i, v := range xs {
				x32[i] = float32(v)
			}
			name := fmt.Sprintf("mode %d, missing_value_tracks_true %d", mode, missingTrue)
			wantFloats(t, name+", float32", runTrees(t, n, column(t, x32...))[0], w)
			wantFloats(t, name+", float64", runTrees(t, n, column(t, xs...))[0], w)
		}
	}
}

// The type a row is compared in: float64 when the thresholds or the
// input are double, float32 otherwise, an int64 or int32 feature rounded
// to float32 first, as ONNX Runtime does. The rows sit at the thresholds,
// where the two disagree.
func TestTreeEnsembleCompareType(t *testing.T) {
	regressor := func(values graph.Attr, name string) opsem.Node {
		return teNodeOf("TreeEnsembleRegressor", map[string]graph.Attr{
			"nodes_treeids": attrInts(0, 0, 0), "nodes_nodeids": attrInts(0, 1, 2), "nodes_featureids": attrInts(0, 0, 0),
			"nodes_modes": attrStrings("BRANCH_LEQ", "LEAF", "LEAF"), name: values,
			"nodes_truenodeids": attrInts(1, 0, 0), "nodes_falsenodeids": attrInts(2, 0, 0),
			"target_treeids": attrInts(0, 0), "target_nodeids": attrInts(1, 2), "target_ids": attrInts(0, 0),
			"target_weights": attrFloats(10, 20), "n_targets": attrInt(1),
		})
	}
	// A double threshold of 0.1: float32(0.1) is above it.
	n := regressor(tensorAttr(0.1, 0, 0), "nodes_values_as_tensor")
	wantFloats(t, "double threshold, float input", runTrees(t, n, column(t, float32(0.1), float32(0.09)))[0], []float64{20, 10})
	wantFloats(t, "double threshold, double input", runTrees(t, n, column(t, 0.1, float64(float32(0.1))))[0], []float64{10, 20})
	// A float threshold of 0.1 (0.100000001490116…) and double rows just
	// above it, which float32 would round onto it.
	n = regressor(attrFloats(0.1, 0, 0), "nodes_values")
	justAbove := math.Nextafter(float64(float32(0.1)), 1)
	wantFloats(t, "float threshold, double input", runTrees(t, n, column(t, 0.1, float64(float32(0.1)), justAbove))[0], []float64{10, 10, 20})
	// 2²⁴+1 rounds to 2²⁴ in float32, at the threshold: the true branch.
	n = regressor(attrFloats(1<<24, 0, 0), "nodes_values")
	wantFloats(t, "int64 input", runTrees(t, n, column[int64](t, 1<<24+1, 1<<24+3))[0], []float64{10, 20})
	wantFloats(t, "int32 input", runTrees(t, n, column[int32](t, 1<<24+1, 1<<24+3))[0], []float64{10, 20})
	wantFloats(t, "double input", runTrees(t, n, column[float64](t, 1<<24+1))[0], []float64{20})
}

// threeStumps is a TreeEnsembleRegressor of two targets and three trees
// of one node each (x0 ≤ 0): tree 0 gives (1, 10) or (2, 20), tree 1
// gives target 0 4 or 8, tree 2 target 0 −3 or −6; target 1 gets only
// tree 0's weights.
func threeStumps(attrs map[string]graph.Attr) opsem.Node {
	a := map[string]graph.Attr{
		"nodes_treeids": attrInts(0, 0, 0, 1, 1, 1, 2, 2, 2), "nodes_nodeids": attrInts(0, 1, 2, 0, 1, 2, 0, 1, 2),
		"nodes_featureids":  attrInts(0, 0, 0, 0, 0, 0, 0, 0, 0),
		"nodes_modes":       attrStrings("BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF", "LEAF"),
		"nodes_values":      attrFloats(0, 0, 0, 0, 0, 0, 0, 0, 0),
		"nodes_truenodeids": attrInts(1, 0, 0, 1, 0, 0, 1, 0, 0), "nodes_falsenodeids": attrInts(2, 0, 0, 2, 0, 0, 2, 0, 0),
		"target_treeids": attrInts(0, 0, 0, 0, 1, 1, 2, 2), "target_nodeids": attrInts(1, 1, 2, 2, 1, 2, 1, 2),
		"target_ids": attrInts(0, 1, 0, 1, 0, 0, 0, 0), "target_weights": attrFloats(1, 10, 2, 20, 4, 8, -3, -6),
		"n_targets": attrInt(2),
	}
	for k, v := range attrs {
		a[k] = v
	}
	return teNodeOf("TreeEnsembleRegressor", a)
}

// SUM, AVERAGE (over all three trees, also for the target only one tree
// reaches), MIN and MAX, each with base values added after.
func TestTreeEnsembleAggregates(t *testing.T) {
	x := column[float32](t, -1, 1) // the true branches, then the false ones
	for _, tc := range []struct {
		agg  string
		want []float64
	}{
		{"SUM", []float64{1 + 4 - 3, 10, 2 + 8 - 6, 20}},
		{"AVERAGE", []float64{2.0 / 3, 10.0 / 3, 4.0 / 3, 20.0 / 3}},
		{"MIN", []float64{-3, 10, -6, 20}},
		{"MAX", []float64{4, 10, 8, 20}},
	} {
		n := threeStumps(map[string]graph.Attr{"aggregate_function": attrString(tc.agg)})
		wantFloats(t, tc.agg, runTrees(t, n, x)[0], tc.want)
		n = threeStumps(map[string]graph.Attr{"aggregate_function": attrString(tc.agg), "base_values": attrFloats(100, 1000)})
		want := slices.Clone(tc.want)
		for i := range want {
			want[i] += []float64{100, 1000}[i%2]
		}
		wantFloats(t, tc.agg+" with base values", runTrees(t, n, x)[0], want)
	}
	// A target no leaf reaches is 0 (then its base value) for MIN and
	// MAX, as for SUM.
	n := teNodeOf("TreeEnsemble", map[string]graph.Attr{
		"tree_roots": attrInts(0), "nodes_featureids": attrInts(0), "nodes_modes": tensorAttr[uint8](0),
		"nodes_splits": tensorAttr[float32](0), "nodes_truenodeids": attrInts(0), "nodes_trueleafs": attrInts(1),
		"nodes_falsenodeids": attrInts(0), "nodes_falseleafs": attrInts(1),
		"leaf_targetids": attrInts(1), "leaf_weights": tensorAttr[float32](-5), "n_targets": attrInt(2), "aggregate_function": attrInt(2),
	})
	wantFloats(t, "MIN, target 0 unreached", runTrees(t, n, column[float32](t, 3))[0], []float64{0, -5})
}

// The post transforms of a regressor's two scores (SUM of threeStumps:
// 2 and 10 for x = −1, 4 and 20 for x = 1), and of a score of one target.
func TestTreeEnsemblePostTransforms(t *testing.T) {
	x := column[float32](t, -1, 1)
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	softmax := []float64{1 / (1 + math.Exp(8)), 1 / (1 + math.Exp(-8)), 1 / (1 + math.Exp(16)), 1 / (1 + math.Exp(-16))}
	for _, tc := range []struct {
		post string
		want []float64
	}{
		{"NONE", []float64{2, 10, 4, 20}},
		{"LOGISTIC", []float64{sigmoid(2), sigmoid(10), sigmoid(4), sigmoid(20)}},
		{"SOFTMAX", softmax},
		{"SOFTMAX_ZERO", softmax},
	} {
		n := threeStumps(map[string]graph.Attr{"post_transform": attrString(tc.post)})
		wantFloats(t, tc.post, runTrees(t, n, x)[0], tc.want)
	}
	// SOFTMAX_ZERO leaves a zero score out: base values −2 and −20 make
	// the scores [0, −10] and [2, 0]; a zero stays 0·e^−max.
	n := threeStumps(map[string]graph.Attr{"post_transform": attrString("SOFTMAX_ZERO"), "base_values": attrFloats(-2, -20)})
	wantFloats(t, "SOFTMAX_ZERO with a zero", runTrees(t, n, x)[0], []float64{0, 1, 1, 0})
	// PROBIT, √2·erfinv(2s − 1), of scores 0.3 and 0.9 (one target, the
	// AVERAGE of stumps giving 0.3 or 0.9), erfinv as ONNX Runtime
	// approximates it (winitzki).
	n = teNodeOf("TreeEnsemble", map[string]graph.Attr{
		"tree_roots": attrInts(0), "nodes_featureids": attrInts(0), "nodes_modes": tensorAttr[uint8](0),
		"nodes_splits": tensorAttr[float32](0), "nodes_truenodeids": attrInts(0), "nodes_trueleafs": attrInts(1),
		"nodes_falsenodeids": attrInts(1), "nodes_falseleafs": attrInts(1),
		"leaf_targetids": attrInts(0, 0), "leaf_weights": tensorAttr[float32](0.3, 0.9), "n_targets": attrInt(1), "post_transform": attrInt(4),
	})
	wantFloats(t, "PROBIT", runTrees(t, n, column[float32](t, -1, 1))[0], []float64{winitzki(0.3), winitzki(0.9)})
}

// winitzki is √2·erfinv(2p − 1) with erfinv(x) ≈ sgn(x)·√(√(v² − ln(1−x²)/a)
// − v), v = 2/(πa) + ln(1−x²)/2, a = 0.147: Winitzki's approximation, which
// ONNX Runtime and ONNX's reference use for PROBIT (within 2·10⁻³ of the
// normal quantile: 1.28155 for 0.9).
func winitzki(p float64) float64 {
	const a = 0.147
	x := 2*p - 1
	l := math.Log(1 - x*x)
	v := 2/(math.Pi*a) + l/2
	return math.Sqrt2 * math.Copysign(math.Sqrt(math.Sqrt(v*v-l/a)-v), x)
}

// binaryStump is a TreeEnsembleClassifier of labels 0 and 1 whose one stump
// (x0 ≤ 0) gives class id classID the weight w0 or w1.
func binaryStump(classID int64, w0, w1 float32, attrs map[string]graph.Attr) opsem.Node {
	a := map[string]graph.Attr{
		"nodes_treeids": attrInts(0, 0, 0), "nodes_nodeids": attrInts(0, 1, 2), "nodes_featureids": attrInts(0, 0, 0),
		"nodes_modes": attrStrings("BRANCH_LEQ", "LEAF", "LEAF"), "nodes_values": attrFloats(0, 0, 0),
		"nodes_truenodeids": attrInts(1, 0, 0), "nodes_falsenodeids": attrInts(2, 0, 0),
		"class_treeids": attrInts(0, 0), "class_nodeids": attrInts(1, 2), "class_ids": attrInts(classID, classID),
		"class_weights": attrFloats(w0, w1), "classlabels_int64s": attrInts(0, 1),
	}
	for k, v := range attrs {
		a[k] = v
	}
	return teNodeOf("TreeEnsembleClassifier", a)
}

// A binary classifier of one score per leaf, ONNX Runtime's rules: with
// weights all ≥ 0 the scores are [1−s, s], whatever the post transform,
// and the label is 1 for s > 0.5; with a weight below 0 they are
// [σ(−s), σ(s)] for LOGISTIC and [−s, s] otherwise, the label 1 for s > 0;
// ties go to label 0. One base value adds to s.
func TestTreeEnsembleBinaryClassifier(t *testing.T) {
	x := column[float32](t, -1, 1)
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for _, tc := range []struct {
		name   string
		n      opsem.Node
		labels []int64
		scores []float64
	}{
		{"probabilities", binaryStump(0, 0.7, 0.5, nil), []int64{1, 0}, []float64{0.3, 0.7, 0.5, 0.5}},
		{"probabilities, LOGISTIC", binaryStump(0, 0.7, 0.2, map[string]graph.Attr{"post_transform": attrString("LOGISTIC")}), []int64{1, 0}, []float64{0.3, 0.7, 0.8, 0.2}},
		{"margins, LOGISTIC, base", binaryStump(0, 0.4, -0.5, map[string]graph.Attr{"post_transform": attrString("LOGISTIC"), "base_values": attrFloats(-0.1)}),
			[]int64{1, 0}, []float64{sigmoid(-0.3), sigmoid(0.3), sigmoid(0.6), sigmoid(-0.6)}},
		{"margins, NONE", binaryStump(0, 0.25, -0.5, nil), []int64{1, 0}, []float64{-0.25, 0.25, 0.5, -0.5}},
		{"margin 0", binaryStump(0, 0, -1, nil), []int64{0, 0}, []float64{0, 0, 1, -1}},
		// PROBIT: [probit(s), 0], ONNX Runtime writing the first column only.
		{"PROBIT", binaryStump(0, 0.9, 0.2, map[string]graph.Attr{"post_transform": attrString("PROBIT")}), []int64{1, 0}, []float64{winitzki(0.9), 0, winitzki(0.2), 0}},
		// Class 1's scores only: the two classes are scored as they are.
		{"class 1, LOGISTIC", binaryStump(1, 2, -1, map[string]graph.Attr{"post_transform": attrString("LOGISTIC")}), []int64{1, 0}, []float64{0.5, sigmoid(2), 0.5, sigmoid(-1)}},
	} {
		out := runTrees(t, tc.n, x)
		if got := dataOf[int64](out[0]); !slices.Equal(got, tc.labels) {
			t.Errorf("%s: labels %v, want %v", tc.name, got, tc.labels)
		}
		wantFloats(t, tc.name, out[1], tc.scores)
	}
}

// threeClasses is a TreeEnsembleClassifier with labels, its stump (x0 ≤ 0)
// voting w0 and w1 for classes 0 and 1 (class 2 has no weight anywhere).
func threeClasses(labels graph.Attr, name string, w0, w1 []float32, attrs map[string]graph.Attr) opsem.Node {
	if w0 == nil {
		w0, w1 = []float32{0, 0}, []float32{0, 0}
	}
	a := map[string]graph.Attr{
		"nodes_treeids": attrInts(0, 0, 0), "nodes_nodeids": attrInts(0, 1, 2), "nodes_featureids": attrInts(0, 0, 0),
		"nodes_modes": attrStrings("BRANCH_LEQ", "LEAF", "LEAF"), "nodes_values": attrFloats(0, 0, 0),
		"nodes_truenodeids": attrInts(1, 0, 0), "nodes_falsenodeids": attrInts(2, 0, 0),
		"class_treeids": attrInts(0, 0, 0, 0), "class_nodeids": attrInts(1, 1, 2, 2), "class_ids": attrInts(0, 1, 0, 1),
		"class_weights": attrFloats(w0[0], w0[1], w1[0], w1[1]), name: labels,
	}
	for k, v := range attrs {
		a[k] = v
	}
	return teNodeOf("TreeEnsembleClassifier", a)
}

// String and int64 labels: the label is the class of the highest score
// among those that have one, the first on ties; a class without a score
// (class 2 here, 0 after SOFTMAX's exp) is never chosen, unless base
// values give it one.
func TestTreeEnsembleClassifierLabels(t *testing.T) {
	x := column[float32](t, -1, 1)
	n := threeClasses(attrStrings("bird", "cat", "dog"), "classlabels_strings", []float32{0.2, 0.7}, []float32{0.4, 0.4}, nil)
	out := runTrees(t, n, x)
	if got := dataOf[string](out[0]); !slices.Equal(got, []string{"cat", "bird"}) {
		t.Errorf("string labels %q, want [cat bird] (the second row a tie)", got)
	}
	wantFloats(t, "string labels' scores", out[1], []float64{0.2, 0.7, 0, 0.4, 0.4, 0})
	n = threeClasses(attrInts(-1, 3, 7), "classlabels_int64s", []float32{-2, -1}, []float32{-1, -3}, nil)
	if got := dataOf[int64](runTrees(t, n, x)[0]); !slices.Equal(got, []int64{3, -1}) {
		t.Errorf("int labels %v, want [3 -1]: class 7 has no score", got)
	}
	n = threeClasses(attrInts(-1, 3, 7), "classlabels_int64s", []float32{-2, -1}, []float32{-1, -3}, map[string]graph.Attr{"base_values": attrFloats(0, 0, 0)})
	if got := dataOf[int64](runTrees(t, n, x)[0]); !slices.Equal(got, []int64{7, 7}) {
		t.Errorf("int labels with base values %v, want [7 7]", got)
	}
	// Each leaf votes for one class: the row's label is the class its
	// leaf voted for, however low, the others having no score.
	n = threeClasses(attrInts(-1, 3, 7), "classlabels_int64s", nil, nil, map[string]graph.Attr{
		"class_treeids": attrInts(0, 0), "class_nodeids": attrInts(1, 2), "class_ids": attrInts(0, 1), "class_weights": attrFloats(-1, -2)})
	out = runTrees(t, n, x)
	if got := dataOf[int64](out[0]); !slices.Equal(got, []int64{-1, 3}) {
		t.Errorf("int labels of one vote a leaf %v, want [-1 3]", got)
	}
	wantFloats(t, "one vote a leaf", out[1], []float64{-1, 0, 0, 0, -2, 0})
	n = threeClasses(attrInts(-1, 3, 7), "classlabels_int64s", []float32{1, 2}, []float32{3, 0}, map[string]graph.Attr{"post_transform": attrString("SOFTMAX")})
	out = runTrees(t, n, x)
	e1, e2 := math.Exp(1), math.Exp(2)
	wantFloats(t, "SOFTMAX", out[1], []float64{e1 / (e1 + e2 + 1), e2 / (e1 + e2 + 1), 1 / (e1 + e2 + 1), math.Exp(3) / (math.Exp(3) + 2), 1 / (math.Exp(3) + 2), 1 / (math.Exp(3) + 2)})
}

// Input shapes and types: one row as [F], an empty batch, too few
// features, a type the operator does not take.
func TestTreeEnsembleInputs(t *testing.T) {
	n := threeStumps(nil)
	out := runTrees(t, n, tensorOf[float32](t, []int{1}, -1))
	if !slices.Equal(out[0].Shape(), []int{1, 2}) {
		t.Errorf("[F] input gives %v, want [1, 2]", out[0])
	}
	out = runTrees(t, n, tensorOf[float32](t, []int{0, 1}))
	if !slices.Equal(out[0].Shape(), []int{0, 2}) {
		t.Errorf("empty input gives %v, want [0, 2]", out[0])
	}
	for _, x := range []inference.Tensor{tensorOf[float32](t, []int{2, 0}), tensorOf[bool](t, []int{1, 1}, true), tensorOf[float32](t, []int{1, 1, 1}, 1)} {
		if _, err := callKernel(teKernel, n, []inference.Tensor{x}); !errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrType) {
			t.Errorf("X %v: %v, want ErrShape or ErrType", x, err)
		}
	}
	// float16 in and out of a TreeEnsemble.
	h := func(v float32) inference.Half { return inference.HalfFromFloat32(v) }
	n = stump5(0, 0, tensorAttr(h(1)))
	out = runTrees(t, n, column(t, h(0.5), h(1), h(2)))
	if out[0].DType() != inference.Float16 {
		t.Fatalf("float16 input gives %v", out[0])
	}
	wantFloats(t, "float16", out[0], []float64{10, 10, 20})
}

// randomEnsemble is a TreeEnsemble of trees trees over features
// features: random depths up to 14 (deeper than the perfect layout
// takes), random modes (all of them where general), missing flags,
// member sets and targets, thresholds drawn from values (each leaf of
// one weight).
func randomEnsemble(rng *rand.Rand, trees, features, targets int, values []float32, general bool, attrs map[string]graph.Attr) opsem.Node {
	var feat, modes, trues, tleaf, falses, fleaf, missing, roots, leafTargets []int64
	var modes8 []uint8
	var splits, weights, members []float32
	leaf := func() int64 {
		leafTargets = append(leafTargets, int64(rng.IntN(targets)))
		weights = append(weights, float32(rng.NormFloat64()))
		return int64(len(weights) - 1)
	}
	var grow func(depth, limit int) (id int64, isLeaf bool)
	grow = func(depth, limit int) (int64, bool) {
		if depth == limit || depth > 1 && rng.IntN(4) == 0 {
			return leaf(), true
		}
		at := len(feat)
		feat = append(feat, int64(rng.IntN(features)))
		mode := int64(rng.IntN(4))
		if general {
			mode = int64(rng.IntN(7))
		}
		modes = append(modes, mode)
		modes8 = append(modes8, uint8(mode))
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
		trues[at], tleaf[at] = id, int64(b2i64(l))
		id, l = grow(depth+1, limit)
		falses[at], fleaf[at] = id, int64(b2i64(l))
		return int64(at), false
	}
	for range trees {
		limit := 1 + rng.IntN(14)
		if id, isLeaf := grow(0, limit); isLeaf {
			// A tree of one leaf: a node whose branches both lead to it.
			feat, modes8, splits, missing = append(feat, 0), append(modes8, 0), append(splits, 0), append(missing, 0)
			trues, tleaf, falses, fleaf = append(trues, id), append(tleaf, 1), append(falses, id), append(fleaf, 1)
			roots = append(roots, int64(len(feat)-1))
		} else {
			roots = append(roots, id)
		}
	}
	a := map[string]graph.Attr{
		"tree_roots": attrInts(roots...), "nodes_featureids": attrInts(feat...), "nodes_modes": tensorAttr(modes8...),
		"nodes_splits": tensorAttr(splits...), "nodes_truenodeids": attrInts(trues...), "nodes_trueleafs": attrInts(tleaf...),
		"nodes_falsenodeids": attrInts(falses...), "nodes_falseleafs": attrInts(fleaf...),
		"nodes_missing_value_tracks_true": attrInts(missing...),
		"leaf_targetids":                  attrInts(leafTargets...), "leaf_weights": tensorAttr(weights...), "n_targets": attrInt(int64(targets)),
	}
	if len(members) > 0 {
		a["membership_values"] = tensorAttr(members...)
	}
	for k, v := range attrs {
		a[k] = v
	}
	return teNodeOf("TreeEnsemble", a)
}

// teReference computes what n gives x ([rows, features] of float32 or
// float64) node by node: each tree walked with opsem's TakesTrue on the
// row's values in the compare type, the weights aggregated, each row
// finished by opsem.
func teReference(t *testing.T, n opsem.Node, x inference.Tensor) []float64 {
	e, err := opsem.TreeEnsembleOf(n)
	if err != nil {
		t.Fatal(err)
	}
	rows, features := x.Dim(0), x.Dim(1)
	in64 := e.CompareIn64(x.DType())
	value := func(r, f int) float64 {
		if x.DType() == inference.Float64 {
			v := dataOf[float64](x)[r*features+f]
			if !in64 {
				return float64(float32(v))
			}
			return v
		}
		return float64(dataOf[float32](x)[r*features+f])
	}
	var out []float64
	for r := range rows {
		p, has := make([]float64, e.Targets), make([]bool, e.Targets)
		for _, root := range e.Roots {
			c := root
			for !c.IsLeaf() {
				nd := &e.Nodes[c]
				if nd.TakesTrue(value(r, int(nd.Feature)), e.Members) {
					c = nd.True
				} else {
					c = nd.False
				}
			}
			for _, w := range e.Weights[e.LeafStart[c.Leaf()]:e.LeafStart[c.Leaf()+1]] {
				k := w.Target
				switch {
				case e.Aggregate == opsem.AggregateMin && (!has[k] || w.Value < p[k]), e.Aggregate == opsem.AggregateMax && (!has[k] || w.Value > p[k]):
					p[k] = w.Value
				case e.Aggregate == opsem.AggregateSum, e.Aggregate == opsem.AggregateAverage:
					p[k] += w.Value
				}
				has[k] = true
			}
		}
		e.FinishRegression(p, has)
		out = append(out, p...)
	}
	return out
}

// Random ensembles, in every layout, on rows of random values, of the
// thresholds and of their neighbours, NaN and infinities, in float32 and
// float64, against teReference; enough rows for the parallel loop.
func TestTreeEnsembleMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	values := []float32{0, 1, -1, 0.1, 2.5, -3.75, 1e-3, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for range 8 {
		v := float32(rng.NormFloat64())
		values = append(values, v, math.Nextafter32(v, 10), math.Nextafter32(v, -10))
	}
	for _, tc := range []struct {
		name    string
		general bool
		targets int
		attrs   map[string]graph.Attr
	}{
		{"ordered modes", false, 1, nil},
		{"all modes", true, 1, nil},
		{"three targets, AVERAGE", false, 3, map[string]graph.Attr{"aggregate_function": attrInt(0)}},
		{"three targets, MIN", true, 3, map[string]graph.Attr{"aggregate_function": attrInt(2)}},
		{"three targets, MAX, LOGISTIC", false, 3, map[string]graph.Attr{"aggregate_function": attrInt(3), "post_transform": attrInt(2)}},
		{"double splits", false, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const features, rows = 7, 3000
			n := randomEnsemble(rng, 40, features, tc.targets, values, tc.general, tc.attrs)
			if tc.name == "double splits" {
				s := dataOf[float32](n.Attrs["nodes_splits"].Tensor)
				d := make([]float64, len(s))
				for i, v := range s {
					d[i] = float64(v) + 1e-9*float64(i%3-1) // between the float32s
				}
				n.Attrs["nodes_splits"] = tensorAttr(d...)
			}
			x32 := make([]float32, rows*features)
			x64 := make([]float64, rows*features)
			for i := range x32 {
				x32[i] = values[rng.IntN(len(values))]
				x64[i] = float64(x32[i])
				if i%5 == 0 {
					x64[i] += 1e-9 // between float32s: float64 comparisons differ
				}
			}
			for _, x := range []inference.Tensor{tensorOf(t, []int{rows, features}, x32...), tensorOf(t, []int{rows, features}, x64...)} {
				wantFloats(t, fmt.Sprintf("%v input", x.DType()), runTrees(t, n, x)[0], teReference(t, n, x))
			}
		})
	}
}

// A model run on the shapes of the run before allocates only its
// outputs, at one thread and at four.
func TestTreeEnsembleSteadyAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []*graph.Node{randomForest(rng, 50, 8, 20, 0.8), gradientBoosted(rng, 30, 5, 20)} {
		g := &graph.Graph{Name: n.OpType, Opsets: map[string]int64{"": 15, MLDomain: 3}, Initializers: map[string]inference.Tensor{},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float32}},
			Outputs: []graph.Value{{Name: "y", DType: inference.Float32}},
			Nodes:   []*graph.Node{n}}
		if n.OpType == "TreeEnsembleClassifier" {
			g.Outputs = append(g.Outputs, graph.Value{Name: "label", DType: inference.Int64})
		}
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		feeds := map[string]inference.Tensor{"x": randomFloats(t, rng, 4000, 20)}
		for _, procs := range []int{1, 4} {
			if a := steadyAllocsAt(t, procs, g, feeds); a > 0 {
				t.Errorf("%s at GOMAXPROCS %d: %v allocations a run beyond the outputs", n.OpType, procs, a)
			}
		}
	}
}

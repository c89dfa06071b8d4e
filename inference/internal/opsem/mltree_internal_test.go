package opsem

import (
	"errors"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func strs(v ...string) graph.Attr              { return graph.Attr{Type: graph.AttrStrings, Strings: v} }
func floats(v ...float32) graph.Attr           { return graph.Attr{Type: graph.AttrFloats, Floats: v} }
func tensorAttr(t inference.Tensor) graph.Attr { return graph.Attr{Type: graph.AttrTensor, Tensor: t} }

func tensor1[T inference.Element](v ...T) graph.Attr {
	t, err := inference.New([]int{len(v)}, v)
	if err != nil {
		panic(err)
	}
	return tensorAttr(t)
}

// legacyRegressor is a valid TreeEnsembleRegressor: tree 0 is
// x0 ≤ 0.5 ? 1 : 2, tree 1 the leaf 3.
func legacyRegressor() map[string]graph.Attr {
	return map[string]graph.Attr{
		"nodes_treeids":      ints(0, 0, 0, 1),
		"nodes_nodeids":      ints(0, 1, 2, 0),
		"nodes_featureids":   ints(0, 0, 0, 0),
		"nodes_modes":        strs("BRANCH_LEQ", "LEAF", "LEAF", "LEAF"),
		"nodes_values":       floats(0.5, 0, 0, 0),
		"nodes_truenodeids":  ints(1, 0, 0, 0),
		"nodes_falsenodeids": ints(2, 0, 0, 0),
		"target_treeids":     ints(0, 0, 1),
		"target_nodeids":     ints(1, 2, 0),
		"target_ids":         ints(0, 0, 0),
		"target_weights":     floats(1, 2, 3),
		"n_targets":          int1(1),
	}
}

// legacyClassifier is a valid TreeEnsembleClassifier of the same tree 0,
// its leaves voting for classes 0 and 1.
func legacyClassifier() map[string]graph.Attr {
	return map[string]graph.Attr{
		"nodes_treeids":      ints(0, 0, 0),
		"nodes_nodeids":      ints(0, 1, 2),
		"nodes_featureids":   ints(0, 0, 0),
		"nodes_modes":        strs("BRANCH_LEQ", "LEAF", "LEAF"),
		"nodes_values":       floats(0.5, 0, 0),
		"nodes_truenodeids":  ints(1, 0, 0),
		"nodes_falsenodeids": ints(2, 0, 0),
		"class_treeids":      ints(0, 0),
		"class_nodeids":      ints(1, 2),
		"class_ids":          ints(0, 1),
		"class_weights":      floats(1, 1),
		"classlabels_int64s": ints(7, 9),
	}
}

// treeEnsemble5 is a valid TreeEnsemble: tree 0 is node 0 (x0 ≤ 0.5) →
// node 1 (x1 member of {1, 2}) or leaf 2; node 1 → leaves 0, 1; tree 1 is
// node 2, both branches leaf 3.
func treeEnsemble5() map[string]graph.Attr {
	return map[string]graph.Attr{
		"tree_roots":         ints(0, 2),
		"nodes_featureids":   ints(0, 1, 0),
		"nodes_modes":        tensor1[uint8](0, 6, 0),
		"nodes_splits":       tensor1[float32](0.5, 0, 0),
		"nodes_truenodeids":  ints(1, 0, 3),
		"nodes_trueleafs":    ints(0, 1, 1),
		"nodes_falsenodeids": ints(2, 1, 3),
		"nodes_falseleafs":   ints(1, 1, 1),
		"membership_values":  tensor1[float32](1, 2, float32(math.NaN())),
		"leaf_targetids":     ints(0, 0, 1, 1),
		"leaf_weights":       tensor1[float32](1, 2, 3, 4),
		"n_targets":          int1(2),
	}
}

func TestTreeEnsembleOf(t *testing.T) {
	e, err := TreeEnsembleOf(node("TreeEnsembleRegressor", 3, legacyRegressor()))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Roots) != 2 || len(e.Nodes) != 1 || e.Depth != 1 || e.MaxFeature != 0 || e.Depths[1] != 0 || e.Targets != 1 {
		t.Errorf("regressor: %d roots, %d nodes, depth %d, max feature %d, depths %v, %d targets", len(e.Roots), len(e.Nodes), e.Depth, e.MaxFeature, e.Depths, e.Targets)
	}
	if r := e.Roots[1]; !r.IsLeaf() || e.Weights[e.LeafStart[r.Leaf()]].Value != 3 {
		t.Errorf("tree 1 is %v, want the leaf of weight 3", r)
	}
	e, err = TreeEnsembleOf(node("TreeEnsemble", 5, treeEnsemble5()))
	if err != nil {
		t.Fatal(err)
	}
	if e.Depth != 2 || e.MaxFeature != 1 || e.Nodes[1].Mode != BranchMember || e.Nodes[1].MemberLo != 0 || e.Nodes[1].MemberHi != 2 {
		t.Errorf("TreeEnsemble: depth %d, max feature %d, node 1 %+v", e.Depth, e.MaxFeature, e.Nodes[1])
	}
	c, err := TreeEnsembleOf(node("TreeEnsembleClassifier", 1, legacyClassifier()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Classifier == nil || c.Classifier.OneClassID || !c.Classifier.PositiveWeights || c.Targets != 2 {
		t.Errorf("classifier: %+v, %d classes", c.Classifier, c.Targets)
	}
}

// A model its attributes do not describe fails with ErrBadModel, naming
// the attribute.
func TestTreeEnsembleOfRefuses(t *testing.T) {
	nan := float32(math.NaN())
	with := func(base map[string]graph.Attr, set map[string]graph.Attr, drop ...string) map[string]graph.Attr {
		m := maps.Clone(base)
		maps.Copy(m, set)
		for _, d := range drop {
			delete(m, d)
		}
		return m
	}
	reg, cls, v5 := legacyRegressor(), legacyClassifier(), treeEnsemble5()
	for _, tc := range []struct {
		name, op string
		attrs    map[string]graph.Attr
		want     string // the attribute named
	}{
		{"cycle", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_truenodeids": ints(0, 0, 0, 0)}), "nodes_truenodeids"},
		{"child out of range", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_falsenodeids": ints(1e9, 0, 0, 0)}), "nodes_falsenodeids"},
		{"count differs", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_featureids": ints(0, 0, 0)}), "nodes_featureids"},
		{"values missing", "TreeEnsembleRegressor", with(reg, nil, "nodes_values"), "nodes_values"},
		{"values twice", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_values_as_tensor": tensor1(0.5, 0, 0, 0.0)}), "nodes_values_as_tensor"},
		{"values of ints", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_values": ints(1, 2, 3, 4)}), "nodes_values"},
		{"unknown mode", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_modes": strs("BRANCH_XX", "LEAF", "LEAF", "LEAF")}), "nodes_modes"},
		{"negative feature", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_featureids": ints(-1, 0, 0, 0)}), "nodes_featureids"},
		{"missing flag 2", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_missing_value_tracks_true": ints(2, 0, 0, 0)}), "nodes_missing_value_tracks_true"},
		{"node twice", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"nodes_nodeids": ints(0, 1, 1, 0)}), "nodes_nodeids"},
		{"target out of range", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"target_ids": ints(0, 0, 1)}), "target_ids"},
		{"weight of no node", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"target_nodeids": ints(1, 2, 9)}), "target_nodeids"},
		{"weights differ", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"target_weights": floats(1, 2)}), "target_weights"},
		{"n_targets 1e9", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"n_targets": int1(1e9)}), "n_targets"},
		{"n_targets missing", "TreeEnsembleRegressor", with(reg, nil, "n_targets"), "n_targets"},
		{"base values", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"base_values": floats(1, 2)}), "base_values"},
		{"aggregate", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"aggregate_function": str("MEDIAN")}), "aggregate_function"},
		{"post transform", "TreeEnsembleRegressor", with(reg, map[string]graph.Attr{"post_transform": str("EXP")}), "post_transform"},
		{"no nodes", "TreeEnsembleRegressor", map[string]graph.Attr{"n_targets": int1(1)}, "nodes_treeids"},

		{"two label lists", "TreeEnsembleClassifier", with(cls, map[string]graph.Attr{"classlabels_strings": strs("a", "b")}), "classlabels_strings"},
		{"no labels", "TreeEnsembleClassifier", with(cls, nil, "classlabels_int64s"), "classlabels_int64s"},
		{"class out of range", "TreeEnsembleClassifier", with(cls, map[string]graph.Attr{"class_ids": ints(0, 2)}), "class_ids"},
		{"class weights differ", "TreeEnsembleClassifier", with(cls, map[string]graph.Attr{"class_weights": floats(1)}), "class_weights"},

		{"root out of range", "TreeEnsemble", with(v5, map[string]graph.Attr{"tree_roots": ints(0, 1e9)}), "tree_roots"},
		{"roots share a node", "TreeEnsemble", with(v5, map[string]graph.Attr{"tree_roots": ints(0, 0)}), "tree_roots"},
		{"root is a child", "TreeEnsemble", with(v5, map[string]graph.Attr{"tree_roots": ints(0, 1)}), "nodes_truenodeids"},
		{"node cycle", "TreeEnsemble", with(v5, map[string]graph.Attr{"nodes_trueleafs": ints(0, 0, 1), "nodes_truenodeids": ints(1, 0, 3)}), "nodes_truenodeids"},
		{"leaf out of range", "TreeEnsemble", with(v5, map[string]graph.Attr{"nodes_falsenodeids": ints(2, 1, 1e9)}), "nodes_falsenodeids"},
		{"mode 9", "TreeEnsemble", with(v5, map[string]graph.Attr{"nodes_modes": tensor1[uint8](0, 9, 0)}), "nodes_modes"},
		{"modes of int64", "TreeEnsemble", with(v5, map[string]graph.Attr{"nodes_modes": tensor1[int64](0, 6, 0)}), "nodes_modes"},
		{"member sets", "TreeEnsemble", with(v5, map[string]graph.Attr{"membership_values": tensor1(1, nan, 2, nan)}), "membership_values"},
		{"no member sets", "TreeEnsemble", with(v5, nil, "membership_values"), "membership_values"},
		{"leaf target", "TreeEnsemble", with(v5, map[string]graph.Attr{"leaf_targetids": ints(0, 0, 2, 1)}), "leaf_targetids"},
		{"leaf weights differ", "TreeEnsemble", with(v5, map[string]graph.Attr{"leaf_weights": tensor1[float32](1, 2, 3)}), "leaf_weights"},
		{"splits differ", "TreeEnsemble", with(v5, map[string]graph.Attr{"nodes_splits": tensor1[float32](1, 2)}), "nodes_splits"},
		{"n_targets 1e9", "TreeEnsemble", with(v5, map[string]graph.Attr{"n_targets": int1(1e9)}), "n_targets"},
		{"no trees", "TreeEnsemble", with(v5, map[string]graph.Attr{"tree_roots": ints()}), "tree_roots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TreeEnsembleOf(node(tc.op, 3, tc.attrs))
			if !errors.Is(err, inference.ErrBadModel) || !strings.Contains(err.Error(), "attribute "+tc.want+":") {
				t.Errorf("error %v, want ErrBadModel naming attribute %s", err, tc.want)
			}
		})
	}
	// A classifier of one label is a model ONNX Runtime answers with
	// labels that are not its own: not implemented.
	_, err := TreeEnsembleOf(node("TreeEnsembleClassifier", 1, with(cls, map[string]graph.Attr{"classlabels_int64s": ints(7), "class_ids": ints(0, 0)})))
	var u *inference.UnsupportedOpError
	if !errors.As(err, &u) {
		t.Errorf("one class label: %v, want an UnsupportedOpError", err)
	}
}

// The modes, with the values at and around the threshold 1, NaN and the
// infinities; MissingTrue sends NaN to True whatever the mode says.
func TestTakesTrue(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	xs := []float64{0.5, 1, 1.5, nan, -inf, inf}
	members := []float64{1, 1.5}
	for mode, want := range map[BranchMode][]bool{
		BranchLEQ:    {true, true, false, false, true, false},
		BranchLT:     {true, false, false, false, true, false},
		BranchGTE:    {false, true, true, false, false, true},
		BranchGT:     {false, false, true, false, false, true},
		BranchEQ:     {false, true, false, false, false, false},
		BranchNEQ:    {true, false, true, true, true, true},
		BranchMember: {false, true, true, false, false, false},
	} {
		for _, missingTrue := range []bool{false, true} {
			n := TreeNode{Value: 1, Mode: mode, MemberLo: 0, MemberHi: 2, MissingTrue: missingTrue}
			for i, x := range xs {
				w := want[i] || missingTrue && x != x
				if got := n.TakesTrue(x, members); got != w {
					t.Errorf("mode %d, missing_value_tracks_true %v, x = %v: %v, want %v", mode, missingTrue, x, got, w)
				}
			}
		}
	}
}

// The post transforms, against values worked out by hand, with ONNX
// Runtime's rules where the specification leaves room (PostTransform): a
// row of one score takes PROBIT alone, SOFTMAX_ZERO of zeros is zeros, and
// PROBIT's inverse error function is Winitzki's approximation, within
// 2·10⁻³ of the standard normal's quantiles.
func TestPostTransform(t *testing.T) {
	e1, e2 := math.Exp(1), math.Exp(2)
	for _, tc := range []struct {
		t        PostTransform
		in, want []float64
		tol      float64
	}{
		{PostNone, []float64{1, 2}, []float64{1, 2}, 1e-12},
		{PostSoftmax, []float64{1, 2}, []float64{e1 / (e1 + e2), e2 / (e1 + e2)}, 1e-12},
		{PostLogistic, []float64{1, -2}, []float64{1 / (1 + 1/e1), 1 / (1 + e2)}, 1e-12},
		{PostLogistic, []float64{1}, []float64{1}, 0}, // one score: left as it is
		// The zero takes no part: e^(2−2) / e^(2−2) for the 2, 0·e^−2 for the 0.
		{PostSoftmaxZero, []float64{0, 2}, []float64{0, 1}, 1e-12},
		{PostSoftmaxZero, []float64{1, 2, 0}, []float64{e1 / (e1 + e2), e2 / (e1 + e2), 0}, 1e-12},
		{PostSoftmaxZero, []float64{0, 0}, []float64{0, 0}, 0},
		// √2·erfinv(2p − 1): the standard normal's quantiles of 0.3, 0.5
		// and 0.9, to the approximation's error.
		{PostProbit, []float64{0.3, 0.5, 0.9}, []float64{-0.5244005127080407, 0, 1.2815515655446004}, 2e-3},
		{PostProbit, []float64{0.9}, []float64{1.2815515655446004}, 2e-3},
	} {
		got := append([]float64(nil), tc.in...)
		tc.t.Apply(got)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > tc.tol {
				t.Errorf("%v of %v: %v, want %v (within %g)", tc.t, tc.in, got, tc.want, tc.tol)
				break
			}
		}
	}
}

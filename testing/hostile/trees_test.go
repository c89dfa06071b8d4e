package hostile_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// Tree ensembles of ai.onnx.ml whose attributes lie: the model fails to
// load with an error wrapping inference.ErrBadModel that names the node
// and the attribute, in bounded memory, allocating nothing by the counts
// and ids it declares; a tree as deep as it has nodes loads and runs.

// treeModel is g importing ai.onnx 15 and ai.onnx.ml at version ml.
func treeModel(ml int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{IrVersion: 8, Graph: g, OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 15}, {Domain: "ai.onnx.ml", Version: ml}}}
}

// attrs replaces (or adds) the attributes of node n named as those of set.
func withAttrs(n *onnxpb.NodeProto, set ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	out := &onnxpb.NodeProto{Name: n.Name, OpType: n.OpType, Domain: n.Domain, Input: n.Input, Output: n.Output}
	replaced := map[string]*onnxpb.AttributeProto{}
	for _, a := range set {
		replaced[a.Name] = a
	}
	for _, a := range n.Attribute {
		if r, ok := replaced[a.Name]; ok {
			out.Attribute = append(out.Attribute, r)
			delete(replaced, a.Name)
		} else {
			out.Attribute = append(out.Attribute, a)
		}
	}
	for _, a := range set {
		if _, ok := replaced[a.Name]; ok {
			out.Attribute = append(out.Attribute, a)
		}
	}
	return out
}

// stumpRegressor is a TreeEnsembleRegressor of one tree: x0 ≤ 0.5 gives
// 1, else 2.
func stumpRegressor() *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: "trees", OpType: "TreeEnsembleRegressor", Domain: "ai.onnx.ml", Input: names("x"), Output: names("y"),
		Attribute: []*onnxpb.AttributeProto{
			intsAttr("nodes_treeids", 0, 0, 0), intsAttr("nodes_nodeids", 0, 1, 2), intsAttr("nodes_featureids", 0, 0, 0),
			stringsAttr("nodes_modes", "BRANCH_LEQ", "LEAF", "LEAF"), floatsAttr("nodes_values", 0.5, 0, 0),
			intsAttr("nodes_truenodeids", 1, 0, 0), intsAttr("nodes_falsenodeids", 2, 0, 0),
			intsAttr("target_treeids", 0, 0), intsAttr("target_nodeids", 1, 2), intsAttr("target_ids", 0, 0),
			floatsAttr("target_weights", 1, 2), intAttr("n_targets", 1),
		}}
}

// stumpClassifier is the same tree as a TreeEnsembleClassifier voting for
// labels 0 and 1.
func stumpClassifier() *onnxpb.NodeProto {
	n := withAttrs(stumpRegressor())
	n.OpType, n.Output = "TreeEnsembleClassifier", names("label", "y")
	var attrs []*onnxpb.AttributeProto
	for _, a := range n.Attribute {
		if strings.HasPrefix(a.Name, "nodes_") {
			attrs = append(attrs, a)
		}
	}
	n.Attribute = append(attrs, intsAttr("class_treeids", 0, 0), intsAttr("class_nodeids", 1, 2), intsAttr("class_ids", 0, 1),
		floatsAttr("class_weights", 1, 1), intsAttr("classlabels_int64s", 0, 1))
	return n
}

// stump5 is the tree as a TreeEnsemble (ai.onnx.ml 5).
func stump5() *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: "trees", OpType: "TreeEnsemble", Domain: "ai.onnx.ml", Input: names("x"), Output: names("y"),
		Attribute: []*onnxpb.AttributeProto{
			intsAttr("tree_roots", 0), intsAttr("nodes_featureids", 0),
			tensorAttr("nodes_modes", &onnxpb.TensorProto{Dims: dims(1), DataType: int32(onnxpb.TensorProto_UINT8), Int32Data: []int32{0}}),
			tensorAttr("nodes_splits", floatInit("", dims(1), 0.5)),
			intsAttr("nodes_truenodeids", 0), intsAttr("nodes_trueleafs", 1), intsAttr("nodes_falsenodeids", 1), intsAttr("nodes_falseleafs", 1),
			intsAttr("leaf_targetids", 0, 0), tensorAttr("leaf_weights", floatInit("", dims(2), 1, 2)), intAttr("n_targets", 1),
		}}
}

// treesModel is the model of node n on x, [N, 1].
func treesModel(n *onnxpb.NodeProto) *onnxpb.ModelProto {
	ml := int64(3)
	if n.OpType == "TreeEnsemble" {
		ml = 5
	}
	outs := vals(info("y", f32, -1, 1))
	if n.OpType == "TreeEnsembleClassifier" {
		outs = vals(info("label", i64, -1), info("y", f32, -1, 2))
	}
	m := treeModel(ml, graphOf([]*onnxpb.NodeProto{n}, vals(info("x", f32, -1, 1)), outs))
	if ml == 5 {
		m.OpsetImport[0].Version = 21
		m.IrVersion = 10
	}
	return m
}

// TestTreeEnsemblesRefused: each model fails to load with ErrBadModel,
// naming the node and the attribute.
func TestTreeEnsemblesRefused(t *testing.T) {
	cases := []struct {
		name string
		node *onnxpb.NodeProto
		attr string
	}{
		{"cycle", withAttrs(stumpRegressor(), intsAttr("nodes_truenodeids", 0, 0, 0)), "nodes_truenodeids"},
		{"child_1e9", withAttrs(stumpRegressor(), intsAttr("nodes_falsenodeids", 1e9, 0, 0)), "nodes_falsenodeids"},
		{"node_id_1e18", withAttrs(stumpRegressor(), intsAttr("nodes_nodeids", 0, 1, 1e18), intsAttr("nodes_falsenodeids", 1e18, 0, 0)), "target_nodeids"},
		{"n_targets_1e9", withAttrs(stumpRegressor(), intAttr("n_targets", 1e9)), "n_targets"},
		{"n_targets_maxint64", withAttrs(stumpRegressor(), intAttr("n_targets", math.MaxInt64)), "n_targets"},
		{"lengths_differ", withAttrs(stumpRegressor(), intsAttr("nodes_featureids", 0, 0)), "nodes_featureids"},
		{"weights_lengths_differ", withAttrs(stumpRegressor(), floatsAttr("target_weights", 1, 2, 3)), "target_weights"},
		{"target_1e9", withAttrs(stumpRegressor(), intsAttr("target_ids", 0, 1e9)), "target_ids"},
		{"class_beyond_labels", withAttrs(stumpClassifier(), intsAttr("class_ids", 0, 2)), "class_ids"},
		{"no_labels", withAttrs(stumpClassifier(), intsAttr("classlabels_int64s")), "classlabels_int64s"},
		{"v5_root_1e9", withAttrs(stump5(), intsAttr("tree_roots", 0, 1e9)), "tree_roots"},
		{"v5_leaf_1e9", withAttrs(stump5(), intsAttr("nodes_falsenodeids", 1e9)), "nodes_falsenodeids"},
		{"v5_self_loop", withAttrs(stump5(), intsAttr("nodes_trueleafs", 0)), "nodes_truenodeids"},
		{"v5_n_targets_1e9", withAttrs(stump5(), intAttr("n_targets", 1e9)), "n_targets"},
		{"v5_roots_share", withAttrs(stump5(), intsAttr("tree_roots", 0, 0, 0, 0)), "tree_roots"},
	}
	for _, c := range cases {
		isolate(t, c.name, func(t *testing.T) {
			err := loadErr(t, write(t, treesModel(c.node)), std)
			if !errors.Is(err, inference.ErrBadModel) {
				t.Fatalf("load: %v, want an error wrapping inference.ErrBadModel", err)
			}
			wantNamed(t, err, "trees")
			if !strings.Contains(err.Error(), "attribute "+c.attr) {
				t.Errorf("error %q does not name the attribute %s", err, c.attr)
			}
		})
	}
}

// TestTreeEnsembleChain: a TreeEnsemble of one tree that is a chain of
// 200,000 nodes (node i: x0 ≤ i gives leaf i, else node i+1; the last's
// false branch the leaf of −1) loads, and rows that walk most and all of
// it run, without recursion deep enough to overflow a stack.
func TestTreeEnsembleChain(t *testing.T) {
	isolate(t, "chain_200000", func(t *testing.T) {
		const nodes = 200_000
		feats, modes, trues, tleaf, falses, fleaf, targets := make([]int64, nodes), make([]int32, nodes), make([]int64, nodes),
			make([]int64, nodes), make([]int64, nodes), make([]int64, nodes), make([]int64, nodes+1)
		splits, weights := make([]float32, nodes), make([]float32, nodes+1)
		for i := range nodes {
			trues[i], tleaf[i] = int64(i), 1 // x0 ≤ i: leaf i
			splits[i] = float32(i)
			falses[i], fleaf[i] = int64(i+1), 0
			weights[i] = float32(i)
		}
		falses[nodes-1], fleaf[nodes-1], weights[nodes] = nodes, 1, -1
		n := &onnxpb.NodeProto{Name: "trees", OpType: "TreeEnsemble", Domain: "ai.onnx.ml", Input: names("x"), Output: names("y"),
			Attribute: []*onnxpb.AttributeProto{
				intsAttr("tree_roots", 0), intsAttr("nodes_featureids", feats...),
				tensorAttr("nodes_modes", &onnxpb.TensorProto{Dims: dims(nodes), DataType: int32(onnxpb.TensorProto_UINT8), Int32Data: modes}),
				tensorAttr("nodes_splits", floatInit("", dims(nodes), splits...)),
				intsAttr("nodes_truenodeids", trues...), intsAttr("nodes_trueleafs", tleaf...),
				intsAttr("nodes_falsenodeids", falses...), intsAttr("nodes_falseleafs", fleaf...),
				intsAttr("leaf_targetids", targets...), tensorAttr("leaf_weights", floatInit("", dims(nodes+1), weights...)), intAttr("n_targets", 1),
			}}
		out, err := run(t, std, treesModel(n), feeds{"x": tensor([]int{3, 1}, []float32{1, 150000.5, 1e9})})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := inference.Data[float32](out["y"])
		if want := []float32{1, 150001, -1}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("y = %v, want %v", got, want)
		}
	})
}

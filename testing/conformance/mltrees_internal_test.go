package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
)

// treeModels are the models there that use tree ensembles and ai.onnx
// operators only, no ZipMap: each must pass.
var treeModels = strings.Fields(`gb_regressor tree_depth18 extra_trees_multitarget rf_500_trees
	double_input_tree gb_binary_nozipmap rf_classifier_string_labels_nozipmap xgb_multiclass_softprob
	tree_ensemble5_forest_average_double tree_ensemble5_gb_multiclass tree_ensemble5_hgb_categorical`)

// TestTreeEnsembleModels runs treeModels and ONNX's node tests of
// TreeEnsemble on the CPU backend, on fresh buffers and on reused ones
// (runTest's primed), and requires PASS with float outputs within
// rtol 1e-4 and atol 1e-5: the tolerance the models' README checked ONNX
// Runtime with, ten times tighter than the suites'. The expected outputs
// come from scikit-learn and XGBoost, which sum in float64 as the kernel
// does.
func TestTreeEnsembleModels(t *testing.T) {
	tight := func(*graph.Graph) (rtol, atol float64) { return 1e-4, 1e-5 }
	var dirs []string
	for _, name := range treeModels {
		dirs = append(dirs, filepath.Join(mlModels, name))
	}
	nodes, err := filepath.Glob(filepath.Join(suites, "node", "test_ai_onnx_ml_tree_ensemble_*"))
	if err != nil || len(nodes) < 2 {
		t.Fatalf("ONNX's TreeEnsemble node tests: %v, %v", nodes, err)
	}
	dirs = append(dirs, nodes...)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
				t.Fatal(err)
			}
			for _, primed := range []bool{false, true} {
				if r := runTestWithin(dir, cpu.Backend{}, nil, primed, tight); r.Status != Pass {
					t.Errorf("primed %v: %v", primed, r)
				}
			}
		})
	}
}

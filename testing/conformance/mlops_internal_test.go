package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// mlOpsModels is the scikit-learn models of testing/mlmodels/testdata whose
// operators are all ai.onnx or the ai.onnx.ml operators of
// inference/cpu/ops_ml.go (no tree ensemble, no ZipMap); the expected
// outputs are scikit-learn's (its README).
var mlOpsModels = []string{
	"scaler_logreg_multinomial_nozipmap", // Scaler, LinearClassifier (SOFTMAX), Normalizer L1
	"imputer_normalizer_linreg",          // Imputer (NaN), Normalizer L2, LinearRegressor
	"svm_regressor",                      // SVMRegressor, RBF
	"svm_classifier",                     // SVMClassifier, RBF, one-vs-one decision values
	"linear_svc",                         // LinearClassifier (NONE), one-vs-rest decision values
	"ridge_multitarget",                  // LinearRegressor, targets 2
	"scaler_svr_linear",                  // Scaler, SVMRegressor, LINEAR
	"label_encoder_int64",                // LabelEncoder-2, keys_int64s to values_int64s
}

// TestMLModelsCPU runs each of mlOpsModels on the CPU backend, twice over
// (primed: first with NaN inputs, so the checked run reuses the buffers of
// another), and requires PASS with floats within rtol 1e-4, atol 1e-5,
// scikit-learn's float64 results against float32 outputs.
func TestMLModelsCPU(t *testing.T) {
	backend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	strict := func(*graph.Graph) (float64, float64) { return 1e-4, 1e-5 }
	for _, name := range mlOpsModels {
		t.Run(name, func(t *testing.T) {
			r := runTestWithin(filepath.Join("..", "mlmodels", "testdata", name), backend, nil, true, strict)
			if r.Status != Pass {
				t.Errorf("%v", r)
			}
		})
	}
}

// TestMLNodeTestsCPU requires every ONNX node test of the ai.onnx.ml
// operators of inference/cpu/ops_ml.go to pass on the CPU backend.
func TestMLNodeTestsCPU(t *testing.T) {
	backend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`test_ai_onnx_ml_(array_feature_extractor|binarizer|label_encoder|linear|svm|scaler|normalizer|imputer|one_hot|category_mapper|feature_vectorizer)`)
	var out bytes.Buffer
	sum, err := RunAll(&out, filepath.Join(suites, "node"), backend, re)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed < 6 || sum.Failed+sum.Skipped > 0 {
		t.Errorf("%d passed, %d failed, %d skipped, want at least 6 passed and none else:\n%s", sum.Passed, sum.Failed, sum.Skipped, out.String())
	}
}

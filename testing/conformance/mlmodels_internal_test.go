package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

// mlModels is the classical models exported from scikit-learn and
// XGBoost (testing/mlmodels/testdata, scripts/export_ml_models.py), whose
// expected outputs are the libraries' own predictions.
var mlModels = filepath.Join("..", "mlmodels", "testdata")

// mlMustPass are the models of mlModels that must pass; the others may be
// UNSUPPORTED, naming what they lack, but none may FAIL. Each model joins
// the list when the operators it uses arrive.
var mlMustPass = slices.Concat(mlOpsModels, []string{
	"scaler_logreg_multinomial",   // with ZipMap
	"binarizer_scaler_linear",     // FeatureVectorizer, Binarizer, Scaler, LinearClassifier, ZipMap
	"svc_probability_rbf",         // SVMClassifier with prob_a/prob_b, 3 classes, ZipMap
	"svc_probability_poly",        // binary: libsvm's sign convention, POLY
	"svc_probability_sigmoid",     // SIGMOID, string labels
	"svc_probability_linear",      // LINEAR, 4 classes
	"logreg_binary",               // LinearClassifier (-w, w), LOGISTIC, ZipMap
	"logreg_binary_string_labels", // classlabels_strings, ZipMap with string keys
	"onehot_int_categories",       // Gather, Cast, OneHotEncoder cats_int64s, Reshape, Concat, LinearClassifier, Normalizer, ZipMap
})

// TestMLModels runs the classical models on the CPU backend: labels and
// integers exactly, floats at the suites' tolerances.
func TestMLModels(t *testing.T) {
	backend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sum, err := RunAll(&out, mlModels, backend, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Results) < 20 {
		t.Fatalf("%d models under %s, want the 35 the export script writes", len(sum.Results), mlModels)
	}
	for _, r := range sum.Results {
		switch {
		case r.Status == Fail:
			t.Errorf("%v", r)
		case r.Status != Pass && slices.Contains(mlMustPass, r.Name):
			t.Errorf("%v: must pass", r)
		case r.Status == Unsupported && r.Op == "":
			t.Errorf("%v: UNSUPPORTED without an operator", r)
		}
	}
	t.Logf("%d passed, %d failed, %d unsupported of %d\n%s", sum.Passed, sum.Failed, sum.Skipped, len(sum.Results), out.String())
}

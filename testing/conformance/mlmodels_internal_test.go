package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/beamml/beamml/inference"
)

// mlModels is the classical models exported from scikit-learn and
// XGBoost (testing/mlmodels/testdata, scripts/export_ml_models.py), whose
// expected outputs are the libraries' own predictions.
var mlModels = filepath.Join("..", "mlmodels", "testdata")

// TestMLModels runs the classical models on the CPU backend and requires
// every one to pass: labels and integers exactly, floats at the suites'
// tolerances (TestMLModelsCPU and TestTreeEnsembleModels hold most of them
// to rtol 1e-4, atol 1e-5 besides).
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
	if len(sum.Results) < 35 {
		t.Fatalf("%d models under %s, want the 35 the export script writes", len(sum.Results), mlModels)
	}
	for _, r := range sum.Results {
		if r.Status != Pass {
			t.Errorf("%v", r)
		}
	}
	t.Logf("%d passed, %d failed, %d unsupported of %d\n%s", sum.Passed, sum.Failed, sum.Skipped, len(sum.Results), out.String())
}

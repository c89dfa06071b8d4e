package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// The pipeline scores every well-formed customer, unknown categories and
// missing numbers included, with scikit-learn's own label on every row and
// its probability of churn within rtol 1e-4 / atol 1e-5; the three
// malformed rows go to failures, each named with what was wrong.
func TestTabularMatchesScikitLearn(t *testing.T) {
	out := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	Build(s, "churn.onnx", "testdata/customers.csv", out)
	ptest.RunAndValidate(t, p)

	read := func(name string) []string {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	preds := read("predictions.csv")
	if len(preds) != 240 {
		t.Errorf("%d predictions, want 240 (one per well-formed row)", len(preds))
	}
	for _, l := range preds {
		if f := strings.Split(l, ","); len(f) != 3 || f[1] != "churn" && f[1] != "stay" {
			t.Errorf("prediction %q, want id,churn|stay,probability", l)
		}
	}
	summary := strings.Join(read("summary.txt"), "\n")
	for _, want := range []string{"scored 240 customers", "same label as scikit-learn on 240/240", "of scikit-learn's on 240/240"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q does not say %q", summary, want)
		}
	}
	failures := strings.Join(read("failures.txt"), "\n")
	for _, want := range []string{`row c9001: age "forty" is not a number`, "row c9002: 5 fields, want 6", `row c9003: monthly_spend "1e999x" is not a number`} {
		if !strings.Contains(failures, want) {
			t.Errorf("failures\n%s\ndo not say %q", failures, want)
		}
	}
}

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

// The demo pipeline classifies every held-out digit with the ONNX model,
// and each prediction equals PyTorch's own for that row, with every logit
// within rtol 1e-4 / atol 1e-5 of PyTorch's.
func TestDemoMatchesPyTorch(t *testing.T) {
	out := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	Build(s, "digits.onnx", "testdata/digits.csv", out)
	ptest.RunAndValidate(t, p)

	data, err := os.ReadFile(filepath.Join(out, "predictions.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) != 360 {
		t.Fatalf("%d predictions, want 360 (one per held-out row)", len(lines))
	}
	for _, l := range lines {
		f := strings.Split(l, ",") // id, ours, label, PyTorch's
		if len(f) != 4 || f[1] != f[3] {
			t.Errorf("row %s: predicted %q, PyTorch predicted %q", f[0], f[1], f[len(f)-1])
		}
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"classified 360 digits", "same digit as PyTorch on 360/360", "of PyTorch's on 360/360"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary %q lacks %q", summary, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "failures.txt")); err == nil {
		failures, _ := os.ReadFile(filepath.Join(out, "failures.txt"))
		t.Errorf("failures written for clean input:\n%s", failures)
	}
}

// A record that does not parse is reported, not dropped.
func TestDemoReportsBadRecords(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	good, err := os.ReadFile("testdata/digits.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(string(good), "\n")
	bad := strings.Replace(rows[2], ",0.", ",oops", 1)
	content := rows[0] + "\n" + rows[1] + "\n" + bad + "\n3,1,2\n"
	if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, "digits.onnx", in, dir)
	ptest.RunAndValidate(t, p)
	failures, err := os.ReadFile(filepath.Join(dir, "failures.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pixel", "3 fields, want at least 65"} {
		if !strings.Contains(string(failures), want) {
			t.Errorf("failures.txt lacks %q:\n%s", want, failures)
		}
	}
}

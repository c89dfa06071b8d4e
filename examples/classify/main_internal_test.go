package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// TestMain runs the command itself when TestMissingModel starts this test
// binary again with classifyMain set, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("CLASSIFY_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	ptest.Main(m)
}

// Run with a model that is not there, the command exits non-zero and says
// why on stderr, in one line that names the file: not silently (the
// logging setup once swallowed log.Fatal) and not buried in the runner's
// execution plan.
func TestMissingModel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-model.onnx")
	cmd := exec.Command(exe, "--model", missing, "--input", "testdata/digits.csv", "--output", t.TempDir())
	cmd.Env = append(os.Environ(), "CLASSIFY_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("classify with a missing model: %v, want a non-zero exit; stderr:\n%s", err, stderr.String())
	}
	var last string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		last = l
	}
	if !strings.HasPrefix(last, "classify: pipeline failed: ") || !strings.Contains(last, missing) || !strings.Contains(last, "no such file") {
		t.Errorf("last line on stderr %q, want classify's one-line cause naming %s", last, missing)
	}
}

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

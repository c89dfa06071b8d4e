package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// The quick start labels each well-formed row as PyTorch did (the digits
// CSV's torch_prediction column) with a probability in (0, 1], and writes
// the two malformed rows, one value short and one too many, to the
// failures by their ids with the kind "shape": every row in one file.
func TestQuickStart(t *testing.T) {
	out := t.TempDir()
	p, s := beam.NewPipelineWithRoot()
	Build(s, "../classify/digits.onnx", "pixels", "testdata/rows.csv", out)
	ptest.RunAndValidate(t, p)

	torch := map[string]string{} // id → PyTorch's prediction
	digits, err := os.ReadFile("../classify/testdata/digits.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(digits)), "\n")[1:] {
		f := strings.Split(l, ",")
		torch[f[0]] = f[1+64+1]
	}
	labels := lines(t, filepath.Join(out, "labels.csv"))
	if len(labels) != 40 {
		t.Fatalf("%d labels, want 40 (the well-formed rows)", len(labels))
	}
	for _, l := range labels {
		f := strings.Split(l, ",") // id, label, probability
		if len(f) != 3 || f[1] != torch[f[0]] || f[2] <= "0.0000" || f[2] > "1.0000" {
			t.Errorf("label line %q: want id,%s,probability", l, torch[f[0]])
		}
	}
	failures := lines(t, filepath.Join(out, "failures.txt"))
	slices.Sort(failures)
	if len(failures) != 2 || !strings.HasPrefix(failures[0], "long-") || !strings.HasPrefix(failures[1], "short-") {
		t.Fatalf("failures %q, want the long and the short row", failures)
	}
	for _, f := range failures {
		if !strings.Contains(f, ": shape: ") || !strings.Contains(f, `"pixels"`) {
			t.Errorf("failure %q, want kind shape naming the input", f)
		}
	}
}

// The README's quick start is this program's code: every line of its Go
// block appears in main.go, so that the README compiles as this test does.
func TestREADMEQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Quick start")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatal("README's Quick start has no Go block")
	}
	block, _, _ = strings.Cut(block, "```")
	checked := 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "..." || strings.HasPrefix(l, "import") || l == ")" {
			continue
		}
		if !strings.Contains(string(src), l) {
			t.Errorf("README quick-start line %q is not in examples/quickstart/main.go", l)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d lines of the README's quick start checked, want the whole pipeline", checked)
	}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

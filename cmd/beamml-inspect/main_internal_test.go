package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inspect runs the command's logic and returns its status and output.
func inspect(args ...string) (status int, stdout, stderr string) {
	var out, errs bytes.Buffer
	status = run(context.Background(), args, &out, &errs)
	return status, out.String(), errs.String()
}

// The command links inference/cuda, so its report has the CUDA backend's
// column, which a pipeline binary without it lacks; the If of
// symbolic.onnx has no device kernel.
func TestInspectDescribesModels(t *testing.T) {
	digits, symbolic := "../../examples/classify/digits.onnx", "../../inference/onnx/testdata/symbolic.onnx"
	status, out, errs := inspect(digits, symbolic)
	if status != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q; want 0 and nothing", status, errs)
	}
	want := digits + `
  producer: pytorch 1.13.0, IR version 7
  opsets:   ai.onnx 13
  inputs:   pixels float32[batch 64]
  outputs:  logits float32[batch 10]
  operators (3 nodes): Gemm 2, Relu 1
  cpu:      runs every operator
  cuda:     a device kernel for every operator

` + symbolic + "\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("stdout begins\n%s\nwant\n%s", out, want)
	}
	if line := "  cuda:     cannot run com.example.Custom (the model does not load); on the host (no device kernel): If\n"; !strings.HasSuffix(out, line) {
		t.Errorf("stdout ends\n%s\nwant the line\n%s", out[max(0, len(out)-200):], line)
	}
}

// A model that cannot be read costs its own report and a status of 1,
// with the cause on one line of stderr; the others are still described.
func TestInspectReportsUnreadableModels(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.onnx")
	if err := os.WriteFile(bad, []byte("\x0a\xff\xff\xff\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, out, errs := inspect(bad, "../../examples/classify/digits.onnx")
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	if lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n"); len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "beamml-inspect: "+bad+": onnx: not a model file") || !strings.HasSuffix(lines[0], "inference: bad model") {
		t.Errorf("stderr %q, want one line naming %s and the cause", errs, bad)
	}
	if !strings.Contains(out, "pixels float32[batch 64]") {
		t.Errorf("stdout %q, want the digits model described after the bad one", out)
	}
}

func TestInspectUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-h"}} {
		status, out, errs := inspect(args...)
		if status != 2 || out != "" || !strings.HasPrefix(errs, "usage: beamml-inspect model.onnx") {
			t.Errorf("args %q: status %d, stdout %q, stderr %q; want 2 and the usage on stderr", args, status, out, errs)
		}
	}
}

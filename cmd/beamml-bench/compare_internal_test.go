//go:build cgo

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// -compare reference compares the simulated device's FP16 run with what
// FP16 means (cuda.Reference: the CPU backend's run of the graph with the
// values the device stores in float16 rounded to it), which the device
// matches at rtol 1e-4 and atol 1e-5; the float32 CPU backend's outputs
// lie a hundred times further away, beyond 1e-2 and 1e-3.
func TestCompareReference(t *testing.T) {
	for _, tc := range []struct {
		compare, rtol, atol string
		status              int
		out                 string
	}{
		{"reference", "1e-4", "1e-5", exitOK, "outputs match the fp16 reference's at batch 2"},
		{"cpu", "1e-2", "1e-3", exitFailed, `output "logits" differs from the cpu backend's`},
	} {
		var stdout, stderr bytes.Buffer
		args := []string{"-model", digits, "-device", "sim", "-precision", "fp16", "-batch", "2", "-n", "0", "-warmup", "0",
			"-compare", tc.compare, "-rtol", tc.rtol, "-atol", tc.atol}
		if status := run(context.Background(), args, &stdout, &stderr); status != tc.status || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("-compare %s at rtol %s, atol %s: status %d, want %d; report\n%s\nstderr %s", tc.compare, tc.rtol, tc.atol, status, tc.status, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if status := run(context.Background(), []string{"-model", digits, "-compare", "gpu"}, &stdout, &stderr); status != exitUsage || !strings.Contains(stderr.String(), "want cpu or reference") {
		t.Errorf("-compare gpu: status %d, stderr %q; want a usage error", status, stderr.String())
	}
	stderr.Reset()
	if status := run(context.Background(), []string{"-model", digits, "-compare", "cpu", "-atol-scale", "-1"}, &stdout, &stderr); status != exitUsage || !strings.Contains(stderr.String(), "-atol-scale") {
		t.Errorf("-atol-scale -1: status %d, stderr %q; want a usage error", status, stderr.String())
	}
}

// In TF32 the device rounds each product's inputs to 10 bits of mantissa,
// which the reference (the float32 graph) does not: an element of the
// digits MLP's logits then moves by 0.26% of itself, past rtol 1e-3, but
// by less than 1e-3 of the logits' largest magnitude, the scale of the
// terms each logit sums. -atol-scale states the tolerance so, and the
// report says how far the outputs lie apart on that scale.
func TestCompareScaledTolerance(t *testing.T) {
	for _, tc := range []struct {
		scale  string
		status int
		out    string
	}{
		{"0", exitFailed, `output "logits" differs from the tf32 reference's`},
		{"1e-3", exitOK, `outputs match the tf32 reference's at batch 2; max |Δ|`},
		{"1e-5", exitFailed, `of its largest |value|`},
	} {
		var stdout, stderr bytes.Buffer
		args := []string{"-model", digits, "-device", "sim", "-precision", "tf32", "-batch", "2", "-n", "0", "-warmup", "0",
			"-compare", "reference", "-rtol", "1e-3", "-atol", "1e-4", "-atol-scale", tc.scale}
		if status := run(context.Background(), args, &stdout, &stderr); status != tc.status || !strings.Contains(stdout.String(), tc.out) {
			t.Errorf("-atol-scale %s: status %d, want %d; report\n%s\nstderr %s", tc.scale, status, tc.status, stdout.String(), stderr.String())
		}
	}
}

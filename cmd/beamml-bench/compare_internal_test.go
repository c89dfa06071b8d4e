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
}

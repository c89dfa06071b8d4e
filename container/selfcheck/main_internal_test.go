package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build compiles the command with the given go build arguments.
func build(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "selfcheck")
	cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, args...), ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, out)
	}
	return bin
}

// exitCode runs bin and returns its exit status and output.
func exitCode(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("%s: %v", bin, err)
	return 0, ""
}

// Built without the cuda tag, the command has no GPU code: it says so,
// lists what NVML sees, and exits 2.
func TestWithoutCUDATag(t *testing.T) {
	code, out := exitCode(t, build(t))
	t.Logf("output:\n%s", out)
	if code != exitNoGPU {
		t.Errorf("exit status %d, want %d", code, exitNoGPU)
	}
	for _, want := range []string{"built without the cuda build tag", "-tags cuda", "gpuinfo: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not contain %q", want)
		}
	}
}

// Built with the cuda tag (where the CUDA headers and libraries are
// installed), the command links gorgonia.org/cu. Without a GPU it exits 2
// at init and says cuInit failed (inference/cuda/cu's doc); with one it
// runs the checks.
func TestWithCUDATag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CUDA binary")
	}
	if out, err := exec.Command("go", "env", "CGO_ENABLED").Output(); err != nil || strings.TrimSpace(string(out)) != "1" {
		t.Skip("cgo is off: the cuda build needs it")
	}
	if !exists("/usr/include/cuda.h") && !exists("/usr/local/cuda/include/cuda.h") {
		t.Skip("no cuda.h: the CUDA toolkit is not installed")
	}
	code, out := exitCode(t, build(t, "-tags", "cuda"), "--run", "^binary/Add/")
	t.Logf("output:\n%s", out)
	switch code {
	case exitNoGPU:
		if !strings.Contains(out, "cuInit failed") && !strings.Contains(out, "NO GPU") {
			t.Errorf("exit status 2 without the reason")
		}
	case exitOK:
		if !strings.Contains(out, "PASS  op binary/Add/same") {
			t.Errorf("exit status 0 without a passing binary/Add case")
		}
	default:
		t.Errorf("exit status %d", code)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

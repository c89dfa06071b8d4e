package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("no arguments: exit %d, stderr %q; want 2 and the usage", code, errOut.String())
	}
}

// A worker as Beam builds it (CGO_ENABLED=0) runs in the image but has no
// GPU backend: checkworker says so and exits 1. A file that is not a
// program exits 1 too.
func TestPlainBuildHasNoGPUBackend(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "checkworker")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"--package", "github.com/beamml/beamml/container/checkworker", bin}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "has no GPU backend") {
		t.Errorf("exit %d, stderr %q; want 1 and no GPU backend", code, errOut.String())
	}
	if !strings.Contains(out.String(), "github.com/beamml/beamml/container/checkworker, linux/amd64, cgo false") {
		t.Errorf("stdout does not describe the binary:\n%s", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"--package", "example.com/other", bin}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "the launcher is example.com/other") {
		t.Errorf("--package of another program: exit %d, stderr %q", code, errOut.String())
	}
	text := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(text, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run([]string{text}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not a Linux executable") {
		t.Errorf("a text file: exit %d, stderr %q", code, errOut.String())
	}
}

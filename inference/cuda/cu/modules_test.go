//go:build cuda

package cu_test

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/beamml/beamml/internal/kernels"
	gocu "gorgonia.org/cu"
)

// noJIT marks the child process of TestModulesLoad, which runs with the
// driver's PTX JIT switched off (CUDA_DISABLE_PTX_JIT=1, read at cuInit).
const noJIT = "BEAMML_TEST_NO_JIT"

// Every kernel module loads, and says how long it took: milliseconds where
// the fatbin has SASS for the device, up to seconds where the driver JITs
// the PTX (its cache, ~/.nv/ComputeCache, hides that on a second run). On
// a device whose architecture is one of kernels.SASSArchs, a child process
// with the JIT switched off loads them all again: the proof that no
// process on that GPU waits for the JIT.
func TestModulesLoad(t *testing.T) {
	d := open(t)
	var total time.Duration
	for _, m := range kernels.Modules() {
		start := time.Now()
		if err := d.LoadModule(m); err != nil {
			t.Fatalf("LoadModule(%s): %v", m.Name, err)
		}
		took := time.Since(start)
		total += took
		t.Logf("%s: loaded %d kernels from %d bytes of fatbin in %v", m.Name, len(m.Entries), len(m.Fatbin), took)
		for _, e := range m.Entries {
			if _, err := d.Function(e); err != nil {
				t.Errorf("Function(%s): %v", e, err)
			}
		}
	}
	dev, err := gocu.GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	major, err := dev.Attribute(gocu.ComputeCapabilityMajor)
	if err != nil {
		t.Fatal(err)
	}
	minor, err := dev.Attribute(gocu.ComputeCapabilityMinor)
	if err != nil {
		t.Fatal(err)
	}
	arch := major*10 + minor
	t.Logf("%s (sm_%d): every module loaded in %v", d.Name(), arch, total)
	if os.Getenv(noJIT) != "" || !slices.Contains(kernels.SASSArchs(), arch) {
		if os.Getenv(noJIT) == "" {
			t.Logf("sm_%d is not among the fatbins' SASS %v: the driver JITs their PTX", arch, kernels.SASSArchs())
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestModulesLoad$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CUDA_DISABLE_PTX_JIT=1", noJIT+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("with CUDA_DISABLE_PTX_JIT=1 the modules do not load on sm_%d: %v\n%s", arch, err, out)
	} else {
		t.Logf("with CUDA_DISABLE_PTX_JIT=1:\n%s", out)
	}
}

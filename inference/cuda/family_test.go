package cuda_test

import (
	"testing"

	_ "github.com/beamml/beamml/inference/cpu"
	_ "github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/internal/family"
)

// Every operator the GPU lowers sits in the family (lower_<family>.go) of
// the CPU file that implements it (ops_<family>.go): the backends mirror
// each other, so the CUDA Slice is where the CPU Slice is.
func TestOperatorFamiliesAgree(t *testing.T) {
	cpu, gpu := family.Of("cpu"), family.Of("cuda")
	if len(cpu) < 100 || len(gpu) < 100 {
		t.Fatalf("%d CPU and %d GPU operators recorded: is the registration recording?", len(cpu), len(gpu))
	}
	for _, backend := range []map[string]string{cpu, gpu} {
		for op, f := range backend {
			if len(f) > 3 && f[len(f)-3:] == ".go" {
				t.Errorf("%s is registered from %s, not from a family file (ops_<family>.go, lower_<family>.go)", op, f)
			}
		}
	}
	for op, f := range gpu {
		switch c, ok := cpu[op]; {
		case !ok:
			t.Errorf("%s: lowered in lower_%s.go, but the CPU backend has no kernel for it", op, f)
		case c != f:
			t.Errorf("%s: in lower_%s.go on the GPU but ops_%s.go on the CPU", op, f, c)
		}
	}
}

package inference

import (
	"errors"
	"strings"
	"testing"
)

// Auto picks CUDA when its backend is there and answers, and otherwise
// the CPU with the reason; with BEAMML_REQUIRE_GPU=1 the fallback is an
// error naming the reason, but only where an NVIDIA driver is present.
func TestChooseAuto(t *testing.T) {
	down := errors.New("cu: cuInit: no CUDA-capable device is detected")
	for _, c := range []struct {
		name              string
		haveCUDA          bool
		avail             error
		require, driver   bool
		want              Device
		wantWhy, wantFail string
	}{
		{name: "gpu", haveCUDA: true, want: CUDA},
		{name: "gpu, required", haveCUDA: true, require: true, driver: true, want: CUDA},
		{name: "no cuda backend", want: CPU, wantWhy: "no CUDA backend"},
		{name: "no cuda backend, laptop, required", require: true, want: CPU, wantWhy: "no CUDA backend"},
		{name: "gpu down", haveCUDA: true, avail: down, driver: true, want: CPU, wantWhy: "no CUDA-capable device"},
		{name: "gpu down, required", haveCUDA: true, avail: down, require: true, driver: true, wantFail: "BEAMML_REQUIRE_GPU=1"},
		{name: "no cuda backend, driver, required", require: true, driver: true, wantFail: "no CUDA backend"},
	} {
		got, why, err := chooseAuto(c.haveCUDA, c.avail, c.require, c.driver)
		switch {
		case c.wantFail != "":
			if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), c.wantFail) {
				t.Errorf("%s: error %v, want ErrNoDevice saying %q", c.name, err, c.wantFail)
			}
		case err != nil || got != c.want || !strings.Contains(why, c.wantWhy):
			t.Errorf("%s: chose %q (%q), %v; want %q saying %q", c.name, got, why, err, c.want, c.wantWhy)
		}
	}
}

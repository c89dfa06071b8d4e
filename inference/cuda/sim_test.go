//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels"
	"github.com/beamml/beamml/internal/kernels/emu"
	"github.com/beamml/beamml/internal/sim"
)

// runner is shared by every simulated device of the test binary, so
// TestMain can list which kernels the tests launched.
var runner = emu.NewRunner()

func newSim(t testing.TB, memory int64) (*cuda.Backend, *sim.Device) {
	t.Helper()
	dev := sim.New(sim.Options{Runner: runner, Memory: memory})
	return cuda.NewBackend(func() (cuda.Device, error) { return dev, nil }), dev
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Every kernel must have run in some test: a kernel without a check
	// shows up here and fails the run. Only a full run can tell.
	if code == 0 && !slices.ContainsFunc(os.Args, func(a string) bool { return strings.HasPrefix(a, "-test.run") }) {
		launched := runner.Launched()
		var missing []string
		for _, k := range kernels.Entries() {
			if launched[k] == 0 {
				missing = append(missing, k)
			}
		}
		fmt.Printf("kernels checked against the CPU backend (host-emulated): %d of %d\n", len(kernels.Entries())-len(missing), len(kernels.Entries()))
		for _, k := range kernels.Entries() {
			fmt.Printf("  %-28s %6d launches\n", k, launched[k])
		}
		if len(missing) > 0 {
			fmt.Printf("FAIL: kernels no test launched: %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}

// TestOpsMatchCPU runs every check case on the simulated device and
// compares with the CPU backend. The case's operator must run on the
// device: a node sent to the host would compare the CPU with itself.
func TestOpsMatchCPU(t *testing.T) {
	for _, c := range check.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			b, dev := newSim(t, 0)
			before := dev.Stats()
			if err := check.Run(context.Background(), b, c); err != nil {
				t.Fatal(err)
			}
			s := dev.Stats()
			if s.Launches+s.Gemms+s.CopiesDtoD == before.Launches+before.Gemms+before.CopiesDtoD {
				t.Errorf("%s: nothing ran on the device", c.Name)
			}
			if err := dev.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestEveryEntryPointIsEmulated(t *testing.T) {
	emulated := emu.Kernels()
	for _, k := range kernels.Entries() {
		if !slices.Contains(emulated, k) {
			t.Errorf("kernel %s is in the PTX but not in the emulator: run make kernels", k)
		}
	}
	for _, k := range emulated {
		if !slices.Contains(kernels.Entries(), k) {
			t.Errorf("kernel %s is emulated but not in the PTX: run make kernels", k)
		}
	}
}

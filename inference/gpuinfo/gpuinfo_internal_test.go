package gpuinfo

import (
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// TestDevices runs on every machine: with a GPU it lists it, and without
// one (or without cgo, or without the NVIDIA library) it fails with
// ErrNoDevice and says why, instead of panicking.
func TestDevices(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		if !errors.Is(err, inference.ErrNoDevice) {
			t.Fatalf("Devices: %v, want an error wrapping ErrNoDevice", err)
		}
		for _, why := range []string{"this binary has no NVML", "libnvidia-ml.so.1 is not installed", "kernel driver is not loaded", "sees no GPU", "no permission"} {
			if strings.Contains(err.Error(), why) {
				t.Logf("no GPU: %v", err)
				return
			}
		}
		t.Fatalf("Devices: %v: the message does not say why there is no GPU", err)
	}
	if len(devs) == 0 {
		t.Fatal("Devices returned no device and no error")
	}
	for i, d := range devs {
		t.Log(d)
		if d.Index != i || d.Name == "" || !strings.HasPrefix(d.UUID, "GPU-") || d.Major < 3 ||
			d.MemoryTotal <= 0 || d.MemoryFree > d.MemoryTotal || d.DriverVersion == "" {
			t.Errorf("device %d: %+v", i, d)
		}
	}
}

func TestMPSControl(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
	if got, ok := MPSControl(); ok || got != dir {
		t.Errorf("MPSControl() = %q, %t; want %q, false without a control pipe", got, ok, dir)
	}
}

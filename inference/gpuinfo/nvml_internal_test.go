//go:build cgo && cuda

package gpuinfo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/beamml/beamml/inference"
)

// Without the library, Init answers ERROR_LIBRARY_NOT_FOUND and nothing
// else is called (a call into the unloaded library would kill the test).
func TestDevicesWithoutLibrary(t *testing.T) {
	lib := nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")))
	_, err := devices(lib)
	if !errors.Is(err, inference.ErrNoDevice) || !strings.Contains(err.Error(), "libnvidia-ml.so.1 is not installed") {
		t.Fatalf("devices: %v, want ErrNoDevice saying the library is not installed", err)
	}
}

//go:build !cgo

package gpuinfo

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// Devices fails: NVML is reached through cgo, and this binary was built
// without it (CGO_ENABLED=0).
func Devices() ([]Device, error) {
	return nil, fmt.Errorf("gpuinfo: built without cgo (CGO_ENABLED=0), so NVML cannot be loaded: %w", inference.ErrNoDevice)
}

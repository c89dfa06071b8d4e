//go:build !cgo

package gpuinfo

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// errNoCgo is why nothing here answers.
var errNoCgo = fmt.Errorf("gpuinfo: built without cgo (CGO_ENABLED=0), so NVML cannot be loaded: %w", inference.ErrNoDevice)

// Devices fails: NVML is reached through cgo, and this binary was built
// without it (CGO_ENABLED=0). The error wraps inference.ErrNoDevice.
func Devices() ([]Device, error) { return nil, errNoCgo }

// Sampler cannot be made in a binary built without cgo.
type Sampler struct{}

// NewSampler fails as Devices does.
func NewSampler() (*Sampler, error) { return nil, errNoCgo }

// Sample fails as Devices does.
func (*Sampler) Sample() ([]Usage, error) { return nil, errNoCgo }

// Close does nothing.
func (*Sampler) Close() error { return nil }

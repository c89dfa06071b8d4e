//go:build !cgo || !cuda

package gpuinfo

import (
	"fmt"

	"github.com/beamml/beamml/inference"
)

// errNoCgo is why nothing here answers.
var errNoCgo = fmt.Errorf("gpuinfo: this binary has no NVML: it is reached through cgo, in binaries built with the cuda tag "+
	"(the GPU worker: CGO_ENABLED=1 go build -tags cuda): %w", inference.ErrNoDevice)

// Devices fails: NVML is reached through cgo, in binaries built with the
// cuda tag (the GPU worker binary), and this one was built without one or
// the other. The error wraps inference.ErrNoDevice.
func Devices() ([]Device, error) { return nil, errNoCgo }

// Sampler cannot be made in a binary built without cgo and the cuda tag.
type Sampler struct{}

// NewSampler fails as Devices does.
func NewSampler() (*Sampler, error) { return nil, errNoCgo }

// Sample fails as Devices does.
func (*Sampler) Sample() ([]Usage, error) { return nil, errNoCgo }

// Close does nothing.
func (*Sampler) Close() error { return nil }

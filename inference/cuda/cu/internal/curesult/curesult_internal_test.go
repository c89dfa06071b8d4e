//go:build cuda

package curesult

import (
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
)

// Sticky errors are device failures; errors of one call (a bad value, a
// launch asking for too many registers) are not, and leave the device in
// service. Runs without a GPU.
func TestKind(t *testing.T) {
	for _, c := range []struct {
		name string
		r    int
		want error
	}{
		{"CUDA_ERROR_ILLEGAL_ADDRESS", IllegalAddress, inference.ErrDeviceFailed},
		{"CUDA_ERROR_LAUNCH_FAILED", LaunchFailed, inference.ErrDeviceFailed},
		{"CUDA_ERROR_ECC_UNCORRECTABLE", ECCUncorrectable, inference.ErrDeviceFailed},
		{"CUDA_ERROR_MPS_CLIENT_TERMINATED", MPSTerminated, inference.ErrDeviceFailed},
		{"CUDA_ERROR_OUT_OF_MEMORY", OutOfMemory, inference.ErrOutOfMemory},
		{"CUDA_ERROR_NO_DEVICE", NoDevice, inference.ErrNoDevice},
		{"CUDA_ERROR_INVALID_VALUE", InvalidValue, nil},
		{"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", LaunchOutOfResources, nil},
		{"CUDA_SUCCESS", Success, nil},
	} {
		if got := Kind(c.r); !errors.Is(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("Kind(%s = %d) = %v, want %v", c.name, c.r, got, c.want)
		}
	}
}

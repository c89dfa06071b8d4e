//go:build cuda

// Package curesult says what a CUDA driver result means to the runtime:
// which inference sentinel an error wraps. It reads only cuda.h's
// constants, calls no driver function and does not import gorgonia.org/cu,
// so its tests run on a machine without a GPU (docs/design.md, rule 1
// keeps inference/cuda/cu's own tests off such machines).
package curesult

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#include <cuda.h>
*/
import "C"

import "github.com/beamml/beamml/inference"

// Kind returns the sentinel a failed call with result r wraps, or nil for a
// result that says nothing about the device as a whole (a bad argument, a
// launch too large):
//
//   - inference.ErrOutOfMemory: the allocation did not fit.
//   - inference.ErrNoDevice: there is no usable device (no driver, no
//     device, MPS refusing this client); nothing was ever run on it.
//   - inference.ErrDeviceFailed: a sticky error. A kernel faulted (illegal
//     address or instruction, misaligned address, a failed launch, a
//     trap or device-side assert), the hardware reported an uncorrectable
//     ECC or NVLink error, or the MPS server ended this client. The context
//     is corrupt: every later call in this process fails too, and only a
//     new process gets a working context. Under MPS one client's fault
//     reaches every client on the GPU.
func Kind(r int) error {
	switch C.CUresult(r) {
	case C.CUDA_ERROR_OUT_OF_MEMORY:
		return inference.ErrOutOfMemory
	case C.CUDA_ERROR_NO_DEVICE, C.CUDA_ERROR_INVALID_DEVICE, C.CUDA_ERROR_NOT_INITIALIZED,
		C.CUDA_ERROR_DEINITIALIZED, C.CUDA_ERROR_STUB_LIBRARY,
		C.CUDA_ERROR_DEVICE_UNAVAILABLE, C.CUDA_ERROR_DEVICE_NOT_LICENSED, C.CUDA_ERROR_SYSTEM_NOT_READY,
		C.CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, C.CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
		C.CUDA_ERROR_MPS_CONNECTION_FAILED, C.CUDA_ERROR_MPS_RPC_FAILURE, C.CUDA_ERROR_MPS_SERVER_NOT_READY,
		C.CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, C.CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED:
		return inference.ErrNoDevice
	case C.CUDA_ERROR_ILLEGAL_ADDRESS, C.CUDA_ERROR_LAUNCH_FAILED, C.CUDA_ERROR_LAUNCH_TIMEOUT,
		C.CUDA_ERROR_ASSERT, C.CUDA_ERROR_HARDWARE_STACK_ERROR, C.CUDA_ERROR_ILLEGAL_INSTRUCTION,
		C.CUDA_ERROR_MISALIGNED_ADDRESS, C.CUDA_ERROR_INVALID_ADDRESS_SPACE, C.CUDA_ERROR_INVALID_PC,
		C.CUDA_ERROR_ECC_UNCORRECTABLE, C.CUDA_ERROR_NVLINK_UNCORRECTABLE,
		C.CUDA_ERROR_CONTEXT_IS_DESTROYED, C.CUDA_ERROR_MPS_CLIENT_TERMINATED:
		return inference.ErrDeviceFailed
	}
	return nil
}

// Codes of the results the tests and the cuBLAS path name.
const (
	Success              = int(C.CUDA_SUCCESS)
	IllegalAddress       = int(C.CUDA_ERROR_ILLEGAL_ADDRESS)
	LaunchFailed         = int(C.CUDA_ERROR_LAUNCH_FAILED)
	ECCUncorrectable     = int(C.CUDA_ERROR_ECC_UNCORRECTABLE)
	MPSTerminated        = int(C.CUDA_ERROR_MPS_CLIENT_TERMINATED)
	OutOfMemory          = int(C.CUDA_ERROR_OUT_OF_MEMORY)
	NoDevice             = int(C.CUDA_ERROR_NO_DEVICE)
	InvalidValue         = int(C.CUDA_ERROR_INVALID_VALUE)
	LaunchOutOfResources = int(C.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
)

//go:build cuda

package cu

/*
#include <cuda.h>

static const char *cuErrorName(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "";
	return s;
}

static const char *cuErrorString(CUresult r) {
	const char *s = 0;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == 0) return "";
	return s;
}
*/
import "C"

import (
	"fmt"
	"reflect"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda/cu/internal/curesult"
)

// Error is a failed CUDA driver or cuBLAS call. It wraps
// inference.ErrOutOfMemory, inference.ErrNoDevice or
// inference.ErrDeviceFailed where the status means that (see the package
// doc and package curesult), and the gorgonia.org/cu result, if any, so
// errors.Is(err, cu.OutOfMemory) works too.
type Error struct {
	Call   string // the call and its arguments: "cuMemAlloc(1048576 bytes)"
	Status string // the status name: "CUDA_ERROR_OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED"
	Code   int    // the CUresult or cublasStatus_t
	Detail string // the status's description, or the JIT compiler's log
	Kind   error  // inference.ErrOutOfMemory, ErrNoDevice, ErrDeviceFailed, or nil
	Err    error  // the gorgonia.org/cu result, or nil
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("cu: %s: %s (%d)", e.Call, e.Status, e.Code)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel and the gorgonia.org/cu result.
func (e *Error) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// driverErr describes a failed driver call from gorgonia.org/cu's result,
// whose type (cu.cuResult, an int) is unexported; nil stays nil.
func driverErr(call string, err error) error {
	if err == nil {
		return nil
	}
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Int {
		return fmt.Errorf("cu: %s: %w", call, err)
	}
	e := cuResultErr(call, C.CUresult(v.Int()))
	e.Err = err
	return e
}

// cuResultErr describes a CUresult other than CUDA_SUCCESS.
func cuResultErr(call string, r C.CUresult) *Error {
	e := &Error{
		Call:   call,
		Code:   int(r),
		Status: C.GoString(C.cuErrorName(r)),
		Detail: C.GoString(C.cuErrorString(r)),
	}
	if e.Status == "" {
		e.Status = "CUresult"
	}
	e.Kind = curesult.Kind(int(r))
	return e
}

// noDevice marks err, from Open, as a device that does not answer.
func noDevice(err error) error {
	if e, ok := err.(*Error); ok {
		e.Kind = inference.ErrNoDevice
		return e
	}
	return fmt.Errorf("%w: %w", err, inference.ErrNoDevice)
}

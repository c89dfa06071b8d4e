//go:build cuda

// Package cuinit initialises the CUDA driver before gorgonia.org/cu does,
// so that a binary built with the cuda tag on a machine where the driver
// does not answer says why on stderr and exits with status 2, the status
// the project's commands use for "no device".
//
// gorgonia.org/cu v0.9.6 calls cuInit(0) in its package init and, when that
// fails, prints "Error in initialization, please refer to … for details on:
// NoDevice" on stdout and calls os.Exit(1) (docs/design.md, rule 1).
// Nothing can stop that exit once its init runs; this package only runs
// first. Go initialises packages in import-path order among those whose
// imports are ready (the spec's rule since Go 1.21): this package imports
// only C, fmt and os, which gorgonia.org/cu imports as well, and
// "github.com/…" sorts before "gorgonia.org/…", so its init always runs
// before gorgonia's in a binary that links both. inference/cuda/cu imports
// it for that reason alone.
package cuinit

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcuda
#include <cuda.h>

static const char *cuinitErrorName(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "unknown CUresult";
	return s;
}

static const char *cuinitErrorString(CUresult r) {
	const char *s = 0;
	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == 0) return "";
	return s;
}
*/
import "C"

import (
	"fmt"
	"os"
)

// ExitNoDevice is the exit status of a process whose cuInit failed.
const ExitNoDevice = 2

func init() {
	r := C.cuInit(0)
	if r == C.CUDA_SUCCESS {
		return
	}
	fmt.Fprintf(os.Stderr, "beamml: cuInit failed: %s (%d): %s\n"+
		"beamml: this binary was built with -tags cuda and links gorgonia.org/cu, whose package init exits the process when cuInit fails;\n"+
		"beamml: it exits here with status %d instead. Run it where an NVIDIA GPU and driver are visible, or build it without the cuda tag to run models on the CPU.\n",
		C.GoString(C.cuinitErrorName(r)), int(r), C.GoString(C.cuinitErrorString(r)), ExitNoDevice)
	os.Exit(ExitNoDevice)
}

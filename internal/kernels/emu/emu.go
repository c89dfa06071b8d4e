// Package emu runs the CUDA kernels of internal/kernels on the host.
// The same .cu sources that nvcc compiles to PTX compile here with the
// host C++ compiler (emu.h maps blockIdx, threadIdx, __shared__ and
// __syncthreads onto a loop over threads and coroutines), so the kernels
// are tested against the CPU backend on machines without a GPU
// (docs/design.md, rule 6). The simulated device (internal/sim) launches
// them through a Runner.
//
// Nothing in a production binary imports this package: it exists for
// tests, the conformance runner's sim device and the benchmarks.
package emu

// nvcc contracts a*b+c into a fused multiply-add by default (--fmad=true),
// and so does the emulator: g++ contracts C++ by default where the target
// has FMA instructions (emu.h asks clang to as well), which arm64 always
// has and amd64 from x86-64-v3 (Haswell, 2013) on, hence -march there (cgo
// refuses -mfma and -ffp-contract). Where a kernel needs a product rounded
// alone, as the CPU backend rounds it, it says so with __dmul_rn, which
// emu.h keeps unfused on the host.

/*
#cgo CXXFLAGS: -std=c++17 -O2 -fno-strict-aliasing -Wno-unused-variable
#cgo amd64 CXXFLAGS: -march=x86-64-v3
#include <stdlib.h>
#include "emu_c.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"unsafe"
)

// Runner launches emulated kernels. The kernels' pointer parameters are
// host addresses (the sim device's memory). Launches are serialised: the
// emulated kernels keep their shared memory in static storage.
type Runner struct {
	mu       sync.Mutex
	launched map[string]int
}

// NewRunner returns a Runner.
func NewRunner() *Runner { return &Runner{launched: map[string]int{}} }

// Kernels lists the kernels the emulator was built with, sorted.
func Kernels() []string {
	n := int(C.emu_kernel_count())
	names := make([]string, n)
	for i := range n {
		names[i] = C.GoString(C.emu_kernel_name(C.int(i)))
	}
	slices.Sort(names)
	return names
}

// Launch runs kernel name on a grid of blocks. args are the kernel's
// parameters as 8-byte words: addresses, long long values and the bits of
// doubles.
func (r *Runner) Launch(name string, grid, block [3]uint32, args []uint64) error {
	dims := [6]C.uint{C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block[0]), C.uint(block[1]), C.uint(block[2])}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var errbuf [256]C.char
	var argp *C.uint64_t
	if len(args) > 0 {
		argp = (*C.uint64_t)(unsafe.Pointer(&args[0]))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if C.emu_launch(cname, &dims[0], argp, C.int(len(args)), &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("emu: %s: %w", C.GoString(&errbuf[0]), ErrLaunch)
	}
	r.launched[name]++
	return nil
}

// Launched returns how many times each kernel ran on r.
func (r *Runner) Launched() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.launched))
	for k, v := range r.launched {
		out[k] = v
	}
	return out
}

// ErrLaunch marks a launch the emulator refused.
var ErrLaunch = errors.New("bad kernel launch")

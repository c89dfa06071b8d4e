//go:build cuda

// Package cu is the CUDA Device of the GPU backend: the driver API through
// gorgonia.org/cu v0.9.6 (primary context, device memory, copies, kernel
// modules, launches, streams), with cgo of its own where v0.9.6 has no
// binding (pinned host memory, CUDA graphs), and cuBLAS through a small
// binding of its own (cublasSgemm_v2, cublasSgemmStridedBatched and their
// Ex forms on device pointers, bound to the caller's stream;
// docs/design.md, rule 9).
//
// cuBLAS is loaded at run time (internal/cublas: dlopen of libcublas.so.12,
// .13 or .11, or $BEAMML_CUBLAS), not linked: a binary links only libcuda
// and libc, so a worker built with Debian's CUDA 11.8 toolkit starts in the
// CUDA 12 container, and a missing cuBLAS is an error of Open that lists
// the files tried rather than a loader failure before main.
//
// It is for pipeline authors building the GPU worker: importing it, in a
// file with the cuda build tag, registers the cuda backend on every device
// the driver sees (OpenAll: CUDA_VISIBLE_DEVICES chooses them; with several,
// each model gets a replica per GPU), and nothing else of it needs calling:
//
//	import _ "github.com/beamml/beamml/inference/cuda/cu" // in a binary built with CGO_ENABLED=1 -tags cuda
//
// Every file has the build constraint cuda, so the default build never links
// CUDA (docs/design.md, rules 1–3).
//
// # No GPU: the process exits at init
//
// gorgonia.org/cu v0.9.6's package init calls cuInit(0) and, when it fails
// (no driver, no device, CUDA_VISIBLE_DEVICES empty), prints
//
//	Error in initialization, please refer to "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html" for details on: NoDevice
//
// on stdout and calls os.Exit(1), before main runs. Checked on a machine
// with Debian's driver library (libcuda 535) and no GPU, where cuInit
// answers CUDA_ERROR_NO_DEVICE. A binary that imports this package cannot
// fall back to the CPU at run time, and its tests cannot run without a GPU.
// This package imports internal/cuinit, whose init runs first (see there why),
// calls cuInit itself, and on failure prints the CUDA error name and
// description on stderr and exits with status 2 (the project's "no device"
// status), so the self-check and the conformance runner built with the
// cuda tag report a missing GPU as such.
//
// # Contexts and OS threads
//
// A CUDA context is current per OS thread, and goroutines move between
// threads between any two statements. Open retains the device's primary
// context (the one the CUDA runtime, and so cuBLAS, uses too). Every method
// then locks its goroutine to its thread (runtime.LockOSThread), makes the
// context current there (cuCtxSetCurrent), makes its driver calls, and
// unlocks. So any goroutine may call any method, concurrently; the caller
// never sees a thread. The context stays current on the threads it was
// made current on, which matters only to other CUDA code in the process
// that expects a different context there without setting it. gorgonia.org/cu's own answer, Ctx, funnels every call
// through one locked goroutine; that serialises all concurrent runs of a
// process behind one channel, which is why it is not used.
//
// cuBLAS work goes through a handle per stream, created and bound to the
// stream by its first product, so concurrent Runs share no handle and no
// lock. A product on the legacy default stream uses the Device's own
// handle, under a mutex: binding it to the stream and queuing the product
// are two calls.
//
// # Streams and synchronous copies
//
// Streams are created non-blocking (CU_STREAM_NON_BLOCKING): work on one
// never waits for the legacy default stream, so a synchronous copy made by
// one Run does not stall the streams of the others. CopyHtoD therefore waits
// for the legacy stream after cuMemcpyHtoD: from pageable memory that call
// may return before the DMA has landed, and a kernel queued next on a
// non-blocking stream would not wait for it. CopyDtoH returns once the data
// is on the host, as cuMemcpyDtoH does.
//
// # Errors
//
// Every failed call returns an *Error naming the call, its arguments and the
// CUDA or cuBLAS status. CUDA_ERROR_OUT_OF_MEMORY and
// CUBLAS_STATUS_ALLOC_FAILED wrap inference.ErrOutOfMemory; no device, no
// or mismatched driver, an unavailable device and MPS connection failures
// wrap inference.ErrNoDevice, and so does every failure of Open. A sticky
// error (a kernel fault such as CUDA_ERROR_ILLEGAL_ADDRESS or
// CUDA_ERROR_LAUNCH_FAILED, an uncorrectable ECC error, the MPS server
// ending the client: package curesult lists them) wraps
// inference.ErrDeviceFailed: it is reported by the next Sync, or by any
// later call, and leaves the context unusable, so only a new process
// recovers. A cuBLAS call that fails with CUBLAS_STATUS_EXECUTION_FAILED
// asks the stream whether the context is lost, and wraps
// inference.ErrDeviceFailed when it is. The executor (inference/cuda)
// then fails every later Run at once, and RunInference ends the process.
package cu

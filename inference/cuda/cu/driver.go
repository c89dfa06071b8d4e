//go:build cuda

package cu

// Debian's toolkit puts cuda.h, cublas_v2.h, libcuda and libcublas in the
// default paths; NVIDIA's CUDA images put them under /usr/local/cuda, with
// a link-time libcuda stub in lib64/stubs for builds on machines without a
// driver (the real one is mounted into the container at run time).

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcuda
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

// gorgonia.org/cu v0.9.6 binds cuMemFreeHost but not its allocator.
static CUresult beammlAllocHost(void **p, unsigned long long bytes) {
	return cuMemHostAlloc(p, (size_t)bytes, 0);
}

static CUresult beammlFreeHost(void *p) { return cuMemFreeHost(p); }

// CUDA graphs: capture a stream's work, instantiate it, replay it. The
// capture is relaxed: other threads may allocate (other workspaces) while
// one stream is captured, and Go may end it on another OS thread than it
// began on.
static CUresult beammlBeginCapture(CUstream s) { return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED); }

static CUresult beammlEndCapture(CUstream s, CUgraphExec *exec) {
	CUgraph g = 0;
	CUresult r = cuStreamEndCapture(s, &g);
	if (r != CUDA_SUCCESS) return r;
	r = cuGraphInstantiateWithFlags(exec, g, 0);
	cuGraphDestroy(g);
	return r;
}

static CUresult beammlGraphLaunch(CUgraphExec e, CUstream s) { return cuGraphLaunch(e, s); }
static CUresult beammlGraphDestroy(CUgraphExec e) { return cuGraphExecDestroy(e); }

// beammlStreamStatus is cuStreamQuery, whose CUDA_ERROR_NOT_READY (work
// still queued) is no error.
static CUresult beammlStreamStatus(CUstream s) {
	CUresult r = cuStreamQuery(s);
	return r == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : r;
}

// beammlJITLog loads a PTX image again, with the JIT compiler's error log
// in log, to say why it failed the first time.
static void beammlJITLog(const void *image, char *log, unsigned int size) {
	CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[2] = {log, (void *)(uintptr_t)size};
	CUmodule mod;
	log[0] = 0;
	if (cuModuleLoadDataEx(&mod, image, 2, opts, vals) == CUDA_SUCCESS) cuModuleUnload(mod);
	log[size - 1] = 0;
}
*/
import "C"

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	gocu "gorgonia.org/cu"
)

// allocHost allocates page-locked host memory; the context must be current.
func allocHost(n int64) ([]byte, error) {
	var p unsafe.Pointer
	if r := C.beammlAllocHost(&p, C.ulonglong(n)); r != C.CUDA_SUCCESS {
		return nil, cuResultErr(fmt.Sprintf("cuMemHostAlloc(%d bytes)", n), r)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// freeHost releases memory from allocHost; the context must be current.
func freeHost(b []byte) error {
	if r := C.beammlFreeHost(unsafe.Pointer(&b[0])); r != C.CUDA_SUCCESS {
		return cuResultErr(fmt.Sprintf("cuMemFreeHost(%d bytes)", len(b)), r)
	}
	return nil
}

// streamStatus reports an error that s, or its context, holds: after a
// sticky error every stream answers it. The context must be current.
func streamStatus(s gocu.Stream) error {
	if r := C.beammlStreamStatus(cstream(s)); r != C.CUDA_SUCCESS {
		return cuResultErr("cuStreamQuery", r)
	}
	return nil
}

// graph is the Graph of a Device: an instantiated CUDA graph.
type graph struct{ exec C.CUgraphExec }

func cstream(s gocu.Stream) C.CUstream { return C.CUstream(unsafe.Pointer(s.C())) }

// beginCapture starts capturing s; the context must be current.
func beginCapture(s gocu.Stream) error {
	if r := C.beammlBeginCapture(cstream(s)); r != C.CUDA_SUCCESS {
		return cuResultErr("cuStreamBeginCapture(CU_STREAM_CAPTURE_MODE_RELAXED)", r)
	}
	return nil
}

// endCapture ends the capture of s and instantiates the graph.
func endCapture(s gocu.Stream) (*graph, error) {
	g := &graph{}
	if r := C.beammlEndCapture(cstream(s), &g.exec); r != C.CUDA_SUCCESS {
		return nil, cuResultErr("cuStreamEndCapture, cuGraphInstantiateWithFlags", r)
	}
	return g, nil
}

func launchGraph(g *graph, s gocu.Stream) error {
	if r := C.beammlGraphLaunch(g.exec, cstream(s)); r != C.CUDA_SUCCESS {
		return cuResultErr("cuGraphLaunch", r)
	}
	return nil
}

func destroyGraph(g *graph) error {
	if r := C.beammlGraphDestroy(g.exec); r != C.CUDA_SUCCESS {
		return cuResultErr("cuGraphExecDestroy", r)
	}
	return nil
}

// jitLog returns the JIT compiler's error log for a PTX image that
// cuModuleLoadData rejected; the context must be current. The buffers are
// C memory: gorgonia.org/cu's LoadDataEx would hand the driver a Go buffer
// inside a Go array, which cgo's pointer check rejects.
func jitLog(ptx []byte) string {
	const size = 16 << 10
	image := C.CBytes(append(slices.Clip(bytes.TrimRight(ptx, "\x00")), 0))
	defer C.free(image)
	log := (*C.char)(C.malloc(size))
	defer C.free(unsafe.Pointer(log))
	C.beammlJITLog(image, log, size)
	return strings.TrimSpace(C.GoString(log))
}

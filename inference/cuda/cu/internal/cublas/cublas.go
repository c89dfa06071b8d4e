//go:build cuda

// Package cublas loads cuBLAS at run time with dlopen and calls the few
// functions the GPU backend uses: handle creation, math mode, stream binding
// and GEMM on float32 matrices (plain and strided-batched; in float32, or on
// tensor cores with half inputs).
//
// Linking -lcublas would tie the worker binary to the cuBLAS soname of the
// toolkit it was built with: a worker built on a host with Debian's CUDA 11.8
// asks the loader for libcublas.so.11 and cannot start in the CUDA 12
// container, before main runs and with nothing in the job's logs but the
// loader's message. Loaded here, the same binary runs against libcublas.so.12
// in the container and libcublas.so.11 on a CUDA 11 host: these v2 entry
// points have kept their signatures since CUDA 10 (cublasGemmEx's and
// cublasGemmStridedBatchedEx's since CUDA 11, which made their compute type
// a cublasComputeType_t). Load says which files it tried when none loads.
//
// The package does not initialise the driver and does not import
// gorgonia.org/cu, so its tests run on a machine without a GPU
// (docs/design.md, rule 1 keeps inference/cuda/cu's own tests off such
// machines).
package cublas

/*
#cgo linux CFLAGS: -I/usr/local/cuda/include
#cgo linux LDFLAGS: -ldl
#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef cublasStatus_t (*beammlCreateFn)(cublasHandle_t *);
typedef cublasStatus_t (*beammlDestroyFn)(cublasHandle_t);
typedef cublasStatus_t (*beammlGetVersionFn)(cublasHandle_t, int *);
typedef cublasStatus_t (*beammlSetMathModeFn)(cublasHandle_t, cublasMath_t);
typedef cublasStatus_t (*beammlSetStreamFn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*beammlSgemmFn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
	int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);
typedef cublasStatus_t (*beammlSgemmBatchedFn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
	int, int, int, const float *, const float *, int, long long, const float *, int, long long,
	const float *, float *, int, long long, int);
typedef cublasStatus_t (*beammlGemmExFn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
	int, int, int, const void *, const void *, cudaDataType, int, const void *, cudaDataType, int,
	const void *, void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*beammlGemmBatchedExFn)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
	int, int, int, const void *, const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
	const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef const char *(*beammlStatusNameFn)(cublasStatus_t);

// beammlLib holds the library and its entry points. The status-name
// functions are optional (cuBLAS 11.4 added them); the others are not.
typedef struct {
	void *lib;
	beammlCreateFn create;
	beammlDestroyFn destroy;
	beammlGetVersionFn getVersion;
	beammlSetMathModeFn setMathMode;
	beammlSetStreamFn setStream;
	beammlSgemmFn sgemm;
	beammlSgemmBatchedFn sgemmBatched;
	beammlGemmExFn gemmEx;
	beammlGemmBatchedExFn gemmBatchedEx;
	beammlStatusNameFn statusName;
	beammlStatusNameFn statusString;
} beammlLib;

// beammlOpen loads path into l. On failure it returns a malloc'd message
// (dlerror's, or the missing symbol's name) and leaves nothing loaded.
static char *beammlOpen(const char *path, beammlLib *l) {
	memset(l, 0, sizeof *l);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		return strdup(e ? e : "dlopen failed");
	}
	struct { void **fn; const char *name; int optional; } syms[] = {
		{(void **)&l->create, "cublasCreate_v2", 0},
		{(void **)&l->destroy, "cublasDestroy_v2", 0},
		{(void **)&l->getVersion, "cublasGetVersion_v2", 0},
		{(void **)&l->setMathMode, "cublasSetMathMode", 0},
		{(void **)&l->setStream, "cublasSetStream_v2", 0},
		{(void **)&l->sgemm, "cublasSgemm_v2", 0},
		{(void **)&l->sgemmBatched, "cublasSgemmStridedBatched", 0},
		{(void **)&l->gemmEx, "cublasGemmEx", 0},
		{(void **)&l->gemmBatchedEx, "cublasGemmStridedBatchedEx", 0},
		{(void **)&l->statusName, "cublasGetStatusName", 1},
		{(void **)&l->statusString, "cublasGetStatusString", 1},
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		*syms[i].fn = dlsym(h, syms[i].name);
		if (!*syms[i].fn && !syms[i].optional) {
			char *msg = malloc(strlen(syms[i].name) + 32);
			strcpy(msg, "no symbol ");
			strcat(msg, syms[i].name);
			dlclose(h);
			memset(l, 0, sizeof *l);
			return msg;
		}
	}
	l->lib = h;
	return NULL;
}

static cublasStatus_t beammlCreate(beammlLib *l, cublasHandle_t *h) { return l->create(h); }
static cublasStatus_t beammlDestroy(beammlLib *l, cublasHandle_t h) { return l->destroy(h); }
static cublasStatus_t beammlGetVersion(beammlLib *l, cublasHandle_t h, int *v) { return l->getVersion(h, v); }
static cublasStatus_t beammlSetMathMode(beammlLib *l, cublasHandle_t h, cublasMath_t m) { return l->setMathMode(h, m); }
static cublasStatus_t beammlSetStream(beammlLib *l, cublasHandle_t h, void *s) { return l->setStream(h, (cudaStream_t)s); }

static const char *beammlStatusName(beammlLib *l, cublasStatus_t s) {
	return l->statusName ? l->statusName(s) : "";
}
static const char *beammlStatusString(beammlLib *l, cublasStatus_t s) {
	return l->statusString ? l->statusString(s) : "";
}

// beammlSgemm queues a product: cublasSgemm_v2 or its strided batched
// form on float32 matrices; with fast16f, or with half A and B (halfAB)
// or a half C (halfC), cublasGemmEx or its strided batched form, A and B
// of type CUDA_R_16F when halfAB (else CUDA_R_32F), C likewise by halfC,
// computing with CUBLAS_COMPUTE_32F_FAST_16F when fast16f and
// CUBLAS_COMPUTE_32F otherwise. The device pointers travel as unsigned long
// long (CUdeviceptr) and become pointers here, so the Go side never turns
// an integer into a pointer.
static cublasStatus_t beammlSgemm(beammlLib *l, cublasHandle_t h, int fast16f, int halfAB, int halfC, int transA,
		int transB, int m, int n, int k, float alpha, unsigned long long a, int lda, long long strideA,
		unsigned long long b, int ldb, long long strideB,
		float beta, unsigned long long c, int ldc, long long strideC, int batch) {
	cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType ab = halfAB ? CUDA_R_16F : CUDA_R_32F, ct = halfC ? CUDA_R_16F : CUDA_R_32F;
	cublasComputeType_t compute = fast16f ? CUBLAS_COMPUTE_32F_FAST_16F : CUBLAS_COMPUTE_32F;
	if ((fast16f || halfAB || halfC) && batch == 1) {
		return l->gemmEx(h, opA, opB, m, n, k, &alpha,
			(const void *)a, ab, lda, (const void *)b, ab, ldb,
			&beta, (void *)c, ct, ldc, compute, CUBLAS_GEMM_DEFAULT);
	}
	if (fast16f || halfAB || halfC) {
		return l->gemmBatchedEx(h, opA, opB, m, n, k, &alpha,
			(const void *)a, ab, lda, strideA, (const void *)b, ab, ldb, strideB,
			&beta, (void *)c, ct, ldc, strideC, batch, compute, CUBLAS_GEMM_DEFAULT);
	}
	if (batch == 1) {
		return l->sgemm(h, opA, opB, m, n, k, &alpha,
			(const float *)a, lda, (const float *)b, ldb, &beta, (float *)c, ldc);
	}
	return l->sgemmBatched(h, opA, opB, m, n, k, &alpha,
		(const float *)a, lda, strideA, (const float *)b, ldb, strideB,
		&beta, (float *)c, ldc, strideC, batch);
}

*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// Sonames are the files Load tries, in order, when $BEAMML_CUBLAS is unset:
// CUDA 12's first (the container's), then CUDA 13's and 11's, then the
// unversioned development link.
var Sonames = []string{"libcublas.so.12", "libcublas.so.13", "libcublas.so.11", "libcublas.so"}

// Lib is a loaded cuBLAS.
type Lib struct {
	c    C.beammlLib
	path string
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load loads cuBLAS once per process: the file $BEAMML_CUBLAS names, or
// else the first of [Sonames] the dynamic loader finds (it searches
// LD_LIBRARY_PATH, the ld.so cache and the default directories).
func Load() (*Lib, error) {
	loadOnce.Do(func() {
		names := Sonames
		if p := os.Getenv("BEAMML_CUBLAS"); p != "" {
			names = []string{p}
		}
		loaded, loadErr = Open(names...)
	})
	return loaded, loadErr
}

// Open loads the first of names that loads and has every entry point the
// backend calls. The error lists each name with the loader's reason.
func Open(names ...string) (*Lib, error) {
	var why []string
	for _, name := range names {
		cname := C.CString(name)
		l := &Lib{path: name}
		msg := C.beammlOpen(cname, &l.c)
		C.free(unsafe.Pointer(cname))
		if msg == nil {
			return l, nil
		}
		why = append(why, C.GoString(msg))
		C.free(unsafe.Pointer(msg))
	}
	return nil, fmt.Errorf("cublas: cannot load cuBLAS (tried %s; LD_LIBRARY_PATH=%q; set BEAMML_CUBLAS to a file to use it): %s",
		strings.Join(names, ", "), os.Getenv("LD_LIBRARY_PATH"), strings.Join(why, "; "))
}

// Path is the name the library was loaded by.
func (l *Lib) Path() string { return l.path }

// Status is a cuBLAS call that answered a status other than
// CUBLAS_STATUS_SUCCESS.
type Status struct {
	Call   string // e.g. "cublasCreate_v2"
	Code   int
	Name   string // e.g. "CUBLAS_STATUS_ALLOC_FAILED"
	Detail string // cuBLAS's description, where the library has one
}

func (s *Status) Error() string {
	msg := fmt.Sprintf("cublas: %s: %s (%d)", s.Call, s.Name, s.Code)
	if s.Detail != "" {
		msg += ": " + s.Detail
	}
	return msg
}

// The statuses the backend tells apart.
const (
	StatusNotInitialized = int(C.CUBLAS_STATUS_NOT_INITIALIZED)
	StatusAllocFailed    = int(C.CUBLAS_STATUS_ALLOC_FAILED)
	StatusArchMismatch   = int(C.CUBLAS_STATUS_ARCH_MISMATCH)
	// StatusExecutionFailed: the GPU program failed to run, which a lost
	// context causes too.
	StatusExecutionFailed = int(C.CUBLAS_STATUS_EXECUTION_FAILED)
)

// statusNames are the names for libraries without cublasGetStatusName.
var statusNames = map[C.cublasStatus_t]string{
	C.CUBLAS_STATUS_NOT_INITIALIZED:  "CUBLAS_STATUS_NOT_INITIALIZED",
	C.CUBLAS_STATUS_ALLOC_FAILED:     "CUBLAS_STATUS_ALLOC_FAILED",
	C.CUBLAS_STATUS_INVALID_VALUE:    "CUBLAS_STATUS_INVALID_VALUE",
	C.CUBLAS_STATUS_ARCH_MISMATCH:    "CUBLAS_STATUS_ARCH_MISMATCH",
	C.CUBLAS_STATUS_MAPPING_ERROR:    "CUBLAS_STATUS_MAPPING_ERROR",
	C.CUBLAS_STATUS_EXECUTION_FAILED: "CUBLAS_STATUS_EXECUTION_FAILED",
	C.CUBLAS_STATUS_INTERNAL_ERROR:   "CUBLAS_STATUS_INTERNAL_ERROR",
	C.CUBLAS_STATUS_NOT_SUPPORTED:    "CUBLAS_STATUS_NOT_SUPPORTED",
	C.CUBLAS_STATUS_LICENSE_ERROR:    "CUBLAS_STATUS_LICENSE_ERROR",
}

func (l *Lib) status(call string, s C.cublasStatus_t) error {
	if s == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	st := &Status{
		Call:   call,
		Code:   int(s),
		Name:   C.GoString(C.beammlStatusName(&l.c, s)),
		Detail: C.GoString(C.beammlStatusString(&l.c, s)),
	}
	if st.Name == "" {
		st.Name = statusNames[s]
	}
	if st.Name == "" {
		st.Name = "CUBLAS_STATUS_UNKNOWN"
	}
	return st
}

// ErrClosed is returned by calls on a destroyed handle.
var ErrClosed = errors.New("cublas: the handle is destroyed")

// Handle is a cuBLAS handle. It is not safe for concurrent use: cuBLAS
// binds one stream to a handle at a time.
type Handle struct {
	l *Lib
	h C.cublasHandle_t
}

// Create creates a handle in the CUDA context current on the calling
// thread, with the default math mode: float32 products stay in float32 (no
// TF32 tensor cores), so results stay within the CPU backend's tolerances.
func (l *Lib) Create() (*Handle, error) {
	h := &Handle{l: l}
	if err := l.status("cublasCreate_v2", C.beammlCreate(&l.c, &h.h)); err != nil {
		return nil, err
	}
	if err := l.status("cublasSetMathMode(CUBLAS_DEFAULT_MATH)", C.beammlSetMathMode(&l.c, h.h, C.CUBLAS_DEFAULT_MATH)); err != nil {
		C.beammlDestroy(&l.c, h.h)
		return nil, err
	}
	return h, nil
}

// SetTF32 sets the handle's math mode: CUBLAS_TF32_TENSOR_OP_MATH (single
// precision products on tensor cores with TF32 inputs, on GPUs that have
// them) when tf32, CUBLAS_DEFAULT_MATH (float32 throughout) otherwise.
func (h *Handle) SetTF32(tf32 bool) error {
	if h.h == nil {
		return ErrClosed
	}
	if tf32 {
		return h.l.status("cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH)", C.beammlSetMathMode(&h.l.c, h.h, C.CUBLAS_TF32_TENSOR_OP_MATH))
	}
	return h.l.status("cublasSetMathMode(CUBLAS_DEFAULT_MATH)", C.beammlSetMathMode(&h.l.c, h.h, C.CUBLAS_DEFAULT_MATH))
}

// Version is the loaded library's version, e.g. 120402 for 12.4.2.
func (h *Handle) Version() (int, error) {
	if h.h == nil {
		return 0, ErrClosed
	}
	var v C.int
	if err := h.l.status("cublasGetVersion_v2", C.beammlGetVersion(&h.l.c, h.h, &v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetStream binds the handle to stream (a CUstream; nil is the default
// stream).
func (h *Handle) SetStream(stream unsafe.Pointer) error {
	if h.h == nil {
		return ErrClosed
	}
	return h.l.status("cublasSetStream_v2", C.beammlSetStream(&h.l.c, h.h, stream))
}

// Gemm is one column-major product C = alpha·op(A)·op(B) + beta·C, or batch
// of them with the given strides, on device pointers: float32 matrices, or
// float16 ones (IEEE binary16) where HalfAB (A and B) and HalfC (C) say.
type Gemm struct {
	HalfAB, HalfC             bool
	TransA, TransB            bool
	M, N, K                   int32
	Alpha, Beta               float32
	A, B, C                   uint64 // CUdeviceptr
	LDA, LDB, LDC             int32
	StrideA, StrideB, StrideC int64
	Batch                     int32
}

// Sgemm queues g on the bound stream: cublasSgemm_v2 when g.Batch is 1,
// cublasSgemmStridedBatched otherwise; with float16 matrices
// (g.HalfAB, g.HalfC), cublasGemmEx or cublasGemmStridedBatchedEx with
// CUBLAS_COMPUTE_32F: float32 accumulation (on tensor cores, where the GPU
// has them), C rounded to float16 once when it is float16.
func (h *Handle) Sgemm(g Gemm) error { return h.gemm(g, false) }

// GemmFast16F queues g on the bound stream with float32 A, B and C and the
// compute type CUBLAS_COMPUTE_32F_FAST_16F (cublasGemmEx when g.Batch is
// 1, cublasGemmStridedBatchedEx otherwise): cuBLAS may convert A and B to
// half and multiply on tensor cores, accumulating in float32 (its header
// allows TF32 instead; GPUs without tensor cores compute in float32).
// Inputs beyond half's range (±65504) become ±Inf.
func (h *Handle) GemmFast16F(g Gemm) error { return h.gemm(g, true) }

// gemm is Sgemm, or GemmFast16F when fast16f.
func (h *Handle) gemm(g Gemm, fast16f bool) error {
	if h.h == nil {
		return ErrClosed
	}
	call := "cublasSgemm_v2"
	switch {
	case fast16f && g.Batch > 1:
		call = "cublasGemmStridedBatchedEx(CUBLAS_COMPUTE_32F_FAST_16F)"
	case fast16f:
		call = "cublasGemmEx(CUBLAS_COMPUTE_32F_FAST_16F)"
	case (g.HalfAB || g.HalfC) && g.Batch > 1:
		call = "cublasGemmStridedBatchedEx(CUBLAS_COMPUTE_32F)"
	case g.HalfAB || g.HalfC:
		call = "cublasGemmEx(CUBLAS_COMPUTE_32F)"
	case g.Batch > 1:
		call = "cublasSgemmStridedBatched"
	}
	return h.l.status(call, C.beammlSgemm(&h.l.c, h.h, cbool(fast16f), cbool(g.HalfAB), cbool(g.HalfC), cbool(g.TransA), cbool(g.TransB),
		C.int(g.M), C.int(g.N), C.int(g.K),
		C.float(g.Alpha), C.ulonglong(g.A), C.int(g.LDA), C.longlong(g.StrideA),
		C.ulonglong(g.B), C.int(g.LDB), C.longlong(g.StrideB),
		C.float(g.Beta), C.ulonglong(g.C), C.int(g.LDC), C.longlong(g.StrideC), C.int(g.Batch)))
}

// Destroy releases the handle; later calls return ErrClosed.
func (h *Handle) Destroy() error {
	if h.h == nil {
		return nil
	}
	err := h.l.status("cublasDestroy_v2", C.beammlDestroy(&h.l.c, h.h))
	h.h = nil
	return err
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

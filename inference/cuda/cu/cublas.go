//go:build cuda

package cu

/*
#include <cuda.h>
#include <cublas_v2.h>

// The device pointers travel as CUdeviceptr (an integer) and become float
// pointers here, so the Go side never turns an integer into a pointer.
static cublasStatus_t beammlSgemm(cublasHandle_t h, int transA, int transB, int m, int n, int k,
		float alpha, CUdeviceptr a, int lda, long long strideA,
		CUdeviceptr b, int ldb, long long strideB,
		float beta, CUdeviceptr c, int ldc, long long strideC, int batch) {
	cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (batch == 1) {
		return cublasSgemm_v2(h, opA, opB, m, n, k, &alpha,
			(const float *)a, lda, (const float *)b, ldb, &beta, (float *)c, ldc);
	}
	return cublasSgemmStridedBatched(h, opA, opB, m, n, k, &alpha,
		(const float *)a, lda, strideA, (const float *)b, ldb, strideB,
		&beta, (float *)c, ldc, strideC, batch);
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/beamml/beamml/inference/cuda"
	gocu "gorgonia.org/cu"
)

// newBLAS creates the cuBLAS handle; the context must be current.
func newBLAS() (C.cublasHandle_t, error) {
	var h C.cublasHandle_t
	if s := C.cublasCreate_v2(&h); s != C.CUBLAS_STATUS_SUCCESS {
		return nil, blasErr("cublasCreate_v2", s)
	}
	// The default math mode keeps float32 products in float32: no TF32
	// tensor cores, so results stay within the CPU backend's tolerances.
	if s := C.cublasSetMathMode(h, C.CUBLAS_DEFAULT_MATH); s != C.CUBLAS_STATUS_SUCCESS {
		C.cublasDestroy_v2(h)
		return nil, blasErr("cublasSetMathMode(CUBLAS_DEFAULT_MATH)", s)
	}
	return h, nil
}

func destroyBLAS(h C.cublasHandle_t) error {
	if s := C.cublasDestroy_v2(h); s != C.CUBLAS_STATUS_SUCCESS {
		return blasErr("cublasDestroy_v2", s)
	}
	return nil
}

// checkGemm validates g as the simulated device does, so that a bad
// product fails with the same message on both instead of cuBLAS's
// CUBLAS_STATUS_INVALID_VALUE.
func checkGemm(g cuda.Gemm) error {
	if _, _, _, _, err := g.Shapes(); err != nil {
		return fmt.Errorf("cu: %w", err)
	}
	for _, v := range []int{g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.Batch} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cu: gemm M=%d N=%d K=%d lda=%d ldb=%d ldc=%d batch %d: cuBLAS takes 32-bit sizes",
				g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.Batch)
		}
	}
	return nil
}

// gemm binds the handle to s and queues g; the context must be current and
// d.blasMu held.
func (d *Device) gemm(s gocu.Stream, g cuda.Gemm) error {
	if st := C.cublasSetStream_v2(d.blas, C.cudaStream_t(unsafe.Pointer(s.C()))); st != C.CUBLAS_STATUS_SUCCESS {
		return blasErr("cublasSetStream_v2", st)
	}
	st := C.beammlSgemm(d.blas, cbool(g.TransA), cbool(g.TransB), C.int(g.M), C.int(g.N), C.int(g.K),
		C.float(g.Alpha), C.CUdeviceptr(g.A), C.int(g.LDA), C.longlong(g.StrideA),
		C.CUdeviceptr(g.B), C.int(g.LDB), C.longlong(g.StrideB),
		C.float(g.Beta), C.CUdeviceptr(g.C), C.int(g.LDC), C.longlong(g.StrideC), C.int(g.Batch))
	if st != C.CUBLAS_STATUS_SUCCESS {
		call := "cublasSgemm_v2"
		if g.Batch > 1 {
			call = "cublasSgemmStridedBatched"
		}
		return blasErr(fmt.Sprintf("%s(transA=%t transB=%t M=%d N=%d K=%d lda=%d ldb=%d ldc=%d batch %d)",
			call, g.TransA, g.TransB, g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.Batch), st)
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

//go:build cuda

package cu

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/cuda/cu/internal/cublas"
	gocu "gorgonia.org/cu"
)

// newBLAS loads cuBLAS (at run time: see package cublas) and creates a
// handle with the default math mode, for products on the legacy default
// stream; the context must be current. It also describes the library:
// "cuBLAS 12.4.2 (libcublas.so.12)".
func newBLAS() (*cublas.Lib, *cublas.Handle, string, error) {
	lib, err := cublas.Load()
	if err != nil {
		return nil, nil, "", fmt.Errorf("cu: %w", err)
	}
	h, err := lib.Create()
	if err != nil {
		return nil, nil, "", blasErr(lib.Path()+": ", err)
	}
	v, err := h.Version()
	if err != nil {
		h.Destroy()
		return nil, nil, "", blasErr(lib.Path()+": ", err)
	}
	return lib, h, fmt.Sprintf("cuBLAS %d.%d.%d (%s)", v/10000, v/100%100, v%100, lib.Path()), nil
}

// streamBLAS returns st's own cuBLAS handle, created and bound to the
// stream by its first product; the context must be current and st.mu
// held. A handle per stream is what NVIDIA documents for concurrent
// products: each has its own workspace, and no lock is shared between the
// streams of concurrent Runs.
func (d *Device) streamBLAS(st *stream) (*cublas.Handle, error) {
	if st.blas != nil {
		return st.blas, nil
	}
	h, err := d.blasLib.Create()
	if err != nil {
		return nil, blasErr("", err)
	}
	if err := h.SetStream(unsafe.Pointer(st.s.C())); err != nil {
		h.Destroy()
		return nil, blasErr("", err)
	}
	st.blas = h
	return h, nil
}

// BLAS says which cuBLAS the device uses: "cuBLAS 12.4.2 (libcublas.so.12)".
func (d *Device) BLAS() string { return d.blasInfo }

func destroyBLAS(h *cublas.Handle) error {
	if h == nil {
		return nil
	}
	return blasErr("", h.Destroy())
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

// gemm queues g on h, which is bound to s and in g's math mode (useTF32);
// the context must be current and h held by the caller alone. FP16 on
// float32 matrices is a compute type of the call (cublasGemmEx,
// CUBLAS_COMPUTE_32F_FAST_16F); FP32 and TF32 are Sgemm's in the handle's
// math mode; float16 A and B compute in float32 (CUBLAS_COMPUTE_32F).
func gemm(h *cublas.Handle, s gocu.Stream, g cuda.Gemm) error {
	cg := cublas.Gemm{
		TransA: g.TransA, TransB: g.TransB,
		M: int32(g.M), N: int32(g.N), K: int32(g.K),
		Alpha: g.Alpha, Beta: g.Beta,
		A: uint64(g.A), B: uint64(g.B), C: uint64(g.C),
		LDA: int32(g.LDA), LDB: int32(g.LDB), LDC: int32(g.LDC),
		StrideA: int64(g.StrideA), StrideB: int64(g.StrideB), StrideC: int64(g.StrideC),
		Batch:  int32(g.Batch),
		HalfAB: g.InType == inference.Float16, HalfC: g.OutType == inference.Float16,
	}
	var err error
	if g.Precision == inference.FP16 && !cg.HalfAB {
		// FAST_16F takes float32 matrices only; float16 ones (a model in
		// FP16, passes.StoreInFloat16) are the mode's inputs already.
		err = h.GemmFast16F(cg)
	} else {
		err = h.Sgemm(cg)
	}
	if err == nil {
		return nil
	}
	err = blasErr("", err, fmt.Sprintf("(transA=%t transB=%t M=%d N=%d K=%d lda=%d ldb=%d ldc=%d batch %d)",
		g.TransA, g.TransB, g.M, g.N, g.K, g.LDA, g.LDB, g.LDC, g.Batch))
	var e *Error
	if errors.As(err, &e) && e.Code == cublas.StatusExecutionFailed {
		// cuBLAS does not say why its kernel failed: a lost context is
		// one cause, and the stream says whether it is.
		if serr := streamStatus(s); errors.Is(serr, inference.ErrDeviceFailed) {
			e.Kind = inference.ErrDeviceFailed
			e.Detail += "; the context is lost: " + serr.Error()
		}
	}
	return err
}

// useTF32 says whether g's handle wants CUBLAS_TF32_TENSOR_OP_MATH; every
// other product wants CUBLAS_DEFAULT_MATH.
func useTF32(g cuda.Gemm) bool { return g.Precision == inference.TF32 }

// blasErr describes a failed cuBLAS call from an error of package cublas:
// the call is prefix, the function's name, then args (its arguments). nil
// stays nil.
func blasErr(prefix string, err error, args ...string) error {
	if err == nil {
		return nil
	}
	var s *cublas.Status
	if !errors.As(err, &s) {
		return fmt.Errorf("cu: %s%w", prefix, err)
	}
	e := &Error{Call: prefix + s.Call + strings.Join(args, ""), Code: s.Code, Status: s.Name, Detail: s.Detail}
	switch s.Code {
	case cublas.StatusAllocFailed:
		e.Kind = inference.ErrOutOfMemory
	case cublas.StatusNotInitialized, cublas.StatusArchMismatch:
		e.Kind = inference.ErrNoDevice
	}
	return e
}

package cuda

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/kernels"
)

// Ptr is a device address.
type Ptr uint64

// Stream is a queue of device work that runs in order. Work on different
// streams may overlap.
type Stream interface{}

// Dim3 is a launch grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Function is a kernel of a loaded module.
type Function interface{}

// Gemm is one call of cublasSgemmStridedBatched (cublasGemmStridedBatchedEx
// in FP16), in cuBLAS's column-major terms: for each b < Batch,
// C_b = Alpha·op(A_b)·op(B_b) + Beta·C_b, where C_b is M×N with leading
// dimension LDC and starts StrideC elements after C_{b-1}; op(A) is A
// (M×K) or, with TransA, Aᵀ. The row-major product Y = X·W of the
// executor is the column-major Yᵀ = Wᵀ·Xᵀ.
type Gemm struct {
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float32
	A              Ptr
	LDA            int
	StrideA        int64
	B              Ptr
	LDB            int
	StrideB        int64
	C              Ptr
	LDC            int
	StrideC        int64
	Batch          int
	// Precision is the arithmetic of a product of float32 matrices:
	//   - "" or inference.FP32: float32 throughout.
	//   - inference.TF32: A and B rounded to TensorFloat-32 on tensor
	//     cores, accumulated in float32 (cuBLAS's
	//     CUBLAS_TF32_TENSOR_OP_MATH; GPUs before sm_80 compute in float32).
	//   - inference.FP16: A and B rounded to float16 (to nearest even;
	//     from ±65520 on they become ±Inf, at or below 2^-25 in magnitude
	//     0) on tensor cores, accumulated in float32 (cublasGemmEx with
	//     float32 matrices and CUBLAS_COMPUTE_32F_FAST_16F). That compute
	//     type permits half and does not require it: cuBLAS may round to
	//     TensorFloat-32 instead, as cuBLAS 13.1 does on an H200
	//     (docs/gpu/2026-11-28-nvidia-h200.md). The simulated device
	//     rounds to half, the coarser of the two.
	Precision inference.Precision
	// InType is the element type of A and B, OutType C's: 0 or
	// inference.Float32, or inference.Float16, whose values the product
	// reads exactly and accumulates in float32 (on tensor cores, where the
	// GPU has them), rounding C to float16 once (cublasGemmEx with
	// CUBLAS_COMPUTE_32F, or FAST_16F in FP16 precision). Strides and
	// leading dimensions count elements of each matrix's type.
	InType, OutType inference.DType
}

// elemBytes is the size of an element of type t, a Gemm's InType or
// OutType.
func elemBytes(t inference.DType) int64 {
	if t == 0 {
		t = inference.Float32
	}
	return int64(t.Size())
}

// InBytes and OutBytes are the sizes of an element of A and B, and of C.
func (g Gemm) InBytes() int64  { return elemBytes(g.InType) }
func (g Gemm) OutBytes() int64 { return elemBytes(g.OutType) }

// Shapes returns the rows and columns of the stored A and B matrices (op
// applied or not), after checking the sizes and leading dimensions as
// cuBLAS does, and the precision: a bad product fails with this message on
// every device instead of CUBLAS_STATUS_INVALID_VALUE.
func (g Gemm) Shapes() (aRows, aCols, bRows, bCols int, err error) {
	switch g.Precision {
	case "", inference.FP32, inference.TF32, inference.FP16:
	default:
		return 0, 0, 0, 0, fmt.Errorf("gemm in precision %q: want %q, %q or %q", g.Precision, inference.FP32, inference.TF32, inference.FP16)
	}
	for _, t := range []inference.DType{g.InType, g.OutType} {
		if t != 0 && t != inference.Float32 && t != inference.Float16 {
			return 0, 0, 0, 0, fmt.Errorf("gemm of %v matrices: want float32 or float16", t)
		}
	}
	if g.M < 0 || g.N < 0 || g.K < 0 || g.Batch < 1 {
		return 0, 0, 0, 0, fmt.Errorf("gemm with M=%d N=%d K=%d batch %d", g.M, g.N, g.K, g.Batch)
	}
	aRows, aCols = g.M, g.K
	if g.TransA {
		aRows, aCols = g.K, g.M
	}
	bRows, bCols = g.K, g.N
	if g.TransB {
		bRows, bCols = g.N, g.K
	}
	if g.LDA < max(1, aRows) || g.LDB < max(1, bRows) || g.LDC < max(1, g.M) {
		return 0, 0, 0, 0, fmt.Errorf("gemm leading dimensions lda=%d ldb=%d ldc=%d too small for %dx%d, %dx%d, %dx%d",
			g.LDA, g.LDB, g.LDC, aRows, aCols, bRows, bCols, g.M, g.N)
	}
	return aRows, aCols, bRows, bCols, nil
}

// MemInfo is a device's memory, in bytes.
type MemInfo struct{ Free, Total int64 }

// Device is what the executor needs of a GPU. The CUDA implementation
// (inference/cuda/cu, build tag cuda) wraps the driver API and cuBLAS; the
// simulated one (internal/sim) keeps device memory in host slices
// and runs the emulated kernels, so the executor is tested without a GPU.
//
// Errors wrap the inference sentinels: an allocation that does not fit
// wraps inference.ErrOutOfMemory.
type Device interface {
	// Name describes the device: "NVIDIA L4 (sm_89)", "sim".
	Name() string
	// Alloc allocates device memory, aligned to 256 bytes; Free returns it.
	Alloc(bytes int64) (Ptr, error)
	Free(p Ptr) error
	// AllocHost allocates page-locked host memory for staging copies;
	// FreeHost returns it.
	AllocHost(bytes int64) ([]byte, error)
	FreeHost(b []byte) error
	// CopyHtoD and CopyDtoH copy synchronously.
	CopyHtoD(dst Ptr, src []byte) error
	CopyDtoH(dst []byte, src Ptr) error
	// The Async copies are queued on s; src or dst must stay untouched
	// until s is synchronised.
	CopyHtoDAsync(dst Ptr, src []byte, s Stream) error
	CopyDtoHAsync(dst []byte, src Ptr, s Stream) error
	CopyDtoDAsync(dst, src Ptr, bytes int64, s Stream) error
	// LoadModule loads a kernel module; Function finds a kernel in it.
	LoadModule(m kernels.Module) error
	Function(name string) (Function, error)
	// Launch queues a kernel on s. Every argument is 8 bytes: a Ptr, an
	// int64, or the bits of a float64 (docs/design.md, rule 8).
	Launch(f Function, grid, block Dim3, s Stream, args []uint64) error
	// Gemm queues a float32 matrix product on s (cuBLAS).
	Gemm(s Stream, g Gemm) error
	NewStream() (Stream, error)
	Sync(s Stream) error
	DestroyStream(s Stream) error
	MemInfo() (MemInfo, error)
	// Close releases the device context.
	Close() error
}

// Graph is a captured sequence of a stream's work (a CUDA graph,
// instantiated), replayed by one call.
type Graph interface{}

// Grapher is a Device that captures a stream's work into graphs and
// replays them: what lets the executor queue a batch with one call instead
// of one per kernel, GEMM and copy (cuStreamBeginCapture, cuGraphLaunch).
// While a stream is captured, the work queued on it is recorded, not run,
// and must not be waited for; a replay reads the host buffers of its
// copies when it runs, so a caller refills them and replays.
type Grapher interface {
	BeginCapture(s Stream) error
	EndCapture(s Stream) (Graph, error)
	LaunchGraph(g Graph, s Stream) error
	DestroyGraph(g Graph) error
}

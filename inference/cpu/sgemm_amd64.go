//go:build amd64 && !noasm

package cpu

import "golang.org/x/sys/cpu"

// The micro-kernels in sgemm_amd64.s. Each has the contract of
// nnKernel.kernel and does no bounds checks of its own.

// nnKernel8x32AVX512 needs AVX-512F: an 8×32 tile in 16 ZMM accumulators.
//
//go:noescape
func nnKernel8x32AVX512(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)

// nnKernel8x16AVX512 is its half (nnKernel.half): an 8×16 tile in 8.
//
//go:noescape
func nnKernel8x16AVX512(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)

// nnKernelTall8x32AVX512 needs AVX-512F: cvTall's kernel (nnTallKernel).
//
//go:noescape
func nnKernelTall8x32AVX512(kc int, b []float32, pos, off []int32, wp, c []float32, ldc int, set bool)

// nnKernel6x16AVX2 needs AVX2 and FMA: a 6×16 tile in 12 YMM accumulators.
//
//go:noescape
func nnKernel6x16AVX2(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)

// nnRow32AVX512 and nnRow16AVX2 are the row kernels of the two (see
// nnKernel.row).
//
//go:noescape
func nnRow32AVX512(kc int, a, bp, c []float32)

//go:noescape
func nnRow16AVX2(kc int, a, bp, c []float32)

// nnKernels lists the micro-kernels this CPU runs, fastest first. The
// cpu package reports AVX and AVX-512 only where the OS saves their
// registers.
func nnKernels() []nnKernel {
	var ks []nnKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, nnKernel{"avx512_8x32", 8, 32, nnKernel8x32AVX512, nnRow32AVX512, nnKernel8x16AVX512, nnKernelTall8x32AVX512})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, nnKernel{"avx2_6x16", 6, 16, nnKernel6x16AVX2, nnRow16AVX2, nil, nil})
	}
	return append(ks, nnGoKernel)
}

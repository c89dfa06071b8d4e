//go:build amd64 && !noasm

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// maxIntoAVX2 is maxInto's vector loop (depthwise_amd64.s), without
// bounds checks: len(x) ≥ len(acc).
//
//go:noescape
func maxIntoAVX2(acc, x []float32)

// maxInto sets acc[i] to x[i] where x[i] > acc[i]: NaN in x is skipped,
// as MaxPool skips it.
func maxInto(acc, x []float32) {
	x = x[:len(acc)]
	if hasVectorMath {
		maxIntoAVX2(acc, x)
		return
	}
	maxIntoGo(acc, x)
}

// The vector loops of depthwise convolution: AVX-512F with VL
// (depthwise512_amd64.s) and AVX2 with FMA (depthwise_amd64.s), returned
// by dwLoopsOn with the contracts of dwLoop.

// The loops read a dwTap as 16 bytes, off then w at byte 8: these fail
// to compile otherwise.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(dwTap{})-16]
	_ = [1]struct{}{}[unsafe.Offsetof(dwTap{}.w)-8]
)

//go:noescape
func dwRowsAVX512(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b float32)

//go:noescape
func dwRowsSharedAVX512(y []float32, rows, n int, x []float32, rs, s, kh int, taps []dwTap, w []float32, b float32)

//go:noescape
func dwSplitRowsAVX512(even, odd, x []float32, rows, width, lde, ldo int)

//go:noescape
func dwCopyRowsAVX512(dst, x []float32, rows, width, ld int)

//go:noescape
func dwRowsAVX2(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b float32)

//go:noescape
func dwSplitRowsAVX2(even, odd, x []float32, rows, width, lde, ldo int)

//go:noescape
func dwCopyRowsAVX2(dst, x []float32, rows, width, ld int)

// dwBest is vecBest for the depthwise loops, whose AVX-512 level also
// needs AVX-512VL (K-masked YMM operations, YMM16–31): AVX2 without it.
var dwBest = func() vecLevel {
	if vecBest == vecAVX512 && !cpu.X86.HasAVX512VL {
		return vecAVX2
	}
	return vecBest
}()

// dwLoopsOn returns the depthwise loops of level l.
func dwLoopsOn(l vecLevel) dwLoop {
	switch l {
	case vecAVX512:
		return dwLoop{dwRowsAVX512, dwRowsSharedAVX512, dwSplitRowsAVX512, dwCopyRowsAVX512}
	case vecAVX2:
		return dwLoop{dwRowsAVX2, nil, dwSplitRowsAVX2, dwCopyRowsAVX2}
	}
	return dwGoLoop
}

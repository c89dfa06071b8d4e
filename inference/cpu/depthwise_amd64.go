//go:build amd64 && !noasm

package cpu

import (
	"math"
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
func dwRowsAVX512(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32)

//go:noescape
func dwRowsSharedAVX512(y []float32, rows, n int, x []float32, rs, s, kh int, taps []dwTap, w []float32, b, lo, hi float32)

//go:noescape
func dwSplitRowsAVX512(even, odd, x []float32, rows, width, lde, ldo, ldx int)

//go:noescape
func dwCopyRowsAVX512(dst, x []float32, rows, width, ld int)

//go:noescape
func dwRowsAVX2(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32)

//go:noescape
func dwSplitRowsAVX2(even, odd, x []float32, rows, width, lde, ldo, ldx int)

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

// The row loops of MaxPool (maxPool2D): AVX-512F (depthwise512_amd64.s)
// and AVX2 (depthwise_amd64.s), with maxRows' and maxCols' contracts,
// without bounds checks.

//go:noescape
func maxRowsAVX512(dst, src []float32, rows []int, stride int)

//go:noescape
func colsAVX512(out, v []float32, kw, sw int, sum bool)

//go:noescape
func maxRowsAVX2(dst, src []float32, rows []int, stride int)

//go:noescape
func colsAVX2(out, v []float32, kw, sw int, sum bool)

// maxPoolNarrowAVX512 is maxPoolNarrow's loop (see depthwise512_amd64.s),
// without bounds checks.
//
//go:noescape
func maxPoolNarrowAVX512(out []float32, osp int, src []float32, isp, planes int, rows []int, iw int, perm []int32, kw, ow int)

// maxPoolNarrowRuns reports whether the CPU runs maxPoolNarrow's loop.
func maxPoolNarrowRuns() bool { return vecBest == vecAVX512 }

// maxPoolNarrow sets output row oy of each of planes planes (out's rows of
// ow floats from its start, planes osp apart) to the maxima over the input
// rows rows of src's planes (isp apart, rows iw wide) and the column taps
// perm holds (kw vectors of 16 lane indices, 31 for the padding). Only
// where maxPoolNarrowRuns.
func maxPoolNarrow(out []float32, osp int, src []float32, isp, planes int, rows []int, iw int, perm []int32, kw, ow int) {
	if planes <= 0 {
		return
	}
	_, _ = out[(planes-1)*osp+ow-1], src[(planes-1)*isp+isp-1] // the loop does not check
	_ = perm[kw*16-1]
	for _, r := range rows {
		_ = src[r*iw+iw-1]
	}
	maxPoolNarrowAVX512(out, osp, src, isp, planes, rows, iw, perm, kw, ow)
}

// maxRows sets dst[i] to the largest of src[r·stride + i] over r in rows,
// NaN skipped, −Inf when rows is empty; src holds every row rows names.
func maxRows(dst, src []float32, rows []int, stride int) {
	if len(rows) == 0 || len(dst) == 0 {
		fill(dst, float32(math.Inf(-1)))
		return
	}
	for _, r := range rows {
		_ = src[r*stride : r*stride+len(dst)] // the loops do not check
	}
	switch vecBest {
	case vecAVX512:
		maxRowsAVX512(dst, src, rows, stride)
	case vecAVX2:
		maxRowsAVX2(dst, src, rows, stride)
	default:
		maxRowsGo(dst, src, rows, stride)
	}
}

// maxCols sets out[o] to the largest of v[o·sw + k] over k < kw, NaN
// skipped, at sw 1 or 2; v is at least maxColsLen(len(out), kw, sw) long,
// what the vector loops read.
func maxCols(out, v []float32, kw, sw int) { cols(out, v, kw, sw, false) }

// sumCols sets out[o] to the sum of v[o·sw + k] over k < kw, in order of
// k, as maxCols reads them.
func sumCols(out, v []float32, kw, sw int) { cols(out, v, kw, sw, true) }

func cols(out, v []float32, kw, sw int, sum bool) {
	if len(out) == 0 {
		return
	}
	v = v[:maxColsLen(len(out), kw, sw)]
	switch vecBest {
	case vecAVX512:
		colsAVX512(out, v, kw, sw, sum)
	case vecAVX2:
		colsAVX2(out, v, kw, sw, sum)
	default:
		colsGo(out, v, kw, sw, sum)
	}
}

// addRowsAVX512 and addRowsAVX2 are addRows' loops (depthwise512_amd64.s,
// depthwise_amd64.s), without bounds checks.
//
//go:noescape
func addRowsAVX512(y []float32, ldy int, x []float32, ldx, rows, n int)

//go:noescape
func addRowsAVX2(y []float32, ldy int, x []float32, ldx, rows, n int)

// addRows sets y[r·ldy + i] += x[r·ldx + i] for r < rows and i < n: the
// rows of a transposed convolution's tap added into its output, one call
// for all of them.
func addRows(y []float32, ldy int, x []float32, ldx, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	y, x = y[:(rows-1)*ldy+n], x[:(rows-1)*ldx+n] // the loops do not check
	switch vecBest {
	case vecAVX512:
		addRowsAVX512(y, ldy, x, ldx, rows, n)
	case vecAVX2:
		addRowsAVX2(y, ldy, x, ldx, rows, n)
	default:
		addRowsGo(y, ldy, x, ldx, rows, n)
	}
}

//go:build !amd64 || noasm

package cpu

import "math"

// The vector loops of depthwise convolution and MaxPool are amd64
// assembly (depthwise_amd64.s, depthwise512_amd64.s); other
// architectures, and builds tagged noasm, run their Go twins.

// maxInto sets acc[i] to x[i] where x[i] > acc[i]: NaN in x is skipped,
// as MaxPool skips it.
func maxInto(acc, x []float32) { maxIntoGo(acc, x[:len(acc)]) }

// dwBest is the depthwise loops' level: the Go twins.
const dwBest = vecGo

// dwLoopsOn returns the depthwise loops of every level: the Go twins.
func dwLoopsOn(vecLevel) dwLoop { return dwGoLoop }

// maxRows sets dst[i] to the largest of src[r·stride + i] over r in rows,
// NaN skipped, −Inf when rows is empty; src holds every row rows names.
func maxRows(dst, src []float32, rows []int, stride int) {
	if len(rows) == 0 || len(dst) == 0 {
		fill(dst, float32(math.Inf(-1)))
		return
	}
	maxRowsGo(dst, src, rows, stride)
}

// maxCols sets out[o] to the largest of v[o·sw + k] over k < kw, NaN
// skipped, at sw 1 or 2; v is at least maxColsLen(len(out), kw, sw) long.
func maxCols(out, v []float32, kw, sw int) {
	if len(out) > 0 {
		colsGo(out, v[:maxColsLen(len(out), kw, sw)], kw, sw, false)
	}
}

// sumCols sets out[o] to the sum of v[o·sw + k] over k < kw, in order of
// k.
func sumCols(out, v []float32, kw, sw int) {
	if len(out) > 0 {
		colsGo(out, v[:maxColsLen(len(out), kw, sw)], kw, sw, true)
	}
}

// maxPoolNarrowRuns reports false: the narrow-map loop is AVX-512 assembly.
func maxPoolNarrowRuns() bool { return false }

// maxPoolNarrow is never called where maxPoolNarrowRuns is false.
func maxPoolNarrow(out []float32, osp int, src []float32, isp, planes int, rows []int, iw int, perm []int32, kw, ow int) {
	panic("maxPoolNarrow without its vector loop")
}

// addRows sets y[r·ldy + i] += x[r·ldx + i] for r < rows and i < n.
func addRows(y []float32, ldy int, x []float32, ldx, rows, n int) {
	if rows > 0 && n > 0 {
		addRowsGo(y[:(rows-1)*ldy+n], ldy, x[:(rows-1)*ldx+n], ldx, rows, n)
	}
}

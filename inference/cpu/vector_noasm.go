//go:build !amd64 || noasm

package cpu

// geluIn sets t[i] to the argument of GELU's erf, x[i]/√2, or with tanh of
// its tanh, √(2/π)·(x + 0.044715·x³); x is at least as long as t.
func geluIn(t, x []float32, tanh bool) { geluInGo(t, x[:len(t)], tanh) }

// geluOut sets y[i] = x[i]/2·(1 + t[i]); x and t are at least as long as y.
func geluOut(y, x, t []float32) { geluOutGo(y, x[:len(y)], t[:len(y)]) }

// arithVV and arithVS are vector loops on amd64; here they report false,
// and the Go loops run.
func arithVV(op ewArithOp, out, a, b []float32) bool                    { return false }
func arithVS(op ewArithOp, out, a []float32, s float32, swap bool) bool { return false }

// copyRows copies rows runs of width floats, ld apart in src, one after
// another into dst: dst[r·width+j] = src[r·ld+j].
func copyRows(dst, src []float32, ld, rows, width int) {
	if rows == 0 || width == 0 {
		return
	}
	copyRowsGo(dst[:rows*width], src[:(rows-1)*ld+width], ld, rows, width)
}

// axpy sets y[i] += a·x[i]; x is at least as long as y.
func axpy(y, x []float32, a float32) { axpyGo(y, x[:len(y)], a) }

// hardSigmoidsOf sets y[i] = max(0, min(1, alpha·x[i] + beta)), times
// x[i] when swish; x is at least as long as y, and y may be x.
func hardSigmoidsOf(y, x []float32, alpha, beta float32, swish bool) {
	hardSigmoidsGo(y, x[:len(y)], alpha, beta, swish)
}

// sumDev returns Σ (x[i] − m) and Σ (x[i] − m)², in float32 partial
// sums.
func sumDev(x []float32, m float32) (s, sq float32) { return sumDevGo(x, m) }

// normAffine sets y[i] = ((x[i] − m) − d)·inv·scale[i] + bias[i] (bias
// nil: without it), the mean m + d taken off in two steps; x, scale and
// bias are at least as long as y.
func normAffine(y, x, scale, bias []float32, m, d, inv float32) {
	if bias != nil {
		bias = bias[:len(y)]
	}
	normAffineGo(y, x[:len(y)], scale[:len(y)], bias, m, d, inv)
}

// nnPack8 is a vector loop on amd64; here it reports false, and
// nnPackTranspose's Go loop runs.
func nnPack8(dst, src []float32, lds, kc int) bool { return false }

// transpose2D sets dst[i·ldd + j] = src[j·lds + i] for i < rows,
// j < cols.
func transpose2D(dst []float32, ldd int, src []float32, rows, cols, lds int) {
	transposeGo(dst, src, 0, rows, 0, cols, ldd, lds)
}

// interleave2 sets out[2i] = even[i] + b and out[2i+1] = odd[i] + b:
// even holds ⌈len(out)/2⌉ values, odd ⌊len(out)/2⌋.
func interleave2(out, even, odd []float32, b float32) {
	interleave2Go(out, even[:(len(out)+1)/2], odd[:len(out)/2], b)
}

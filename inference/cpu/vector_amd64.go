//go:build amd64 && !noasm

package cpu

// geluInAVX2 and geluOutAVX2 are geluIn's and geluOut's vector loops over
// the first len/8·8 elements, without bounds checks.
//
//go:noescape
func geluInAVX2(t, x []float32, tanh bool)

//go:noescape
func geluOutAVX2(y, x, t []float32)

// geluIn sets t[i] to the argument of GELU's erf, x[i]/√2, or with tanh of
// its tanh, √(2/π)·(x + 0.044715·x³); x is at least as long as t.
func geluIn(t, x []float32, tanh bool) {
	x = x[:len(t)]
	head := 0
	if hasVectorMath {
		head = len(t) &^ 7
		geluInAVX2(t, x, tanh)
	}
	geluInGo(t[head:], x[head:], tanh)
}

// geluOut sets y[i] = x[i]/2·(1 + t[i]); x and t are at least as long as y.
func geluOut(y, x, t []float32) {
	x, t = x[:len(y)], t[:len(y)]
	head := 0
	if hasVectorMath {
		head = len(y) &^ 7
		geluOutAVX2(y, x, t)
	}
	geluOutGo(y[head:], x[head:], t[head:])
}

// arithVVAVX2 and arithVSAVX2 are the float32 loops of ewArithVV, and of
// ewArithVS and ewArithSV (swap), over the first len(out)/8·8 elements,
// without bounds checks.
//
//go:noescape
func arithVVAVX2(op ewArithOp, out, a, b []float32)

//go:noescape
func arithVSAVX2(op ewArithOp, out, a []float32, s float32, swap bool)

// arithVV sets out[i] = a[i] op b[i] for float32 and reports true, with the
// Go loop's results (a NaN's payload aside), when the CPU has the vector
// loop; it does nothing and reports false otherwise.
func arithVV(op ewArithOp, out, a, b []float32) bool {
	if !hasVectorMath {
		return false
	}
	a, b = a[:len(out)], b[:len(out)]
	head := len(out) &^ 7
	arithVVAVX2(op, out, a, b)
	ewArithVVGo(op, out[head:], a[head:], b[head:])
	return true
}

// arithVS sets out[i] = a[i] op s, or with swap s op a[i], as arithVV.
func arithVS(op ewArithOp, out, a []float32, s float32, swap bool) bool {
	if !hasVectorMath {
		return false
	}
	a = a[:len(out)]
	head := len(out) &^ 7
	arithVSAVX2(op, out, a, s, swap)
	if swap {
		ewArithSVGo(op, out[head:], s, a[head:])
	} else {
		ewArithVSGo(op, out[head:], a[head:], s)
	}
	return true
}

// copyRowsAVX2 is copyRows' loop for widths 16 and 32, without bounds
// checks.
//
//go:noescape
func copyRowsAVX2(dst, src []float32, ld, rows, width int)

// copyRows copies rows runs of width floats, ld apart in src, one after
// another into dst: dst[r·width+j] = src[r·ld+j].
func copyRows(dst, src []float32, ld, rows, width int) {
	if rows == 0 || width == 0 {
		return
	}
	dst, src = dst[:rows*width], src[:(rows-1)*ld+width]
	if hasVectorMath && (width == 16 || width == 32) {
		copyRowsAVX2(dst, src, ld, rows, width)
		return
	}
	copyRowsGo(dst, src, ld, rows, width)
}

// axpyAVX2 is axpy's vector loop over the first len(y)/8·8 elements,
// without bounds checks.
//
//go:noescape
func axpyAVX2(y, x []float32, a float32)

// axpy sets y[i] += a·x[i]; x is at least as long as y. The vector loop
// rounds each a·x[i] + y[i] once (a fused multiply-add), the Go loop
// twice.
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	head := 0
	if hasVectorMath {
		head = len(y) &^ 7
		axpyAVX2(y, x, a)
	}
	axpyGo(y[head:], x[head:], a)
}

// hardSigmoidAVX2 is hardSigmoids' and hardSwishes' vector loop over the
// first len(y)/8·8 elements, without bounds checks.
//
//go:noescape
func hardSigmoidAVX2(y, x []float32, alpha, beta float32, swish bool)

// hardSigmoidsOf sets y[i] = max(0, min(1, alpha·x[i] + beta)), times
// x[i] when swish; x is at least as long as y, and y may be x.
func hardSigmoidsOf(y, x []float32, alpha, beta float32, swish bool) {
	x = x[:len(y)]
	head := 0
	if hasVectorMath {
		head = len(y) &^ 7
		hardSigmoidAVX2(y, x, alpha, beta, swish)
	}
	hardSigmoidsGo(y[head:], x[head:], alpha, beta, swish)
}

// sumDevAVX2 and normAffineAVX2 are sumDev's and normAffine's vector
// loops over the first len/8·8 elements, without bounds checks.
//
//go:noescape
func sumDevAVX2(x []float32, m float32) (s, sq float32)

//go:noescape
func normAffineAVX2(y, x, scale, bias []float32, m, d, inv float32)

// sumDev returns Σ (x[i] − m) and Σ (x[i] − m)², in float32 partial
// sums.
func sumDev(x []float32, m float32) (s, sq float32) {
	if !hasVectorMath {
		return sumDevGo(x, m)
	}
	head := len(x) &^ 7
	s, sq = sumDevAVX2(x, m)
	ts, tsq := sumDevGo(x[head:], m)
	return s + ts, sq + tsq
}

// normAffine sets y[i] = ((x[i] − m) − d)·inv·scale[i] + bias[i] (bias
// nil: without it), the mean m + d taken off in two steps; x, scale and
// bias are at least as long as y.
func normAffine(y, x, scale, bias []float32, m, d, inv float32) {
	x, scale = x[:len(y)], scale[:len(y)]
	if bias != nil {
		bias = bias[:len(y)]
	}
	head := 0
	if hasVectorMath {
		head = len(y) &^ 7
		normAffineAVX2(y, x, scale, bias, m, d, inv)
	}
	if bias != nil {
		bias = bias[head:]
	}
	normAffineGo(y[head:], x[head:], scale[head:], bias, m, d, inv)
}

// transpose8AVX2 transposes 8×8 blocks (see vector_amd64.s), without
// bounds checks.
//
//go:noescape
func transpose8AVX2(dst []float32, ldd int, src []float32, lds, blocks int)

// nnPack8 sets dst[p·8+r] = src[r·lds+p] for r < 8, p < kc (nnPackTranspose
// for eight rows, alpha 1) and reports true, when the CPU has the vector
// loop; it does nothing and reports false otherwise.
func nnPack8(dst, src []float32, lds, kc int) bool {
	if !hasVectorMath || kc < 8 {
		return false
	}
	src, dst = src[:7*lds+kc], dst[:8*kc]
	head := kc &^ 7
	transpose8AVX2(dst, 8, src, lds, head/8)
	for r := range 8 {
		for p := head; p < kc; p++ {
			dst[p*8+r] = src[r*lds+p]
		}
	}
	return true
}

// transpose2D sets dst[i·ldd + j] = src[j·lds + i] for i < rows,
// j < cols: 8×8 blocks in registers where the CPU has the vector loop,
// the edges in Go.
func transpose2D(dst []float32, ldd int, src []float32, rows, cols, lds int) {
	if rows == 0 || cols == 0 {
		return
	}
	_, _ = dst[(rows-1)*ldd+cols-1], src[(cols-1)*lds+rows-1] // the loops do not check
	j0 := 0
	if hasVectorMath && rows >= 8 {
		blocks := rows / 8
		for ; j0+8 <= cols; j0 += 8 {
			transpose8AVX2(dst[j0:], ldd, src[j0*lds:], lds, blocks)
		}
		transposeGo(dst, src, blocks*8, rows, 0, j0, ldd, lds)
	}
	transposeGo(dst, src, 0, rows, j0, cols, ldd, lds)
}

// interleave2AVX2 is interleave2's vector loop over the first
// len(out)/16·16 elements of out, without bounds checks.
//
//go:noescape
func interleave2AVX2(out, even, odd []float32, b float32)

// interleave2 sets out[2i] = even[i] + b and out[2i+1] = odd[i] + b:
// even holds ⌈len(out)/2⌉ values, odd ⌊len(out)/2⌋.
func interleave2(out, even, odd []float32, b float32) {
	even, odd = even[:(len(out)+1)/2], odd[:len(out)/2]
	head := 0
	if hasVectorMath {
		head = len(out) &^ 15
		interleave2AVX2(out, even, odd, b)
	}
	interleave2Go(out[head:], even[head/2:], odd[head/2:], b)
}

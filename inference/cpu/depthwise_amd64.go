//go:build amd64 && !noasm

package cpu

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

// dwKernelRowAVX2 is dwKernelRow's vector loop (depthwise_amd64.s),
// without bounds checks.
//
//go:noescape
func dwKernelRowAVX2(y, x, w []float32, kh, kw, ld int, b float32, add bool)

// dwKernelRow sets y[i] to b (plus y[i] with add) + Σ_{r<kh, t<kw}
// w[r·kw+t]·x[r·ld + i + t]: one output row of a depthwise convolution at
// stride 1 along the row, every kernel row at once, each block of outputs
// kept in registers across all the taps.
func dwKernelRow(y, x, w []float32, kh, kw, ld int, b float32, add bool) {
	if len(y) == 0 || kh == 0 || kw == 0 {
		if !add {
			for i := range y {
				y[i] = b
			}
		}
		return
	}
	x = x[:(kh-1)*ld+len(y)+kw-1]
	w = w[:kh*kw]
	if hasVectorMath {
		dwKernelRowAVX2(y, x, w, kh, kw, ld, b, add)
		return
	}
	dwKernelRowGo(y, x, w, kh, kw, ld, b, add)
}

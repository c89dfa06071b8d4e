//go:build amd64 && !noasm

package cpu

// dwRowAVX2 adds Σ_t w[t]·x[i+t] to y[i] for i < len(y)
// (depthwise_amd64.s). It does no bounds checks: x holds len(y)+len(w)−1
// elements.
//
//go:noescape
func dwRowAVX2(y, x, w []float32)

// dwRow adds Σ_t w[t]·x[i+t] to y[i] for every i < len(y): one kernel row
// of a depthwise convolution at stride 1, without dilation.
func dwRow(y, x, w []float32) {
	x = x[:len(y)+len(w)-1]
	if hasVectorMath {
		dwRowAVX2(y, x, w)
		return
	}
	dwRowGo(y, x, w)
}

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

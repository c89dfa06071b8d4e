//go:build amd64 && !noasm

package cpu

// dwRowAVX2 adds Σ_t w[t]·x[i+t] to y[i] for i < len(y)/8·8
// (depthwise_amd64.s). It does no bounds checks: x holds len(y)+len(w)−1
// elements.
//
//go:noescape
func dwRowAVX2(y, x, w []float32)

// dwRow adds Σ_t w[t]·x[i+t] to y[i] for every i < len(y): one kernel row
// of a depthwise convolution at stride 1, without dilation.
func dwRow(y, x, w []float32) {
	x = x[:len(y)+len(w)-1]
	head := 0
	if hasVectorMath {
		head = len(y) &^ 7
		dwRowAVX2(y, x, w)
	}
	dwRowGo(y[head:], x[head:], w)
}

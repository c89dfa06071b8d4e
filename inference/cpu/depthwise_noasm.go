//go:build !amd64 || noasm

package cpu

// The vector loops of depthwise convolution and MaxPool are amd64
// assembly (depthwise_amd64.s); other architectures, and builds tagged
// noasm, run their Go twins.

// maxInto sets acc[i] to x[i] where x[i] > acc[i]: NaN in x is skipped,
// as MaxPool skips it.
func maxInto(acc, x []float32) { maxIntoGo(acc, x[:len(acc)]) }

// dwKernelRow sets y[i] to b (plus y[i] with add) + Σ_{r<kh, t<kw}
// w[r·kw+t]·x[r·ld + i + t]: one output row of a depthwise convolution at
// stride 1 along the row, every kernel row at once.
func dwKernelRow(y, x, w []float32, kh, kw, ld int, b float32, add bool) {
	dwKernelRowGo(y, x, w, kh, kw, ld, b, add)
}

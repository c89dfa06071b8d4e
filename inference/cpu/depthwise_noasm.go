//go:build !amd64 || noasm

package cpu

// dwRow adds Σ_t w[t]·x[i+t] to y[i] for every i < len(y): one kernel row
// of a depthwise convolution at stride 1, without dilation. The vector
// version is amd64 assembly (depthwise_amd64.s).
func dwRow(y, x, w []float32) { dwRowGo(y, x[:len(y)+len(w)-1], w) }

// maxInto sets acc[i] to x[i] where x[i] > acc[i]: NaN in x is skipped,
// as MaxPool skips it.
func maxInto(acc, x []float32) { maxIntoGo(acc, x[:len(acc)]) }

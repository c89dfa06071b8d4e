//go:build !amd64 || noasm

package cpu

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

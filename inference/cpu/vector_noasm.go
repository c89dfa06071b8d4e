//go:build !amd64 || noasm

package cpu

// addInto sets y[i] += x[i] for i < len(y); x is at least as long.
func addInto(y, x []float32) { addIntoGo(y, x[:len(y)]) }

// scale sets y[i] *= r.
func scale(y []float32, r float32) { scaleGo(y, r) }

// maxOf returns the largest element of x, which is not empty, or NaN when
// any element is NaN (of +0 and −0, either).
func maxOf(x []float32) float32 { return maxOfGo(x) }

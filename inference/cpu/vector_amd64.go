//go:build amd64 && !noasm

package cpu

import "math"

// addIntoAVX2 is addInto's vector loop (vector_amd64.s) over the first
// len(y)/32·32 elements, without bounds checks: len(x) ≥ len(y).
//
//go:noescape
func addIntoAVX2(y, x []float32)

// addInto sets y[i] += x[i] for i < len(y); x is at least as long.
func addInto(y, x []float32) {
	x = x[:len(y)]
	head := 0
	if hasVectorMath {
		head = len(y) &^ 31
		addIntoAVX2(y, x)
	}
	addIntoGo(y[head:], x[head:])
}

// scaleAVX2 is scale's vector loop over the first len(y)/32·32 elements.
//
//go:noescape
func scaleAVX2(y []float32, r float32)

// scale sets y[i] *= r.
func scale(y []float32, r float32) {
	head := 0
	if hasVectorMath {
		head = len(y) &^ 31
		scaleAVX2(y, r)
	}
	scaleGo(y[head:], r)
}

// maxOfAVX2 is maxOf's vector loop over the first len(x)/8·8 elements;
// len(x) ≥ 8.
//
//go:noescape
func maxOfAVX2(x []float32) (m float32, nan bool)

// maxOf returns the largest element of x, which is not empty, or NaN when
// any element is NaN (of +0 and −0, either).
func maxOf(x []float32) float32 {
	if !hasVectorMath || len(x) < 8 {
		return maxOfGo(x)
	}
	m, nan := maxOfAVX2(x)
	if nan {
		return float32(math.NaN())
	}
	for _, v := range x[len(x)&^7:] {
		m = max(m, v)
	}
	return m
}

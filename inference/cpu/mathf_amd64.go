//go:build amd64 && !noasm

package cpu

import "golang.org/x/sys/cpu"

// The vector loops in mathf_amd64.s. Each handles the first len(src)/8·8
// elements and does no bounds checks: len(dst) ≥ len(src).

// expSumAVX2 sets dst[i] = e^(src[i] − shift) and returns their sum.
//
//go:noescape
func expSumAVX2(dst, src []float32, shift float32) float32

// sigmoidAVX2 sets dst[i] = 1/(1 + e^−src[i]), times src[i] with gate
// (SiLU).
//
//go:noescape
func sigmoidAVX2(dst, src []float32, gate bool)

// erfAVX2 sets dst[i] = erf(src[i]).
//
//go:noescape
func erfAVX2(dst, src []float32)

// clampAVX2 sets y[i] = min(max(y[i], lo), hi), keeping NaN, over the
// first len(y)/32·32 elements.
//
//go:noescape
func clampAVX2(y []float32, lo, hi float32)

// tanhAVX2 sets dst[i] = tanh(src[i]).
//
//go:noescape
func tanhAVX2(dst, src []float32)

var hasVectorMath = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// expSum sets y[i] = e^(x[i] − shift) and returns the sum; y and x are as
// long, and may be the same slice.
func expSum(y, x []float32, shift float32) float32 {
	var sum float32
	head := 0
	if hasVectorMath {
		head = len(x) &^ 7
		sum = expSumAVX2(y[:len(x)], x, shift)
	}
	for i := head; i < len(x); i++ {
		y[i] = exp32(x[i] - shift)
		sum += y[i]
	}
	return sum
}

// sigmoids sets y[i] = sigmoid(x[i]); y and x are as long, and may be the
// same slice.
func sigmoids(y, x []float32) {
	head := 0
	if hasVectorMath {
		head = len(x) &^ 7
		sigmoidAVX2(y[:len(x)], x, false)
	}
	for i := head; i < len(x); i++ {
		y[i] = sigmoid32(x[i])
	}
}

// erfs sets y[i] = erf(x[i]); y and x are as long, and may be the same
// slice.
func erfs(y, x []float32) {
	head := 0
	if hasVectorMath {
		head = len(x) &^ 7
		erfAVX2(y[:len(x)], x)
	}
	for i := head; i < len(x); i++ {
		y[i] = erf32(x[i])
	}
}

// clamps sets y[i] = min(max(y[i], lo), hi); NaN stays NaN.
func clamps(y []float32, lo, hi float32) {
	head := 0
	if hasVectorMath {
		head = len(y) &^ 31
		clampAVX2(y, lo, hi)
	}
	for i := head; i < len(y); i++ {
		if v := y[i]; v < lo {
			y[i] = lo
		} else if v > hi {
			y[i] = hi
		}
	}
}

// silus sets y[i] = x[i]·sigmoid32(x[i]), rounded as Mul(x, Sigmoid(x))
// rounds; y and x are as long, and may be the same slice.
func silus(y, x []float32) {
	head := 0
	if hasVectorMath {
		head = len(x) &^ 7
		sigmoidAVX2(y[:len(x)], x, true)
	}
	for i := head; i < len(x); i++ {
		y[i] = x[i] * sigmoid32(x[i])
	}
}

// tanhs sets y[i] = tanh(x[i]); y and x are as long, and may be the same
// slice.
func tanhs(y, x []float32) {
	head := 0
	if hasVectorMath {
		head = len(x) &^ 7
		tanhAVX2(y[:len(x)], x)
	}
	for i := head; i < len(x); i++ {
		y[i] = tanh32(x[i])
	}
}

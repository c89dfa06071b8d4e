//go:build amd64 && !noasm

package cpu

import "golang.org/x/sys/cpu"

// The vector loops in mathf_amd64.s do no bounds checks: len(dst) ≥
// len(src). The AVX2 loops handle the first len(src)/8·8 elements (clamp
// len(y)/32·32), the AVX-512 loops all of them.

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

// clampAVX2 sets y[i] = min(max(y[i], lo), hi), keeping NaN.
//
//go:noescape
func clampAVX2(y []float32, lo, hi float32)

// tanhAVX2 sets dst[i] = tanh(src[i]).
//
//go:noescape
func tanhAVX2(dst, src []float32)

// sumAVX2 returns the sum of x's first len(x)/8·8 elements.
//
//go:noescape
func sumAVX2(x []float32) float32

// maxAVX2 returns maxFloats of x's first len(x)/8·8 elements.
//
//go:noescape
func maxAVX2(x []float32) float32

// The AVX-512 loops, each as the AVX2 loop of the same name, over all of
// src (of y for clamp, of x for sum and max).

//go:noescape
func expSumAVX512(dst, src []float32, shift float32) float32

//go:noescape
func sigmoidAVX512(dst, src []float32, gate bool)

//go:noescape
func erfAVX512(dst, src []float32)

//go:noescape
func clampAVX512(y []float32, lo, hi float32)

//go:noescape
func tanhAVX512(dst, src []float32)

//go:noescape
func sumAVX512(x []float32) float32

//go:noescape
func maxAVX512(x []float32) float32

var hasVectorMath = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// vecBest is AVX-512 where the CPU has its foundation (F: every
// instruction the loops use, the K masks included) and the OS saves its
// registers, which cpu.X86.HasAVX512F also checks.
var vecBest = func() vecLevel {
	switch {
	case hasVectorMath && cpu.X86.HasAVX512F:
		return vecAVX512
	case hasVectorMath:
		return vecAVX2
	}
	return vecGo
}()

func expSumOn(l vecLevel, y, x []float32, shift float32) float32 {
	y = y[:len(x)]
	switch l {
	case vecAVX512:
		return expSumAVX512(y, x, shift)
	case vecAVX2:
		n := len(x) &^ 7
		return expSumAVX2(y, x, shift) + expSumGo(y[n:], x[n:], shift)
	}
	return expSumGo(y, x, shift)
}

func sigmoidsOn(l vecLevel, y, x []float32, gate bool) {
	y = y[:len(x)]
	switch l {
	case vecAVX512:
		sigmoidAVX512(y, x, gate)
		return
	case vecAVX2:
		sigmoidAVX2(y, x, gate)
		n := len(x) &^ 7
		y, x = y[n:], x[n:]
	}
	sigmoidsGo(y, x, gate)
}

func erfsOn(l vecLevel, y, x []float32) {
	y = y[:len(x)]
	switch l {
	case vecAVX512:
		erfAVX512(y, x)
		return
	case vecAVX2:
		erfAVX2(y, x)
		n := len(x) &^ 7
		y, x = y[n:], x[n:]
	}
	erfsGo(y, x)
}

func tanhsOn(l vecLevel, y, x []float32) {
	y = y[:len(x)]
	switch l {
	case vecAVX512:
		tanhAVX512(y, x)
		return
	case vecAVX2:
		tanhAVX2(y, x)
		n := len(x) &^ 7
		y, x = y[n:], x[n:]
	}
	tanhsGo(y, x)
}

func clampsOn(l vecLevel, y []float32, lo, hi float32) {
	switch l {
	case vecAVX512:
		clampAVX512(y, lo, hi)
		return
	case vecAVX2:
		clampAVX2(y, lo, hi)
		y = y[len(y)&^31:]
	}
	clampsGo(y, lo, hi)
}

func sumFloatsOn(l vecLevel, x []float32) float32 {
	switch l {
	case vecAVX512:
		return sumAVX512(x)
	case vecAVX2:
		n := len(x) &^ 7
		return sumAVX2(x) + sumFloatsGo(x[n:])
	}
	return sumFloatsGo(x)
}

func maxFloatsOn(l vecLevel, x []float32) float32 {
	switch l {
	case vecAVX512:
		return maxAVX512(x)
	case vecAVX2:
		n := len(x) &^ 7
		return max(maxAVX2(x), maxFloatsGo(x[n:]))
	}
	return maxFloatsGo(x)
}

package cpu

import "math"

// Float32 transcendentals for the activations on the hot paths (Sigmoid,
// Tanh, Exp, Softmax, Gelu, SiLU). math's functions work in float64 and
// cost 10–20 ns an element; these work in float32 with a polynomial after
// range reduction, at a few ns, within the error each function states
// (TestMathf measures it against math over dense sweeps).

const (
	ln2Hi    = 0.693359375    // ln 2 rounded to 11 bits: n·ln2Hi is exact
	ln2Lo    = -2.12194440e-4 // ln 2 − ln2Hi
	log2e    = 1.44269504088896341
	roundMag = 12582912          // 1.5·2²³: adding and subtracting it rounds to an integer
	expMax   = 88.72283935546875 // the largest float32 x with e^x finite
	expMin   = -103.972084045410 // below it e^x rounds to 0
)

// exp32 is e^x, within 2 ulp (2⁻¹⁴⁹ for subnormal results): x = n·ln 2 + r
// with |r| ≤ ln2/2, e^r by Cephes expf's polynomial, scaled by 2^n.
func exp32(x float32) float32 {
	switch {
	case x > expMax:
		return float32(math.Inf(1))
	case x < expMin:
		return 0
	case x != x:
		return x
	}
	fn := (x*log2e + roundMag) - roundMag
	r := x - fn*ln2Hi
	r -= fn * ln2Lo
	p := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	p = p*(r*r) + r + 1
	return scale2(p, int32(fn))
}

// scale2 is p·2^n for p in [0.5, 2] and n in [-150, 128], subnormal and
// overflowing results included.
func scale2(p float32, n int32) float32 {
	switch {
	case n > 127:
		p *= 2
		n--
	case n < -126:
		p *= 1.0 / (1 << 24)
		n += 24
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// sigmoid32 is 1/(1+e^−x), within 3 ulp where the result is normal; below
// x = −88.7, where it is under 2⁻¹²⁶, e^−x overflows and it is 0.
func sigmoid32(x float32) float32 { return 1 / (1 + exp32(-x)) }

// tanh32 is tanh x, within 3 ulp: Cephes tanhf's odd polynomial below
// |x| = 0.625, where 1 − 2/(e^2|x| + 1) would cancel, and that formula
// above.
func tanh32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.625 {
		z := x * x
		return ((((-5.70498872745e-3*z+2.06390887954e-2)*z-5.37397155531e-2)*z+1.33314422036e-1)*z-3.33332819422e-1)*z*x + x
	}
	if a != a {
		return x
	}
	t := 1 - 2/(exp32(2*a)+1)
	if x < 0 {
		return -t
	}
	return t
}

// erf32 is erf x, within 4·10⁻⁷ absolute: its Maclaurin series to x¹³
// below |x| = 0.5 (terms after it are under 10⁻⁹ there), and above it
// Abramowitz and Stegun's 7.1.26, 1 − t·P(t)·e^−x² with t = 1/(1 + 0.3275911|x|)
// (error at most 1.5·10⁻⁷, and float32 rounding).
func erf32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a < 0.5 {
		z := x * x
		// 2/√π · (x − x³/3 + x⁵/10 − x⁷/42 + x⁹/216 − x¹¹/1320 + x¹³/9360)
		return 1.1283791670955126 * x * (1 + z*(-1.0/3+z*(1.0/10+z*(-1.0/42+z*(1.0/216+z*(-1.0/1320+z*(1.0/9360)))))))
	}
	if a != a {
		return x
	}
	t := 1 / (1 + 0.3275911*a)
	y := 1 - t*(0.254829592+t*(-0.284496736+t*(1.421413741+t*(-1.453152027+t*1.061405429))))*exp32(-a*a)
	if x < 0 {
		return -y
	}
	return y
}

// gelu32 is x·Φ(x) = x/2·(1 + erf(x/√2)).
func gelu32(x float32) float32 { return 0.5 * x * (1 + erf32(x*0.70710678118654752)) }

// gelus sets y[i] = gelu32(x[i]) with the vector erf; y may be x.
func gelus(y, x []float32) { geluBlocks(y, x, false) }

// geluBlocks sets y[i] = x[i]/2·(1 + t(x[i])), t the erf or (with tanh)
// the tanh term of GELU through the vector loops, a block at a time
// through a buffer on the stack (calls made directly, so that it stays
// there). y may be x.
func geluBlocks(y, x []float32, tanh bool) {
	var buf [256]float32
	for lo := 0; lo < len(x); lo += len(buf) {
		xs := x[lo:min(lo+len(buf), len(x))]
		t := buf[:len(xs)]
		geluIn(t, xs, tanh)
		if tanh {
			tanhs(t, t)
		} else {
			erfs(t, t)
		}
		geluOut(y[lo:lo+len(xs)], xs, t)
	}
}

// geluInGo is geluIn's loop.
func geluInGo(t, x []float32, tanh bool) {
	x = x[:len(t)]
	if tanh {
		for i, v := range x {
			// The conversion rounds the cube term apart, as the vector
			// loop does: no fused multiply-add under GOAMD64=v3.
			t[i] = 0.7978845608028654 * (v + float32(0.044715*v*v*v))
		}
		return
	}
	for i, v := range x {
		t[i] = v * 0.70710678118654752
	}
}

// geluOutGo is geluOut's loop.
func geluOutGo(y, x, t []float32) {
	x, t = x[:len(y)], t[:len(y)]
	for i, v := range x {
		y[i] = 0.5 * v * (1 + t[i])
	}
}

// geluTanh32 is Gelu's tanh approximation, x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func geluTanh32(x float32) float32 {
	return 0.5 * x * (1 + tanh32(0.7978845608028654*(x+0.044715*x*x*x)))
}

// geluTanhs sets y[i] = geluTanh32(x[i]) with the vector tanh; y may be x.
func geluTanhs(y, x []float32) { geluBlocks(y, x, true) }

// vecLevel names a set of loops for the slice functions below: the float32
// functions element by element (vecGo), AVX2 with FMA eight lanes at a
// time with a Go tail (vecAVX2), or AVX-512 sixteen lanes at a time with
// masked tails (vecAVX512). The AVX-512 loops compute what the AVX2 loops
// do, bit for bit; both differ from the Go ones by their FMAs, within each
// function's bound. vecBest (mathf_amd64.go, mathf_noasm.go) is the best
// level this CPU and build run; the functions below use it, and the
// …On variants take a level, for the tests to try each one.
type vecLevel uint8

const (
	vecGo vecLevel = iota
	vecAVX2
	vecAVX512
)

func (l vecLevel) String() string {
	return [...]string{vecGo: "Go", vecAVX2: "AVX2", vecAVX512: "AVX512"}[l]
}

// expSum sets y[i] = e^(x[i] − shift) and returns the sum; y and x are as
// long, and may be the same slice.
func expSum(y, x []float32, shift float32) float32 { return expSumOn(vecBest, y, x, shift) }

// sigmoids sets y[i] = sigmoid(x[i]); y and x are as long, and may be the
// same slice.
func sigmoids(y, x []float32) { sigmoidsOn(vecBest, y, x, false) }

// silus sets y[i] = x[i]·sigmoid32(x[i]), rounded as Mul(x, Sigmoid(x))
// rounds; y and x are as long, and may be the same slice.
func silus(y, x []float32) { sigmoidsOn(vecBest, y, x, true) }

// erfs sets y[i] = erf(x[i]); y and x are as long, and may be the same
// slice.
func erfs(y, x []float32) { erfsOn(vecBest, y, x) }

// tanhs sets y[i] = tanh(x[i]); y and x are as long, and may be the same
// slice.
func tanhs(y, x []float32) { tanhsOn(vecBest, y, x) }

// clamps sets y[i] = min(max(y[i], lo), hi); NaN stays NaN.
func clamps(y []float32, lo, hi float32) { clampsOn(vecBest, y, lo, hi) }

// sumFloats returns Σ x[i] in float32, in partial sums (8 in Go, 32 with
// AVX2, 64 with AVX-512) that are added at the end: no element passes
// through more than len(x)/8 + 16 roundings, so the result is within
// (len(x)/8 + 16)·2⁻²⁴·Σ|x[i]| of the exact sum (a sum from left to right
// is within (len(x) − 1)·2⁻²⁴·Σ|x[i]|).
func sumFloats(x []float32) float32 { return sumFloatsOn(vecBest, x) }

// maxFloats returns the largest of x as Go's max folds it from −Inf: NaN
// if any element is NaN, +0 over −0, −Inf for none. max is associative and
// commutative, so the order does not change the result.
func maxFloats(x []float32) float32 { return maxFloatsOn(vecBest, x) }

// The Go loops: each level's whole loop on vecGo, and the AVX2 tails.

func expSumGo(y, x []float32, shift float32) float32 {
	var sum float32
	for i, v := range x {
		y[i] = exp32(v - shift)
		sum += y[i]
	}
	return sum
}

func sigmoidsGo(y, x []float32, gate bool) {
	if gate {
		for i, v := range x {
			y[i] = v * sigmoid32(v)
		}
		return
	}
	for i, v := range x {
		y[i] = sigmoid32(v)
	}
}

func erfsGo(y, x []float32) {
	for i, v := range x {
		y[i] = erf32(v)
	}
}

func tanhsGo(y, x []float32) {
	for i, v := range x {
		y[i] = tanh32(v)
	}
}

func clampsGo(y []float32, lo, hi float32) {
	for i, v := range y {
		if v < lo {
			y[i] = lo
		} else if v > hi {
			y[i] = hi
		}
	}
}

// sumFloatsGo sums in eight partial sums, which the CPU adds in parallel.
func sumFloatsGo(x []float32) float32 {
	var s [8]float32
	for ; len(x) >= 8; x = x[8:] {
		s[0] += x[0]
		s[1] += x[1]
		s[2] += x[2]
		s[3] += x[3]
		s[4] += x[4]
		s[5] += x[5]
		s[6] += x[6]
		s[7] += x[7]
	}
	for _, v := range x {
		s[0] += v
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// maxFloatsGo takes the max in four partial maxima, which the CPU takes in
// parallel.
func maxFloatsGo(x []float32) float32 {
	m := [4]float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(-1))}
	for ; len(x) >= 4; x = x[4:] {
		m[0] = max(m[0], x[0])
		m[1] = max(m[1], x[1])
		m[2] = max(m[2], x[2])
		m[3] = max(m[3], x[3])
	}
	for _, v := range x {
		m[0] = max(m[0], v)
	}
	return max(max(m[0], m[1]), max(m[2], m[3]))
}

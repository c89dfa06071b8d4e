package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// ulps is the distance between got and want in units of float32's last
// place at want.
func ulps(got, want float32) float64 {
	if got == want {
		return 0
	}
	ulp := math.Nextafter32(abs32(want), float32(math.Inf(1))) - abs32(want)
	return math.Abs(float64(got)-float64(want)) / float64(ulp)
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// sweep calls f on the float32s from lo to hi in steps of |x|·2⁻¹⁷ (every
// 64th float32) and of 10⁻³⁰ near zero (both signs of zero excluded): some
// 16 million points from −110 to 95.
func sweep(lo, hi float32, f func(x float32)) {
	for x := lo; x <= hi; {
		f(x)
		step := max(abs32(x)*(1.0/(1<<17)), 1e-30)
		x += step
	}
}

// TestMathf measures the float32 functions against math's float64 ones,
// rounded, over dense sweeps, and checks the special values.
func TestMathf(t *testing.T) {
	cases := []struct {
		name    string
		f       func(float32) float32
		ref     func(float64) float64
		lo, hi  float32
		maxUlps float64 // the bound the function's doc states, in ulp
		maxAbs  float64 // or as an absolute error (0: in ulp)
	}{
		{"exp32", exp32, math.Exp, -87, 88.7, 2, 0},
		{"exp32 subnormal", exp32, math.Exp, -103.9, -87, 0, 0x1p-149},
		{"sigmoid32", sigmoid32, sigmoid, -88.7, 100, 3, 0},
		{"sigmoid32 subnormal", sigmoid32, sigmoid, -110, -88.7, 0, 0x1p-126},
		{"tanh32", tanh32, math.Tanh, -20, 20, 3, 0},
		{"erf32", erf32, math.Erf, -6, 6, 0, 4e-7},
	}
	for _, c := range cases {
		worst, at := 0.0, float32(0)
		sweep(c.lo, c.hi, func(x float32) {
			got, want := c.f(x), float32(c.ref(float64(x)))
			e := ulps(got, want)
			if c.maxAbs > 0 {
				e = math.Abs(float64(got) - float64(want))
			}
			if e > worst || e != e {
				worst, at = e, x
			}
		})
		if bound := max(c.maxUlps, c.maxAbs); !(worst <= bound) {
			t.Errorf("%s: error %.3g at x = %g, bound %g", c.name, worst, at, bound)
		}
	}
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, c := range []struct {
		name      string
		got, want float32
	}{
		{"exp32(+Inf)", exp32(inf), inf}, {"exp32(-Inf)", exp32(-inf), 0}, {"exp32(89)", exp32(89), inf},
		{"exp32(0)", exp32(0), 1}, {"sigmoid32(-Inf)", sigmoid32(-inf), 0}, {"sigmoid32(+Inf)", sigmoid32(inf), 1},
		{"tanh32(±Inf)", tanh32(-inf), -1}, {"tanh32(0)", tanh32(0), 0}, {"erf32(-Inf)", erf32(-inf), -1},
		{"gelu32(0)", gelu32(0), 0}, {"geluTanh32(-Inf)", geluTanh32(-100), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for name, f := range map[string]func(float32) float32{"exp32": exp32, "sigmoid32": sigmoid32, "tanh32": tanh32, "erf32": erf32, "gelu32": gelu32} {
		if v := f(nan); v == v {
			t.Errorf("%s(NaN) = %v, want NaN", name, v)
		}
	}
}

func BenchmarkMathf(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i-2048) / 256
	}
	y := make([]float32, len(x))
	for name, f := range map[string]func(float32) float32{"exp32": exp32, "sigmoid32": sigmoid32, "tanh32": tanh32, "erf32": erf32,
		"math.Exp": func(v float32) float32 { return float32(math.Exp(float64(v))) }, "math.Erf": func(v float32) float32 { return float32(math.Erf(float64(v))) }} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for i, v := range x {
					y[i] = f(v)
				}
			}
		})
	}
}

// vecLoop is a slice function of the vector levels, with the float32
// function it applies element by element, math's value, and the bound the
// float32 function's doc states.
type vecLoop struct {
	name   string
	run    func(l vecLevel, y, x []float32) // y = f(x), y and x as long
	scalar func(float32) float32
	ref    func(float64) float64
	bound  func(x, want float32) float64 // the most f(x) may stray from want
	block  int                           // the AVX2 loop's block; the Go tail does the rest
}

// ulp is the gap from |x| to the next float32 up.
func ulp(x float32) float64 {
	return float64(math.Nextafter32(abs32(x), float32(math.Inf(1))) - abs32(x))
}

var vecLoops = []vecLoop{
	{"exp", func(l vecLevel, y, x []float32) { expSumOn(l, y, x, 0) }, exp32, math.Exp,
		func(_, want float32) float64 { return max(2*ulp(want), 0x1p-149) }, 8},
	{"sigmoid", func(l vecLevel, y, x []float32) { sigmoidsOn(l, y, x, false) }, sigmoid32, sigmoid,
		func(x, want float32) float64 {
			if x < -88.7 {
				return 0x1p-126
			}
			return 3 * ulp(want)
		}, 8},
	{"erf", erfsOn, erf32, math.Erf, func(_, _ float32) float64 { return 4e-7 }, 8},
	{"tanh", tanhsOn, tanh32, math.Tanh, func(_, want float32) float64 { return 3 * ulp(want) }, 8},
	{"clamp", func(l vecLevel, y, x []float32) { copy(y, x); clampsOn(l, y, -1, 6) }, clampRef,
		func(x float64) float64 { return float64(clampRef(float32(x))) }, func(_, _ float32) float64 { return 0 }, 32},
}

// within reports whether got is within l's bound of want for x (equal
// counts, infinities included).
func (l vecLoop) within(got, x, want float32) bool {
	return got == want || math.Abs(float64(got)-float64(want)) <= l.bound(x, want)
}

// clampRef is clamps(·, −1, 6) of one element.
func clampRef(x float32) float32 {
	if x < -1 {
		return -1
	}
	if x > 6 {
		return 6
	}
	return x
}

// same reports whether a and b are the same float32, or both NaN.
func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// vecSpecials are inputs on which every level gives exactly what the
// float32 function gives: NaN, the infinities, the zeros, subnormals and
// the largest floats.
var vecSpecials = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
	0x1p-149, -0x1p-149, 1e-40, -1e-40, 0x1p-126 - 0x1p-149, -(0x1p-126 - 0x1p-149), math.MaxFloat32, -math.MaxFloat32,
}

// vecEdges are inputs where a formula changes or a result leaves the
// normal range.
var vecEdges = []float32{
	expMax, math.Nextafter32(expMax, 100), expMin, math.Nextafter32(expMin, 0), -87.33655, -88.7, 88.7,
	0.5, math.Nextafter32(0.5, 0), -0.5, 0.625, math.Nextafter32(0.625, 0), -0.625, -1, 6, math.Nextafter32(6, 7),
}

// vecPadded is loop l's AVX2 loop alone on every element of x, through a
// copy padded to whole blocks: the values the AVX-512 loop must give, and
// the AVX2 level's for the elements before its tail.
func vecPadded(l vecLoop, x []float32) []float32 {
	n := (len(x) + l.block - 1) / l.block * l.block
	xp := make([]float32, n)
	copy(xp, x)
	l.run(vecAVX2, xp, xp)
	return xp[:len(x)]
}

// vecWant is what level lv of loop l must give for x, bit for bit: the
// float32 function on vecGo and in the AVX2 level's tail, the AVX2 loop's
// values elsewhere.
func vecWant(lv vecLevel, l vecLoop, x []float32) []float32 {
	want := make([]float32, len(x))
	head := 0
	switch lv {
	case vecAVX512:
		head = len(x)
	case vecAVX2:
		head = len(x) / l.block * l.block
	}
	if head > 0 {
		copy(want, vecPadded(l, x[:head]))
	}
	for i := head; i < len(x); i++ {
		want[i] = l.scalar(x[i])
	}
	return want
}

// TestVectorLoops checks every vector level this CPU runs, each loop, over
// the dense sweep from −110 to 95 and the edges: the Go level (on the edges
// alone) equal to the float32 function; the AVX2 loop within that function's bound of math's
// value, and within twice the bound of the function's own value (both are
// within the bound of math's; FMAs round differently); the AVX-512 loop
// equal to the AVX2 loop bit for bit. Then, on every level, the special
// values equal to the float32 function's, and every length from 0 to 33,
// at several offsets and in place, with nothing outside y written.
func TestVectorLoops(t *testing.T) {
	for lv := vecGo; lv <= vecAVX512; lv++ {
		t.Run(lv.String(), func(t *testing.T) {
			vecSkip(t, lv)
			for _, l := range vecLoops {
				check := func(what string, x []float32) {
					t.Helper()
					y := make([]float32, len(x))
					l.run(lv, y, x)
					var avx2 []float32
					if lv == vecAVX512 {
						avx2 = vecPadded(l, x)
					}
					for i, v := range x {
						switch lv {
						case vecGo:
							if s := l.scalar(v); !same(y[i], s) {
								t.Fatalf("%s %s(%v) = %v, float32 function %v", what, l.name, v, y[i], s)
							}
						case vecAVX512:
							if !same(y[i], avx2[i]) {
								t.Fatalf("%s %s(%v) = %v, AVX2 loop %v", what, l.name, v, y[i], avx2[i])
							}
						default:
							s, want := l.scalar(v), float32(l.ref(float64(v)))
							switch {
							case v != v:
								if y[i] == y[i] {
									t.Fatalf("%s %s(NaN) = %v", what, l.name, y[i])
								}
							case !l.within(y[i], v, want):
								t.Fatalf("%s %s(%v) = %v, math's value %v: beyond the bound", what, l.name, v, y[i], want)
							case y[i] != s && !(math.Abs(float64(y[i]-s)) <= 2*l.bound(v, s)):
								t.Fatalf("%s %s(%v) = %v, float32 function %v: beyond twice the bound", what, l.name, v, y[i], s)
							}
						}
					}
				}
				if lv != vecGo { // there it is the float32 function in a loop, which TestMathf sweeps
					chunk := make([]float32, 0, 1<<16)
					sweep(-110, 95, func(x float32) {
						if chunk = append(chunk, x); len(chunk) == cap(chunk) {
							check("sweep", chunk)
							chunk = chunk[:0]
						}
					})
					check("sweep", chunk)
				}
				check("edge", vecEdges)
				y := make([]float32, len(vecSpecials))
				l.run(lv, y, vecSpecials)
				for i, v := range vecSpecials {
					if s := l.scalar(v); !same(y[i], s) {
						t.Errorf("%s(%v) = %v, float32 function %v", l.name, v, y[i], s)
					}
				}
				vecCheckLengths(t, lv, l)
			}
		})
	}
}

// vecCheckLengths runs loop l at level lv on every length from 0 to 33, at
// offsets 0 to 3 into x and y, out of place and in place, and checks the
// values against vecWant and that nothing outside y is written.
func vecCheckLengths(t *testing.T, lv vecLevel, l vecLoop) {
	t.Helper()
	src := append(append([]float32{}, vecSpecials...), vecEdges...)
	for i := 0; len(src) < 40; i++ {
		src = append(src, float32(i)*0.37-7)
	}
	const guard = 12345
	for n := 0; n <= 33; n++ {
		for off := range 4 {
			x := src[off : off+n]
			want := vecWant(lv, l, x)
			buf := make([]float32, n+off+20)
			for i := range buf {
				buf[i] = guard
			}
			y := buf[off : off+n]
			l.run(lv, y, x)
			in := append([]float32{}, x...)
			l.run(lv, in, in)
			for i := range buf {
				if (i < off || i >= off+n) && buf[i] != guard {
					t.Fatalf("%s on %d elements at offset %d wrote %v at %d", l.name, n, off, buf[i], i-off)
				}
			}
			for i := range want {
				if !same(y[i], want[i]) || !same(in[i], want[i]) {
					t.Fatalf("%s on %d elements at offset %d: %s(%v) = %v (in place %v), want %v", l.name, n, off, l.name, x[i], y[i], in[i], want[i])
				}
			}
		}
	}
}

// TestVectorSums checks, at every level this CPU runs, expSum's sum and
// silus: the sum within (n − 1)·2⁻²⁴ of the sum of the values it stored,
// the bound of any order of summation, and silus equal to x times sigmoids
// of the same level, as Mul(x, Sigmoid(x)) gives it.
func TestVectorSums(t *testing.T) {
	var xs []float32
	sweep(-20, 20, func(x float32) {
		if len(xs) < 1<<16 {
			xs = append(xs, x)
		}
	})
	xs = append(append(xs, vecSpecials...), vecEdges...)
	for lv := vecGo; lv <= vecAVX512; lv++ {
		t.Run(lv.String(), func(t *testing.T) {
			vecSkip(t, lv)
			for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 1000, 1 << 16} {
				x := xs[:n]
				y := make([]float32, n)
				sum := expSumOn(lv, y, x, 0.5)
				var want, mag float64
				for _, v := range y {
					want += float64(v)
					mag += math.Abs(float64(v))
				}
				if math.Abs(float64(sum)-want) > float64(n)*0x1p-24*mag {
					t.Errorf("expSum over %d: sum %v, want %v", n, sum, want)
				}
			}
			x := append(append([]float32{}, xs[:1000]...), vecSpecials...)
			sig, silu := make([]float32, len(x)), make([]float32, len(x))
			sigmoidsOn(lv, sig, x, false)
			sigmoidsOn(lv, silu, x, true)
			for i, v := range x {
				if !same(silu[i], v*sig[i]) {
					t.Fatalf("silu(%v) = %v, want %v (Sigmoid then Mul)", v, silu[i], v*sig[i])
				}
			}
		})
	}
}

// TestSumMaxFloats checks sumFloats and maxFloats at every level this CPU
// runs on every length to 200 and a few longer ones: the sum within
// (n/8 + 16)·2⁻²⁴·Σ|x| of the exact sum (the bound sumFloats states; the
// float64 reference errs by n·2⁻⁵³·Σ|x| at most), NaN and infinities
// propagated as additions propagate them; the max equal to Go's max folded
// from −Inf, with NaN, ±Inf and both zeros placed at every position.
func TestSumMaxFloats(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inf, nan, negZero := float32(math.Inf(1)), float32(math.NaN()), float32(math.Copysign(0, -1))
	lengths := []int{1000, 4099, 1<<16 + 13}
	for n := 200; n >= 0; n-- {
		lengths = append(lengths, n)
	}
	for lv := vecGo; lv <= vecAVX512; lv++ {
		t.Run(lv.String(), func(t *testing.T) {
			vecSkip(t, lv)
			for _, n := range lengths {
				// Signed values over six decades, so that partial sums cancel.
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(6)-3)))
				}
				var want, mag float64
				for _, v := range x {
					want += float64(v)
					mag += math.Abs(float64(v))
				}
				got := sumFloatsOn(lv, x)
				if bound := (float64(n)/8+16)*0x1p-24*mag + float64(n)*0x1p-53*mag; math.Abs(float64(got)-want) > bound {
					t.Fatalf("sum of %d: %v, want %v ± %.3g", n, got, want, bound)
				}
				if got, want := maxFloatsOn(lv, x), maxFold(x); !same(got, want) {
					t.Fatalf("max of %d: %v, want %v", n, got, want)
				}
				if n > 70 {
					continue
				}
				for p := range n {
					for _, special := range []struct{ v, sum float32 }{{nan, nan}, {inf, inf}, {-inf, -inf}} {
						old := x[p]
						x[p] = special.v
						if got := sumFloatsOn(lv, x); !same(got, special.sum) {
							t.Fatalf("sum of %d with %v at %d: %v", n, special.v, p, got)
						}
						if got, want := maxFloatsOn(lv, x), maxFold(x); !same(got, want) {
							t.Fatalf("max of %d with %v at %d: %v, want %v", n, special.v, p, got, want)
						}
						x[p] = old
					}
					// Zeros of both signs: +0 wins wherever it is.
					z := make([]float32, n)
					for i := range z {
						z[i] = negZero
					}
					if got := maxFloatsOn(lv, z); math.Float32bits(got) != math.Float32bits(negZero) {
						t.Fatalf("max of %d −0s: %v", n, got)
					}
					z[p] = 0
					if got := maxFloatsOn(lv, z); math.Float32bits(got) != 0 {
						t.Fatalf("max of %d −0s with +0 at %d: −0", n, p)
					}
				}
			}
			if got := maxFloatsOn(lv, nil); got != -inf {
				t.Errorf("max of none = %v, want −Inf", got)
			}
		})
	}
}

// vecSkip skips t when level lv is beyond what this CPU and build run.
func vecSkip(t *testing.T, lv vecLevel) {
	t.Helper()
	if lv > vecBest {
		t.Skipf("%v loops not run: the best level this build (%s, tags) and CPU run is %v", lv, runtime.GOARCH, vecBest)
	}
}

// maxFold is Go's max folded over x from −Inf.
func maxFold(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// TestGelus checks gelus and geluTanhs, through the vector erf and tanh,
// against gelu32 and geluTanh32, on the sweep and on every length to 33.
func TestGelus(t *testing.T) {
	var xs []float32
	sweep(-20, 20, func(x float32) { xs = append(xs, x) })
	xs = append(append(xs, vecSpecials...), vecEdges...)
	for _, n := range []int{0, 1, 7, 8, 9, 17, 33, len(xs)} {
		x := xs[len(xs)-n:]
		y := make([]float32, n)
		for _, g := range []struct {
			name   string
			vec    func(y, x []float32)
			scalar func(float32) float32
		}{{"gelus", gelus, gelu32}, {"geluTanhs", geluTanhs, geluTanh32}} {
			copy(y, x)
			g.vec(y, y)
			for i, v := range x {
				if ref := g.scalar(v); !same(y[i], ref) && !(math.Abs(float64(y[i]-ref)) <= 1e-6*max(1, math.Abs(float64(ref)))) {
					t.Fatalf("%s: gelu(%v) = %v, float32 function %v", g.name, v, y[i], ref)
				}
			}
		}
	}
}

// TestHardSwishes checks hardSwishes and hardSigmoids (with HardSwish's
// alpha 1/6 and beta 1/2, and others) against their float64 definitions
// on the sweep, the special values and every length to 33, in place and
// not, across the 512-element chunks. alpha·x + beta is rounded in float32
// as ONNX Runtime's is, which near its zero (x near −3) leaves an
// absolute error of an ulp of beta: the bound is 2.4e-7·|result| plus
// 1.2e-7·(|x| + 1), and NaN for NaN.
func TestHardSwishes(t *testing.T) {
	var xs []float32
	sweep(-20, 20, func(x float32) { xs = append(xs, x) })
	xs = append(append(xs, vecSpecials...), vecEdges...)
	near32 := func(got float32, x float32, want float64) bool {
		if math.IsNaN(want) {
			return math.IsNaN(float64(got))
		}
		return float64(got) == want || math.Abs(float64(got)-want) <= 2.4e-7*math.Abs(want)+1.2e-7*(math.Abs(float64(x))+1)
	}
	for _, n := range []int{0, 1, 7, 8, 9, 17, 33, 511, 512, 513, len(xs)} {
		x := xs[len(xs)-n:]
		for _, inPlace := range []bool{false, true} {
			y := make([]float32, n)
			if inPlace {
				copy(y, x)
				hardSwishes(y, y)
			} else {
				hardSwishes(y, x)
			}
			for i, v := range x {
				if want := float64(v) * max(0, min(1, float64(v)/6+0.5)); !near32(y[i], v, want) {
					t.Fatalf("n %d, in place %v: hardSwish(%v) = %v, want %v", n, inPlace, v, y[i], want)
				}
			}
		}
		for _, ab := range [][2]float32{{0.2, 0.5}, {1.0 / 6, 0.5}, {-3, 1}} {
			y := make([]float32, n)
			hardSigmoids(y, x, ab[0], ab[1])
			// The vector loop rounds as the Go loop does.
			for _, swish := range []bool{false, true} {
				v, g := make([]float32, n), make([]float32, n)
				hardSigmoidsOf(v, x, ab[0], ab[1], swish)
				hardSigmoidsGo(g, x, ab[0], ab[1], swish)
				for i := range v {
					if !same(v[i], g[i]) {
						t.Fatalf("n %d, swish %v: hardSigmoid(%v; %v, %v) = %v, Go loop %v", n, swish, x[i], ab[0], ab[1], v[i], g[i])
					}
				}
			}
			for i, v := range x {
				if want := max(0, min(1, float64(ab[0])*float64(v)+float64(ab[1]))); !near32(y[i], v, want) {
					t.Fatalf("n %d: hardSigmoid(%v; %v, %v) = %v, want %v", n, v, ab[0], ab[1], y[i], want)
				}
			}
		}
	}
}

// BenchmarkVectorMath times each loop at each level this CPU runs, on 4 Ki
// and 64 Ki elements uniform in [-8, 8), an activation's usual range, from
// x into y.
func BenchmarkVectorMath(b *testing.B) {
	loops := []struct {
		name string
		f    func(l vecLevel, y, x []float32)
	}{
		{"sigmoid", func(l vecLevel, y, x []float32) { sigmoidsOn(l, y, x, false) }},
		{"silu", func(l vecLevel, y, x []float32) { sigmoidsOn(l, y, x, true) }},
		{"expSum", func(l vecLevel, y, x []float32) { expSumOn(l, y, x, 0) }},
		{"erf", erfsOn}, {"tanh", tanhsOn},
		{"clamp", func(l vecLevel, y, x []float32) { copy(y, x); clampsOn(l, y, -1, 6) }},
		{"sum", func(l vecLevel, y, x []float32) { y[0] = sumFloatsOn(l, x) }},
		{"max", func(l vecLevel, y, x []float32) { y[0] = maxFloatsOn(l, x) }},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range loops {
		for lv := vecGo; lv <= vecBest; lv++ {
			for _, n := range []int{1 << 12, 1 << 16} {
				x, y := make([]float32, n), make([]float32, n)
				for i := range x {
					x[i] = r.Float32()*16 - 8
				}
				b.Run(fmt.Sprintf("%s/%v/%d", l.name, lv, n), func(b *testing.B) {
					b.SetBytes(int64(4 * n))
					for b.Loop() {
						l.f(lv, y, x)
					}
				})
			}
		}
	}
}

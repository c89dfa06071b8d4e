package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// sweep calls f on every 97th float32 in [lo, hi] (both signs of zero
// excluded), about a million points across the range.
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

// TestVectorMath checks expSum, erfs, gelus, tanhs, geluTanhs, clamps, silus and sigmoids, the vector loops where the CPU
// has them, against math over a sweep, on every tail length, in place, and
// on the special values.
func TestVectorMath(t *testing.T) {
	var xs []float32
	sweep(-110, 95, func(x float32) { xs = append(xs, x) })
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	xs = append(xs, 0, inf, -inf, nan, 88.72283, 88.72284, -103.97, -87.33655)
	for _, n := range []int{0, 1, 7, 8, 9, 17, len(xs)} {
		x := xs[len(xs)-n:]
		y := make([]float32, n)
		sum := expSum(y, x, 0.5)
		var want float64
		for i, v := range x {
			ref := float32(math.Exp(float64(v - 0.5)))
			if !(ulps(y[i], ref) <= 2 || math.Abs(float64(y[i]-ref)) <= 0x1p-149) && !(v != v && y[i] != y[i]) {
				t.Fatalf("expSum: e^(%v − 0.5) = %v, want %v", v, y[i], ref)
			}
			want += float64(y[i])
		}
		if n < len(xs) && math.Abs(float64(sum)-want) > 1e-6*math.Abs(want) {
			t.Errorf("expSum over %d: sum %v, want %v", n, sum, want)
		}
		copy(y, x)
		erfs(y, y)
		for i, v := range x {
			ref := float32(math.Erf(float64(v)))
			if !(math.Abs(float64(y[i]-ref)) <= 4e-7) && !(v != v && y[i] != y[i]) {
				t.Fatalf("erfs: erf(%v) = %v, want %v", v, y[i], ref)
			}
		}
		copy(y, x)
		gelus(y, y)
		for i, v := range x {
			if ref := gelu32(v); y[i] != ref && !(math.Abs(float64(y[i]-ref)) <= 1e-6*max(1, math.Abs(float64(ref)))) && !(ref != ref && y[i] != y[i]) {
				t.Fatalf("gelus: gelu(%v) = %v, gelu32 gives %v", v, y[i], ref)
			}
		}
		copy(y, x)
		clamps(y, -1, 6)
		for i, v := range x {
			if want := max(-1, min(v, 6)); y[i] != want && !(v != v && y[i] != y[i]) {
				t.Fatalf("clamps: clamp(%v, -1, 6) = %v, want %v", v, y[i], want)
			}
		}
		copy(y, x)
		tanhs(y, y)
		for i, v := range x {
			ref := float32(math.Tanh(float64(v)))
			if !(ulps(y[i], ref) <= 3) && !(v != v && y[i] != y[i]) {
				t.Fatalf("tanhs: tanh(%v) = %v, want %v", v, y[i], ref)
			}
		}
		copy(y, x)
		geluTanhs(y, y)
		for i, v := range x {
			if ref := geluTanh32(v); y[i] != ref && !(math.Abs(float64(y[i]-ref)) <= 1e-6*max(1, math.Abs(float64(ref)))) && !(ref != ref && y[i] != y[i]) {
				t.Fatalf("geluTanhs: gelu(%v) = %v, geluTanh32 gives %v", v, y[i], ref)
			}
		}
		copy(y, x)
		silus(y, y)
		sig := make([]float32, n) // the same split into vector blocks and tail
		sigmoids(sig, x)
		for i, v := range x {
			if want := v * sig[i]; y[i] != want && !(want != want && y[i] != y[i]) {
				t.Fatalf("silus: silu(%v) = %v, want %v (Sigmoid then Mul)", v, y[i], want)
			}
		}
		copy(y, x)
		sigmoids(y, y)
		for i, v := range x {
			ref := float32(sigmoid(float64(v)))
			if !(ulps(y[i], ref) <= 3 || v < -88.7 && y[i] <= 0x1p-126) && !(v != v && y[i] != y[i]) {
				t.Fatalf("sigmoids: sigmoid(%v) = %v, want %v", v, y[i], ref)
			}
		}
	}
}

// BenchmarkVectorMath times the vector loops on 4 Ki and 64 Ki elements
// uniform in [-8, 8), an activation's usual range, from x into y.
func BenchmarkVectorMath(b *testing.B) {
	loops := []struct {
		name string
		f    func(y, x []float32)
	}{
		{"sigmoid", sigmoids}, {"silu", silus},
		{"expSum", func(y, x []float32) { expSum(y, x, 0) }},
		{"erf", erfs}, {"tanh", tanhs},
		{"clamp", func(y, x []float32) { copy(y, x); clamps(y, -1, 6) }},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range loops {
		for _, n := range []int{1 << 12, 1 << 16} {
			x, y := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i] = r.Float32()*16 - 8
			}
			b.Run(fmt.Sprintf("%s/%d", l.name, n), func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					l.f(y, x)
				}
			})
		}
	}
}

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddInto checks addInto, vectorised where the CPU allows, against
// the Go loop bit for bit on every length up to 100 (each tail of the
// 32-wide loop), with NaN and infinities among the values, and checks that
// it writes nothing past len(y).
func TestAddInto(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45}
	for n := range 101 {
		y, x := nnRandom(r, n+1), nnRandom(r, n+1)
		for i := range n / 10 {
			y[r.IntN(n)], x[r.IntN(n)] = special[i%len(special)], special[(i+1)%len(special)]
		}
		want := append([]float32(nil), y...)
		addIntoGo(want[:n], x)
		got := append([]float32(nil), y...)
		addInto(got[:n], x)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("length %d: element %d = %g, want %g", n, i, got[i], want[i])
			}
		}
	}
}

// TestScaleAndMaxOf checks scale bit for bit and maxOf by value against
// their Go loops on every length up to 100, NaN, infinities and signed
// zeros included; maxOf must return NaN whenever an element is NaN,
// wherever it lies.
func TestScaleAndMaxOf(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, -3e38}
	for n := 1; n <= 100; n++ {
		x := nnRandom(r, n)
		for i := range n / 8 {
			x[r.IntN(n)] = special[i%len(special)]
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		scale(got, -0.37)
		scaleGo(want, -0.37)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("scale, length %d: element %d = %g, want %g", n, i, got[i], want[i])
			}
		}
		if got, want := maxOf(x), maxOfGo(x); got != want {
			t.Fatalf("maxOf, length %d: %g, want %g (%v)", n, got, want, x)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			y := append([]float32(nil), x...)
			y[at] = float32(math.NaN())
			if m := maxOf(y); m == m {
				t.Fatalf("maxOf, length %d, NaN at %d: %g, want NaN", n, at, m)
			}
		}
	}
}

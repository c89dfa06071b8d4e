package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddInto checks addInto, vectorised where the CPU allows, against
// the Go loop of Add bit for bit on every length up to 100 (each tail of the
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
		ewArithVVGo(ewAdd, want[:n], want[:n], x)
		got := append([]float32(nil), y...)
		addInto(got[:n], x)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("length %d: element %d = %g, want %g", n, i, got[i], want[i])
			}
		}
	}
}

// TestScale checks scale bit for bit against its Go loop on every length
// up to 100, NaN, infinities and signed zeros included.
func TestScale(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, -3e38}
	for n := 1; n <= 100; n++ {
		x := nnRandom(r, n)
		for i := range n / 8 {
			x[r.IntN(n)] = special[i%len(special)]
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		scale(got, -0.37)
		ewArithVSGo(ewMul, want, want, -0.37)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("scale, length %d: element %d = %g, want %g", n, i, got[i], want[i])
			}
		}
	}
}

// TestGeluInOut checks geluIn (both forms) and geluOut, vectorised where
// the CPU allows, against their Go loops bit for bit on every length up to
// 70, with NaN, infinities and signed zeros among the values.
func TestGeluInOut(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, 3e38}
	same := func(name string, n int, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s, length %d: element %d = %g, want %g", name, n, i, got[i], want[i])
			}
		}
	}
	for n := range 71 {
		x, u := nnRandom(r, n), nnRandom(r, n)
		for i := range n {
			x[i] *= 8
		}
		for i := range n / 6 {
			x[r.IntN(n)], u[r.IntN(n)] = special[i%len(special)], special[(i+3)%len(special)]
		}
		for _, tanh := range []bool{false, true} {
			got, want := make([]float32, n), make([]float32, n)
			geluIn(got, x, tanh)
			geluInGo(want, x, tanh)
			same(fmt.Sprintf("geluIn tanh=%v", tanh), n, got, want)
		}
		got, want := make([]float32, n), make([]float32, n)
		geluOut(got, x, u)
		geluOutGo(want, x, u)
		same("geluOut", n, got, want)
	}
}

// TestArithLoops checks the float32 vector loops of Add, Sub, Mul and Div
// (vector by vector, vector by scalar, scalar by vector) against the Go
// loops bit for bit on every length up to 40; a NaN must be a NaN, its
// payload being Go's choice (the compiler may swap a sum's operands).
func TestArithLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	nan1, nan2 := math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002)
	special := []float32{nan1, nan2, float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, 3e38}
	same := func(name string, n int, got, want []float32) {
		t.Helper()
		for i := range want {
			if g, w := got[i], want[i]; math.Float32bits(g) != math.Float32bits(w) && (g == g || w == w) {
				t.Fatalf("%s, length %d: element %d = %g (%#x), want %g (%#x)", name, n, i, g, math.Float32bits(g), w, math.Float32bits(w))
			}
		}
	}
	for n := range 41 {
		a, b := nnRandom(r, n), nnRandom(r, n)
		for i := range n / 3 {
			a[r.IntN(n)], b[r.IntN(n)] = special[i%len(special)], special[(i+5)%len(special)]
		}
		for op := ewAdd; op <= ewDiv; op++ {
			for _, s := range []float32{0.7, nan2, 0} {
				got, want := make([]float32, n), make([]float32, n)
				ewArithVV(op, got, a, b)
				ewArithVVGo(op, want, a, b)
				same(fmt.Sprintf("op %d, vector by vector", op), n, got, want)
				ewArithVS(op, got, a, s)
				ewArithVSGo(op, want, a, s)
				same(fmt.Sprintf("op %d, vector by %g", op, s), n, got, want)
				ewArithSV(op, got, s, b)
				ewArithSVGo(op, want, s, b)
				same(fmt.Sprintf("op %d, %g by vector", op, s), n, got, want)
			}
		}
	}
}

// TestCopyRows checks copyRows against its Go loop for the panel widths of
// the micro-kernels (16, 32) and others, on strides wider than the runs,
// and that nothing past the runs is written.
func TestCopyRows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, width := range []int{1, 4, 15, 16, 17, 32, 33} {
		for _, rows := range []int{0, 1, 2, 7} {
			ld := width + r.IntN(9)
			src := nnRandom(r, rows*ld+width)
			got, want := make([]float32, rows*width+3), make([]float32, rows*width+3)
			for i := range got {
				got[i], want[i] = -7, -7
			}
			copyRows(got, src, ld, rows, width)
			copyRowsGo(want[:rows*width], src, ld, rows, width)
			if !slices.Equal(got, want) {
				t.Fatalf("width %d, %d rows, ld %d: got %v, want %v", width, rows, ld, got, want)
			}
		}
	}
}

// TestPackTranspose8 checks nnPackTranspose's eight-row vector path
// (nnPack8: 8×8 blocks transposed in registers, the last steps in Go)
// against the element-by-element definition, dst[p·8+r] = src[r·lds+p],
// for every kc to 40 and row strides kc to kc+9, bit for bit; and that
// eight rows scaled by alpha ≠ 1, or four, still pack as defined.
func TestPackTranspose8(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for kc := 0; kc <= 40; kc++ {
		for lds := max(kc, 1); lds <= kc+9; lds++ {
			for _, c := range []struct {
				rows  int
				alpha float32
			}{{8, 1}, {8, 0.5}, {4, 1}} {
				src := nnRandom(r, c.rows*lds)
				dst := make([]float32, 8*kc+1)
				dst[8*kc] = 7 // past the panel: untouched
				nnPackTranspose(c.rows, kc, c.alpha, src, lds, dst, 8)
				for p := range kc {
					for row := range c.rows {
						if want := c.alpha * src[row*lds+p]; dst[p*8+row] != want {
							t.Fatalf("rows %d alpha %v kc %d lds %d: dst[%d·8+%d] = %v, want %v", c.rows, c.alpha, kc, lds, p, row, dst[p*8+row], want)
						}
					}
				}
				if dst[8*kc] != 7 {
					t.Fatalf("kc %d: wrote past the panel", kc)
				}
			}
		}
	}
}

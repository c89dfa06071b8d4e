//go:build amd64 && !noasm

package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestMaxPoolRowLoops checks the pools' row loops (as maxRows and cols
// choose them, and each vector level this CPU runs) against the maximum,
// or the sum in order, taken element by element, bit for bit: maxRows over 1 to 4
// rows and cols over kernels 1 to 7 at strides 1 and 2, every length to
// 40 (the masked tails of both widths), on values with NaN, ±Inf and
// signed zeros. The maximum skips a NaN; the sum keeps it.
func TestMaxPoolRowLoops(t *testing.T) {
	type loops struct {
		name string
		rows func(dst, src []float32, rows []int, stride int)
		cols func(out, v []float32, kw, sw int, sum bool)
	}
	levels := []loops{{"chosen", maxRows, cols}}
	if hasVectorMath {
		levels = append(levels, loops{"avx2", maxRowsAVX2, colsAVX2})
	}
	if hasVectorMath && cpu.X86.HasAVX512F {
		levels = append(levels, loops{"avx512", maxRowsAVX512, colsAVX512})
	}
	// The maximum over xs from −Inf, NaN skipped.
	largest := func(xs ...float32) float32 {
		m := float32(math.Inf(-1))
		for _, x := range xs {
			if x > m {
				m = x
			}
		}
		return m
	}
	r := rand.New(rand.NewPCG(31, 32))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	value := func() float32 {
		if r.IntN(8) == 0 {
			return specials[r.IntN(len(specials))]
		}
		return r.Float32()*2 - 1
	}
	for _, l := range levels {
		for n := 0; n <= 40; n++ {
			// maxRows: rows of stride n+3 in a source of 6 rows.
			stride := n + 3
			src := make([]float32, 6*stride)
			for i := range src {
				src[i] = value()
			}
			for k := 1; k <= 4; k++ {
				rows := r.Perm(6)[:k]
				got, want := make([]float32, n+1), make([]float32, n+1)
				got[n], want[n] = 7, 7 // past the end: untouched
				if n > 0 {
					l.rows(got[:n], src, rows, stride)
				}
				for i := range n {
					var xs []float32
					for _, row := range rows {
						xs = append(xs, src[row*stride+i])
					}
					want[i] = largest(xs...)
				}
				for i := range got {
					if !same(got[i], want[i]) {
						t.Fatalf("%s maxRows n %d rows %v: element %d = %v, want %v", l.name, n, rows, i, got[i], want[i])
					}
				}
			}
			// maxCols.
			for sw := 1; sw <= 2; sw++ {
				for kw := 1; kw <= 7; kw++ {
					v := make([]float32, maxColsLen(n, kw, sw))
					for i := range v {
						v[i] = value()
					}
					for _, sum := range []bool{false, true} {
						got, want := make([]float32, n+1), make([]float32, n+1)
						got[n], want[n] = 7, 7
						if n > 0 {
							l.cols(got[:n], v, kw, sw, sum)
						}
						for o := range n {
							if !sum {
								want[o] = largest(v[o*sw : o*sw+kw]...)
								continue
							}
							for _, x := range v[o*sw : o*sw+kw] {
								want[o] += x // in order, from 0
							}
						}
						for i := range got {
							if !same(got[i], want[i]) {
								t.Fatalf("%s cols sum %v n %d kw %d sw %d: element %d = %v, want %v", l.name, sum, n, kw, sw, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestAddRows checks addRows' loops (as addRows chooses them, and each
// vector level this CPU runs) against the sum element by element, bit for
// bit: 1 to 3 rows of every width to 40 (the masked tails of both
// widths), rows further apart than their width in both operands, NaN and
// ±Inf among the values; nothing between or past the rows is written.
func TestAddRows(t *testing.T) {
	levels := []struct {
		name string
		f    func(y []float32, ldy int, x []float32, ldx, rows, n int)
	}{{"chosen", addRows}, {"go", addRowsGo}}
	if hasVectorMath {
		levels = append(levels, struct {
			name string
			f    func(y []float32, ldy int, x []float32, ldx, rows, n int)
		}{"avx2", addRowsAVX2})
	}
	if hasVectorMath && cpu.X86.HasAVX512F {
		levels = append(levels, struct {
			name string
			f    func(y []float32, ldy int, x []float32, ldx, rows, n int)
		}{"avx512", addRowsAVX512})
	}
	r := rand.New(rand.NewPCG(31, 32))
	guard := float32(math.Float32frombits(0x7fc0beef))
	for _, lv := range levels {
		for rows := 1; rows <= 3; rows++ {
			for n := 1; n <= 40; n++ {
				ldy, ldx := n+r.IntN(5), n+r.IntN(5)
				x := nnRandom(r, (rows-1)*ldx+n)
				y0 := nnRandom(r, (rows-1)*ldy+n)
				x[r.IntN(len(x))] = float32(math.Inf(1))
				y0[r.IntN(len(y0))] = float32(math.NaN())
				y := append(slices.Clone(y0), guard, guard)
				want := slices.Clone(y)
				for j := range rows {
					for i := range n {
						want[j*ldy+i] = y0[j*ldy+i] + x[j*ldx+i]
					}
				}
				lv.f(y[:len(y0)], ldy, x, ldx, rows, n)
				for i := range want {
					if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: %d rows of %d, ldy %d, ldx %d: y[%d] = %g, want %g", lv.name, rows, n, ldy, ldx, i, y[i], want[i])
					}
				}
			}
		}
	}
}

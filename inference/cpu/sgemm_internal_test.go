package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

// nnNaiveGemm is the reference: C = alpha·op(A)·op(B) + beta·C, summed in
// float64.
func nnNaiveGemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			old := float64(0)
			if beta != 0 {
				old = float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(float64(alpha)*s + old)
		}
	}
}

func nnRandom(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return x
}

// TestSgemm compares nnSgemm, with each micro-kernel this CPU runs, with
// the float64 triple loop. Inputs lie in
// [-1, 1), so each product term is at most 1 in magnitude and float32
// summation of k terms errs by at most about k·2⁻²⁴ per unit of term size;
// the bound used is |got - want| ≤ 1e-5·(1 + k/16) + 1e-4·|want| (rtol 1e-4,
// atol 1e-5 scaled for long k).
func TestSgemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type shape struct{ m, n, k int }
	shapes := []shape{
		{0, 0, 0}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0}, {1, 1, 1}, {1, 7, 1}, {7, 1, 9},
		{1, 1, 300}, {2, 4, 4}, {3, 5, 7}, {5, 3, 17}, {17, 19, 23}, {16, 16, 16},
		{33, 65, 129}, {64, 64, 64}, {130, 7, 300}, {7, 1030, 13}, {129, 131, 257},
		{200, 150, 520}, {64, 700, 75},
		// Split by rows with A transposed and shorter than it is wide (a
		// ConvTranspose's Wᵀ·X): a row split must not index A as if it
		// were not transposed.
		{576, 64, 128}, {300, 40, 8},
		// One to three rows: the row kernels, with edge panels.
		{1, 700, 300}, {2, 130, 257}, {3, 33, 1000}, {1, 1030, 40},
	}
	for range 8 {
		shapes = append(shapes, shape{1 + r.IntN(90), 1 + r.IntN(90), 1 + r.IntN(300)})
	}
	params := []struct{ alpha, beta float32 }{{1, 0}, {0.5, 1}, {-2, 0.25}, {0, 3}}
	for _, kern := range nnKernels() {
		for _, s := range shapes {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					for _, p := range params {
						name := fmt.Sprintf("%s_m%d_n%d_k%d_ta%v_tb%v_a%g_b%g", kern.name, s.m, s.n, s.k, ta, tb, p.alpha, p.beta)
						// Leading dimensions wider than the matrices, to catch
						// stride mistakes.
						lda, ldb, ldc := s.k+3, s.n+1, s.n+2
						rowsA, rowsB := s.m, s.k
						if ta {
							lda, rowsA = s.m+1, s.k
						}
						if tb {
							ldb, rowsB = s.k+2, s.n
						}
						a := nnRandom(r, rowsA*lda)
						b := nnRandom(r, rowsB*ldb)
						c0 := nnRandom(r, s.m*ldc)
						want := append([]float32(nil), c0...)
						nnNaiveGemm(ta, tb, s.m, s.n, s.k, p.alpha, a, lda, b, ldb, p.beta, want, ldc)
						prod := make([]float32, s.m*ldc) // alpha·op(A)·op(B) alone
						nnNaiveGemm(ta, tb, s.m, s.n, s.k, p.alpha, a, lda, b, ldb, 0, prod, ldc)
						atol := 1e-5 * (1 + float64(s.k)/16) * math.Max(1, math.Abs(float64(p.alpha)))
						// Unpacked, then with A, B and both packed
						// beforehand, then with B packed by a function
						// (alone and with A packed), on three threads so
						// that splits start sub-products inside the packed
						// operands.
						for mode := range 6 {
							var pre nnPrepacked
							if mode&1 != 0 {
								pre.a = nnPackWholeA(kern, ta, s.m, s.k, a, lda)
							}
							if mode&2 != 0 {
								pre.b = nnPackWholeB(kern, tb, s.k, s.n, b, ldb)
							}
							if mode >= 4 {
								pre.packB = nnPackerFunc(func(nr, kc, nc, p0, j0 int, dst []float32) {
									if j0+nc > s.n || p0+kc > s.k {
										t.Errorf("%s: packB of rows %d+%d, columns %d+%d", name, p0, kc, j0, nc)
										return
									}
									nnPackB(tb, nr, kc, nc, b, ldb, p0, j0, dst)
								})
							}
							c := append([]float32(nil), c0...)
							nnSgemmPacked(kern, 3, pre, nnBlocks{}, ta, tb, s.m, s.n, s.k, p.alpha, a, lda, b, ldb, p.beta, c, ldc)
							for i := range c {
								if d := math.Abs(float64(c[i] - want[i])); d > atol+1e-4*math.Abs(float64(want[i])) {
									t.Fatalf("%s, packed %d: element %d (row %d, col %d) = %g, want %g", name, mode, i, i/ldc, i%ldc, c[i], want[i])
								}
							}
							// With a head (in three of the modes, to
							// keep the test short): each block starts
							// from h(i, j), set over NaN (C is not
							// read), and beta no longer counts.
							if mode == 0 || mode == 3 || mode == 5 {
								nnCheckHead(t, name, mode, kern, pre, ta, tb, s.m, s.n, s.k, p.alpha, p.beta, a, lda, b, ldb, c0, prod, ldc, atol)
							}
							// With a tail: y = 3y − 1 on each element once,
							// after its last step (a tail run early, or
							// twice, gives another value).
							ct := append([]float32(nil), c0...)
							tail, calls := nnTestTail(t, name, ct, ldc, s.m, s.n)
							nnSgemmPacked(kern, 3, pre, nnBlocks{tail: tail}, ta, tb, s.m, s.n, s.k, p.alpha, a, lda, b, ldb, p.beta, ct, ldc)
							for i := range ct {
								w, row, col := want[i], i/ldc, i%ldc
								if row < s.m && col < s.n {
									w = 3*w - 1
									if calls[row*s.n+col] != 1 {
										t.Fatalf("%s, packed %d, tail: element (%d, %d) finished %d times, want once", name, mode, row, col, calls[row*s.n+col])
									}
								}
								if d := math.Abs(float64(ct[i] - w)); d > 3*atol+1e-4*math.Abs(float64(w)) {
									t.Fatalf("%s, packed %d, tail: element %d (row %d, col %d) = %g, want %g", name, mode, i, row, col, ct[i], w)
								}
							}
						}
					}
				}
			}
		}
	}
}

// nnCheckHead runs the product with a head that sets each element (i, j)
// of C to h(i, j) over NaN, and checks C = prod + h, prod being
// alpha·op(A)·op(B).
func nnCheckHead(t *testing.T, name string, mode int, kern nnKernel, pre nnPrepacked, ta, tb bool, m, n, k int, alpha, beta float32, a []float32, lda int, b []float32, ldb int, c0, prod []float32, ldc int, atol float64) {
	t.Helper()
	h := func(i, j int) float32 { return 0.25*float32(i%5) - 0.5*float32(j%3) }
	wantH := append([]float32(nil), c0...)
	ch := append([]float32(nil), c0...)
	for i := range m {
		for j := range n {
			wantH[i*ldc+j] = prod[i*ldc+j] + h(i, j)
			ch[i*ldc+j] = float32(math.NaN())
		}
	}
	head := func(blk []float32, ld, i, j, rows, cols int) {
		for r := range rows {
			for q := range cols {
				blk[r*ld+q] = h(i+r, j+q)
			}
		}
	}
	nnSgemmPacked(kern, 3, pre, nnBlocks{head: nnTailFunc(head)}, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ch, ldc)
	for i := range ch {
		if d := math.Abs(float64(ch[i] - wantH[i])); !(d <= atol+1e-4*math.Abs(float64(wantH[i]))) {
			t.Fatalf("%s, packed %d, head: element %d (row %d, col %d) = %g, want %g", name, mode, i, i/ldc, i%ldc, ch[i], wantH[i])
		}
	}
	// A head of one value per row (a bias), which the micro-kernel adds as
	// it stores the first block of steps (nnStarter), the same over NaN.
	rows := make([]float32, m)
	for i := range m {
		rows[i] = 0.25*float32(i%5) - 1
		for j := range n {
			wantH[i*ldc+j] = prod[i*ldc+j] + rows[i]
			ch[i*ldc+j] = float32(math.NaN())
		}
	}
	nnSgemmPacked(kern, 3, pre, nnBlocks{head: &cvRowBias{b: rows}}, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ch, ldc)
	for i := range ch {
		if d := math.Abs(float64(ch[i] - wantH[i])); !(d <= atol+1e-4*math.Abs(float64(wantH[i]))) {
			t.Fatalf("%s, packed %d, row head: element %d (row %d, col %d) = %g, want %g", name, mode, i, i/ldc, i%ldc, ch[i], wantH[i])
		}
	}
}

// nnTestTail returns a tail for a product into c (m×n, rows ldc apart)
// that sets each element y it finishes to 3y − 1 and counts the calls for
// it in calls (m·n, row-major), checking that each block's slice starts
// at its element of c.
func nnTestTail(t *testing.T, name string, c []float32, ldc, m, n int) (nnTail, []int32) {
	calls := make([]int32, m*n)
	return nnTailFunc(func(blk []float32, ld, i, j, rows, cols int) {
		if ld != ldc || i < 0 || j < 0 || i+rows > m || j+cols > n {
			t.Errorf("%s: tail on rows %d+%d, columns %d+%d, ld %d of a %d×%d product, ld %d", name, i, rows, j, cols, ld, m, n, ldc)
			return
		}
		for r := range rows {
			for q := range cols {
				at := (i+r)*ldc + j + q
				if &blk[r*ld+q] != &c[at] {
					t.Errorf("%s: tail's block at (%d, %d) is not c's element %d", name, i, j, at)
					return
				}
				c[at] = 3*c[at] - 1
				calls[(i+r)*n+j+q]++
			}
		}
	}), calls
}

// TestSgemmBetaZero checks that beta = 0 overwrites C without reading
// it, as BLAS does: NaNs already in C must not reach the result.
func TestSgemmBetaZero(t *testing.T) {
	for _, size := range []int{3, 100} {
		a := make([]float32, size*size)
		for i := range a {
			a[i] = 1
		}
		c := make([]float32, size*size)
		for i := range c {
			c[i] = float32(math.NaN())
		}
		nnSgemm(false, false, size, size, size, 1, a, size, a, size, 0, c, size)
		for i, v := range c {
			if v != float32(size) {
				t.Fatalf("size %d: C[%d] = %g, want %d", size, i, v, size)
			}
		}
	}
}

// TestSgemmMicroKernels checks each micro-kernel against the plain-Go
// nnMicroKernel on random panels: the kernel's mr×nr tile is cut into 2×4
// tiles, each computed by nnMicroKernel from repacked panels. Both sum over
// p in order, but assembly kernels fuse multiply and add, so results agree
// to about kc roundings: |got - want| ≤ 1e-6·(1 + kc). C lies inside a
// larger buffer with rows ldc > nr apart; elements outside the tile must
// not change. Each kernel adds to the tile, and, given start values, sets
// the tile to the product plus its row's start without reading it (C then
// holds NaNs before, which a read would carry). B's rows are read through
// the offsets the kernel is given: a packed panel's, and rows scattered
// over a larger buffer, unaligned and out of order, as a convolution
// reads them from its image (cvDirect).
func TestSgemmMicroKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kern := range nnKernels() {
		mr, nr := kern.mr, kern.nr
		if mr%nnMR != 0 || nr%nnNR != 0 || nnNC%nr != 0 || mr > nnMC || mr*nr > nnMaxTile {
			t.Fatalf("%s: tile %d×%d breaks the nnKernel rules", kern.name, mr, nr)
		}
		// The kernel, and its half (nr/2 columns of the same B rows)
		// where it has one.
		type tile struct {
			name   string
			kernel func(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
			width  int
		}
		tiles := []tile{{kern.name, kern.kernel, nr}}
		if kern.half != nil {
			tiles = append(tiles, tile{kern.name + " half", kern.half, nr / 2})
		}
		for _, tl := range tiles {
			for _, mode := range []string{"add", "set", "scattered"} {
				set := mode == "set"
				for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 17, 64, 255, 256} {
					ap, bp := nnRandom(r, mr*kc), nnRandom(r, nr*kc)
					b, off := bp, nnPanelOffsets(nr, kc)
					if mode == "scattered" {
						// Row p at a random place in a buffer three times
						// as large, rows in any order and overlapping.
						b = nnRandom(r, 3*nr*kc+nr)
						off = make([]int32, kc)
						for p := range off {
							off[p] = int32(r.IntN(3*nr*kc + 1))
							copy(b[off[p]:off[p]+int32(nr)], bp[p*nr:])
						}
						// Overlapping rows: write them again in order, last wins,
						// and read back what each row holds now.
						for p := range off {
							copy(bp[p*nr:(p+1)*nr], b[off[p]:])
						}
					}
					ldc := nr + 5
					buf := nnRandom(r, 3+mr*ldc+3)
					var start []float32
					if set {
						start = nnRandom(r, mr)
						for i := range mr {
							for j := range tl.width {
								buf[3+i*ldc+j] = float32(math.NaN())
							}
						}
					}
					want := append([]float32(nil), buf...)
					tl.kernel(kc, ap, b, off, buf[3:3+(mr-1)*ldc+tl.width], ldc, start)

					ap2, bp4 := make([]float32, nnMR*kc), make([]float32, nnNR*kc)
					for i := 0; i < mr; i += nnMR {
						for j := 0; j < tl.width; j += nnNR {
							for p := range kc {
								copy(ap2[p*nnMR:(p+1)*nnMR], ap[p*mr+i:])
								copy(bp4[p*nnNR:(p+1)*nnNR], bp[p*nr+j:])
							}
							var st []float32
							if set {
								st = start[i : i+nnMR]
							}
							nnMicroKernel(kc, ap2, bp4, nnPanelOffsets(nnNR, kc), want[3+i*ldc+j:], ldc, st)
						}
					}
					for e := range buf {
						if d := math.Abs(float64(buf[e] - want[e])); !(d <= 1e-6*float64(1+kc)) {
							t.Fatalf("%s kc=%d, %s: buffer element %d (tile row %d, col %d) = %g, want %g", tl.name, kc, mode, e, (e-3)/ldc, (e-3)%ldc, buf[e], want[e])
						}
					}
				}
			}
		}
	}
}

// nnSgemmSizes are m, n, k: squares, then the products of ResNet's first
// and last 3×3 convolutions (64 channels on 56×56, 512 on 7×7).
var nnSgemmSizes = [][3]int{{64, 64, 64}, {256, 256, 256}, {512, 512, 512}, {64, 3136, 576}, {512, 49, 4608}}

func nnSgemmBench(b *testing.B, gemm func(m, n, k int, a, bm, c []float32)) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range nnSgemmSizes {
		m, n, k := s[0], s[1], s[2]
		a, bm, c := nnRandom(r, m*k), nnRandom(r, k*n), make([]float32, m*n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			for b.Loop() {
				gemm(m, n, k, a, bm, c)
			}
			b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSgemmOurs and BenchmarkSgemmGonum time C = A·B (m×k by k×n) with
// nnSgemm and with gonum's blas32 (pure Go plus its SSE assembly kernels).
func BenchmarkSgemmOurs(b *testing.B) {
	nnSgemmBench(b, func(m, n, k int, a, bm, c []float32) {
		nnSgemm(false, false, m, n, k, 1, a, k, bm, n, 0, c, n)
	})
}

// BenchmarkSgemmKernels times nnSgemm as BenchmarkSgemmOurs does, once
// with each micro-kernel this CPU runs.
func BenchmarkSgemmKernels(b *testing.B) {
	for _, kern := range nnKernels() {
		b.Run(kern.name, func(b *testing.B) {
			nnSgemmBench(b, func(m, n, k int, a, bm, c []float32) {
				nnSgemmWith(kern, runtime.GOMAXPROCS(0), false, false, m, n, k, 1, a, k, bm, n, 0, c, n)
			})
		})
	}
}

func BenchmarkSgemmGonum(b *testing.B) {
	blas32.Use(gonum.Implementation{})
	nnSgemmBench(b, func(m, n, k int, a, bm, c []float32) {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas32.General{Rows: m, Cols: k, Stride: k, Data: a},
			blas32.General{Rows: k, Cols: n, Stride: n, Data: bm},
			0, blas32.General{Rows: m, Cols: n, Stride: n, Data: c})
	})
}

package cpu

import (
	"fmt"
	"runtime"
)

// Single-precision matrix multiply (SGEMM), after the GotoBLAS scheme: a
// kc×nc block of op(B) is packed into column panels nr wide (kept in L2), an
// mc×kc block of op(A), scaled by alpha, into row panels mr tall (kept in
// L1/L2), and a micro-kernel accumulates each mr×nr tile of C in registers
// over kc steps. The tile shape mr×nr is the micro-kernel's (nnKernel): the
// packing follows the kernel in use. The micro-kernels read B's rows
// through a table of offsets, so that a product whose B rows lie in memory
// already, a convolution's image shifted by each tap, reads them there
// without packing (nnPrepacked.rowsB).
//
// Block sizes, in float32 elements: a packed A block is at most nnMC·nnKC·4
// bytes = 128 KiB, a packed B block nnKC·nnNC·4 bytes = 1 MiB, and one B
// panel nnKC·nr·4 bytes: 4 KiB for the Go kernel's nr = 4, 32 KiB for the
// AVX-512 kernel's nr = 32. With the AVX-512 kernel, nnKC of 128, 192, 384
// and 512 and nnNC of 2048 and 4096 all measured within noise of these.
//
// The plain-Go micro-kernel, nnMicroKernel, is scalar, and amd64 gives Go 15
// float registers: a 2×4 tile (8 sums, 2 A and 4 B values) with the k loop
// unrolled four times measured fastest, ahead of 4×4 and 3×4 tiles, whose
// sums spill to the stack. Assembly kernels with SIMD (sgemm_amd64.s) take
// its place where the CPU has them.
const (
	nnMR = 2
	nnNR = 4
	nnKC = 256
	nnMC = 128
	nnNC = 1024
	// nnShortK is the longest k of a product whose blocks run a row of
	// tiles at a time (nnSgemmAdd): where C's traffic outweighs A's and
	// B's.
	nnShortK = 64
)

// nnMaxTile bounds mr·nr over all micro-kernels: the size of the scratch
// tile for edge tiles.
const nnMaxTile = 8 * 32

// nnKernel is a micro-kernel and the tile it computes. kernel adds the mr×nr
// product of a packed A panel ap (mr values per k step) and kc rows of B to
// the tile of C at c, whose rows are ldc apart; given start (not nil), it
// sets row i of the tile to the product plus start[i] instead, without
// reading C (a bias, or zeros, at the first block of steps: no pass over C
// to fill it before). Step p reads B's nr values at b[off[p]:]: a packed
// panel's rows follow one another (off[p] = p·nr, nnPanelOffsets), and a
// convolution reads its rows where they lie in the image (cvInPlace). It
// requires len(ap) ≥ mr·kc, len(off) ≥ kc, off[p]+nr ≤ len(b),
// len(c) ≥ (mr-1)·ldc+nr and len(start) ≥ mr when start is not nil;
// assembly kernels do not check. nnNC must be a multiple of nr, mr ≤ nnMC
// and mr·nr ≤ nnMaxTile.
//
// row, where the kernel has one, multiplies one row of A, unpacked, by a
// packed B panel: c[j] += Σ_p a[p]·bp[p·nr+j] for j < nr, p < kc. Products
// of fewer than nnRowMax rows use it instead of mr-row tiles that would be
// mostly zeros (a batch of one through a Gemm, a recurrent step).
//
// half, where the kernel has one, is kernel's contract for an mr×nr/2
// tile: the first nr/2 of each B row's values, nr/2 columns of C. A
// panel of at most nr/2 columns (a product's last) takes it, rather than
// a tile whose columns are half zeros.
//
// tall, where the kernel has one, is a convolution's product turned on
// its side (cvTall): an mr×nr tile of output positions by output
// channels (nnTallFunc).
type nnKernel struct {
	name   string
	mr, nr int
	kernel func(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
	row    func(kc int, a, bp []float32, c []float32)
	half   func(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32)
	tall   nnTallFunc
}

// nnPanelOffsets returns the offsets of a packed panel's kc rows, nr
// floats each: off[p] = p·nr.
func nnPanelOffsets(nr, kc int) []int32 {
	var t []int32
	switch nr {
	case 32:
		t = nnPanelRows32[:]
	case 16:
		t = nnPanelRows16[:]
	case nnNR:
		t = nnPanelRowsGo[:]
	default:
		panic("nnPanelOffsets: no table for this panel width")
	}
	return t[:kc]
}

// The panel row offsets for the kernels' widths, made once.
var nnPanelRows32, nnPanelRows16, nnPanelRowsGo = panelRows(32), panelRows(16), panelRows(nnNR)

func panelRows(nr int) (t [nnKC]int32) {
	for p := range t {
		t[p] = int32(p * nr)
	}
	return t
}

// nnRowMax is the number of rows from which products use mr-row tiles
// rather than row kernels.
const nnRowMax = 4

// nnGoKernel is the plain-Go micro-kernel, available everywhere, and the
// reference the assembly kernels are tested against.
var nnGoKernel = nnKernel{"go2x4", nnMR, nnNR, nnMicroKernel, nil, nil, nil}

// nnBestKernel is the micro-kernel nnSgemm uses: the first of nnKernels,
// the fastest this CPU runs. It is set once, at package initialisation.
var nnBestKernel = nnKernels()[0]

// nnSgemmSerialFlops is the work (2·m·n·k) below which nnSgemm stays on the
// calling goroutine; nnSgemmTaskFlops is the least work it gives one
// goroutine.
const (
	nnSgemmSerialFlops = 1 << 18
	nnSgemmTaskFlops   = 1 << 17
)

// nnSgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices.
// op(A) is m×k: A stored m×k with row stride lda, or when transA the
// transpose of A stored k×m. op(B) is k×n: B stored k×n with row stride ldb,
// or when transB the transpose of B stored n×k. C is m×n with row stride
// ldc. As in BLAS, beta = 0 sets C without reading it, so NaNs in C do not
// survive. The slices must hold the elements the strides address; C must not
// overlap A or B. Work of 2·m·n·k ≥ nnSgemmSerialFlops is split across
// runtime.GOMAXPROCS goroutines.
func nnSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	nnSgemmThreads(runtime.GOMAXPROCS(0), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnSgemmThreads is nnSgemm on at most threads goroutines; callers that
// already run products side by side pass 1.
func nnSgemmThreads(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	nnSgemmWith(nnBestKernel, threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnSgemmPre is nnSgemmThreads with operands packed beforehand and
// functions applied to C's blocks (see nnSgemmPacked).
func nnSgemmPre(threads int, pre nnPrepacked, blk nnBlocks, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	nnSgemmPacked(nnBestKernel, threads, pre, blk, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnTail is applied to a block of C: once on each block of the rows×cols
// elements at row i, column j of the whole product, c starting at that
// element with rows ldc apart, while the block is in cache. Blocks do not
// overlap and together cover C; calls for different blocks may run at
// once on different goroutines. It is an interface rather than a function
// so that a kernel can hand the product a tail it keeps in its plan
// (opsem.Plan): a closure over the run's operands would be allocated on
// every call.
type nnTail interface {
	finish(c []float32, ldc, i, j, rows, cols int)
}

// nnTailFunc is a function as an nnTail.
type nnTailFunc func(c []float32, ldc, i, j, rows, cols int)

func (f nnTailFunc) finish(c []float32, ldc, i, j, rows, cols int) { f(c, ldc, i, j, rows, cols) }

// nnBlocks are what a product does to each block of C besides adding to
// it, either nil: head sets the block's starting value before the first
// steps of k are added (a bias; C is then neither scaled by beta nor
// read), tail finishes the block once its product is complete (an
// epilogue: bias, residual, activation).
type nnBlocks struct{ head, tail nnTail }

// nnStarter is a head that sets every element of row i of C to one value,
// starts(i, rows) holding those of rows i…i+rows−1 (ok false when it has
// none for them): the micro-kernel then adds it as it stores its tile at
// the first block of steps, in place of a pass of the head over C before.
type nnStarter interface {
	starts(i, rows int) (start []float32, ok bool)
}

// nnZeros are the starting values of nnClearBlock's rows.
var nnZeros = make([]float32, nnMC)

// nnClearBlock is the head of a product with beta 0: each block starts at
// zero as the product reaches it, in cache, rather than all of C cleared
// in a pass before.
var nnClearBlock nnTail = nnZeroHead{}

// nnZeroHead is nnClearBlock's type.
type nnZeroHead struct{}

func (nnZeroHead) starts(_, rows int) ([]float32, bool) {
	if rows > len(nnZeros) {
		return nil, false
	}
	return nnZeros[:rows], true
}

func (nnZeroHead) finish(c []float32, ldc, _, _, rows, cols int) {
	for r := range rows {
		clear(c[r*ldc : r*ldc+cols])
	}
}

// nnSgemmWith is nnSgemmThreads with the micro-kernel kern.
func nnSgemmWith(kern nnKernel, threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	nnSgemmPacked(kern, threads, nnPrepacked{}, nnBlocks{}, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// nnSgemmPacked is nnSgemmWith reading op(A) or op(B) from pre where it
// holds them packed for kern (weights, packed once at compile time): the
// product then packs only the other operand. With op(A) packed the work is
// split by columns, so that no worker packs what another packs too. blk's
// head, when not nil, sets each block of C before the product adds to it,
// in place of beta; its tail finishes each block once complete.
func nnSgemmPacked(kern nnKernel, threads int, pre nnPrepacked, blk nnBlocks, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	pre = pre.usable(kern, alpha, m, n, k)
	if m == 0 || n == 0 {
		return
	}
	switch {
	case blk.head != nil:
	case beta == 0:
		blk.head = nnClearBlock
	default:
		nnScale(m, n, beta, c, ldc)
	}
	if k == 0 || alpha == 0 {
		blk.whole(c, ldc, pre, m, n)
		return
	}
	workers := 1
	if flops := 2 * m * n * k; flops >= nnSgemmSerialFlops {
		workers = min(threads, flops/nnSgemmTaskFlops)
	}
	if workers <= 1 {
		nnSgemmAdd(kern, pre, blk, transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	// Split M or N into independent sub-products, in whole micro-tiles;
	// each worker packs its own blocks. With one operand packed already,
	// the split runs along it, so that no worker packs what another packs
	// too, unless it has too few tiles to share among the workers (a
	// batch of one through a Gemm, a 7×7 convolution's 49 columns); then
	// each worker packs the other operand's block.
	tilesM, tilesN := (m+kern.mr-1)/kern.mr, (n+kern.nr-1)/kern.nr
	splitM := m >= n
	switch {
	case pre.a != nil && pre.b == nil:
		splitM = tilesN < 2*workers && tilesM > tilesN
	case pre.b != nil && pre.a == nil:
		splitM = tilesM >= 2*workers || tilesM >= tilesN
	}
	j := nnSplits.get()
	*j = nnSplit{kern: kern, pre: pre, blk: blk, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc, rows: j.rows, cols: j.cols}
	tiles, run := tilesN, j.cols
	if splitM {
		tiles, run = tilesM, j.rows
	}
	parallelSplit(tiles, min(workers, tiles), run)
	*j = nnSplit{rows: j.rows, cols: j.cols} // drop the operands
	nnSplits.put(j)
}

// nnSplit is a product split among workers by rows or columns of
// micro-tiles, each chunk an nnSgemmAdd of its own. It is pooled, with
// its two loops bound once, so that a split allocates nothing: closures
// over the operands would be allocated on every product.
type nnSplit struct {
	kern           nnKernel
	pre            nnPrepacked
	blk            nnBlocks
	transA, transB bool
	m, n, k        int
	alpha          float32
	a, b, c        []float32
	lda, ldb, ldc  int
	rows, cols     func(lo, hi int) // byRows, byCols, bound once
}

var nnSplits = freeList[nnSplit]{make: func() *nnSplit {
	j := new(nnSplit)
	j.rows, j.cols = j.byRows, j.byCols
	return j
}}

// byRows runs the sub-product of micro-tile rows lo…hi−1.
func (j *nnSplit) byRows(lo, hi int) {
	i0, rows := lo*j.kern.mr, min(hi*j.kern.mr, j.m)-lo*j.kern.mr
	// Row i of op(A) starts at a[i·lda], or at a[i] when A is transposed;
	// the first is past A's end when A, transposed, is wider than long.
	var as []float32
	if j.transA {
		as = j.a[i0:]
	} else {
		as = j.a[i0*j.lda:]
	}
	sub := j.pre
	sub.i0 += i0
	nnSgemmAdd(j.kern, sub, j.blk, j.transA, j.transB, rows, j.n, j.k, j.alpha, as, j.lda, j.b, j.ldb, j.c[i0*j.ldc:], j.ldc)
}

// byCols runs the sub-product of micro-tile columns lo…hi−1.
func (j *nnSplit) byCols(lo, hi int) {
	j0, cols := lo*j.kern.nr, min(hi*j.kern.nr, j.n)-lo*j.kern.nr
	bs := j.b
	switch {
	case j.pre.packB != nil:
	case j.transB:
		bs = j.b[j0*j.ldb:]
	default:
		bs = j.b[j0:]
	}
	sub := j.pre
	sub.j0 += j0
	nnSgemmAdd(j.kern, sub, j.blk, j.transA, j.transB, j.m, cols, j.k, j.alpha, j.a, j.lda, bs, j.ldb, j.c[j0:], j.ldc)
}

func nnRoundUp(x, unit int) int { return (x + unit - 1) / unit * unit }

// nnScale sets C = beta·C; beta = 0 writes zeros without reading C.
func nnScale(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		scale(row, beta)
	}
}

// nnPackPool recycles packing buffers: nnKC·nnNC floats for B, then
// nnMC·nnKC for A, then the macro-kernel's edge tile (nnMaxTile; on the
// stack it would escape through the micro-kernel, a function value).
var nnPackPool = freeList[[]float32]{make: func() *[]float32 {
	buf := make([]float32, nnKC*nnNC+nnMC*nnKC+nnMaxTile)
	return &buf
}}

// whole applies b's head, then its tail, to all of C: a product with
// nothing to add, done in one block.
func (b nnBlocks) whole(c []float32, ldc int, pre nnPrepacked, m, n int) {
	if b.head != nil {
		b.head.finish(c, ldc, pre.i0, pre.j0, m, n)
	}
	if b.tail != nil {
		b.tail.finish(c, ldc, pre.i0, pre.j0, m, n)
	}
}

// nnSgemmAdd adds alpha·op(A)·op(B) to C on the calling goroutine, blk's
// head (when not nil) setting each block of C before, its tail finishing
// it after; pre holds what is packed already, and places the sub-product
// in the whole one: its rows from pre.i0, its columns from pre.j0.
func nnSgemmAdd(kern nnKernel, pre nnPrepacked, blk nnBlocks, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if pre.rowsB != nil {
		nnCheckRows(pre.rowsB[:k], n, b)
	}
	if m*n*k <= 16*16*16 && pre.packB == nil && pre.rowsB == nil {
		if blk.head != nil {
			blk.head.finish(c, ldc, pre.i0, pre.j0, m, n)
		}
		nnSgemmSmall(transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
		if blk.tail != nil {
			blk.tail.finish(c, ldc, pre.i0, pre.j0, m, n)
		}
		return
	}
	bufp := nnPackPool.get()
	defer nnPackPool.put(bufp)
	bpack := (*bufp)[:nnKC*nnNC]
	apack := (*bufp)[nnKC*nnNC : nnKC*nnNC+nnMC*nnKC]
	edge := (*bufp)[nnKC*nnNC+nnMC*nnKC:]
	// A blocks of whole panels leave edge panels to the last block only.
	mcBlock := nnMC / kern.mr * kern.mr
	rowWise := kern.row != nil && m < nnRowMax && !transA && alpha == 1
	for j0 := 0; j0 < n; j0 += nnNC {
		nc := min(nnNC, n-j0)
		for p0 := 0; p0 < k; p0 += nnKC {
			kc := min(nnKC, k-p0)
			first, last := blk.head != nil && p0 == 0, blk.tail != nil && p0+kc == k
			bp := bpack
			switch {
			case pre.b != nil:
				bp = pre.b.blocks[p0/nnKC][(pre.j0+j0)*kc:]
			case pre.packB != nil:
				pre.packB.packB(kern.nr, kc, nc, p0, pre.j0+j0, bpack)
			case pre.rowsB != nil && rowWise:
				nnPackRows(kern.nr, kc, nc, b[j0:], pre.rowsB[p0:p0+kc], bpack)
			case pre.rowsB != nil:
				// Read in place, but for the panel cut by the block's
				// edge, packed once here for every block of A.
				bp = nil
				if cols := nc % kern.nr; cols > 0 {
					nnPackRows(kern.nr, kc, cols, b[j0+nc-cols:], pre.rowsB[p0:p0+kc], bpack)
				}
			default:
				nnPackB(transB, kern.nr, kc, nc, b, ldb, p0, j0, bpack)
			}
			if rowWise {
				if first {
					blk.head.finish(c[j0:], ldc, pre.i0, pre.j0+j0, m, nc)
				}
				nnRows(kern, m, nc, kc, a[p0:], lda, bp, c[j0:], ldc, edge)
				if last {
					blk.tail.finish(c[j0:], ldc, pre.i0, pre.j0+j0, m, nc)
				}
				continue
			}
			for i0 := 0; i0 < m; i0 += mcBlock {
				mc := min(mcBlock, m-i0)
				ap := apack
				if pre.a != nil {
					ap = pre.a.blocks[p0/nnKC][(pre.i0+i0)*kc:]
				} else {
					nnPackA(transA, kern.mr, mc, kc, alpha, a, lda, i0, p0, apack)
				}
				var start []float32
				if first {
					ok := false
					if s, is := blk.head.(nnStarter); is {
						start, ok = s.starts(pre.i0+i0, mc)
					}
					if !ok {
						start = nil
						blk.head.finish(c[i0*ldc+j0:], ldc, pre.i0+i0, pre.j0+j0, mc, nc)
					}
				}
				// A product of one short k-block writes C at the rate it
				// computes it: a row of tiles at a time, across the
				// block's columns, writes mr rows as a few long runs the
				// prefetchers follow (all of the block's rows, panel by
				// panel, are as many runs as rows), and finishes them
				// while they are in L1.
				step := mc
				if kc == k && kc <= nnShortK {
					step = kern.mr
				}
				for r := 0; r < mc; r += step {
					rows, at := min(step, mc-r), (i0+r)*ldc+j0
					st := start
					if st != nil {
						st = st[r:]
					}
					if bp == nil {
						nnMacroKernelRows(kern, rows, nc, kc, ap[r*kc:], b[j0:], pre.rowsB[p0:p0+kc], c[at:], ldc, edge, st, bpack[:kern.nr*kc])
					} else {
						nnMacroKernel(kern, rows, nc, kc, ap[r*kc:], bp, c[at:], ldc, edge, st)
					}
					if last {
						blk.tail.finish(c[at:], ldc, pre.i0+i0+r, pre.j0+j0, rows, nc)
					}
				}
			}
		}
	}
}

// nnPacked is a whole operand of a product packed once for a micro-kernel:
// op(A) as panels of mr rows, or op(B) as panels of nr columns, for each
// block of nnKC steps. Panels are kc·mr (kc·nr) floats each and follow one
// another, so rows from any multiple of mr (columns from any multiple of
// nr) start at a panel: the layout nnPackA and nnPackB give a block.
type nnPacked struct {
	kern   string
	src    *float32    // the first element of the matrix packed
	rows   int         // of op(A), or columns of op(B)
	k      int         // steps
	blocks [][]float32 // blocks[p0/nnKC]
}

// of returns p when it is the packing of the matrix whose data is x (the
// initializer prepare packed), nil otherwise (or when p is nil): the check
// keeps a kernel from reading a packing for another tensor.
func (p *nnPacked) of(x []float32) *nnPacked {
	if p == nil || p.src == nil || p.src != firstOf(x) {
		return nil
	}
	return p
}

// firstOf is the address of x's first element, nil when it has none.
func firstOf(x []float32) *float32 {
	if len(x) == 0 {
		return nil
	}
	return &x[0]
}

// nnPackWholeA packs op(A), m×k, for kern.
func nnPackWholeA(kern nnKernel, transA bool, m, k int, a []float32, lda int) *nnPacked {
	p := &nnPacked{kern: kern.name, src: firstOf(a), rows: m, k: k}
	for p0 := 0; p0 < k; p0 += nnKC {
		kc := min(nnKC, k-p0)
		blk := make([]float32, nnRoundUp(m, kern.mr)*kc)
		nnPackA(transA, kern.mr, m, kc, 1, a, lda, 0, p0, blk)
		p.blocks = append(p.blocks, blk)
	}
	return p
}

// nnPackWholeB packs op(B), k×n, for kern.
func nnPackWholeB(kern nnKernel, transB bool, k, n int, b []float32, ldb int) *nnPacked {
	p := &nnPacked{kern: kern.name, src: firstOf(b), rows: n, k: k}
	for p0 := 0; p0 < k; p0 += nnKC {
		kc := min(nnKC, k-p0)
		blk := make([]float32, nnRoundUp(n, kern.nr)*kc)
		nnPackB(transB, kern.nr, kc, n, b, ldb, p0, 0, blk)
		p.blocks = append(p.blocks, blk)
	}
	return p
}

// nnPrepacked are a product's operands packed beforehand, or nil: A's
// rows from i0 and B's columns from j0 on. packB, when not nil, packs
// op(B)'s blocks in place of nnPackB, for a B that is not stored as a
// matrix (a convolution's im2col matrix, read from the image); b is then
// not read. rowsB, when not nil, says where op(B)'s rows lie in b: row p's
// n columns start at b[rowsB[p]], and the micro-kernels read them there,
// packing only panels cut by a block's edge (a convolution's image, its
// rows the taps' shifts of it: cvInPlace); then transB is false, ldb is not
// used, and rowsB[p]+n ≤ len(b) for every p.
type nnPrepacked struct {
	a, b   *nnPacked
	i0, j0 int
	packB  nnPackerB
	rowsB  []int32
}

// nnPackerB packs rows p0…p0+kc−1, columns j0…j0+nc−1 of a product's
// op(B) into dst as nnPackB does: panels of nr columns, columns past nc
// zero. Like nnTail, an interface so that kernels hand over one kept in
// their plan.
type nnPackerB interface {
	packB(nr, kc, nc, p0, j0 int, dst []float32)
}

// nnPackerFunc is a function as an nnPackerB.
type nnPackerFunc func(nr, kc, nc, p0, j0 int, dst []float32)

func (f nnPackerFunc) packB(nr, kc, nc, p0, j0 int, dst []float32) { f(nr, kc, nc, p0, j0, dst) }

// usable drops a packed operand that does not fit the product: packed for
// another kernel, of other sizes, or A (packed with alpha 1) under
// another alpha.
func (pre nnPrepacked) usable(kern nnKernel, alpha float32, m, n, k int) nnPrepacked {
	if a := pre.a; a != nil && (a.kern != kern.name || a.k != k || pre.i0+m > a.rows || alpha != 1) {
		pre.a = nil
	}
	if b := pre.b; b != nil && (b.kern != kern.name || b.k != k || pre.j0+n > b.rows || pre.packB != nil) {
		pre.b = nil
	}
	return pre
}

// nnSgemmSmall is the unpacked loop for products too small to amortise
// packing.
func nnSgemmSmall(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		crow := c[i*ldc : i*ldc+n]
		for j := range crow {
			var s float32
			for p := range k {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			crow[j] += alpha * s
		}
	}
}

// nnPackA copies rows i0…i0+mc-1, columns p0…p0+kc-1 of op(A), times alpha,
// into dst as panels of mr rows: panel r holds, for each p, the mr values
// op(A)[i0+r·mr+ii][p0+p] contiguously. Rows past mc are zero.
func nnPackA(transA bool, mr, mc, kc int, alpha float32, a []float32, lda, i0, p0 int, dst []float32) {
	for r := 0; r < mc; r += mr {
		rows := min(mr, mc-r)
		panel := dst[r*kc : r*kc+mr*kc]
		if rows < mr {
			clear(panel)
		}
		if transA {
			for p := range kc {
				src := a[(p0+p)*lda+i0+r : (p0+p)*lda+i0+r+rows]
				out := panel[p*mr : p*mr+rows]
				for ii, v := range src {
					out[ii] = alpha * v
				}
			}
			continue
		}
		nnPackTranspose(rows, kc, alpha, a[(i0+r)*lda+p0:], lda, panel, mr)
	}
}

// nnPackB copies rows p0…p0+kc-1, columns j0…j0+nc-1 of op(B) into dst as
// panels of nr columns: panel s holds, for each p, the nr values
// op(B)[p0+p][j0+s·nr+jj] contiguously. Columns past nc are zero.
func nnPackB(transB bool, nr, kc, nc int, b []float32, ldb, p0, j0 int, dst []float32) {
	for s := 0; s < nc; s += nr {
		cols := min(nr, nc-s)
		panel := dst[s*kc : s*kc+nr*kc]
		if cols < nr {
			clear(panel)
		}
		if transB {
			nnPackTranspose(cols, kc, 1, b[(j0+s)*ldb+p0:], ldb, panel, nr)
			continue
		}
		if cols == nr {
			copyRows(panel, b[p0*ldb+j0+s:], ldb, kc, nr)
			continue
		}
		for p := range kc {
			copy(panel[p*nr:p*nr+cols], b[(p0+p)*ldb+j0+s:])
		}
	}
}

// copyRowsGo is copyRows' loop.
func copyRowsGo(dst, src []float32, ld, rows, width int) {
	for r := range rows {
		copy(dst[r*width:(r+1)*width], src[r*ld:])
	}
}

// nnPackTranspose sets dst[p·width+ii] = alpha·src[ii·lds+p] for ii < rows
// and p < kc: rows of src become columns of panel dst. Four rows at a time,
// stores to dst run in order; a row at a time it ran 2.4 times slower.
func nnPackTranspose(rows, kc int, alpha float32, src []float32, lds int, dst []float32, width int) {
	if rows == 8 && width == 8 && alpha == 1 && nnPack8(dst, src, lds, kc) {
		return
	}
	ii := 0
	for ; ii+4 <= rows; ii += 4 {
		o := ii * lds
		r0 := src[o : o+kc]
		r1 := src[o+lds : o+lds+kc]
		r2 := src[o+2*lds : o+2*lds+kc]
		r3 := src[o+3*lds : o+3*lds+kc]
		q := ii
		for p := range r0 {
			out := dst[q : q+4 : q+4]
			out[0] = alpha * r0[p]
			out[1] = alpha * r1[p]
			out[2] = alpha * r2[p]
			out[3] = alpha * r3[p]
			q += width
		}
	}
	for ; ii < rows; ii++ {
		q := ii
		for _, v := range src[ii*lds : ii*lds+kc] {
			dst[q] = alpha * v
			q += width
		}
	}
}

// nnMacroKernel adds the product of a packed mc×kc A block and a packed
// kc×nc B block to the mc×nc block of C at c, one kern tile at a time, or,
// given start (mc values), sets row i of the block to the product plus
// start[i]. Tiles cut by the block's edge are computed into scratch
// (nnMaxTile floats) and the part inside C added (or set) from there.
func nnMacroKernel(kern nnKernel, mc, nc, kc int, apack, bpack, c []float32, ldc int, scratch, start []float32) {
	nr := kern.nr
	off := nnPanelOffsets(nr, kc)
	for s := 0; s < nc; s += nr {
		nnPanelTiles(kern, mc, min(nr, nc-s), kc, apack, bpack[s*kc:s*kc+nr*kc], off, c[s:], ldc, scratch, start)
	}
}

// nnMacroKernelRows is nnMacroKernel reading B's kc rows in place, row p's
// nc columns at b[off[p]:], rather than from a packed block; but for a
// panel cut by the block's edge, whose last columns may lie past b's end:
// edge holds it packed (nnPackRows).
func nnMacroKernelRows(kern nnKernel, mc, nc, kc int, apack, b []float32, off []int32, c []float32, ldc int, scratch, start, edge []float32) {
	nr := kern.nr
	for s := 0; s < nc; s += nr {
		if cols := nc - s; cols < nr {
			nnPanelTiles(kern, mc, cols, kc, apack, edge, nnPanelOffsets(nr, kc), c[s:], ldc, scratch, start)
			continue
		}
		nnPanelTiles(kern, mc, nr, kc, apack, b[s:], off, c[s:], ldc, scratch, start)
	}
}

// nnPackRows packs the kc rows of a block of B that lie at b[off[p]:], nc
// columns each, into dst as nnPackB packs a block: panels of nr columns,
// columns past nc zero.
func nnPackRows(nr, kc, nc int, b []float32, off []int32, dst []float32) {
	for s := 0; s < nc; s += nr {
		cols := min(nr, nc-s)
		panel := dst[s*kc : s*kc+nr*kc]
		for p, o := range off[:kc] {
			row := panel[p*nr : p*nr+nr]
			copy(row, b[s+int(o):s+int(o)+cols])
			clear(row[cols:])
		}
	}
}

// nnCheckRows panics unless every row of n columns that rows places in b
// lies inside it: the micro-kernels read them without bounds checks.
func nnCheckRows(rows []int32, n int, b []float32) {
	for p, o := range rows {
		if o < 0 || int(o)+n > len(b) {
			panic(fmt.Sprintf("sgemm: row %d of B at %d, %d columns, past the end of its %d floats", p, o, n, len(b)))
		}
	}
}

// nnPanelTiles adds the product of a packed mc×kc A block and one panel
// of B, kc rows of nr values at b[off[p]:] (cols of them wanted), to the
// mc×cols block of C at c, or sets it to the product plus start, as
// nnMacroKernel does.
func nnPanelTiles(kern nnKernel, mc, cols, kc int, apack, b []float32, off []int32, c []float32, ldc int, scratch, start []float32) {
	mr, nr := kern.mr, kern.nr
	edge := scratch[:mr*nr]
	// The tile's kernel and width: the half kernel for a panel it covers.
	kernel, width := kern.kernel, nr
	if kern.half != nil && cols <= nr/2 {
		kernel, width = kern.half, nr/2
	}
	for r := 0; r < mc; r += mr {
		rows := min(mr, mc-r)
		ap := apack[r*kc : r*kc+mr*kc]
		if rows == mr && cols == width {
			// Sliced to exactly the elements the kernel touches, so
			// the bounds check covers kernels that make none.
			o := r * ldc
			var st []float32
			if start != nil {
				st = start[r : r+mr]
			}
			kernel(kc, ap, b, off, c[o:o+(mr-1)*ldc+width], ldc, st)
			continue
		}
		// The tile in edge (rows nr apart), then its part inside C: set
		// (the kernel adds start as it stores, the same sum as start +
		// tile) or added.
		if start != nil && rows == mr {
			kernel(kc, ap, b, off, edge, nr, start[r:r+mr])
			for ii := range rows {
				copy(c[(r+ii)*ldc:(r+ii)*ldc+cols], edge[ii*nr:])
			}
			continue
		}
		clear(edge)
		kernel(kc, ap, b, off, edge, nr, nil)
		for ii := range rows {
			row := c[(r+ii)*ldc : (r+ii)*ldc+cols]
			if start != nil {
				ewArithVS(ewAdd, row, edge[ii*nr:ii*nr+cols], start[r+ii])
				continue
			}
			addInto(row, edge[ii*nr:])
		}
	}
}

// nnRows adds the product of m rows of A (unpacked, rows lda apart, kc
// steps each) and a packed kc×nc B block to the m×nc block of C at c, one
// row and one B panel at a time with kern.row. Panels cut by the block's
// edge are computed into scratch (nr floats) and added from there.
func nnRows(kern nnKernel, m, nc, kc int, a []float32, lda int, bpack, c []float32, ldc int, scratch []float32) {
	nr := kern.nr
	edge := scratch[:nr]
	for i := range m {
		ar := a[i*lda : i*lda+kc]
		for s := 0; s < nc; s += nr {
			bp := bpack[s*kc : s*kc+nr*kc]
			if cols := min(nr, nc-s); cols == nr {
				kern.row(kc, ar, bp, c[i*ldc+s:i*ldc+s+nr])
			} else {
				clear(edge)
				kern.row(kc, ar, bp, edge)
				addInto(c[i*ldc+s:i*ldc+s+cols], edge)
			}
		}
	}
}

// nnMicroKernel adds the nnMR×nnNR (2×4) product of a packed A panel and
// kc rows of B at b[off[p]:] to the tile of C at c, or sets the tile to it
// plus start (nnKernel.kernel).
func nnMicroKernel(kc int, ap, b []float32, off []int32, c []float32, ldc int, start []float32) {
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	ap, off = ap[:2*kc], off[:kc]
	p := 0
	for ; p+3 < kc; p += 4 {
		a := ap[2*p : 2*p+8 : 2*p+8]
		o := off[p : p+4 : p+4]
		b0 := b[o[0] : o[0]+4 : o[0]+4]
		b1 := b[o[1] : o[1]+4 : o[1]+4]
		b2 := b[o[2] : o[2]+4 : o[2]+4]
		b3 := b[o[3] : o[3]+4 : o[3]+4]
		c00 += a[0] * b0[0]
		c01 += a[0] * b0[1]
		c02 += a[0] * b0[2]
		c03 += a[0] * b0[3]
		c10 += a[1] * b0[0]
		c11 += a[1] * b0[1]
		c12 += a[1] * b0[2]
		c13 += a[1] * b0[3]
		c00 += a[2] * b1[0]
		c01 += a[2] * b1[1]
		c02 += a[2] * b1[2]
		c03 += a[2] * b1[3]
		c10 += a[3] * b1[0]
		c11 += a[3] * b1[1]
		c12 += a[3] * b1[2]
		c13 += a[3] * b1[3]
		c00 += a[4] * b2[0]
		c01 += a[4] * b2[1]
		c02 += a[4] * b2[2]
		c03 += a[4] * b2[3]
		c10 += a[5] * b2[0]
		c11 += a[5] * b2[1]
		c12 += a[5] * b2[2]
		c13 += a[5] * b2[3]
		c00 += a[6] * b3[0]
		c01 += a[6] * b3[1]
		c02 += a[6] * b3[2]
		c03 += a[6] * b3[3]
		c10 += a[7] * b3[0]
		c11 += a[7] * b3[1]
		c12 += a[7] * b3[2]
		c13 += a[7] * b3[3]
	}
	for ; p < kc; p++ {
		a := ap[2*p : 2*p+2 : 2*p+2]
		bv := b[off[p] : off[p]+4 : off[p]+4]
		c00 += a[0] * bv[0]
		c01 += a[0] * bv[1]
		c02 += a[0] * bv[2]
		c03 += a[0] * bv[3]
		c10 += a[1] * bv[0]
		c11 += a[1] * bv[1]
		c12 += a[1] * bv[2]
		c13 += a[1] * bv[3]
	}
	r0, r1 := c[0:4:4], c[ldc:ldc+4:ldc+4]
	if start != nil {
		s0, s1 := start[0], start[1]
		r0[0], r0[1], r0[2], r0[3] = s0+c00, s0+c01, s0+c02, s0+c03
		r1[0], r1[1], r1[2], r1[3] = s1+c10, s1+c11, s1+c12, s1+c13
		return
	}
	r0[0] += c00
	r0[1] += c01
	r0[2] += c02
	r0[3] += c03
	r1[0] += c10
	r1[1] += c11
	r1[2] += c12
	r1[3] += c13
}

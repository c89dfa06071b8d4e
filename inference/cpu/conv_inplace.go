package cpu

import (
	"github.com/beamml/beamml/inference/internal/opsem"
)

// A 2-D convolution as a product that reads its B operand, the im2col
// matrix, in place rather than packing it from the image: row (c, tap) of
// that matrix is the image of channel c shifted by the tap, so the
// micro-kernels read each row where it lies (nnPrepacked.rowsB), one
// offset per row.
//
// That holds along the output's rows only, so the product runs over a
// wide output: its rows are those of a padded image (padding begin + in +
// end wide), of which the first out columns are the output's, and the
// rest are computed and dropped (cvInPlace.compact), a chunk of output
// rows at a time, each compacted while it is in cache. At stride s the
// padded image is first split into s×s phases (rows and columns of one
// remainder mod s each), in which every tap reads at stride 1. The image
// is copied once into that layout when it has padding or a stride, rather
// than packed once per tap; a 1×1 convolution at stride 1 without padding
// reads the input itself, and writes the output in place.
//
// The wide columns cost products: cvInPlace is used where they add at most
// cvWideShare to the product's panels of columns (at 7×7 and 14×14 none:
// 49 and 196 columns fill 2 and 7 panels of 32, as 7·9−2 = 61 and
// 14·16−2 = 222 do), and a dilation as wide as DeepLab's (rate 12 on a
// 14×14 map) packs as before.

// cvWideShare is the largest share of panels that the wide columns may add
// to a product for cvInPlace to be used.
const cvWideShare = 0.15

// cvInPlace is a convolution's product read in place: its geometry, made
// once per plan.
type cvInPlace struct {
	s          int     // the stride, along both dimensions
	ph, pw     int     // the padded image's size
	qh, qw     int     // a phase's size: ⌈ph/s⌉×⌈pw/s⌉
	slots      []int   // slots[a·s+b]: the place of phase (a, b) in the copy, −1 when no tap reads it
	used       int     // phases copied
	off        []int32 // row (c, tap) of the im2col matrix: its offset in the copy
	wide       int     // the wide output's columns: (oh−1)·qw + ow
	oh, ow     int
	padBegin   [2]int
	in         [2]int
	chans      int
	readsImage bool // no copy: the product reads the image (1 phase, no padding)
	writesOut  bool // the wide output is the output (qw = ow): no compaction
	copyFloats int  // the copy's size in floats, 0 when readsImage
}

// newCvInPlace returns the in-place product of a 2-D convolution of chans
// channels (a group's) with the given taps, in the order of W's packing
// (row c·len(taps)+t), or nil where it would not pay, or its offsets would
// not fit an int32.
func newCvInPlace(g opsem.Window, chans int, taps []cvTap, nr int) *cvInPlace {
	d := newCvLayout(g, chans, taps)
	if d == nil {
		return nil
	}
	panels := func(n int) int { return (n + nr - 1) / nr }
	// Nor where no panel of columns is whole (a squeeze-and-excitation's
	// 1×1 map), which packs all the same.
	if d.wide < nr || float64(panels(d.wide)) > (1+cvWideShare)*float64(panels(d.oh*d.ow)) {
		return nil
	}
	return d
}

// cvLayoutMaxStride bounds the strides the layout takes: it keeps a slot
// for each of stride² phases (a stride of 10⁹ in a hostile model packs).
const cvLayoutMaxStride = 64

// newCvLayout returns the geometry of newCvInPlace's product, whether it
// pays or not (cvTall reads the same layout), or nil where it has none.
func newCvLayout(g opsem.Window, chans int, taps []cvTap) *cvInPlace {
	if len(g.Kernel) != 2 || g.Stride[0] != g.Stride[1] || len(taps) == 0 || g.Stride[0] > cvLayoutMaxStride {
		return nil
	}
	d := &cvInPlace{s: g.Stride[0], oh: g.Out[0], ow: g.Out[1], chans: chans}
	d.in = [2]int{g.In[0], g.In[1]}
	d.padBegin = [2]int{g.PadBegin[0], g.PadBegin[1]}
	s := d.s
	// The padded image as far as the output reads it.
	d.ph = max(g.In[0]+g.PadBegin[0]+g.PadEnd[0], (d.oh-1)*s+(g.Kernel[0]-1)*g.Dilation[0]+1)
	d.pw = max(g.In[1]+g.PadBegin[1]+g.PadEnd[1], (d.ow-1)*s+(g.Kernel[1]-1)*g.Dilation[1]+1)
	d.qh, d.qw = (d.ph+s-1)/s, (d.pw+s-1)/s
	d.wide = (d.oh-1)*d.qw + d.ow
	d.slots = make([]int, s*s)
	for i := range d.slots {
		d.slots[i] = -1
	}
	for _, t := range taps {
		y, x := t.y*g.Dilation[0], t.x*g.Dilation[1]
		if ph := (y%s)*s + x%s; d.slots[ph] < 0 {
			d.slots[ph] = d.used
			d.used++
		}
	}
	// Pads are not negative (opsem.SlidingWindow): a padded image the
	// input's size has none.
	d.readsImage = s == 1 && d.ph == g.In[0] && d.pw == g.In[1]
	d.writesOut = d.qw == d.ow
	plane := d.qh * d.qw
	if !d.readsImage {
		d.copyFloats = d.used * chans * plane
	}
	// Offsets, and the copy's (or the image's) extent, within int32.
	if int64(d.used)*int64(chans)*int64(plane) > 1<<31-1 {
		return nil
	}
	d.off = make([]int32, 0, chans*len(taps))
	for c := range chans {
		for _, t := range taps {
			y, x := t.y*g.Dilation[0], t.x*g.Dilation[1]
			slot := d.slots[(y%s)*s+x%s]
			d.off = append(d.off, int32(((slot*chans+c)*d.qh+y/s)*d.qw+x/s))
		}
	}
	return d
}

// layout copies channels lo…hi−1 of src, the group's channels of one
// image, into dst (copyFloats floats) as the product reads them: for each
// phase a tap reads, each channel's plane of qh×qw, zero where it is
// padding.
func (d *cvInPlace) layout(src, dst []float32, lo, hi int) {
	ih, iw, s := d.in[0], d.in[1], d.s
	plane := d.qh * d.qw
	if s == 2 && d.slots[0] >= 0 && d.slots[1] >= 0 && d.slots[2] >= 0 && d.slots[3] >= 0 {
		d.layoutSplit(src, dst, lo, hi)
		return
	}
	for ph, slot := range d.slots {
		if slot < 0 {
			continue
		}
		a, b := ph/s, ph%s
		// Phase column j reads image column j·s + b − padBegin: the
		// columns j in [jlo, jhi) lie inside the image.
		jlo, jhi := cvSpan(b-d.padBegin[1], s, iw, d.qw)
		for c := lo; c < hi; c++ {
			img := src[c*ih*iw : (c+1)*ih*iw]
			out := dst[(slot*d.chans+c)*plane : (slot*d.chans+c+1)*plane]
			for i := range d.qh {
				row := out[i*d.qw : (i+1)*d.qw]
				iy := i*s + a - d.padBegin[0]
				if iy < 0 || iy >= ih || jlo >= jhi {
					clear(row)
					continue
				}
				cvIm2colRun(row, img[iy*iw:(iy+1)*iw], jlo, jhi, jlo*s+b-d.padBegin[1], s)
			}
		}
	}
}

// layoutSplit is layout at stride 2 where the taps read all four phases
// (a 3×3 or larger kernel): the image rows of each parity are split into
// their even and odd columns at once, into the two phases of that parity
// (one call of dwSplitRows, a vector loop, reading every other row), each
// phase cleared first for its padding.
func (d *cvInPlace) layoutSplit(src, dst []float32, lo, hi int) {
	ih, iw, qw := d.in[0], d.in[1], d.qw
	plane := d.qh * qw
	pb0, pb1 := d.padBegin[0], d.padBegin[1]
	// Image column 0 lands in phase column b0 at j0, column 1 in b1 at
	// j1.
	b0, j0 := pb1%2, pb1/2
	b1, j1 := (pb1+1)%2, (pb1+1)/2
	for c := lo; c < hi; c++ {
		img := src[c*ih*iw : (c+1)*ih*iw]
		for a := range 2 {
			pe := dst[(d.slots[a*2+b0]*d.chans+c)*plane : (d.slots[a*2+b0]*d.chans+c+1)*plane]
			po := dst[(d.slots[a*2+b1]*d.chans+c)*plane : (d.slots[a*2+b1]*d.chans+c+1)*plane]
			clear(pe)
			clear(po)
			// Phase row i holds image row 2i + a − pb0: rows i0… of
			// the phase hold image rows iy0, iy0 + 2, … below ih.
			i0 := max(0, (pb0-a+1)/2)
			iy0 := 2*i0 + a - pb0
			if iy0 >= ih || i0 >= d.qh {
				continue
			}
			rows := min(d.qh-i0, (ih-iy0+1)/2)
			dwSplitRows(pe[i0*qw+j0:], po[i0*qw+j1:], img[iy0*iw:], rows, iw, qw, qw, 2*iw)
		}
	}
}

// cvChunkFloats bounds a chunk of the wide output (cvInPlace.chunkRows):
// 256 KiB, which stays in the L2 caches of the CPUs we run on until its
// compaction reads it.
const cvChunkFloats = 1 << 16

// chunkRows is how many output rows the product computes at a time where
// the wide output is not the output: as many as keep mg channels of them
// within cvChunkFloats, at least one.
func (d *cvInPlace) chunkRows(mg int) int {
	return min(d.oh, max(1, cvChunkFloats/(mg*d.qw)))
}

// chunkWide is the wide columns of a chunk of n output rows.
func (d *cvInPlace) chunkWide(n int) int { return (n-1)*d.qw + d.ow }

// compact copies the output's columns of a chunk of the wide output, n
// output rows from oy0 (its rows ld apart, one per output channel), into
// y (rows oh·ow apart), for output channels lo…hi−1.
func (d *cvInPlace) compact(y, wide []float32, ld, oy0, n, lo, hi int) {
	osp := d.oh * d.ow
	for m := lo; m < hi; m++ {
		src, dst := wide[m*ld:(m+1)*ld], y[m*osp+oy0*d.ow:m*osp+(oy0+n)*d.ow]
		for r := range n {
			copy(dst[r*d.ow:(r+1)*d.ow], src[r*d.qw:])
		}
	}
}

// cvInPlaceJob is one unit's copy of its image and compaction of its
// output, split among threads when the unit has them; kept in its cvGemm
// with its two loops bound once, so that a run allocates nothing.
type cvInPlaceJob struct {
	d                             *cvInPlace
	src, copied, wide, y          []float32
	tail                          nnTail
	osp                           int
	ld, oy0, n                    int // the chunk being compacted: its row length, first output row, rows
	layoutFn, compactFn, chunksFn func(lo, hi int)

	// The product's operands when goroutines take whole chunks (chunks):
	// W's block (packed in pre), B read in place, the head, and the
	// product's rows, columns of W and output rows a chunk.
	pre           nnPrepacked
	head          nnTail
	w, b          []float32
	mg, rows, per int
}

func newCvInPlaceJob(d *cvInPlace, osp int) *cvInPlaceJob {
	j := &cvInPlaceJob{d: d, osp: osp}
	j.layoutFn, j.compactFn, j.chunksFn = j.layout, j.compact, j.chunks
	return j
}

// chunks runs chunks lo…hi−1 of the output rows, per rows each: each
// chunk's product on this goroutine, into a wide block of its own, then
// its compaction and epilogue.
func (j *cvInPlaceJob) chunks(lo, hi int) {
	d := j.d
	buf := cvScratchBuf(j.mg * d.chunkWide(j.per))
	defer cvScratchPool.put(buf)
	for c := lo; c < hi; c++ {
		oy0 := c * j.per
		n := min(j.per, d.oh-oy0)
		ld := d.chunkWide(n)
		wide := (*buf)[:j.mg*ld]
		nnSgemmPre(1, j.pre, nnBlocks{head: j.head}, false, false, j.mg, ld, j.rows, 1, j.w, j.rows, j.b[oy0*d.qw:], 0, 0, wide, ld)
		j.finish(wide, ld, oy0, n, 0, j.mg)
	}
}

func (j *cvInPlaceJob) layout(lo, hi int) { j.d.layout(j.src, j.copied, lo, hi) }

// compact compacts the chunk's rows of output channels lo…hi−1 and
// applies the tail to them.
func (j *cvInPlaceJob) compact(lo, hi int) { j.finish(j.wide, j.ld, j.oy0, j.n, lo, hi) }

// finish compacts a chunk of the wide output, n output rows from oy0 (its
// rows ld apart), for output channels lo…hi−1, and applies the tail to
// them.
func (j *cvInPlaceJob) finish(wide []float32, ld, oy0, n, lo, hi int) {
	j.d.compact(j.y, wide, ld, oy0, n, lo, hi)
	if j.tail != nil {
		ow := j.d.ow
		j.tail.finish(j.y[lo*j.osp+oy0*ow:], j.osp, lo, oy0*ow, hi-lo, n*ow)
	}
}

// run runs fn over [0, n) on threads: in parallel when there are more
// than one, on the calling goroutine otherwise.
func (j *cvInPlaceJob) run(threads, n, cost int, fn func(lo, hi int)) {
	if threads > 1 {
		parallelFor(n, cost, fn)
		return
	}
	fn(0, n)
}

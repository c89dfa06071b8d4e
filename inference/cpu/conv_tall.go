package cpu

// A convolution's product turned on its side: the output's positions as
// the rows of the micro-kernel's tiles and its channels as their columns,
// Cᵀ = Bᵀ·Wᵀ. Laid out as SGEMM (channels × positions) the product leaves
// much of its panels of nr positions empty on small maps: a 7×7 map's 49
// positions fill 64 columns (two panels of 32), a 14×14 map read in place
// 224 for 196. On its side the positions go in tiles of mr (49 in 56) and
// the channels, in CNNs a multiple of 32, fill whole panels; and on maps
// of any size a k×k convolution neither packs its B blocks from the image
// nor computes a wide output to compact (3×3 convolutions on 7×7 to 56×56
// maps ran 6–26% faster on their side, ResNet-18 13%).
//
// The tall kernel reads each tile's mr positions where they lie, in the
// image or its padded copy (cvInPlace's layout, whose offsets place each
// row of the im2col matrix): row i of the tile broadcasts
// b[pos[i] + off[p]] at step p, so that nothing is packed per run; Wᵀ is
// packed once, in panels of nr channels. Each panel's tiles go to a
// scratch of positions × nr, which is then transposed into the nr output
// planes, the bias added and the epilogue applied while they are in cache.

// nnTallFunc is a tall kernel: it sets (set) or adds to the mr×nr tile of
// C at c (rows ldc apart) the product over kc steps of row i's values
// b[pos[i] + off[p]] and the packed panel's nr values wp[p·nr:]. It
// requires len(pos) ≥ mr, len(off) ≥ kc, len(wp) ≥ kc·nr, every
// pos[i] + off[p] inside b and len(c) ≥ (mr−1)·ldc + nr; assembly kernels
// do not check.
type nnTallFunc func(kc int, b []float32, pos, off []int32, wp, c []float32, ldc int, set bool)

// nnTallGo is nnTallFunc's contract in Go, for tiles of mr×nr: the
// reference the assembly kernels are tested against.
func nnTallGo(mr, nr int) nnTallFunc {
	return func(kc int, b []float32, pos, off []int32, wp, c []float32, ldc int, set bool) {
		for i := range mr {
			row := c[i*ldc : i*ldc+nr]
			for j := range nr {
				var s float32
				for p := range kc {
					s += b[int(pos[i])+int(off[p])] * wp[p*nr+j]
				}
				if set {
					row[j] = s
				} else {
					row[j] += s
				}
			}
		}
	}
}

// cvTallChunk is how many positions a chunk of a panel's tiles covers:
// its scratch of cvTallChunk × nr floats (32 KiB at nr = 32) stays in the
// L1 cache until it is transposed into the output.
const cvTallChunk = 256

// cvTallTransposeFlops is what the transposition of a product on its side
// into the output planes, and the bias added after, cost per output
// element, in the product's flops. A 1×1 convolution takes cvTall only
// where the columns SGEMM would compute in vain cost more: read in place
// its B rows are the input's own, and it packs nothing to save. (On 7×7
// maps, 2048 input channels ran 13% faster on their side; 512 5% faster
// alone, ShuffleNet's 464 5% slower in the model, 96 25% slower: 192 puts
// the line at 672.)
const cvTallTransposeFlops = 192

// cvTallMinRows is the fewest rows of the im2col matrix (input channels ×
// taps) a convolution has for cvTall: a 3×3 stem's 27 spend too few steps
// in the kernel to pay for the transposition (10–15% slower on their
// side); a 7×7 stem's 147 ran as fast either way.
const cvTallMinRows = 64

// cvTallMaxCopy bounds the padded copy cvTall reads, in images: a 3×3
// convolution with padding 1 copies 81 floats a plane for a 7×7 map's 49,
// 1.7 times.
const cvTallMaxCopy = 4

// cvTall is a convolution's product on its side, made once per plan.
type cvTall struct {
	kernel nnTallFunc
	mr, nr int
	pos    []int32   // each output position's offset in the source, then the last again to a whole tile
	off    []int32   // each row (c, tap) of the im2col matrix: its offset in the source
	wt     []float32 // Wᵀ: group g's channel panel j, rows·nr floats, at (g·panels + j)·rows·nr
	rows   int
	panels int // channel panels per group: mg / nr
	osp    int
	srcLen int        // the floats of the source the offsets address
	layout *cvInPlace // the padded copy the source is, nil when it is the image
}

// newCvTall returns c's product on its side where the kernel has a tall
// kernel and it pays: channels in whole panels, enough rows, a padded copy
// not much larger than the image, and for a 1×1 convolution enough
// columns saved (cvTallTransposeFlops). wd is W (c.dw when dead taps were
// dropped), a constant.
func newCvTall(c *cvGemm, kern nnKernel, wd []float32) *cvTall {
	// A batch of images: X's shape then counts elements that exist, which
	// bounds the position tables (a batch of 0 may claim any map).
	if kern.tall == nil || c.batch == 0 || c.mg%kern.nr != 0 || c.osp == 0 || c.rows < cvTallMinRows {
		return nil
	}
	t := &cvTall{kernel: kern.tall, mr: kern.mr, nr: kern.nr, rows: c.rows, panels: c.mg / kern.nr, osp: c.osp}
	// The source and its offsets: the image itself for a 1×1 convolution
	// at stride 1 without padding, the padded (and phased) copy
	// otherwise, read as cvInPlace reads it.
	var srcLen int
	switch {
	case c.pointwise:
		if int64(c.cg)*int64(c.isp) > 1<<31-1 {
			return nil
		}
		t.off = make([]int32, c.cg)
		for ch := range t.off {
			t.off[ch] = int32(ch * c.isp)
		}
		for p := range c.osp {
			t.pos = append(t.pos, int32(p))
		}
		srcLen = c.cg * c.isp
	case c.implicit:
		d := c.inPlace
		if d == nil {
			if d = newCvLayout(c.g, c.cg, c.taps2); d == nil {
				return nil
			}
		}
		// The phases' planes within cvTallMaxCopy images, counted apart
		// from the layout's int products (which a hostile model's pads
		// could overflow): this bounds the position table too.
		lim := int64(cvTallMaxCopy) * int64(c.isp)
		if d.qh < 1 || d.qw < 1 || int64(d.qh) > lim/int64(d.qw) || int64(max(1, d.used)) > lim/(int64(d.qh)*int64(d.qw)) {
			return nil
		}
		t.off = d.off
		srcLen = d.copyFloats
		if d.readsImage {
			srcLen = c.cg * c.isp
		} else {
			t.layout = d
		}
		// Nor where the padded copy is many times the image: DeepLab's
		// atrous rates of 24 and 36 pad a 14×14 map to 62×62 and 86×86,
		// whose copy costs more than the product of the taps that read
		// the image (often the middle one alone). (It also bounds the
		// positions, at most the copy's.)
		if srcLen > cvTallMaxCopy*c.cg*c.isp {
			return nil
		}
		for oy := range d.oh {
			for ox := range d.ow {
				t.pos = append(t.pos, int32(oy*d.qw+ox))
			}
		}
	default:
		return nil
	}
	if int64(srcLen) > 1<<31-1 || len(t.off) != c.rows {
		return nil
	}
	t.srcLen = srcLen
	// Columns as SGEMM computes them: whole panels of nr (the last at
	// half width where the kernel has a half), of the wide rows when read
	// in place.
	cols := func(n int) int {
		cols := n / kern.nr * kern.nr
		if rem := n % kern.nr; rem > 0 && kern.half != nil && rem <= kern.nr/2 {
			cols += kern.nr / 2
		} else if rem > 0 {
			cols += kern.nr
		}
		return cols
	}
	sgemm := cols(c.osp)
	if c.inPlace != nil {
		sgemm = cols(c.inPlace.wide)
	}
	tall := nnRoundUp(c.osp, t.mr)
	if c.pointwise && 2*c.rows*(sgemm-tall) < cvTallTransposeFlops*tall {
		return nil
	}
	for len(t.pos) < tall {
		t.pos = append(t.pos, t.pos[len(t.pos)-1])
	}
	// Every read inside the source: the largest position plus the largest
	// offset.
	maxPos, maxOff := int32(0), int32(0)
	for _, p := range t.pos {
		maxPos = max(maxPos, p)
	}
	for _, o := range t.off {
		maxOff = max(maxOff, o)
	}
	if int(maxPos)+int(maxOff) >= srcLen {
		return nil
	}
	// Wᵀ in panels: panel j of group g holds, for each row k, the nr
	// values W[g·mg + j·nr + jj][k].
	t.wt = make([]float32, c.group*c.mg*c.rows)
	for g := range c.group {
		for j := range t.panels {
			panel := t.wt[(g*t.panels+j)*c.rows*t.nr:]
			for jj := range t.nr {
				w := wd[(g*c.mg+j*t.nr+jj)*c.rows:]
				for k := range c.rows {
					panel[k*t.nr+jj] = w[k]
				}
			}
		}
	}
	return t
}

// scratch is the floats a chunk of a panel's tiles takes.
func (t *cvTall) scratch() int { return min(len(t.pos), cvTallChunk) * t.nr }

// chunks is how many chunks of positions the tiles go in.
func (t *cvTall) chunks() int { return (len(t.pos) + cvTallChunk - 1) / cvTallChunk }

// cvTallJob is one unit's product on its side, split among threads by
// chunks of positions and channel panels when the unit has them; kept in
// its cvUnit with its loop bound once, so that a run allocates nothing.
type cvTallJob struct {
	t         *cvTall
	src, y    []float32
	bias      []float32
	tail      nnTail
	grp       int
	itemsFn   func(lo, hi int)
	layoutJob *cvInPlaceJob
}

func newCvTallJob(t *cvTall, osp int) *cvTallJob {
	j := &cvTallJob{t: t}
	j.itemsFn = j.items
	if t.layout != nil {
		j.layoutJob = newCvInPlaceJob(t.layout, osp)
	}
	return j
}

// run computes the unit's product from src (the group's channels of its
// image) into y (its mg output planes), plus bias (nil: none), through
// tail (nil: none), on threads.
func (j *cvTallJob) run(src, y, bias []float32, tail nnTail, grp, threads int) {
	t := j.t
	if d := t.layout; d != nil {
		buf := cvScratchBuf(d.copyFloats)
		defer cvScratchPool.put(buf)
		lj := j.layoutJob
		lj.src, lj.copied = src, (*buf)[:d.copyFloats]
		lj.run(threads, d.chans, d.used*d.qh*d.qw*ewVecCost, lj.layoutFn)
		src = lj.copied
		defer func() { lj.src, lj.copied = nil, nil }()
	}
	if len(src) < t.srcLen {
		panic("cvTall: the source is shorter than its offsets reach") // the kernel does not check
	}
	j.src, j.y, j.bias, j.tail, j.grp = src, y, bias, tail, grp
	items := t.chunks() * t.panels
	if threads > 1 {
		parallelFor(items, 2*t.nr*t.rows*min(len(t.pos), cvTallChunk), j.itemsFn)
	} else {
		j.items(0, items)
	}
	j.src, j.y, j.bias, j.tail = nil, nil, nil, nil
}

// items computes items lo…hi−1, item i being channel panel i mod panels
// over chunk i / panels of the positions: its tiles over the blocks of
// nnKC steps into the scratch, then the scratch transposed into the
// panel's output planes, the bias added and the epilogue applied.
func (j *cvTallJob) items(lo, hi int) {
	t := j.t
	buf := cvScratchBuf(t.scratch())
	defer cvScratchPool.put(buf)
	mr, nr, rows, osp := t.mr, t.nr, t.rows, t.osp
	for it := lo; it < hi; it++ {
		jp, c0 := it%t.panels, it/t.panels*cvTallChunk
		pos := t.pos[c0:min(len(t.pos), c0+cvTallChunk)]
		ct := (*buf)[:len(pos)*nr]
		wt := t.wt[(j.grp*t.panels+jp)*rows*nr : (j.grp*t.panels+jp+1)*rows*nr]
		for p0 := 0; p0 < rows; p0 += nnKC {
			kc := min(nnKC, rows-p0)
			wp, off := wt[p0*nr:], t.off[p0:p0+kc]
			for i := 0; i < len(pos); i += mr {
				t.kernel(kc, j.src, pos[i:i+mr], off, wp, ct[i*nr:(i+mr)*nr], nr, p0 == 0)
			}
		}
		// The chunk's output positions: those before the padding.
		n := min(len(pos), osp-c0)
		y := j.y[jp*nr*osp+c0:]
		transpose2D(y, osp, ct, nr, n, nr)
		for r := range nr {
			row := y[r*osp : r*osp+n]
			if j.bias != nil {
				ewArithVS(ewAdd, row, row, j.bias[jp*nr+r])
			}
		}
		if j.tail != nil {
			j.tail.finish(y, osp, jp*nr, c0, nr, n)
		}
	}
}

package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Convolutions: Conv, ConvTranspose and Col2Im. Tensors are NCHW:
// [batch, channels, spatial...]; the operands' shapes and the window
// geometry are opsem's (ConvOperands, SlidingWindow, TransposedWindow).

func init() {
	register("Conv", cvConv)
	register("ConvTranspose", cvConvTranspose)
	register("Col2Im", cvCol2Im)
}

// cvSpan returns the positions j in [0, count) for which j·s + off lies in
// [0, size), as the range [lo, hi).
func cvSpan(off, s, size, count int) (lo, hi int) {
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if size-1-off < 0 {
		return 0, 0
	}
	hi = min(count, (size-1-off)/s+1)
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

// cvTaps maps the columns of an im2col matrix to an image. For channel c
// and kernel tap t (the matrix row c·∏kernel + t) and column position p
// (an index into cols), it addresses image index p·stride − pad +
// t·dilation in each dimension; indices outside img are padding.
type cvTaps struct {
	cols, img, kernel, stride, dilation, pad []int
}

// walk calls seg for each row r and each run of cols[last] consecutive
// columns starting at column col0. Columns lo…hi−1 of the run address the
// image element at offset at + (j−lo)·stride[last] (offsets count from the
// first channel's first element); the others are padding.
func (m cvTaps) walk(channels int, seg func(r, col0, lo, hi, at int)) {
	rank := len(m.cols)
	ncol, nimg, ntap := opsem.Count(m.cols), opsem.Count(m.img), opsem.Count(m.kernel)
	if ncol == 0 {
		return
	}
	last := rank - 1
	width := m.cols[last]
	imgStrides := opsem.Strides(m.img)
	tap := make([]int, rank)
	pos := make([]int, rank)
	for c := range channels {
		for t := range ntap {
			rem := t
			for d := last; d >= 0; d-- {
				tap[d] = rem % m.kernel[d]
				rem /= m.kernel[d]
			}
			off := tap[last]*m.dilation[last] - m.pad[last]
			lo, hi := cvSpan(off, m.stride[last], m.img[last], width)
			clear(pos)
			r := c*ntap + t
			for col0 := 0; col0 < ncol; col0 += width {
				base, inside := c*nimg, lo < hi
				for d := 0; d < last && inside; d++ {
					i := pos[d]*m.stride[d] - m.pad[d] + tap[d]*m.dilation[d]
					inside = i >= 0 && i < m.img[d]
					base += i * imgStrides[d]
				}
				if inside {
					seg(r, col0, lo, hi, base+lo*m.stride[last]+off)
				} else {
					seg(r, col0, 0, 0, 0)
				}
				for d := last - 1; d >= 0; d-- {
					if pos[d]++; pos[d] < m.cols[d] {
						break
					}
					pos[d] = 0
				}
			}
		}
	}
}

// cvIm2col fills col (channels·∏kernel rows, ∏cols columns) with the image
// elements m addresses, zero in the padding.
func cvIm2col(x []float32, channels int, m cvTaps, col []float32) {
	ncol, width, s := opsem.Count(m.cols), m.cols[len(m.cols)-1], m.stride[len(m.stride)-1]
	m.walk(channels, func(r, col0, lo, hi, at int) {
		cvIm2colRun(col[r*ncol+col0:r*ncol+col0+width], x, lo, hi, at, s)
	})
}

// cvIm2colRun sets run[j] to x[at + (j−lo)·s] for lo ≤ j < hi and to zero
// elsewhere.
func cvIm2colRun(run, x []float32, lo, hi, at, s int) {
	clear(run[:lo])
	clear(run[hi:])
	if s == 1 {
		copy(run[lo:hi], x[at:at+hi-lo])
		return
	}
	for j := lo; j < hi; j++ {
		run[j] = x[at]
		at += s
	}
}

// cvPackIm2col2D packs rows p0…p0+kc−1, columns j0…j0+nc−1 of the
// im2col matrix of x (channels planes of g.In, addressed as g says: row
// (c·kh + ky)·kw + kx, column oy·ow + ox holds image element
// (oy·sh − ph + ky·dh, ox·sw − pw + kx·dw) of channel c) into dst
// as nnPackB packs a block of it: panels of nr columns, columns past nc
// zero. It reads the image directly, so that a convolution never
// materialises its im2col matrix (an nnPackerB).
func cvPackIm2col2D(x []float32, g opsem.Window, taps []cvTap, nr, kc, nc, p0, j0 int, dst []float32) {
	ih, iw, ow := g.In[0], g.In[1], g.Out[1]
	sh, sw := g.Stride[0], g.Stride[1]
	for s := 0; s < nc; s += nr {
		cols := min(nr, nc-s)
		panel := dst[s*kc : s*kc+nr*kc]
		first := j0 + s // the panel's first column: output (oy0, ox0)
		oy0, ox0 := first/ow, first%ow
		c, t := p0/len(taps), p0%len(taps)
		for p := range kc {
			out := panel[p*nr : p*nr+nr]
			plane := x[c*ih*iw : (c+1)*ih*iw]
			offY := taps[t].y*g.Dilation[0] - g.PadBegin[0]
			offX := taps[t].x*g.Dilation[1] - g.PadBegin[1]
			// The panel's columns, one output row's run at a time.
			oy, ox := oy0, ox0
			for q := 0; q < cols; {
				run := out[q : q+min(cols-q, ow-ox)]
				ix := ox*sw + offX // the run's first image column
				var lo, hi int
				if sw == 1 { // cvSpan, without its divisions
					lo = min(max(-ix, 0), len(run))
					hi = min(max(iw-ix, lo), len(run))
				} else {
					lo, hi = cvSpan(ix, sw, iw, len(run))
				}
				if iy := oy*sh + offY; iy < 0 || iy >= ih || lo >= hi {
					clear(run) // the run is all padding
				} else {
					cvIm2colRun(run, plane[iy*iw:], lo, hi, ix+lo*sw, sw)
				}
				q += len(run)
				oy, ox = oy+1, 0
			}
			clear(out[cols:])
			if t++; t == len(taps) {
				t, c = 0, c+1
			}
		}
	}
}

// cvTap is a tap of a 2-D kernel: row y, column x.
type cvTap struct{ y, x int }

// cvAllTaps returns every tap of g's 2-D kernel, in row-major order.
func cvAllTaps(g opsem.Window) []cvTap {
	taps := make([]cvTap, 0, g.Kernel[0]*g.Kernel[1])
	for y := range g.Kernel[0] {
		for x := range g.Kernel[1] {
			taps = append(taps, cvTap{y, x})
		}
	}
	return taps
}

// cvLiveTaps returns the taps of g's 2-D kernel, in row-major order, that
// read the image for at least one output position; the others read only
// padding (a dilation as wide as the image: DeepLab's ASPP at rates 24
// and 36 on a 14×14 map keeps 1 of 9), and a product that leaves them out
// computes the same sums.
func cvLiveTaps(g opsem.Window) []cvTap {
	dead := func(d, k int) bool { // output o reads o·stride − pad + k·dilation
		lo, hi := cvSpan(k*g.Dilation[d]-g.PadBegin[d], g.Stride[d], g.In[d], g.Out[d])
		return lo >= hi
	}
	return slices.DeleteFunc(cvAllTaps(g), func(t cvTap) bool { return dead(0, t.y) || dead(1, t.x) })
}

// cvScatterColumns adds each element of col to the image element m addresses,
// dropping those that fall in the padding: the adjoint of cvIm2col.
func cvScatterColumns(col []float32, channels int, m cvTaps, y []float32) {
	ncol, width, s := opsem.Count(m.cols), m.cols[len(m.cols)-1], m.stride[len(m.stride)-1]
	m.walk(channels, func(r, col0, lo, hi, at int) {
		run := col[r*ncol+col0 : r*ncol+col0+width]
		for j := lo; j < hi; j++ {
			y[at] += run[j]
			at += s
		}
	})
}

// cvScatterColumns2D is cvScatterColumns for two spatial dimensions,
// without its general walk: for each row (channel, tap) and each of its
// runs of columns (an input row), the input positions whose output lies
// inside y.
func cvScatterColumns2D(col []float32, channels int, m cvTaps, y []float32) {
	ih, iw := m.cols[0], m.cols[1] // the product's columns: the input positions
	oh, ow := m.img[0], m.img[1]   // what they scatter into: the output
	kh, kw := m.kernel[0], m.kernel[1]
	sy, sx := m.stride[0], m.stride[1]
	ncol := ih * iw
	for c := range channels {
		plane := y[c*oh*ow : (c+1)*oh*ow]
		for ky := range kh {
			offY := ky*m.dilation[0] - m.pad[0]
			ylo, yhi := cvSpan(offY, sy, oh, ih)
			for kx := range kw {
				offX := kx*m.dilation[1] - m.pad[1]
				xlo, xhi := cvSpan(offX, sx, ow, iw)
				if xlo >= xhi {
					continue
				}
				r := (c*kh+ky)*kw + kx
				rows := col[r*ncol : (r+1)*ncol]
				if sx == 1 {
					if ylo < yhi {
						addRows(plane[(ylo*sy+offY)*ow+xlo+offX:], sy*ow, rows[ylo*iw+xlo:], iw, yhi-ylo, xhi-xlo)
					}
					continue
				}
				for iy := ylo; iy < yhi; iy++ {
					out := plane[(iy*sy+offY)*ow:]
					run := rows[iy*iw+xlo : iy*iw+xhi]
					at := xlo*sx + offX
					for _, v := range run {
						out[at] += v
						at += sx
					}
				}
			}
		}
	}
}

// cvScatterPhases2 is cvScatterColumns2D at a column stride of 2, into y
// cleared or not, with the bias added (bias nil: none). There a tap's
// input row lands on every other output column, which a vector cannot
// add; but it lands on one phase of the output row, its even or its odd
// columns, contiguously: each channel's plane is built in scratch as rows
// of their two phases (oh × 2 × ⌈ow/2⌉ floats), with vector adds, then
// interleaved into y with the bias (interleave2).
func cvScatterPhases2(col []float32, channels int, m cvTaps, y, bias, scratch []float32) {
	ih, iw := m.cols[0], m.cols[1]
	oh, ow := m.img[0], m.img[1]
	kh, kw := m.kernel[0], m.kernel[1]
	sy := m.stride[0]
	qw := (ow + 1) / 2
	ncol := ih * iw
	ph := scratch[:oh*2*qw]
	for c := range channels {
		clear(ph)
		for ky := range kh {
			offY := ky*m.dilation[0] - m.pad[0]
			ylo, yhi := cvSpan(offY, sy, oh, ih)
			for kx := range kw {
				offX := kx*m.dilation[1] - m.pad[1]
				xlo, xhi := cvSpan(offX, 2, ow, iw)
				if xlo >= xhi {
					continue
				}
				// Output column 2·ix + offX is phase b's column ix + dx.
				b, dx := offX&1, offX>>1
				if ylo >= yhi {
					continue
				}
				rows := col[((c*kh+ky)*kw+kx)*ncol:]
				at := (ylo*sy+offY)*2*qw + b*qw + dx
				addRows(ph[at+xlo:], sy*2*qw, rows[ylo*iw+xlo:], iw, yhi-ylo, xhi-xlo)
			}
		}
		var bc float32
		if bias != nil {
			bc = bias[c]
		}
		plane := y[c*oh*ow : (c+1)*oh*ow]
		for oy := range oh {
			row := ph[oy*2*qw : (oy+1)*2*qw]
			interleave2(plane[oy*ow:(oy+1)*ow], row[:qw], row[qw:], bc)
		}
	}
}

// addRowsGo is addRows' loop in Go.
func addRowsGo(y []float32, ldy int, x []float32, ldx, rows, n int) {
	for r := range rows {
		yr, xr := y[r*ldy:r*ldy+n], x[r*ldx:r*ldx+n]
		for i, v := range xr {
			yr[i] += v
		}
	}
}

// interleave2Go is interleave2's loop.
func interleave2Go(out, even, odd []float32, b float32) {
	for i := range out {
		if i&1 == 0 {
			out[i] = even[i>>1] + b
		} else {
			out[i] = odd[i>>1] + b
		}
	}
}

// cvBias returns the optional per-output-channel bias input 2.
func cvBias(n opsem.Node, in []inference.Tensor, channels int) ([]float32, error) {
	b, bd, err := floatArg(n, in, 2, "B")
	if err != nil || !present(b) {
		return nil, err
	}
	if b.Rank() != 1 || len(bd) != channels {
		return nil, fmt.Errorf("B is %v, want [%d]: %w", b, channels, inference.ErrShape)
	}
	return bd, nil
}

func cvAddBias(y []float32, bias []float32, size int) {
	for c, v := range bias {
		plane := y[c*size : (c+1)*size]
		for i := range plane {
			plane[i] += v
		}
	}
}

// cvFillPlanes sets each of the len(bias) planes of size elements in y to
// its channel's bias.
func cvFillPlanes(y []float32, bias []float32, size int) {
	for c, v := range bias {
		fill(y[c*size:(c+1)*size], v)
	}
}

// fill sets every element of y to v. From 64 elements on it copies what
// it has set, doubling: memmove's vector stores ran 5–7 times the speed of
// a loop of stores on planes of 784 and 12,544 floats, and slower on 49.
func fill(y []float32, v float32) {
	if len(y) < 64 {
		for i := range y {
			y[i] = v
		}
		return
	}
	y[0] = v
	for n := 1; n < len(y); n *= 2 {
		copy(y[n:], y[:n])
	}
}

// cvScratchPool recycles the scratch buffers of Conv and ConvTranspose
// (im2col matrices, padded planes) as *[]float32, sized by capacity: a
// buffer serves any call that needs no more. Contents are left over from
// the last user; callers write every element they read.
var cvScratchPool = freeList[[]float32]{make: func() *[]float32 { return new([]float32) }}

// cvClaimScratch counts against r the scratch buffers of rows×cols floats
// that the workers of a convolution over units take from cvScratch, one
// per worker.
func cvClaimScratch(r *limit.Run, units, rows, cols int) error {
	_, err := limit.Claim[float32](r, min(units, runtime.GOMAXPROCS(0)), rows, cols)
	return err
}

// cvScratch returns a buffer of n floats with undefined contents, and the
// function that hands it back to cvScratchPool.
func cvScratch(n int) ([]float32, func()) {
	p := cvScratchBuf(n)
	return (*p)[:n], func() { cvScratchPool.put(p) }
}

// cvScratchBuf is cvScratch without the function, which costs an
// allocation: the buffer, of at least n floats, goes back with
// cvScratchPool.put.
func cvScratchBuf(n int) *[]float32 {
	p := cvScratchPool.get()
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	return p
}

// Conv lowers each image and group to one SGEMM: W's rows for the group
// (M/group × C/group·∏kernel) times the im2col matrix of the input
// (C/group·∏kernel × ∏out). A 2-D product reads that matrix's rows where
// they lie in the image (cvInPlace) where its wide output costs few
// columns more, and packs its blocks from the image otherwise; a 1×1
// kernel with unit strides and no padding reads the input directly. A
// stride-1 product whose taps read mostly padding runs one product per
// tap (cvByTap). With a constant W, output channels in whole panels of
// the micro-kernel's columns and enough rows, the product runs on its side
// (cvTall: output positions as the tiles' rows, read where they lie),
// 2-D convolutions whenever their padded copy stays small, 1×1 ones where
// SGEMM's panels of positions would be mostly empty (7×7 maps). A 2-D
// depthwise convolution (one input channel per
// group, see cvDepthwise) runs cvConvDepthwise instead: its groups are
// products too small for SGEMM to pay.
func cvConv(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	w, wd, err := requiredFloatArg(n, in, 1, "W")
	if err != nil {
		return nil, err
	}
	prep, _ := n.Prepared.(*cvPrepared)
	p, err := opsem.Plan(n, in, func() (*cvPlan, error) { return newCvPlan(n, in, prep, x, w) })
	if err != nil {
		return nil, err
	}
	geo := p.geo
	shape, batch, outChans := geo.out, geo.xs[0], geo.ws[0]
	bias, err := cvBias(n, in, outChans)
	if err != nil {
		return nil, err
	}
	// Every path writes every element first: the bias (or zeros), which
	// the product then adds to, or the depthwise sums.
	out, err := limit.MakeOverwritten[float32](n.Run, shape...)
	if err != nil {
		return nil, err
	}
	ep := p.ep
	ep.bind(in)
	if cvBiasOnly(xd, wd, bias, out, batch, ep) {
		outs, err := opsem.Single(n, shape, out)
		return unfusedEpilogue(n, in, ep, outs, err)
	}
	if p.dw != nil {
		err = p.dw.run(n.Run, xd, wd, bias, out)
	} else {
		err = p.gemm.run(n.Run, xd, wd, prep.packed(), bias, out)
	}
	if err != nil {
		return nil, err
	}
	outs, err := opsem.Single(n, shape, out)
	return unfusedEpilogue(n, in, ep, outs, err)
}

// cvPlan is what a Conv node keeps from run to run (opsem.Plan): its
// geometry, its epilogue, and the convolution made for them, depthwise or
// through SGEMM.
type cvPlan struct {
	geo  *cvGeometry
	ep   *epilogue
	dw   *cvDW
	gemm *cvGemm
}

func newCvPlan(n opsem.Node, in []inference.Tensor, prep *cvPrepared, x, w inference.Tensor) (*cvPlan, error) {
	geo, err := prep.geometry(n, x, w)
	if err != nil {
		return nil, err
	}
	p := &cvPlan{geo: geo}
	if p.ep, err = fusedEpilogue(n, in, geo.out); err != nil {
		return nil, err
	}
	batch, chans, outChans := geo.xs[0], geo.xs[1], geo.ws[0]
	if cvDepthwise(geo.group, chans, outChans, geo.kernel) {
		p.dw = newCvDW(batch, chans, outChans/chans, geo.g, p.ep)
	} else {
		if p.gemm, err = newCvGemm(n.Run, batch, chans, outChans, geo.group, geo.g, p.ep); err != nil {
			return nil, err
		}
		if prep.packed() != nil { // W is a constant
			p.gemm.byTap = newCvByTap(geo.g, chans/geo.group, outChans, geo.group, dataOf[float32](w))
		}
		if p.gemm.byTap == nil {
			p.gemm.dropDeadTaps(dataOf[float32](w), prep.packed())
			p.gemm.readInPlace()
			if prep.packed() != nil {
				p.gemm.readTall(dataOf[float32](w))
			}
		}
	}
	return p, nil
}

// cvPrepared is what a Conv node keeps from run to run: W packed at
// compile time (nil when it is not a constant initializer, or the
// convolution is depthwise), and the geometry worked out for the last
// shapes of X and W it ran on, shared by concurrent runs.
type cvPrepared struct {
	packs nnPackedSet
	last  atomic.Pointer[cvGeometry]
}

// cvGeometry is a convolution's geometry for shapes xs of X and ws of W:
// opsem.ConvOperands' group and kernel, opsem.SlidingWindow's window, and
// the output's shape. It is not modified once made.
type cvGeometry struct {
	xs, ws, kernel, out []int
	group               int
	g                   opsem.Window
}

// packed returns the packed W, nil without a cvPrepared.
func (p *cvPrepared) packed() nnPackedSet {
	if p == nil {
		return nil
	}
	return p.packs
}

// geometry returns the geometry of n over x and W: the one kept when their
// shapes are those of the last run (without allocating), else worked out
// and kept.
func (p *cvPrepared) geometry(n opsem.Node, x, w inference.Tensor) (*cvGeometry, error) {
	if p != nil {
		if last := p.last.Load(); last != nil && opsem.SameShape(x, last.xs) && opsem.SameShape(w, last.ws) {
			return last, nil
		}
	}
	xs, ws := x.Shape(), w.Shape()
	group, kernel, err := opsem.ConvOperands(n, xs, ws, false)
	if err != nil {
		return nil, err
	}
	g, err := opsem.SlidingWindow(n, xs[2:], kernel, false)
	if err != nil {
		return nil, err
	}
	geo := &cvGeometry{xs: xs, ws: ws, kernel: kernel, group: group, g: g, out: append([]int{xs[0], ws[0]}, g.Out...)}
	if p != nil {
		p.last.Store(geo)
	}
	return geo, nil
}

// cvBiasOnly fills out [batch, channels, spatial…] with the bias (0
// without one) through the epilogue ep when there is nothing to convolve,
// and reports whether it did: when out, x or W has no elements. The
// spatial shapes beside such a 0 may then not count within int.
func cvBiasOnly(xd, wd, bias, out []float32, batch int, ep *epilogue) bool {
	if len(out) > 0 && len(xd) > 0 && len(wd) > 0 {
		return false
	}
	if len(out) > 0 && bias != nil {
		img := len(out) / batch
		for b := range batch {
			cvFillPlanes(out[b*img:(b+1)*img], bias, img/len(bias))
		}
	} else {
		clear(out)
	}
	ep.apply(out, 0)
	return true
}

// cvDepthwise reports whether a convolution runs cvConvDepthwise: 2-D, one
// input channel per group, more than one group, and fewer than 8 output
// channels per group. From 8 on, the per-group SGEMMs measured as fast or
// faster.
func cvDepthwise(group, chans, outChans int, kernel []int) bool {
	return len(kernel) == 2 && group == chans && group > 1 && outChans/group < 8
}

// cvConvGemm computes Conv with im2col and SGEMM into out (whatever it
// holds): [batch, outChans, g.Out...] from x [batch, chans, g.In...] and
// W [outChans, chans/group, g.Kernel...], reading each group's block of W
// from packs where prepare packed it.
func cvConvGemm(r *limit.Run, xd, wd []float32, packs nnPackedSet, bias []float32, batch, chans, outChans, group int, g opsem.Window, out []float32, ep *epilogue) error {
	c, err := newCvGemm(r, batch, chans, outChans, group, g, ep)
	if err != nil {
		return err
	}
	return c.run(r, xd, wd, packs, bias, out)
}

// cvGemm is a convolution through SGEMM, one product per image and group,
// made once for its geometry (a cvPlan's): the loop over the products and
// what each hands the product (its bias head, its epilogue tail, the
// packer of its B blocks from the image) are kept, so that a run
// allocates nothing. run sets the run's operands.
type cvGemm struct {
	batch, chans, outChans, group int
	cg, mg, isp, osp, rows        int
	g                             opsem.Window
	pointwise, implicit           bool
	taps                          cvTaps
	// A 2-D product's taps (implicit): all of the kernel's, or only those
	// that read the image (cvLiveTaps) when W is a constant; then rows
	// counts those, and W is kept without the others in dw, packed in
	// dpacks.
	taps2  []cvTap
	dw     []float32
	dpacks nnPackedSet
	units  []cvUnit // one per image·group
	body   func(lo, hi, threads int)
	// inPlace, when not nil, reads the product's B in place (cvInPlace)
	// rather than packing it from the image; byTap, when not nil, makes
	// one product per tap instead (cvByTap).
	inPlace *cvInPlace
	byTap   *cvByTap
	// tall, when not nil, computes the products on their side (cvTall),
	// in place of inPlace or packing.
	tall *cvTall

	xd, wd, bias, out []float32 // the run's
	packs             nnPackedSet
}

// cvUnit is one product of a cvGemm: image img, group grp.
type cvUnit struct {
	c          *cvGemm
	img, grp   int
	src        []float32 // the image's channels of the group, this run
	head       cvRowBias // the group's bias, this run
	tail       epTail
	inPlaceJob *cvInPlaceJob // with c.inPlace
	tallJob    *cvTallJob    // with c.tall
}

// cvRowBias is the head that starts each row i of a block (an output
// channel) as b[i]: the micro-kernel adds b[i] as it stores the first
// block of steps (nnStarter).
type cvRowBias struct{ b []float32 }

func (h *cvRowBias) starts(i, rows int) ([]float32, bool) { return h.b[i : i+rows], true }

func (h *cvRowBias) finish(c []float32, ldc, i, _, rows, cols int) {
	for r := range rows {
		fill(c[r*ldc:r*ldc+cols], h.b[i+r])
	}
}

// packB packs the unit's B blocks straight from its image (implicit GEMM).
func (u *cvUnit) packB(nr, kc, nc, p0, j0 int, dst []float32) {
	cvPackIm2col2D(u.src, u.c.g, u.c.taps2, nr, kc, nc, p0, j0, dst)
}

func newCvGemm(r *limit.Run, batch, chans, outChans, group int, g opsem.Window, ep *epilogue) (*cvGemm, error) {
	// One unit per image and group: as many as the shapes say, which may
	// be far more than the output's elements when its planes are empty.
	if _, err := limit.Claim[cvUnit](r, batch, group); err != nil {
		return nil, err
	}
	c := &cvGemm{batch: batch, chans: chans, outChans: outChans, group: group, g: g}
	c.cg, c.mg = chans/group, outChans/group
	c.isp, c.osp, c.rows = opsem.Count(g.In), opsem.Count(g.Out), c.cg*opsem.Count(g.Kernel)
	c.pointwise = c.rows == c.cg
	for d := range g.Kernel {
		c.pointwise = c.pointwise && g.Stride[d] == 1 && g.PadBegin[d] == 0 && g.PadEnd[d] == 0
	}
	// Two spatial dimensions pack the product's B blocks straight from the
	// image (cvPackIm2col2D); others materialise the im2col matrix first.
	c.implicit = !c.pointwise && len(g.Kernel) == 2
	if c.implicit {
		c.taps2 = cvAllTaps(g)
	}
	c.taps = cvTaps{cols: g.Out, img: g.In, kernel: g.Kernel, stride: g.Stride, dilation: g.Dilation, pad: g.PadBegin}
	c.units = make([]cvUnit, batch*group)
	for u := range c.units {
		img, grp := u/group, u%group
		off := (img*outChans + grp*c.mg) * c.osp
		c.units[u] = cvUnit{c: c, img: img, grp: grp, tail: epTail{e: ep, base: off, ld: c.osp}}
	}
	c.body = c.products
	return c, nil
}

// dropDeadTaps leaves out of c's products the taps of its 2-D kernel that
// read only padding, when there are any: W, a constant whose packing
// prepare kept (packs), is gathered without them into c.dw and packed
// again. The sums are those of the whole product, without its products
// by zeros.
func (c *cvGemm) dropDeadTaps(wd []float32, packs nnPackedSet) {
	if !c.implicit || packs == nil {
		return
	}
	live := cvLiveTaps(c.g)
	if len(live) == len(c.taps2) || len(live) == 0 {
		return // none dead; or all, and the output is the bias alone
	}
	kw, ntap := c.g.Kernel[1], len(c.taps2)
	rows := c.cg * len(live)
	c.dw = make([]float32, c.outChans*rows)
	for m := range c.outChans {
		for ch := range c.cg {
			src := wd[(m*c.cg+ch)*ntap:]
			dst := c.dw[m*rows+ch*len(live):]
			for i, t := range live {
				dst[i] = src[t.y*kw+t.x]
			}
		}
	}
	c.dpacks = make(nnPackedSet, c.group)
	for grp := range c.dpacks {
		c.dpacks[grp] = nnPackWholeA(nnBestKernel, false, c.mg, rows, c.dw[grp*c.mg*rows:], rows)
	}
	c.taps2, c.rows = live, rows
}

// readInPlace makes c's products read B in place (cvInPlace), where that
// pays: 2-D convolutions, implicit or pointwise.
func (c *cvGemm) readInPlace() {
	taps := c.taps2
	if c.pointwise && len(c.g.Kernel) == 2 {
		// A 1×1 convolution packs B by copying rows, cheaply; read in
		// place, rows whose length is not a whole number of the
		// kernel's vectors (7×7, 14×14 maps) put most of its loads
		// across two cache lines, which costs more than the copy once
		// W has more than a few tiles of rows (1024 → 2048 channels on
		// 7×7: 112 GFLOP/s in place, 142 packed).
		if c.osp%(nnBestKernel.nr/2) != 0 {
			return
		}
		taps = []cvTap{{0, 0}}
	}
	if taps == nil {
		return
	}
	if c.inPlace = newCvInPlace(c.g, c.cg, taps, nnBestKernel.nr); c.inPlace != nil {
		for u := range c.units {
			c.units[u].inPlaceJob = newCvInPlaceJob(c.inPlace, c.osp)
		}
	}
}

// readTall makes c's products run on their side (cvTall) where that pays;
// wd is W, a constant (without its dead taps in c.dw when they were
// dropped).
func (c *cvGemm) readTall(wd []float32) {
	if c.dw != nil {
		wd = c.dw
	}
	if c.tall = newCvTall(c, nnBestKernel, wd); c.tall != nil {
		for u := range c.units {
			c.units[u].tallJob = newCvTallJob(c.tall, c.osp)
		}
	}
}

// run computes the convolution of xd by wd (packed in packs where
// prepare packed it) plus bias into out.
func (c *cvGemm) run(r *limit.Run, xd, wd []float32, packs nnPackedSet, bias, out []float32) error {
	if b := c.byTap; b != nil {
		if err := cvClaimScratch(r, c.batch*c.group, 1, b.scratch()); err != nil {
			return err
		}
	} else if t := c.tall; t != nil {
		copied := 0
		if t.layout != nil {
			copied = t.layout.copyFloats
		}
		if err := cvClaimScratch(r, c.batch*c.group, 1, copied+t.scratch()); err != nil {
			return err
		}
	} else if d := c.inPlace; d != nil {
		if err := cvClaimScratch(r, c.batch*c.group, 1, d.copyFloats+c.mg*d.chunkWide(d.chunkRows(c.mg))); err != nil {
			return err
		}
	} else if !c.pointwise && !c.implicit {
		if err := cvClaimScratch(r, c.batch*c.group, c.rows, c.osp); err != nil {
			return err
		}
	}
	c.xd, c.wd, c.packs, c.bias, c.out = xd, wd, packs, bias, out
	eachUnit(len(c.units), 2*c.mg*c.rows*c.osp, c.body)
	c.xd, c.wd, c.packs, c.bias, c.out = nil, nil, nil, nil, nil
	for u := range c.units {
		c.units[u].src, c.units[u].head.b = nil, nil
	}
	return nil
}

// products runs the products of units lo…hi−1, each on threads.
func (c *cvGemm) products(lo, hi, threads int) {
	var col []float32
	if !c.pointwise && !c.implicit {
		buf := cvScratchBuf(c.rows * c.osp)
		defer cvScratchPool.put(buf)
		col = (*buf)[:c.rows*c.osp]
	}
	cg, mg, isp, osp, rows := c.cg, c.mg, c.isp, c.osp, c.rows
	for i := lo; i < hi; i++ {
		u := &c.units[i]
		img, grp := u.img, u.grp
		src := c.xd[(img*c.chans+grp*cg)*isp : (img*c.chans+(grp+1)*cg)*isp]
		off := (img*c.outChans + grp*mg) * osp
		y := c.out[off : off+mg*osp]
		var bias []float32
		if c.bias != nil {
			bias = c.bias[grp*mg : (grp+1)*mg]
		}
		if c.byTap != nil {
			c.byTap.run(grp, src, bias, y, u.tail.tail(), threads)
			continue
		}
		if u.tallJob != nil {
			u.tallJob.run(src, y, bias, u.tail.tail(), grp, threads)
			continue
		}
		// Each block of y starts as the bias (or zeros, beta 0) and
		// ends through the epilogue, both while the product has the
		// block in cache.
		var head nnTail
		if bias != nil {
			u.head.b = bias
			head = &u.head
		}
		wd, packs := c.wd, c.packs
		if c.dw != nil {
			wd, packs = c.dw, c.dpacks
		}
		w := wd[grp*mg*rows:]
		pre := nnPrepacked{a: packs.of(grp, w)}
		if c.inPlace != nil {
			c.inPlaceProduct(u, src, y, w, pre, head, threads)
			continue
		}
		switch {
		case c.pointwise:
		case c.implicit:
			u.src, pre.packB = src, u
		default:
			cvIm2col(src, cg, c.taps, col)
			src = col
		}
		nnSgemmPre(threads, pre, nnBlocks{head: head, tail: u.tail.tail()}, false, false, mg, osp, rows, 1, w, rows, src, osp, 0, y, osp)
	}
}

// inPlaceProduct computes unit u's product into y (its output channels)
// from src (its image's channels of its group), reading B in place
// (cvInPlace), with W's block w (packed in pre where prepare packed it) and
// head, on threads.
func (c *cvGemm) inPlaceProduct(u *cvUnit, src, y, w []float32, pre nnPrepacked, head nnTail, threads int) {
	d, mg, osp, rows := c.inPlace, c.mg, c.osp, c.rows
	// A unit with threads runs alone (eachUnit): the job is its own.
	j := u.inPlaceJob
	b := src
	if !d.readsImage {
		buf := cvScratchBuf(d.copyFloats)
		defer cvScratchPool.put(buf)
		b = (*buf)[:d.copyFloats]
		j.src, j.copied = src, b
		j.run(threads, d.chans, d.used*d.qh*d.qw*ewVecCost, j.layoutFn)
	}
	pre.rowsB = d.off
	if d.writesOut {
		nnSgemmPre(threads, pre, nnBlocks{head: head, tail: u.tail.tail()}, false, false, mg, d.wide, rows, 1, w, rows, b, 0, 0, y, osp)
		j.src, j.copied = nil, nil
		return
	}
	// A chunk of output rows at a time: the product of their wide
	// columns (B read from the row's offset on), then their compaction
	// and epilogue while the chunk is in cache. With threads, each
	// goroutine takes whole chunks, their products on one thread: a
	// product and a compaction split among the threads chunk by chunk
	// took two hand-offs a chunk, more than the chunk's work at 2 threads
	// (SqueezeNet's 3→64 stem, 28 chunks: 0.44 ms on one thread, 0.29 on
	// two).
	per := d.chunkRows(mg)
	j.y, j.tail = y, u.tail.tail()
	if chunks := (d.oh + per - 1) / per; threads > 1 && chunks > 1 {
		j.pre, j.head, j.w, j.b, j.mg, j.rows, j.per = pre, head, w, b, mg, rows, per
		parallelFor(chunks, 2*mg*d.chunkWide(per)*rows, j.chunksFn)
		j.pre, j.head, j.w, j.b = nnPrepacked{}, nil, nil, nil
		j.src, j.copied, j.y, j.tail = nil, nil, nil, nil
		return
	}
	buf := cvScratchBuf(mg * d.chunkWide(per))
	defer cvScratchPool.put(buf)
	for oy0 := 0; oy0 < d.oh; oy0 += per {
		n := min(per, d.oh-oy0)
		ld := d.chunkWide(n)
		wide := (*buf)[:mg*ld]
		nnSgemmPre(threads, pre, nnBlocks{head: head}, false, false, mg, ld, rows, 1, w, rows, b[oy0*d.qw:], 0, 0, wide, ld)
		j.wide, j.ld, j.oy0, j.n = wide, ld, oy0, n
		j.run(threads, mg, n*d.ow*ewVecCost, j.compactFn)
	}
	j.src, j.copied, j.y, j.wide, j.tail = nil, nil, nil, nil, nil
}

// cvConvDepthwise computes a 2-D Conv with group = chans into out:
// output channel c·mult + j (j < mult) is input channel c convolved with
// W's plane c·mult + j, plus its bias. Planes run in parallel. With
// padding, each input plane is first copied into the middle of a zeroed
// plane padBegin + in + padEnd on a side, so that every tap of every
// output lies inside the plane read and no inner loop tests for padding.
// At stride 2 along rows (without dilation there), the copy also splits
// the plane into its even and odd columns (cvSplitPadded), where the taps
// of an output row are contiguous again (cvDepthwiseTaps).
func cvConvDepthwise(r *limit.Run, xd, wd, bias []float32, batch, chans, mult int, g opsem.Window, out []float32, ep *epilogue) error {
	return newCvDW(batch, chans, mult, g, ep).run(r, xd, wd, bias, out)
}

// cvDW is a depthwise convolution made once for its geometry (a cvPlan's):
// the planes' sizes, the scratch plane, the taps and the loop over the
// planes are kept, so that a run allocates nothing. run sets the run's
// operands.
type cvDW struct {
	g                  opsem.Window
	batch, chans, mult int
	ih, iw, oh, ow     int
	kh, kw, ph, pw     int
	pih, piw, ld       int
	padded, split      bool
	rowTaps            bool
	scratch, outChans  int
	taps               dwTaps
	ep                 *epilogue
	// clamp is the epilogue's clamp where the row loops apply it as they
	// store (no residual to add first), and epRest the rest of it, or
	// dwNoClamp and nil.
	clamp             dwClamp
	epRest            *epilogue
	body              func(p0, p1 int)
	xd, wd, bias, out []float32 // the run's
}

func newCvDW(batch, chans, mult int, g opsem.Window, ep *epilogue) *cvDW {
	d := &cvDW{g: g, batch: batch, chans: chans, mult: mult, ep: ep}
	d.ih, d.iw, d.oh, d.ow = g.In[0], g.In[1], g.Out[0], g.Out[1]
	d.kh, d.kw = g.Kernel[0], g.Kernel[1]
	d.ph, d.pw = g.PadBegin[0], g.PadBegin[1]
	d.padded = d.ph != 0 || d.pw != 0 || g.PadEnd[0] != 0 || g.PadEnd[1] != 0
	d.pih, d.piw = d.ih, d.iw
	if d.padded {
		d.pih, d.piw = d.ph+d.ih+g.PadEnd[0], d.pw+d.iw+g.PadEnd[1]
	}
	d.outChans = chans * mult
	d.split = g.Stride[1] == 2 && g.Dilation[1] == 1
	d.ld = d.piw // the width of the plane dwRows reads
	if d.split {
		d.ld = (d.piw + 1) / 2
	}
	// Strides 1 and 2 along rows (without dilation at 2) go to dwRows,
	// which may read a few rows past the plane (dwOverrun): then the plane
	// is copied even without padding, into a scratch plane with as many
	// rows more, zero.
	d.rowTaps = g.Stride[1] == 1 || d.split
	overrun := 0
	if d.rowTaps {
		overrun = dwOverrun(d.kh, g.Dilation[0]*d.ld, g.Stride[0]*d.ld)
	}
	switch {
	case d.split:
		d.scratch = 2*d.pih*d.ld + overrun
	case d.padded || overrun > 0:
		d.scratch = d.pih*d.piw + overrun
	}
	d.clamp = dwNoClamp
	if d.rowTaps {
		d.taps = cvDepthwiseTaps(g, d.ld, d.pih, d.split)
		if ep != nil && ep.clamp.on && ep.residual == nil && ep.residualIn < 0 && ep.bias == nil && ep.biasIn < 0 {
			d.clamp = dwClamp{ep.clamp.lo, ep.clamp.hi}
			d.epRest = &epilogue{act: ep.act, biasIn: -1, residualIn: -1}
		}
	}
	d.body = d.planes
	return d
}

// run computes the convolution of xd by wd plus bias into out.
func (d *cvDW) run(r *limit.Run, xd, wd, bias, out []float32) error {
	if d.scratch > 0 {
		if err := cvClaimScratch(r, d.batch*d.outChans, 1, d.scratch); err != nil {
			return err
		}
	}
	d.xd, d.wd, d.bias, d.out = xd, wd, bias, out
	parallelFor(d.batch*d.outChans, 2*d.kh*d.kw*d.oh*d.ow, d.body)
	d.xd, d.wd, d.bias, d.out = nil, nil, nil, nil
	return nil
}

// planes computes output planes p0…p1−1.
func (d *cvDW) planes(p0, p1 int) {
	ih, iw, oh, ow, kh, kw := d.ih, d.iw, d.oh, d.ow, d.kh, d.kw
	ph, pw, pih, piw, ld := d.ph, d.pw, d.pih, d.piw, d.ld
	mult, outChans, scratch := d.mult, d.outChans, d.scratch
	xd, wd, bias, out := d.xd, d.wd, d.bias, d.out
	split, rowTaps, taps, g := d.split, d.rowTaps, d.taps, d.g
	rest := d.ep // what the row loops leave of the epilogue
	if rowTaps && d.epRest != nil {
		rest = d.epRest
	}
	var plane []float32
	if scratch > 0 {
		buf := cvScratchBuf(scratch)
		defer cvScratchPool.put(buf)
		plane = (*buf)[:scratch]
		// The padding: every copy writes the same elements.
		clear(plane)
	}
	copied := -1
	// The input plane (image · chans + input channel), the output's
	// place in the multiplier, and the output channel.
	src, j, oc := p0/mult, p0%mult, p0%outChans
	for p := p0; p < p1; p++ {
		x := xd[src*ih*iw : (src+1)*ih*iw]
		if scratch > 0 {
			if src != copied {
				if split {
					cvSplitPadded(plane, x, ih, iw, pih, ld, ph, pw)
				} else {
					dwCopyRows(plane[ph*piw+pw:], x, ih, iw, piw)
				}
				copied = src
			}
			x = plane
		}
		var b float32
		if bias != nil {
			b = bias[oc]
		}
		y, w := out[p*oh*ow:(p+1)*oh*ow], wd[oc*kh*kw:(oc+1)*kh*kw]
		if rowTaps {
			dwRows(y, oh, ow, x, taps, w, b, d.clamp)
		} else {
			cvDepthwisePlane(y, x, piw, w, b, g)
		}
		rest.apply(y, p*oh*ow)
		if j++; j == mult {
			src, j = src+1, 0
		}
		if oc++; oc == outChans {
			oc = 0
		}
	}
}

// cvDepthwiseTaps returns g's kernel as dwTaps for a plane ld wide. With
// split, the plane is split by cvSplitPadded into
// rows rows of even columns, ld wide, then as many of odd ones: tap kx of
// output column o reads column 2·o + kx, which for even kx is even column
// o + kx/2 and for odd kx odd column o + (kx−1)/2, so every tap is
// contiguous along the output row in one of the two.
func cvDepthwiseTaps(g opsem.Window, ld, rows int, split bool) dwTaps {
	kh, kw := g.Kernel[0], g.Kernel[1]
	t := dwTaps{kh: kh, rs: g.Dilation[0] * ld, xs: g.Stride[0] * ld, weights: kh * kw}
	buf := make([]dwTap, 0, kh*kw)
	for kx := range kw {
		col := kx * g.Dilation[1]
		if split {
			col = kx/2 + kx%2*rows*ld
		}
		for ky := range kh {
			off := col + ky*t.rs
			buf = append(buf, dwTap{off, int32(ky*kw + kx)})
			t.hi = max(t.hi, off)
		}
	}
	t.taps = buf
	return t
}

// cvSplitPadded writes plane x (rows × width) into dst split into its
// even and odd columns, the plane padded with ph rows above and pw
// columns on the left, prows rows in all: prows rows of its even columns,
// half wide, then prows rows of its odd ones, as wide. Padded column
// pw + j is even column (pw+j)/2 or odd column (pw+j−1)/2. The padding in
// dst is left as it is.
func cvSplitPadded(dst, x []float32, rows, width, prows, half, ph, pw int) {
	even, odd := dst[:prows*half], dst[prows*half:2*prows*half]
	at := ph*half + pw/2
	if pw%2 == 0 {
		dwSplitRows(even[at:], odd[at:], x, rows, width, half, half, width)
	} else {
		// x's even columns are odd ones of the padded plane.
		dwSplitRows(odd[at:], even[at+1:], x, rows, width, half, half, width)
	}
}

// cvDepthwisePlane sets y (g.Out) to b plus x, a plane of rows iw wide
// holding every tap (padding included, so the origin is at g.PadBegin),
// convolved with the kernel w, at a stride along rows that dwRows does
// not take: 3×3 undilated kernels through cvDepthwise3x3, the rest
// starting each row at b and adding one tap at a time.
func cvDepthwisePlane(y, x []float32, iw int, w []float32, b float32, g opsem.Window) {
	ow := g.Out[1]
	kh, kw, sh, sw, dh, dw := g.Kernel[0], g.Kernel[1], g.Stride[0], g.Stride[1], g.Dilation[0], g.Dilation[1]
	if kh == 3 && kw == 3 && dh == 1 && dw == 1 {
		for oy := range g.Out[0] {
			cvDepthwise3x3(y[oy*ow:(oy+1)*ow], x[oy*sh*iw:], iw, (*[9]float32)(w), b, sw)
		}
		return
	}
	span := (ow-1)*sw + 1
	for oy := range g.Out[0] {
		row := y[oy*ow : (oy+1)*ow]
		for i := range row {
			row[i] = b
		}
		for ky := range kh {
			xrow := x[(oy*sh+ky*dh)*iw:]
			for kx, wv := range w[ky*kw : (ky+1)*kw] {
				src := xrow[kx*dw : kx*dw+span]
				for i := range row {
					row[i] += wv * src[i*sw]
				}
			}
		}
	}
}

// cvDepthwise3x3 sets y[o] = b + Σ w[3·ky+kx]·x[ky·iw + o·s + kx] over
// ky, kx < 3: a row of a 3×3 convolution at stride s whose taps all lie
// inside the input, x starting at output 0's top-left tap.
func cvDepthwise3x3(y, x []float32, iw int, w *[9]float32, b float32, s int) {
	if len(y) == 0 {
		return
	}
	span := (len(y)-1)*s + 3
	r0, r1, r2 := x[:span], x[iw:iw+span], x[2*iw:2*iw+span]
	w0, w1, w2, w3, w4, w5, w6, w7, w8 := w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
	i := 0
	for o := range y {
		a, c, e := r0[i:i+3:i+3], r1[i:i+3:i+3], r2[i:i+3:i+3]
		y[o] = b + (w0*a[0] + w1*a[1] + w2*a[2]) + (w3*c[0] + w4*c[1] + w5*c[2]) + (w6*e[0] + w7*e[1] + w8*e[2])
		i += s
	}
}

// dwTap is one tap of a depthwise kernel: the input off elements past
// its output's first input, times the kernel's weight w (an index into
// its plane).
type dwTap struct {
	off int
	w   int32
}

// dwTaps is a depthwise kernel as dwRows takes it: its taps column by
// column, tap c·kh + r of kernel row r reading the input r·rs elements
// past tap c·kh's; the inputs of output rows start xs apart. It comes
// from cvDepthwiseTaps: the loops trust that no offset is negative or
// above hi, and no weight index reaches weights.
type dwTaps struct {
	taps    []dwTap
	kh      int // kernel rows
	rs, xs  int
	hi      int // the largest tap offset
	weights int // the kernel's weights: every tap's w is below it
}

// dwLoop is the depthwise loops of one vecLevel (dwLoopsOn), each with
// its Go twin's contract for rows, n and taps of at least one, and
// checking no bounds: dwRows, dwSplitRows and dwCopyRows do.
type dwLoop struct {
	rows func(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32)
	// shared, where the level has it, is rows for kernels kh high (3, 5
	// or 7 at s = 1; 3 or 5 at s = 2) whose output rows are s input rows
	// apart: xs = s·rs, and taps as dwTaps lists them. It reads up to 7·xs
	// elements of x past the last input (dwOverrun).
	shared func(y []float32, rows, n int, x []float32, rs, s, kh int, taps []dwTap, w []float32, b, lo, hi float32)
	split  func(even, odd, x []float32, rows, width, lde, ldo, ldx int)
	copy   func(dst, x []float32, rows, width, ld int)
}

// dwGoLoop is the Go twins: the depthwise loops of vecGo.
var dwGoLoop = dwLoop{dwRowsGo, nil, dwSplitRowsGo, dwCopyRowsGo}

// dw is the depthwise loops in use: dwBest's. Only tests change it, to
// check each level.
var dw = dwLoopsOn(dwBest)

// dwShared returns the input rows s between output rows at which dw's
// shared loop runs a kernel kh high with rows rs and output rows xs
// elements apart, or 0 where dwRows runs dw.rows.
func dwShared(kh, rs, xs int) int {
	if dw.shared == nil || rs <= 0 {
		return 0
	}
	switch {
	case xs == rs && (kh == 3 || kh == 5 || kh == 7):
		return 1
	case xs == 2*rs && (kh == 3 || kh == 5):
		return 2
	}
	return 0
}

// dwOverrun returns the elements past the last input that dwRows reads
// for a kernel kh high with rows rs and output rows xs elements apart:
// with dw's shared loop, the input of the up to 7 output rows that a last
// group of eight computes and drops.
func dwOverrun(kh, rs, xs int) int {
	if dwShared(kh, rs, xs) == 0 {
		return 0
	}
	return 7 * xs
}

// dwRows is dwRowsGo with the taps t, in dw's loops. Where dw's shared
// loop runs t (dwShared), x runs dwOverrun elements past the last input.
func dwRows(y []float32, rows, n int, x []float32, t dwTaps, w []float32, b float32, c dwClamp) {
	if rows <= 0 || n <= 0 || len(t.taps) == 0 {
		dwRowsGo(y, rows, n, x, t.xs, t.taps, w, b, c.lo, c.hi)
		return
	}
	y, w = y[:rows*n], w[:t.weights]
	if s := dwShared(t.kh, t.rs, t.xs); s > 0 {
		last := (rows-1)/8*8 + 7 // the last output row of the last group of eight
		dw.shared(y, rows, n, x[:last*t.xs+t.hi+n], t.rs, s, t.kh, t.taps, w, b, c.lo, c.hi)
		return
	}
	dw.rows(y, rows, n, x[:(rows-1)*t.xs+t.hi+n], t.xs, t.taps, w, b, c.lo, c.hi)
}

// dwClamp is the bounds the depthwise loops clamp their outputs to as they
// store them (clamps' semantics: NaN kept); dwNoClamp leaves them alone.
type dwClamp struct{ lo, hi float32 }

var dwNoClamp = dwClamp{float32(math.Inf(-1)), float32(math.Inf(1))}

// dwSplitRows is dwSplitRowsGo in dw's loops.
func dwSplitRows(even, odd, x []float32, rows, width, lde, ldo, ldx int) {
	if rows <= 0 || width <= 0 {
		return
	}
	even = even[:(rows-1)*lde+(width+1)/2]
	odd = odd[:(rows-1)*ldo+width/2]
	dw.split(even, odd, x[:(rows-1)*ldx+width], rows, width, lde, ldo, ldx)
}

// dwCopyRows is dwCopyRowsGo in dw's loops.
func dwCopyRows(dst, x []float32, rows, width, ld int) {
	if rows <= 0 || width <= 0 {
		return
	}
	dw.copy(dst[:(rows-1)*ld+width], x[:rows*width], rows, width, ld)
}

// dwRowsGo sets y[j·n + i], for j < rows and i < n, to b + Σ_k
// w[taps[k].w]·x[j·xs + taps[k].off + i], adding the taps in order:
// output rows n wide whose inputs start xs apart. The vector loops add
// each product with one rounding (a fused multiply-add); Go rounds the
// product first, except where the compiler fuses the two (arm64; amd64
// with GOAMD64=v3). Each output is then clamped to [lo, hi] (as clamps
// does: NaN kept).
func dwRowsGo(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b, lo, hi float32) {
	for j := range rows {
		yr := y[j*n : (j+1)*n]
		for i := range yr {
			yr[i] = b
		}
		for _, t := range taps {
			wv := w[t.w]
			for i, v := range x[j*xs+t.off : j*xs+t.off+n] {
				yr[i] += wv * v
			}
		}
		clampsGo(yr, lo, hi)
	}
}

// dwSplitRowsGo writes the even and odd columns of x's rows (rows of
// width, ldx apart) to rows lde and ldo apart: even[r·lde + j] =
// x[r·ldx + 2j] for j < ⌈width/2⌉, odd[r·ldo + j] = x[r·ldx + 2j + 1]
// for j < ⌊width/2⌋.
func dwSplitRowsGo(even, odd, x []float32, rows, width, lde, ldo, ldx int) {
	we, wo := (width+1)/2, width/2
	for r := range rows {
		row := x[r*ldx : r*ldx+width]
		ev, od := even[r*lde:r*lde+we], odd[r*ldo:r*ldo+wo]
		for j := range od {
			ev[j], od[j] = row[2*j], row[2*j+1]
		}
		if we > wo {
			ev[we-1] = row[width-1]
		}
	}
}

// dwCopyRowsGo copies the rows of x, rows × width, to rows of dst ld
// apart: dst[r·ld + j] = x[r·width + j].
func dwCopyRowsGo(dst, x []float32, rows, width, ld int) {
	for r := range rows {
		copy(dst[r*ld:r*ld+width], x[r*width:(r+1)*width])
	}
}

// maxIntoGo is maxInto in Go.
func maxIntoGo(acc, x []float32) {
	for i, v := range x[:len(acc)] {
		if v > acc[i] {
			acc[i] = v
		}
	}
}

// ConvTranspose is the adjoint of Conv: per image and group, W's block
// (C/group × M/group·∏kernel) transposed times the input
// (C/group × ∏in) gives a column matrix that col2im scatters into the
// output, where input position i and tap t land at i·stride − pad +
// t·dilation. The output size and the pads are opsem.TransposedWindow's.
func cvConvTranspose(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	w, wd, err := requiredFloatArg(n, in, 1, "W")
	if err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*cvTransposePlan, error) { return newCvTransposePlan(n, x, w) })
	if err != nil {
		return nil, err
	}
	bias, err := cvBias(n, in, p.outChans)
	if err != nil {
		return nil, err
	}
	out, err := limit.Make[float32](n.Run, p.shape...)
	if err != nil {
		return nil, err
	}
	if cvBiasOnly(xd, wd, bias, out, p.batch, nil) {
		return opsem.Single(n, p.shape, out)
	}
	// The columns per unit, and the phases' scratch per thread.
	if err := cvClaimScratch(n.Run, p.batch*p.group, 1, p.rows*p.isp); err != nil {
		return nil, err
	}
	if err := cvClaimScratch(n.Run, runtime.GOMAXPROCS(0), 1, p.phases); err != nil {
		return nil, err
	}
	packs, _ := n.Prepared.(nnPackedSet)
	p.xd, p.wd, p.bias, p.out, p.packs = xd, wd, bias, out, packs
	eachUnit(p.batch*p.group, 2*p.rows*p.cg*p.isp, p.body)
	p.xd, p.wd, p.bias, p.out, p.packs = nil, nil, nil, nil, nil
	return opsem.Single(n, p.shape, out)
}

// cvTransposePlan is what a ConvTranspose keeps from run to run
// (opsem.Plan): its geometry for the shapes of X and W, the output's
// shape, and the loop over its products bound once, so that a run with
// the shapes of the run before allocates nothing but its output. The
// operands of the run in progress are set by each run.
type cvTransposePlan struct {
	batch, chans, outChans, group int
	mg, cg, isp, osp, rows        int
	shape                         []int
	taps                          cvTaps
	phases                        int // cvScatterPhases2's scratch, in floats: 2-D at column stride 2; else 0
	body                          func(lo, hi, threads int)
	scatterFn                     func(lo, hi int) // scatterPhases, bound once
	scCol, scY, scBias            []float32        // the unit's, for scatterPhases

	xd, wd, bias, out []float32   // the run's
	packs             nnPackedSet // W packed per group at compile time, or nil
}

func newCvTransposePlan(n opsem.Node, x, w inference.Tensor) (*cvTransposePlan, error) {
	xs, ws := x.Shape(), w.Shape()
	group, kernel, err := opsem.ConvOperands(n, xs, ws, true)
	if err != nil {
		return nil, err
	}
	g, err := opsem.TransposedWindow(n, xs[2:], kernel)
	if err != nil {
		return nil, err
	}
	p := &cvTransposePlan{batch: xs[0], chans: xs[1], mg: ws[1], group: group}
	p.outChans = p.mg * group
	p.shape = append([]int{p.batch, p.outChans}, g.Out...)
	p.cg = p.chans / group
	p.isp, p.osp, p.rows = opsem.Count(g.In), opsem.Count(g.Out), p.mg*opsem.Count(kernel)
	p.taps = cvTaps{cols: g.In, img: g.Out, kernel: kernel, stride: g.Stride, dilation: g.Dilation, pad: g.PadBegin}
	if len(g.Out) == 2 && g.Stride[1] == 2 {
		p.phases = g.Out[0] * 2 * ((g.Out[1] + 1) / 2)
	}
	p.body = p.products
	p.scatterFn = p.scatterPhases
	return p, nil
}

// scatterPhases scatters output channels lo…hi−1 of the unit that runs
// alone with threads (scCol, scY, scBias) through their column phases
// (cvScatterPhases2), with scratch of its own.
func (p *cvTransposePlan) scatterPhases(lo, hi int) {
	p.scatterChannels(p.scCol, p.scY, p.scBias, lo, hi)
}

// scatterChannels scatters output channels lo…hi−1 of a unit's columns
// col into its output y with its bias (nil: none) through their column
// phases (cvScatterPhases2), with scratch of its own.
func (p *cvTransposePlan) scatterChannels(col, y, bias []float32, lo, hi int) {
	pb := cvScratchBuf(p.phases)
	defer cvScratchPool.put(pb)
	rows := p.rows / p.mg // a channel's rows of col: its taps
	if bias != nil {
		bias = bias[lo:hi]
	}
	cvScatterPhases2(col[lo*rows*p.isp:hi*rows*p.isp], hi-lo, p.taps, y[lo*p.osp:hi*p.osp], bias, (*pb)[:p.phases])
}

// products runs the products of units lo…hi−1 (image, group), each on
// threads: W's block transposed times the image's channels of the group
// gives columns that col2im scatters into the output, then the bias.
func (p *cvTransposePlan) products(lo, hi, threads int) {
	buf := cvScratchBuf(p.rows * p.isp)
	defer cvScratchPool.put(buf)
	col := (*buf)[:p.rows*p.isp]
	for u := lo; u < hi; u++ {
		img, grp := u/p.group, u%p.group
		src := p.xd[(img*p.chans+grp*p.cg)*p.isp:]
		w := p.wd[grp*p.cg*p.rows:]
		nnSgemmPre(threads, nnPrepacked{a: p.packs.of(grp, w)}, nnBlocks{}, true, false, p.rows, p.isp, p.cg, 1, w, p.rows, src, p.isp, 0, col, p.isp)
		y := p.out[(img*p.outChans+grp*p.mg)*p.osp : (img*p.outChans+(grp+1)*p.mg)*p.osp]
		var bias []float32
		if p.bias != nil {
			bias = p.bias[grp*p.mg : (grp+1)*p.mg]
		}
		switch {
		case p.phases > 0 && threads > 1:
			// The unit runs alone (eachUnit), with threads: its output
			// channels in parallel, each scattered on its own.
			p.scCol, p.scY, p.scBias = col, y, bias
			parallelFor(p.mg, 2*p.rows/p.mg*p.isp, p.scatterFn)
			p.scCol, p.scY, p.scBias = nil, nil, nil
			continue
		case p.phases > 0:
			p.scatterChannels(col, y, bias, 0, p.mg)
			continue
		case len(p.taps.cols) == 2:
			cvScatterColumns2D(col, p.mg, p.taps, y)
		default:
			cvScatterColumns(col, p.mg, p.taps, y)
		}
		if bias != nil {
			cvAddBias(y, bias, p.osp)
		}
	}
}

// cvCol2Im implements Col2Im-18: input [N, C·∏block, L] holds, for each of
// the L block positions (in row-major order over the positions the
// strides allow), C·∏block values; each is added into the output
// [N, C, image…] at position·stride − pad_begin + offset·dilation.
func cvCol2Im(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, xd, err := requiredFloatArg(n, in, 0, "input")
	if err != nil {
		return nil, err
	}
	var shapes [2][]int64
	for i, name := range []string{"image_shape", "block_shape"} {
		t, err := requiredArg(in, i+1, name)
		if err != nil {
			return nil, err
		}
		if shapes[i], err = opsem.Int64s(t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	image, block := shapes[0], shapes[1]
	k := len(image)
	if k == 0 || len(block) != k {
		return nil, fmt.Errorf("image_shape %v and block_shape %v must have the same, nonzero length: %w", image, block, inference.ErrShape)
	}
	dilations := n.Ints("dilations", nil)
	strides := n.Ints("strides", nil)
	pads := n.Ints("pads", nil)
	if dilations == nil {
		dilations = slices.Repeat([]int64{1}, k)
	}
	if strides == nil {
		strides = slices.Repeat([]int64{1}, k)
	}
	if pads == nil {
		pads = make([]int64, 2*k)
	}
	if len(dilations) != k || len(strides) != k || len(pads) != 2*k {
		return nil, fmt.Errorf("dilations %v, strides %v, pads %v do not fit %d spatial axes: %w", dilations, strides, pads, k, inference.ErrShape)
	}
	x := in[0]
	xs := x.Shape()
	if len(xs) != 3 {
		return nil, fmt.Errorf("input is %v, want rank 3 [N, C·∏block_shape, L]: %w", x, inference.ErrShape)
	}
	imgDims, blkDims, cols := make([]int, k), make([]int, k), make([]int, k)
	for d := range k {
		if image[d] < 0 || image[d] > math.MaxInt32 || block[d] < 1 || block[d] > math.MaxInt32 ||
			dilations[d] < 1 || dilations[d] > math.MaxInt32 || strides[d] < 1 || strides[d] > math.MaxInt32 ||
			pads[d] < 0 || pads[d] > math.MaxInt32 || pads[k+d] < 0 || pads[k+d] > math.MaxInt32 {
			return nil, fmt.Errorf("axis %d: image %d, block %d, dilation %d, stride %d, pads %d, %d out of range: %w",
				d, image[d], block[d], dilations[d], strides[d], pads[d], pads[k+d], inference.ErrShape)
		}
		imgDims[d], blkDims[d] = int(image[d]), int(block[d])
		span := dilations[d]*(block[d]-1) + 1
		c := (image[d]+pads[d]+pads[k+d]-span)/strides[d] + 1
		if image[d]+pads[d]+pads[k+d] < span || c < 1 {
			return nil, fmt.Errorf("axis %d: a block spans %d, more than the padded image's %d: %w", d, span, image[d]+pads[d]+pads[k+d], inference.ErrShape)
		}
		cols[d] = int(c)
	}
	blockSize, err := inference.NumElements(blkDims)
	if err != nil {
		return nil, fmt.Errorf("block_shape %v: %w", block, err)
	}
	blocks, err := inference.NumElements(cols)
	if err != nil {
		return nil, fmt.Errorf("blocks %v: %w", cols, err)
	}
	if xs[1]%blockSize != 0 {
		return nil, fmt.Errorf("input is %v: dimension 1 is not a multiple of the block size %d: %w", x, blockSize, inference.ErrShape)
	}
	if xs[2] != blocks {
		return nil, fmt.Errorf("input is %v: dimension 2 is %d, want %d blocks %v: %w", x, xs[2], blocks, cols, inference.ErrShape)
	}
	channels := xs[1] / blockSize
	outShape := append([]int{xs[0], channels}, imgDims...)
	yd, err := limit.Make[float32](n.Run, outShape...)
	if err != nil {
		return nil, err
	}
	y, err := inference.New(outShape, yd)
	if err != nil {
		return nil, err
	}
	if len(yd) == 0 {
		return []inference.Tensor{y}, nil
	}
	imgSize, _ := inference.NumElements(imgDims)
	imgStrides := opsem.Strides(imgDims)
	blkStrides := opsem.Strides(blkDims)
	colStrides := opsem.Strides(cols)
	// target[o·blocks + l] is the image offset block offset o at block l
	// adds into, or −1 where that lies in the padding.
	target, err := limit.Make[int](n.Run, blockSize, blocks)
	if err != nil {
		return nil, err
	}
	for o := range blockSize {
		for l := range blocks {
			off := 0
			for d := range k {
				pos := int64(l/colStrides[d]%cols[d])*strides[d] - pads[d] + int64(o/blkStrides[d]%blkDims[d])*dilations[d]
				if pos < 0 || pos >= image[d] {
					off = -1
					break
				}
				off += int(pos) * imgStrides[d]
			}
			target[o*blocks+l] = off
		}
	}
	for b := range xs[0] {
		for c := range channels {
			img := yd[(b*channels+c)*imgSize : (b*channels+c+1)*imgSize]
			col := xd[(b*channels+c)*blockSize*blocks : (b*channels+c+1)*blockSize*blocks]
			for i, off := range target {
				if off >= 0 {
					img[off] += col[i]
				}
			}
		}
	}
	return []inference.Tensor{y}, nil
}

package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Pooling operators: MaxPool, AveragePool, LpPool, GlobalAveragePool,
// GlobalMaxPool and MaxUnpool. Tensors are NCHW: [batch, channels,
// spatial...]; the window geometry is opsem's (PoolWindow).

func init() {
	register("MaxPool", plMaxPool)
	register("AveragePool", plAveragePool)
	register("LpPool", plLpPool)
	register("GlobalAveragePool", plGlobalAveragePool)
	register("GlobalMaxPool", plGlobalMaxPool)
	register("MaxUnpool", plMaxUnpool)
}

// plPoolKind selects what a pooling window computes.
type plPoolKind uint8

const (
	plMaxKind plPoolKind = iota
	plAvgKind
	plLpKind
)

// plPoolTaps lists, for one spatial dimension, the input indices each
// output position's window reads (padding left out), and how many window
// taps lie inside the padded extent [−padBegin, in+padEnd).
type plPoolTaps struct {
	start []int // taps of output o are idx[start[o]:start[o+1]]
	idx   []int
	inPad []int
}

// plPoolTapsOf lists dimension d's taps: at most min(Kernel[d], In[d]) per
// output position, found without visiting the taps in the padding (the
// kernel can be far larger than the input). The tables are a plan's, kept
// from run to run: their sizes are claimed under r (sizes, for
// plPoolPlan.claimTaps to claim again on later runs), and the memory is
// Go's, not the run's pool.
func plPoolTapsOf(r *limit.Run, g opsem.Window, d int, sizes *[]int) (plPoolTaps, error) {
	out, kernel, dil := g.Out[d], g.Kernel[d], g.Dilation[d]
	// Tap k of window o reads index first(o) + k·dil: it lies in the input
	// for k in [lo, hi), and in the padded extent for k < padHi.
	first := func(o int) int { return o*g.Stride[d] - g.PadBegin[d] }
	taps := func(o int) (lo, hi, padHi int) {
		upTo := func(end int) int { return min(kernel, max(0, (end-first(o)+dil-1)/dil)) }
		return upTo(0), upTo(g.In[d]), upTo(g.In[d] + g.PadEnd[d])
	}
	table := func(size int) ([]int, error) {
		if _, err := limit.Claim[int](r, size); err != nil {
			return nil, err
		}
		*sizes = append(*sizes, size)
		return make([]int, size), nil
	}
	var t plPoolTaps
	var err error
	if t.start, err = table(out + 1); err != nil {
		return t, err
	}
	if t.inPad, err = table(out); err != nil {
		return t, err
	}
	for o := range out {
		lo, hi, padHi := taps(o)
		t.start[o+1] = t.start[o] + max(0, hi-lo)
		t.inPad[o] = padHi
	}
	if t.idx, err = table(t.start[out]); err != nil {
		return t, err
	}
	for o := range out {
		lo, hi, _ := taps(o)
		for k := lo; k < hi; k++ {
			t.idx[t.start[o]+k-lo] = first(o) + k*dil
		}
	}
	return t, nil
}

// plPoolChunk bounds the window offsets plPool gathers at a time.
const plPoolChunk = 1 << 14

// plPoolPlan is what plPool keeps from one run of its node to the next
// (opsem.Plan): the geometry of X's shape, the output shape, the taps, the
// loop bodies bound once (a closure made per run would allocate), and
// scratch for the chunks of those loops. The operands of the run in
// progress (x, out, indices) are set by each run before its loop.
type plPoolPlan struct {
	kind                              plPoolKind
	g                                 opsem.Window
	shape                             []int // [N, C, out…]
	r                                 int   // spatial dimensions
	includePad, colMajor, wantIndices bool
	p                                 float64 // LpPool's
	planes, isp, osp                  int
	rowStrides, idxStrides            []int
	window, chunk                     int          // most taps of a window inside the input; output positions per chunk
	fast                              bool         // a 2-D row path runs it: maxPool2D, maxPoolFlat, avgPool2D
	taps                              []plPoolTaps // nil until the run that first needs them
	tapSizes                          []int        // the tables' sizes, claimed by every run
	perm                              []int32      // maxPoolNarrow's column taps, when it runs the plan
	body                              func(lo, hi int)
	scratch                           plScratches[plPoolScratch]
	scratchSize                       []int // [workers, elements]: what scratch holds at most, claimed by every run

	// The operands of the run in progress.
	xd, out []float32
	indices []int64
}

// plPoolScratch is one chunk's scratch in plPool's loop: the window
// offsets it gathers, and maxPool2D's split columns.
type plPoolScratch struct {
	offs, idxOffs, cur, curIdx, next, nextIdx, starts, padCounts, pos []int
	columns                                                           []float32
}

// plScratches hands each chunk of a plan's parallel loop scratch of its
// own, and takes it back for the next chunk or run: the chunks that run at
// once never outnumber the goroutines, so after the first runs none is
// made.
type plScratches[T any] struct {
	mu   sync.Mutex
	free []*T
}

func (s *plScratches[T]) get() *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) == 0 {
		return new(T)
	}
	t := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return t
}

func (s *plScratches[T]) put(t *T) {
	s.mu.Lock()
	s.free = append(s.free, t)
	s.mu.Unlock()
}

// newPlPoolPlan plans plPool over x: everything that depends on X's shape
// and the node's attributes but the taps, which plPool makes once the
// output is allocated.
func newPlPoolPlan(n opsem.Node, x inference.Tensor, kind plPoolKind) (*plPoolPlan, error) {
	xs := x.Shape()
	g, err := opsem.PoolWindow(n, xs)
	if err != nil {
		return nil, err
	}
	p := &plPoolPlan{kind: kind, g: g, r: len(xs) - 2}
	p.includePad, p.colMajor = opsem.PoolOptions(n)
	if kind == plLpKind {
		if p.p, err = opsem.PoolP(n); err != nil {
			return nil, err
		}
	}
	p.wantIndices = kind == plMaxKind && wantsOutput(n, 1)
	p.shape = append([]int{xs[0], xs[1]}, g.Out...)
	// Counted from the output: without output elements the spatial
	// dimensions may not count within int, nor the positions fit a table.
	if limit.Count(p.shape...) > 0 {
		p.planes = xs[0] * xs[1]
		p.isp, p.osp = x.Len()/p.planes, limit.Count(g.Out...)
	}
	r := p.r
	p.rowStrides = opsem.Strides(g.In)
	p.idxStrides = p.rowStrides
	if p.colMajor {
		p.idxStrides = make([]int, r)
		acc := 1
		for d := range r {
			p.idxStrides[d] = acc
			acc *= g.In[d]
		}
	}
	p.fast = kind == plMaxKind && !p.wantIndices && r == 2 && g.Dilation[0] == 1 && g.Dilation[1] == 1 && g.Stride[1] <= 2 && p.osp > 0
	// Each worker of the loop over the planes holds its scratch.
	workers := min(p.planes, runtime.GOMAXPROCS(0))
	if kind == plAvgKind && plHalves(g) && p.osp > 0 {
		p.fast = true
		p.body = p.avgPoolHalves
		// Each output row's sum over its two input rows, then their
		// even and odd columns.
		p.scratchSize = []int{workers, g.Out[0]*g.In[1] + 2*g.Out[0]*g.Out[1]}
		return p, nil
	}
	if kind == plAvgKind && r == 2 && g.Dilation[0] == 1 && g.Dilation[1] == 1 && g.Stride[1] <= 2 && p.osp > 0 {
		p.fast = true
		p.body = p.avgPool2D
		// A row's sum over the window's rows, padded with zeros, then
		// the divisors of an output row.
		p.scratchSize = []int{workers, plPaddedRow(g) + g.Out[1]}
		return p, nil
	}
	if kind == plMaxKind && !p.wantIndices && r == 2 && p.osp > 0 && p.isp > 0 && g.In[1] <= plNarrowIn && g.Out[1] <= plNarrowOut &&
		g.Kernel[1] >= 1 && g.Kernel[1] <= plNarrowKernel && maxPoolNarrowRuns() {
		p.fast, p.body, p.perm = true, p.maxPoolNarrowPlanes, plNarrowPerm(g)
		return p, nil
	}
	if p.fast && g.Stride[0] == 1 && g.Stride[1] == 1 && g.Out[1] == g.In[1] {
		p.body = p.maxPoolFlat
		// The plane's maximum over each output row's input rows.
		p.scratchSize = []int{workers, g.Out[0] * g.In[1]}
		return p, nil
	}
	if p.fast {
		p.body = p.maxPool2D
		// A row's maximum over the window's rows, padded with −Inf.
		p.scratchSize = []int{workers, plPaddedRow(g)}
		return p, nil
	}
	p.window = 1
	for d := range r {
		p.window *= min(g.Kernel[d], g.In[d])
	}
	p.chunk = max(1, plPoolChunk/max(1, p.window))
	p.body = p.windows
	if p.osp > 0 {
		// In ints: a chunk's window offsets (twice with indices), and
		// starts and pad counts; a window's offsets, twice over, as it
		// is built (cur, next and their indices).
		positions := min(p.osp, p.chunk)
		offsets := positions * p.window
		if p.wantIndices {
			offsets *= 2
		}
		p.scratchSize = []int{workers, offsets + 2*positions + 1 + 4*p.window}
	}
	return p, nil
}

// claimTaps makes the taps of every spatial dimension on the plan's first
// run with output elements, and on later runs claims their sizes again, as
// a run that made them would; and it claims the loop's scratch.
func (p *plPoolPlan) claimTaps(run *limit.Run) error {
	if err := p.claimScratch(run); err != nil {
		return err
	}
	if p.taps == nil {
		taps := make([]plPoolTaps, p.r)
		var sizes []int
		for d := range p.r {
			var err error
			if taps[d], err = plPoolTapsOf(run, p.g, d, &sizes); err != nil {
				return err
			}
		}
		p.taps, p.tapSizes = taps, sizes
		return nil
	}
	for i := range p.tapSizes {
		if _, err := limit.Claim[int](run, p.tapSizes[i:i+1]...); err != nil {
			return err
		}
	}
	return nil
}

// claimScratch claims the scratch the loop's workers hold: floats on
// maxPool2D's path, ints on the other.
func (p *plPoolPlan) claimScratch(run *limit.Run) error {
	if p.scratchSize == nil {
		return nil
	}
	var err error
	if p.fast {
		_, err = limit.Claim[float32](run, p.scratchSize...)
	} else {
		_, err = limit.Claim[int](run, p.scratchSize...)
	}
	return err
}

// plPool runs MaxPool, AveragePool and LpPool over x [N, C, spatial...].
// For each output position it gathers the window's offsets into the input
// plane (and, for MaxPool's Indices, the same elements' offsets in the
// storage order asked for) and reduces over them.
func plPool(n opsem.Node, in []inference.Tensor, kind plPoolKind) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*plPoolPlan, error) { return newPlPoolPlan(n, x, kind) })
	if err != nil {
		return nil, err
	}
	out, err := limit.MakeOverwritten[float32](n.Run, p.shape...) // every window writes its element
	if err != nil {
		return nil, err
	}
	var indices []int64
	if p.wantIndices {
		if indices, err = limit.Make[int64](n.Run, p.shape...); err != nil {
			return nil, err
		}
	}
	if len(out) > 0 {
		if err := p.claimTaps(n.Run); err != nil {
			return nil, err
		}
	}
	p.xd, p.out, p.indices = xd, out, indices
	switch {
	case p.fast:
		parallelFor(p.planes, p.osp*p.g.Kernel[0]*p.g.Kernel[1], p.body)
	default:
		parallelFor(p.planes, p.osp*p.window, p.body)
	}
	p.xd, p.out, p.indices = nil, nil, nil // the plan outlives them
	y, err := opsem.Output(n, 0, p.shape, out)
	if err != nil {
		return nil, err
	}
	if !p.wantIndices {
		res := n.Results(1)
		res[0] = y // without a Memo, Results is a new slice
		return res, nil
	}
	idx, err := opsem.Output(n, 1, p.shape, indices)
	if err != nil {
		return nil, err
	}
	res := n.Results(2)
	res[0], res[1] = y, idx
	return res, nil
}

// windows is plPool's loop over the planes lo…hi−1. Output positions go in
// chunks: the chunk's window offsets are gathered once, then every plane
// reduces over them.
func (p *plPoolPlan) windows(lo, hi int) {
	sc := p.scratch.get()
	defer p.scratch.put(sc)
	r, g, taps, kind, wantIndices := p.r, p.g, p.taps, p.kind, p.wantIndices
	xd, out, indices, isp, osp, chunk := p.xd, p.out, p.indices, p.isp, p.osp, p.chunk
	// The scratch slices grow by append as the loop first needs them, and
	// go back to sc for the next chunk or run.
	offs, idxOffs, cur, curIdx, next, nextIdx := sc.offs, sc.idxOffs, sc.cur, sc.curIdx, sc.next, sc.nextIdx
	starts, padCounts, pos := sc.starts[:0], sc.padCounts[:0], sc.pos
	if cap(pos) < r {
		pos = make([]int, r)
	}
	pos = pos[:r]
	clear(pos)
	for o0 := 0; o0 < osp; o0 += chunk {
		o1 := min(osp, o0+chunk)
		offs, idxOffs = offs[:0], idxOffs[:0]
		starts, padCounts = starts[:0], padCounts[:0]
		for range o1 - o0 {
			// The window's offsets, in row-major order: the product
			// over dimensions of each dimension's taps.
			cur, curIdx = append(cur[:0], 0), append(curIdx[:0], 0)
			padCount := 1
			for d := range r {
				td := taps[d].idx[taps[d].start[pos[d]]:taps[d].start[pos[d]+1]]
				padCount *= taps[d].inPad[pos[d]]
				next, nextIdx = next[:0], nextIdx[:0]
				for j := range cur {
					for _, i := range td {
						next = append(next, cur[j]+i*p.rowStrides[d])
						nextIdx = append(nextIdx, curIdx[j]+i*p.idxStrides[d])
					}
				}
				cur, next = next, cur
				curIdx, nextIdx = nextIdx, curIdx
			}
			starts = append(starts, len(offs))
			padCounts = append(padCounts, padCount)
			offs = append(offs, cur...)
			if wantIndices {
				idxOffs = append(idxOffs, curIdx...)
			}
			for d := r - 1; d >= 0; d-- {
				if pos[d]++; pos[d] < g.Out[d] {
					break
				}
				pos[d] = 0
			}
		}
		starts = append(starts, len(offs))
		for pl := lo; pl < hi; pl++ {
			plane := xd[pl*isp : (pl+1)*isp]
			y := out[pl*osp+o0 : pl*osp+o1]
			switch {
			case kind == plMaxKind && !wantIndices:
				for o := range y {
					best := float32(math.Inf(-1))
					for _, off := range offs[starts[o]:starts[o+1]] {
						if v := plane[off]; v > best {
							best = v
						}
					}
					y[o] = best
				}
			case kind == plMaxKind:
				for o := range y {
					best, at := float32(math.Inf(-1)), -1
					for j, off := range offs[starts[o]:starts[o+1]] {
						if v := plane[off]; v > best || at < 0 {
							best, at = v, j
						}
					}
					y[o] = best
					if at >= 0 {
						indices[pl*osp+o0+o] = int64(pl*isp + idxOffs[starts[o]+at])
					}
				}
			case kind == plAvgKind:
				for o := range y {
					win := offs[starts[o]:starts[o+1]]
					var s float32
					for _, off := range win {
						s += plane[off]
					}
					count := len(win)
					if p.includePad {
						count = padCounts[o]
					}
					y[o] = s / float32(count)
				}
			default:
				for o := range y {
					var s float64
					for _, off := range offs[starts[o]:starts[o+1]] {
						s += math.Pow(math.Abs(float64(plane[off])), p.p)
					}
					y[o] = float32(math.Pow(s, 1/p.p))
				}
			}
		}
	}
	sc.offs, sc.idxOffs, sc.cur, sc.curIdx, sc.next, sc.nextIdx = offs, idxOffs, cur, curIdx, next, nextIdx
	sc.starts, sc.padCounts, sc.pos = starts, padCounts, pos
}

// maxPool2D is MaxPool over the 2-D planes lo…hi−1, without indices or
// dilation and with a column stride of 1 or 2, an output row at a time.
// The maximum is separable: first over the input rows the row's windows
// read (the row taps), one vector pass over them (maxRows), into the
// middle of a row that holds −Inf for the padding on both sides; then
// along that row, each output the maximum of its window's kw columns
// (maxCols), a vector pass that reads every tap (in the padding −Inf,
// which is what skipping it gives). NaN is skipped throughout, as the
// general path skips it.
func (p *plPoolPlan) maxPool2D(lo, hi int) {
	g, rows, xd, out := p.g, p.taps[0], p.xd, p.out
	ih, iw, oh, ow := g.In[0], g.In[1], g.Out[0], g.Out[1]
	kw, sw, pw := g.Kernel[1], g.Stride[1], g.PadBegin[1]
	isp, osp := ih*iw, oh*ow
	sc := p.scratch.get()
	defer p.scratch.put(sc)
	n := plPaddedRow(g)
	if cap(sc.columns) < n {
		sc.columns = make([]float32, n)
		fill(sc.columns, float32(math.Inf(-1))) // the padding, never written
	}
	row := sc.columns[:n]
	for pl := lo; pl < hi; pl++ {
		plane := xd[pl*isp : (pl+1)*isp]
		for oy := range oh {
			maxRows(row[pw:pw+iw], plane, rows.idx[rows.start[oy]:rows.start[oy+1]], iw)
			maxCols(out[pl*osp+oy*ow:pl*osp+(oy+1)*ow], row, kw, sw)
		}
	}
}

// maxPoolFlat is maxPool2D where the strides are 1 and the output rows
// are as long as the input's (a "same" pool: GoogLeNet's 3×3 branches,
// the 5×5 to 13×13 pools of YOLO's spatial pyramids), over whole planes
// rather than rows: row oy of V, the maximum over the rows of oy's
// windows, is input rows oy − ph + ky for each row tap ky, which over all
// oy is one contiguous pass per ky (maxInto) over the plane; then the
// output is V shifted by each column tap kx − pw, again one pass per tap
// over the plane, except where a window reaches past its row's ends,
// where the pass read the next or the previous row: those kw − 1 columns
// of each row are computed again from their row alone. V holds no NaN
// (maxInto skips it), so the first column tap copies.
func (p *plPoolPlan) maxPoolFlat(lo, hi int) {
	g, xd, out := p.g, p.xd, p.out
	ih, w, oh := g.In[0], g.In[1], g.Out[0]
	kh, kw, ph, pw := g.Kernel[0], g.Kernel[1], g.PadBegin[0], g.PadBegin[1]
	isp, osp := ih*w, oh*w
	sc := p.scratch.get()
	defer p.scratch.put(sc)
	if cap(sc.columns) < osp {
		sc.columns = make([]float32, osp)
	}
	v := sc.columns[:osp]
	inf := float32(math.Inf(-1))
	for pl := lo; pl < hi; pl++ {
		plane, o := xd[pl*isp:(pl+1)*isp], out[pl*osp:(pl+1)*osp]
		fill(v, inf)
		for ky := range kh {
			// Output rows oy read input row oy − ph + ky where it lies
			// in the input.
			yLo, yHi := max(0, ph-ky), min(oh, ih+ph-ky)
			if yLo < yHi {
				maxInto(v[yLo*w:yHi*w], plane[(yLo-ph+ky)*w:])
			}
		}
		first := true
		for kx := range kw {
			d := kx - pw // output i reads v[i+d]
			iLo, iHi := max(0, -d), min(osp, osp-d)
			if iLo >= iHi {
				continue
			}
			if first {
				fill(o[:iLo], inf)
				copy(o[iLo:iHi], v[iLo+d:])
				fill(o[iHi:], inf)
				first = false
				continue
			}
			maxInto(o[iLo:iHi], v[iLo+d:])
		}
		if first {
			fill(o, inf) // every column tap in the padding
		}
		// The columns whose windows reach past their row's ends.
		left := min(w, pw)                      // columns x < pw
		right := max(left, min(w, w-(kw-1-pw))) // and x + kw − 1 − pw ≥ w
		for y := range oh {
			row, vr := o[y*w:(y+1)*w], v[y*w:(y+1)*w]
			for x := 0; x < w; x++ {
				if x == left {
					if x = right; x == w {
						break
					}
				}
				m := inf
				for c := max(0, x-pw); c < min(w, x-pw+kw); c++ {
					m = max(m, vr[c]) // V holds no NaN
				}
				row[x] = m
			}
		}
	}
}

// avgPool2D is AveragePool over the 2-D planes lo…hi−1, without
// dilation and with a column stride of 1 or 2, an output row at a time, as
// maxPool2D: the sum over the window's input rows (a copy and vector
// adds) into a row padded with zeros, the sum over each window's columns
// (sumCols), then a vector division by the window's count: the taps
// inside the input, the product of the row's and the column's (or with
// count_include_pad inside the padded input). The sums run over rows,
// then columns: each within kh·kw roundings of the window's Σ|x| of the
// general path's.
func (p *plPoolPlan) avgPool2D(lo, hi int) {
	g, rows, cols, xd, out := p.g, p.taps[0], p.taps[1], p.xd, p.out
	ih, iw, oh, ow := g.In[0], g.In[1], g.Out[0], g.Out[1]
	kw, sw, pw := g.Kernel[1], g.Stride[1], g.PadBegin[1]
	isp, osp := ih*iw, oh*ow
	sc := p.scratch.get()
	defer p.scratch.put(sc)
	n := plPaddedRow(g)
	if cap(sc.columns) < n+ow {
		sc.columns = make([]float32, n+ow) // zeros: the padding, never written
	}
	row, div := sc.columns[:n], sc.columns[n:n+ow]
	for oy := range oh {
		// The divisors of output row oy.
		taps := rows.idx[rows.start[oy]:rows.start[oy+1]]
		for ox := range div {
			if p.includePad {
				div[ox] = float32(rows.inPad[oy] * cols.inPad[ox])
			} else {
				div[ox] = float32(len(taps) * (cols.start[ox+1] - cols.start[ox]))
			}
		}
		for pl := lo; pl < hi; pl++ {
			plane, y := xd[pl*isp:(pl+1)*isp], out[pl*osp+oy*ow:pl*osp+(oy+1)*ow]
			sum := row[pw : pw+iw]
			if len(taps) == 0 {
				clear(sum)
			}
			for i, iy := range taps {
				if i == 0 {
					copy(sum, plane[iy*iw:(iy+1)*iw])
				} else {
					addInto(sum, plane[iy*iw:(iy+1)*iw])
				}
			}
			sumCols(y, row, kw, sw)
			ewArithVV(ewDiv, y, y, div)
		}
	}
}

// plHalves reports whether g is a 2-D 2×2 window at stride 2 without
// padding or dilation whose windows lie inside the input (DenseNet's
// transitions, the AvgPool2d(2) of many networks): each output is the mean
// of four inputs.
func plHalves(g opsem.Window) bool {
	if len(g.In) != 2 {
		return false
	}
	for d := range 2 {
		if g.Kernel[d] != 2 || g.Stride[d] != 2 || g.Dilation[d] != 1 || g.PadBegin[d] != 0 || g.PadEnd[d] != 0 || 2*g.Out[d] > g.In[d] {
			return false
		}
	}
	return true
}

// avgPoolHalves is AveragePool over the planes lo…hi−1 for a window
// plHalves accepts, in a few vector passes a plane where avgPool2D makes
// four calls an output row: the sum of each output row's two input rows
// (V), V's even and odd columns (dwSplitRows, one call), their sum, a
// quarter of it. It adds as avgPool2D does (rows, then columns) and
// divides by four exactly: the results are avgPool2D's.
func (p *plPoolPlan) avgPoolHalves(lo, hi int) {
	g, xd, out := p.g, p.xd, p.out
	iw, oh, ow := g.In[1], g.Out[0], g.Out[1]
	sc := p.scratch.get()
	defer p.scratch.put(sc)
	n := oh*iw + 2*oh*ow
	if cap(sc.columns) < n {
		sc.columns = make([]float32, n)
	}
	v, even, odd := sc.columns[:oh*iw], sc.columns[oh*iw:oh*iw+oh*ow], sc.columns[oh*iw+oh*ow:n]
	for pl := lo; pl < hi; pl++ {
		plane, y := xd[pl*p.isp:(pl+1)*p.isp], out[pl*p.osp:(pl+1)*p.osp]
		for oy := range oh {
			ewArithVV(ewAdd, v[oy*iw:(oy+1)*iw], plane[2*oy*iw:], plane[(2*oy+1)*iw:])
		}
		dwSplitRows(even, odd, v, oh, 2*ow, ow, ow, iw)
		ewArithVV(ewAdd, y, even, odd)
		ewArithVS(ewMul, y, y, 0.25)
	}
}

// Narrow maps: MaxPool over planes whose rows fit two vectors and whose
// output rows one (GoogLeNet's and Inception's pools over 192 to 832
// channels of 28×28 to 7×7, SqueezeNet's last) runs one output row of
// every plane per call (maxPoolNarrow): the row loops' two calls per
// plane and row, a vector or two long each, cost 3–9 times ONNX Runtime's
// channel-blocked pools. Any kernel, stride, dilation and padding: the
// column taps are lane indices (VPERMI2PS), the row taps the plan's.
const (
	plNarrowIn     = 31 // input columns: lane 31 stays −Inf, the padding's lane
	plNarrowOut    = 16 // output columns: one vector
	plNarrowKernel = 64 // kernel columns: its table (16 lanes each) is the plan's, not claimed
)

// plNarrowPerm returns maxPoolNarrow's column taps for g: for each kernel
// column kx, 16 lanes, lane j the input column output column j reads at
// kx, or 31 where that lies in the padding (or j is past the output).
func plNarrowPerm(g opsem.Window) []int32 {
	kw := g.Kernel[1]
	perm := make([]int32, kw*16)
	for kx := range kw {
		for j := range 16 {
			c := j*g.Stride[1] + kx*g.Dilation[1] - g.PadBegin[1]
			perm[kx*16+j] = plNarrowIn
			if j < g.Out[1] && c >= 0 && c < g.In[1] {
				perm[kx*16+j] = int32(c)
			}
		}
	}
	return perm
}

// maxPoolNarrowPlanes is MaxPool over the planes lo…hi−1 of narrow maps,
// an output row of every plane at a time.
func (p *plPoolPlan) maxPoolNarrowPlanes(lo, hi int) {
	g, rows := p.g, p.taps[0]
	ow := g.Out[1]
	for oy := range g.Out[0] {
		maxPoolNarrow(p.out[lo*p.osp+oy*ow:], p.osp, p.xd[lo*p.isp:], p.isp, hi-lo, rows.idx[rows.start[oy]:rows.start[oy+1]], g.In[1], p.perm, g.Kernel[1], ow)
	}
}

// plPaddedRow is the row maxPool2D and avgPool2D fill and read: the
// padding before the input's row, the row, and as much after it as the
// column loops read (maxColsLen from the row's start).
func plPaddedRow(g opsem.Window) int {
	return g.PadBegin[1] + max(g.In[1], maxColsLen(g.Out[1], g.Kernel[1], g.Stride[1]))
}

// maxColsLen is the floats maxCols reads for outputs outputs of kw
// columns at stride sw: whole blocks of 16 outputs, and at stride 2 the
// 32 floats each tap loads for a block.
func maxColsLen(outputs, kw, sw int) int {
	return sw*16*((outputs+15)/16) + kw + 16
}

// maxRowsGo is maxRows' loop, over a non-empty rows.
func maxRowsGo(dst, src []float32, rows []int, stride int) {
	fill(dst, float32(math.Inf(-1)))
	for _, r := range rows {
		maxIntoGo(dst, src[r*stride:r*stride+len(dst)])
	}
}

// colsGo is maxCols' and sumCols' loop.
func colsGo(out, v []float32, kw, sw int, sum bool) {
	for o := range out {
		if sum {
			var s float32
			for _, x := range v[o*sw : o*sw+kw] {
				s += x
			}
			out[o] = s
			continue
		}
		m := float32(math.Inf(-1))
		for _, x := range v[o*sw : o*sw+kw] {
			if x > m {
				m = x
			}
		}
		out[o] = m
	}
}

// MaxPool accepts dilations and ceil_mode at every opset: one opset-6
// PyTorch export carries dilations, which onnxruntime honours. Indices
// count over the whole tensor, row-major or, with storage_order 1,
// column-major within each plane.
func plMaxPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plMaxKind)
}

// AveragePool divides by the taps inside the input, or with
// count_include_pad by the taps inside the padded input.
func plAveragePool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plAvgKind)
}

// LpPool computes (Σ|x|^p)^(1/p) over the window; p is a float attribute in
// LpPool-1 and an integer from LpPool-2.
func plLpPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plPool(n, in, plLpKind)
}

// plGlobalPlan is what plGlobalPool keeps from one run of its node to the
// next (opsem.Plan): the output shape and its planes, and the loop body
// bound once, with the operands of the run in progress.
type plGlobalPlan struct {
	planes, size int   // planes of size elements each
	dims, shape  []int // [N, C] and [N, C, 1…]
	body         func(lo, hi int)

	// The operands of the run in progress.
	xd, out []float32
	reduce  func(plane []float32) float32
}

// planesOf is plGlobalPool's loop over the planes lo…hi−1.
func (p *plGlobalPlan) planesOf(lo, hi int) {
	xd, out, size, reduce := p.xd, p.out, p.size, p.reduce
	for pl := lo; pl < hi; pl++ {
		out[pl] = reduce(xd[pl*size : (pl+1)*size])
	}
}

// plGlobalPool reduces each plane of x [N, C, spatial...] to one value.
func plGlobalPool(n opsem.Node, in []inference.Tensor, reduce func(plane []float32) float32) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*plGlobalPlan, error) {
		xs := x.Shape()
		if len(xs) < 2 {
			return nil, fmt.Errorf("X is %v, want rank ≥ 2: %w", x, inference.ErrShape)
		}
		p := &plGlobalPlan{dims: xs[:2:2], shape: slices.Clone(xs)}
		for d := 2; d < len(p.shape); d++ {
			p.shape[d] = 1
		}
		// Each plane holds size elements; without planes the spatial
		// dimensions may not count within int.
		if p.planes = limit.Count(p.dims...); p.planes > 0 {
			p.size = x.Len() / p.planes
		}
		p.body = p.planesOf
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	out, err := limit.Make[float32](n.Run, p.dims...)
	if err != nil {
		return nil, err
	}
	p.xd, p.out, p.reduce = xd, out, reduce
	parallelFor(p.planes, p.size, p.body)
	p.xd, p.out, p.reduce = nil, nil, nil // the plan outlives them
	return opsem.Single(n, p.shape, out)
}

// GlobalAveragePool sums each plane in partial sums (sumFloats), within
// (size/8 + 16)·2⁻²⁴·Σ|x| of the exact sum, then divides.
func plGlobalAveragePool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plGlobalPool(n, in, func(plane []float32) float32 {
		return sumFloats(plane) / float32(len(plane))
	})
}

// GlobalMaxPool takes Go's max over each plane (maxFloats): NaN if the
// plane holds one.
func plGlobalMaxPool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return plGlobalPool(n, in, maxFloats)
}

// MaxUnpool scatters X into zeros at the flat positions I gives (MaxPool's
// Indices). The output shape is input 2 when present, else spatially
// (in−1)·stride + kernel − padBegin − padEnd: the output of the transposed
// window (opsem.TransposedWindow) of kernel_shape, strides and pads.
func plMaxUnpool(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	it, err := requiredArg(in, 1, "I")
	if err != nil {
		return nil, err
	}
	if it.DType() != inference.Int64 {
		return nil, fmt.Errorf("I is %v, want int64: %w", it, inference.ErrType)
	}
	id, _ := inference.Data[int64](it)
	xs := x.Shape()
	if len(xs) < 3 || !slices.Equal(xs, it.Shape()) {
		return nil, fmt.Errorf("X is %v, I is %v; want equal shapes of rank ≥ 3: %w", x, it, inference.ErrShape)
	}
	kernel, err := opsem.KernelShape(n, len(xs)-2, nil)
	if err != nil {
		return nil, err
	}
	g, err := opsem.TransposedWindow(n, xs[2:], kernel)
	if err != nil {
		return nil, err
	}
	shape := append([]int{xs[0], xs[1]}, g.Out...)
	if len(in) > 2 && present(in[2]) {
		want, err := opsem.Int64s(in[2])
		if err != nil {
			return nil, fmt.Errorf("output_shape: %w", err)
		}
		if len(want) != len(xs) || int(want[0]) != xs[0] || int(want[1]) != xs[1] {
			return nil, fmt.Errorf("output_shape %v for X %v: %w", want, x, inference.ErrShape)
		}
		for d, v := range want {
			shape[d] = int(v)
		}
	}
	size, err := inference.NumElements(shape)
	if err != nil {
		return nil, err
	}
	out, err := limit.Make[float32](n.Run, size)
	if err != nil {
		return nil, err
	}
	for i, at := range id {
		if at < 0 || at >= int64(size) {
			return nil, fmt.Errorf("I[%d] = %d is outside the output %v: %w", i, at, shape, inference.ErrShape)
		}
		out[at] = xd[i]
	}
	return opsem.Single(n, shape, out)
}

package cpu

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Attention operators: scaled dot-product Attention and RotaryEmbedding, on
// float32 tensors. Matrix products go through nnSgemm; softmax sums are
// computed in float64.

func init() {
	register("Attention", atAttention)
	register("RotaryEmbedding", atRotaryEmbedding)
}

// atAttention is Attention-23/24: Y = softmax(softcap(scale·Q·Kᵀ) + bias)·V
// per batch and query head, with
//
//   - Q [batch, q_heads, q_seq, head_size] and K, V [batch, kv_heads,
//     kv_seq, head_size | v_head_size], or the 3-D forms [batch, seq,
//     heads·size] with q_num_heads and kv_num_heads as attributes;
//   - past_key/past_value [batch, kv_heads, past, size] prepended to K and V
//     along the sequence, the results returned as present_key/present_value;
//     total = past + kv_seq;
//   - query head h reading key/value head h / (q_heads/kv_heads) (grouped
//     query attention);
//   - scale the attribute, else 1/√head_size; softcap(x) = c·tanh(x/c) when
//     the attribute c > 0, else x;
//   - bias[b,h,i,j] = mask + causal + padding: attn_mask broadcast to
//     [batch, q_heads, q_seq, total] (bool: 0 where true, -∞ where false;
//     columns past its last dimension are -∞); with is_causal, -∞ where
//     j > i + offset, offset being past when past_key is given, else
//     nonpad_kv_seqlen[b] - q_seq when that is given, else 0; -∞ where
//     j ≥ nonpad_kv_seqlen[b];
//   - a row whose bias is -∞ everywhere gets zero weights (not NaN).
//
// The optional qk_matmul_output holds, by qk_matmul_output_mode, scale·Q·Kᵀ
// (0), after softcap (1), after the bias (2) or after softmax (3). Softmax
// sums in float64, which meets any softmax_precision.
//
// What the inputs' shapes decide (the dimensions, the bias's layout, the
// output shapes, the loop over the heads) is planned once for them
// (atPlan).
func atAttention(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, qd, err := requiredFloatArg(n, in, 0, "Q")
	if err != nil {
		return nil, err
	}
	_, kd, err := requiredFloatArg(n, in, 1, "K")
	if err != nil {
		return nil, err
	}
	_, vd, err := requiredFloatArg(n, in, 2, "V")
	if err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*atPlan, error) { return newAtPlan(n, in) })
	if err != nil {
		return nil, err
	}
	_, pkd, _ := floatArg(n, in, 4, "past_key") // checked by the plan
	_, pvd, _ := floatArg(n, in, 5, "past_value")
	batch, kvHeads, total, past, kvSeq := p.batch, p.kvHeads, p.total, p.past, p.kvSeq
	headSize, vHeadSize := p.headSize, p.vHeadSize

	// present_key and present_value, [batch, kv_heads, total, size]: the
	// past rows, then K and V. Without past rows, and unless the node
	// returns them, K and V are read in place, each head's rows through
	// its view (4-D [batch, heads, seq, size], or 3-D [batch, seq,
	// heads·size], its rows heads·size apart): no copy on one thread
	// ahead of the heads' loop.
	kView, vView := p.kView, p.vView
	presentK, presentV := kd, vd
	p.inPlace = p.past == 0 && !wantsOutput(n, 1) && !wantsOutput(n, 2)
	if !p.inPlace {
		var err error
		presentK, err = limit.Make[float32](n.Run, p.kShape...)
		if err != nil {
			return nil, err
		}
		presentV, err = limit.Make[float32](n.Run, p.vShape...)
		if err != nil {
			return nil, err
		}
		if len(presentK)+len(presentV) > 0 { // else the loops would count the dimensions that are not 0
			for b := range batch {
				for h := range kvHeads {
					bh := b*kvHeads + h
					pk := presentK[bh*total*headSize : (bh+1)*total*headSize]
					pv := presentV[bh*total*vHeadSize : (bh+1)*total*vHeadSize]
					if past > 0 {
						copy(pk, pkd[bh*past*headSize:(bh+1)*past*headSize])
						copy(pv, pvd[bh*past*vHeadSize:(bh+1)*past*vHeadSize])
					}
					kb, kld := kView.Base(b, h), kView.LD()
					vb, vld := vView.Base(b, h), vView.LD()
					for s := range kvSeq {
						copy(pk[(past+s)*headSize:(past+s+1)*headSize], kd[kb+s*kld:kb+s*kld+headSize])
						copy(pv[(past+s)*vHeadSize:(past+s+1)*vHeadSize], vd[vb+s*vld:vb+s*vld+vHeadSize])
					}
				}
			}
		}
	}

	var qk []float32
	if p.wantQK {
		if qk, err = limit.Make[float32](n.Run, p.qkShape...); err != nil {
			return nil, err
		}
	}
	y, err := limit.Make[float32](n.Run, p.yDims...)
	if err != nil {
		return nil, err
	}
	// Without outputs to compute, the loops (and the bias) would count the
	// dimensions that are not 0.
	if len(y) > 0 || len(qk) > 0 {
		bias, err := p.bias.fill(n, in, batch, p.qSeq, total, past)
		if err != nil {
			return nil, err
		}
		// Each (batch, head) pair is a unit: units run side by side, or
		// one at a time with every core in its products (eachUnit). Each
		// goroutine takes a block of scores of its own from spare.
		workers := min(batch*p.qHeads, runtime.GOMAXPROCS(0))
		p.blocksDims[0] = workers
		blocks, err := limit.MakeOverwritten[float32](n.Run, p.blocksDims...)
		if err != nil {
			return nil, err
		}
		if cap(p.spare) < workers {
			p.spare = make(chan []float32, workers)
		}
		for len(p.spare) > 0 { // the blocks of a run that a panic cut short
			<-p.spare
		}
		for w := range workers {
			p.spare <- blocks[w*p.qSeq*total : (w+1)*p.qSeq*total]
		}
		p.qd, p.presentK, p.presentV, p.qk, p.y, p.biasNow = qd, presentK, presentV, qk, y, bias
		eachUnit(batch*p.qHeads, 4*p.qSeq*total*max(headSize, vHeadSize), p.body)
		// Not to hold the buffers until the next run:
		p.qd, p.presentK, p.presentV, p.qk, p.y, p.biasNow = nil, nil, nil, nil, nil, nil
		if bias != nil {
			bias.data = nil
		}
		for range workers {
			<-p.spare
		}
	}

	// An output the node leaves unnamed (present_key and present_value
	// mostly) is no one's: its buffer was scratch, and it is returned as
	// the zero Tensor, or not at all after the last named one.
	res := n.Results(namedOutputs(n, 3+btoi(p.wantQK)))
	for j, d := range [][]float32{y, presentK, presentV, qk}[:len(res)] {
		if !wantsOutput(n, j) {
			res[j] = inference.Tensor{}
			continue
		}
		if res[j], err = opsem.Output(n, j, p.shapes[j], d); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// namedOutputs is how many of its k outputs a kernel returns: those up to
// the last that the node names (at least one). The executor reads only
// named outputs.
func namedOutputs(n opsem.Node, k int) int {
	for k > 1 && !wantsOutput(n, k-1) {
		k--
	}
	return k
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// atPlan is what atAttention keeps for one set of input shapes: the
// dimensions, the attributes, the bias's layout (nil without one), the
// outputs' shapes, and the loop over the (batch, head) units, bound once
// (body) to read the operands of the run under way.
type atPlan struct {
	rank, batch, qHeads, kvHeads, qSeq, kvSeq, headSize, vHeadSize int
	group, past, total                                             int
	kView, vView, qView, yView                                     opsem.HeadView
	scale, softcap                                                 float32
	mode                                                           int64
	wantQK                                                         bool
	bias                                                           *atBias
	// Make's shapes: present_key's, present_value's, qk_matmul_output's,
	// Y's as [batch, heads, seq, size] (its shape may be 3-D), and the
	// score blocks' (workers first, set each run).
	kShape, vShape, qkShape, yDims, blocksDims []int
	shapes                                     [4][]int // the outputs'

	// Each unit's goroutine takes a score block from spare. qd…biasNow
	// are the run's operands.
	spare                         chan []float32
	inPlace                       bool // K and V read through kView and vView, not present_key and present_value
	qd, presentK, presentV, qk, y []float32
	biasNow                       *atBias
	body                          func(lo, hi, threads int)
}

// newAtPlan checks Attention's inputs and plans for their shapes.
func newAtPlan(n opsem.Node, in []inference.Tensor) (*atPlan, error) {
	pastK, _, err := floatArg(n, in, 4, "past_key")
	if err != nil {
		return nil, err
	}
	pastV, _, err := floatArg(n, in, 5, "past_value")
	if err != nil {
		return nil, err
	}
	var pk, pv []int
	if present(pastK) {
		pk = pastK.Shape()
	}
	if present(pastV) {
		pv = pastV.Shape()
	}
	d, err := opsem.Attention(n, in[0].Shape(), in[1].Shape(), in[2].Shape(), pk, pv)
	if err != nil {
		return nil, err
	}
	rank, batch, qHeads, kvHeads, qSeq, kvSeq := d.Rank, d.Batch, d.QHeads, d.KVHeads, d.QSeq, d.KVSeq
	headSize, vHeadSize, group, past, total := d.HeadSize, d.VHeadSize, d.Group, d.Past, d.Total
	qView, kView, vView, yView := d.Views()
	p := &atPlan{
		rank: rank, batch: batch, qHeads: qHeads, kvHeads: kvHeads, qSeq: qSeq, kvSeq: kvSeq,
		headSize: headSize, vHeadSize: vHeadSize, group: group, past: past, total: total,
		kView: kView, vView: vView, qView: qView, yView: yView,
		scale: d.Scale, softcap: d.Softcap,
	}
	p.mode = n.Int("qk_matmul_output_mode", 0)
	p.wantQK = wantsOutput(n, 3)
	if p.wantQK && (p.mode < 0 || p.mode > 3) {
		return nil, n.Unsupported("qk_matmul_output_mode %d", p.mode)
	}

	p.kShape = []int{batch, kvHeads, total, headSize}
	p.vShape = []int{batch, kvHeads, total, vHeadSize}
	p.qkShape = []int{batch, qHeads, qSeq, total}
	p.yDims = []int{batch, qHeads, qSeq, vHeadSize}
	p.blocksDims = []int{0, qSeq, total}
	yShape := p.yDims
	if rank == 3 {
		yShape = []int{batch, qSeq, qHeads * vHeadSize}
	}
	p.shapes = [4][]int{yShape, p.kShape, p.vShape, p.qkShape}
	// The bias is built only for outputs to compute (atAttention).
	if limit.Count(p.yDims...) > 0 || p.wantQK && limit.Count(p.qkShape...) > 0 {
		if p.bias, err = atAttentionBias(n, in, batch, qHeads, qSeq, total); err != nil {
			return nil, err
		}
	}
	p.body = p.heads
	return p, nil
}

// heads computes units lo…hi-1, each a (batch, query head) pair, with
// SGEMMs of threads threads.
func (p *atPlan) heads(lo, hi, threads int) {
	qHeads, kvHeads, qSeq, total, headSize, vHeadSize := p.qHeads, p.kvHeads, p.qSeq, p.total, p.headSize, p.vHeadSize
	group, scale, softcap, mode, wantQK := p.group, p.scale, p.softcap, p.mode, p.wantQK
	qView, yView := p.qView, p.yView
	presentK, presentV, qd, qk, y, bias := p.presentK, p.presentV, p.qd, p.qk, p.y, p.biasNow
	scores := <-p.spare
	defer func() { p.spare <- scores }()
	for u := lo; u < hi; u++ {
		b, h := u/qHeads, u%qHeads
		kvh := b*kvHeads + h/group
		kh, kld := presentK[kvh*total*headSize:(kvh+1)*total*headSize], headSize
		vh, vld := presentV[kvh*total*vHeadSize:(kvh+1)*total*vHeadSize], vHeadSize
		if p.inPlace { // total = kv_seq
			kh, kld = presentK[p.kView.Base(b, h/group):], p.kView.LD()
			vh, vld = presentV[p.vView.Base(b, h/group):], p.vView.LD()
		}
		qb := qView.Base(b, h)
		nnSgemmThreads(threads, false, true, qSeq, total, headSize, scale, qd[qb:], qView.LD(), kh, kld, 0, scores, total)
		for i := range qSeq {
			row := scores[i*total : (i+1)*total]
			var out []float32
			if wantQK {
				off := ((b*qHeads+h)*qSeq + i) * total
				out = qk[off : off+total]
			}
			if mode == 0 {
				copy(out, row)
			}
			if softcap > 0 {
				for j, x := range row {
					row[j] = softcap * float32(math.Tanh(float64(x/softcap)))
				}
			}
			if mode == 1 {
				copy(out, row)
			}
			masked := false
			if bias != nil {
				addInto(row, bias.row(b, h, i))
				masked = bias.masked[bias.rowIndex(b, h, i)]
			}
			if mode == 2 {
				copy(out, row)
			}
			if masked {
				clear(row)
			} else {
				smSoftmaxRow(row, row)
			}
			if mode == 3 {
				copy(out, row)
			}
		}
		yb := yView.Base(b, h)
		nnSgemmThreads(threads, false, false, qSeq, vHeadSize, total, 1, scores, total, vh, vld, 0, y[yb:], yView.LD())
	}
}

// atBias is an attention bias materialised per (batch, head): rows of
// [q_seq, total] values, shared by the heads (and batches) it broadcasts
// over. The layout and the mask's are planned once for the inputs'
// shapes (atAttentionBias); fill builds data each run.
type atBias struct {
	heads, qSeq, total int
	perBatch, perHead  bool
	data               []float32
	masked             []bool // per row of data: every value −Inf (fill's)

	causal   bool
	maskLen  int    // the mask's last dimension; 0 without a mask
	maskDims [3]int // the mask's batch, head and query extents, each 1 or full
	dims     []int  // data's: [batches, heads, q_seq, total]
}

func (s *atBias) row(b, h, i int) []float32 {
	off := s.rowIndex(b, h, i) * s.total
	return s.data[off : off+s.total]
}

// rowIndex is the index of the row (b, h, i) uses among data's rows.
func (s *atBias) rowIndex(b, h, i int) int {
	if !s.perBatch {
		b = 0
	}
	if !s.perHead {
		h = 0
	}
	heads := 1
	if s.perHead {
		heads = s.heads
	}
	return (b*heads+h)*s.qSeq + i
}

// atAttentionBias plans Attention's additive bias from attn_mask (input 3),
// is_causal and nonpad_kv_seqlen (input 6), or returns nil when there is
// none.
func atAttentionBias(n opsem.Node, in []inference.Tensor, batch, heads, qSeq, total int) (*atBias, error) {
	mask := arg(in, 3)
	causal := n.Int("is_causal", 0) != 0
	nonpad := false
	if t := arg(in, 6); present(t) {
		if _, err := opsem.Int64s(t); err != nil {
			return nil, fmt.Errorf("input 6 (nonpad_kv_seqlen): %w", err)
		}
		if t.Len() != batch {
			return nil, fmt.Errorf("input 6 (nonpad_kv_seqlen) is %v, want %d values: %w", t, batch, inference.ErrShape)
		}
		nonpad = true
	}
	if !present(mask) && !causal && !nonpad {
		return nil, nil
	}
	s := &atBias{heads: heads, qSeq: qSeq, total: total, perBatch: nonpad, causal: causal}

	// The mask, aligned at the right to [batch, heads, q_seq, total]; its
	// last dimension may be shorter than total (the rest is masked).
	if present(mask) {
		m, err := opsem.AttentionMaskOf(n, mask.Shape(), mask.DType(), inference.Float32, opsem.AttentionDims{Batch: batch, QHeads: heads, QSeq: qSeq, Total: total})
		if err != nil {
			return nil, err
		}
		s.maskLen, s.maskDims = m.Len, m.Dims
		s.perBatch = s.perBatch || m.Dims[0] != 1
		s.perHead = m.Dims[1] != 1
	}

	batches, hs := 1, 1
	if s.perBatch {
		batches = batch
	}
	if s.perHead {
		hs = heads
	}
	s.dims = []int{batches, hs, qSeq, total}
	return s, nil
}

// fill builds s's data for this run's mask and nonpad_kv_seqlen (inputs 3
// and 6, checked by atAttentionBias); past is past_key's length. A nil s
// (no bias) gives nil.
func (s *atBias) fill(n opsem.Node, in []inference.Tensor, batch, qSeq, total, past int) (*atBias, error) {
	if s == nil {
		return nil, nil
	}
	mask := arg(in, 3)
	var nonpad []int64
	if t := arg(in, 6); present(t) {
		var err error
		if nonpad, err = opsem.Int64s(t); err != nil {
			return nil, fmt.Errorf("input 6 (nonpad_kv_seqlen): %w", err)
		}
	}
	var maskF []float32
	var maskB []bool
	maskLen, maskDims := s.maskLen, s.maskDims
	if present(mask) {
		switch mask.DType() {
		case inference.Float32:
			maskF, _ = floats(mask)
		case inference.Bool:
			maskB, _ = inference.Data[bool](mask)
		}
	}
	batches, hs := s.dims[0], s.dims[1]
	negInf := float32(math.Inf(-1))
	var err error
	if s.data, err = limit.Make[float32](n.Run, s.dims...); err != nil {
		return nil, err
	}
	for b := range batches {
		offset := 0
		switch {
		case past > 0:
			offset = past
		case nonpad != nil:
			offset = int(nonpad[b]) - qSeq
		}
		for h := range hs {
			for i := range qSeq {
				row := s.row(b, h, i)
				if present(mask) {
					// The mask's row for (b, h, i): an index of 0 along
					// each dimension it broadcasts over.
					at := func(k, d int) int { return k % maskDims[d] }
					m0 := ((at(b, 0)*maskDims[1]+at(h, 1))*maskDims[2] + at(i, 2)) * maskLen
					for j := range total {
						switch {
						case j >= maskLen:
							row[j] = negInf
						case maskB != nil:
							if !maskB[m0+j] {
								row[j] = negInf
							}
						default:
							row[j] = maskF[m0+j]
						}
					}
				}
				if s.causal {
					for j := max(0, i+offset+1); j < total; j++ {
						row[j] += negInf
					}
				}
				if nonpad != nil {
					for j := max(0, int(min(nonpad[b], int64(total)))); j < total; j++ {
						row[j] += negInf
					}
				}
			}
		}
	}
	// The rows that mask every key: their queries attend to nothing, and
	// heads gives them zeros rather than softmax's NaN.
	if s.masked, err = limit.Make[bool](n.Run, batches*hs*qSeq); err != nil {
		return nil, err
	}
	for r := range s.masked {
		s.masked[r] = !slices.ContainsFunc(s.data[r*total:(r+1)*total], func(x float32) bool { return !math.IsInf(float64(x), -1) })
	}
	return s, nil
}

// atRotaryEmbedding is RotaryEmbedding-23. Input is [batch, heads, seq,
// head_size], or [batch, seq, heads·head_size] with the num_heads
// attribute. The first rotary_embedding_dim (default head_size) values of
// each head are rotated in pairs (x1, x2) — halves, or even and odd
// elements when interleaved — to (cos·x1 - sin·x2, sin·x1 + cos·x2), where
// cos and sin are rows of cos_cache/sin_cache [max_position, dim/2] picked
// by position_ids [batch, seq], or, without position_ids, the caches are
// [batch, seq, dim/2] themselves. The remaining values pass through.
func atRotaryEmbedding(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "input")
	if err != nil {
		return nil, err
	}
	cosT, cd, err := requiredFloatArg(n, in, 1, "cos_cache")
	if err != nil {
		return nil, err
	}
	sinT, sd, err := requiredFloatArg(n, in, 2, "sin_cache")
	if err != nil {
		return nil, err
	}
	pos := arg(in, 3)
	xs := x.Shape()
	var batch, heads, seq, headSize int
	switch len(xs) {
	case 4:
		batch, heads, seq, headSize = xs[0], xs[1], xs[2], xs[3]
	case 3:
		heads = int(n.Int("num_heads", 0))
		if heads <= 0 || xs[2]%heads != 0 {
			return nil, fmt.Errorf("input 0 is %v: 3-D input needs num_heads > 0 dividing its hidden size, have %d: %w", x, heads, inference.ErrShape)
		}
		batch, seq, headSize = xs[0], xs[1], xs[2]/heads
	default:
		return nil, fmt.Errorf("input 0 is %v, want rank 3 or 4: %w", x, inference.ErrShape)
	}
	rot := int(n.Int("rotary_embedding_dim", 0))
	if rot == 0 {
		rot = headSize
	}
	if rot < 0 || rot > headSize || rot%2 != 0 {
		return nil, fmt.Errorf("rotary_embedding_dim %d for head size %d, want an even number up to it: %w", rot, headSize, inference.ErrShape)
	}
	half := rot / 2
	interleaved := n.Int("interleaved", 0) != 0

	// cacheRow returns the offset of the cos/sin row for (b, s).
	var cacheRow func(b, s int) int
	if present(pos) {
		ids, err := opsem.Int64s(pos)
		if err != nil {
			return nil, fmt.Errorf("input 3 (position_ids): %w", err)
		}
		if err := wantShape(pos, 3, "position_ids", batch, seq); err != nil {
			return nil, err
		}
		if cosT.Rank() != 2 || cosT.Shape()[1] != half {
			return nil, fmt.Errorf("input 1 (cos_cache) is %v, want [max_position %d]: %w", cosT, half, inference.ErrShape)
		}
		if err := wantShape(sinT, 2, "sin_cache", cosT.Shape()...); err != nil {
			return nil, err
		}
		maxPos := int64(cosT.Shape()[0])
		for _, p := range ids {
			if p < 0 || p >= maxPos {
				return nil, fmt.Errorf("input 3 (position_ids) holds %d, outside [0, %d): %w", p, maxPos, inference.ErrShape)
			}
		}
		cacheRow = func(b, s int) int { return int(ids[b*seq+s]) * half }
	} else {
		if err := wantShape(cosT, 1, "cos_cache", batch, seq, half); err != nil {
			return nil, err
		}
		if err := wantShape(sinT, 2, "sin_cache", batch, seq, half); err != nil {
			return nil, err
		}
		cacheRow = func(b, s int) int { return (b*seq + s) * half }
	}

	view := opsem.HeadView{Rank: len(xs), Heads: heads, Seq: seq, Size: headSize}
	out, err := limit.Make[float32](n.Run, len(xd))
	if err != nil {
		return nil, err
	}
	if len(xd) == 0 { // the loops would count the dimensions that are not 0
		return opsem.Single(n, xs, out)
	}
	for b := range batch {
		for s := range seq {
			c := cd[cacheRow(b, s):][:half]
			sn := sd[cacheRow(b, s):][:half]
			for h := range heads {
				off := view.Base(b, h) + s*view.LD()
				src, dst := xd[off:off+headSize], out[off:off+headSize]
				for i := range half {
					i1, i2 := i, i+half
					if interleaved {
						i1, i2 = 2*i, 2*i+1
					}
					x1, x2 := src[i1], src[i2]
					dst[i1] = c[i]*x1 - sn[i]*x2
					dst[i2] = sn[i]*x1 + c[i]*x2
				}
				copy(dst[rot:], src[rot:])
			}
		}
	}
	return opsem.Single(n, xs, out)
}

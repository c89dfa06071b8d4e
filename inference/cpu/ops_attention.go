package cpu

import (
	"fmt"
	"math"
	"runtime"

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

// atHeadView addresses the [seq, size] matrix of one (batch, head) pair in
// a [batch, heads, seq, size] tensor (rank 4) or a [batch, seq, heads·size]
// tensor (rank 3): row s starts at base + s·ld.
type atHeadView struct {
	rank, heads, seq, size int
}

func (v atHeadView) base(b, h int) int {
	if v.rank == 4 {
		return (b*v.heads + h) * v.seq * v.size
	}
	return b*v.seq*v.heads*v.size + h*v.size
}

func (v atHeadView) ld() int {
	if v.rank == 4 {
		return v.size
	}
	return v.heads * v.size
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
func atAttention(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	q, qd, err := requiredFloatArg(n, in, 0, "Q")
	if err != nil {
		return nil, err
	}
	k, kd, err := requiredFloatArg(n, in, 1, "K")
	if err != nil {
		return nil, err
	}
	v, vd, err := requiredFloatArg(n, in, 2, "V")
	if err != nil {
		return nil, err
	}
	rank := q.Rank()
	if rank != 3 && rank != 4 {
		return nil, fmt.Errorf("input 0 (Q) is %v, want rank 3 or 4: %w", q, inference.ErrShape)
	}
	if k.Rank() != rank || v.Rank() != rank {
		return nil, fmt.Errorf("Q %v, K %v and V %v differ in rank: %w", q, k, v, inference.ErrShape)
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	batch := qs[0]
	var qHeads, kvHeads, qSeq, kvSeq, headSize, vHeadSize int
	if rank == 4 {
		qHeads, qSeq, headSize = qs[1], qs[2], qs[3]
		kvHeads, kvSeq = ks[1], ks[2]
		vHeadSize = vs[3]
		if ks[0] != batch || ks[3] != headSize || vs[0] != batch || vs[1] != kvHeads || vs[2] != kvSeq {
			return nil, fmt.Errorf("Q %v, K %v and V %v do not agree in batch, heads, sequence or head size: %w", q, k, v, inference.ErrShape)
		}
	} else {
		qHeads, kvHeads = int(n.Int("q_num_heads", 0)), int(n.Int("kv_num_heads", 0))
		if qHeads <= 0 || kvHeads <= 0 {
			return nil, fmt.Errorf("3-D inputs need q_num_heads and kv_num_heads > 0, have %d and %d: %w", qHeads, kvHeads, inference.ErrBadModel)
		}
		qSeq, kvSeq = qs[1], ks[1]
		if qs[2]%qHeads != 0 || ks[2]%kvHeads != 0 || vs[2]%kvHeads != 0 {
			return nil, fmt.Errorf("Q %v, K %v, V %v: hidden sizes do not divide into %d query and %d key/value heads: %w", q, k, v, qHeads, kvHeads, inference.ErrShape)
		}
		headSize, vHeadSize = qs[2]/qHeads, vs[2]/kvHeads
		if ks[0] != batch || vs[0] != batch || vs[1] != kvSeq || ks[2]/kvHeads != headSize {
			return nil, fmt.Errorf("Q %v, K %v and V %v do not agree in batch, sequence or head size: %w", q, k, v, inference.ErrShape)
		}
	}
	if kvHeads == 0 || qHeads%kvHeads != 0 {
		return nil, fmt.Errorf("%d query heads are not a multiple of %d key/value heads: %w", qHeads, kvHeads, inference.ErrShape)
	}
	group := qHeads / kvHeads

	pastK, pkd, err := floatArg(n, in, 4, "past_key")
	if err != nil {
		return nil, err
	}
	pastV, pvd, err := floatArg(n, in, 5, "past_value")
	if err != nil {
		return nil, err
	}
	past := 0
	if present(pastK) != present(pastV) {
		return nil, fmt.Errorf("past_key and past_value must be given together: %w", inference.ErrBadModel)
	}
	if present(pastK) {
		if pastK.Rank() != 4 {
			return nil, fmt.Errorf("input 4 (past_key) is %v, want rank 4: %w", pastK, inference.ErrShape)
		}
		past = pastK.Shape()[2]
		if err := wantShape(pastK, 4, "past_key", batch, kvHeads, past, headSize); err != nil {
			return nil, err
		}
		if err := wantShape(pastV, 5, "past_value", batch, kvHeads, past, vHeadSize); err != nil {
			return nil, err
		}
	}
	total := past + kvSeq

	// present_key and present_value, [batch, kv_heads, total, size]: the
	// past rows, then K and V.
	kView := atHeadView{rank, kvHeads, kvSeq, headSize}
	vView := atHeadView{rank, kvHeads, kvSeq, vHeadSize}
	presentK, err := limit.Make[float32](n.Run, batch, kvHeads, total, headSize)
	if err != nil {
		return nil, err
	}
	presentV, err := limit.Make[float32](n.Run, batch, kvHeads, total, vHeadSize)
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
				kb, kld := kView.base(b, h), kView.ld()
				vb, vld := vView.base(b, h), vView.ld()
				for s := range kvSeq {
					copy(pk[(past+s)*headSize:(past+s+1)*headSize], kd[kb+s*kld:kb+s*kld+headSize])
					copy(pv[(past+s)*vHeadSize:(past+s+1)*vHeadSize], vd[vb+s*vld:vb+s*vld+vHeadSize])
				}
			}
		}
	}

	scale := float32(1 / math.Sqrt(float64(headSize)))
	if n.Has("scale") {
		scale = n.Float("scale", scale)
	}
	softcap := n.Float("softcap", 0)
	mode := n.Int("qk_matmul_output_mode", 0)
	wantQK := wantsOutput(n, 3)
	if wantQK && (mode < 0 || mode > 3) {
		return nil, n.Unsupported("qk_matmul_output_mode %d", mode)
	}
	var qk []float32
	if wantQK {
		if qk, err = limit.Make[float32](n.Run, batch, qHeads, qSeq, total); err != nil {
			return nil, err
		}
	}

	qView := atHeadView{rank, qHeads, qSeq, headSize}
	yView := atHeadView{rank, qHeads, qSeq, vHeadSize}
	y, err := limit.Make[float32](n.Run, batch, qHeads, qSeq, vHeadSize)
	if err != nil {
		return nil, err
	}
	// Without outputs to compute, the loops (and the bias) would count the
	// dimensions that are not 0.
	if len(y) > 0 || len(qk) > 0 {
		bias, err := atAttentionBias(n, in, batch, qHeads, qSeq, total, past)
		if err != nil {
			return nil, err
		}
		// Each (batch, head) pair is a unit: units run side by side, or
		// one at a time with every core in its products (eachUnit). Each
		// goroutine takes a block of scores of its own from spare.
		workers := min(batch*qHeads, runtime.GOMAXPROCS(0))
		blocks, err := limit.MakeOverwritten[float32](n.Run, workers, qSeq, total)
		if err != nil {
			return nil, err
		}
		spare := make(chan []float32, workers)
		for w := range workers {
			spare <- blocks[w*qSeq*total : (w+1)*qSeq*total]
		}
		eachUnit(batch*qHeads, 4*qSeq*total*max(headSize, vHeadSize), func(lo, hi, threads int) {
			scores := <-spare
			defer func() { spare <- scores }()
			for u := lo; u < hi; u++ {
				b, h := u/qHeads, u%qHeads
				kvh := b*kvHeads + h/group
				kh := presentK[kvh*total*headSize : (kvh+1)*total*headSize]
				vh := presentV[kvh*total*vHeadSize : (kvh+1)*total*vHeadSize]
				qb := qView.base(b, h)
				nnSgemmThreads(threads, false, true, qSeq, total, headSize, scale, qd[qb:], qView.ld(), kh, headSize, 0, scores, total)
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
						brow := bias.row(b, h, i)
						masked = true
						for j, x := range brow {
							row[j] += x
							if !math.IsInf(float64(x), -1) {
								masked = false
							}
						}
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
				yb := yView.base(b, h)
				nnSgemmThreads(threads, false, false, qSeq, vHeadSize, total, 1, scores, total, vh, vHeadSize, 0, y[yb:], yView.ld())
			}
		})
	}

	yShape := []int{batch, qHeads, qSeq, vHeadSize}
	if rank == 3 {
		yShape = []int{batch, qSeq, qHeads * vHeadSize}
	}
	outs := make([]inference.Tensor, 3, 4)
	if outs[0], err = inference.New(yShape, y); err != nil {
		return nil, err
	}
	if outs[1], err = inference.New([]int{batch, kvHeads, total, headSize}, presentK); err != nil {
		return nil, err
	}
	if outs[2], err = inference.New([]int{batch, kvHeads, total, vHeadSize}, presentV); err != nil {
		return nil, err
	}
	if wantQK {
		t, err := inference.New([]int{batch, qHeads, qSeq, total}, qk)
		if err != nil {
			return nil, err
		}
		outs = append(outs, t)
	}
	return outs, nil
}

// atBias is an attention bias materialised per (batch, head): rows of
// [q_seq, total] values, shared by the heads (and batches) it broadcasts
// over.
type atBias struct {
	heads, qSeq, total int
	perBatch, perHead  bool
	data               []float32
}

func (s *atBias) row(b, h, i int) []float32 {
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
	off := ((b*heads+h)*s.qSeq + i) * s.total
	return s.data[off : off+s.total]
}

// atAttentionBias builds Attention's additive bias from attn_mask (input 3),
// is_causal and nonpad_kv_seqlen (input 6), or returns nil when there is
// none.
func atAttentionBias(n opsem.Node, in []inference.Tensor, batch, heads, qSeq, total, past int) (*atBias, error) {
	mask := arg(in, 3)
	causal := n.Int("is_causal", 0) != 0
	var nonpad []int64
	if t := arg(in, 6); present(t) {
		var err error
		if nonpad, err = opsem.Int64s(t); err != nil {
			return nil, fmt.Errorf("input 6 (nonpad_kv_seqlen): %w", err)
		}
		if len(nonpad) != batch {
			return nil, fmt.Errorf("input 6 (nonpad_kv_seqlen) is %v, want %d values: %w", t, batch, inference.ErrShape)
		}
	}
	if !present(mask) && !causal && nonpad == nil {
		return nil, nil
	}
	s := &atBias{heads: heads, qSeq: qSeq, total: total, perBatch: nonpad != nil}

	// The mask, aligned at the right to [batch, heads, q_seq, total]; its
	// last dimension may be shorter than total (the rest is masked).
	var maskF []float32
	var maskB []bool
	maskLen := 0
	var maskDims [3]int // the mask's batch, head and query extents, each 1 or full
	if present(mask) {
		ms := mask.Shape()
		if len(ms) < 1 || len(ms) > 4 {
			return nil, fmt.Errorf("input 3 (attn_mask) is %v, want rank 1 to 4: %w", mask, inference.ErrShape)
		}
		maskLen = ms[len(ms)-1]
		if maskLen > total {
			return nil, fmt.Errorf("input 3 (attn_mask) is %v, longer than the %d keys: %w", mask, total, inference.ErrShape)
		}
		full := [4]int{batch, heads, qSeq, maskLen}
		padded := []int{1, 1, 1, 1}
		copy(padded[4-len(ms):], ms)
		for d := range 3 {
			if padded[d] != 1 && padded[d] != full[d] {
				return nil, fmt.Errorf("input 3 (attn_mask) is %v, not broadcastable to [%d %d %d %d]: %w", mask, batch, heads, qSeq, total, inference.ErrShape)
			}
		}
		s.perBatch = s.perBatch || padded[0] != 1
		s.perHead = padded[1] != 1
		switch mask.DType() {
		case inference.Float32:
			maskF, _ = floats(mask)
		case inference.Bool:
			maskB, _ = inference.Data[bool](mask)
		default:
			return nil, n.Unsupported("attn_mask of element type %v", mask.DType())
		}
		maskDims = [3]int{padded[0], padded[1], padded[2]}
	}

	batches, hs := 1, 1
	if s.perBatch {
		batches = batch
	}
	if s.perHead {
		hs = heads
	}
	negInf := float32(math.Inf(-1))
	var err error
	if s.data, err = limit.Make[float32](n.Run, batches, hs, qSeq, total); err != nil {
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
				if causal {
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

	view := atHeadView{len(xs), heads, seq, headSize}
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
				off := view.base(b, h) + s*view.ld()
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

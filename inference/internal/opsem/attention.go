package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// AttentionDims is what Attention-23's input shapes and attributes decide:
// Q [batch, q_heads, q_seq, head_size] and K, V [batch, kv_heads, kv_seq,
// head_size | v_head_size] (Rank 4), or the 3-D forms [batch, seq,
// heads·size] with the attributes q_num_heads and kv_num_heads (Rank 3);
// past rows prepended to K and V (Total = Past + KVSeq); query head h reads
// key/value head h / Group; Scale is the attribute or 1/√head_size, Softcap
// the attribute (0: none).
type AttentionDims struct {
	Rank, Batch, QHeads, KVHeads, QSeq, KVSeq, HeadSize, VHeadSize int
	Group, Past, Total                                             int
	Scale, Softcap                                                 float32
}

// Attention checks Attention's Q, K and V shapes, and past_key's and
// past_value's (nil when absent), and returns the dimensions.
func Attention(n Node, q, k, v, pastK, pastV []int) (AttentionDims, error) {
	rank := len(q)
	if rank != 3 && rank != 4 {
		return AttentionDims{}, fmt.Errorf("input 0 (Q) is %v, want rank 3 or 4: %w", q, inference.ErrShape)
	}
	if len(k) != rank || len(v) != rank {
		return AttentionDims{}, fmt.Errorf("Q %v, K %v and V %v differ in rank: %w", q, k, v, inference.ErrShape)
	}
	d := AttentionDims{Rank: rank, Batch: q[0]}
	if rank == 4 {
		d.QHeads, d.QSeq, d.HeadSize = q[1], q[2], q[3]
		d.KVHeads, d.KVSeq = k[1], k[2]
		d.VHeadSize = v[3]
		if k[0] != d.Batch || k[3] != d.HeadSize || v[0] != d.Batch || v[1] != d.KVHeads || v[2] != d.KVSeq {
			return AttentionDims{}, fmt.Errorf("Q %v, K %v and V %v do not agree in batch, heads, sequence or head size: %w", q, k, v, inference.ErrShape)
		}
	} else {
		d.QHeads, d.KVHeads = int(n.Int("q_num_heads", 0)), int(n.Int("kv_num_heads", 0))
		if d.QHeads <= 0 || d.KVHeads <= 0 {
			return AttentionDims{}, fmt.Errorf("3-D inputs need q_num_heads and kv_num_heads > 0, have %d and %d: %w", d.QHeads, d.KVHeads, inference.ErrBadModel)
		}
		d.QSeq, d.KVSeq = q[1], k[1]
		if q[2]%d.QHeads != 0 || k[2]%d.KVHeads != 0 || v[2]%d.KVHeads != 0 {
			return AttentionDims{}, fmt.Errorf("Q %v, K %v, V %v: hidden sizes do not divide into %d query and %d key/value heads: %w", q, k, v, d.QHeads, d.KVHeads, inference.ErrShape)
		}
		d.HeadSize, d.VHeadSize = q[2]/d.QHeads, v[2]/d.KVHeads
		if k[0] != d.Batch || v[0] != d.Batch || v[1] != d.KVSeq || k[2]/d.KVHeads != d.HeadSize {
			return AttentionDims{}, fmt.Errorf("Q %v, K %v and V %v do not agree in batch, sequence or head size: %w", q, k, v, inference.ErrShape)
		}
	}
	if d.KVHeads == 0 || d.QHeads%d.KVHeads != 0 {
		return AttentionDims{}, fmt.Errorf("%d query heads are not a multiple of %d key/value heads: %w", d.QHeads, d.KVHeads, inference.ErrShape)
	}
	d.Group = d.QHeads / d.KVHeads
	if (pastK == nil) != (pastV == nil) {
		return AttentionDims{}, fmt.Errorf("past_key and past_value must be given together: %w", inference.ErrBadModel)
	}
	if pastK != nil {
		if len(pastK) != 4 {
			return AttentionDims{}, fmt.Errorf("input 4 (past_key) is %v, want rank 4: %w", pastK, inference.ErrShape)
		}
		d.Past = pastK[2]
		if want := []int{d.Batch, d.KVHeads, d.Past, d.HeadSize}; !slices.Equal(pastK, want) {
			return AttentionDims{}, fmt.Errorf("input 4 (past_key) is %v, want shape %v: %w", pastK, want, inference.ErrShape)
		}
		if want := []int{d.Batch, d.KVHeads, d.Past, d.VHeadSize}; !slices.Equal(pastV, want) {
			return AttentionDims{}, fmt.Errorf("input 5 (past_value) is %v, want shape %v: %w", pastV, want, inference.ErrShape)
		}
	}
	d.Total = d.Past + d.KVSeq
	d.Scale = float32(1 / math.Sqrt(float64(d.HeadSize)))
	if n.Has("scale") {
		d.Scale = n.Float("scale", d.Scale)
	}
	d.Softcap = n.Float("softcap", 0)
	return d, nil
}

// HeadView addresses the [seq, size] matrix of one (batch, head) pair in a
// [batch, heads, seq, size] tensor (rank 4) or a [batch, seq, heads·size]
// tensor (rank 3): row s starts at Base(b, h) + s·LD().
type HeadView struct {
	Rank, Heads, Seq, Size int
}

// Base is the offset of the first row of head h of batch b.
func (v HeadView) Base(b, h int) int {
	if v.Rank == 4 {
		return (b*v.Heads + h) * v.Seq * v.Size
	}
	return b*v.Seq*v.Heads*v.Size + h*v.Size
}

// LD is the distance between consecutive rows.
func (v HeadView) LD() int {
	if v.Rank == 4 {
		return v.Size
	}
	return v.Heads * v.Size
}

// Views returns the head views of Q, K, V (without past rows) and Y.
func (d AttentionDims) Views() (q, k, v, y HeadView) {
	return HeadView{d.Rank, d.QHeads, d.QSeq, d.HeadSize}, HeadView{d.Rank, d.KVHeads, d.KVSeq, d.HeadSize},
		HeadView{d.Rank, d.KVHeads, d.KVSeq, d.VHeadSize}, HeadView{d.Rank, d.QHeads, d.QSeq, d.VHeadSize}
}

// AttentionMask is the layout of Attention's attn_mask (input 3), aligned
// at the right to [batch, q_heads, q_seq, total]: Dims holds its batch,
// head and query extents (each 1, broadcast, or full) and Len its last
// dimension, which may be shorter than total (the columns past it are
// masked, −inf). A float32 mask is added to the scores; a bool one adds 0
// where true and −inf where false.
type AttentionMask struct {
	Dims [3]int
	Len  int
}

// AttentionMaskOf checks attn_mask's shape and type t against d: Bool, or
// the type of the scores (Q's), which the mask is added to.
func AttentionMaskOf(n Node, mask []int, t, scores inference.DType, d AttentionDims) (AttentionMask, error) {
	if len(mask) < 1 || len(mask) > 4 {
		return AttentionMask{}, fmt.Errorf("input 3 (attn_mask) is %v, want rank 1 to 4: %w", mask, inference.ErrShape)
	}
	m := AttentionMask{Len: mask[len(mask)-1]}
	if m.Len > d.Total {
		return AttentionMask{}, fmt.Errorf("input 3 (attn_mask) is %v, longer than the %d keys: %w", mask, d.Total, inference.ErrShape)
	}
	full := [3]int{d.Batch, d.QHeads, d.QSeq}
	padded := []int{1, 1, 1, 1}
	copy(padded[4-len(mask):], mask)
	for i := range 3 {
		if padded[i] != 1 && padded[i] != full[i] {
			return AttentionMask{}, fmt.Errorf("input 3 (attn_mask) is %v, not broadcastable to [%d %d %d %d]: %w", mask, d.Batch, d.QHeads, d.QSeq, d.Total, inference.ErrShape)
		}
	}
	if t != scores && t != inference.Bool {
		return AttentionMask{}, n.Unsupported("attn_mask of element type %v", t)
	}
	m.Dims = [3]int{padded[0], padded[1], padded[2]}
	return m, nil
}

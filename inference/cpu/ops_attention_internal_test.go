package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Attention with scale 1 on one head: q0 = [1 0] sees scores [0, ln 3]
// (weights ¼, ¾), q1 = [0 0] sees [0, 0]; V = [4; 8].
func TestAttentionHandComputed(t *testing.T) {
	ln3 := float32(math.Log(3))
	q := tensorOf[float32](t, []int{1, 1, 2, 2}, 1, 0, 0, 0)
	k := tensorOf(t, []int{1, 1, 2, 2}, 0, 0, ln3, 0)
	v := tensorOf[float32](t, []int{1, 1, 2, 1}, 4, 8)
	scale := map[string]graph.Attr{"scale": attrFloat(1)}

	out := runKernel(t, testNode("Attention", 23, scale, 4), q, k, v)
	checkFloats(t, out[0], []int{1, 1, 2, 1}, 7, 6)
	checkFloats(t, out[1], []int{1, 1, 2, 2}, floatsOf(t, k)...)
	checkFloats(t, out[3], []int{1, 1, 2, 2}, 0, ln3, 0, 0)

	causal := map[string]graph.Attr{"scale": attrFloat(1), "is_causal": attrInt(1)}
	out = runKernel(t, testNode("Attention", 23, causal, 1), q, k, v)
	checkFloats(t, out[0], []int{1, 1, 2, 1}, 4, 6)

	// A rank-1 bool mask broadcasts over batch, heads and queries.
	mask := tensorOf(t, []int{2}, true, false)
	out = runKernel(t, testNode("Attention", 23, scale, 1), q, k, v, mask)
	checkFloats(t, out[0], []int{1, 1, 2, 1}, 4, 4)

	// A row masked everywhere gets zero weights, not NaN; a float mask
	// shorter than the keys masks the rest.
	fmask := tensorOf(t, []int{2, 1}, float32(math.Inf(-1)), 0)
	mode3 := map[string]graph.Attr{"scale": attrFloat(1), "qk_matmul_output_mode": attrInt(3)}
	out = runKernel(t, testNode("Attention", 23, mode3, 4), q, k, v, fmask)
	checkFloats(t, out[0], []int{1, 1, 2, 1}, 0, 4)
	checkFloats(t, out[3], []int{1, 1, 2, 2}, 0, 0, 1, 0)

	// Opset 24: nonpad_kv_seqlen = 1 keeps key 0 only.
	nonpad := tensorOf(t, []int{1}, int64(1))
	none := inference.Tensor{}
	out = runKernel(t, testNode("Attention", 24, scale, 1), q, k, v, none, none, none, nonpad)
	checkFloats(t, out[0], []int{1, 1, 2, 1}, 4, 4)
}

// Softcap c·tanh(x/c) applies before the mask; mode 1 reports it, mode 2
// adds the mask.
func TestAttentionSoftcapModes(t *testing.T) {
	q := tensorOf[float32](t, []int{1, 1, 1, 1}, 2)
	k := tensorOf[float32](t, []int{1, 1, 2, 1}, 1, 3)
	v := tensorOf[float32](t, []int{1, 1, 2, 1}, 0, 1)
	mask := tensorOf(t, []int{1, 2}, float32(0), -1)
	c := float32(2)
	s0, s1 := c*float32(math.Tanh(1)), c*float32(math.Tanh(3))
	for mode, want := range [][]float32{{2, 6}, {s0, s1}, {s0, s1 - 1}} {
		attrs := map[string]graph.Attr{"scale": attrFloat(1), "softcap": attrFloat(c), "qk_matmul_output_mode": attrInt(int64(mode))}
		out := runKernel(t, testNode("Attention", 23, attrs, 4), q, k, v, mask)
		checkFloats(t, out[3], []int{1, 1, 1, 2}, want...)
		w1 := 1 / (1 + math.Exp(float64(s0-(s1-1))))
		checkFloats(t, out[0], []int{1, 1, 1, 1}, float32(w1))
	}
}

// atTo3D turns [b, h, s, d] into [b, s, h·d].
func atTo3D(t *testing.T, x inference.Tensor) inference.Tensor {
	t.Helper()
	s := x.Shape()
	b, h, n, d := s[0], s[1], s[2], s[3]
	src := floatsOf(t, x)
	out := make([]float32, len(src))
	for i := range b {
		for j := range h {
			for k := range n {
				copy(out[((i*n+k)*h+j)*d:][:d], src[((i*h+j)*n+k)*d:][:d])
			}
		}
	}
	return tensorOf(t, []int{b, n, h * d}, out...)
}

// atRepeatHeads repeats each head of [b, h, s, d] r times in place:
// [h0 h0 h1 h1 …].
func atRepeatHeads(t *testing.T, x inference.Tensor, r int) inference.Tensor {
	t.Helper()
	s := x.Shape()
	per := s[2] * s[3]
	src := floatsOf(t, x)
	var out []float32
	for i := range s[0] * s[1] {
		for range r {
			out = append(out, src[i*per:(i+1)*per]...)
		}
	}
	return tensorOf(t, []int{s[0], s[1] * r, s[2], s[3]}, out...)
}

// atConcatSeq joins [b, h, s1, d] and [b, h, s2, d] along s.
func atConcatSeq(t *testing.T, a, b inference.Tensor) inference.Tensor {
	t.Helper()
	sa, sb := a.Shape(), b.Shape()
	da, db := floatsOf(t, a), floatsOf(t, b)
	pa, pb := sa[2]*sa[3], sb[2]*sb[3]
	var out []float32
	for i := range sa[0] * sa[1] {
		out = append(out, da[i*pa:(i+1)*pa]...)
		out = append(out, db[i*pb:(i+1)*pb]...)
	}
	return tensorOf(t, []int{sa[0], sa[1], sa[2] + sb[2], sa[3]}, out...)
}

// The 3-D form, grouped-query heads and the key/value cache agree with
// plain 4-D multi-head attention on the equivalent inputs.
func TestAttentionEquivalences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q := randTensor(t, r, 2, 4, 3, 5)
	k := randTensor(t, r, 2, 2, 4, 5)
	v := randTensor(t, r, 2, 2, 4, 6)
	pastK := randTensor(t, r, 2, 2, 2, 5)
	pastV := randTensor(t, r, 2, 2, 2, 6)
	mask := tensorOf(t, []int{3, 6}, true, true, true, false, true, true,
		true, false, true, true, true, true,
		false, true, true, true, true, false)
	causal := map[string]graph.Attr{"is_causal": attrInt(1)}

	// Reference: multi-head attention on repeated, concatenated K and V,
	// with the causal frontier folded into the mask: the past is two steps
	// long, so query i sees keys up to i+2.
	fullK, fullV := atRepeatHeads(t, atConcatSeq(t, pastK, k), 2), atRepeatHeads(t, atConcatSeq(t, pastV, v), 2)
	maskData, _ := inference.Data[bool](mask)
	refMask := make([]bool, 18)
	for i := range 3 {
		for j := range 6 {
			refMask[i*6+j] = maskData[i*6+j] && j <= i+2
		}
	}
	want := runKernel(t, testNode("Attention", 23, nil, 1), q, fullK, fullV, tensorOf(t, []int{3, 6}, refMask...))[0]

	out := runKernel(t, testNode("Attention", 23, causal, 3), q, k, v, mask, pastK, pastV)
	checkFloats(t, out[0], want.Shape(), floatsOf(t, want)...)
	checkFloats(t, out[1], []int{2, 2, 6, 5}, floatsOf(t, atConcatSeq(t, pastK, k))...)
	checkFloats(t, out[2], []int{2, 2, 6, 6}, floatsOf(t, atConcatSeq(t, pastV, v))...)

	heads := map[string]graph.Attr{"is_causal": attrInt(1), "q_num_heads": attrInt(4), "kv_num_heads": attrInt(2)}
	out3 := runKernel(t, testNode("Attention", 23, heads, 3), atTo3D(t, q), atTo3D(t, k), atTo3D(t, v), mask, pastK, pastV)
	want3 := atTo3D(t, want)
	checkFloats(t, out3[0], want3.Shape(), floatsOf(t, want3)...)
	checkFloats(t, out3[1], []int{2, 2, 6, 5}, floatsOf(t, out[1])...)
}

func TestAttentionErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := testNode("Attention", 23, nil, 1)
	if _, err := kernels["Attention"](n, []inference.Tensor{randTensor(t, r, 2, 3), randTensor(t, r, 2, 3), randTensor(t, r, 2, 3)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("rank-2 Q: %v, want ErrShape", err)
	}
	// 3 query heads do not group over 2 key/value heads.
	if _, err := kernels["Attention"](n, []inference.Tensor{randTensor(t, r, 1, 3, 2, 4), randTensor(t, r, 1, 2, 2, 4), randTensor(t, r, 1, 2, 2, 4)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("3 over 2 heads: %v, want ErrShape", err)
	}
	// A mask that does not broadcast over the queries.
	bad := tensorOf(t, []int{3, 2}, true, true, true, true, true, true)
	if _, err := kernels["Attention"](n, []inference.Tensor{randTensor(t, r, 1, 1, 2, 4), randTensor(t, r, 1, 1, 2, 4), randTensor(t, r, 1, 1, 2, 4), bad}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("mask [3 2] for 2 queries: %v, want ErrShape", err)
	}
	intMask := tensorOf(t, []int{2}, int64(0), 1)
	if _, err := kernels["Attention"](n, []inference.Tensor{randTensor(t, r, 1, 1, 2, 4), randTensor(t, r, 1, 1, 2, 4), randTensor(t, r, 1, 1, 2, 4), intMask}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("int64 mask: %v, want ErrUnsupportedOp", err)
	}
}

// x = [1 2 3 4] with cos = [0 1], sin = [1 0]: the first pair turns by 90°,
// the second stays.
func TestRotaryEmbedding(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 1, 1, 4}, 1, 2, 3, 4)
	cos := tensorOf(t, []int{1, 1, 2}, float32(0), 1)
	sin := tensorOf(t, []int{1, 1, 2}, float32(1), 0)
	out := runKernel(t, testNode("RotaryEmbedding", 23, nil, 1), x, cos, sin)
	// Halves: pairs (x0, x2) and (x1, x3).
	checkFloats(t, out[0], []int{1, 1, 1, 4}, -3, 2, 1, 4)
	inter := map[string]graph.Attr{"interleaved": attrInt(1)}
	out = runKernel(t, testNode("RotaryEmbedding", 23, inter, 1), x, cos, sin)
	checkFloats(t, out[0], []int{1, 1, 1, 4}, -2, 1, 3, 4)

	// 3-D input of two heads of size 2, rotary_embedding_dim 2, caches
	// picked by position_ids: position 1 turns by 90°, position 0 not.
	x3 := tensorOf[float32](t, []int{1, 2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)
	cosP := tensorOf(t, []int{2, 1}, float32(1), 0)
	sinP := tensorOf(t, []int{2, 1}, float32(0), 1)
	pos := tensorOf(t, []int{1, 2}, int64(0), 1)
	attrs := map[string]graph.Attr{"num_heads": attrInt(2), "rotary_embedding_dim": attrInt(2)}
	out = runKernel(t, testNode("RotaryEmbedding", 23, attrs, 1), x3, cosP, sinP, pos)
	checkFloats(t, out[0], []int{1, 2, 4}, 1, 2, 3, 4, -6, 5, -8, 7)

	bad := tensorOf(t, []int{1, 2}, int64(0), 2)
	if _, err := kernels["RotaryEmbedding"](testNode("RotaryEmbedding", 23, attrs, 1), []inference.Tensor{x3, cosP, sinP, bad}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("position 2 of 2: %v, want ErrShape", err)
	}
}

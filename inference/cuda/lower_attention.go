package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// The lowering of Attention-23 (what passes.RecognizeAttention makes of
// the scaled dot-product attention exporters write): per (batch, query
// head) unit, the scores scale·Q·Kᵀ in one GEMM (the scale as its alpha),
// the softcap, mask, causal bias and softmax in one attention_softmax_f32
// launch (norm.cu), and the weights times V in another GEMM. The
// dimensions and the mask's layout are opsem.Attention's and
// opsem.AttentionMaskOf's. Past keys and values, nonpad_kv_seqlen and the
// outputs past Y run on the host.
//
// In FP16 mode, float16 Attention (what passes.StoreInFloat16 makes of it)
// takes float16 Q, K and V: the scores accumulate in float32, and
// attention_softmax_f16 rounds the weights to float16 for the product
// with V, as float16 attention kernels do: one rounding more than the
// mode's meaning (cuda.Reference), inside its tolerance. A float16 model's
// own Attention, in FP32 mode, runs in float32 between casts (lowerNode),
// so that its output is rounded once.

func init() {
	registerLowering("Attention", lowerAttention)
	registerHalf("Attention")
}

func lowerAttention(l *lowering) error {
	q, k, v := l.In[0], l.In[1], l.In[2]
	half := q.DType == inference.Float16
	if half && l.p.m.precision != inference.FP16 {
		return lowerInFloat32(l, lowerAttention)
	}
	if q.DType != k.DType || q.DType != v.DType || q.DType != inference.Float32 && !half {
		return l.NoKernel("Q %v, K %v, V %v", q.DType, k.DType, v.DType)
	}
	for i, name := range []string{4: "past_key", 5: "past_value", 6: "nonpad_kv_seqlen"} {
		if name != "" && l.input(i).Present() {
			return l.NoKernel("input %d (%s)", i, name)
		}
	}
	for i := 1; i < len(l.Out); i++ {
		if l.Out[i].Present() {
			return l.NoKernel("output %d is used", i)
		}
	}
	d, err := opsem.Attention(l.Node, q.Shape, k.Shape, v.Shape, nil, nil)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	yShape := []int{d.Batch, d.QHeads, d.QSeq, d.VHeadSize}
	if d.Rank == 3 {
		yShape = []int{d.Batch, d.QSeq, d.QHeads * d.VHeadSize}
	}
	if err := checkOut(l, 0, q.DType, yShape); err != nil {
		return err
	}
	maskKind, maskArgs := int64(kernels.ATTN_MASK_NONE), []kernelArg{intArg(0), intArg(0), intArg(0), intArg(0)}
	mask := l.input(3)
	if mask.Present() {
		m, err := opsem.AttentionMaskOf(l.Node, mask.Shape, mask.DType, q.DType, d)
		if err != nil {
			return l.NoKernel("%v", err)
		}
		maskKind = kernels.ATTN_MASK_FLOAT
		if mask.DType == inference.Bool {
			maskKind = kernels.ATTN_MASK_BOOL
		}
		// The mask is contiguous: a dimension of extent 1 broadcasts.
		stride := func(extent int, inner int64) int64 {
			if extent == 1 {
				return 0
			}
			return inner
		}
		mi := int64(m.Len)
		mh := int64(m.Dims[2]) * mi
		mb := int64(m.Dims[1]) * mh
		maskArgs = []kernelArg{intArg(m.Len), intArg(stride(m.Dims[0], mb)), intArg(stride(m.Dims[1], mh)), intArg(stride(m.Dims[2], mi))}
	}
	units := d.Batch * d.QHeads
	if units == 0 || d.QSeq == 0 || d.VHeadSize == 0 {
		return nil
	}
	if d.Total == 0 {
		return l.NoKernel("no keys") // ONNX leaves the weights of an empty row undefined
	}
	qv, kv, vv, yv := d.Views()
	kvHead := func(u int) (b, h int) { return u / d.QHeads, u % d.QHeads / d.Group }
	qHead := func(u int) (b, h int) { return u / d.QHeads, u % d.QHeads }
	block := int64(d.QSeq) * int64(d.Total)
	scores := l.Scratch(inference.Float32, []int{units, d.QSeq, d.Total})

	// scoresᵀ (total × q_seq, column-major) = scale·K·Qᵀ, per unit.
	qk := gemmOp{Gemm: Gemm{TransA: true, M: d.Total, N: d.QSeq, K: d.HeadSize, Alpha: d.Scale,
		LDA: kv.LD(), LDB: qv.LD(), LDC: d.Total}, OpA: k, OpB: q, OpC: scores}
	err = unitGemms(l, qk, units,
		func(u int) int64 { return int64(kv.Base(kvHead(u))) },
		func(u int) int64 { return int64(qv.Base(qHead(u))) },
		func(u int) int64 { return int64(u) * block })
	if err != nil {
		return err
	}
	args := append([]kernelArg{ptrArg(scores), optionalArg(mask), intArg(maskKind), intArg(int64(units) * int64(d.QSeq)),
		intArg(d.QSeq), intArg(d.QHeads), intArg(d.Total)}, maskArgs...)
	args = append(args, intArg(l.Int("is_causal", 0)), floatArg(d.Softcap))
	softmax, weights := kernels.AttentionSoftmaxF32, scores
	if half {
		softmax, weights = kernels.AttentionSoftmaxF16, l.Scratch(inference.Float16, scores.Shape)
		args = append([]kernelArg{ptrArg(weights)}, args...)
	}
	if err := launchRows(l, softmax, int64(units)*int64(d.QSeq), args...); err != nil {
		return err
	}
	// Yᵀ (v_head_size × q_seq) = Vᵀ·weightsᵀ, per unit.
	pv := gemmOp{Gemm: Gemm{M: d.VHeadSize, N: d.QSeq, K: d.Total, Alpha: 1,
		LDA: vv.LD(), LDB: d.Total, LDC: yv.LD()}, OpA: v, OpB: weights, OpC: l.Out[0]}
	return unitGemms(l, pv, units,
		func(u int) int64 { return int64(vv.Base(kvHead(u))) },
		func(u int) int64 { return int64(u) * block },
		func(u int) int64 { return int64(yv.Base(qHead(u))) })
}

// unitGemms queues g once per unit u < units, its operands at aOff(u),
// bOff(u) and cOff(u) elements: runs of consecutive units whose offsets
// step by constant strides share one strided batched call.
func unitGemms(l *lowering, g gemmOp, units int, aOff, bOff, cOff func(u int) int64) error {
	for i := 0; i < units; {
		j := i + 1
		var sa, sb, sc int64
		if j < units {
			sa, sb, sc = aOff(j)-aOff(i), bOff(j)-bOff(i), cOff(j)-cOff(i)
		}
		for j < units && aOff(j)-aOff(j-1) == sa && bOff(j)-bOff(j-1) == sb && cOff(j)-cOff(j-1) == sc {
			j++
		}
		u := g
		u.Batch = j - i
		u.AOff, u.BOff, u.COff = g.AOff+aOff(i), g.BOff+bOff(i), g.COff+cOff(i)
		u.StrideA, u.StrideB, u.StrideC = sa, sb, sc
		if err := l.Gemm(u); err != nil {
			return err
		}
		i = j
	}
	return nil
}

package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the matrix products: Gemm and MatMul as cuBLAS GEMMs
// (nn.cu's gemm_fill_f32 broadcasts Gemm's C into the output first). The
// semantics are the CPU backend's (inference/cpu/ops_nn.go).

func init() {
	registerLowering("Gemm", lowerGemm)
	registerLowering("MatMul", lowerMatMul)
}

// lowerGemm computes Y = alpha·A'·B' + beta·C as the column-major
// Yᵀ = alpha·B'ᵀ·A'ᵀ + beta·Cᵀ, after gemm_fill_f32 has broadcast C into Y.
func lowerGemm(l *lowering) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if a.DType != inference.Float32 || b.DType != inference.Float32 {
		return l.NoKernel("%v and %v inputs", a.DType, b.DType)
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		return l.NoKernel("A %v, B %v, want rank 2", a.Shape, b.Shape)
	}
	transA, transB := l.Int("transA", 0) != 0, l.Int("transB", 0) != 0
	alpha, beta := l.Float("alpha", 1), l.Float("beta", 1)
	m, k := a.Shape[0], a.Shape[1]
	if transA {
		m, k = k, m
	}
	kb, n := b.Shape[0], b.Shape[1]
	if transB {
		kb, n = n, kb
	}
	if k != kb || k == 0 || !slices.Equal(y.Shape, []int{m, n}) {
		return l.NoKernel("A %v, B %v, Y %v", a.Shape, b.Shape, y.Shape)
	}
	if y.Len() == 0 {
		return nil
	}
	if c := l.input(2); c.Present() && beta != 0 {
		if c.DType != inference.Float32 || c.Rank() > 2 || (l.Opset < 7 && l.Int("broadcast", 0) == 0 && !slices.Equal(c.Shape, y.Shape)) {
			return l.NoKernel("C %v %v", c.DType, c.Shape)
		}
		cm, cn := 1, 1
		if c.Rank() >= 1 {
			cn = c.Shape[c.Rank()-1]
		}
		if c.Rank() == 2 {
			cm = c.Shape[0]
		}
		if (cm != 1 && cm != m) || (cn != 1 && cn != n) {
			return l.NoKernel("C %v does not broadcast to %v", c.Shape, y.Shape)
		}
		var rs, cs int
		if cm == m {
			rs = cn
		}
		if cn == n {
			cs = 1
		}
		if err := l.Launch(kernels.GemmFillF32, y.Len(), ptrArg(y), ptrArg(c), intArg(m), intArg(n), intArg(rs), intArg(cs)); err != nil {
			return err
		}
	} else {
		beta = 0
	}
	return l.Gemm(gemmOp{Gemm: Gemm{TransA: transB, TransB: transA, M: n, N: m, K: k, Alpha: alpha, Beta: beta,
		LDA: max(1, b.Shape[1]), LDB: max(1, a.Shape[1]), LDC: n}, OpA: b, OpB: a, OpC: y})
}

// lowerMatMul follows numpy.matmul, as the CPU does: each product of the
// broadcast batch is the column-major Y_bᵀ = B_bᵀ·A_bᵀ. Consecutive
// products whose operands lie at constant strides share one strided
// batched call; with one B and contiguous A the batch is a single product
// of (batch·m) rows.
func lowerMatMul(l *lowering) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if a.DType != inference.Float32 || b.DType != inference.Float32 {
		return l.NoKernel("%v and %v inputs", a.DType, b.DType)
	}
	as, bs := a.Shape, b.Shape
	if len(as) == 0 || len(bs) == 0 {
		return l.NoKernel("scalar operand")
	}
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	if bs[len(bs)-2] != k || k == 0 {
		return l.NoKernel("A %v, B %v", a.Shape, b.Shape)
	}
	aBatch, bBatch := as[:len(as)-2], bs[:len(bs)-2]
	batch, err := cpu.BroadcastShape(aBatch, bBatch)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if y.Len() == 0 {
		return nil
	}
	nb := int(numElems(batch))
	aOff, bOff := cpu.BroadcastOffsets(aBatch, batch), cpu.BroadcastOffsets(bBatch, batch)
	g := gemmOp{Gemm: Gemm{M: n, N: m, K: k, Alpha: 1, LDA: n, LDB: k, LDC: n}, OpA: b, OpB: a, OpC: y}
	oneB := !slices.ContainsFunc(bOff, func(o int) bool { return o != 0 })
	if oneB && slices.Equal(aOff, rangeInts(nb)) {
		g.N = nb * m
		return l.Gemm(g)
	}
	ak, bk, yk := int64(m*k), int64(k*n), int64(m*n)
	for i := 0; i < nb; {
		j := i + 1
		var sa, sb int
		if j < nb {
			sa, sb = aOff[j]-aOff[i], bOff[j]-bOff[i]
		}
		for j < nb && aOff[j]-aOff[j-1] == sa && bOff[j]-bOff[j-1] == sb {
			j++
		}
		u := g
		u.Batch = j - i
		u.AOff, u.BOff, u.COff = int64(bOff[i])*bk, int64(aOff[i])*ak, int64(i)*yk
		u.StrideA, u.StrideB, u.StrideC = int64(sb)*bk, int64(sa)*ak, yk
		if err := l.Gemm(u); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func rangeInts(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

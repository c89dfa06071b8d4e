package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the matrix products: Gemm and MatMul as cuBLAS GEMMs
// (nn.cu's gemm_fill_f32 broadcasts Gemm's C into the output first). How
// they multiply is opsem.Gemm's and opsem.GemmBias', and opsem.MatMul's.

func init() {
	registerLowering("Gemm", lowerGemm)
	registerLowering("MatMul", lowerMatMul)
	registerHalf("Gemm", "MatMul")
}

// productTypes checks that a product's A and B are both float32 or both
// float16 (a float16 product accumulates in float32 and rounds its output
// once: epilogue.finish).
func productTypes(l *lowering, a, b operand) error {
	if a.DType != b.DType || a.DType != inference.Float32 && a.DType != inference.Float16 {
		return l.NoKernel("%v and %v inputs", a.DType, b.DType)
	}
	return nil
}

// accumulator returns where a product of y's type accumulates: y itself,
// unless y is float16 and the product needs float32 before its one
// rounding (a C to add, an epilogue), then float32 scratch of y's shape.
func accumulator(l *lowering, y operand, needed bool) operand {
	if y.DType == inference.Float16 && needed {
		return l.Scratch(inference.Float32, y.Shape)
	}
	return y
}

// lowerGemm computes Y = alpha·A'·B' + beta·C as the column-major
// Yᵀ = alpha·B'ᵀ·A'ᵀ + beta·Cᵀ, after gemm_fill_f32 has broadcast C into Y,
// then the fused epilogue (epilogue.go) in one launch.
func lowerGemm(l *lowering) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if err := productTypes(l, a, b); err != nil {
		return err
	}
	g, err := opsem.Gemm(l.Node, a.Shape, b.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if g.K == 0 {
		return l.NoKernel("A %v, B %v: empty inner dimension", a.Shape, b.Shape)
	}
	if err := checkOut(l, 0, a.DType, []int{g.M, g.N}); err != nil {
		return err
	}
	bias, err := fusedBias(l, y)
	if err != nil {
		return err
	}
	ep, err := productEpilogue(l, y, bias, 1, int64(g.N))
	if err != nil {
		return err
	}
	beta := g.Beta
	c := l.input(2)
	if !c.Present() {
		beta = 0
	}
	if y.Len() == 0 {
		return nil
	}
	acc := accumulator(l, y, beta != 0 || !ep.none())
	if beta != 0 {
		fill := halfKernel(kernels.GemmFillF32, kernels.GemmFillF16, c.DType)
		if c.DType != a.DType || fill == "" {
			return l.NoKernel("C of type %v", c.DType)
		}
		cm, cn, err := opsem.GemmBias(l.Node, g, c.Shape)
		if err != nil {
			return l.NoKernel("%v", err)
		}
		var rs, cs int
		if cm == g.M {
			rs = cn
		}
		if cn == g.N {
			cs = 1
		}
		if err := l.Launch(fill, y.Len(), ptrArg(acc), ptrArg(c), intArg(g.M), intArg(g.N), intArg(rs), intArg(cs)); err != nil {
			return err
		}
	}
	if err := l.Gemm(gemmOp{Gemm: Gemm{TransA: g.TransB, TransB: g.TransA, M: g.N, N: g.M, K: g.K, Alpha: g.Alpha, Beta: beta,
		LDA: max(1, b.Shape[1]), LDB: max(1, a.Shape[1]), LDC: g.N}, OpA: b, OpB: a, OpC: acc}); err != nil {
		return err
	}
	return ep.finish(l, acc, y)
}

// lowerMatMul multiplies as opsem.MatMul says: each product of the
// broadcast batch is the column-major Y_bᵀ = B_bᵀ·A_bᵀ. Consecutive
// products whose operands lie at constant strides share one strided
// batched call; with one B and contiguous A the batch is a single product
// of (batch·m) rows. The fused epilogue (epilogue.go) follows in one
// launch.
func lowerMatMul(l *lowering) error {
	a, b, y := l.In[0], l.In[1], l.Out[0]
	if err := productTypes(l, a, b); err != nil {
		return err
	}
	s, err := opsem.MatMul(a.Shape, b.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if s.K == 0 {
		return l.NoKernel("A %v, B %v: empty inner dimension", a.Shape, b.Shape)
	}
	if err := checkOut(l, 0, a.DType, s.Out); err != nil {
		return err
	}
	bias, err := fusedBias(l, y)
	if err != nil {
		return err
	}
	ep, err := productEpilogue(l, y, bias, 1, int64(s.N))
	if err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	acc := accumulator(l, y, !ep.none())
	if err := matMulGemms(l, a, b, acc, s); err != nil {
		return err
	}
	return ep.finish(l, acc, y)
}

// matMulGemms queues the GEMMs of lowerMatMul.
func matMulGemms(l *lowering, a, b, y operand, s opsem.MatMulShape) error {
	m, k, n := s.M, s.K, s.N
	aOff, bOff := s.AOffsets, s.BOffsets
	nb := len(aOff)
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

// rangeInts returns 0, 1, …, n−1.
func rangeInts(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

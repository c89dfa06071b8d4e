package cpu

import (
	"fmt"
	"math"
	"runtime"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Linear algebra: MatMul and Gemm, whose float32 products go through
// nnSgemm (sgemm.go), and Det.

func init() {
	register("MatMul", laMatMul)
	register("Gemm", laGemm)
	register("Det", laDet)
}

// MatMul follows numpy.matmul (opsem.MatMul): a 1-D A is a row vector and
// a 1-D B a column vector (the added dimension is dropped from the result),
// and the dimensions before the last two broadcast. A fused epilogue
// (fuse.go) is applied to the float32 output's blocks as the products
// complete them.
func laMatMul(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	a, err := requiredArg(in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, err := requiredArg(in, 1, "B")
	if err != nil {
		return nil, err
	}
	if a.DType() != b.DType() {
		return nil, fmt.Errorf("A is %v, B is %v: %w", a, b, inference.ErrType)
	}
	s, err := opsem.MatMul(a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	m, k, n2, outShape := s.M, s.K, s.N, s.Out
	nb, aOff, bOff := opsem.Count(s.Batch), s.AOffsets, s.BOffsets
	switch a.DType() {
	case inference.Float32:
		ad, _ := floats(a)
		bd, _ := floats(b)
		alloc := limit.Make[float32]
		if k > 0 {
			alloc = limit.MakeOverwritten[float32] // the products (beta 0) write every element
		}
		out, err := alloc(n.Run, nb, m, n2)
		if err != nil {
			return nil, err
		}
		ep, err := fusedEpilogue(n, in, outShape)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 || k == 0 { // no products, and no offsets (opsem.MatMul)
			ep.applyRows(out, n2)
			outs, err := opsem.Single(n, outShape, out)
			return unfusedEpilogue(n, in, ep, outs, err)
		}
		if len(s.BBatch) == 0 {
			// B is one matrix and A's batches are contiguous: one product
			// of (batch·m)×k by k×n.
			pre := nnPrepacked{b: packedFor(n.Prepared, bd)}
			nnSgemmPre(runtime.GOMAXPROCS(0), pre, nnBlocks{tail: ep.tail(0, n2)}, false, false, nb*m, n2, k, 1, ad, k, bd, n2, 0, out, n2)
		} else {
			eachUnit(nb, 2*m*n2*k, func(lo, hi, threads int) {
				for i := lo; i < hi; i++ {
					nnSgemmPre(threads, nnPrepacked{}, nnBlocks{tail: ep.tail(i*m*n2, n2)}, false, false, m, n2, k, 1, ad[aOff[i]*m*k:], k, bd[bOff[i]*k*n2:], n2, 0, out[i*m*n2:], n2)
				}
			})
		}
		outs, err := opsem.Single(n, outShape, out)
		return unfusedEpilogue(n, in, ep, outs, err)
	case inference.Int64:
		ad, _ := inference.Data[int64](a)
		bd, _ := inference.Data[int64](b)
		outs, err := laMatMulInts(n.Run, outShape, nb, m, n2, k, ad, bd, aOff, bOff)
		return unfusedEpilogue(n, in, nil, outs, err)
	case inference.Int32:
		ad, _ := inference.Data[int32](a)
		bd, _ := inference.Data[int32](b)
		outs, err := laMatMulInts(n.Run, outShape, nb, m, n2, k, ad, bd, aOff, bOff)
		return unfusedEpilogue(n, in, nil, outs, err)
	}
	return nil, n.Unsupported("element type %v", a.DType())
}

// laMatMulInts multiplies nb pairs of integer matrices, wrapping on
// overflow as the fixed-width types do.
func laMatMulInts[T int32 | int64](r *limit.Run, shape []int, nb, m, n, k int, a, b []T, aOff, bOff []int) ([]inference.Tensor, error) {
	out, err := limit.Make[T](r, nb, m, n)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || k == 0 { // no products, and no offsets (opsem.MatMul)
		return singleOutput(shape, out)
	}
	for i := range nb {
		am, bm, cm := a[aOff[i]*m*k:], b[bOff[i]*k*n:], out[i*m*n:]
		for r := range m {
			crow := cm[r*n : r*n+n]
			for p := range k {
				av := am[r*k+p]
				brow := bm[p*n : p*n+n]
				for j := range crow {
					crow[j] += av * brow[j]
				}
			}
		}
	}
	return singleOutput(shape, out)
}

// Gemm computes Y = alpha·A'·B' + beta·C with A' = transpose(A) if transA
// and B' likewise (opsem.Gemm); C broadcasts to Y's m×n shape as
// opsem.GemmBias says. A fused epilogue (fuse.go) is applied to Y's rows
// after the product.
func laGemm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	a, ad, err := requiredFloatArg(n, in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, bd, err := requiredFloatArg(n, in, 1, "B")
	if err != nil {
		return nil, err
	}
	as, bs := a.Shape(), b.Shape()
	g, err := opsem.Gemm(n, as, bs)
	if err != nil {
		return nil, err
	}
	beta := g.Beta
	out, err := limit.Make[float32](n.Run, g.M, g.N)
	if err != nil {
		return nil, err
	}
	ep, err := fusedEpilogue(n, in, []int{g.M, g.N})
	if err != nil {
		return nil, err
	}
	if len(in) > 2 && present(in[2]) {
		c, cd, err := requiredFloatArg(n, in, 2, "C")
		if err != nil {
			return nil, err
		}
		if err := laFillBias(n, g, c.Shape(), cd, out); err != nil {
			return nil, err
		}
	} else {
		beta = 0
	}
	pre := nnPrepacked{b: packedFor(n.Prepared, bd)}
	nnSgemmPre(runtime.GOMAXPROCS(0), pre, nnBlocks{tail: ep.tail(0, g.N)}, g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, ad, as[1], bd, bs[1], beta, out, g.N)
	outs, err := opsem.Single(n, []int{g.M, g.N}, out)
	return unfusedEpilogue(n, in, ep, outs, err)
}

// laFillBias writes Gemm's C, of shape cs, broadcast to M×N as
// opsem.GemmBias says, into out.
func laFillBias(n opsem.Node, g opsem.GemmShape, cs []int, cd []float32, out []float32) error {
	cm, cn, err := opsem.GemmBias(n, g, cs)
	if err != nil || len(out) == 0 { // the loop would count the rows of an empty output
		return err
	}
	m, cols := g.M, g.N
	for i := range m {
		ci := 0
		if cm == m {
			ci = i
		}
		row := out[i*cols : (i+1)*cols]
		if cn == 1 {
			v := cd[ci]
			for j := range row {
				row[j] = v
			}
		} else {
			copy(row, cd[ci*cn:ci*cn+cols])
		}
	}
	return nil
}

// laDet is Det: the determinant of each square matrix in the trailing two
// dimensions, by LU decomposition with partial pivoting in float64.
func laDet(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 1 {
		return nil, fmt.Errorf("no input: %w", inference.ErrBadModel)
	}
	x := in[0]
	if x.DType() != inference.Float32 {
		return nil, n.Unsupported("element type %v", x.DType())
	}
	shape := x.Shape()
	r := len(shape)
	if r < 2 || shape[r-1] != shape[r-2] {
		return nil, fmt.Errorf("input %v, want [*, M, M]: %w", x, inference.ErrShape)
	}
	m := shape[r-1]
	data, _ := floats(x)
	batch := opsem.Count(shape[:r-2])
	det, err := limit.Make[float32](n.Run, batch)
	if err != nil {
		return nil, err
	}
	a, err := limit.Make[float64](n.Run, m, m)
	if err != nil {
		return nil, err
	}
	for b := range batch {
		for i, v := range data[b*m*m : (b+1)*m*m] {
			a[i] = float64(v)
		}
		det[b] = float32(laLUDet(a, m))
	}
	return opsem.Single(n, shape[:r-2], det)
}

// laLUDet returns the determinant of the m×m matrix a, overwriting a.
func laLUDet(a []float64, m int) float64 {
	det := 1.0
	for k := range m {
		p := k
		for i := k + 1; i < m; i++ {
			if math.Abs(a[i*m+k]) > math.Abs(a[p*m+k]) {
				p = i
			}
		}
		if a[p*m+k] == 0 {
			return 0
		}
		if p != k {
			for j := range m {
				a[k*m+j], a[p*m+j] = a[p*m+j], a[k*m+j]
			}
			det = -det
		}
		pivot := a[k*m+k]
		det *= pivot
		for i := k + 1; i < m; i++ {
			f := a[i*m+k] / pivot
			for j := k + 1; j < m; j++ {
				a[i*m+j] -= f * a[k*m+j]
			}
		}
	}
	return det
}

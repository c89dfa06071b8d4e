package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Linear algebra: MatMul and Gemm, whose float32 products go through
// nnSgemm (sgemm.go), and Det.

func init() {
	register("MatMul", laMatMul)
	register("Gemm", laGemm)
	register("Det", laDet)
}

// MatMul follows numpy.matmul: a 1-D A is a row vector and a 1-D B a column
// vector (the added dimension is dropped from the result), and the
// dimensions before the last two broadcast.
func laMatMul(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
	as, bs := a.Shape(), b.Shape()
	if len(as) == 0 || len(bs) == 0 {
		return nil, fmt.Errorf("A is %v, B is %v; MatMul needs rank ≥ 1: %w", a, b, inference.ErrShape)
	}
	var outShape []int
	dropRow, dropCol := len(as) == 1, len(bs) == 1
	if dropRow {
		as = []int{1, as[0]}
	}
	if dropCol {
		bs = []int{bs[0], 1}
	}
	m, k, n2 := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	if bs[len(bs)-2] != k {
		return nil, fmt.Errorf("A is %v, B is %v: inner dimensions %d and %d differ: %w", a, b, k, bs[len(bs)-2], inference.ErrShape)
	}
	aBatch, bBatch := as[:len(as)-2], bs[:len(bs)-2]
	batch, err := BroadcastShape(aBatch, bBatch)
	if err != nil {
		return nil, fmt.Errorf("A is %v, B is %v: batch dimensions: %w", a, b, err)
	}
	outShape = append(outShape, batch...)
	if !dropRow {
		outShape = append(outShape, m)
	}
	if !dropCol {
		outShape = append(outShape, n2)
	}
	nb := product(batch)
	aOff := BroadcastOffsets(aBatch, batch)
	bOff := BroadcastOffsets(bBatch, batch)
	switch a.DType() {
	case inference.Float32:
		ad, _ := Floats(a)
		bd, _ := Floats(b)
		out := make([]float32, nb*m*n2)
		if len(bBatch) == 0 {
			// B is one matrix and A's batches are contiguous: one product
			// of (batch·m)×k by k×n.
			nnSgemm(false, false, nb*m, n2, k, 1, ad, k, bd, n2, 0, out, n2)
		} else {
			eachUnit(nb, 2*m*n2*k, func(lo, hi, threads int) {
				for i := lo; i < hi; i++ {
					nnSgemmThreads(threads, false, false, m, n2, k, 1, ad[aOff[i]*m*k:], k, bd[bOff[i]*k*n2:], n2, 0, out[i*m*n2:], n2)
				}
			})
		}
		return singleOutput(outShape, out)
	case inference.Int64:
		ad, _ := inference.Data[int64](a)
		bd, _ := inference.Data[int64](b)
		return singleOutput(outShape, laMatMulInts(nb, m, n2, k, ad, bd, aOff, bOff))
	case inference.Int32:
		ad, _ := inference.Data[int32](a)
		bd, _ := inference.Data[int32](b)
		return singleOutput(outShape, laMatMulInts(nb, m, n2, k, ad, bd, aOff, bOff))
	}
	return nil, Unsupported(n, "element type %v", a.DType())
}

// laMatMulInts multiplies nb pairs of integer matrices, wrapping on
// overflow as the fixed-width types do.
func laMatMulInts[T int32 | int64](nb, m, n, k int, a, b []T, aOff, bOff []int) []T {
	out := make([]T, nb*m*n)
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
	return out
}

// Gemm computes Y = alpha·A'·B' + beta·C with A' = transpose(A) if transA
// and B' likewise. C broadcasts to Y's m×n shape; before opset 7 it does so
// only when the broadcast attribute is 1, and must be m×n otherwise.
func laGemm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	a, ad, err := requiredFloatArg(n, in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, bd, err := requiredFloatArg(n, in, 1, "B")
	if err != nil {
		return nil, err
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		return nil, fmt.Errorf("A is %v, B is %v, want rank 2: %w", a, b, inference.ErrShape)
	}
	transA, transB := n.Int("transA", 0) != 0, n.Int("transB", 0) != 0
	alpha, beta := n.Float("alpha", 1), n.Float("beta", 1)
	as, bs := a.Shape(), b.Shape()
	m, k := as[0], as[1]
	if transA {
		m, k = k, m
	}
	kb, cols := bs[0], bs[1]
	if transB {
		kb, cols = cols, kb
	}
	if k != kb {
		return nil, fmt.Errorf("A is %v (transA %v), B is %v (transB %v): inner dimensions %d and %d differ: %w", a, transA, b, transB, k, kb, inference.ErrShape)
	}
	out := make([]float32, m*cols)
	if len(in) > 2 && Present(in[2]) {
		c, cd, err := requiredFloatArg(n, in, 2, "C")
		if err != nil {
			return nil, err
		}
		if err := laFillBias(n, c, cd, m, cols, out); err != nil {
			return nil, err
		}
	} else {
		beta = 0
	}
	nnSgemm(transA, transB, m, cols, k, alpha, ad, as[1], bd, bs[1], beta, out, cols)
	return singleOutput([]int{m, cols}, out)
}

// laFillBias writes Gemm's C, broadcast to m×n, into out.
func laFillBias(n Node, c inference.Tensor, cd []float32, m, cols int, out []float32) error {
	cs := c.Shape()
	legacyExact := n.Opset < 7 && n.Int("broadcast", 0) == 0
	if legacyExact && !slices.Equal(cs, []int{m, cols}) {
		return fmt.Errorf("C is %v, want [%d %d] (broadcast=0 before opset 7): %w", c, m, cols, inference.ErrShape)
	}
	if len(cs) > 2 {
		return fmt.Errorf("C is %v, want rank ≤ 2: %w", c, inference.ErrShape)
	}
	cm, cn := 1, 1
	if len(cs) >= 1 {
		cn = cs[len(cs)-1]
	}
	if len(cs) == 2 {
		cm = cs[0]
	}
	if (cm != 1 && cm != m) || (cn != 1 && cn != cols) {
		return fmt.Errorf("C is %v, which does not broadcast to [%d %d]: %w", c, m, cols, inference.ErrShape)
	}
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
func laDet(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 1 {
		return nil, fmt.Errorf("no input: %w", inference.ErrBadModel)
	}
	x := in[0]
	if x.DType() != inference.Float32 {
		return nil, Unsupported(n, "element type %v", x.DType())
	}
	shape := x.Shape()
	r := len(shape)
	if r < 2 || shape[r-1] != shape[r-2] {
		return nil, fmt.Errorf("input %v, want [*, M, M]: %w", x, inference.ErrShape)
	}
	m := shape[r-1]
	data, _ := Floats(x)
	batch := product(shape[:r-2])
	det := make([]float32, batch)
	a := make([]float64, m*m)
	for b := range batch {
		for i, v := range data[b*m*m : (b+1)*m*m] {
			a[i] = float64(v)
		}
		det[b] = float32(laLUDet(a, m))
	}
	return singleOutput(shape[:r-2], det)
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

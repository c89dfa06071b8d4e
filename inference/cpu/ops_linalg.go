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

// Linear algebra: MatMul and Gemm, whose float32 products go through
// nnSgemm (sgemm.go), and Det.

func init() {
	register("MatMul", laMatMul)
	register("Gemm", laGemm)
	register("Det", laDet)

	// The types beyond baseTypes that MatMul's ONNX schema admits.
	registerTypes("MatMul", slices.Concat(moreFloats, []inference.DType{inference.Uint32, inference.Uint64})...)
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
	p, err := opsem.Plan(n, in, func() (*mmPlan, error) { return newMMPlan(n, in, a, b) })
	if err != nil {
		return nil, err
	}
	s := &p.s
	m, k, n2, outShape := s.M, s.K, s.N, s.Out
	nb, aOff, bOff := p.nb, s.AOffsets, s.BOffsets
	if a.DType() == inference.Float32 {
		ad, _ := floats(a)
		bd, _ := floats(b)
		var out []float32
		if k > 0 {
			out, err = limit.MakeOverwritten[float32](n.Run, nb, m, n2) // the products (beta 0) write every element
		} else {
			out, err = limit.Make[float32](n.Run, nb, m, n2)
		}
		if err != nil {
			return nil, err
		}
		ep := p.ep
		ep.bind(in)
		if len(out) == 0 || k == 0 { // no products, and no offsets (opsem.MatMul)
			ep.applyRows(out, n2)
			outs, err := opsem.Single(n, outShape, out)
			return unfusedEpilogue(n, in, ep, outs, err)
		}
		if len(s.BBatch) == 0 {
			// B is one matrix and A's batches are contiguous: one product
			// of (batch·m)×k by k×n.
			pre := nnPrepacked{b: packedFor(n.Prepared, bd)}
			nnSgemmPre(runtime.GOMAXPROCS(0), pre, nnBlocks{tail: p.tails[0].tail()}, false, false, nb*m, n2, k, 1, ad, k, bd, n2, 0, out, n2)
		} else {
			p.ad, p.bd, p.out = ad, bd, out
			eachUnit(nb, 2*m*n2*k, p.body)
			p.ad, p.bd, p.out = nil, nil, nil
		}
		outs, err := opsem.Single(n, outShape, out)
		return unfusedEpilogue(n, in, ep, outs, err)
	}
	var outs []inference.Tensor
	switch a.DType() {
	case inference.Float64:
		outs, err = laMatMulLoops(n, outShape, nb, m, n2, k, dataOf[float64](a), dataOf[float64](b), aOff, bOff)
	case inference.Int64:
		outs, err = laMatMulLoops(n, outShape, nb, m, n2, k, dataOf[int64](a), dataOf[int64](b), aOff, bOff)
	case inference.Int32:
		outs, err = laMatMulLoops(n, outShape, nb, m, n2, k, dataOf[int32](a), dataOf[int32](b), aOff, bOff)
	case inference.Uint64:
		outs, err = laMatMulLoops(n, outShape, nb, m, n2, k, dataOf[uint64](a), dataOf[uint64](b), aOff, bOff)
	case inference.Uint32:
		outs, err = laMatMulLoops(n, outShape, nb, m, n2, k, dataOf[uint32](a), dataOf[uint32](b), aOff, bOff)
	default:
		return nil, n.Unsupported("element type %v", a.DType())
	}
	return unfusedEpilogue(n, in, nil, outs, err)
}

// mmPlan is what a MatMul node keeps from run to run (opsem.Plan): the
// shapes, its float32 epilogue, one epTail per product, and the loop over
// the products of a batched B, made once, reading the run's operands from
// ad, bd and out.
type mmPlan struct {
	s           opsem.MatMulShape
	nb          int
	ep          *epilogue
	tails       []epTail // one per product: the one product of an unbatched B, or each batch's
	ad, bd, out []float32
	body        func(lo, hi, threads int)
}

func newMMPlan(n opsem.Node, in []inference.Tensor, a, b inference.Tensor) (*mmPlan, error) {
	s, err := opsem.MatMul(a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	p := &mmPlan{s: s, nb: opsem.Count(s.Batch)}
	if a.DType() != inference.Float32 {
		return p, nil
	}
	if p.ep, err = fusedEpilogue(n, in, s.Out); err != nil {
		return nil, err
	}
	units := 1
	if len(s.BBatch) != 0 && p.ep != nil {
		units = p.nb
	}
	// One tail per product: as many as the batch says, which may be far
	// more than the output's elements when its matrices are empty.
	if _, err := limit.Claim[epTail](n.Run, units); err != nil {
		return nil, err
	}
	p.tails = make([]epTail, units)
	for i := range p.tails {
		p.tails[i] = epTail{e: p.ep, base: i * s.M * s.N, ld: s.N}
	}
	p.body = p.products
	return p, nil
}

// products runs the products lo…hi−1 of a batched B, each on threads.
func (p *mmPlan) products(lo, hi, threads int) {
	m, n, k := p.s.M, p.s.N, p.s.K
	for i := lo; i < hi; i++ {
		var tail nnTail
		if p.ep != nil {
			tail = p.tails[i].tail()
		}
		nnSgemmPre(threads, nnPrepacked{}, nnBlocks{tail: tail}, false, false, m, n, k, 1, p.ad[p.s.AOffsets[i]*m*k:], k, p.bd[p.s.BOffsets[i]*k*n:], n, 0, p.out[i*m*n:], n)
	}
}

// laMatMulLoops multiplies nb pairs of matrices in plain loops, in the
// element type: float64 in float64, the integers wrapping on overflow as
// the fixed-width types do.
func laMatMulLoops[T float64 | int64 | int32 | uint64 | uint32](node opsem.Node, shape []int, nb, m, n, k int, a, b []T, aOff, bOff []int) ([]inference.Tensor, error) {
	out, err := limit.Make[T](node.Run, nb, m, n)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || k == 0 { // no products, and no offsets (opsem.MatMul)
		return opsem.Single(node, shape, out)
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
	return opsem.Single(node, shape, out)
}

// Gemm computes Y = alpha·A'·B' + beta·C with A' = transpose(A) if transA
// and B' likewise (opsem.Gemm); C broadcasts to Y's m×n shape as
// opsem.GemmBias says. A fused epilogue (fuse.go) is applied to Y's rows
// after the product.
func laGemm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, ad, err := requiredFloatArg(n, in, 0, "A")
	if err != nil {
		return nil, err
	}
	_, bd, err := requiredFloatArg(n, in, 1, "B")
	if err != nil {
		return nil, err
	}
	p, err := opsem.Plan(n, in, func() (*gemmPlan, error) { return newGemmPlan(n, in) })
	if err != nil {
		return nil, err
	}
	g := &p.g
	beta := g.Beta
	out, err := limit.Make[float32](n.Run, g.M, g.N)
	if err != nil {
		return nil, err
	}
	p.ep.bind(in)
	if len(in) > 2 && present(in[2]) {
		_, cd, err := requiredFloatArg(n, in, 2, "C")
		if err != nil {
			return nil, err
		}
		if err := laFillBias(n, p.g, p.cs, cd, out); err != nil {
			return nil, err
		}
	} else {
		beta = 0
	}
	pre := nnPrepacked{b: packedFor(n.Prepared, bd)}
	nnSgemmPre(runtime.GOMAXPROCS(0), pre, nnBlocks{tail: p.tail.tail()}, g.TransA, g.TransB, g.M, g.N, g.K, g.Alpha, ad, p.lda, bd, p.ldb, beta, out, g.N)
	outs, err := opsem.Single(n, p.out, out)
	return unfusedEpilogue(n, in, p.ep, outs, err)
}

// gemmPlan is what a Gemm node keeps from run to run (opsem.Plan): its
// shapes, C's, the leading dimensions, and its epilogue.
type gemmPlan struct {
	g        opsem.GemmShape
	cs, out  []int
	lda, ldb int
	ep       *epilogue
	tail     epTail
}

func newGemmPlan(n opsem.Node, in []inference.Tensor) (*gemmPlan, error) {
	as, bs := in[0].Shape(), in[1].Shape()
	g, err := opsem.Gemm(n, as, bs)
	if err != nil {
		return nil, err
	}
	p := &gemmPlan{g: g, out: []int{g.M, g.N}, lda: as[1], ldb: bs[1]}
	if len(in) > 2 && present(in[2]) {
		p.cs = in[2].Shape()
		if _, _, err := opsem.GemmBias(n, g, p.cs); err != nil {
			return nil, err
		}
	}
	if p.ep, err = fusedEpilogue(n, in, p.out); err != nil {
		return nil, err
	}
	p.tail = epTail{e: p.ep, ld: g.N}
	return p, nil
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

package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// MatMulShape is how MatMul multiplies A and B, following numpy.matmul: a
// 1-D A is a row vector and a 1-D B a column vector (the added dimension
// is dropped from the result), the dimensions before the last two
// broadcast. Product i of the Batch (in row-major order over the broadcast
// batch shape) multiplies A's matrix AOffsets[i] (M×K) by B's BOffsets[i]
// (K×N). Without products to compute (M, N or K is 0: the output is empty
// or zeros) the offsets are nil, as the batch of empty operands can be
// larger than any table.
type MatMulShape struct {
	M, K, N            int
	ABatch, BBatch     []int // the operands' batch dimensions
	Batch              []int // the broadcast batch shape
	AOffsets, BOffsets []int
	Out                []int
}

// MatMul returns how MatMul multiplies operands of shapes a and b.
func MatMul(a, b []int) (MatMulShape, error) {
	if len(a) == 0 || len(b) == 0 {
		return MatMulShape{}, fmt.Errorf("A is %v, B is %v; MatMul needs rank ≥ 1: %w", a, b, inference.ErrShape)
	}
	dropRow, dropCol := len(a) == 1, len(b) == 1
	if dropRow {
		a = []int{1, a[0]}
	}
	if dropCol {
		b = []int{b[0], 1}
	}
	s := MatMulShape{M: a[len(a)-2], K: a[len(a)-1], N: b[len(b)-1], ABatch: a[:len(a)-2], BBatch: b[:len(b)-2]}
	if b[len(b)-2] != s.K {
		return MatMulShape{}, fmt.Errorf("A is %v, B is %v: inner dimensions %d and %d differ: %w", a, b, s.K, b[len(b)-2], inference.ErrShape)
	}
	batch, err := BroadcastShape(s.ABatch, s.BBatch)
	if err != nil {
		return MatMulShape{}, fmt.Errorf("A is %v, B is %v: batch dimensions: %w", a, b, err)
	}
	s.Batch = batch
	s.Out = slices.Clone(batch)
	if !dropRow {
		s.Out = append(s.Out, s.M)
	}
	if !dropCol {
		s.Out = append(s.Out, s.N)
	}
	if _, err := inference.NumElements(s.Out); err != nil {
		return MatMulShape{}, err
	}
	if s.M > 0 && s.N > 0 && s.K > 0 {
		s.AOffsets, s.BOffsets = BroadcastOffsets(s.ABatch, batch), BroadcastOffsets(s.BBatch, batch)
	}
	return s, nil
}

// GemmShape is how Gemm computes Y = Alpha·A'·B' + Beta·C, with
// A' = transpose(A) if TransA and B' likewise: Y is M×N, the product's
// inner dimension K.
type GemmShape struct {
	M, K, N        int
	TransA, TransB bool
	Alpha, Beta    float32
}

// Gemm returns how Gemm multiplies A and B of shapes a and b (rank 2),
// from the attributes transA, transB (default 0), alpha and beta (default
// 1).
func Gemm(n Node, a, b []int) (GemmShape, error) {
	if len(a) != 2 || len(b) != 2 {
		return GemmShape{}, fmt.Errorf("A is %v, B is %v, want rank 2: %w", a, b, inference.ErrShape)
	}
	g := GemmShape{TransA: n.Int("transA", 0) != 0, TransB: n.Int("transB", 0) != 0, Alpha: n.Float("alpha", 1), Beta: n.Float("beta", 1)}
	g.M, g.K = a[0], a[1]
	if g.TransA {
		g.M, g.K = g.K, g.M
	}
	kb, cols := b[0], b[1]
	if g.TransB {
		kb, cols = cols, kb
	}
	if g.K != kb {
		return GemmShape{}, fmt.Errorf("A is %v (transA %v), B is %v (transB %v): inner dimensions %d and %d differ: %w", a, g.TransA, b, g.TransB, g.K, kb, inference.ErrShape)
	}
	g.N = cols
	return g, nil
}

// GemmBias returns how Gemm's C, of shape c, broadcasts to Y's M×N: as a
// cm×cn matrix (rank ≤ 2, each dimension 1 or Y's). Before opset 7 C
// broadcasts only with the attribute broadcast=1 and must be M×N
// otherwise.
func GemmBias(n Node, g GemmShape, c []int) (cm, cn int, err error) {
	if n.Opset < 7 && n.Int("broadcast", 0) == 0 && !slices.Equal(c, []int{g.M, g.N}) {
		return 0, 0, fmt.Errorf("C is %v, want [%d %d] (broadcast=0 before opset 7): %w", c, g.M, g.N, inference.ErrShape)
	}
	if len(c) > 2 {
		return 0, 0, fmt.Errorf("C is %v, want rank ≤ 2: %w", c, inference.ErrShape)
	}
	cm, cn = 1, 1
	if len(c) >= 1 {
		cn = c[len(c)-1]
	}
	if len(c) == 2 {
		cm = c[0]
	}
	if (cm != 1 && cm != g.M) || (cn != 1 && cn != g.N) {
		return 0, 0, fmt.Errorf("C is %v, which does not broadcast to [%d %d]: %w", c, g.M, g.N, inference.ErrShape)
	}
	return cm, cn, nil
}

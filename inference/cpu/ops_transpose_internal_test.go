package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The kernels here copy elements, so results are compared exactly.

func TestTransposeUint8(t *testing.T) {
	x := tensorOf[uint8](t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	y := runKernel(t, testNode("Transpose", 13, nil, 1), x)[0]
	checkExact[uint8](t, y, []int{3, 2}, 1, 4, 2, 5, 3, 6)
}

func TestDepthToSpaceAndReverseSequence(t *testing.T) {
	// [1, 4, 1, 1] to [1, 1, 2, 2]: DCR reads the channels as (row, column).
	x := tensorOf[int64](t, []int{1, 4, 1, 1}, 0, 1, 2, 3)
	y := runKernel(t, testNode("DepthToSpace", 13, map[string]graph.Attr{"blocksize": attrInt(2)}, 1), x)[0]
	checkExact[int64](t, y, []int{1, 1, 2, 2}, 0, 1, 2, 3)
	z := runKernel(t, testNode("SpaceToDepth", 13, map[string]graph.Attr{"blocksize": attrInt(2)}, 1), y)[0]
	checkExact[int64](t, z, []int{1, 4, 1, 1}, 0, 1, 2, 3)
	y = runKernel(t, testNode("ReverseSequence", 10, map[string]graph.Attr{"time_axis": attrInt(1), "batch_axis": attrInt(0)}, 1), tensorOf[int64](t, []int{2, 3}, 1, 2, 3, 4, 5, 6), i64s(t, 2, 3))[0]
	checkExact[int64](t, y, []int{2, 3}, 2, 1, 3, 6, 5, 4)
}

// TestPermuteRandom checks tpPermute against the index arithmetic on
// random shapes of rank up to 5 (dimensions of 1 included) and every
// element type's path through float32 and int64.
func TestPermuteRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 500 {
		rank := r.IntN(6)
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = 1 + r.IntN(4)
		}
		perm := r.Perm(rank)
		n := opsem.Count(shape)
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = int64(i)
		}
		x := tensorOf(t, shape, xs...)
		y, err := tpPermute(nil, x, shape, perm)
		if err != nil {
			t.Fatal(err)
		}
		got := dataOf[int64](y)
		for o := range got {
			if at := permutedFrom(shape, y.Shape(), perm, o); got[o] != int64(at) {
				t.Fatalf("shape %v perm %v: output %d holds input %d, want %d", shape, perm, o, got[o], at)
			}
		}
	}
}

// TestPermuteTransposeBlocks checks float32 permutations whose last two
// merged axes swap (tpWalk's batches of 2-D transposes by 8×8 blocks,
// with edges of every width) against the index arithmetic, on random
// shapes of rank 2 to 4 with dimensions to 20, and that at least a quarter
// of them took that path.
func TestPermuteTransposeBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	blocked := 0
	const trials = 300
	for range trials {
		rank := 2 + r.IntN(3)
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = 1 + r.IntN(20)
		}
		// Swap two axes, moving the last or not.
		perm := r.Perm(rank)
		if r.IntN(2) == 0 {
			perm = make([]int, rank)
			for i := range perm {
				perm[i] = i
			}
			a := r.IntN(rank - 1)
			perm = append(append(perm[:a:a], perm[a+1:]...), a) // axis a last: NCHW to NHWC for a = 1
		}
		n := opsem.Count(shape)
		xs := make([]float32, n)
		for i := range xs {
			xs[i] = float32(i)
		}
		x := tensorOf(t, shape, xs...)
		w, err := newTpPermuter(x, shape, perm)
		if err != nil {
			t.Fatal(err)
		}
		if w.(*tpWalk[float32]).outer != nil {
			blocked++
		}
		y, err := tpPermute(nil, x, shape, perm)
		if err != nil {
			t.Fatal(err)
		}
		got := dataOf[float32](y)
		for o := range got {
			if at := permutedFrom(shape, y.Shape(), perm, o); got[o] != float32(at) {
				t.Fatalf("shape %v perm %v: output %d holds input %v, want %d", shape, perm, o, got[o], at)
			}
		}
	}
	if blocked < trials/4 {
		t.Fatalf("%d of %d permutations took the block path, want at least a quarter", blocked, trials)
	}
}

// permutedFrom is the input offset that output element o of x's shape
// permuted by perm (out the permuted shape) holds, by the index
// arithmetic.
func permutedFrom(shape, out, perm []int, o int) int {
	st, ost := opsem.Strides(shape), opsem.Strides(out)
	at := 0
	for j := range out {
		at += o / ost[j] * st[perm[j]]
		o %= ost[j]
	}
	return at
}

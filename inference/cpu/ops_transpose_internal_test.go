package cpu

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/beamml/beamml/inference"
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

// TestPermuteParallel checks permutations large enough to split among
// goroutines, on 2 and 3 cores (parts of unequal size), against the index
// arithmetic: float32 through the 2-D transposes (whose rows split in
// blocks of tpRowBlock, with edges) and through the walk, int64 through
// the walk (parts of whole runs, each with an odometer of its own), and
// that each of the three split.
func TestPermuteParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := []struct {
		shape, perm []int
	}{
		{[]int{2, 96, 37, 41}, []int{0, 2, 3, 1}},      // NCHW to NHWC
		{[]int{1, 700, 390}, []int{0, 2, 1}},           // [B, S, D] to [B, D, S], rows not whole blocks
		{[]int{3, 70, 40, 33}, []int{0, 2, 1, 3}},      // attention's heads: runs of 33 copied whole
		{[]int{5, 6, 70, 8, 20}, []int{4, 1, 3, 0, 2}}, // runs of one element at a stride
	}
	for _, procs := range []int{2, 3} {
		runtime.GOMAXPROCS(procs)
		for _, tc := range cases {
			n := opsem.Count(tc.shape)
			f32, i64 := make([]float32, n), make([]int64, n)
			for i := range n {
				f32[i], i64[i] = float32(i), int64(i)
			}
			for _, x := range []inference.Tensor{tensorOf(t, tc.shape, f32...), tensorOf(t, tc.shape, i64...)} {
				w, err := newTpPermuter(x, tc.shape, tc.perm)
				if err != nil {
					t.Fatal(err)
				}
				y, err := w.permute(opsem.Node{}, x, w.shape())
				if err != nil {
					t.Fatal(err)
				}
				switch w := w.(type) {
				case *tpWalk[float32]:
					if w.outer == nil && w.parts < 2 || w.outer != nil && parallelParts(len(w.outer)*w.rowBlocks, min(w.rows, tpRowBlock)*w.cols*tpCopyCost) < 2 {
						t.Errorf("%d cores, shape %v perm %v, float32: not split", procs, tc.shape, tc.perm)
					}
				case *tpWalk[int64]:
					if w.parts < 2 {
						t.Errorf("%d cores, shape %v perm %v, int64: not split", procs, tc.shape, tc.perm)
					}
				}
				for o := range n {
					at := permutedFrom(tc.shape, y[0].Shape(), tc.perm, o)
					var got int
					if x.DType() == inference.Float32 {
						got = int(dataOf[float32](y[0])[o])
					} else {
						got = int(dataOf[int64](y[0])[o])
					}
					if got != at {
						t.Fatalf("%d cores, shape %v perm %v, %v: output %d holds input %d, want %d", procs, tc.shape, tc.perm, x.DType(), o, got, at)
					}
				}
			}
		}
	}
}

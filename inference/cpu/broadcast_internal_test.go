package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference/internal/opsem"
)

// TestBroadcastRuns checks that the runs of a broadcast plan address the
// operands' elements that opsem.BroadcastOffsets gives, on random shapes of
// rank up to 5 with dimensions of 1 anywhere.
func TestBroadcastRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		rank := rng.IntN(6)
		out := make([]int, rank)
		for i := range out {
			out[i] = 1 + rng.IntN(4)
		}
		operand := func() []int {
			s := append([]int(nil), out[rng.IntN(rank+1):]...)
			for i := range s {
				if rng.IntN(3) == 0 {
					s[i] = 1
				}
			}
			return s
		}
		a, b := operand(), operand()
		p, err := planShapes(nil, a, b)
		if err != nil {
			t.Fatal(err)
		}
		wantA, wantB := opsem.BroadcastOffsets(a, p.shape), opsem.BroadcastOffsets(b, p.shape)
		seen := make([]bool, p.n)
		p.runs(0, 1, func(o, ia, ib, n, sa, sb int) {
			for j := range n {
				if seen[o+j] || wantA[o+j] != ia+j*sa || wantB[o+j] != ib+j*sb {
					t.Fatalf("%v and %v to %v: element %d reads a[%d] and b[%d], want a[%d] and b[%d] once", a, b, p.shape, o+j, ia+j*sa, ib+j*sb, wantA[o+j], wantB[o+j])
				}
				seen[o+j] = true
			}
		})
		for i, ok := range seen {
			if !ok {
				t.Fatalf("%v and %v to %v: element %d not visited", a, b, p.shape, i)
			}
		}
	}
}

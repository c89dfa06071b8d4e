package cpu

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// outputAllocs is what a run may allocate for each output it returns: the
// buffer and its pool record (limit.Pool hands it to the caller), and the
// tensor's shape and data header (inference.New). resultAllocs is the
// result map's.
const (
	outputAllocs = 4
	resultAllocs = 1
)

// steadyAllocs compiles g with the CPU backend, runs it on feeds until its
// frame is warm, and returns the allocations of one more run beyond what
// its outputs account for (outputAllocs, resultAllocs): 0 is what every
// model with the shapes of the run before should reach.
func steadyAllocs(t *testing.T, g *graph.Graph, feeds map[string]inference.Tensor) float64 {
	t.Helper()
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatalf("compile %s: %v", g.Name, err)
	}
	ctx := context.Background()
	for range 3 {
		if _, err := m.Run(ctx, feeds); err != nil {
			t.Fatalf("run %s: %v", g.Name, err)
		}
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := m.Run(ctx, feeds); err != nil {
			t.Fatalf("run %s: %v", g.Name, err)
		}
	})
	return allocs - float64(resultAllocs+outputAllocs*len(g.Outputs))
}

// randomFloats returns a float32 tensor of the given shape with values in
// [-1, 1).
func randomFloats(t *testing.T, r *rand.Rand, shape ...int) inference.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = 2*r.Float32() - 1
	}
	return tensorOf(t, shape, d...)
}

package cpu

import (
	"context"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// outputAllocs is what a run may allocate for each output it returns: the
// buffer and its pool record (limit.Pool hands it to the caller; the
// tensor over it shares the shape of the last run's, inference.WithData).
// resultAllocs is the result map's: the map and its first group of
// entries.
const (
	outputAllocs = 2
	resultAllocs = 2
)

// steadyAllocs compiles g with the CPU backend, runs it on feeds until its
// frame is warm, and returns the allocations of a run beyond what its
// outputs account for (outputAllocs, resultAllocs): 0 is what every model
// with the shapes of the run before should reach. It counts at the
// current GOMAXPROCS (testing.AllocsPerRun would count at 1, where no loop
// runs on the kernel workers), with the collector off, and returns the
// fewest of five counts of 20 runs: the runtime's own caches (a blocked
// worker's channel records) are refilled now and then, more often on a
// loaded machine where workers park more, which a kernel that allocates
// every run does not hide: it shows in every count.
//
// Under the race detector, whose sync.Pool drops items at random and
// whose runtime allocates for itself, counts mean nothing: the test
// calling it is skipped (make test runs it without).
func steadyAllocs(t *testing.T, g *graph.Graph, feeds map[string]inference.Tensor) float64 {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation counts are not kept under the race detector")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatalf("compile %s: %v", g.Name, err)
	}
	ctx := context.Background()
	run := func() {
		if _, err := m.Run(ctx, feeds); err != nil {
			t.Fatalf("run %s: %v", g.Name, err)
		}
	}
	for range 3 {
		run()
	}
	const runs = 20
	var allocs uint64
	for i := range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			run()
		}
		runtime.ReadMemStats(&after)
		if n := (after.Mallocs - before.Mallocs) / runs; i == 0 || n < allocs {
			allocs = n
		}
	}
	return float64(allocs) - float64(resultAllocs+outputAllocs*len(g.Outputs))
}

// steadyAllocsAt is steadyAllocs at GOMAXPROCS procs.
func steadyAllocsAt(t *testing.T, procs int, g *graph.Graph, feeds map[string]inference.Tensor) float64 {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	return steadyAllocs(t, g, feeds)
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

// checkReruns runs one compiled model of build()'s graph on each of feeds
// in turn, and a freshly compiled one on each, and requires the same
// outputs bit for bit: a plan or output a node keeps from one run to the
// next (opsem.Memo) must never stand in for what new shapes or values
// compute. Give feeds that change values, then shapes, then go back.
func checkReruns(t *testing.T, build func() *graph.Graph, feeds ...map[string]inference.Tensor) {
	t.Helper()
	kept, err := Backend{}.Compile(build())
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	ctx := context.Background()
	for i, f := range feeds {
		got, err := kept.Run(ctx, f)
		if err != nil {
			t.Fatalf("feeds %d: %v", i, err)
		}
		fresh, err := Backend{}.Compile(build())
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		want, err := fresh.Run(ctx, f)
		if err != nil {
			t.Fatalf("feeds %d, fresh model: %v", i, err)
		}
		for name, w := range want {
			if !inference.Equal(got[name], w) {
				t.Errorf("feeds %d: output %s is %v after earlier runs, %v from a fresh model", i, name, got[name], w)
			}
		}
	}
}

package cpu

import (
	"context"
	"runtime"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// poolGraph reads its intermediates through views (Reshape, Flatten), has
// a graph output that is a view of an intermediate, and a node output
// nothing reads (TopK's indices): the cases where a pool could hand out a
// buffer something still reads.
func poolGraph(t *testing.T) *graph.Graph {
	t.Helper()
	return sorted(t, &graph.Graph{
		Name:    "pooled",
		Opsets:  map[string]int64{"": 13},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{2, 3, 32, 32}}},
		Outputs: []graph.Value{{Name: "y"}, {Name: "v"}, {Name: "top"}},
		Initializers: map[string]inference.Tensor{
			"shape": tensorOf(t, []int{2}, int64(2), 3072),
			"k":     tensorOf(t, []int{1}, int64(3)),
		},
		Nodes: []*graph.Node{
			{Name: "square", OpType: "Mul", Inputs: []string{"x", "x"}, Outputs: []string{"a0"}},
			{Name: "neg", OpType: "Neg", Inputs: []string{"a0"}, Outputs: []string{"a"}},
			{Name: "flat", OpType: "Reshape", Inputs: []string{"a", "shape"}, Outputs: []string{"b"}},
			{Name: "sig", OpType: "Sigmoid", Inputs: []string{"b"}, Outputs: []string{"c"}},
			{Name: "exp", OpType: "Exp", Inputs: []string{"c"}, Outputs: []string{"y"}},
			{Name: "view", OpType: "Flatten", Inputs: []string{"c"}, Outputs: []string{"v"}},
			{Name: "topk", OpType: "TopK", Inputs: []string{"c", "k"}, Outputs: []string{"top", "idx"}},
		},
	})
}

func poolInput(t *testing.T, seed float32) inference.Tensor {
	xs := make([]float32, 2*3*32*32)
	for i := range xs {
		xs[i] = seed * float32(i%17-8) / 8
	}
	return tensorOf(t, []int{2, 3, 32, 32}, xs...)
}

func runPool(t *testing.T, m *Model, x inference.Tensor) map[string]inference.Tensor {
	t.Helper()
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Pooled runs compute what unpooled runs compute, and a run does not
// write into the outputs an earlier run handed back.
func TestPooledRunsKeepOutputs(t *testing.T) {
	pooled, plain := NewModel(poolGraph(t)), NewModel(poolGraph(t))
	if !pooled.pooled {
		t.Fatal("a graph without control flow or sequences is not pooled")
	}
	plain.pooled = false
	first := runPool(t, pooled, poolInput(t, 1))
	kept := map[string][]float32{}
	for name, v := range first {
		kept[name] = slices.Clone(dataOf[float32](v))
	}
	for i := range 5 {
		x := poolInput(t, float32(i+2))
		got, want := runPool(t, pooled, x), runPool(t, plain, x)
		for name := range want {
			if !inference.Equal(got[name], want[name]) {
				t.Fatalf("run %d: output %s pooled %v, unpooled %v", i+2, name, got[name], want[name])
			}
		}
		for name, v := range first {
			if !slices.Equal(dataOf[float32](v), kept[name]) {
				t.Fatalf("run %d wrote into output %s of run 1", i+2, name)
			}
		}
	}
}

// After warm-up a pooled run allocates its outputs and bookkeeping
// (tensor headers, the values map), not its intermediates: the bytes per
// run stay under the outputs' bytes (y, and c, which v views) plus 8 KiB,
// where an unpooled run also allocates a0 and a, 24 KiB each.
func TestPooledRunsAllocateOutputs(t *testing.T) {
	m := NewModel(poolGraph(t))
	x := poolInput(t, 1)
	out := runPool(t, m, x)
	outBytes := out["y"].ByteSize() + out["v"].ByteSize() + out["top"].ByteSize()
	for range 3 {
		runPool(t, m, x)
	}
	bytesPerRun := func() int64 {
		const runs = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			runPool(t, m, x)
		}
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	if got := bytesPerRun(); got > outBytes+8<<10 {
		t.Errorf("pooled: %d bytes per run, want at most %d (outputs) + 8 KiB", got, outBytes)
	}
	m.pooled = false
	if got := bytesPerRun(); got < outBytes+48<<10 {
		t.Errorf("unpooled: %d bytes per run, want at least %d (outputs) + 48 KiB: the test no longer tells pooled runs apart", got, outBytes)
	}
}

// Concurrent runs each take a pool of their own and compute what an
// unpooled run computes (run under -race by make race).
func TestPooledConcurrentRuns(t *testing.T) {
	pooled, plain := NewModel(poolGraph(t)), NewModel(poolGraph(t))
	plain.pooled = false
	want := runPool(t, plain, poolInput(t, 3))
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			for range 10 {
				got, err := pooled.Run(context.Background(), map[string]inference.Tensor{"x": poolInput(t, 3)})
				if err != nil {
					errs <- err.Error()
					return
				}
				for name := range want {
					if !inference.Equal(got[name], want[name]) {
						errs <- "output " + name + " differs"
						return
					}
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

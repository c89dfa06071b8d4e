//go:build cgo

package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/sim"
)

// digits loads the example's digits MLP (input [N, 64], output logits).
func digits(t testing.TB) *graph.Graph {
	t.Helper()
	data, err := os.ReadFile("../../examples/classify/digits.onnx")
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Decode(data, "../../examples/classify")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// convNet is a small image classifier with a dynamic batch:
// Conv(3→8, 3×3, pad 1) → Relu → MaxPool(2) → Conv(8→8, 3×3, groups 8)
// → BatchNorm → Relu → GlobalAveragePool → Flatten → Gemm(8→5) → Softmax.
func convNet(t testing.TB) *graph.Graph {
	t.Helper()
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	g := &graph.Graph{
		Name:    "convnet",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "image", DType: inference.Float32, Shape: []int{inference.Dynamic, 3, 12, 12}}},
		Outputs: []graph.Value{{Name: "probs", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{
			"w1": check.Rand(1, -0.5, 0.5, 8, 3, 3, 3), "b1": check.Rand(2, -0.1, 0.1, 8),
			"w2":    check.Rand(3, -0.5, 0.5, 8, 1, 3, 3),
			"scale": check.Rand(4, 0.5, 1.5, 8), "bias": check.Rand(5, -0.1, 0.1, 8),
			"mean": check.Rand(6, -0.1, 0.1, 8), "var": check.Rand(7, 0.5, 1.5, 8),
			"wf": check.Rand(8, -0.5, 0.5, 5, 8), "bf": check.Rand(9, -0.1, 0.1, 5),
		},
		Nodes: []*graph.Node{
			{Name: "conv1", OpType: "Conv", Inputs: []string{"image", "w1", "b1"}, Outputs: []string{"c1"},
				Attrs: map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}},
			{Name: "relu1", OpType: "Relu", Inputs: []string{"c1"}, Outputs: []string{"r1"}},
			{Name: "pool", OpType: "MaxPool", Inputs: []string{"r1"}, Outputs: []string{"p1"},
				Attrs: map[string]graph.Attr{"kernel_shape": ints(2, 2), "strides": ints(2, 2)}},
			{Name: "conv2", OpType: "Conv", Inputs: []string{"p1", "w2"}, Outputs: []string{"c2"},
				Attrs: map[string]graph.Attr{"group": {Type: graph.AttrInt, Int: 8}, "pads": ints(1, 1, 1, 1)}},
			{Name: "bn", OpType: "BatchNormalization", Inputs: []string{"c2", "scale", "bias", "mean", "var"}, Outputs: []string{"n2"}},
			{Name: "relu2", OpType: "Relu", Inputs: []string{"n2"}, Outputs: []string{"r2"}},
			{Name: "gap", OpType: "GlobalAveragePool", Inputs: []string{"r2"}, Outputs: []string{"g"}},
			{Name: "flat", OpType: "Flatten", Inputs: []string{"g"}, Outputs: []string{"f"}},
			{Name: "fc", OpType: "Gemm", Inputs: []string{"f", "wf", "bf"}, Outputs: []string{"logits"},
				Attrs: map[string]graph.Attr{"transB": {Type: graph.AttrInt, Int: 1}}},
			{Name: "softmax", OpType: "Softmax", Inputs: []string{"logits"}, Outputs: []string{"probs"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

func compile(t testing.TB, b graph.Compiler, g *graph.Graph) inference.Model {
	t.Helper()
	m, err := b.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// batchOf returns a random batch for the model's single input.
func batchOf(g *graph.Graph, n int, seed uint64) map[string]inference.Tensor {
	in := g.Inputs[0]
	shape := append([]int{n}, in.Shape[1:]...)
	return map[string]inference.Tensor{in.Name: check.Rand(seed, -1, 1, shape...)}
}

func matchCPU(t testing.TB, g func(testing.TB) *graph.Graph, feeds, got map[string]inference.Tensor) {
	t.Helper()
	want, err := compile(t, cpu.Backend{}, g(t)).Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if err := check.Compare(got[name], w, 1e-4, 1e-5); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
}

// After a warm-up batch, each batch copies every input up once and every
// output down once, allocates nothing, and runs every node on the device.
func TestSteadyStateCopiesAndAllocations(t *testing.T) {
	for _, model := range []struct {
		name string
		g    func(testing.TB) *graph.Graph
	}{{"digits", digits}, {"convnet", convNet}} {
		t.Run(model.name, func(t *testing.T) {
			b, dev := newSim(t, 0)
			g := model.g(t)
			m := compile(t, b, g).(*cuda.Model)
			ctx := context.Background()
			if _, err := m.Run(ctx, batchOf(g, 32, 1)); err != nil { // warm-up
				t.Fatal(err)
			}
			if hn := m.Stats().HostNodes; len(hn) > 0 {
				t.Fatalf("nodes run on the host: %q", hn)
			}
			before := dev.Stats()
			const batches = 5
			for i := range batches {
				feeds := batchOf(g, 32, uint64(10+i))
				out, err := m.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				matchCPU(t, model.g, feeds, out)
			}
			after := dev.Stats()
			t.Logf("per batch: %d launches, %d GEMMs", (after.Launches-before.Launches)/batches, (after.Gemms-before.Gemms)/batches)
			if got, want := after.CopiesHtoD-before.CopiesHtoD, batches*len(g.Inputs); got != want {
				t.Errorf("%d host→device copies for %d batches, want %d (one per input per batch)", got, batches, want)
			}
			if got, want := after.CopiesDtoH-before.CopiesDtoH, batches*len(g.Outputs); got != want {
				t.Errorf("%d device→host copies for %d batches, want %d (one per output per batch)", got, batches, want)
			}
			if got := after.Allocs - before.Allocs; got != 0 {
				t.Errorf("%d device allocations in steady state, want 0", got)
			}
			if got := after.HostAllocs - before.HostAllocs; got != 0 {
				t.Errorf("%d pinned host allocations in steady state, want 0", got)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := dev.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Many concurrent batches share one upload of the weights; each takes its
// own workspace, and the results are right.
func TestConcurrentBatchesShareWeights(t *testing.T) {
	b, dev := newSim(t, 0)
	g := convNet(t)
	m := compile(t, b, g).(*cuda.Model)
	afterLoad := dev.Stats()
	if afterLoad.CopiesHtoD != 1 || afterLoad.BytesHtoD != m.Stats().WeightBytes || afterLoad.Allocs != 1 {
		t.Fatalf("load: %d copies of %d bytes in %d allocations, want the %d bytes of weights in one of each",
			afterLoad.CopiesHtoD, afterLoad.BytesHtoD, afterLoad.Allocs, m.Stats().WeightBytes)
	}
	const workers, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				feeds := batchOf(g, 4+w, uint64(100*w+i))
				out, err := m.Run(context.Background(), feeds)
				if err != nil {
					errs <- err
					return
				}
				want, err := compile(t, cpu.Backend{}, convNet(t)).Run(context.Background(), feeds)
				if err != nil {
					errs <- err
					return
				}
				if err := check.Compare(out["probs"], want["probs"], 1e-4, 1e-5); err != nil {
					errs <- fmt.Errorf("worker %d batch %d: %w", w, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s, ms := dev.Stats(), m.Stats()
	weightCopies := 0
	if s.BytesHtoD >= ms.WeightBytes {
		weightCopies = 1
	}
	t.Logf("%d batches: %d workspaces, %d plans, %d device allocations", workers*each, ms.Workspaces, ms.Plans, s.Allocs)
	if got := s.CopiesHtoD - workers*each; got != 1 || weightCopies != 1 {
		t.Errorf("%d host→device copies besides the inputs, want 1 (the weights, once)", got)
	}
	if ms.Workspaces > workers {
		t.Errorf("%d workspaces for %d concurrent runners", ms.Workspaces, workers)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}

// A batch whose workspace does not fit fails with ErrOutOfMemory (so
// RunInference splits it); a smaller one then runs.
func TestOutOfMemory(t *testing.T) {
	b, dev := newSim(t, 0)
	g := convNet(t)
	m := compile(t, b, g).(*cuda.Model)
	// The device has room for the weights and a workspace of about 8 images.
	size8 := workspaceBytes(t, m, g, 8)
	dev2 := sim.New(sim.Options{Runner: runner, Memory: dev.Stats().AllocatedBytes + size8})
	m.Close()
	dev.Close()
	b2 := cuda.NewBackend(func() (cuda.Device, error) { return dev2, nil })
	m2 := compile(t, b2, convNet(t)).(*cuda.Model)
	_, err := m2.Run(context.Background(), batchOf(g, 64, 1))
	if !errors.Is(err, inference.ErrOutOfMemory) {
		t.Fatalf("batch of 64 on a device with room for 8: %v, want ErrOutOfMemory", err)
	}
	feeds := batchOf(g, 8, 2)
	out, err := m2.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("batch of 8: %v", err)
	}
	matchCPU(t, convNet, feeds, out)
	if mb := m2.MaxBatch(); mb < 1 || mb > 8 {
		t.Errorf("MaxBatch %d on a device with room for 8 (less headroom)", mb)
	}
	m2.Close()
	if err := dev2.Close(); err != nil {
		t.Fatal(err)
	}
}

// workspaceBytes measures the device memory one run at batch n takes.
func workspaceBytes(t *testing.T, m *cuda.Model, g *graph.Graph, n int) int64 {
	t.Helper()
	b, dev := newSim(t, 0)
	m2 := compile(t, b, g).(*cuda.Model)
	before := dev.Stats().AllocatedBytes
	if _, err := m2.Run(context.Background(), batchOf(g, n, 3)); err != nil {
		t.Fatal(err)
	}
	size := dev.Stats().AllocatedBytes - before
	m2.Close()
	dev.Close()
	return size
}

// MaxBatch is the largest batch that fits the free memory less the
// headroom, and it grows with the memory.
func TestMaxBatch(t *testing.T) {
	g := digits(t)
	prev := 0
	for _, mem := range []int64{260 << 20, 270 << 20, 300 << 20} {
		dev := sim.New(sim.Options{Runner: runner, Memory: mem})
		b := cuda.NewBackend(func() (cuda.Device, error) { return dev, nil })
		m := compile(t, b, g).(*cuda.Model)
		mb := m.MaxBatch()
		t.Logf("%d MiB: MaxBatch %d", mem>>20, mb)
		if mb < prev || mb < 1 {
			t.Errorf("%d MiB: MaxBatch %d, below %d for less memory", mem>>20, mb, prev)
		}
		prev = mb
		budget, err := m.Budget()
		if err != nil {
			t.Fatal(err)
		}
		at, err := m.WorkspaceBytes(mb)
		if err != nil {
			t.Fatal(err)
		}
		next, err := m.WorkspaceBytes(mb + 1)
		if err != nil {
			t.Fatal(err)
		}
		if at > budget || (mb < 1<<16 && next <= budget) {
			t.Errorf("%d MiB: budget %d bytes; MaxBatch %d needs %d, one more %d", mem>>20, budget, mb, at, next)
		}
		if _, err := m.Run(context.Background(), batchOf(g, mb, 1)); err != nil {
			t.Errorf("%d MiB: batch of MaxBatch %d: %v", mem>>20, mb, err)
		}
		m.Close()
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/sim"
)

// Every GPU is used (issue 14, item 6): on a backend of three simulated
// GPUs a model gets a replica on each, with its weights on each; batches
// run one after another go to each in turn, concurrent ones spread over
// all of them, and every result equals the CPU backend's. MaxBatch is the
// smallest device's.
func TestReplicaPerDevice(t *testing.T) {
	var devs []*sim.Device
	for i, mem := range []int64{16 << 30, 16 << 30, 512 << 20} {
		devs = append(devs, sim.New(sim.Options{Runner: runner, Memory: mem, Name: fmt.Sprintf("sim%d", i)}))
	}
	b := cuda.NewMultiBackend(func() ([]cuda.Device, error) {
		out := make([]cuda.Device, len(devs))
		for i, d := range devs {
			out[i] = d
		}
		return out, nil
	})
	m := compile(t, b, convNet(t))
	r, ok := m.(*cuda.Replicas)
	if !ok {
		t.Fatalf("Compile on three devices made a %T, want *cuda.Replicas", m)
	}
	replicas := r.Models()
	if len(replicas) != 3 {
		t.Fatalf("%d replicas, want 3", len(replicas))
	}
	for i, d := range devs {
		if st := d.Stats(); st.BytesHtoD != replicas[i].ByteSize() || st.Allocs != 1 {
			t.Errorf("%s: %d bytes uploaded in %d allocations, want the weights (%d bytes) in 1", d.Name(), st.BytesHtoD, st.Allocs, replicas[i].ByteSize())
		}
	}
	ctx := context.Background()

	// One after another: each replica in turn.
	for i := range 6 {
		feeds := batchOf(convNet(t), 2, uint64(i))
		got, err := r.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		matchCPU(t, convNet, feeds, got)
	}
	for i, rm := range replicas {
		if n := rm.Stats().Runs; n != 2 {
			t.Errorf("replica %d ran %d of 6 sequential batches, want 2", i, n)
		}
	}

	// At once: every device launches kernels.
	before := make([]sim.Stats, len(devs))
	for i, d := range devs {
		before[i] = d.Stats()
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 4 {
				feeds := batchOf(convNet(t), 1+k, uint64(100+10*g+k))
				got, err := r.Run(ctx, feeds)
				if err != nil {
					t.Error(err)
					return
				}
				matchCPU(t, convNet, feeds, got)
			}
		})
	}
	wg.Wait()
	var runs int64
	for i, d := range devs {
		if st := d.Stats(); st.Launches == before[i].Launches {
			t.Errorf("%s launched nothing while 32 batches ran on 3 replicas", d.Name())
		}
		runs += replicas[i].Stats().Runs
	}
	if runs != 6+32 || r.Stats().Runs != runs {
		t.Errorf("the replicas ran %d batches (Stats says %d), want 38", runs, r.Stats().Runs)
	}

	limits := make([]int, len(replicas))
	for i, rm := range replicas {
		limits[i] = rm.MaxBatch()
	}
	if limits[2] >= limits[0] || r.MaxBatch() != limits[2] {
		t.Errorf("MaxBatch %d with replicas' %v, want the 512 MiB device's, the smallest", r.MaxBatch(), limits)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Live() != 0 {
			t.Errorf("%s: %d allocations live after Close", d.Name(), d.Live())
		}
	}
	var _ inference.BatchLimiter = r
}

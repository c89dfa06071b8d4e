//go:build cgo

package cuda_test

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/sim"
)

// CUDA graphs (issue 15, item 5): the first batch of a shape runs call by
// call, the second is captured, and from then on a batch is one call to
// the device, a graph launch, which replays every kernel, GEMM and copy;
// the results follow each batch's inputs and are the CPU backend's. With
// graphs off every batch goes call by call.
func TestGraphReplay(t *testing.T) {
	ctx := context.Background()
	for _, off := range []bool{false, true} {
		restore := cuda.SetGraphsOff(off)
		b, dev := newSim(t, 0)
		m := compile(t, b, convNet(t))
		var calls []int
		var last sim.Stats
		for i := range 5 {
			feeds := batchOf(convNet(t), 3, uint64(10+i))
			before := dev.Stats()
			got, err := m.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			matchCPU(t, convNet, feeds, got)
			last = dev.Stats()
			calls = append(calls, last.Calls-before.Calls)
			if i == 4 {
				if k := last.Launches - before.Launches; k == 0 {
					t.Errorf("graphs off=%t: the last batch ran no kernel", off)
				}
			}
		}
		eager := calls[0]
		switch {
		case !off && (calls[2] != 1 || calls[3] != 1 || calls[4] != 1 || last.Graphs != 1 || last.GraphLaunches != 4):
			t.Errorf("graphs on: calls per batch %v, %d graphs captured, %d replays; want 1 call from the third batch, 1 graph, 4 replays (the capture's run included)",
				calls, last.Graphs, last.GraphLaunches)
		case off && (calls[4] != eager || last.Graphs != 0):
			t.Errorf("graphs off: calls per batch %v, %d graphs; want %d calls every batch, no graph", calls, last.Graphs, eager)
		}
		t.Logf("graphs off=%t: calls per batch %v", off, calls)
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		restore()
	}
}

// Each workspace keeps a graph per plan: batches of another shape are
// captured on their own, and the first shape's graph still replays.
func TestGraphPerShape(t *testing.T) {
	ctx := context.Background()
	b, dev := newSim(t, 0)
	m := compile(t, b, convNet(t))
	for round := range 3 {
		for _, n := range []int{2, 5} {
			feeds := batchOf(convNet(t), n, uint64(100*round+n))
			got, err := m.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			matchCPU(t, convNet, feeds, got)
		}
	}
	if st := dev.Stats(); st.Graphs != 2 || st.GraphLaunches != 4 {
		t.Errorf("%d graphs, %d replays; want 2 graphs (one per batch size), 4 replays", st.Graphs, st.GraphLaunches)
	}
	var _ inference.Model = m
}

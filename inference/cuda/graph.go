package cuda

import (
	"errors"
	"fmt"
	"os"
)

// CUDA graphs. A plan's run queues its input copies, kernels, GEMMs and
// output copies on the workspace's stream: on a GPU that is one driver
// call for each, tens of microseconds of CPU per batch before the GPU has
// anything to do. Where the device captures graphs (Grapher), the second
// run of a plan in a workspace is captured instead, and that run and every
// later one replay the graph: one call per batch. A graph is bound to its
// plan (the kernels and their arguments) and its workspace (the addresses
// and the pinned staging buffers, which a run refills before the replay),
// so each workspace keeps a graph per plan it ran, freed with the
// workspace or when the plan is evicted. A plan with a node on the host is
// never captured: that node waits for the stream.
//
// BEAMML_CUDA_GRAPHS=0 in the environment turns graphs off (every run
// queues its work call by call), to tell a fault of the capture from one
// of the plan.

// graphsOff is BEAMML_CUDA_GRAPHS=0, read once per process.
var graphsOff = os.Getenv("BEAMML_CUDA_GRAPHS") == "0"

// captureAfter is how many runs of a plan in a workspace go call by call
// before the next is captured: the first shows the plan runs.
const captureAfter = 1

// grapher returns the device's Grapher where graphs are on.
func (m *Model) grapher() (Grapher, bool) {
	if graphsOff {
		return nil, false
	}
	g, ok := m.dev.(Grapher)
	return g, ok
}

// queue queues a run of p in ws, replaying or capturing its graph where
// it can: the input copies, the steps, the output copies and the error
// word's copy. The inputs are in ws's staging buffer already.
func (m *Model) queue(p *plan, ws *workspace, eager func() error) error {
	gr, ok := m.grapher()
	if !ok || !p.capturable() {
		return eager()
	}
	if g, ok := ws.graphs[p]; ok {
		if err := gr.LaunchGraph(g, ws.stream); err != nil {
			return fmt.Errorf("cuda: replay the graph of a batch of %d: %w", p.batch, err)
		}
		return nil
	}
	if ws.runs == nil {
		ws.runs, ws.graphs = map[*plan]int{}, map[*plan]Graph{}
	}
	if ws.runs[p] < captureAfter {
		ws.runs[p]++
		return eager()
	}
	if err := gr.BeginCapture(ws.stream); err != nil {
		return fmt.Errorf("cuda: capture a batch of %d: %w", p.batch, err)
	}
	err := eager()
	g, cerr := gr.EndCapture(ws.stream)
	if err != nil || cerr != nil {
		if g != nil {
			gr.DestroyGraph(g)
		}
		return errors.Join(err, cerr)
	}
	ws.graphs[p] = g
	delete(ws.runs, p)
	if err := gr.LaunchGraph(g, ws.stream); err != nil {
		return fmt.Errorf("cuda: launch the graph of a batch of %d: %w", p.batch, err)
	}
	return nil
}

// dropGraph destroys ws's graph of plan pl, if it has one.
func (ws *workspace) dropGraph(dev Device, pl *plan) error {
	g, ok := ws.graphs[pl]
	delete(ws.graphs, pl)
	delete(ws.runs, pl)
	if !ok {
		return nil
	}
	if gr, ok := dev.(Grapher); ok {
		return gr.DestroyGraph(g)
	}
	return nil
}

// dropGraphs destroys the idle workspaces' graphs of plan pl, which is
// evicted: no run holds it, so no busy workspace is replaying it.
func (p *pool) dropGraphs(pl *plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.idle {
		w.dropGraph(p.dev, pl)
	}
}

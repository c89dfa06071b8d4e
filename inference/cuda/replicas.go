package cuda

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Replicas is a model compiled on several devices: a *Model on each, with
// its own copy of the weights, plans and workspaces. Run gives each batch
// to the replica with the fewest batches in flight, taking them in turn
// among equals, so that the bundles a worker runs at once keep every GPU
// busy. It is safe for concurrent use.
type Replicas struct {
	models []*Model
	busy   []atomic.Int64 // batches in flight, per replica
	next   atomic.Uint64  // where the next pick starts looking
}

func newReplicas(models []*Model) *Replicas {
	return &Replicas{models: models, busy: make([]atomic.Int64, len(models))}
}

// Models returns the replicas, in the order of the backend's devices.
func (r *Replicas) Models() []*Model { return slices.Clone(r.models) }

// Inputs describes the graph inputs.
func (r *Replicas) Inputs() []inference.TensorInfo { return r.models[0].Inputs() }

// Outputs describes the graph outputs.
func (r *Replicas) Outputs() []inference.TensorInfo { return r.models[0].Outputs() }

// ByteSize is the device memory the weights take, on all devices together.
func (r *Replicas) ByteSize() int64 {
	var n int64
	for _, m := range r.models {
		n += m.ByteSize()
	}
	return n
}

// Graph returns the compiled graph, which the replicas share.
func (r *Replicas) Graph() *graph.Graph { return r.models[0].Graph() }

// Fallback says why the model runs on the CPU backend, if it does.
func (r *Replicas) Fallback() string { return r.models[0].Fallback() }

// Run runs one batch on the replica with the fewest batches in flight.
func (r *Replicas) Run(ctx context.Context, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	i := r.pick()
	r.busy[i].Add(1)
	defer r.busy[i].Add(-1)
	return r.models[i].Run(ctx, feeds)
}

// pick returns the replica with the fewest batches in flight, the first
// such from a starting point that moves on at every pick.
func (r *Replicas) pick() int {
	n := len(r.models)
	start := int(r.next.Add(1) % uint64(n))
	best := start
	for k := 1; k < n; k++ {
		if j := (start + k) % n; r.busy[j].Load() < r.busy[best].Load() {
			best = j
		}
	}
	return best
}

// MaxBatch is the smallest of the replicas' MaxBatch (0 when none bounds
// it): a batch may go to any device, so it must fit on each.
// RunInference caps its MaxBatchSize at it (inference.BatchLimiter).
func (r *Replicas) MaxBatch() int {
	limit := 0
	for _, m := range r.models {
		if c := m.MaxBatch(); c > 0 && (limit == 0 || c < limit) {
			limit = c
		}
	}
	return limit
}

// Stats adds up the replicas' counters; HostNodes is their union.
func (r *Replicas) Stats() Stats {
	var s Stats
	host := map[string]bool{}
	for _, m := range r.models {
		ms := m.Stats()
		s.WeightBytes += ms.WeightBytes
		s.Runs += ms.Runs
		s.CPURuns += ms.CPURuns
		s.Plans += ms.Plans
		s.Workspaces += ms.Workspaces
		for _, h := range ms.HostNodes {
			host[h] = true
		}
	}
	s.HostNodes = slices.Sorted(maps.Keys(host))
	return s
}

// HostNodes returns the operator types of the nodes that ran on the host
// in some plan of some replica (sorted, each as often as in the replica
// that has it most often).
func (r *Replicas) HostNodes() []string {
	most := map[string]int{}
	for _, m := range r.models {
		count := map[string]int{}
		for _, op := range m.HostNodes() {
			count[op]++
		}
		for op, c := range count {
			most[op] = max(most[op], c)
		}
	}
	var ops []string
	for _, op := range slices.Sorted(maps.Keys(most)) {
		for range most[op] {
			ops = append(ops, op)
		}
	}
	return ops
}

// Close closes every replica.
func (r *Replicas) Close() error {
	var errs []error
	for _, m := range r.models {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

var (
	_ inference.Model        = (*Replicas)(nil)
	_ inference.BatchLimiter = (*Replicas)(nil)
)

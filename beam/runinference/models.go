package runinference

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/beamml/beamml/inference"
)

// Many models in one transform: RunInferenceKeyed with ModelsByKey picks
// each element's model by its key, and WithModelUpdates (updates.go)
// replaces the model while the pipeline runs. Both draw their models from
// a modelPool: one per transform per process, which loads each model once
// (through inference's shared cache), lends it to one batch at a time per
// caller, and holds at most MaxModelsPerWorker of them, releasing the
// least recently used one that no batch is running on when another is
// needed.

var (
	modelLoads     = beam.NewCounter(Namespace, "model_loads")
	modelEvictions = beam.NewCounter(Namespace, "model_evictions")
)

// KeyModelMapping names the model that serves some keys of
// RunInferenceKeyed's input (Beam Python's KeyModelMapping).
type KeyModelMapping struct {
	Keys []string
	Spec inference.Spec
	// ID names the model: its results carry it in ModelID.Name, and its
	// per-model metrics are named by it. By default results carry no name
	// and the metrics are named by the base name of the Spec's URI.
	ID string
}

// ModelsByKey makes RunInferenceKeyed (and RunInferenceKeyedWithFailures)
// run each element on the model its key maps to; keys no mapping names run
// on the transform's spec, or fail (at stage batch) if that spec is the
// zero Spec. The input's keys must be strings. Models are loaded when a
// key first needs them; MaxModelsPerWorker bounds how many stay loaded.
func ModelsByKey(mappings ...KeyModelMapping) Option {
	return func(c *config) error {
		if len(mappings) == 0 {
			return fmt.Errorf("ModelsByKey(): no mappings")
		}
		seen := map[string]bool{}
		for i, m := range mappings {
			if err := m.Spec.Validate(); err != nil {
				return fmt.Errorf("ModelsByKey: mapping %d: %w", i, err)
			}
			if len(m.Keys) == 0 {
				return fmt.Errorf("ModelsByKey: mapping %d (%v) has no keys", i, m.Spec)
			}
			for _, k := range m.Keys {
				if seen[k] {
					return fmt.Errorf("ModelsByKey: key %q is mapped twice", k)
				}
				seen[k] = true
			}
		}
		c.Models = mappings
		return nil
	}
}

// MaxModelsPerWorker bounds how many models of one transform a worker
// process holds loaded with ModelsByKey or WithModelUpdates: when a batch
// needs another, the least recently used model that no batch is running on
// is released (closed at once), and a batch waits while every loaded model
// is running. n must be positive; the default is no bound.
func MaxModelsPerWorker(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("MaxModelsPerWorker(%d): must be positive", n)
		}
		c.MaxModels = n
		return nil
	}
}

// newPoolID names a transform's model pool, the same in every worker.
func newPoolID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PoolStats counts what a transform's model pool did in this process.
type PoolStats struct {
	Loads     int64 // models the pool loaded (model_loads)
	Hits      int64 // borrows that found their model loaded, in the pool or in the shared cache (a retired model within its linger)
	Evictions int64 // models released to make room
	Loaded    int   // models held now
}

// modelPool holds one transform's models in this process.
type modelPool struct {
	max int // 0: no bound

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a lease ends or a load finishes
	entries map[string]*poolEntry
	stats   PoolStats
}

type poolEntry struct {
	spec     inference.Spec
	loading  bool // a caller is loading it; wait on cond
	handle   *inference.Handle
	info     modelInfo
	inFlight int // batches running on it
	lastUsed time.Time
	retired  bool // replaced (WithModelUpdates): released when its last batch ends
}

// modelInfo is what a batcher reads from a model before it batches for it.
type modelInfo struct {
	inputs   []inference.TensorInfo
	maxBatch int
}

var (
	poolsMu sync.Mutex
	pools   = map[string]*modelPool{}
)

// poolFor returns the process's pool of the transform with id.
func poolFor(id string, max int) *modelPool {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p, ok := pools[id]
	if !ok {
		p = &modelPool{max: max, entries: map[string]*poolEntry{}}
		p.cond = sync.NewCond(&p.mu)
		pools[id] = p
	}
	return p
}

// Stats returns the pool's counters.
func (p *modelPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Loaded = 0
	for _, e := range p.entries {
		if e.handle != nil {
			st.Loaded++
		}
	}
	return st
}

// lease is one batch's use of a pool's model.
type lease struct {
	pool   *modelPool
	entry  *poolEntry
	loaded bool // this borrow loaded the model: the borrower reports it (reportLoad)
}

func (l *lease) handle() *inference.Handle { return l.entry.handle }

// borrow lends spec's model for one batch, loading it if the pool does not
// hold it, after releasing the least recently used idle model if the pool
// is full. It waits while the pool is full of running models. maxBatch is
// the transform's MaxBatchSize, which the model's own limits may lower. A
// lease that loaded its model says so; its borrower reports the load, in a
// bundle's context (reportLoad).
func (p *modelPool) borrow(ctx context.Context, spec inference.Spec, maxBatch int) (*lease, error) {
	key := spec.Key()
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, ok := p.entries[key]
		if ok && e.loading {
			p.cond.Wait()
			continue
		}
		if ok && !e.retired {
			e.inFlight++
			p.stats.Hits++
			return &lease{pool: p, entry: e}, nil
		}
		if p.max > 0 && len(p.entries) >= p.max && !p.evictLocked(ctx) {
			p.cond.Wait() // every model is running a batch or loading
			continue
		}
		e = &poolEntry{spec: spec, loading: true}
		p.entries[key] = e
		p.mu.Unlock()
		h, err := inference.Acquire(ctx, spec)
		p.mu.Lock()
		e.loading = false
		p.cond.Broadcast()
		if err != nil {
			delete(p.entries, key)
			return nil, err
		}
		e.handle, e.info = h, infoOf(h, maxBatch)
		e.inFlight++
		loaded, _ := h.Loaded()
		if loaded {
			p.stats.Loads++
		} else { // another transform's, or a model retired within the cache's linger
			p.stats.Hits++
		}
		return &lease{pool: p, entry: e, loaded: loaded}, nil
	}
}

// evictLocked releases the least recently used model no batch is running
// on, and says whether there was one.
func (p *modelPool) evictLocked(ctx context.Context) bool {
	var lru *poolEntry
	for _, e := range p.entries {
		if e.loading || e.inFlight > 0 {
			continue
		}
		if lru == nil || e.lastUsed.Before(lru.lastUsed) {
			lru = e
		}
	}
	if lru == nil {
		return false
	}
	delete(p.entries, lru.spec.Key())
	lru.handle.Evict()
	p.stats.Evictions++
	modelEvictions.Inc(ctx, 1)
	return true
}

// reportLoad reports the lease's load, if it made one, in the metrics of
// the bundle whose context ctx is: model_loads, the load's latency and the
// model's size, unlabelled and in the model's metrics m (nil: unlabelled
// only).
func (l *lease) reportLoad(ctx context.Context, m *modelMetrics) {
	if !l.loaded {
		return
	}
	l.loaded = false
	modelLoads.Inc(ctx, 1)
	reportModelLoad(ctx, l.handle(), m)
}

// reportModelLoad reports the load of h: its latency and the model's
// size, unlabelled and in m (where not nil).
func reportModelLoad(ctx context.Context, h *inference.Handle, m *modelMetrics) {
	_, took := h.Loaded()
	size := h.Model().ByteSize()
	loadLatencyMs.Update(ctx, took.Milliseconds())
	modelByteSize.Update(ctx, size)
	if m != nil {
		m.loaded(ctx, took, size)
	}
}

// done ends the lease's batch. A retired model is released when its last
// batch ends.
func (l *lease) done() {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	e := l.entry
	e.inFlight--
	e.lastUsed = time.Now()
	if e.retired && e.inFlight == 0 {
		e.handle.Release()
	}
	p.cond.Broadcast()
}

// retire marks spec's model as replaced: no new batch borrows it, and it is
// released when its last batch ends. A later borrow (a shard of this
// process that has not yet taken the update) takes it again from the
// shared cache within the cache's linger, without loading it.
func (p *modelPool) retire(spec inference.Spec) {
	key := spec.Key()
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.entries[key]
	if !ok || e.loading {
		return
	}
	delete(p.entries, key)
	e.retired = true
	if e.inFlight == 0 {
		e.handle.Release()
	}
	p.cond.Broadcast()
}

// infoOf reads what batching needs from a loaded model: its inputs, and
// the largest batch it takes (maxBatch, lowered by a fixed batch dimension
// and by the device memory's ceiling).
func infoOf(h *inference.Handle, maxBatch int) modelInfo {
	info := modelInfo{inputs: h.Model().Inputs(), maxBatch: maxBatch}
	for _, in := range info.inputs {
		if len(in.Shape) > 0 && in.Shape[0] > 0 {
			// The model's batch dimension is fixed: never run more than that.
			info.maxBatch = min(info.maxBatch, in.Shape[0])
		}
	}
	if bl, ok := h.Model().(inference.BatchLimiter); ok {
		// A GPU model: no larger batch than the device memory holds.
		if c := bl.MaxBatch(); c > 0 {
			info.maxBatch = min(info.maxBatch, c)
		}
	}
	return info
}

package inference

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// DefaultLinger is how long the shared cache keeps a model loaded after its
// last reference is released. The Go SDK tears DoFns down when it drops a
// bundle plan (after a failed bundle, say) and builds new ones for the next
// bundle; lingering keeps that from reloading the model and re-uploading
// its weights.
const DefaultLinger = time.Minute

// Cache loads each distinct Spec once and shares the Model among every
// caller, counting references. Concurrent Acquires of one Spec wait for a
// single load; a failed load is returned to every caller waiting on it and
// forgotten, so the next Acquire tries again. When the last reference is
// released the model is closed after the cache's linger time, unless it is
// acquired again first.
//
// The zero Cache is not usable; call NewCache, or use the process-wide
// cache through Acquire.
type Cache struct {
	linger time.Duration

	mu      sync.Mutex
	entries map[string]*entry // guarded by mu
	stats   map[string]*Stats // per Spec key, kept after the model is closed; guarded by mu
	total   Stats             // guarded by mu
}

// Stats counts what a cache did, in total or for one Spec.
type Stats struct {
	Loads        int64 // loader calls that succeeded
	LoadFailures int64 // loader calls that failed
	Hits         int64 // acquires served by a model loaded (or loading) for another caller
	Releases     int64 // references released
	Closes       int64 // models closed after their last release
	Refs         int64 // references held now
}

type entry struct {
	key   string
	ready chan struct{} // closed when the load has finished
	refs  int           // guarded by Cache.mu
	timer *time.Timer   // pending close while refs == 0; guarded by Cache.mu

	// Written once before ready is closed.
	model    Model
	id       ModelID
	err      error
	loadTime time.Duration
}

// NewCache returns an empty cache that keeps a model loaded for linger after
// its last release (0 closes it at once).
func NewCache(linger time.Duration) *Cache {
	return &Cache{linger: linger, entries: map[string]*entry{}, stats: map[string]*Stats{}}
}

// shared is the process-wide cache behind Acquire: one model load per
// worker process, shared by every DoFn instance and bundle.
var shared = NewCache(DefaultLinger)

// Shared returns the process-wide cache that Acquire uses.
func Shared() *Cache { return shared }

// Acquire returns a reference to the model of spec from the process-wide
// cache, loading it if no caller holds it. Call Release on the handle when
// done.
func Acquire(ctx context.Context, spec Spec) (*Handle, error) { return shared.Acquire(ctx, spec) }

// Handle is one reference to a cached model. Its methods are safe for
// concurrent use; Release may be called more than once.
type Handle struct {
	cache    *Cache
	e        *entry
	loaded   bool
	released atomic.Bool
}

// Model returns the shared model. It stays valid until Release.
func (h *Handle) Model() Model { return h.e.model }

// ID identifies the loaded model instance.
func (h *Handle) ID() ModelID { return h.e.id }

// Loaded reports whether this Acquire performed the load (rather than
// sharing a model another caller loaded), and how long the load took.
func (h *Handle) Loaded() (bool, time.Duration) { return h.loaded, h.e.loadTime }

// Release gives the reference back. Calls after the first do nothing.
func (h *Handle) Release() {
	if h.released.CompareAndSwap(false, true) {
		h.cache.release(h.e, true, h.cache.linger)
	}
}

// Evict gives the reference back like Release, but closes the model at
// once, without the cache's linger, if it was the last reference: for a
// caller that bounds how many models a process holds.
func (h *Handle) Evict() {
	if h.released.CompareAndSwap(false, true) {
		h.cache.release(h.e, true, 0)
	}
}

// Acquire returns a reference to the model of spec, loading it if the cache
// does not hold it. The first caller's ctx governs the load; a caller whose
// ctx ends while it waits gets ctx's error and holds no reference.
func (c *Cache) Acquire(ctx context.Context, spec Spec) (*Handle, error) {
	key := spec.Key()
	c.mu.Lock()
	e, found := c.entries[key]
	if !found {
		e = &entry{key: key, ready: make(chan struct{})}
		c.entries[key] = e
	}
	e.refs++
	c.statsLocked(key).Refs++
	c.total.Refs++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	c.mu.Unlock()

	if !found {
		c.load(ctx, spec, e)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			c.release(e, false, c.linger)
			return nil, fmt.Errorf("inference: waiting for model %v: %w", spec, context.Cause(ctx))
		}
	}
	if e.err != nil {
		c.release(e, false, c.linger)
		return nil, e.err
	}
	if found {
		c.mu.Lock()
		c.statsLocked(key).Hits++
		c.total.Hits++
		c.mu.Unlock()
	}
	return &Handle{cache: c, e: e, loaded: !found}, nil
}

// load runs the loader for e and publishes the result. A failed entry is
// removed from the map at once, so that the next Acquire loads afresh.
func (c *Cache) load(ctx context.Context, spec Spec, e *entry) {
	start := time.Now()
	m, err := loadModel(ctx, spec)
	c.mu.Lock()
	if err != nil {
		e.err = err
		delete(c.entries, e.key)
		c.statsLocked(e.key).LoadFailures++
		c.total.LoadFailures++
	} else {
		e.model = m
		e.id = ModelID{URI: spec.URI, Instance: uuid.NewString()}
		e.loadTime = time.Since(start)
		c.statsLocked(e.key).Loads++
		c.total.Loads++
	}
	c.mu.Unlock()
	close(e.ready)
}

func loadModel(ctx context.Context, spec Spec) (m Model, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("inference: load %v: loader panicked: %v: %w", spec, p, ErrBadModel)
		}
	}()
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrBadModel)
	}
	loader, err := loaderFor(spec.Format)
	if err != nil {
		return nil, fmt.Errorf("inference: load %v: %w", spec, err)
	}
	backend, err := ResolveDevice(spec.device())
	if err != nil {
		return nil, fmt.Errorf("inference: load %v: %w", spec, err)
	}
	m, err = loader(ctx, spec, backend)
	if err != nil {
		return nil, fmt.Errorf("inference: load %v: %w", spec, err)
	}
	if m == nil {
		return nil, fmt.Errorf("inference: load %v: loader returned no model: %w", spec, ErrBadModel)
	}
	return m, nil
}

// release drops one reference; counted says whether it is a Handle's
// Release (rather than an Acquire that failed or gave up waiting). The last
// reference closes the model, at once or after linger.
func (c *Cache) release(e *entry, counted bool, linger time.Duration) {
	c.mu.Lock()
	e.refs--
	st := c.statsLocked(e.key)
	st.Refs--
	c.total.Refs--
	if counted {
		st.Releases++
		c.total.Releases++
	}
	if e.refs > 0 || c.entries[e.key] != e || !isClosed(e.ready) {
		// Still referenced, already forgotten after a failed load, or still
		// loading (the loading caller holds a reference).
		c.mu.Unlock()
		return
	}
	if linger > 0 {
		e.timer = time.AfterFunc(linger, func() { c.closeIfIdle(e) })
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.closeIfIdle(e)
}

// closeIfIdle forgets e and closes its model if nobody acquired it since its
// last release. Close runs outside the lock so that a slow device teardown
// never blocks other models' acquires. Its error is dropped: no caller is
// left to receive it.
func (c *Cache) closeIfIdle(e *entry) {
	c.mu.Lock()
	if e.refs != 0 || c.entries[e.key] != e {
		c.mu.Unlock()
		return
	}
	delete(c.entries, e.key)
	e.timer = nil
	c.statsLocked(e.key).Closes++
	c.total.Closes++
	c.mu.Unlock()
	_ = e.model.Close()
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (c *Cache) statsLocked(key string) *Stats {
	st, ok := c.stats[key]
	if !ok {
		st = &Stats{}
		c.stats[key] = st
	}
	return st
}

// Stats returns the cache's counters summed over every Spec.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// StatsFor returns the counters of one Spec.
func (c *Cache) StatsFor(spec Spec) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stats[spec.Key()]; ok {
		return *st
	}
	return Stats{}
}

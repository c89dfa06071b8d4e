package runinference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local" // local paths in WatchFilePattern
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/beamml/beamml/inference"
)

// Model updates (WithModelUpdates). Each update is sent to every shard of
// the stateful path (stateful.go), in order with the shard's elements. A
// shard that receives one first runs the elements it holds on the model
// they came for, then loads the new model through the transform's model
// pool (once per process: the pool and inference's cache share loads) and
// records it in its state, so that every later batch of the shard runs on
// it. The old model is retired in the pool: batches running on it finish,
// and it is released when the last of them ends. A model that fails to
// load leaves the old one in service; the failure is logged and counted
// (model_update_failures).

var (
	modelUpdates        = beam.NewCounter(Namespace, "model_updates")
	modelUpdateFailures = beam.NewCounter(Namespace, "model_update_failures")
)

// DefaultUpdateBatchDuration is the MaxBatchDuration of a transform with
// WithModelUpdates that sets none.
const DefaultUpdateBatchDuration = time.Second

// ModelMetadata names a model to serve from now on (Beam Python's
// ModelMetadata): the transform's spec with URI is loaded, and results
// carry ID in their ModelID.Name.
type ModelMetadata struct {
	ID  string
	URI string
}

func init() {
	beam.RegisterType(reflect.TypeOf((*ModelMetadata)(nil)).Elem())
	register.DoFn2x0[ModelMetadata, func(int, []byte)](&broadcastFn{})
	register.DoFn3x1[context.Context, []byte, func(ModelMetadata), error](&watchFn{})
	register.Emitter1[ModelMetadata]()
}

// WithModelUpdates swaps the model while the pipeline runs: each
// ModelMetadata of updates, a PCollection<ModelMetadata>, replaces the
// model from when it arrives (WatchFilePattern makes one from files that
// appear). A batch runs wholly on one model, and results carry the name of
// the model that produced them in ModelID.Name (ModelMetadata.ID; for the
// transform's own spec, ModelName's, else empty). A model that fails to load leaves the one in service; the
// error is logged and counted in model_update_failures.
//
// Updates reach the batches through keyed state, so the transform takes
// the path of MaxBatchDuration (DefaultUpdateBatchDuration where none is
// given), which needs a runner with state and timers.
func WithModelUpdates(updates beam.PCollection) Option {
	return func(c *config) error {
		if !updates.IsValid() {
			return fmt.Errorf("WithModelUpdates: the PCollection is not valid")
		}
		if t := updates.Type().Type(); t != reflect.TypeOf(ModelMetadata{}) {
			return fmt.Errorf("WithModelUpdates: updates is PCollection<%v>, want PCollection<runinference.ModelMetadata>", t)
		}
		c.updates = updates
		c.Updates = true
		return nil
	}
}

// broadcastFn sends each model update to every shard.
type broadcastFn struct {
	Shards int
}

func (f *broadcastFn) ProcessElement(md ModelMetadata, emit func(int, []byte)) {
	b, _ := json.Marshal(md) // a struct of two strings always marshals
	p := append([]byte{pendingUpdate}, b...)
	for shard := range f.Shards {
		emit(shard, p)
	}
}

// broadcastUpdates is expandStateful's second input with WithModelUpdates:
// every update, to every one of shards, in the global window.
func broadcastUpdates(s beam.Scope, updates beam.PCollection, shards int) beam.PCollection {
	global := beam.WindowInto(s, window.NewGlobalWindows(), updates)
	return beam.ParDo(s, &broadcastFn{Shards: shards}, global)
}

// specOf is the spec of the model md names: the transform's, with md's URI.
func (b *batcher) specOf(md ModelMetadata) inference.Spec {
	spec := b.Spec
	if md.URI != "" {
		spec.URI = md.URI
	}
	return spec
}

// current reads the shard's model: the last update it loaded, or the zero
// ModelMetadata for the transform's spec.
func (c *statefulCore) current(ctx context.Context, st shardState, sp state.Provider) (ModelMetadata, error) {
	var md ModelMetadata
	b, ok, err := st.Model.Read(sp)
	if err != nil || !ok {
		return md, err
	}
	return md, json.Unmarshal(b, &md)
}

// update takes a model update: it runs the shard's waiting elements on the
// model they came for, then loads the new one and makes it the shard's.
func (c *statefulCore) update(ctx context.Context, st shardState, sp state.Provider, tp timers.Provider, p []byte, keyType reflect.Type, out sink) error {
	var md ModelMetadata
	if err := json.Unmarshal(p[1:], &md); err != nil {
		return fmt.Errorf("RunInference: a model update does not decode: %w", err)
	}
	cur, err := c.current(ctx, st, sp)
	if err != nil {
		return err
	}
	if md == cur {
		return nil // a watcher's repeat
	}
	st.Due.Clear(tp)
	if err := c.flush(ctx, st, sp, keyType, out); err != nil {
		return err
	}
	spec := c.specOf(md)
	l, err := c.pool.borrow(ctx, spec, c.Config.MaxBatchSize)
	if err != nil {
		modelUpdateFailures.Inc(ctx, 1)
		log.Errorf(ctx, "RunInference: model update %q (%s) does not load, so the model in service (%s) stays: %v",
			md.ID, md.URI, c.specOf(cur).URI, err)
		return nil
	}
	// The new model's metrics, declared here (batcher.declareCounters), at 0.
	m := metricsFor(metricsID(md.ID, spec))
	m.declare(ctx)
	l.reportLoad(ctx, m)
	l.done()
	b, _ := json.Marshal(md)
	if err := st.Model.Write(sp, b); err != nil {
		return err
	}
	if c.specOf(cur).Key() != spec.Key() {
		c.pool.retire(c.specOf(cur))
	}
	modelUpdates.Inc(ctx, 1)
	return nil
}

// WatchFilePattern makes a PCollection<ModelMetadata> for WithModelUpdates
// from the files that match pattern (a glob, on a local path or any Beam
// filesystem: gs:// on Dataflow), looked at every interval: each time the
// newest match changes, it is emitted, with its path as URI and its base
// name as ID. Newest is by modification time where the filesystem tells
// it (local files and gs:// do), and else the last name in sort order.
// The source is a periodic impulse from now on, so the pipeline is
// streaming; it runs until the pipeline is cancelled, or until the time
// WatchUntil gives, after which a pipeline whose other inputs have ended
// finishes.
//
// Any PCollection<ModelMetadata> can feed WithModelUpdates: one built from
// a Pub/Sub topic, or a single update at a given time, from one tick of
// periodic.Sequence (see the package's example of WithModelUpdates).
func WatchFilePattern(s beam.Scope, pattern string, interval time.Duration, opts ...WatchOption) beam.PCollection {
	s = s.Scope("runinference.WatchFilePattern")
	if interval <= 0 {
		panic(fmt.Errorf("RunInference: WatchFilePattern(%q, %v): the interval must be positive", pattern, interval))
	}
	w := watchConfig{end: mtime.MaxTimestamp.ToTime()}
	for _, o := range opts {
		if err := o(&w); err != nil {
			panic(fmt.Errorf("RunInference: WatchFilePattern(%q, %v): %w", pattern, interval, err))
		}
	}
	start := time.Now()
	if !w.end.After(start) {
		panic(fmt.Errorf("RunInference: WatchFilePattern(%q, %v): WatchUntil(%v) is not after now (%v)", pattern, interval, w.end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano)))
	}
	ticks := periodic.Impulse(s, start, w.end, interval, false)
	return beam.ParDo(s, &watchFn{Pattern: pattern}, ticks)
}

// A WatchOption configures WatchFilePattern.
type WatchOption func(*watchConfig) error

type watchConfig struct {
	end time.Time
}

// WatchUntil stops WatchFilePattern's watching at end: its last look is
// the last tick before end, and then its PCollection ends, so that a
// pipeline whose other inputs end too finishes (a bounded job, a test, a
// backfill). By default it watches until the pipeline is cancelled. end
// must be after the time WatchFilePattern is called.
func WatchUntil(end time.Time) WatchOption {
	return func(c *watchConfig) error {
		if end.IsZero() {
			return errors.New("WatchUntil: the zero time")
		}
		c.end = end
		return nil
	}
}

// watchFn emits the newest file of Pattern when it changes.
type watchFn struct {
	Pattern string
	last    ModelMetadata
}

func (f *watchFn) ProcessElement(ctx context.Context, _ []byte, emit func(ModelMetadata)) error {
	md, ok, err := newestFile(ctx, f.Pattern)
	if err != nil {
		// A transient listing failure must not stop the pipeline: the next
		// tick looks again.
		log.Warnf(ctx, "RunInference: WatchFilePattern(%q): %v", f.Pattern, err)
		return nil
	}
	if ok && md != f.last {
		f.last = md
		emit(md)
	}
	return nil
}

// newestFile returns the newest file that matches pattern.
func newestFile(ctx context.Context, pattern string) (ModelMetadata, bool, error) {
	fs, err := filesystem.New(ctx, pattern)
	if err != nil {
		return ModelMetadata{}, false, err
	}
	defer fs.Close()
	files, err := fs.List(ctx, pattern)
	if err != nil || len(files) == 0 {
		return ModelMetadata{}, false, err
	}
	slices.Sort(files)
	newest := files[len(files)-1]
	if lm, ok := fs.(filesystem.LastModifiedGetter); ok {
		var newestAt time.Time
		for _, f := range files {
			at, err := lm.LastModified(ctx, f)
			if err != nil {
				return ModelMetadata{}, false, err
			}
			if !at.Before(newestAt) { // ties: the last name
				newest, newestAt = f, at
			}
		}
	}
	return ModelMetadata{ID: path.Base(newest), URI: newest}, true, nil
}

package runinference

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/beamml/beamml/inference"
)

// Batches across bundles (MaxBatchDuration). In a streaming pipeline a
// bundle often holds one element, so batching within bundles runs batches
// of one. With MaxBatchDuration the transform batches in keyed state
// instead:
//
//  1. the input is re-windowed into the global window (each element keeps
//     its timestamp), and each element is given one of BatchShards shard
//     keys, round-robin from a random start, so that the load spreads over
//     the workers;
//  2. a stateful DoFn buffers each shard's elements (timestamp, key and
//     example, encoded) in a bag, and runs them when MaxBatchSize of them
//     (or MaxBatchBytes) have gathered, when MaxBatchDuration of processing
//     time has passed since the first of them came, or when the input ends
//     (the end of the global window in event time). Its timers hold the
//     output watermark at the earliest buffered timestamp, so no result is
//     late downstream;
//  3. each result is emitted with its element's timestamp, and the input's
//     window function is applied again (with its trigger, allowed lateness
//     and accumulation mode). Every window function of Beam Go assigns
//     windows from the timestamp alone, so each result lands in the
//     windows its element was in: fixed, sliding (an element predicted
//     once is in each of its windows again) and sessions (the windows merge
//     at the next grouping, as the input's would have; on prism v2.77 only
//     among the results that reach the grouping together: see BatchShards).
//
// This is Beam's GroupIntoBatches with a sharded key, written here because
// Beam Go's (v2.77) emits a batch at one timestamp and holds no watermark
// for what it buffers: results would lose their timestamps, and a batch
// flushed at a window's end would arrive late.

// DefaultBatchShards is the number of shard keys of the stateful path when
// neither BatchShards nor the Dataflow worker flags say otherwise.
const DefaultBatchShards = 16

// MaxBatchDuration batches elements across bundles, in keyed state, for
// streaming pipelines where a bundle holds a few elements: a batch runs
// when it holds MaxBatchSize elements (or MaxBatchBytes), or when d has
// passed since its first element came. Each of BatchShards shards batches
// on its own, so a batch holds at most what one shard receives in d.
// Windows and timestamps are kept, and this path also serves sliding
// windows and sessions, which batching within bundles refuses. d must be
// positive.
//
// On prism (v2.77), run such a pipeline with the experiment
// prism_disable_sdf_split (--experiments=prism_disable_sdf_split):
// prism splits a bundle that makes no progress for a while, and a batch
// that takes longer than that is enough; it then lets another bundle of
// the same shard run on an old copy of the shard's state, and buffered
// elements are lost or run twice (engine/elementmanager.go, splitBundle,
// releases the residual's keys while the primary still holds them).
// examples/streaming sets it.
func MaxBatchDuration(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("MaxBatchDuration(%v): must be positive", d)
		}
		c.MaxBatchDuration = d
		return nil
	}
}

// BatchShards is the number of keys MaxBatchDuration's batching spreads
// elements over, each batched on its own by one worker at a time: more
// shards use more workers and make smaller batches. The default is twice
// the Dataflow flag --max_num_workers, or else --num_workers, where the
// program defines them (the Dataflow runner does), and DefaultBatchShards
// otherwise. n must be positive; it matters only with MaxBatchDuration.
//
// Sessions with several shards can fire early, in parts, on prism (Beam Go
// v2.77): prism fires a session window when the watermark passes the end
// of one element's own window ([t, t+gap)), merging only the elements that
// reach its GroupByKey together, where Beam merges a key's sessions as its
// elements come and fires the merged session at its end. Each shard emits
// its results when its batch runs, and the watermark moves on to the next
// shard's hold in between, so the results of one session reach the
// grouping at different watermarks and can come out as several sessions
// (elements at 0 s, 20 s and 40 s with a gap of 30 s: [0s, 30s) alone,
// then [20s, 70s)). One shard whose batch holds the whole session avoids
// it; batches of a session that run at different times do not.
// TestPrismSplitsSessionsAcrossShards reproduces it without RunInference.
func BatchShards(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("BatchShards(%d): must be positive", n)
		}
		c.BatchShards = n
		return nil
	}
}

// defaultShards is BatchShards' default.
func defaultShards() int {
	for _, name := range []string{"max_num_workers", "num_workers"} {
		if f := flag.Lookup(name); f != nil {
			if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
				return 2 * n
			}
		}
	}
	return DefaultBatchShards
}

func init() {
	register.DoFn3x1[beam.EventTime, inference.Example, func(int, []byte), error](&shardFn{})
	register.DoFn4x1[beam.EventTime, beam.X, inference.Example, func(int, []byte), error](&keyedShardFn{})
	register.Emitter2[int, []byte]()
	register.DoFn7x1[context.Context, state.Provider, timers.Provider, int, []byte,
		func(beam.EventTime, PredictionResult), func(beam.EventTime, Failure), error](&statefulFn{})
	register.DoFn7x1[context.Context, state.Provider, timers.Provider, int, []byte,
		func(beam.EventTime, beam.X, PredictionResult), func(beam.EventTime, beam.X, Failure), error](&keyedStatefulFn{})
}

// expandStateful is expand's path with MaxBatchDuration (see above).
func expandStateful(s beam.Scope, spec inference.Spec, cfg config, col beam.PCollection, keyed, withFailures bool) (beam.PCollection, beam.PCollection) {
	ws := col.WindowingStrategy()
	shards := cfg.BatchShards
	if shards == 0 {
		shards = defaultShards()
	}
	global := beam.WindowInto(s, window.NewGlobalWindows(), col)
	core := statefulCore{batcher: batcher{Spec: spec, Config: cfg, Failures: withFailures}}
	var results, failures beam.PCollection
	if keyed {
		keyType := beam.EncodedType{T: col.Type().Components()[0].Type()}
		sharded := beam.ParDo(s, &keyedShardFn{shardFn: shardFn{Shards: shards}, KeyType: keyType}, global)
		if cfg.Updates {
			sharded = beam.Flatten(s, sharded, broadcastUpdates(s, cfg.updates, shards))
		}
		fn := newKeyedStatefulFn(core)
		fn.KeyType = keyType
		results, failures = beam.ParDo2(s, fn, sharded,
			beam.TypeDefinition{Var: beam.XType, T: keyType.T})
	} else {
		sharded := beam.ParDo(s, &shardFn{Shards: shards}, global)
		if cfg.Updates {
			sharded = beam.Flatten(s, sharded, broadcastUpdates(s, cfg.updates, shards))
		}
		results, failures = beam.ParDo2(s, newStatefulFn(core), sharded)
	}
	return rewindow(s, ws, results), rewindow(s, ws, failures)
}

// rewindow applies the windowing strategy ws to col again: its window
// function, trigger, allowed lateness and accumulation mode.
func rewindow(s beam.Scope, ws *window.WindowingStrategy, col beam.PCollection) beam.PCollection {
	opts := []beam.WindowIntoOption{
		beam.Trigger(ws.Trigger),
		beam.AllowedLateness(time.Duration(ws.AllowedLateness) * time.Millisecond),
	}
	if ws.AccumulationMode == window.Accumulating {
		opts = append(opts, beam.PanesAccumulate())
	} else {
		opts = append(opts, beam.PanesDiscard())
	}
	return beam.WindowInto(s, ws.Fn, col, opts...)
}

// What the stateful DoFn receives: a byte saying what it is, then a
// pending element (pendingElement) or a model update (pendingUpdate: a
// ModelMetadata's JSON, see updates.go). A pending element, as the DoFn
// buffers it, has its timestamp (a varint of milliseconds), its key (a
// uvarint length, then the key's encoding; empty when unkeyed) and its
// example (inference.Example's MarshalBinary).
const (
	pendingElement = 0
	pendingUpdate  = 1
)

func encodePending(ts beam.EventTime, key []byte, ex inference.Example) ([]byte, error) {
	b := binary.AppendVarint([]byte{pendingElement}, int64(ts))
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	exb, err := ex.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(b, exb...), nil
}

// pendingTime reads a pending element's timestamp.
func pendingTime(b []byte) (beam.EventTime, error) {
	if len(b) == 0 || b[0] != pendingElement {
		return 0, errors.New("runinference: a buffered element is not one")
	}
	ts, n := binary.Varint(b[1:])
	if n <= 0 {
		return 0, errors.New("runinference: a buffered element's timestamp is truncated")
	}
	return beam.EventTime(ts), nil
}

func decodePending(b []byte) (ts beam.EventTime, key []byte, ex inference.Example, err error) {
	if ts, err = pendingTime(b); err != nil {
		return
	}
	_, n := binary.Varint(b[1:])
	b = b[1+n:]
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return 0, nil, nil, errors.New("runinference: a buffered element's key is truncated")
	}
	key, b = b[k:k+int(l)], b[k+int(l):]
	err = ex.UnmarshalBinary(b)
	return
}

// shardFn gives each element of RunInference's input a shard key.
type shardFn struct {
	Shards int
	next   int // 1 + the last shard given; 0 before the first
}

// shard returns the next shard, round-robin from a random start.
func (f *shardFn) shard() int {
	if f.next == 0 {
		f.next = 1 + rand.IntN(f.Shards)
	}
	f.next = f.next%f.Shards + 1
	return f.next - 1
}

func (f *shardFn) ProcessElement(ts beam.EventTime, ex inference.Example, emit func(int, []byte)) error {
	b, err := encodePending(ts, nil, ex)
	if err != nil {
		return fmt.Errorf("RunInference: %w", err)
	}
	emit(f.shard(), b)
	return nil
}

// keyedShardFn is shardFn for the keyed variants: the element's key goes
// into its pending encoding.
type keyedShardFn struct {
	shardFn
	KeyType beam.EncodedType
	enc     beam.ElementEncoder
}

func (f *keyedShardFn) ProcessElement(ts beam.EventTime, key beam.X, ex inference.Example, emit func(int, []byte)) error {
	if f.enc == nil {
		f.enc = beam.NewElementEncoder(f.KeyType.T)
	}
	var kb bytes.Buffer
	if err := f.enc.Encode(key, &kb); err != nil {
		return fmt.Errorf("RunInference: encode key %v: %w", key, err)
	}
	b, err := encodePending(ts, kb.Bytes(), ex)
	if err != nil {
		return fmt.Errorf("RunInference: %w", err)
	}
	emit(f.shard(), b)
	return nil
}

// statefulCore is the logic of the stateful DoFns: a shard's buffered
// elements, run through the batcher when a batch is due.
type statefulCore struct {
	batcher
	dec beam.ElementDecoder // the keyed variants' keys'
}

// shardState is a shard's state and timers. Beam finds them only among a
// DoFn's own fields, so each stateful DoFn declares them and hands them
// over as a shardState.
type shardState struct {
	Buffer   state.Bag[[]byte]  // the pending elements
	Count    state.Value[int64] // how many
	Bytes    state.Value[int64] // their encoded bytes
	Earliest state.Value[int64] // the earliest timestamp: the timers' watermark hold
	Deadline state.Value[int64] // when Due fires: the first element's arrival plus MaxBatchDuration, Unix ms
	Due      timers.ProcessingTime
	Model    state.Value[[]byte] // the shard's model, with WithModelUpdates: a ModelMetadata's JSON; absent for the transform's spec
}

// process buffers one pending element of shard, and runs the shard's
// elements when they make a full batch.
func (c *statefulCore) process(ctx context.Context, st shardState, sp state.Provider, tp timers.Provider, p []byte, keyType reflect.Type, out sink) error {
	if len(p) > 0 && p[0] == pendingUpdate {
		return c.update(ctx, st, sp, tp, p, keyType, out)
	}
	ts, err := pendingTime(p)
	if err != nil {
		return err
	}
	count, _, err := st.Count.Read(sp)
	if err != nil {
		return err
	}
	size, _, err := st.Bytes.Read(sp)
	if err != nil {
		return err
	}
	earliest, _, err := st.Earliest.Read(sp)
	if err != nil {
		return err
	}
	deadline, _, err := st.Deadline.Read(sp)
	if err != nil {
		return err
	}
	if err := st.Buffer.Add(sp, p); err != nil {
		return err
	}
	count, size = count+1, size+int64(len(p))
	if err := st.Count.Write(sp, count); err != nil {
		return err
	}
	if err := st.Bytes.Write(sp, size); err != nil {
		return err
	}
	if count == 1 || int64(ts) < earliest {
		if count == 1 {
			deadline = time.Now().Add(c.Config.MaxBatchDuration).UnixMilli()
			if err := st.Deadline.Write(sp, deadline); err != nil {
				return err
			}
		}
		earliest = int64(ts)
		if err := st.Earliest.Write(sp, earliest); err != nil {
			return err
		}
		hold := timers.WithOutputTimestamp(mtime.Time(earliest).ToTime())
		st.Due.Set(tp, time.UnixMilli(deadline), hold)
	}
	maxBatch := c.Config.MaxBatchSize // ModelsByKey or WithModelUpdates: each model's own limit applies as it runs
	if c.Config.Source == ownModel {
		maxBatch = 1 // the model did not load: run at once, to fail the element
		if c.own != nil {
			maxBatch = c.own.info.maxBatch
		}
	}
	full := count >= int64(max(maxBatch, 1))
	if max := c.Config.MaxBatchBytes; max > 0 && size >= max {
		full = true
	}
	if !full {
		return nil
	}
	// The batch runs before its timer: clear it. (Only here: prism hangs
	// when a processing-time timer is cleared as it fires.)
	st.Due.Clear(tp)
	return c.flush(ctx, st, sp, keyType, out)
}

// flush runs the shard's buffered elements, in batches of at most
// MaxBatchSize of one tensor shape, and clears the state. Their keys are
// of type keyType (nil for the unkeyed variants).
func (c *statefulCore) flush(ctx context.Context, st shardState, sp state.Provider, keyType reflect.Type, out sink) error {
	buf, _, err := st.Buffer.Read(sp)
	if err != nil {
		return err
	}
	var update *ModelMetadata // WithModelUpdates: the shard's model
	if c.Config.Source == updatedModels {
		md, err := c.current(ctx, st, sp)
		if err != nil {
			return err
		}
		update = &md
	}
	for _, clear := range []func(state.Provider) error{st.Buffer.Clear, st.Count.Clear, st.Bytes.Clear, st.Earliest.Clear, st.Deadline.Clear} {
		if err := clear(sp); err != nil {
			return err
		}
	}
	for _, p := range buf {
		ts, kb, ex, err := decodePending(p)
		if err != nil {
			return fmt.Errorf("RunInference: %w", err)
		}
		e := element{window: window.GlobalWindow{}, ts: ts, example: ex, update: update}
		if keyType != nil {
			if c.dec == nil {
				c.dec = beam.NewElementDecoder(keyType)
			}
			if e.key, err = c.dec.Decode(bytes.NewReader(kb)); err != nil {
				return fmt.Errorf("RunInference: decode a buffered element's key: %w", err)
			}
			e.keyed = true
		}
		if err := c.add(ctx, e, out); err != nil {
			return err
		}
	}
	return c.runGroups(ctx, out)
}

// statefulFn is the stateful DoFn of RunInference and
// RunInferenceWithFailures with MaxBatchDuration.
type statefulFn struct {
	statefulCore
	Buffer   state.Bag[[]byte]
	Count    state.Value[int64]
	Bytes    state.Value[int64]
	Earliest state.Value[int64]
	Deadline state.Value[int64]
	Due      timers.ProcessingTime
	Model    state.Value[[]byte]
}

func (f *statefulFn) state() shardState {
	return shardState{f.Buffer, f.Count, f.Bytes, f.Earliest, f.Deadline, f.Due, f.Model}
}

func (f *statefulFn) StartBundle(ctx context.Context, _ func(beam.EventTime, PredictionResult), _ func(beam.EventTime, Failure)) error {
	return f.startBundle(ctx)
}

func (f *statefulFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, p []byte,
	emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) error {
	return f.process(ctx, f.state(), sp, tp, p, nil, unkeyed(emit, fail))
}

func (f *statefulFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, _ timers.Context,
	emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) error {
	return f.flush(ctx, f.state(), sp, nil, unkeyed(emit, fail))
}

func (f *statefulFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) error {
	return f.finishBundle(ctx, unkeyed(emit, fail))
}

// keyedStatefulFn is statefulFn for the keyed variants.
type keyedStatefulFn struct {
	statefulCore
	KeyType  beam.EncodedType
	Buffer   state.Bag[[]byte]
	Count    state.Value[int64]
	Bytes    state.Value[int64]
	Earliest state.Value[int64]
	Deadline state.Value[int64]
	Due      timers.ProcessingTime
	Model    state.Value[[]byte]
}

func (f *keyedStatefulFn) state() shardState {
	return shardState{f.Buffer, f.Count, f.Bytes, f.Earliest, f.Deadline, f.Due, f.Model}
}

func (f *keyedStatefulFn) StartBundle(ctx context.Context, _ func(beam.EventTime, beam.X, PredictionResult), _ func(beam.EventTime, beam.X, Failure)) error {
	return f.startBundle(ctx)
}

func (f *keyedStatefulFn) ProcessElement(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, p []byte,
	emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) error {
	return f.process(ctx, f.state(), sp, tp, p, f.KeyType.T, keyed(emit, fail))
}

func (f *keyedStatefulFn) OnTimer(ctx context.Context, sp state.Provider, tp timers.Provider, _ int, _ timers.Context,
	emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) error {
	return f.flush(ctx, f.state(), sp, f.KeyType.T, keyed(emit, fail))
}

func (f *keyedStatefulFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) error {
	return f.finishBundle(ctx, keyed(emit, fail))
}

// The state and timers of a shard, by the IDs the runner knows them by.
var (
	bufferState   = state.MakeBagState[[]byte]("buffer")
	countState    = state.MakeValueState[int64]("count")
	bytesState    = state.MakeValueState[int64]("bytes")
	earliestState = state.MakeValueState[int64]("earliest")
	deadlineState = state.MakeValueState[int64]("deadline")
	dueTimer      = timers.InProcessingTime("due")
	modelState    = state.MakeValueState[[]byte]("model")
)

func newStatefulFn(core statefulCore) *statefulFn {
	return &statefulFn{statefulCore: core, Buffer: bufferState, Count: countState, Bytes: bytesState,
		Earliest: earliestState, Deadline: deadlineState, Due: dueTimer, Model: modelState}
}

func newKeyedStatefulFn(core statefulCore) *keyedStatefulFn {
	return &keyedStatefulFn{statefulCore: core, Buffer: bufferState, Count: countState, Bytes: bytesState,
		Earliest: earliestState, Deadline: deadlineState, Due: dueTimer, Model: modelState}
}

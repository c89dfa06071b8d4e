package runinference

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/beamml/beamml/inference"
)

// Namespace is the Beam metrics namespace of RunInference, as in the Python
// and Java SDKs.
const Namespace = "BeamML_RunInference"

var (
	numInferences   = beam.NewCounter(Namespace, "num_inferences")
	failedBatches   = beam.NewCounter(Namespace, "failed_batches_counter")
	recoveredPanics = beam.NewCounter(Namespace, "recovered_panics")
	timedOutBatches = beam.NewCounter(Namespace, "timed_out_batches")
	abandonedRuns   = beam.NewCounter(Namespace, "abandoned_runs")
	batchLatencyUs  = beam.NewDistribution(Namespace, "inference_batch_latency_micro_secs")
	batchSize       = beam.NewDistribution(Namespace, "inference_request_batch_size")
	loadLatencyMs   = beam.NewDistribution(Namespace, "load_model_latency_milli_secs")
	modelByteSize   = beam.NewDistribution(Namespace, "model_byte_size")
	deviceFailures  = beam.NewCounter(Namespace, "device_failures")
)

func init() {
	register.DoFn6x1[context.Context, beam.Window, beam.EventTime, inference.Example,
		func(beam.EventTime, PredictionResult), func(beam.EventTime, Failure), error](&inferFn{})
	register.DoFn7x1[context.Context, beam.Window, beam.EventTime, beam.X, inference.Example,
		func(beam.EventTime, beam.X, PredictionResult), func(beam.EventTime, beam.X, Failure), error](&keyedFn{})
	register.Emitter2[beam.EventTime, PredictionResult]()
	register.Emitter2[beam.EventTime, Failure]()
	register.Emitter3[beam.EventTime, beam.X, PredictionResult]()
	register.Emitter3[beam.EventTime, beam.X, Failure]()
}

// inferFn is the DoFn of RunInference and RunInferenceWithFailures.
type inferFn struct{ batcher }

func (f *inferFn) StartBundle(ctx context.Context, _ func(beam.EventTime, PredictionResult), _ func(beam.EventTime, Failure)) error {
	return f.startBundle(ctx)
}

func (f *inferFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, ex inference.Example,
	emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) error {
	return f.add(ctx, element{window: w, ts: ts, example: ex}, unkeyed(emit, fail))
}

func (f *inferFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) error {
	return f.finishBundle(ctx, unkeyed(emit, fail))
}

func unkeyed(emit func(beam.EventTime, PredictionResult), fail func(beam.EventTime, Failure)) sink {
	return sink{
		result:  func(e *element, r PredictionResult) { emit(e.ts, r) },
		failure: func(e *element, f Failure) { fail(e.ts, f) },
	}
}

// keyedFn is the DoFn of the keyed variants.
type keyedFn struct{ batcher }

func (f *keyedFn) StartBundle(ctx context.Context, _ func(beam.EventTime, beam.X, PredictionResult), _ func(beam.EventTime, beam.X, Failure)) error {
	return f.startBundle(ctx)
}

func (f *keyedFn) ProcessElement(ctx context.Context, w beam.Window, ts beam.EventTime, key beam.X, ex inference.Example,
	emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) error {
	return f.add(ctx, element{window: w, ts: ts, key: key, keyed: true, example: ex}, keyed(emit, fail))
}

func (f *keyedFn) FinishBundle(ctx context.Context, emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) error {
	return f.finishBundle(ctx, keyed(emit, fail))
}

func keyed(emit func(beam.EventTime, beam.X, PredictionResult), fail func(beam.EventTime, beam.X, Failure)) sink {
	return sink{
		result:  func(e *element, r PredictionResult) { emit(e.ts, e.key, r) },
		failure: func(e *element, f Failure) { fail(e.ts, e.key, f) },
	}
}

// batcher is the state and logic both DoFns share. Its exported fields are
// the serialized configuration; the rest is built on the worker.
type batcher struct {
	Spec     inference.Spec
	Config   config
	Failures bool // emit Failures rather than failing the bundle

	handle     *inference.Handle
	inputs     []inference.TensorInfo // the model's, read once
	loadErr    error                  // why handle is nil, with Failures set
	reportLoad bool                   // this instance loaded the model and has not reported its metrics
	maxBatch   int
	sizer      *batchSizer // with TargetBatchLatency; made by batchLimit
	groups     map[groupKey]*group
	order      []groupKey // groups in the order they were opened, for deterministic flushes

	pool   *modelPool                // the models of ModelsByKey and WithModelUpdates; nil without
	byKey  map[string]inference.Spec // ModelsByKey's, by key
	infos  map[string]pooledInfo     // the pool's models' inputs and limits, by Spec key: read once
	active *inference.Handle         // the model of the batch running
	// activeSpec is active's spec.
	activeSpec inference.Spec
	activeName string // its name, for results' ModelID.Name

	instanceTally tally // the outcomes of every bundle of this instance, for MaxFailureRate
	bundleTally   tally // the outcomes of this bundle, for its warning
}

// pooledInfo is what add reads from a pool's model, kept so that only its
// first element borrows the model.
type pooledInfo struct {
	modelInfo
	id inference.ModelID
}

// element is one input with what RunInference needs to emit its output.
type element struct {
	window  beam.Window
	ts      beam.EventTime
	key     any
	keyed   bool
	example inference.Example // as the user gave it
	inputs  inference.Example // keyed by the model's input names
	model   *inference.Spec   // the pool's model to run on; nil: the transform's
	// modelName is model's name, for results' ModelID.Name.
	modelName string
}

// groupKey separates elements that must not share a batch: other windows,
// other tensor shapes.
type groupKey struct {
	window typex.Window
	shapes string
	model  string // the pool model's Spec key; "" for the transform's
}

type group struct {
	elems    []element
	bytes    int64
	model    *inference.Spec // the pool's model; nil for the transform's
	name     string          // model's name, for results' ModelID.Name
	maxBatch int
}

// sink emits outputs through the bundle method's emitters.
type sink struct {
	result  func(*element, PredictionResult)
	failure func(*element, Failure)
}

// Setup loads the model, or takes the process's loaded one. A model that
// can never load (malformed, unsupported, no such device) fails the bundle
// in every variant: routing every element to failures would hide it. Other
// load errors (an unreachable store) fail the bundle too, unless the
// failures output is wanted: then the elements go there at stage load and
// the next bundle tries again.
func (b *batcher) Setup(ctx context.Context) error {
	if b.Config.PoolID != "" {
		b.pool = poolFor(b.Config.PoolID, b.Config.MaxModels)
		b.byKey = map[string]inference.Spec{}
		for _, m := range b.Config.Models {
			for _, k := range m.Keys {
				b.byKey[k] = m.Spec
			}
		}
	}
	if b.Spec.Format == "" { // ModelsByKey without a default model
		return nil
	}
	if b.Config.Updates { // the shards' state names the model; check the first loads
		l, err := b.pool.borrow(ctx, b.Spec, b.Config.MaxBatchSize)
		if err != nil && (!b.Failures || permanent(err)) {
			return fmt.Errorf("RunInference: %w", err)
		}
		if err == nil {
			l.done()
		}
		return nil
	}
	err := b.acquire(ctx)
	if errors.Is(err, inference.ErrDeviceFailed) {
		return deviceFailed(ctx, b.Spec, err)
	}
	if err != nil && (!b.Failures || permanent(err)) {
		return fmt.Errorf("RunInference: %w", err)
	}
	return nil
}

// permanent says whether a load error will recur on every attempt in this
// process.
func permanent(err error) bool {
	return errors.Is(err, inference.ErrBadModel) || errors.Is(err, inference.ErrUnsupportedOp) ||
		errors.Is(err, inference.ErrNoDevice) || errors.Is(err, inference.ErrDeviceFailed)
}

func (b *batcher) Teardown() {
	if b.handle != nil {
		b.handle.Release()
		b.handle = nil
	}
}

func (b *batcher) acquire(ctx context.Context) error {
	h, err := inference.Acquire(ctx, b.Spec)
	if err != nil {
		b.loadErr = err
		return err
	}
	b.handle, b.loadErr = h, nil
	b.reportLoad, _ = h.Loaded()
	info := infoOf(h, b.Config.MaxBatchSize)
	b.inputs, b.maxBatch = info.inputs, info.maxBatch
	return nil
}

func (b *batcher) startBundle(ctx context.Context) error {
	if b.handle == nil && b.Spec.Format != "" && !b.Config.Updates {
		// Only with Failures set: a transient load failure in Setup is
		// retried for each bundle (the cache retries the loader).
		err := b.acquire(ctx)
		if errors.Is(err, inference.ErrDeviceFailed) {
			return deviceFailed(ctx, b.Spec, err)
		}
		if err != nil && permanent(err) {
			return fmt.Errorf("RunInference: %w", err)
		}
	}
	if b.reportLoad && b.handle != nil {
		b.reportLoad = false
		_, took := b.handle.Loaded()
		loadLatencyMs.Update(ctx, took.Milliseconds())
		modelByteSize.Update(ctx, b.handle.Model().ByteSize())
		metricsFor(b.Spec.URI).loaded(ctx, took, b.handle.Model().ByteSize())
	}
	if b.groups == nil {
		b.groups = map[groupKey]*group{}
	}
	b.bundleTally = tally{}
	reportGPU(ctx)
	return nil
}

// modelMetrics are the per-model metrics of the batch running: named by
// the model's name where the pipeline gave one (WithModelUpdates), else by
// its URI.
func (b *batcher) modelMetrics() *modelMetrics {
	return metricsFor(cmp.Or(b.activeName, b.activeSpec.URI))
}

// add takes one element: it fails it at once if the model is not loaded or
// the element does not fit the model's inputs, and otherwise adds it to its
// group, running the group when it is full.
func (b *batcher) add(ctx context.Context, e element, out sink) error {
	if b.byKey != nil && e.keyed && e.model == nil {
		if spec, ok := b.byKey[fmt.Sprint(e.key)]; ok {
			e.model = &spec
		} else if b.Spec.Format == "" {
			return b.fail(&e, StageBatch, fmt.Errorf("no model for key %q: ModelsByKey maps %d keys, and the transform has no spec of its own", fmt.Sprint(e.key), len(b.byKey)), inference.ModelID{}, out)
		}
	}
	inputs, maxBatch, modelKey := b.inputs, b.maxBatch, ""
	var id inference.ModelID
	if e.model != nil {
		modelKey = e.model.Key()
		pi, ok := b.infos[modelKey]
		if !ok {
			l, err := b.pool.borrow(ctx, *e.model, b.Config.MaxBatchSize)
			if err != nil {
				return b.fail(&e, StageLoad, err, inference.ModelID{}, out)
			}
			pi = pooledInfo{l.entry.info, l.handle().ID()}
			l.done()
			if b.infos == nil {
				b.infos = map[string]pooledInfo{}
			}
			b.infos[modelKey] = pi
		}
		inputs, maxBatch, id = pi.inputs, pi.maxBatch, pi.id
	} else if b.handle == nil {
		return b.fail(&e, StageLoad, b.loadErr, inference.ModelID{}, out)
	} else {
		id = b.handle.ID()
	}
	conformed, err := inference.Conform(inputs, e.example)
	if err != nil {
		return b.fail(&e, StageBatch, err, id, out)
	}
	e.inputs = conformed
	size := conformed.ByteSize()
	key := groupKey{window: e.window, shapes: inference.StackKey(inputs, conformed), model: modelKey}
	g, ok := b.groups[key]
	if !ok {
		g = &group{model: e.model, name: e.modelName, maxBatch: maxBatch}
		b.groups[key] = g
		b.order = append(b.order, key)
	}
	if max := b.Config.MaxBatchBytes; max > 0 && len(g.elems) >= b.Config.MinBatchSize && g.bytes+size > max {
		if err := b.runGroup(ctx, g, out); err != nil {
			return err
		}
	}
	g.elems = append(g.elems, e)
	g.bytes += size
	limit := g.maxBatch
	if g.model == nil {
		limit = b.batchLimit() // TargetBatchLatency's size, for the transform's own model
	}
	if len(g.elems) >= limit {
		return b.runGroup(ctx, g, out)
	}
	return nil
}

func (b *batcher) finishBundle(ctx context.Context, out sink) error {
	if err := b.runGroups(ctx, out); err != nil {
		return err
	}
	b.warnIfFailuresDominate(ctx)
	return nil
}

// runGroups runs every group left, whatever its size, in the order they
// were opened, and forgets them.
func (b *batcher) runGroups(ctx context.Context, out sink) error {
	defer func() {
		clear(b.groups)
		b.order = b.order[:0]
	}()
	for _, key := range b.order {
		if err := b.runGroup(ctx, b.groups[key], out); err != nil {
			return err
		}
	}
	return nil
}

func (b *batcher) runGroup(ctx context.Context, g *group, out sink) error {
	if len(g.elems) == 0 {
		return nil
	}
	b.active, b.activeSpec, b.activeName = b.handle, b.Spec, g.name
	if g.model != nil {
		l, err := b.pool.borrow(ctx, *g.model, b.Config.MaxBatchSize)
		if err != nil { // evicted, and its load fails now
			for i := range g.elems {
				if ferr := b.fail(&g.elems[i], StageLoad, err, inference.ModelID{}, out); ferr != nil {
					return ferr
				}
			}
			g.elems, g.bytes = g.elems[:0], 0
			return nil
		}
		defer l.done()
		b.active, b.activeSpec = l.handle(), *g.model
	}
	err := b.run(ctx, g.elems, out)
	reportGPU(ctx)
	clear(g.elems) // drop the examples for the collector; keep the capacity
	g.elems, g.bytes = g.elems[:0], 0
	return err
}

// run predicts a batch and emits a result per element. A batch that fails
// is split in halves, down to single elements, which then fail alone. A
// device failure fails the bundle instead (deviceFailed).
func (b *batcher) run(ctx context.Context, elems []element, out sink) error {
	rows, stage, err := b.predict(ctx, elems)
	if err != nil {
		failedBatches.Inc(ctx, 1)
		b.modelMetrics().batchFailed(ctx)
		if errors.Is(err, inference.ErrDeviceFailed) {
			return deviceFailed(ctx, b.Spec, err)
		}
		if len(elems) == 1 || ctx.Err() != nil {
			for i := range elems {
				if ferr := b.fail(&elems[i], stage, err, b.active.ID(), out); ferr != nil {
					return ferr
				}
			}
			return nil
		}
		half := len(elems) / 2
		if err := b.run(ctx, elems[:half], out); err != nil {
			return err
		}
		return b.run(ctx, elems[half:], out)
	}
	id := b.active.ID()
	id.Name = b.activeName
	for i := range elems {
		out.result(&elems[i], PredictionResult{Example: elems[i].example, Outputs: rows[i], ModelID: id})
	}
	b.count(len(elems), nil)
	return b.checkFailureRate()
}

// predict stacks, runs and unstacks one batch, and says which stage failed.
// A panic in any stage becomes that stage's error.
func (b *batcher) predict(ctx context.Context, elems []element) (rows []map[string]inference.Tensor, stage Stage, err error) {
	stage = StageBatch
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, inference.Recovered(fmt.Sprintf("RunInference (stage %s)", stage), p)
		}
		if errors.Is(err, inference.ErrPanic) {
			recoveredPanics.Inc(ctx, 1)
		}
	}()
	exs := make([]inference.Example, len(elems))
	for i := range elems {
		exs[i] = elems[i].inputs
	}
	inputs, err := inference.StackExamples(exs)
	if err != nil {
		return nil, stage, err
	}
	stage = StageInference
	start := time.Now()
	outputs, err := b.runModel(ctx, inputs, len(elems))
	if err != nil {
		return nil, stage, err
	}
	took := time.Since(start)
	batchLatencyUs.Update(ctx, took.Microseconds())
	b.modelMetrics().ran(ctx, took)
	b.observeLatency(len(elems), took)
	stage = StageOutput
	if rows, err = inference.UnstackOutputs(outputs, len(elems)); err != nil {
		return nil, stage, err
	}
	numInferences.Inc(ctx, int64(len(elems)))
	b.modelMetrics().inferred(ctx, len(elems))
	batchSize.Update(ctx, int64(len(elems)))
	return rows, "", nil
}

// runModel runs one batch of n rows on the model, under the batch's
// deadline (InferenceTimeout) and memory budget. Model.Run runs on a
// goroutine of its own, so that a model that ignores its deadline does not
// block the bundle: it is abandoned a grace period after the deadline, and
// keeps a reference to the model until it returns. A panic in Model.Run
// becomes an error wrapping inference.ErrPanic (and a runtime.Goexit an
// error too, not an empty result). Metrics are counted here,
// on the bundle's goroutine: an abandoned run may outlive the bundle.
func (b *batcher) runModel(ctx context.Context, inputs map[string]inference.Tensor, n int) (map[string]inference.Tensor, error) {
	timeout := cmp.Or(b.Config.InferenceTimeout, DefaultInferenceTimeout)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if budget := b.Config.MemoryBudget; budget > 0 {
		runCtx = inference.WithMemoryBudget(runCtx, budget)
	}
	model := b.active.Model()
	done := make(chan runResult, 1)
	go func() {
		r := runResult{err: errors.New("Model.Run ended its goroutine (runtime.Goexit) without returning")}
		defer func() {
			if p := recover(); p != nil {
				r = runResult{err: inference.Recovered("Model.Run", p)}
			}
			done <- r
		}()
		r.outputs, r.err = model.Run(runCtx, inputs)
	}()

	var r runResult
	select {
	case r = <-done:
	case <-runCtx.Done():
		grace := time.NewTimer(min(max(timeout/10, 50*time.Millisecond), time.Second))
		defer grace.Stop()
		select {
		case r = <-done:
		case <-grace.C:
			abandonedRuns.Inc(ctx, 1)
			b.holdModelFor(ctx, done)
			r.abandoned = true
		}
	}
	if ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) && (r.err != nil || r.abandoned) {
		timedOutBatches.Inc(ctx, 1)
		return nil, &timeoutError{timeout: timeout, rows: n, abandoned: r.abandoned, err: r.err}
	}
	if r.abandoned {
		return nil, context.Cause(ctx) // the bundle's context is done
	}
	return r.outputs, r.err
}

// runResult is what Model.Run returned, or that it was abandoned.
type runResult struct {
	outputs   map[string]inference.Tensor
	err       error
	abandoned bool
}

// holdModelFor takes a reference to the model for an abandoned run,
// released when the run returns, so that the shared cache does not close
// the model under it.
func (b *batcher) holdModelFor(ctx context.Context, done <-chan runResult) {
	h, err := inference.Acquire(context.WithoutCancel(ctx), b.activeSpec) // a cache hit: b.active holds the model
	if err != nil {
		return
	}
	go func() {
		<-done
		h.Release()
	}()
}

// timeoutError is a batch whose Model.Run passed its InferenceTimeout.
type timeoutError struct {
	timeout   time.Duration
	rows      int
	abandoned bool  // Model.Run did not return
	err       error // what Model.Run returned, if it did
}

func (e *timeoutError) Error() string {
	msg := fmt.Sprintf("batch of %d timed out after %v (InferenceTimeout)", e.rows, e.timeout)
	switch {
	case e.abandoned:
		msg += ": Model.Run did not return and was abandoned"
	case e.err != nil:
		msg += ": " + e.err.Error()
		if errors.Is(e.err, context.DeadlineExceeded) {
			return msg
		}
	}
	return msg + ": " + context.DeadlineExceeded.Error()
}

func (e *timeoutError) Unwrap() []error {
	if e.err == nil {
		return []error{context.DeadlineExceeded}
	}
	return []error{context.DeadlineExceeded, e.err}
}

// fail routes one element to the failures output, or, without it, returns
// the error that fails the bundle.
func (b *batcher) fail(e *element, stage Stage, cause error, id inference.ModelID, out sink) error {
	if cause == nil {
		cause = errors.New("unknown error")
	}
	if b.Failures {
		f := Failure{Example: e.example, Kind: kindOf(cause), Err: cause.Error(), Stage: stage, ModelID: id}
		out.failure(e, f)
		b.count(1, &f)
		return b.checkFailureRate()
	}
	err := &elementError{element: formatExample(e.example), stage: stage, kind: kindOf(cause), cause: cause,
		model: b.Spec, ts: e.ts, window: e.window}
	if e.keyed {
		err.key = formatKey(e.key)
	}
	return err
}

// formatKey prints an element's key for an error, quoted when it is a
// string (so that an empty key shows), and cut at 100 bytes.
func formatKey(k any) string {
	if s, ok := k.(string); ok {
		return truncate(fmt.Sprintf("%q", s), 100)
	}
	return truncate(fmt.Sprint(k), 100)
}

// elementError is the error that fails a bundle for one element when there
// is no failures output. Beam prints it last, after the bundle's execution
// plan, and log viewers often show a message's first line alone, so its
// first line holds what a reader needs: the element with its first values,
// its key, the stage, the kind and the cause. The model, event time and
// window follow on a second line.
type elementError struct {
	element string // formatExample's
	key     string // formatKey's; "" when unkeyed
	stage   Stage
	kind    FailureKind
	cause   error
	model   inference.Spec
	ts      beam.EventTime
	window  beam.Window
}

func (e *elementError) Error() string {
	var key string
	if e.key != "" {
		key = " with key " + e.key
	}
	return fmt.Sprintf("RunInference: element %s%s failed at stage %s (%s): %v\n\tmodel %v, event time %v, window %v",
		e.element, key, e.stage, e.kind, e.cause, e.model, e.ts, e.window)
}

func (e *elementError) Unwrap() error { return e.cause }

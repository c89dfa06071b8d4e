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

// allCounters are RunInference's counters (declareCounters).
var allCounters = []beam.Counter{numInferences, failedBatches, recoveredPanics, timedOutBatches, abandonedRuns, deviceFailures,
	modelLoads, modelEvictions, modelUpdates, modelUpdateFailures}

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
//
// Each element is batched for one model (batchModel), decided in add by
// the transform's model source (Config.Source): the transform's own model,
// the model its key maps to (ModelsByKey), or its shard's current model
// (WithModelUpdates). Each batch then runs on one target, resolved once
// per batch in runGroup and passed down through the run, the failures and
// the metrics.
type batcher struct {
	Spec     inference.Spec
	Config   config
	Failures bool // emit Failures rather than failing the bundle

	handle     *inference.Handle // the transform's own model, held from Setup to Teardown
	own        *batchModel       // handle's, while it is loaded
	loadErr    error             // why handle is nil, with Failures set
	runner     *runner           // calls Model.Run, from the first batch to Teardown
	reportLoad bool              // this instance loaded the model and has not reported its metrics
	models     map[string]*batchModel
	groups     map[groupKey]*group
	last       *group     // the group of the element added last, in groups
	lastKey    groupKey   // last's key
	order      []groupKey // groups in the order they were opened, for deterministic flushes

	pool      *modelPool                 // the models of ModelsByKey and WithModelUpdates; nil without
	byKey     map[string]KeyModelMapping // ModelsByKey's, by key
	metricIDs map[string]string          // ModelsByKey's unnamed models' metrics ids, by Spec key (modelsByKeyIDs)
	// The pool's models by what an element names them with, so that the
	// element's model is a lookup of its key or update, not of its
	// Spec's Key.
	modelOfKey    map[string]*batchModel        // ModelsByKey's, by the element's key
	modelOfUpdate map[ModelMetadata]*batchModel // WithModelUpdates', by the shard's update
	known         []*modelMetrics               // the metrics of the models known at Setup, which declareCounters declares

	instanceTally tally // the outcomes of every bundle of this instance, for MaxFailureRate
	bundleTally   tally // the outcomes of this bundle, for its warning
}

// batchModel is one model the batcher batches for: what it reads from the
// model once, the name results and metrics give it, and the sizer of its
// batches (TargetBatchLatency sizes each model's batches from its own
// latencies).
type batchModel struct {
	spec    inference.Spec
	key     string // modelKey's, for the groups: computed once
	name    string // results' ModelID.Name: ModelName, the mapping's ID or the update's; "" when unnamed
	pooled  bool   // borrowed from the pool for each batch; else the batcher's handle
	info    modelInfo
	id      inference.ModelID // the loaded model's, for an element that fails before its batch runs
	sizer   *batchSizer
	metrics *modelMetrics
}

func (b *batcher) newBatchModel(spec inference.Spec, name string, pooled bool, info modelInfo, id inference.ModelID) *batchModel {
	id.Name = name
	return &batchModel{spec: spec, key: modelKey(spec, name), name: name, pooled: pooled, info: info, id: id,
		metrics: metricsFor(b.metricsIDOf(name, spec))}
}

// metricsIDOf is the id of the per-model metrics of spec, named name:
// metricsID's, or modelsByKeyIDs' for an unnamed model of ModelsByKey.
func (b *batcher) metricsIDOf(name string, spec inference.Spec) string {
	if alike, ok := b.metricIDs[spec.Key()]; ok && name == "" {
		return alike
	}
	return metricsID(name, spec)
}

// modelKey tells the models of a batcher apart: an update may name the
// same file under another name.
func modelKey(spec inference.Spec, name string) string { return spec.Key() + "\x00" + name }

// target is what one batch runs on: its model, the handle the batch holds,
// and the lease to end when it is done (nil for the transform's own
// model, which the batcher holds).
type target struct {
	*batchModel
	handle *inference.Handle
	lease  *lease
}

func (t *target) release() {
	if t.lease != nil {
		t.lease.done()
	}
}

// ranID is the ModelID results and failures of the batch carry.
func (t *target) ranID() inference.ModelID {
	id := t.handle.ID()
	id.Name = t.name
	return id
}

// element is one input with what RunInference needs to emit its output.
type element struct {
	window  beam.Window
	ts      beam.EventTime
	key     any
	keyed   bool
	example inference.Example // as the user gave it
	inputs  inference.Example // keyed by the model's input names
	update  *ModelMetadata    // WithModelUpdates: the shard's model when the element was flushed
}

// groupKey separates elements that must not share a batch: other windows,
// other tensor shapes, other models.
type groupKey struct {
	window typex.Window
	shapes string
	model  string // modelKey's
}

type group struct {
	elems []element
	bytes int64
	model *batchModel
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
	b.models = map[string]*batchModel{}
	if b.Config.Source != ownModel {
		b.pool = poolFor(b.Config.PoolID, b.Config.MaxModels)
	}
	if b.Config.Source == keyedModels {
		b.byKey = map[string]KeyModelMapping{}
		b.modelOfKey = map[string]*batchModel{}
		for _, m := range b.Config.Models {
			for _, k := range m.Keys {
				b.byKey[k] = m
			}
		}
		b.metricIDs = modelsByKeyIDs(b.Config.Models, b.Spec, b.Config.ModelName)
		for _, m := range b.Config.Models {
			b.known = append(b.known, metricsFor(b.metricsIDOf(m.ID, m.Spec)))
		}
	}
	if b.Spec.Format != "" {
		b.known = append(b.known, metricsFor(b.metricsIDOf(b.Config.ModelName, b.Spec)))
	}
	switch b.Config.Source {
	case keyedModels:
		if b.Spec.Format == "" { // no model of the transform's own
			return nil
		}
	case updatedModels: // the shards' state names the model; check the first loads
		b.modelOfUpdate = map[ModelMetadata]*batchModel{}
		l, err := b.pool.borrow(ctx, b.Spec, b.Config.MaxBatchSize)
		if err != nil && (!b.Failures || permanent(err)) {
			return fmt.Errorf("RunInference: %w", err)
		}
		if err == nil {
			b.reportLoad = l.loaded // Setup is in no bundle: startBundle reports it
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

// ownWanted says whether the batcher holds a model of its own: the
// transform's Spec, for every element or for the keys ModelsByKey does
// not map.
func (b *batcher) ownWanted() bool {
	return b.Spec.Format != "" && b.Config.Source != updatedModels
}

// permanent says whether a load error will recur on every attempt in this
// process.
func permanent(err error) bool {
	return errors.Is(err, inference.ErrBadModel) || errors.Is(err, inference.ErrUnsupportedOp) ||
		errors.Is(err, inference.ErrNoDevice) || errors.Is(err, inference.ErrDeviceFailed)
}

func (b *batcher) Teardown() {
	if b.runner != nil {
		b.runner.close()
		b.runner = nil
	}
	if b.handle != nil {
		b.handle.Release()
		b.handle, b.own = nil, nil
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
	b.own = b.newBatchModel(b.Spec, b.Config.ModelName, false, infoOf(h, b.Config.MaxBatchSize), h.ID())
	return nil
}

func (b *batcher) startBundle(ctx context.Context) error {
	if b.handle == nil && b.ownWanted() {
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
	if b.reportLoad {
		b.reportLoad = false
		if b.handle != nil {
			reportModelLoad(ctx, b.handle, b.own.metrics)
		} else { // WithModelUpdates' first model, loaded in Setup through the pool
			modelLoads.Inc(ctx, 1)
		}
	}
	if b.groups == nil {
		b.groups = map[groupKey]*group{}
	}
	b.bundleTally = tally{}
	b.declareCounters(ctx)
	reportGPU(ctx)
	return nil
}

// declareCounters reports every counter the bundle may count, at 0, so
// that the runner learns their ids from the bundle's first report.
//
// prism (Beam v2.77) keeps a bundle's value of a metric whose id it has
// not yet resolved in a map by id, until it has asked the worker what the
// id means; two bundles that report one new id before that overwrite each
// other's value, and one is lost (jobservices/metrics.go,
// contributeMetrics). A value of 0 that is overwritten loses nothing: once
// the stage's first bundle has reported its counters, prism has resolved
// them before any bundle counts in earnest. Distributions cannot be
// declared without adding a sample, so they stay exposed.
func (b *batcher) declareCounters(ctx context.Context) {
	for _, c := range allCounters {
		c.Inc(ctx, 0)
	}
	for _, m := range b.known {
		m.declare(ctx)
	}
	for _, m := range b.models {
		m.metrics.declare(ctx)
	}
}

// modelFor is the model e runs on, or why it has none and the spec of
// the model it wanted.
func (b *batcher) modelFor(ctx context.Context, e *element) (*batchModel, inference.Spec, Stage, error) {
	switch b.Config.Source {
	case keyedModels:
		key, ok := e.key.(string) // ModelsByKey takes string keys (expand)
		if !ok {
			key = fmt.Sprint(e.key)
		}
		if m, ok := b.modelOfKey[key]; ok {
			return m, m.spec, "", nil
		}
		mapping, ok := b.byKey[key]
		if !ok {
			if b.Spec.Format == "" {
				return nil, b.Spec, StageInput, fmt.Errorf("no model for key %q: ModelsByKey maps %d keys, and the transform has no spec of its own", key, len(b.byKey))
			}
			return b.ownModel()
		}
		m, err := b.pooledModel(ctx, mapping.Spec, mapping.ID)
		if err != nil {
			return nil, mapping.Spec, StageLoad, err
		}
		b.modelOfKey[key] = m
		return m, m.spec, "", nil
	case updatedModels:
		if m, ok := b.modelOfUpdate[*e.update]; ok {
			return m, m.spec, "", nil
		}
		spec, name := b.specOf(*e.update), e.update.ID
		if *e.update == (ModelMetadata{}) {
			name = b.Config.ModelName
		}
		m, err := b.pooledModel(ctx, spec, name)
		if err != nil {
			return nil, spec, StageLoad, err
		}
		b.modelOfUpdate[*e.update] = m
		return m, m.spec, "", nil
	}
	return b.ownModel()
}

// pooledModel is the batcher's model of spec, named name, from the pool:
// borrowed once, for its inputs and limits, when its first element comes.
func (b *batcher) pooledModel(ctx context.Context, spec inference.Spec, name string) (*batchModel, error) {
	key := modelKey(spec, name)
	if m, ok := b.models[key]; ok {
		return m, nil
	}
	l, err := b.pool.borrow(ctx, spec, b.Config.MaxBatchSize)
	if err != nil {
		return nil, err
	}
	m := b.newBatchModel(spec, name, true, l.entry.info, l.handle().ID())
	l.reportLoad(ctx, m.metrics)
	l.done()
	b.models[key] = m
	return m, nil
}

func (b *batcher) ownModel() (*batchModel, inference.Spec, Stage, error) {
	if b.own == nil {
		return nil, b.Spec, StageLoad, b.loadErr
	}
	return b.own, b.Spec, "", nil
}

// add takes one element: it fails it at once if its model is not loaded or
// the element does not fit the model's inputs, and otherwise adds it to its
// group, running the group when it is full.
func (b *batcher) add(ctx context.Context, e element, out sink) error {
	m := b.own // most elements: the transform's own model, loaded
	if b.Config.Source != ownModel || m == nil {
		var (
			spec  inference.Spec
			stage Stage
			err   error
		)
		if m, spec, stage, err = b.modelFor(ctx, &e); err != nil {
			failed := e // a copy: e itself stays on the stack, and costs no allocation per element
			return b.fail(&failed, stage, err, spec, inference.ModelID{}, out)
		}
	}
	conformed, err := inference.Conform(m.info.inputs, e.example)
	if err != nil {
		failed := e
		return b.fail(&failed, StageInput, err, m.spec, m.id, out)
	}
	e.inputs = conformed
	var size int64
	if b.Config.MaxBatchBytes > 0 {
		size = conformed.ByteSize()
	}
	key := groupKey{window: e.window, shapes: inference.StackKey(m.info.inputs, conformed), model: m.key}
	g := b.last
	if g == nil || key != b.lastKey { // most elements join the previous element's group
		var ok bool
		if g, ok = b.groups[key]; !ok {
			g = &group{model: m}
			b.groups[key] = g
			b.order = append(b.order, key)
		}
		b.last, b.lastKey = g, key
	}
	if max := b.Config.MaxBatchBytes; max > 0 && len(g.elems) >= b.Config.MinBatchSize && g.bytes+size > max {
		if err := b.runGroup(ctx, g, out); err != nil {
			return err
		}
	}
	g.elems = append(g.elems, e)
	g.bytes += size
	if len(g.elems) >= b.batchLimit(m) {
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
		b.last = nil
	}()
	for _, key := range b.order {
		if err := b.runGroup(ctx, b.groups[key], out); err != nil {
			return err
		}
	}
	return nil
}

// target resolves what a batch of m's runs on: the batcher's own handle,
// or a lease of m from the pool (which loads it again if it was evicted).
func (b *batcher) target(ctx context.Context, m *batchModel) (*target, error) {
	if !m.pooled {
		return &target{batchModel: m, handle: b.handle}, nil
	}
	l, err := b.pool.borrow(ctx, m.spec, b.Config.MaxBatchSize)
	if err != nil {
		return nil, err
	}
	l.reportLoad(ctx, m.metrics) // evicted since, and loaded again
	return &target{batchModel: m, handle: l.handle(), lease: l}, nil
}

func (b *batcher) runGroup(ctx context.Context, g *group, out sink) error {
	if len(g.elems) == 0 {
		return nil
	}
	defer func() {
		clear(g.elems) // drop the examples for the collector; keep the capacity
		g.elems, g.bytes = g.elems[:0], 0
	}()
	t, err := b.target(ctx, g.model)
	if err != nil { // evicted, and its load fails now
		for i := range g.elems {
			if ferr := b.fail(&g.elems[i], StageLoad, err, g.model.spec, inference.ModelID{}, out); ferr != nil {
				return ferr
			}
		}
		return nil
	}
	defer t.release()
	err = b.run(ctx, t, g.elems, out)
	reportGPU(ctx)
	return err
}

// run predicts a batch on t and emits a result per element. A batch that
// fails is split in halves, down to single elements, which then fail
// alone. A device failure fails the bundle instead (deviceFailed).
func (b *batcher) run(ctx context.Context, t *target, elems []element, out sink) error {
	rows, stage, err := b.predict(ctx, t, elems)
	if err != nil {
		failedBatches.Inc(ctx, 1)
		t.metrics.batchFailed(ctx)
		if errors.Is(err, inference.ErrDeviceFailed) {
			return deviceFailed(ctx, t.spec, err)
		}
		if len(elems) == 1 || ctx.Err() != nil {
			for i := range elems {
				if ferr := b.fail(&elems[i], stage, err, t.spec, t.ranID(), out); ferr != nil {
					return ferr
				}
			}
			return nil
		}
		half := len(elems) / 2
		if err := b.run(ctx, t, elems[:half], out); err != nil {
			return err
		}
		return b.run(ctx, t, elems[half:], out)
	}
	id := t.ranID()
	for i := range elems {
		out.result(&elems[i], PredictionResult{Example: elems[i].example, Outputs: rows[i], ModelID: id})
	}
	b.count(len(elems), nil)
	return b.checkFailureRate()
}

// predict stacks, runs and unstacks one batch, and says which stage failed.
// A panic in any stage becomes that stage's error.
func (b *batcher) predict(ctx context.Context, t *target, elems []element) (rows []inference.Outputs, stage Stage, err error) {
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
	outputs, err := b.runModel(ctx, t, inputs, len(elems))
	if err != nil {
		return nil, stage, err
	}
	took := time.Since(start)
	batchLatencyUs.Update(ctx, took.Microseconds())
	t.metrics.ran(ctx, took)
	t.observeLatency(len(elems), took)
	stage = StageOutput
	if rows, err = inference.UnstackRows(outputs, len(elems)); err != nil {
		return nil, stage, err
	}
	numInferences.Inc(ctx, int64(len(elems)))
	t.metrics.inferred(ctx, len(elems))
	batchSize.Update(ctx, int64(len(elems)))
	return rows, "", nil
}

// runModel runs one batch of n rows on the model, under the batch's
// deadline (InferenceTimeout) and memory budget. Model.Run runs on the
// batcher's runner, a goroutine of its own, so that a model that ignores
// its deadline does not block the bundle: it is abandoned a grace period
// after the deadline, keeps its runner and a reference to the model until
// it returns, and the next batch starts a new runner. Metrics are counted
// here, on the bundle's goroutine: an abandoned run may outlive the bundle.
func (b *batcher) runModel(ctx context.Context, t *target, inputs map[string]inference.Tensor, n int) (map[string]inference.Tensor, error) {
	timeout := cmp.Or(b.Config.InferenceTimeout, DefaultInferenceTimeout)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if budget := b.Config.MemoryBudget; budget > 0 {
		runCtx = inference.WithMemoryBudget(runCtx, budget)
	}
	if b.runner == nil {
		b.runner = newRunner()
	}
	w := b.runner
	w.start(runJob{ctx: runCtx, model: t.handle.Model(), inputs: inputs})

	var r runResult
	select {
	case r = <-w.results:
	case <-runCtx.Done():
		grace := time.NewTimer(min(max(timeout/10, 50*time.Millisecond), time.Second))
		defer grace.Stop()
		select {
		case r = <-w.results:
		case <-grace.C:
			abandonedRuns.Inc(ctx, 1)
			holdModelFor(ctx, t.spec, w.results)
			w.close() // its goroutine ends when the run returns
			b.runner = nil
			r.abandoned = true
		}
	}
	if r.ended {
		b.runner = nil
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

// holdModelFor takes a reference to spec's model for an abandoned run,
// released when the run returns, so that the shared cache does not close
// the model under it.
func holdModelFor(ctx context.Context, spec inference.Spec, done <-chan runResult) {
	h, err := inference.Acquire(context.WithoutCancel(ctx), spec) // a cache hit: the batch's target holds the model
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
// the error that fails the bundle. spec is the model the element was for,
// and id the loaded model's (zero when it did not load).
func (b *batcher) fail(e *element, stage Stage, cause error, spec inference.Spec, id inference.ModelID, out sink) error {
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
		model: spec, ts: e.ts, window: e.window}
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

// Package runinference provides RunInference, the Beam PTransform that runs a
// model over a PCollection: it batches elements within each bundle, runs
// every batch on a model that is loaded once per worker process and shared
// by every bundle, and emits one PredictionResult per input element.
//
// The form most pipelines want carries each element's id through the
// model and loses nothing: rows is a PCollection<KV<string,
// inference.Example>>, results a PCollection<KV<string, PredictionResult>>
// and failures a PCollection<KV<string, Failure>>, both keyed by the id
// (examples/quickstart is a whole pipeline of it):
//
//	spec := onnx.Model("gs://bucket/models/classifier.onnx")
//	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, rows,
//		runinference.MaxBatchSize(64), runinference.Device(inference.Auto))
//
// Without keys, on a PCollection<inference.Example>:
//
//	preds := runinference.RunInference(s, spec, examples,
//		runinference.MaxBatchSize(64), runinference.Device(inference.Auto))
//
// It is for pipeline authors: this package and a Spec (inference/onnx's
// Model) are all a pipeline needs to score a model.
//
// Elements are inference.Example values: a tensor per model input, without
// the batch dimension. RunInferenceKeyed carries a key through for
// KV<K, Example>; the WithFailures variants return a second PCollection of
// Failure values instead of failing the bundle, so that no element is lost.
//
// A PredictionResult holds the model's outputs by name. Output gives the
// one output of a one-output model, and OutputData[T] an output's elements
// as a []T (name "" for the one output); both fail with an error wrapping
// inference.ErrMissingOutput or inference.ErrType that names the outputs.
//
// # Batching
//
// Within a bundle, elements are grouped by window and by tensor shapes (so
// a model with a dynamic sequence length gets batches of one length). A
// group is run when it holds MaxBatchSize elements, or when it holds at
// least MinBatchSize elements and the next element would take it past
// MaxBatchBytes. The end of a bundle runs every group left, whatever its
// size. A model whose batch dimension is fixed at 1 runs element by element.
// With TargetBatchLatency(d), a group runs at an adaptive size instead of
// MaxBatchSize, one between MinBatchSize and MaxBatchSize chosen from the
// latencies of the batches before it so that a batch's Model.Run takes
// about d.
//
// In streaming pipelines a bundle often holds one element. With
// MaxBatchDuration(d), batches form across bundles instead, in keyed
// state: elements are spread over BatchShards shard keys, and each shard
// runs its elements when MaxBatchSize (or MaxBatchBytes) of them have come
// or d after the first of them came (see MaxBatchDuration).
//
// # Failures
//
// A batch that fails is split in halves, down to single elements, so one bad
// element costs only itself. An element that fails alone becomes a Failure
// (with the WithFailures variants) or fails the bundle with an error whose
// first line names the element (with its first values), its key, the
// stage, the kind, the model it ran on and the cause (Beam then retries
// the bundle, and prints the error after the bundle's plan). An element
// that does not fit the model's inputs fails at once, unbatched, at stage
// input.
//
// A Failure's Kind says what went wrong in a form to group by
// (KindElementType, KindUnexpectedInput, KindIndexOutOfRange, …), its Err
// says it in words, and its String shows both with the element's first
// values. A systematic mistake (every element of the wrong type) fails
// every element: MaxFailureRate fails the job then, with the failures
// counted by kind; without it, a bundle whose failures dominate gets a
// warning in the worker's log.
//
// A model that can never load (inference.ErrBadModel, ErrUnsupportedOp,
// ErrNoDevice) fails the bundle in every variant, so a wrong model fails the
// job instead of filling the failures output; a transient load error sends
// the bundle's elements to the failures output at stage load.
//
// A device that fails for good (inference.ErrDeviceFailed: a sticky GPU
// error has destroyed the CUDA context) fails the bundle in every variant,
// without splitting the batch or sending its elements to the failures
// output, and ends the worker process with DeviceFailureExitStatus a few
// seconds later, after logging why: the runner starts a new process with a
// working device and retries the bundle there. On Dataflow that restarts
// the SDK harness container, and the bundle is retried like any failed
// bundle (up to four attempts in a batch job, indefinitely in streaming).
//
// # Models that misbehave
//
// Every batch's Model.Run has a deadline (InferenceTimeout, by default
// DefaultInferenceTimeout) and a memory budget (MemoryBudget, or the
// Spec's memory_budget option, or inference.DefaultMemoryBudget), both in
// its context. A batch that passes its deadline, goes over its budget
// (inference.ErrResourceExhausted) or panics fails like any other: it is
// split, and the element that fails alone fails with an error saying so.
// A panic anywhere in a run, a user's own Model included, is recovered and
// becomes an error wrapping inference.ErrPanic with the panic's message
// and innermost frames. Model.Run runs on a goroutine of its own, so a
// model that ignores its deadline does not block the worker: it is
// abandoned shortly after the deadline (see InferenceTimeout).
//
// # Windows
//
// Every output keeps its input's timestamp and window. Batches are run in
// ProcessElement where they fill up, and in FinishBundle at the end of a
// bundle; Beam Go emits from FinishBundle into the global window, so the
// transform emits with each element's timestamp and re-applies the input's
// window function afterwards. That is exact for the global window and fixed
// windows, where an element lies in one window determined by its timestamp;
// other window functions are refused at construction unless
// MaxBatchDuration is given. On that path every window function is served:
// an element is predicted once, in the global window, and its result is put
// back into its windows by the input's window function (sliding windows:
// each of its windows; sessions: merged again at the next grouping), with
// the watermark held at the earliest element waiting, so that no result is
// late. On prism (v2.77), sessions with several shards can fire early, in
// parts: prism merges sessions only among the results that reach the
// grouping together (see BatchShards).
//
// # Options together
//
// Each option applies as it does alone, except in these combinations;
// each row names the test that shows it.
//
//	MinBatchSize > MaxBatchSize               refused                                  TestRefusedCombinations
//	MaxBatchBytes, MinBatchSize               bytes never cut a batch below the min    TestMaxBatchBytes
//	TargetBatchLatency, Min/MaxBatchSize      sizes within [min, max]                  TestTargetBatchLatencyCeiling
//	TargetBatchLatency, ModelsByKey           a size per model, from its latencies     TestTargetBatchLatencyPerModel
//	TargetBatchLatency, WithModelUpdates      a size per model, from its latencies     TestTargetBatchLatencyPerUpdate
//	TargetBatchLatency, MaxBatchDuration      a shard's elements run at the size       TestTargetBatchLatencyWithMaxBatchDuration
//	MaxBatchDuration, any window function     windows and timestamps kept              TestMaxBatchDurationSlidingWindows, …Sessions
//	no MaxBatchDuration, sliding or sessions  refused                                  TestSlidingWindowsRefused
//	BatchShards without MaxBatchDuration      refused (WithModelUpdates implies it)     TestRefusedCombinations
//	ModelsByKey, unkeyed variants             refused                                  TestRefusedCombinations
//	ModelsByKey, WithModelUpdates             refused: updates replace one model       TestRefusedCombinations
//	ModelsByKey, MaxModelsPerWorker           at most n loaded, LRU idle evicted       TestModelsByKeyWithMaxModelsPerWorker
//	WithModelUpdates, MaxModelsPerWorker      at most n loaded, old ones retired       TestModelUpdatesWithMaxModelsPerWorker
//	MaxModelsPerWorker alone                  refused                                  TestRefusedCombinations
//	WithModelUpdates, MaxBatchDuration        updates take that path (default 1s)      TestModelUpdatesSwapDuringRun
//	ModelName, ModelsByKey                    names the unmapped keys' model; refused  TestModelNames, TestRefusedCombinations
//	                                          when the Spec is the zero Spec
//	ModelName, WithModelUpdates               names the model before the first update  TestModelUpdatesSwapDuringRun
//	Device or Precision, ModelsByKey          applied to every mapping's Spec          TestDeviceAndPrecisionReachEveryModel
//	Device or Precision, WithModelUpdates     applied to every update's Spec           TestDeviceAndPrecisionReachEveryModel
//	MemoryBudget, Spec option memory_budget   the option wins                          TestMemoryBudget
//	MaxFailureRate without a failures output  refused                                  TestRefusedCombinations
//
// A refused combination panics at construction naming both options.
//
// # Metrics
//
// In namespace BeamML_RunInference, counters:
//
//   - num_inferences: elements predicted;
//   - failed_batches_counter: batches that failed, before they are split;
//   - recovered_panics: batches whose run panicked;
//   - timed_out_batches: batches past their InferenceTimeout;
//   - abandoned_runs: runs that ignored their deadline and were left running;
//   - device_failures: batches that found the device failed for good;
//   - model_loads and model_evictions: models the pool of ModelsByKey or
//     WithModelUpdates loaded, and released to make room (MaxModelsPerWorker);
//   - model_updates and model_update_failures: updates a shard took, and
//     updates that did not load (the model in service stays);
//
// and distributions inference_batch_latency_micro_secs,
// inference_request_batch_size, load_model_latency_milli_secs and
// model_byte_size (the last two from the worker that loaded the model).
// Each model also has its own num_inferences, failed_batches_counter and
// the four distributions, named "<id>_<metric>" as Beam Python names them,
// where id is the model's name (ModelName, KeyModelMapping.ID,
// ModelMetadata.ID) or else the base name of its URI, with a hash of its
// Spec after it where ModelsByKey has two unnamed models of one base name:
// "resnet50.onnx_num_inferences". The GPUs' memory and utilisation are in
// namespace GPUNamespace. A batch is split until its bad element is alone,
// so one element that panics or hangs counts once for each batch that held
// it: up to log₂(MaxBatchSize)+1 times.
package runinference

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/contextreg"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/beamml/beamml/inference"
	_ "github.com/beamml/beamml/inference/cpu" // the CPU backend is the fallback of Auto in every binary
)

// DefaultMaxBatchSize is the batch size used when MaxBatchSize is not given.
const DefaultMaxBatchSize = 64

// DefaultInferenceTimeout is the deadline of one batch's Model.Run when
// InferenceTimeout is not given. It is Dataflow's threshold for reporting
// a stuck operation: a batch that takes longer is most likely stuck, and
// one that was merely slow is split and its halves run in about half the
// time each, so a deadline too short for a full batch costs time and no
// element.
const DefaultInferenceTimeout = 5 * time.Minute

// memoryBudgetOption is the Spec option that sets a model's memory budget
// per run, read with inference.ParseBytes: Options["memory_budget"] = "2GiB".
const memoryBudgetOption = "memory_budget"

// An Option configures RunInference.
type Option func(*config) error

// config holds the options. It is carried by the DoFn, so its fields are
// exported for Beam's serialization.
type config struct {
	MinBatchSize  int
	MaxBatchSize  int
	MaxBatchBytes int64 // 0: no limit
	Device        inference.Device
	Precision     inference.Precision // "": the spec's own
	// InferenceTimeout is the deadline of each Model.Run; 0 means
	// DefaultInferenceTimeout.
	InferenceTimeout time.Duration
	// MemoryBudget is the memory budget of each Model.Run in bytes, from
	// the MemoryBudget option or else the Spec's memory_budget option;
	// 0 leaves the model its default (inference.DefaultMemoryBudget).
	MemoryBudget int64
	// MaxFailureRate and FailureRateMinElements are the arguments of
	// MaxFailureRate; FailureRateMinElements 0 means no limit.
	MaxFailureRate         float64
	FailureRateMinElements int
	// MaxBatchDuration, when positive, batches across bundles in keyed
	// state (stateful.go), over BatchShards keys (0: defaultShards).
	MaxBatchDuration time.Duration
	BatchShards      int
	// Models (ModelsByKey) and MaxModels (MaxModelsPerWorker); PoolID names
	// the transform's model pool, set when it has one.
	Models    []KeyModelMapping
	MaxModels int
	PoolID    string
	// Updates says WithModelUpdates gave updates, the PCollection (not
	// serialized).
	Updates bool
	updates beam.PCollection
	// Source is where batches get their model, decided from the options
	// at construction.
	Source modelSource
	// ModelName is ModelName's: the transform's own model's name.
	ModelName string
	// TargetBatchLatency, when positive, sizes batches adaptively
	// (adaptive.go).
	TargetBatchLatency time.Duration
}

// modelSource is where a transform's batches get their model.
type modelSource int

const (
	ownModel      modelSource = iota // the transform's Spec, for every element
	keyedModels                      // ModelsByKey: the model of the element's key, else the transform's Spec
	updatedModels                    // WithModelUpdates: the model in service in the element's shard
)

// MinBatchSize is the smallest batch run before the end of a bundle:
// MaxBatchBytes never cuts a batch shorter than this. It must be positive;
// the default is 1.
func MinBatchSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("MinBatchSize(%d): must be positive", n)
		}
		c.MinBatchSize = n
		return nil
	}
}

// MaxBatchSize is the largest number of elements run in one batch. It must
// be positive; the default is DefaultMaxBatchSize.
func MaxBatchSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("MaxBatchSize(%d): must be positive", n)
		}
		c.MaxBatchSize = n
		return nil
	}
}

// MaxBatchBytes caps the total tensor bytes of the examples in one batch
// (an element larger than the cap still runs, alone). It must be positive;
// by default there is no cap.
func MaxBatchBytes(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("MaxBatchBytes(%d): must be positive", n)
		}
		c.MaxBatchBytes = n
		return nil
	}
}

// InferenceTimeout is the deadline of every batch's Model.Run, counted
// from the start of the run. It must be positive; the default is
// DefaultInferenceTimeout. There is no way to run without a deadline: give
// a long one.
//
// A batch that passes its deadline fails like any failed batch: it is
// split in halves, and an element that times out alone fails with an error
// that wraps context.DeadlineExceeded. Model.Run gets the deadline in its
// context; a model that ignores it (a deadlocked one) is abandoned a
// tenth of d (at least 50ms, at most 1s) after the deadline, and its
// goroutine is left to run until Run returns, holding a reference to the
// model: counter abandoned_runs counts them. The worst cost of one element
// that hangs is the log₂(MaxBatchSize)+1 deadlines of the batches that hold
// it as its batch is split: 7·d at the default MaxBatchSize of 64, 35
// minutes at the default deadline.
func InferenceTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("InferenceTimeout(%v): must be positive", d)
		}
		c.InferenceTimeout = d
		return nil
	}
}

// MemoryBudget is the memory budget of every batch's Model.Run, in bytes:
// the most intermediates the run may hold at once
// (inference.WithMemoryBudget). It must be positive. It takes precedence
// over the Spec's option memory_budget (a size as inference.ParseBytes
// reads it: "512MiB"); without either, the model uses
// inference.DefaultMemoryBudget. A batch over the budget fails with an
// error wrapping inference.ErrResourceExhausted and is split like any
// failed batch, so only an element over the budget on its own fails.
func MemoryBudget(bytes int64) Option {
	return func(c *config) error {
		if bytes <= 0 {
			return fmt.Errorf("MemoryBudget(%d): must be positive", bytes)
		}
		c.MemoryBudget = bytes
		return nil
	}
}

// MaxFailureRate fails the bundle, and so the job, when failures are
// systematic rather than a few bad elements: once a DoFn instance has seen
// at least minElements elements through to a result or a Failure, it fails
// its bundle as soon as failures/elements > fraction, with an error that
// gives the counts, the fraction, the limit, the model and the failures by
// kind with the first message of each. A wrong element type for every row
// then fails the job at once instead of sending every element to the
// failures output.
//
// fraction must be at least 0 (0: any failure past minElements fails the
// bundle) and less than 1; minElements must be at least 1. By default
// there is no limit, and a bundle whose failures dominate (more than half
// of at least 10 elements) only gets a warning in the worker's log.
//
// The count is per DoFn instance, over the bundles it has processed: Beam
// Go gives no aggregation across workers, and runs an instance for each
// bundle a worker process processes at once, so each instance checks its
// own share of the input and a job with many workers fails when any of
// them passes the limit. Beam Go drops the instance of a failed bundle, so
// the bundle's retry counts afresh; Beam retries a failed bundle
// (Dataflow: four times in a batch job, indefinitely in a streaming one,
// which then stalls rather than fails). The limit matters only with the
// WithFailures variants: without a failures output, the first failed
// element fails its bundle.
func MaxFailureRate(fraction float64, minElements int) Option {
	return func(c *config) error {
		if !(fraction >= 0 && fraction < 1) {
			return fmt.Errorf("MaxFailureRate(%v, %d): the fraction must be at least 0 and less than 1", fraction, minElements)
		}
		if minElements < 1 {
			return fmt.Errorf("MaxFailureRate(%v, %d): minElements must be at least 1", fraction, minElements)
		}
		c.MaxFailureRate, c.FailureRateMinElements = fraction, minElements
		return nil
	}
}

// Device sets where the model runs, overriding the Spec's device.
func Device(d inference.Device) Option {
	return func(c *config) error {
		switch d {
		case inference.Auto, inference.CPU, inference.CUDA:
		default:
			return fmt.Errorf("Device(%q): want %q, %q or %q", d, inference.Auto, inference.CPU, inference.CUDA)
		}
		c.Device = d
		return nil
	}
}

// Precision chooses the model's arithmetic on a GPU (inference.FP32, the
// default; inference.TF32, tensor cores with the products' inputs rounded
// to TF32; inference.FP16, weights and activations stored in float16 and
// products on tensor cores, accumulating in float32). It
// sets the spec's option inference.PrecisionOption, which a spec may carry
// itself; the option wins over the spec's. The CPU backend computes in
// float32 in every precision.
func Precision(p inference.Precision) Option {
	return func(c *config) error {
		if _, err := inference.ParsePrecision(string(p)); err != nil || p == "" {
			return fmt.Errorf("Precision(%q): want %q, %q or %q", p, inference.FP32, inference.TF32, inference.FP16)
		}
		c.Precision = p
		return nil
	}
}

// ModelName names the transform's own model, its Spec: results carry the
// name in ModelID.Name, and its per-model metrics are named by it
// ("<name>_num_inferences"). By default results carry no name and the
// metrics are named by the base name of the Spec's URI. With
// WithModelUpdates it names the model served until the first update (each
// update names its own: ModelMetadata.ID); with ModelsByKey, the model of
// the keys no mapping names (KeyModelMapping.ID names a mapping's). name
// must not be empty.
func ModelName(name string) Option {
	return func(c *config) error {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("ModelName(%q): must not be empty", name)
		}
		c.ModelName = name
		return nil
	}
}

func newConfig(spec inference.Spec, opts []Option) (inference.Spec, config) {
	c := config{MinBatchSize: 1, MaxBatchSize: DefaultMaxBatchSize}
	for _, o := range opts {
		if err := o(&c); err != nil {
			panic(fmt.Errorf("RunInference: %w", err))
		}
	}
	noSpec := reflect.ValueOf(spec).IsZero()
	if err := spec.Validate(); err != nil && (c.Models == nil || !noSpec) {
		// With ModelsByKey, the zero Spec says no key falls back to it.
		panic(fmt.Errorf("RunInference: %w", err))
	}
	if err := c.combine(noSpec); err != nil {
		panic(fmt.Errorf("RunInference: %w", err))
	}
	if c.Source != ownModel {
		c.PoolID = newPoolID()
	}
	if c.Models != nil {
		c.Models = slices.Clone(c.Models)
		for i := range c.Models {
			if c.Device != "" {
				c.Models[i].Spec = c.Models[i].Spec.WithDevice(c.Device)
			}
			if c.Precision != "" {
				c.Models[i].Spec = c.Models[i].Spec.WithPrecision(c.Precision)
			}
		}
	}
	if v, ok := spec.Options[memoryBudgetOption]; ok {
		budget, err := inference.ParseBytes(v)
		if err != nil {
			panic(fmt.Errorf("RunInference: spec %v: option %s=%q: %w", spec, memoryBudgetOption, v, err))
		}
		if c.MemoryBudget == 0 {
			c.MemoryBudget = budget
		}
	}
	if c.MaxBatchSize < c.MinBatchSize {
		panic(fmt.Errorf("RunInference: MaxBatchSize(%d) is less than MinBatchSize(%d)", c.MaxBatchSize, c.MinBatchSize))
	}
	if spec.Format == "" {
		return spec, c
	}
	if c.Device != "" {
		spec = spec.WithDevice(c.Device)
	}
	if c.Precision != "" {
		spec = spec.WithPrecision(c.Precision)
	}
	if _, err := spec.Precision(); err != nil {
		panic(fmt.Errorf("RunInference: %w", err))
	}
	return spec, c
}

// combine decides the model source from the options, and refuses the
// combinations of options that cannot work together, naming both (the
// package doc's table lists every combination that matters). noSpec says
// the transform's Spec is the zero Spec.
func (c *config) combine(noSpec bool) error {
	switch {
	case c.Models != nil && c.Updates:
		return errors.New("ModelsByKey and WithModelUpdates cannot be combined: an update replaces the transform's one model, " +
			"so the keys' models would never change; give the updates to a transform of their own")
	case c.Models != nil:
		c.Source = keyedModels
	case c.Updates:
		c.Source = updatedModels
	}
	if c.MaxModels > 0 && c.Source == ownModel {
		return fmt.Errorf("MaxModelsPerWorker(%d) needs ModelsByKey or WithModelUpdates: a transform of one model holds one", c.MaxModels)
	}
	if c.BatchShards > 0 && c.MaxBatchDuration == 0 && !c.Updates {
		return fmt.Errorf("BatchShards(%d) needs MaxBatchDuration (or WithModelUpdates): without it batches form within bundles, unsharded", c.BatchShards)
	}
	if c.ModelName != "" && c.Source == keyedModels && noSpec {
		return fmt.Errorf("ModelName(%q) names the transform's own model, and with ModelsByKey its Spec is the zero Spec: name the mappings' models with KeyModelMapping.ID", c.ModelName)
	}
	return nil
}

// RunInference runs the model of spec over col, a PCollection<inference.Example>,
// and returns a PCollection<PredictionResult> with one result per element.
// A failed element fails its bundle with an error that names it; use
// RunInferenceWithFailures to collect failures instead.
//
// It panics at construction on an invalid spec or option, naming it.
func RunInference(s beam.Scope, spec inference.Spec, col beam.PCollection, opts ...Option) beam.PCollection {
	s = scope(s, "runinference.RunInference", spec)
	results, _ := expand(s, spec, col, false, false, opts)
	return results
}

// RunInferenceWithFailures is RunInference with a second output: a
// PCollection<Failure> of the elements that could not be predicted. Results
// plus failures hold every input element exactly once. Give MaxFailureRate
// to fail the job when failures are systematic rather than a few bad
// elements.
func RunInferenceWithFailures(s beam.Scope, spec inference.Spec, col beam.PCollection, opts ...Option) (results, failures beam.PCollection) {
	s = scope(s, "runinference.RunInferenceWithFailures", spec)
	return expand(s, spec, col, false, true, opts)
}

// RunInferenceKeyed runs the model over col, a PCollection<KV<K, inference.Example>>,
// and returns a PCollection<KV<K, PredictionResult>>: each result keeps its
// element's key.
func RunInferenceKeyed(s beam.Scope, spec inference.Spec, col beam.PCollection, opts ...Option) beam.PCollection {
	s = scope(s, "runinference.RunInferenceKeyed", spec)
	results, _ := expand(s, spec, col, true, false, opts)
	return results
}

// RunInferenceKeyedWithFailures is RunInferenceKeyed with a second output,
// a PCollection<KV<K, Failure>>.
func RunInferenceKeyedWithFailures(s beam.Scope, spec inference.Spec, col beam.PCollection, opts ...Option) (results, failures beam.PCollection) {
	s = scope(s, "runinference.RunInferenceKeyedWithFailures", spec)
	return expand(s, spec, col, true, true, opts)
}

// Annotation marks the composite PTransform of every RunInference in the
// pipeline proto; its value is the model's URI. beam/dataflowgpu finds
// the transforms to give a GPU by it (right fitting).
const Annotation = "beamml:runinference:v1"

type annotationKey struct{}

// scope opens the transform's composite scope with a context whose value
// becomes the PTransform's Annotation (through Beam's context registry,
// which the Go SDK applies to composite transforms).
func scope(s beam.Scope, name string, spec inference.Spec) beam.Scope {
	return s.WithContext(context.WithValue(context.Background(), annotationKey{}, spec.URI), name)
}

func init() {
	// contextreg is marked for Beam's internal use; it is how the Go SDK
	// (v2.77.0) puts annotations on composite transforms.
	contextreg.Default().TransformExtractor(func(ctx context.Context) contextreg.TransformMetadata {
		uri, ok := ctx.Value(annotationKey{}).(string)
		if !ok {
			return contextreg.TransformMetadata{}
		}
		return contextreg.TransformMetadata{Annotations: map[string][]byte{Annotation: []byte(uri)}}
	})
}

func expand(s beam.Scope, spec inference.Spec, col beam.PCollection, keyed, withFailures bool, opts []Option) (beam.PCollection, beam.PCollection) {
	spec, cfg := newConfig(spec, opts)
	checkInput(col, keyed)
	if cfg.FailureRateMinElements > 0 && !withFailures {
		panic(fmt.Errorf("RunInference: MaxFailureRate(%g, %d) needs a failures output (RunInferenceWithFailures or RunInferenceKeyedWithFailures): without one the first failed element fails its bundle",
			cfg.MaxFailureRate, cfg.FailureRateMinElements))
	}
	if cfg.Models != nil {
		if !keyed {
			panic(errors.New("RunInference: ModelsByKey needs keyed input: use RunInferenceKeyed"))
		}
		if k := col.Type().Components()[0].Type(); k != reflect.TypeOf("") {
			panic(fmt.Errorf("RunInference: ModelsByKey needs string keys, and the input's are %v", k))
		}
	}
	if cfg.Updates && cfg.MaxBatchDuration == 0 {
		cfg.MaxBatchDuration = DefaultUpdateBatchDuration
	}
	if cfg.MaxBatchDuration > 0 {
		return expandStateful(s, spec, cfg, col, keyed, withFailures)
	}
	ws := col.WindowingStrategy()
	if k := ws.Fn.Kind; k != window.GlobalWindows && k != window.FixedWindows {
		panic(fmt.Errorf("RunInference: input windowing %v is not supported without MaxBatchDuration: only the global window and fixed windows keep their windows through bundle-end batches", ws))
	}
	core := batcher{Spec: spec, Config: cfg, Failures: withFailures}
	var results, failures beam.PCollection
	if keyed {
		results, failures = beam.ParDo2(s, &keyedFn{batcher: core}, col)
	} else {
		results, failures = beam.ParDo2(s, &inferFn{batcher: core}, col)
	}
	if ws.Fn.Kind == window.FixedWindows {
		// Restore the windows of bundle-end batches (see the package doc).
		results, failures = rewindow(s, ws, results), rewindow(s, ws, failures)
	}
	return results, failures
}

var exampleType = reflect.TypeOf(inference.Example{})

// checkInput panics unless col holds Examples, or KVs of Examples when keyed.
func checkInput(col beam.PCollection, keyed bool) {
	t := col.Type()
	ok := !typex.IsKV(t) && t.Type() == exampleType
	want := "PCollection<inference.Example>"
	if keyed {
		ok = typex.IsKV(t) && t.Components()[1].Type() == exampleType
		want = "PCollection<KV<K, inference.Example>>"
	}
	if !ok {
		panic(fmt.Errorf("RunInference: input is PCollection<%v>, want %s", t, want))
	}
}

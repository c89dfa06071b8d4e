// Package runinference provides RunInference, the Beam PTransform that runs a
// model over a PCollection: it batches elements within each bundle, runs
// every batch on a model that is loaded once per worker process and shared
// by every bundle, and emits one PredictionResult per input element.
//
//	spec := onnx.Model("gs://bucket/models/resnet50.onnx")
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
// # Batching
//
// Within a bundle, elements are grouped by window and by tensor shapes (so
// a model with a dynamic sequence length gets batches of one length). A
// group is run when it holds MaxBatchSize elements, or when it holds at
// least MinBatchSize elements and the next element would take it past
// MaxBatchBytes. The end of a bundle runs every group left, whatever its
// size. A model whose batch dimension is fixed at 1 runs element by element.
//
// # Failures
//
// A batch that fails is split in halves, down to single elements, so one bad
// element costs only itself. An element that fails alone becomes a Failure
// (with the WithFailures variants) or fails the bundle with an error that
// names the element, the stage and the cause (Beam then retries the bundle).
// An element that does not fit the model's inputs fails at once, unbatched.
// A model that can never load (inference.ErrBadModel, ErrUnsupportedOp,
// ErrNoDevice) fails the bundle in every variant, so a wrong model fails the
// job instead of filling the failures output; a transient load error sends
// the bundle's elements to the failures output at stage load.
//
// # Windows
//
// Every output keeps its input's timestamp and window. Batches are run in
// ProcessElement where they fill up, and in FinishBundle at the end of a
// bundle; Beam Go emits from FinishBundle into the global window, so the
// transform emits with each element's timestamp and re-applies the input's
// window function afterwards. That is exact for the global window and fixed
// windows, where an element lies in one window determined by its timestamp;
// other window functions are refused at construction.
//
// # Metrics
//
// In namespace BeamML_RunInference: counters num_inferences and
// failed_batches_counter; distributions inference_batch_latency_micro_secs,
// inference_request_batch_size, load_model_latency_milli_secs and
// model_byte_size (the last two from the worker that loaded the model).
package runinference

import (
	"context"
	"fmt"
	"reflect"
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

// An Option configures RunInference.
type Option func(*config) error

// config holds the options. It is carried by the DoFn, so its fields are
// exported for Beam's serialization.
type config struct {
	MinBatchSize  int
	MaxBatchSize  int
	MaxBatchBytes int64 // 0: no limit
	Device        inference.Device
}

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

func newConfig(spec inference.Spec, opts []Option) (inference.Spec, config) {
	c := config{MinBatchSize: 1, MaxBatchSize: DefaultMaxBatchSize}
	if err := spec.Validate(); err != nil {
		panic(fmt.Errorf("RunInference: %w", err))
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			panic(fmt.Errorf("RunInference: %w", err))
		}
	}
	if c.MaxBatchSize < c.MinBatchSize {
		panic(fmt.Errorf("RunInference: MaxBatchSize(%d) is less than MinBatchSize(%d)", c.MaxBatchSize, c.MinBatchSize))
	}
	if c.Device != "" {
		spec = spec.WithDevice(c.Device)
	}
	return spec, c
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
// plus failures hold every input element exactly once.
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
	ws := col.WindowingStrategy()
	if k := ws.Fn.Kind; k != window.GlobalWindows && k != window.FixedWindows {
		panic(fmt.Errorf("RunInference: input windowing %v is not supported: only the global window and fixed windows keep their windows through bundle-end batches", ws))
	}
	checkInput(col, keyed)
	core := batcher{Spec: spec, Config: cfg, Failures: withFailures}
	var results, failures beam.PCollection
	if keyed {
		results, failures = beam.ParDo2(s, &keyedFn{batcher: core}, col)
	} else {
		results, failures = beam.ParDo2(s, &inferFn{batcher: core}, col)
	}
	if ws.Fn.Kind == window.FixedWindows {
		// Restore the windows of bundle-end batches (see the package doc).
		rewindow := []beam.WindowIntoOption{
			beam.Trigger(ws.Trigger),
			beam.AllowedLateness(time.Duration(ws.AllowedLateness) * time.Millisecond),
		}
		if ws.AccumulationMode == window.Accumulating {
			rewindow = append(rewindow, beam.PanesAccumulate())
		} else {
			rewindow = append(rewindow, beam.PanesDiscard())
		}
		results = beam.WindowInto(s, ws.Fn, results, rewindow...)
		failures = beam.WindowInto(s, ws.Fn, failures, rewindow...)
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

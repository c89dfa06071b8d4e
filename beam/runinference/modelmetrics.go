package runinference

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/beamml/beamml/inference"
)

// modelMetrics are RunInference's metrics of one model, in Namespace, named
// as Beam Python's RunInference names the metrics of a model it tells apart
// (apache_beam.ml.inference.base._MetricsCollector with a prefix): the
// model id (metricsID), an underscore, and the name of the unlabelled
// metric, as in "resnet50.onnx_num_inferences". They count what the
// unlabelled metrics count, for that model alone.
type modelMetrics struct {
	inferences     beam.Counter      // <id>_num_inferences
	failedBatches  beam.Counter      // <id>_failed_batches_counter
	batchLatencyUs beam.Distribution // <id>_inference_batch_latency_micro_secs
	batchSize      beam.Distribution // <id>_inference_request_batch_size
	loadLatencyMs  beam.Distribution // <id>_load_model_latency_milli_secs
	byteSize       beam.Distribution // <id>_model_byte_size
}

// modelMetricName is the name of the metric called name for the model id.
func modelMetricName(id, name string) string { return id + "_" + name }

// modelMetricsByID holds one *modelMetrics per model id, so that a model's
// metrics are built once per process however many bundles report them: an
// entry per model URI the process has run (a few per model update).
var modelMetricsByID sync.Map

// metricsID is the id a model's metrics are named by: the name the
// pipeline gave it (ModelName, KeyModelMapping.ID, ModelMetadata.ID),
// else the base name of its URI ("resnet50.onnx" for
// gs://bucket/models/resnet50.onnx). Both are the same on every worker, so
// the workers' metrics of one model add up; neither is the loaded
// instance's random id. With ModelsByKey, unnamed models whose base names
// are alike are told apart (modelsByKeyIDs).
func metricsID(name string, spec inference.Spec) string {
	if name != "" {
		return name
	}
	if base := path.Base(strings.TrimRight(spec.URI, "/")); base != "." && base != "/" {
		return base
	}
	return spec.URI
}

// modelsByKeyIDs gives the unnamed models of ModelsByKey (and the
// transform's own, where it has one and no ModelName) their metrics' ids,
// by Spec key: the base name of the URI, followed by "-" and 8 hex digits
// of the SHA-256 of the Spec's key where another of them has the same base
// name ("model.onnx-3fa2c1d0" for gs://bucket/customer-a/model.onnx): short,
// apart, and the same on every worker.
func modelsByKeyIDs(models []KeyModelMapping, own inference.Spec, ownName string) map[string]string {
	specs := map[string][]inference.Spec{} // base name → the distinct unnamed specs
	add := func(spec inference.Spec) {
		base := metricsID("", spec)
		if !slices.ContainsFunc(specs[base], func(s inference.Spec) bool { return s.Key() == spec.Key() }) {
			specs[base] = append(specs[base], spec)
		}
	}
	for _, m := range models {
		if m.ID == "" {
			add(m.Spec)
		}
	}
	if own.Format != "" && ownName == "" {
		add(own)
	}
	ids := map[string]string{}
	for base, alike := range specs {
		for _, spec := range alike {
			id := base
			if len(alike) > 1 {
				sum := sha256.Sum256([]byte(spec.Key()))
				id += "-" + hex.EncodeToString(sum[:4])
			}
			ids[spec.Key()] = id
		}
	}
	return ids
}

// metricsFor returns the metrics of the model id (metricsID's).
func metricsFor(id string) *modelMetrics {
	if m, ok := modelMetricsByID.Load(id); ok {
		return m.(*modelMetrics)
	}
	m, _ := modelMetricsByID.LoadOrStore(id, &modelMetrics{
		inferences:     beam.NewCounter(Namespace, modelMetricName(id, "num_inferences")),
		failedBatches:  beam.NewCounter(Namespace, modelMetricName(id, "failed_batches_counter")),
		batchLatencyUs: beam.NewDistribution(Namespace, modelMetricName(id, "inference_batch_latency_micro_secs")),
		batchSize:      beam.NewDistribution(Namespace, modelMetricName(id, "inference_request_batch_size")),
		loadLatencyMs:  beam.NewDistribution(Namespace, modelMetricName(id, "load_model_latency_milli_secs")),
		byteSize:       beam.NewDistribution(Namespace, modelMetricName(id, "model_byte_size")),
	})
	return m.(*modelMetrics)
}

// loaded reports a load of the model that took took and holds byteSize
// bytes (inference.Model.ByteSize).
func (m *modelMetrics) loaded(ctx context.Context, took time.Duration, byteSize int64) {
	m.loadLatencyMs.Update(ctx, took.Milliseconds())
	m.byteSize.Update(ctx, byteSize)
}

// declare reports the model's counters at 0 (batcher.declareCounters).
func (m *modelMetrics) declare(ctx context.Context) {
	m.inferences.Inc(ctx, 0)
	m.failedBatches.Inc(ctx, 0)
}

// batchFailed reports a batch that failed, before it is split.
func (m *modelMetrics) batchFailed(ctx context.Context) { m.failedBatches.Inc(ctx, 1) }

// ran reports the Model.Run of a batch that took took.
func (m *modelMetrics) ran(ctx context.Context, took time.Duration) {
	m.batchLatencyUs.Update(ctx, took.Microseconds())
}

// inferred reports a batch of n elements whose outputs were unstacked.
func (m *modelMetrics) inferred(ctx context.Context, n int) {
	m.inferences.Inc(ctx, int64(n))
	m.batchSize.Update(ctx, int64(n))
}

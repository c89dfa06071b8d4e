package runinference

import (
	"context"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// modelMetrics are RunInference's metrics of one model, in Namespace, named
// as Beam Python's RunInference names the metrics of a model it tells apart
// (apache_beam.ml.inference.base._MetricsCollector with a prefix): the
// model id, an underscore, and the name of the unlabelled metric, as in
// "gs://bucket/resnet50.onnx_num_inferences". They count what the
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

// metricsFor returns the metrics of the model id. The id is the model's
// URI (inference.ModelID.URI), not the loaded instance's random id, so that
// the workers' metrics of one model add up.
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

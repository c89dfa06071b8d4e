package runinference_test

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/beamml/beamml/internal/onnxpb"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
)

func init() {
	register.Function4x0(splitUpdates)
	register.Emitter1[runinference.ModelMetadata]()
	register.Function1x1(describeModelResult)
}

// updateURIs are the models the test stream's negative values name.
var updateURIs = map[float64]runinference.ModelMetadata{}

// splitUpdates turns a value v ≥ 0 into the example [v, v], and a negative
// one into the model update updateURIs names.
func splitUpdates(ts beam.EventTime, v float64, emit func(beam.EventTime, inference.Example), update func(runinference.ModelMetadata)) {
	if v < 0 {
		update(updateURIs[v])
		return
	}
	emit(ts, row(float32(v), float32(v)))
}

func describeModelResult(r runinference.PredictionResult) string {
	return fmt.Sprintf("%v -> %v by %q (%s)", values(r.Example["x"]), values(r.Outputs["y"]), r.ModelID.Name, path.Base(r.ModelID.URI))
}

// binaryModel is an ONNX model y = op(x, x) on rows of 2.
func binaryModel(t *testing.T, name, op string) inference.Spec {
	return memModel(t, name, &onnxpb.GraphProto{
		Name:   name,
		Node:   []*onnxpb.NodeProto{{Name: op, OpType: op, Input: []string{"x", "x"}, Output: []string{"y"}}},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 0, 2)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 0, 2)},
	})
}

// The model is swapped during a run: results before the swap come from the
// old model and carry its name (ModelName), results after it from the new; a broken
// model leaves the new one in service and is counted; every element is
// predicted once.
func TestModelUpdatesSwapDuringRun(t *testing.T) {
	square := binaryModel(t, "square.onnx", "Mul")
	double := binaryModel(t, "double.onnx", "Add")
	broken := "memfs://" + t.Name() + "/broken.onnx"
	memfs.Write(broken, []byte("not an onnx model"))
	updateURIs[-1] = runinference.ModelMetadata{ID: "double-v2", URI: double.URI}
	updateURIs[-2] = runinference.ModelMetadata{ID: "broken-v3", URI: broken}

	c := teststream.NewConfig()
	ms := int64(0)
	for _, group := range [][]float64{{1, 2, 3}, {-1}, {4, 5}, {-2}, {6}} {
		for _, v := range group {
			ms += 1000
			if err := c.AddElements(ms, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.AdvanceWatermark(ms + 1); err != nil {
			t.Fatal(err)
		}
		c.AdvanceProcessingTime((10 * time.Second).Milliseconds())
	}
	if err := c.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}

	p, s := beam.NewPipelineWithRoot()
	examples, updates := beam.ParDo2(s, splitUpdates, teststream.Create(s, c))
	results := runinference.RunInference(s, square, examples, runinference.WithModelUpdates(updates),
		runinference.MaxBatchDuration(5*time.Second), runinference.BatchShards(2), runinference.ModelName("square-v1"))
	passert.Equals(s, beam.ParDo(s, describeModelResult, results),
		`[1 1] -> [1 1] by "square-v1" (square.onnx)`,
		`[2 2] -> [4 4] by "square-v1" (square.onnx)`,
		`[3 3] -> [9 9] by "square-v1" (square.onnx)`,
		`[4 4] -> [8 8] by "double-v2" (double.onnx)`,
		`[5 5] -> [10 10] by "double-v2" (double.onnx)`,
		`[6 6] -> [12 12] by "double-v2" (double.onnx)`)
	pr := runOnPrism(t, p)
	if got := counter(t, pr, "model_updates"); got != 2 {
		t.Errorf("model_updates = %d, want 2 (one per shard)", got)
	}
	if got := counter(t, pr, "model_update_failures"); got != 2 {
		t.Errorf("model_update_failures = %d, want 2 (the broken model, once per shard)", got)
	}
	// Per-model metrics, each model's by its name.
	if got := counter(t, pr, "double-v2_num_inferences"); got != 3 {
		t.Errorf("double-v2_num_inferences = %d, want 3", got)
	}
	if got := counter(t, pr, "square-v1_num_inferences"); got != 3 {
		t.Errorf("square-v1_num_inferences = %d, want 3", got)
	}
	if st := inference.Shared().StatsFor(double); st.Loads != 1 {
		t.Errorf("the new model loaded %d times, want once per process", st.Loads)
	}
}

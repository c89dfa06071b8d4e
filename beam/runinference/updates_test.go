package runinference_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
)

func init() {
	register.Function1x1(rowOfTick)
	register.DoFn1x0[runinference.PredictionResult](&seeModel{})
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
	return fmt.Sprintf("%v -> %v by %q (%s)", values(r.Example["x"]), values(r.Outputs.Get("y")), r.ModelID.Name, path.Base(r.ModelID.URI))
}

// binaryModel is an ONNX model y = op(x, x) on rows of 2.
func binaryModel(t *testing.T, name, op string) inference.Spec {
	return memModel(t, name, binaryGraph(name, op))
}

func binaryGraph(name, op string) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{
		Name:   name,
		Node:   []*onnxpb.NodeProto{{Name: op, OpType: op, Input: []string{"x", "x"}, Output: []string{"y"}}},
		Input:  []*onnxpb.ValueInfoProto{tensorInfo("x", 0, 2)},
		Output: []*onnxpb.ValueInfoProto{tensorInfo("y", 0, 2)},
	}
}

// WatchFilePattern with WatchUntil ends, and a pipeline whose other source
// ends too finishes: a streaming source of rows for two seconds, a folder
// watched until then where a second model appears a second in. Every row
// is predicted once, the later ones by the new model, named by its file.
func TestWatchFilePatternUntilEnds(t *testing.T) {
	dir := t.TempDir()
	writeModel := func(name, op string, at time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, modelBytes(t, binaryGraph(name, op)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := time.Now()
	square := writeModel("square.onnx", "Mul", start.Add(-time.Hour))
	newModel := time.AfterFunc(time.Second, func() { writeModel("double.onnx", "Add", time.Now()) })
	defer newModel.Stop()

	p, s := beam.NewPipelineWithRoot()
	ticks := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(start, start.Add(2*time.Second), 50*time.Millisecond)))
	rows := beam.ParDo(s, rowOfTick, ticks)
	updates := runinference.WatchFilePattern(s, filepath.Join(dir, "*.onnx"), 100*time.Millisecond, runinference.WatchUntil(start.Add(2*time.Second)))
	results := runinference.RunInference(s, onnx.Model(square), rows, runinference.WithModelUpdates(updates),
		runinference.MaxBatchDuration(100*time.Millisecond), runinference.BatchShards(2))
	beam.ParDo0(s, seeModel{Run: t.Name()}, results)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := beam.Run(ctx, "prism", p); err != nil {
		t.Fatalf("the pipeline did not finish: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the pipeline took %v after its sources ended at 2s", took)
	}
	names := modelsSeen(t.Name())
	t.Logf("results by model: %v", names)
	if n := names[""] + names["square.onnx"] + names["double.onnx"]; n != 40 || names["double.onnx"] == 0 {
		t.Errorf("results by model %v: want 40 in all, some by double.onnx", names)
	}
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

// rowOfTick is the row [tick, tick].
func rowOfTick(tick int64) inference.Example { return row(float32(tick), float32(tick)) }

// seeModel counts results by the name of the model that made them, for
// the run named Run (prism runs in the test's process).
type seeModel struct{ Run string }

var (
	seenModelsMu sync.Mutex
	seenModels   = map[string]map[string]int{}
)

func (f seeModel) ProcessElement(r runinference.PredictionResult) {
	seenModelsMu.Lock()
	defer seenModelsMu.Unlock()
	if seenModels[f.Run] == nil {
		seenModels[f.Run] = map[string]int{}
	}
	seenModels[f.Run][r.ModelID.Name]++
}

// modelsSeen is what seeModel counted in run.
func modelsSeen(run string) map[string]int {
	seenModelsMu.Lock()
	defer seenModelsMu.Unlock()
	return maps.Clone(seenModels[run])
}

package runinference_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.DoFn2x0[int64, func(string, inference.Example)](&tickRows{})
	register.Emitter2[string, inference.Example]()
	register.DoFn2x0[int64, func(runinference.ModelMetadata)](&tickUpdate{})
	register.Emitter1[runinference.ModelMetadata]()
	register.Function2x1(one)
	register.Function3x0(isBad)
	register.Function2x1(sum)
	register.DoFn1x0[int](&seeCount{})
}

// What a streaming run emitted, by run: prism runs in this process, so the
// pipeline's own counts are recorded here rather than in counters, which
// the runner's metrics could get wrong as well.
var (
	seenMu       sync.Mutex
	seenRows     = map[string]int{} // run → rows the source made
	seenBad      = map[string]int{} // run → bad rows among them
	seenResults  = map[string]int{} // run → results
	seenFailures = map[string]int{} // run → failures
)

// tickRows makes four rows per tick, keyed a to d; tick 3, 10, 17, … has a
// bad row (one value, for a model of two) keyed "bad".
type tickRows struct{}

func (tickRows) ProcessElement(tick int64, emit func(string, inference.Example)) {
	for n := range 4 {
		if tick%7 == 3 && n == 0 {
			emit("bad", row(float32(tick)))
			continue
		}
		emit(string(rune('a'+n)), row(float32(tick), float32(n)))
	}
}

// tickUpdate turns its one tick into an update to URI.
type tickUpdate struct{ URI string }

func (f tickUpdate) ProcessElement(_ int64, emit func(runinference.ModelMetadata)) {
	emit(runinference.ModelMetadata{ID: "v2", URI: f.URI})
}

// one is 1 for each element.
func one(string, beam.X) int { return 1 }

func sum(a, b int) int { return a + b }

// seeCount records a count of run's output: the pipeline's own count, of
// its committed output, so that a bundle the runner retried (its side
// effects happen twice) counts once.
type seeCount struct {
	Run  string
	What string // "rows", "bad", "results" or "failures"
}

func (f seeCount) ProcessElement(n int) {
	seenMu.Lock()
	defer seenMu.Unlock()
	map[string]map[string]int{"rows": seenRows, "bad": seenBad, "results": seenResults, "failures": seenFailures}[f.What][f.Run] = n
}

// isBad keeps the bad rows.
func isBad(key string, _ inference.Example, emit func(string, inference.Example)) {
	if key == "bad" {
		emit(key, nil)
	}
}

// countInto counts col's elements, over all its windows, into seeCount.
func countInto(s beam.Scope, col beam.PCollection, run, what string) {
	ones := beam.ParDo(s, one, beam.WindowInto(s, window.NewGlobalWindows(), col))
	beam.ParDo0(s, seeCount{Run: run, What: what}, beam.Combine(s, sum, ones))
}

// A keyed streaming pipeline (a periodic source, fixed windows,
// MaxBatchDuration over two shards, an update from v1 to v2, bad elements
// to the failures output) run 20 times on prism: in every run every row
// the source made comes out once, as a result or (the bad ones) as a
// failure, num_inferences equals the results the pipeline emitted (each
// counted by the pipeline itself), the two models' own counters add up
// to it, each shard takes the update once, and each model loads once.
// (runOnPrism turns prism's splitting of bundles off: with it on, 5 runs
// of 20 under the race detector lost or repeated up to 16 rows, the
// state of a shard overwritten by a bundle prism split; prism_split_test.go.)
//
// prism loses now and then the value of a metric that two bundles report
// before it has resolved the metric's id (declareCounters in dofn.go);
// RunInference declares its counters at the start of every bundle, so its
// own are whole.
func TestCountersCountEveryResult(t *testing.T) {
	const runs, ticks, perTick, bad = 20, 50, 4, 7
	for i := range runs {
		run := fmt.Sprintf("%s-%d", t.Name(), i)
		v1 := stub.Tag(stub.Echo(2), run) // new models each run: each loads once in the run
		p, s := beam.NewPipelineWithRoot()
		start := time.Now().Truncate(time.Millisecond)
		seq := func(from, to time.Duration, every time.Duration) beam.PCollection {
			return periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(start.Add(from), start.Add(to), every)))
		}
		rows := beam.WindowInto(s, window.NewFixedWindows(200*time.Millisecond), beam.ParDo(s, tickRows{}, seq(0, ticks*20*time.Millisecond, 20*time.Millisecond)))
		updates := beam.ParDo(s, tickUpdate{URI: v1.URI + "/v2"}, seq(400*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond))
		results, failures := runinference.RunInferenceKeyedWithFailures(s, v1, rows, runinference.ModelName("v1"),
			runinference.MaxBatchSize(16), runinference.MaxBatchDuration(100*time.Millisecond), runinference.BatchShards(2),
			runinference.WithModelUpdates(updates))
		countInto(s, rows, run, "rows")
		countInto(s, beam.ParDo(s, isBad, rows), run, "bad")
		countInto(s, results, run, "results")
		countInto(s, failures, run, "failures")
		pr := runOnPrism(t, p)

		got := map[string]int64{}
		for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == runinference.Namespace }).Counters() {
			got[c.Name()] += c.Result()
		}
		seenMu.Lock()
		nRows, nBad := int64(seenRows[run]), int64(seenBad[run])
		nResults, fails := int64(seenResults[run]), int64(seenFailures[run])
		seenMu.Unlock()
		if nResults+fails != nRows || fails != nBad {
			t.Errorf("run %d: %d results and %d failures of %d rows, %d of them bad: want every row once, every bad one a failure", i, nResults, fails, nRows, nBad)
		}
		if nRows != ticks*perTick {
			// Not RunInference's doing, and not seen since the rows are
			// counted: prism's periodic source made more or fewer rows
			// than its definition's ticks.
			t.Logf("run %d: the source made %d rows, want %d", i, nRows, ticks*perTick)
		}
		for name, want := range map[string]int64{
			"num_inferences": nResults,
			"model_updates":  2, // one per shard
			"model_loads":    2, // v1 and v2
		} {
			if got[name] != want {
				t.Errorf("run %d: %s = %d, want %d (counters %v)", i, name, got[name], want, got)
			}
		}
		if sum := got["v1_num_inferences"] + got["v2_num_inferences"]; sum != nResults || got["v2_num_inferences"] == 0 {
			t.Errorf("run %d: v1_num_inferences %d + v2_num_inferences %d = %d, want %d with some on v2", i, got["v1_num_inferences"], got["v2_num_inferences"], sum, nResults)
		}
	}
}

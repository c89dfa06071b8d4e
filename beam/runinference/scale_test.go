package runinference_test

import (
	"path"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.DoFn3x1[*sdf.LockRTracker, []byte, func(inference.Example), error](&rangeSource{})
	register.Emitter1[inference.Example]()
	register.Function2x0(checkEcho)
	register.Function1x1(resultOfItself)
	register.Function1x1(oneOfAny)
}

// resultOfItself is the PredictionResult an echo model makes of ex.
func resultOfItself(ex inference.Example) runinference.PredictionResult {
	return runinference.PredictionResult{Example: ex, Outputs: inference.OutputsOf(map[string]inference.Tensor{"y": ex["x"]}),
		ModelID: inference.ModelID{URI: "stub://echo/2", Instance: "0f8fad5b-d9cb-469f-a165-70867728950e"}}
}

// rangeSource is a splittable source of the examples [i, -i] for i in
// [0, N), cut into Parts restrictions. Prism splits its bundles when they
// stall (here, on the slow model), which spreads the elements over several
// bundles that the SDK harness runs concurrently, each with its own DoFn
// instances.
type rangeSource struct{ N, Parts int64 }

func (f *rangeSource) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.N}
}

func (f *rangeSource) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return r.EvenSplits(f.Parts)
}

func (f *rangeSource) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (f *rangeSource) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (f *rangeSource) ProcessElement(rt *sdf.LockRTracker, _ []byte, emit func(inference.Example)) error {
	for i := rt.GetRestriction().(offsetrange.Restriction).Start; rt.TryClaim(i); i++ {
		emit(row(float32(i), -float32(i)))
	}
	return nil
}

// checkEcho emits the element's index if the echo model returned its input,
// and a negative number otherwise.
func checkEcho(r runinference.PredictionResult, emit func(int)) {
	x, y := values(r.Example["x"]), values(r.Outputs.Get("y"))
	if len(y) != 2 || x[0] != y[0] || x[1] != y[1] || x[1] != -x[0] {
		emit(-1 - int(x[0]))
		return
	}
	emit(int(x[0]))
}

// 10,000 elements over concurrent bundles: the model is loaded exactly once
// in the process, and every element comes out exactly once with its value.
func TestManyBundlesLoadModelOnce(t *testing.T) {
	const n = 10000
	spec := stub.Tag(stub.WithDelay(stub.Echo(2), 150*time.Millisecond), t.Name())
	before := inference.Shared().StatsFor(spec)
	p, s := beam.NewPipelineWithRoot()
	examples := beam.ParDo(s, &rangeSource{N: n, Parts: 50}, beam.Impulse(s))
	results := runinference.RunInference(s, spec, examples, runinference.MaxBatchSize(250))
	want := make([]any, n)
	for i := range want {
		want[i] = i
	}
	passert.Equals(s, beam.ParDo(s, checkEcho, results), want...) // equal as multisets: each index once
	ptest.RunAndValidate(t, p)

	st := inference.Shared().StatsFor(spec)
	t.Logf("cache stats for %v: %+v", spec, st)
	if st.Loads != 1 || st.LoadFailures != 0 {
		t.Errorf("model loaded %d times (%d failures), want exactly once", st.Loads, st.LoadFailures)
	}
	if *ptest.Runner == "" || *ptest.Runner == "prism" {
		// Each concurrent bundle builds its own DoFn, whose Setup acquires
		// the model: hits count the DoFn instances beyond the first.
		if st.Hits-before.Hits < 1 {
			t.Errorf("%d cache hits: the pipeline ran in a single DoFn instance, want concurrent bundles", st.Hits-before.Hits)
		}
	}
}

// BenchmarkPipelineEcho runs whole pipelines of 50,000 elements on the
// runner under test and reports wall time per element: "baseline" is the
// source and a count of its output; "identity" puts between them a ParDo
// that makes each element a PredictionResult of itself, one by one: what
// any transform with RunInference's output costs in a pipeline (Beam's
// per-element plumbing, the larger element); "runinference" puts
// RunInference with the echo model there instead. runinference − baseline
// is what RunInference adds to a pipeline; BenchmarkRunInferenceEcho is the
// transform's own part of it.
//
// The count is fused with what it counts, as a pipeline's own formatting
// and writing of its results is: nothing is encoded between the stages.
// The "reshuffled" pipelines put a Reshuffle before the count, a fusion
// break across which every element is encoded, handed to the runner and
// decoded: there a PredictionResult costs its coder (BenchmarkCoders) and
// its larger size. passert.Count would do that too (it materializes the
// whole collection as a side input), which is why the count here is not
// passert's.
func BenchmarkPipelineEcho(b *testing.B) {
	const n = 50000
	spec := stub.Tag(stub.Echo(2), b.Name())
	for _, reshuffle := range []bool{false, true} {
		for _, name := range []string{"baseline", "identity", "runinference"} {
			if reshuffle {
				name = "reshuffled/" + name
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					p, s := beam.NewPipelineWithRoot()
					out := beam.ParDo(s, &rangeSource{N: n, Parts: 8}, beam.Impulse(s))
					switch path.Base(name) {
					case "identity":
						out = beam.ParDo(s, resultOfItself, out)
					case "runinference":
						out = runinference.RunInference(s, spec, out)
					}
					if reshuffle {
						out = beam.Reshuffle(s, out)
					}
					passert.Equals(s, stats.Sum(s, beam.ParDo(s, oneOfAny, out)), n)
					if err := ptest.Run(p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
			})
		}
	}
}

// oneOfAny counts an element of any type: stats.Sum of its output, which Beam
// lifts into the stage that makes the elements, is their number.
func oneOfAny(beam.T) int { return 1 }

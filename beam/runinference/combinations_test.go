package runinference_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x1(modelName)
	register.Function2x1(keyedModelName)
}

func modelName(r runinference.PredictionResult) string { return r.ModelID.Name }

func keyedModelName(k string, r runinference.PredictionResult) string {
	return k + ": " + r.ModelID.Name
}

// The combinations of options the package doc's table says are refused
// panic at construction, naming both options (or the option and the
// variant).
func TestRefusedCombinations(t *testing.T) {
	mapping := runinference.KeyModelMapping{Keys: []string{"m1"}, Spec: stub.Echo(2)}
	for _, tc := range []struct {
		name  string
		spec  inference.Spec
		keyed bool
		fails bool // a WithFailures variant
		opts  func(beam.Scope) []runinference.Option
		want  []string
	}{
		{"ModelsByKey with WithModelUpdates", stub.Echo(2), true, false, func(s beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.ModelsByKey(mapping), runinference.WithModelUpdates(beam.Create(s, runinference.ModelMetadata{ID: "v2", URI: "v2"}))}
		}, []string{"ModelsByKey", "WithModelUpdates"}},
		{"ModelsByKey unkeyed", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.ModelsByKey(mapping)}
		}, []string{"ModelsByKey", "RunInferenceKeyed"}},
		{"MaxModelsPerWorker alone", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.MaxModelsPerWorker(2)}
		}, []string{"MaxModelsPerWorker(2)", "ModelsByKey", "WithModelUpdates"}},
		{"BatchShards without MaxBatchDuration", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.BatchShards(4)}
		}, []string{"BatchShards(4)", "MaxBatchDuration"}},
		{"ModelName with ModelsByKey and no Spec", inference.Spec{}, true, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.ModelName("own"), runinference.ModelsByKey(mapping)}
		}, []string{`ModelName("own")`, "ModelsByKey", "KeyModelMapping.ID"}},
		{"MaxFailureRate without failures output", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.MaxFailureRate(0.1, 10)}
		}, []string{"MaxFailureRate(0.1, 10)", "RunInferenceWithFailures"}},
		{"MinBatchSize over MaxBatchSize", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.MinBatchSize(8), runinference.MaxBatchSize(4)}
		}, []string{"MaxBatchSize(4)", "MinBatchSize(8)"}},
		{"empty ModelName", stub.Echo(2), false, false, func(beam.Scope) []runinference.Option {
			return []runinference.Option{runinference.ModelName(" ")}
		}, []string{`ModelName(" ")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := fmt.Sprint(recover())
				for _, w := range append(tc.want, "RunInference") {
					if !contains(r, w) {
						t.Errorf("recovered %q, want a panic naming %q", r, w)
					}
				}
			}()
			_, s := beam.NewPipelineWithRoot()
			col := beam.CreateList(s, []inference.Example{row(1, 2)})
			opts := tc.opts(s)
			switch {
			case tc.keyed:
				runinference.RunInferenceKeyed(s, tc.spec, beam.ParDo(s, keyByName, col), opts...)
			default:
				runinference.RunInference(s, tc.spec, col, opts...)
			}
		})
	}
}

// ModelName names the transform's own model in its results and its
// per-model metrics; KeyModelMapping.ID names a mapping's; an unnamed
// model's metrics take the base name of its URI.
func TestModelNames(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	col := beam.CreateList(s, []inference.Example{row(0, 1), row(1, 2), row(5, 3)})
	named := runinference.RunInference(s, stub.Tag(stub.Echo(2), t.Name()), col, runinference.ModelName("scorer"))
	passert.Equals(s, beam.ParDo(s, modelName, named), "scorer", "scorer", "scorer")

	keyed := runinference.RunInferenceKeyed(s, stub.Tag(stub.Echo(2), t.Name()+"-own"), beam.ParDo(s, keyByName, col),
		runinference.ModelName("fallback"),
		runinference.ModelsByKey(
			runinference.KeyModelMapping{Keys: []string{"m0"}, Spec: stub.Tag(stub.Echo(2), t.Name()+"-0"), ID: "zero"},
			runinference.KeyModelMapping{Keys: []string{"m1"}, Spec: stub.Tag(stub.Affine([][]float32{{1, 0}, {0, 1}}, []float32{0, 0}), t.Name()+"-1")}))
	passert.Equals(s, beam.ParDo(s, keyedModelName, keyed), "m0: zero", "m1: ", "m5: fallback")
	pr := ptest.RunAndValidate(t, p)
	for name, want := range map[string]int64{"scorer_num_inferences": 3, "zero_num_inferences": 1, "2x2_num_inferences": 1, "fallback_num_inferences": 1} {
		if got := counter(t, pr, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// TargetBatchLatency with MaxBatchDuration: every element is predicted
// once, through a shard's batches of the sizer's size.
func TestTargetBatchLatencyWithMaxBatchDuration(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	var in []inference.Example
	var want []any
	for i := range 40 {
		in = append(in, row(float32(i), 1))
		want = append(want, fmt.Sprintf("%v -> %v", []float32{float32(i), 1}, []float32{float32(i), 1}))
	}
	col := beam.CreateList(s, in)
	results := runinference.RunInference(s, stub.Tag(stub.WithLatency(stub.Echo(2), time.Millisecond, 100*time.Microsecond), t.Name()), col,
		runinference.TargetBatchLatency(5*time.Millisecond), runinference.MaxBatchDuration(50*time.Millisecond), runinference.BatchShards(2))
	passert.Equals(s, beam.ParDo(s, formatResult, results), want...)
	runOnPrism(t, p) // the direct runner has no state or timers
}

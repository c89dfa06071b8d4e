package runinference_test

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// The tests run on prism by default and on the direct runner with
// -args -runner=direct (make test runs both).
func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.Function1x1(formatResult)
	register.Function2x1(formatKeyed)
	register.Function1x1(formatFailure)
	register.Function1x2(keyByMod3)
}

// row returns an example whose input x holds vals.
func row(vals ...float32) inference.Example {
	t, err := inference.New([]int{len(vals)}, vals)
	if err != nil {
		panic(err)
	}
	return inference.Example{"x": t}
}

func values(t inference.Tensor) []float32 {
	d, err := inference.Data[float32](t)
	if err != nil {
		panic(err)
	}
	return d
}

// formatResult prints a result as "x -> y", which the tests compare.
func formatResult(r runinference.PredictionResult) string {
	return fmt.Sprintf("%v -> %v", values(r.Example["x"]), values(r.Outputs.Get("y")))
}

func keyByMod3(ex inference.Example) (string, inference.Example) {
	return fmt.Sprintf("k%d", int(values(ex["x"])[0])%3), ex
}

func formatKeyed(k string, r runinference.PredictionResult) string {
	return k + ": " + formatResult(r)
}

func formatFailure(f runinference.Failure) string {
	return fmt.Sprintf("%v at %s", values(f.Example["x"]), f.Stage)
}

// affine is y = [x0 + 2·x1 + 1, -x0 + 0.5]: a model whose outputs tell which
// input they came from.
var affine = stub.Affine([][]float32{{1, 2}, {-1, 0}}, []float32{1, 0.5})

func affineWant(x0, x1 float32) string {
	return fmt.Sprintf("%v -> %v", []float32{x0, x1}, []float32{x0 + 2*x1 + 1, -x0 + 0.5})
}

func TestRunInferenceAffine(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	var in []inference.Example
	var want []string
	for i := range 100 {
		x0, x1 := float32(i), float32(i%7)-3
		in = append(in, row(x0, x1))
		want = append(want, affineWant(x0, x1))
	}
	spec := stub.Tag(affine, t.Name())
	results := runinference.RunInference(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(16))
	passert.Equals(s, beam.ParDo(s, formatResult, results), toAny(want)...)
	pr := ptest.RunAndValidate(t, p)

	if st := inference.Shared().StatsFor(spec); st.Loads != 1 {
		t.Errorf("loads of %v = %d, want 1", spec, st.Loads)
	}
	if got := counter(t, pr, "num_inferences"); got != 100 {
		t.Errorf("num_inferences = %d, want 100", got)
	}
	if got := counter(t, pr, "failed_batches_counter"); got != 0 {
		t.Errorf("failed_batches_counter = %d, want 0", got)
	}
	d := distribution(t, pr, "inference_request_batch_size")
	if d.Count != 7 || d.Sum != 100 || d.Max != 16 {
		t.Errorf("inference_request_batch_size = %+v, want 7 batches of 100 elements, max 16", d)
	}
	if d := distribution(t, pr, "model_byte_size"); d.Max != 6*4 {
		t.Errorf("model_byte_size = %+v, want max 24 (4 weights and 2 biases)", d)
	}
}

func TestRunInferenceKeyed(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	var want []string
	var in []inference.Example
	for i := range 40 {
		in = append(in, row(float32(i), 1))
		want = append(want, fmt.Sprintf("k%d: %s", i%3, affineWant(float32(i), 1)))
	}
	col := beam.ParDo(s, keyByMod3, beam.CreateList(s, in))
	results := runinference.RunInferenceKeyed(s, stub.Tag(affine, t.Name()), col, runinference.MaxBatchSize(8))
	passert.Equals(s, beam.ParDo(s, formatKeyed, results), toAny(want)...)
	ptest.RunAndValidate(t, p)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// counter returns the attempted value of a RunInference counter summed over
// transforms.
func counter(t *testing.T, pr beam.PipelineResult, name string) int64 {
	t.Helper()
	var sum int64
	for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool {
		return r.Namespace() == runinference.Namespace && r.Name() == name
	}).Counters() {
		sum += c.Result()
	}
	return sum
}

func distribution(t *testing.T, pr beam.PipelineResult, name string) metrics.DistributionValue {
	t.Helper()
	ds := pr.Metrics().Query(func(r metrics.SingleResult) bool {
		return r.Namespace() == runinference.Namespace && r.Name() == name
	}).Distributions()
	if len(ds) != 1 {
		t.Fatalf("%d distributions named %s, want 1", len(ds), name)
	}
	return ds[0].Result()
}

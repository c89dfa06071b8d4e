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

// Tests of models that misbehave: they panic, hang, deadlock or ask for
// more memory than their budget. Every one must cost only its own elements,
// and never the worker.

func init() {
	register.Function1x1(describePanic)
	register.Function1x1(describeTimeout)
}

// describePanic checks a failure's error for what a recovered panic must
// show: the panic's message, and the stub's frame where it panicked.
func describePanic(f runinference.Failure) string {
	x := values(f.Example["x"])
	msg := fmt.Sprintf("inference: panic in Model.Run: stub: row 0 of 1 has x[0] = %v, marked to panic [at ", x[0])
	return fmt.Sprintf("%v at %s (%s): message %t, frame %t", x, f.Stage, f.Kind, contains(f.Err, msg), contains(f.Err, "stub.(*Model).fault (stub/faults.go:"))
}

// describeTimeout keeps what a timeout's error says for sure: whether the
// model returned after its deadline or was abandoned depends on timing.
func describeTimeout(f runinference.Failure) string {
	return fmt.Sprintf("%v at %s (%s): timed out %t, deadline exceeded %t", values(f.Example["x"]), f.Stage, f.Kind,
		contains(f.Err, "batch of 1 timed out after 100ms (InferenceTimeout)"), contains(f.Err, "context deadline exceeded"))
}

// 2,000 elements of which 1% panic (chosen by value, so the test knows
// which): each panicking element lands in the failures output with its
// panic and where it happened, every other element gets its result, and
// the pipeline succeeds.
func TestPanicsBecomeFailures(t *testing.T) {
	const n, rate = 2000, 0.01
	var in []inference.Example
	var good, failed []any
	for i := range n {
		x := []float32{float32(i), float32(-i)}
		in = append(in, row(x...))
		if stub.Selected(stub.Panic, rate, x[0]) {
			failed = append(failed, fmt.Sprintf("%v at inference (panic): message true, frame true", x))
		} else {
			good = append(good, fmt.Sprintf("%v -> %v", x, x))
		}
	}
	spec := stub.Tag(stub.WithFaultRate(stub.Echo(2), stub.Panic, rate), t.Name())
	p, s := beam.NewPipelineWithRoot()
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in))
	passert.Equals(s, beam.ParDo(s, formatResult, results), good...) // equal as multisets: no element twice
	passert.Equals(s, beam.ParDo(s, describePanic, failures), failed...)
	pr := ptest.RunAndValidate(t, p)

	// Each panicking element panics in every batch that holds it as the
	// batch is split: at least once (alone), at most log₂(64)+1 times.
	t.Logf("%d of %d elements panic", len(failed), n)
	if got, k := counter(t, pr, "recovered_panics"), int64(len(failed)); got < k || got > 7*k {
		t.Errorf("recovered_panics = %d, want between %d and %d", got, k, 7*k)
	}
	if got := counter(t, pr, "num_inferences"); got != int64(len(good)) {
		t.Errorf("num_inferences = %d, want %d", got, len(good))
	}
}

// Without the failures output, a panicking element fails the pipeline with
// an error naming it and the panic, and the test process goes on.
func TestPanicWithoutFailuresOutputFailsPipeline(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, _, _ := failingInput()
	spec := stub.Tag(stub.WithFault(stub.Echo(2), stub.Panic, bad), t.Name())
	runinference.RunInference(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(8))
	err := ptest.Run(p)
	if err == nil {
		t.Fatal("pipeline with a panicking element succeeded, want an error")
	}
	for _, want := range []string{"{x: float32[2] [-1 5]}", "stage inference (panic)", "inference: panic in Model.Run: stub: row 0 of 1 has x[0] = -1, marked to panic", "stub://echo/2"} {
		if !contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%.2000s", want, err)
		}
	}
}

// A model that ignores its context and never returns (deadlocked): each
// batch holding a stuck element is abandoned at its deadline and split,
// the stuck elements fail alone, and the job finishes.
func TestDeadlockedModelIsAbandoned(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, good, _ := failingInput() // elements 5 and 20 start with -1
	spec := stub.Tag(stub.WithFault(stub.Echo(2), stub.Deadlock, bad), t.Name())
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in[:24]),
		runinference.MaxBatchSize(4), runinference.InferenceTimeout(100*time.Millisecond))
	passert.Equals(s, beam.ParDo(s, formatResult, results), good[:22]...)
	passert.Equals(s, beam.ParDo(s, describeFailure, failures),
		"[-1 5] at inference (deadline): batch of 1 timed out after 100ms (InferenceTimeout): Model.Run did not return and was abandoned: context deadline exceeded (model true)",
		"[-1 20] at inference (deadline): batch of 1 timed out after 100ms (InferenceTimeout): Model.Run did not return and was abandoned: context deadline exceeded (model true)")
	pr := ptest.RunAndValidate(t, p)

	// Each stuck element is in a batch of 4, then of 2, then alone.
	if got := counter(t, pr, "abandoned_runs"); got != 6 {
		t.Errorf("abandoned_runs = %d, want 6", got)
	}
	if got := counter(t, pr, "timed_out_batches"); got != 6 {
		t.Errorf("timed_out_batches = %d, want 6", got)
	}
}

// A model that hangs on 2% of its elements but honours its deadline: the
// hanging elements fail alone with a timeout, the others succeed.
func TestHangingModelTimesOut(t *testing.T) {
	const n, rate = 100, 0.02
	var in []inference.Example
	var good, failed []any
	for i := range n {
		x := []float32{float32(i), 1}
		in = append(in, row(x...))
		if stub.Selected(stub.Hang, rate, x[0]) {
			failed = append(failed, fmt.Sprintf("%v at inference (deadline): timed out true, deadline exceeded true", x))
		} else {
			good = append(good, fmt.Sprintf("%v -> %v", x, x))
		}
	}
	spec := stub.Tag(stub.WithFaultRate(stub.Echo(2), stub.Hang, rate), t.Name())
	p, s := beam.NewPipelineWithRoot()
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in),
		runinference.MaxBatchSize(4), runinference.InferenceTimeout(100*time.Millisecond))
	passert.Equals(s, beam.ParDo(s, formatResult, results), good...)
	passert.Equals(s, beam.ParDo(s, describeTimeout, failures), failed...)
	pr := ptest.RunAndValidate(t, p)
	t.Logf("%d of %d elements hang", len(failed), n)
	if got := counter(t, pr, "timed_out_batches"); got < int64(len(failed)) {
		t.Errorf("timed_out_batches = %d, want at least %d", got, len(failed))
	}
}

// Without the failures output, an element that times out fails the
// pipeline with an error naming it; the worker is not blocked.
func TestTimeoutWithoutFailuresOutputFailsPipeline(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{row(1, 1), row(bad, 7), row(2, 2)}
	spec := stub.Tag(stub.WithFault(stub.Echo(2), stub.Deadlock, bad), t.Name())
	runinference.RunInference(s, spec, beam.CreateList(s, in),
		runinference.MaxBatchSize(2), runinference.InferenceTimeout(100*time.Millisecond))
	err := ptest.Run(p)
	if err == nil {
		t.Fatal("pipeline with a stuck element succeeded, want an error")
	}
	for _, want := range []string{"{x: float32[2] [-1 7]}", "stage inference (deadline)", "timed out after 100ms (InferenceTimeout)", "context deadline exceeded"} {
		if !contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%.2000s", want, err)
		}
	}
}

// A model that needs 100 bytes per unit of x[0] under a budget of 1000
// bytes: an element needing 5000 bytes fails alone with a ResourceError,
// its batch's other elements succeed. The budget comes from the transform's
// option, else from the Spec's memory_budget option.
func TestMemoryBudget(t *testing.T) {
	var in []inference.Example
	var good []any
	for i := range 16 {
		x := []float32{1, float32(i)}
		if i == 6 {
			x[0] = 50
		}
		in = append(in, row(x...))
		if i != 6 {
			good = append(good, fmt.Sprintf("%v -> %v", x, x))
		}
	}
	const overBudget = `[50 6] at inference (memory_budget): inference: model "stub": working memory of 1 rows needs 4.9 KiB, over the memory budget of 1000 B (model true)`
	model := stub.WithMemoryUse(stub.Echo(2), 100)
	withBudget := func(spec inference.Spec, budget string) inference.Spec {
		return withOption(spec, "memory_budget", budget)
	}
	for _, tc := range []struct {
		name string
		spec inference.Spec
		opts []runinference.Option
		fail bool
	}{
		{"transform option", model, []runinference.Option{runinference.MemoryBudget(1000)}, true},
		{"spec option", withBudget(model, "1KB"), nil, true},
		{"transform option over spec option", withBudget(model, "10"), []runinference.Option{runinference.MemoryBudget(1000)}, true},
		{"default budget", model, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := beam.NewPipelineWithRoot()
			spec := stub.Tag(tc.spec, t.Name())
			opts := append([]runinference.Option{runinference.MaxBatchSize(4)}, tc.opts...)
			results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in), opts...)
			if tc.fail {
				passert.Equals(s, beam.ParDo(s, formatResult, results), good...)
				passert.Equals(s, beam.ParDo(s, describeFailure, failures), overBudget)
			} else {
				passert.Count(s, results, "results", len(in))
				passert.Empty(s, failures)
			}
			ptest.RunAndValidate(t, p)
		})
	}
}

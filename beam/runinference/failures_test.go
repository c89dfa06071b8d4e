package runinference_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x1(describeFailure)
	register.Function2x1(describeKeyedFailure)
	register.Function1x1(kindAndStage)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// describeFailure prints a failure with the facts the tests check: the
// element, the stage, the kind, the cause, and whether a model id is
// attached.
func describeFailure(f runinference.Failure) string {
	return fmt.Sprintf("%v at %s (%s): %s (model %t)", values(f.Example["x"]), f.Stage, f.Kind, f.Err, f.ModelID.Instance != "")
}

func describeKeyedFailure(k string, f runinference.Failure) string {
	return k + ": " + describeFailure(f)
}

const bad = -1 // the failing stub's marker: x[0] == -1 fails the batch

// failingInput is 64 elements [i, i] with elements 5 and 20 marked bad, so
// with batches of 8 the batches 0-7 and 16-23 hold one bad element each.
func failingInput() (in []inference.Example, good, failed []any) {
	for i := range 64 {
		x0 := float32(i)
		if i == 5 || i == 20 {
			x0 = bad
		}
		in = append(in, row(x0, float32(i)))
		if x0 == bad {
			failed = append(failed, fmt.Sprintf("%v at inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail (model true)", []float32{x0, float32(i)}))
		} else {
			good = append(good, fmt.Sprintf("%v -> %v", []float32{x0, float32(i)}, []float32{x0, float32(i)}))
		}
	}
	return in, good, failed
}

func TestWithFailuresLosesNothing(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, good, failed := failingInput()
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(8))
	passert.Equals(s, beam.ParDo(s, formatResult, results), good...)
	passert.Equals(s, beam.ParDo(s, describeFailure, failures), failed...)
	pr := ptest.RunAndValidate(t, p)

	// Each bad batch fails at 8, 4, 2 and 1 elements; its good halves
	// succeed at 4, 2 and 1. The six batches without a bad element succeed
	// whole, at 8: 12 successful batches, 8 failed ones.
	if got := counter(t, pr, "failed_batches_counter"); got != 8 {
		t.Errorf("failed_batches_counter = %d, want 8", got)
	}
	if got := counter(t, pr, "num_inferences"); got != 62 {
		t.Errorf("num_inferences = %d, want 62", got)
	}
	if d := distribution(t, pr, "inference_request_batch_size"); d.Count != 12 || d.Sum != 62 || d.Max != 8 || d.Min != 1 {
		t.Errorf("inference_request_batch_size = %+v, want 12 batches, 62 elements, sizes 1 to 8", d)
	}
}

func TestKeyedWithFailures(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, _, _ := failingInput()
	col := beam.ParDo(s, keyByMod3, beam.CreateList(s, in[:24]))
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, col, runinference.MaxBatchSize(8))
	passert.Count(s, results, "results", 22)
	// keyByMod3 keys by x[0]: the bad elements have x[0] = -1, so key k-1.
	passert.Equals(s, beam.ParDo(s, describeKeyedFailure, failures),
		"k-1: [-1 5] at inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail (model true)",
		"k-1: [-1 20] at inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail (model true)")
	ptest.RunAndValidate(t, p)
}

// The job's error holds, on a line of its own after Beam's plan dump, the
// element with its first values, the stage, the kind and the cause; then
// the model on the next line.
func TestFailureWithoutFailuresOutputFailsBundle(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, _, _ := failingInput()
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	runinference.RunInference(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(8))
	err := ptest.Run(p)
	if err == nil {
		t.Fatal("pipeline with a bad element succeeded, want an error")
	}
	checkErrorLines(t, err,
		"RunInference: element {x: float32[2] [-1 5]} failed at stage inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail",
		fmt.Sprintf("\tmodel %v, event time", spec))
}

func TestKeyedFailureWithoutFailuresOutputFailsBundle(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, _, _ := failingInput()
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	runinference.RunInferenceKeyed(s, spec, beam.ParDo(s, keyByMod3, beam.CreateList(s, in[:8])), runinference.MaxBatchSize(8))
	err := ptest.Run(p)
	if err == nil {
		t.Fatal("pipeline with a bad element succeeded, want an error")
	}
	checkErrorLines(t, err,
		`RunInference: element {x: float32[2] [-1 5]} with key "k-1" failed at stage inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail`,
		fmt.Sprintf("\tmodel %v, event time", spec))
}

// checkErrorLines checks that a job's error has a line equal to first,
// followed by a line that starts with next.
func checkErrorLines(t *testing.T, err error, first, next string) {
	t.Helper()
	lines := strings.Split(err.Error(), "\n")
	i := slices.Index(lines, first)
	if i < 0 || i+1 == len(lines) || !strings.HasPrefix(lines[i+1], next) {
		t.Errorf("job error has no line\n%s\nfollowed by one starting %q:\n%.3000s", first, next, err)
	}
}

// An example with a tensor the model has no input for (a row id) fails
// with kind unexpected_input, not as a shape mismatch.
func TestExtraInputIsUnexpectedInput(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{row(1, 2), row(3, 4)}
	id, err := inference.New([]int{}, []int64{17})
	if err != nil {
		t.Fatal(err)
	}
	in[1]["id"] = id
	results, failures := runinference.RunInferenceWithFailures(s, stub.Tag(stub.Echo(2), t.Name()), beam.CreateList(s, in))
	passert.Equals(s, beam.ParDo(s, formatResult, results), "[1 2] -> [1 2]")
	passert.Equals(s, beam.ParDo(s, describeFailure, failures),
		`[3 4] at input (unexpected_input): inference: example has tensor "id", model inputs are [x]: inference: unexpected input (model true)`)
	ptest.RunAndValidate(t, p)
}

// wrongTypeRows returns n examples whose x is int64, for a model that
// takes float32: a systematic mistake.
func wrongTypeRows(n int) []inference.Example {
	in := make([]inference.Example, n)
	for i := range in {
		x, err := inference.New([]int{2}, []int64{int64(i), 0})
		if err != nil {
			panic(err)
		}
		in[i] = inference.Example{"x": x}
	}
	return in
}

func kindAndStage(f runinference.Failure) string { return fmt.Sprintf("%s at %s", f.Kind, f.Stage) }

// Every element of the wrong type: with MaxFailureRate the job fails with
// the summary; without it, every element goes to the failures output and
// the job succeeds.
func TestMaxFailureRateFailsSystematicMistake(t *testing.T) {
	in := wrongTypeRows(100)
	t.Run("with MaxFailureRate", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		spec := stub.Tag(stub.Echo(2), t.Name())
		runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in), runinference.MaxFailureRate(0.1, 5))
		err := ptest.Run(p)
		if err == nil {
			t.Fatal("pipeline whose every element fails succeeded, want an error")
		}
		want := fmt.Sprintf(`RunInference: 5 of 5 elements failed, a fraction of 1 over MaxFailureRate(0.1, 5), model %v; by kind: element_type: 5 (first: inference: input "x": element type int64, want float32: inference: element type mismatch)`, spec)
		if !slices.Contains(strings.Split(err.Error(), "\n"), want) {
			t.Errorf("job error has no line\n%s\n%.3000s", want, err)
		}
	})
	t.Run("without", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		results, failures := runinference.RunInferenceWithFailures(s, stub.Tag(stub.Echo(2), t.Name()), beam.CreateList(s, in))
		passert.Empty(s, results)
		want := make([]any, len(in))
		for i := range want {
			want[i] = "element_type at input"
		}
		passert.Equals(s, beam.ParDo(s, kindAndStage, failures), want...)
		ptest.RunAndValidate(t, p)
	})
}

// Failures under the limit (2 of 64) pass with MaxFailureRate.
func TestMaxFailureRateUnderTheLimit(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, good, failed := failingInput()
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, in),
		runinference.MaxBatchSize(8), runinference.MaxFailureRate(0.25, 10))
	passert.Equals(s, beam.ParDo(s, formatResult, results), good...)
	passert.Equals(s, beam.ParDo(s, describeFailure, failures), failed...)
	ptest.RunAndValidate(t, p)
}

func TestWrongShapeFailsAtInputStage(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in := []inference.Example{row(1, 2), row(1, 2, 3), row(3, 4)}
	results, failures := runinference.RunInferenceWithFailures(s, stub.Tag(stub.Echo(2), t.Name()), beam.CreateList(s, in))
	passert.Count(s, results, "results", 2)
	passert.Equals(s, beam.ParDo(s, describeFailure, failures),
		`[1 2 3] at input (shape): inference: input "x": shape [3], want [2] (the model's [? 2] without the batch dimension): inference: shape mismatch (model true)`)
	ptest.RunAndValidate(t, p)
}

// A model that can never load fails the pipeline in every variant; a
// transient load failure sends the elements to the failures output at stage
// load when there is one.
func TestLoadFailure(t *testing.T) {
	in := []inference.Example{row(1, 2), row(3, 4)}
	bad := stub.Tag(stub.WithLoadFailure(stub.Echo(2), "weights are corrupt"), t.Name())
	down := stub.Tag(stub.WithUnavailableStore(stub.Echo(2), "model store unreachable"), t.Name())

	t.Run("bad model with failures output", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		runinference.RunInferenceWithFailures(s, bad, beam.CreateList(s, in))
		err := ptest.Run(p)
		if err == nil || !contains(err.Error(), "weights are corrupt") {
			t.Errorf("pipeline error = %.1000v, want one naming the bad model", err)
		}
	})
	t.Run("bad model", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		runinference.RunInference(s, bad, beam.CreateList(s, in))
		err := ptest.Run(p)
		if err == nil || !contains(err.Error(), "weights are corrupt") {
			t.Errorf("pipeline error = %.1000v, want one naming the bad model", err)
		}
	})
	t.Run("unreachable store with failures output", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		results, failures := runinference.RunInferenceWithFailures(s, down, beam.CreateList(s, in))
		passert.Empty(s, results)
		passert.Equals(s, beam.ParDo(s, formatFailure, failures), "[1 2] at load", "[3 4] at load")
		ptest.RunAndValidate(t, p)
	})
	t.Run("unreachable store", func(t *testing.T) {
		p, s := beam.NewPipelineWithRoot()
		runinference.RunInference(s, down, beam.CreateList(s, in))
		err := ptest.Run(p)
		if err == nil || !contains(err.Error(), "model store unreachable") {
			t.Errorf("pipeline error = %.1000v, want one naming the load failure", err)
		}
	})
	for _, spec := range []inference.Spec{bad, down} {
		if st := inference.Shared().StatsFor(spec); st.Loads != 0 || st.LoadFailures < 2 {
			t.Errorf("cache stats %+v for %v: want no load and a load attempt per pipeline (failed loads are not cached)", st, spec)
		}
	}
}

func TestConstructionPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec inference.Spec
		opts []runinference.Option
		want string
	}{
		{"zero max", stub.Echo(2), []runinference.Option{runinference.MaxBatchSize(0)}, "MaxBatchSize(0)"},
		{"negative min", stub.Echo(2), []runinference.Option{runinference.MinBatchSize(-3)}, "MinBatchSize(-3)"},
		{"zero bytes", stub.Echo(2), []runinference.Option{runinference.MaxBatchBytes(0)}, "MaxBatchBytes(0)"},
		{"max below min", stub.Echo(2), []runinference.Option{runinference.MinBatchSize(10), runinference.MaxBatchSize(4)}, "MaxBatchSize(4) is less than MinBatchSize(10)"},
		{"bad device", stub.Echo(2), []runinference.Option{runinference.Device("tpu")}, `Device("tpu")`},
		{"zero timeout", stub.Echo(2), []runinference.Option{runinference.InferenceTimeout(0)}, "InferenceTimeout(0s)"},
		{"negative timeout", stub.Echo(2), []runinference.Option{runinference.InferenceTimeout(-time.Second)}, "InferenceTimeout(-1s)"},
		{"zero budget", stub.Echo(2), []runinference.Option{runinference.MemoryBudget(0)}, "MemoryBudget(0)"},
		{"bad budget option", withOption(stub.Echo(2), "memory_budget", "lots"), nil, `option memory_budget="lots"`},
		{"bad budget option under a good one", withOption(stub.Echo(2), "memory_budget", "-1GiB"), []runinference.Option{runinference.MemoryBudget(1 << 30)}, `option memory_budget="-1GiB"`},
		{"failure rate of 1", stub.Echo(2), []runinference.Option{runinference.MaxFailureRate(1, 10)}, "MaxFailureRate(1, 10): the fraction must be at least 0 and less than 1"},
		{"negative failure rate", stub.Echo(2), []runinference.Option{runinference.MaxFailureRate(-0.1, 10)}, "MaxFailureRate(-0.1, 10): the fraction"},
		{"NaN failure rate", stub.Echo(2), []runinference.Option{runinference.MaxFailureRate(math.NaN(), 10)}, "MaxFailureRate(NaN, 10): the fraction"},
		{"no minimum of elements", stub.Echo(2), []runinference.Option{runinference.MaxFailureRate(0.1, 0)}, "MaxFailureRate(0.1, 0): minElements must be at least 1"},
		{"bad precision", stub.Echo(2), []runinference.Option{runinference.Precision("bf16")}, `Precision("bf16")`},
		{"bad precision option", withOption(stub.Echo(2), "precision", "int8"), nil, `option precision: inference: precision "int8"`},
		{"empty spec", inference.Spec{}, nil, "no format"},
		{"no uri", inference.Spec{Format: "stub"}, nil, "no URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := beam.NewPipelineWithRoot()
			col := beam.CreateList(s, []inference.Example{row(1, 2)})
			defer func() {
				r := recover()
				if r == nil || !contains(fmt.Sprint(r), tc.want) || !contains(fmt.Sprint(r), "RunInference") {
					t.Errorf("recovered %v, want a panic naming RunInference and %q", r, tc.want)
				}
			}()
			runinference.RunInference(s, tc.spec, col, tc.opts...)
		})
	}
}

// withOption returns a copy of spec with one more option.
func withOption(spec inference.Spec, k, v string) inference.Spec {
	opts := map[string]string{k: v}
	for ok, ov := range spec.Options {
		opts[ok] = ov
	}
	spec.Options = opts
	return spec
}

func TestWrongInputTypePanics(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	defer func() {
		if r := recover(); r == nil || !contains(fmt.Sprint(r), "want PCollection<inference.Example>") {
			t.Errorf("recovered %v, want a panic naming the wanted input type", r)
		}
	}()
	runinference.RunInference(s, stub.Echo(2), beam.Create(s, 1, 2, 3))
}

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

// The 1%-hostile pipeline of issue 11: a real ONNX model on the CPU,
// loaded by a user's own loader that panics or hangs on marked rows, and
// 10,000 keyed elements of which 1% are hostile, one class in five each:
//
//   - bomb: an element whose output needs 16 GiB (an outer product of its
//     2¹⁶ column sums), over the transform's 64 MiB budget;
//   - empty: float32[0, 2⁶²], no elements, whose column sums would be 2⁶²;
//   - panic: a row the loader's Run panics on;
//   - hang: a row the loader's Run blocks on, half of them ignoring the
//     run's context (abandoned at the deadline) and half honouring it;
//   - shape: a rank-1 element for a rank-2 input.
//
// With the failures output, results and failures together are the inputs,
// each exactly once, every hostile element a failure with its reason, and
// the job succeeds. Without it, the job fails with an error naming the
// element, and the process goes on.

const hostileFormat = "hostile-test"

// The loader's markers: the first value of a row.
const (
	panicMarker = -13
	hangMarker  = -17 // honours the context
	stuckMarker = -19 // ignores it, until the test ends
)

// stuck is closed to release the runs that ignore their context: each
// test makes its own and closes it when its pipelines are done.
var stuck struct {
	sync.Mutex
	release chan struct{}
}

func holdStuckRuns(t *testing.T) {
	stuck.Lock()
	defer stuck.Unlock()
	release := make(chan struct{})
	stuck.release = release
	t.Cleanup(func() { close(release) })
}

func stuckRelease() chan struct{} {
	stuck.Lock()
	defer stuck.Unlock()
	return stuck.release
}

func init() {
	// A user's own loader: it loads the ONNX model named by its option
	// "model" on the CPU and wraps Run.
	inference.RegisterLoader(hostileFormat, func(ctx context.Context, spec inference.Spec, _ inference.Backend) (inference.Model, error) {
		h, err := inference.Acquire(ctx, inference.Spec{URI: spec.Options["model"], Format: "onnx", Device: inference.CPU})
		if err != nil {
			return nil, err
		}
		return &faultyModel{Model: h.Model(), h: h}, nil
	})
	register.Function2x1(classifyResult)
	register.Function2x1(classifyFailure)
}

type faultyModel struct {
	inference.Model
	h *inference.Handle
}

func (m *faultyModel) Run(ctx context.Context, in map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	if x, err := inference.Data[float32](in["x"]); err == nil && len(x) > 0 {
		shape := in["x"].Shape()
		for r := range shape[0] {
			switch x[r*len(x)/shape[0]] {
			case panicMarker:
				var rows []int
				_ = rows[r+1] // a user's bug: index out of range
			case hangMarker:
				<-ctx.Done()
				return nil, ctx.Err()
			case stuckMarker:
				<-stuckRelease()
				return nil, fmt.Errorf("released")
			}
		}
	}
	return m.Model.Run(ctx, in)
}

func (m *faultyModel) Close() error { m.h.Release(); return nil }

// hostileModel is y = Σ_ij (Σ_a x_aj)(Σ_a x_ai) over x float32[batch, a, c]:
// column sums, then their outer product, [c, c] per row.
func hostileModel(t *testing.T) inference.Spec {
	dyn, value := dynamicDim, floatValue
	keep0 := []*onnxpb.AttributeProto{{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}
	onnxSpec := memModel(t, "hostile.onnx", &onnxpb.GraphProto{
		Name: "hostile",
		Node: []*onnxpb.NodeProto{
			{Name: "colsum", OpType: "ReduceSum", Input: []string{"x", "axis1"}, Output: []string{"s"}, Attribute: keep0},
			{Name: "column", OpType: "Unsqueeze", Input: []string{"s", "axis2"}, Output: []string{"column"}},
			{Name: "row", OpType: "Unsqueeze", Input: []string{"s", "axis1"}, Output: []string{"row"}},
			{Name: "outer", OpType: "MatMul", Input: []string{"column", "row"}, Output: []string{"outer"}},
			{Name: "sum", OpType: "ReduceSum", Input: []string{"outer", "axes12"}, Output: []string{"y"}, Attribute: keep0},
		},
		Initializer: []*onnxpb.TensorProto{int64s("axis1", 1), int64s("axis2", 2), int64s("axes12", 1, 2)},
		Input:       []*onnxpb.ValueInfoProto{value("x", dyn("batch"), dyn("a"), dyn("c"))},
		Output:      []*onnxpb.ValueInfoProto{value("y", dyn("batch"))},
	})
	return inference.Spec{URI: "hostile:" + onnxSpec.URI, Format: hostileFormat, Options: map[string]string{"model": onnxSpec.URI}}
}

// hostileClass is the class of element i: "" for a good one.
func hostileClass(i int) string {
	if i%100 != 7 {
		return ""
	}
	return []string{"bomb", "empty", "panic", "hang", "shape"}[(i/100)%5]
}

// hostileElement builds element i; good ones are float32[2, 2] of small
// integers.
func hostileElement(i int) inference.Example {
	var x inference.Tensor
	var err error
	v := float32(i % 5)
	switch hostileClass(i) {
	case "":
		x, err = inference.New([]int{2, 2}, []float32{v, 1, 2, v})
	case "bomb":
		x, err = inference.New([]int{2, 1 << 16}, make([]float32, 2<<16))
	case "empty":
		x, err = inference.New([]int{0, 1 << 62}, []float32{})
	case "panic":
		x, err = inference.New([]int{2, 2}, []float32{panicMarker, 0, 0, 0})
	case "hang":
		marker := float32(hangMarker)
		if (i/500)%2 == 1 {
			marker = stuckMarker
		}
		x, err = inference.New([]int{2, 2}, []float32{marker, 0, 0, 0})
	case "shape":
		x, err = inference.New([]int{4}, []float32{1, 2, 3, 4})
	}
	if err != nil {
		panic(err) // the shapes above fit their data
	}
	return inference.Example{"x": x}
}

// wantGood is the output of a good element i: (Σ column sums)² of
// [[v, 1], [2, v]] is (v+2 + 1+v)².
func wantGood(i int) float32 {
	v := float32(i % 5)
	return (2*v + 3) * (2*v + 3)
}

func classifyResult(id int, r runinference.PredictionResult) string {
	y, err := inference.Data[float32](r.Outputs.Get("y"))
	if err != nil || len(y) != 1 {
		return fmt.Sprintf("%d: bad output %v", id, r.Outputs.Get("y"))
	}
	return fmt.Sprintf("%d: %g", id, y[0])
}

// classifyFailure names the class a failure's stage and error show.
func classifyFailure(id int, f runinference.Failure) string {
	class := "unexplained: " + f.Err
	switch {
	case f.Stage == runinference.StageInput && strings.Contains(f.Err, `input "x": shape [4], want [? ?]`):
		class = "shape"
	case f.Stage != runinference.StageInference:
	case strings.Contains(f.Err, `node "colsum" (ReduceSum)`) && strings.Contains(f.Err, "over the memory budget of 64.0 MiB"):
		class = "empty"
	case strings.Contains(f.Err, `node "outer" (MatMul)`) && strings.Contains(f.Err, "over the memory budget of 64.0 MiB"):
		class = "bomb"
	case strings.Contains(f.Err, "inference: panic in Model.Run: runtime error: index out of range") && strings.Contains(f.Err, "faultyModel"):
		class = "panic"
	case strings.Contains(f.Err, "timed out after 100ms (InferenceTimeout)"):
		class = "hang"
	}
	return fmt.Sprintf("%d: %s", id, class)
}

func hostileOptions() []runinference.Option {
	return []runinference.Option{runinference.MaxBatchSize(16), runinference.MemoryBudget(64 << 20),
		runinference.InferenceTimeout(100 * time.Millisecond)}
}

func TestHostileElementsGoToFailures(t *testing.T) {
	holdStuckRuns(t)
	const n = 10_000
	spec := hostileModel(t)
	var in []any
	var good, failed []any
	classes := map[string]int{}
	for i := range n {
		in = append(in, i)
		if c := hostileClass(i); c != "" {
			failed = append(failed, fmt.Sprintf("%d: %s", i, c))
			classes[c]++
		} else {
			good = append(good, fmt.Sprintf("%d: %g", i, wantGood(i)))
		}
	}
	t.Logf("%d elements, %d hostile: %v", n, len(failed), classes)
	p, s := beam.NewPipelineWithRoot()
	ids := beam.Create(s, in...)
	keyed := beam.ParDo(s, &hostileElementFn{}, ids)
	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, keyed, hostileOptions()...)
	// Equal as multisets: every element once, in one output or the other.
	passert.Equals(s, beam.ParDo(s, classifyResult, results), good...)
	passert.Equals(s, beam.ParDo(s, classifyFailure, failures), failed...)
	ptest.RunAndValidate(t, p)
}

// Without the failures output, each class fails the job with an error
// naming the element's key; the test process goes on to the next.
func TestHostileElementFailsJobWithoutFailuresOutput(t *testing.T) {
	holdStuckRuns(t)
	spec := hostileModel(t)
	for _, hostile := range []int{7, 107, 207, 307, 807, 407} { // bomb, empty, panic, hang, stuck hang, shape
		t.Run(hostileClass(hostile)+strconv.Itoa(hostile), func(t *testing.T) {
			in := []any{0, 1, 2, 3, hostile, 5, 6}
			p, s := beam.NewPipelineWithRoot()
			keyed := beam.ParDo(s, &hostileElementFn{}, beam.Create(s, in...))
			runinference.RunInferenceKeyed(s, spec, keyed, hostileOptions()...)
			err := ptest.Run(p)
			if err == nil {
				t.Fatal("the pipeline succeeded")
			}
			if want := fmt.Sprintf("with key %d", hostile); !strings.Contains(err.Error(), want) {
				t.Errorf("error does not say %q: %v", want, err)
			}
		})
	}
}

// hostileElementFn turns an id into KV<id, Example>.
type hostileElementFn struct{}

func (*hostileElementFn) ProcessElement(id int) (int, inference.Example) {
	return id, hostileElement(id)
}

func init() {
	register.DoFn1x2[int, int, inference.Example](&hostileElementFn{})
}

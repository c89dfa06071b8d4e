package runinference_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
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

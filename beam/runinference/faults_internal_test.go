package runinference

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// A user's own loader and model, which misbehave on rows whose first value
// is one of the markers below, as models written outside this project may.
func init() { inference.RegisterLoader("hostile", loadHostile) }

const (
	outOfRange = -1 // Run indexes past its input: a runtime panic
	extraRow   = -2 // Run returns an output with one row too many
	scalarOut  = -3 // Run returns a scalar output
	goexit     = -4 // Run calls runtime.Goexit, as t.FailNow does
)

func loadHostile(context.Context, inference.Spec, inference.Backend) (inference.Model, error) {
	return hostileModel{}, nil
}

type hostileModel struct{}

func (hostileModel) Inputs() []inference.TensorInfo {
	return []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 2}}}
}

func (hostileModel) Outputs() []inference.TensorInfo {
	return []inference.TensorInfo{{Name: "y", DType: inference.Float32, Shape: []int{inference.Dynamic, 2}}}
}

func (hostileModel) ByteSize() int64 { return 0 }
func (hostileModel) Close() error    { return nil }

func (hostileModel) Run(_ context.Context, in map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	xs, err := inference.Data[float32](in["x"])
	if err != nil {
		return nil, err
	}
	rows := len(xs) / 2
	shape := []int{rows, 2}
	for r := range rows {
		switch xs[2*r] {
		case outOfRange:
			_ = xs[len(xs)+r]
		case extraRow:
			shape[0]++
		case scalarOut:
			shape = nil
		case goexit:
			runtime.Goexit()
		}
	}
	n, _ := inference.NumElements(shape)
	y, err := inference.New(shape, make([]float32, n))
	return map[string]inference.Tensor{"y": y}, err
}

// collector is a bundleRunner that keeps what it emits.
func collector(fn *inferFn) (*bundleRunner, *[]PredictionResult, *[]Failure) {
	var results []PredictionResult
	var failures []Failure
	return &bundleRunner{
		fn:   fn,
		emit: func(_ beam.EventTime, r PredictionResult) { results = append(results, r) },
		fail: func(_ beam.EventTime, f Failure) { failures = append(failures, f) },
	}, &results, &failures
}

// A user's model that panics with a runtime error, or returns outputs that
// do not split into one row per element, or ends its goroutine, fails only
// the elements that cause it: a panic or a Goexit at stage inference (a
// panic with its message and frames), malformed outputs at stage output.
func TestHostileUserModel(t *testing.T) {
	spec := inference.Spec{URI: "hostile://" + t.Name(), Format: "hostile"}
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 8}, Failures: true}}
	r, results, failures := collector(fn)
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	var exs []inference.Example
	for i := range 16 {
		x0 := float32(i)
		switch i {
		case 3:
			x0 = outOfRange
		case 9:
			x0 = extraRow
		case 14:
			x0 = scalarOut
		case 15:
			x0 = goexit
		}
		exs = append(exs, example(x0, float32(i)))
	}
	if err := r.bundle(ctx, exs); err != nil {
		t.Fatal(err)
	}
	if len(*results) != 12 || len(*failures) != 4 {
		t.Fatalf("%d results and %d failures, want 12 and 4: %v", len(*results), len(*failures), *failures)
	}
	want := map[float32]struct {
		stage Stage
		kind  FailureKind
		says  []string
	}{
		outOfRange: {StageInference, KindPanic, []string{"inference: panic in Model.Run: runtime error: index out of range [2] with length 2 [at ", "runinference.hostileModel.Run (runinference/faults_internal_test.go:"}},
		extraRow:   {StageOutput, KindShape, []string{`output "y" is float32[2 2], want 1 rows along axis 0`}},
		scalarOut:  {StageOutput, KindShape, []string{`output "y" is float32[], want 1 rows along axis 0`}},
		goexit:     {StageInference, KindOther, []string{"Model.Run ended its goroutine (runtime.Goexit) without returning"}},
	}
	for _, f := range *failures {
		x, _ := inference.Data[float32](f.Example["x"])
		w := want[x[0]]
		if f.Stage != w.stage || f.Kind != w.kind {
			t.Errorf("element %v failed at stage %s (%s), want %s (%s): %s", x, f.Stage, f.Kind, w.stage, w.kind, f.Err)
		}
		for _, s := range w.says {
			if !strings.Contains(f.Err, s) {
				t.Errorf("element %v: error %q does not say %q", x, f.Err, s)
			}
		}
	}
}

// A panicking element is run in every batch that holds it as the batch is
// split: 8, 4, 2, 1 rows; the batches without it succeed.
func TestPanicSplitsBatch(t *testing.T) {
	spec := stub.Tag(stub.WithFault(stub.Echo(2), stub.Panic, -1), t.Name())
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 8}, Failures: true}}
	r, results, failures := collector(fn)
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	exs := make([]inference.Example, 8)
	for i := range exs {
		exs[i] = example(float32(i), 0)
	}
	exs[5] = example(-1, 5)
	model := fn.handle.Model().(*stub.Model)
	before := model.Stats().Runs // the model outlives a test run with -count
	if err := r.bundle(ctx, exs); err != nil {
		t.Fatal(err)
	}
	if len(*results) != 7 || len(*failures) != 1 || (*failures)[0].Stage != StageInference {
		t.Fatalf("%d results and failures %v, want 7 results and one failure at stage inference", len(*results), *failures)
	}
	if runs := model.Stats().Runs - before; runs != 7 {
		t.Errorf("%d runs, want 7: 8 rows, 4 and 4, 2 and 2, 1 and 1", runs)
	}
}

// A model that never returns does not block the bundle: each batch that
// holds the stuck element is abandoned at its deadline, and the abandoned
// runs keep the model referenced (so it is not closed under them) until
// they return.
func TestDeadlockDoesNotBlockBundle(t *testing.T) {
	spec := stub.Tag(stub.WithFault(stub.Echo(2), stub.Deadlock, -1), t.Name())
	const timeout = 20 * time.Millisecond
	for _, withFailures := range []bool{true, false} {
		t.Run(fmt.Sprintf("failures=%t", withFailures), func(t *testing.T) {
			before := inference.Shared().StatsFor(spec).Refs
			fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 2, InferenceTimeout: timeout}, Failures: withFailures}}
			r, results, failures := collector(fn)
			ctx := context.Background()
			if err := fn.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- r.bundle(ctx, []inference.Example{example(1, 1), example(-1, 2), example(3, 3)}) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the bundle is still blocked after a minute")
			}
			fn.Teardown()
			const says = "batch of 1 timed out after 20ms (InferenceTimeout): Model.Run did not return and was abandoned: context deadline exceeded"
			if withFailures {
				if err != nil || len(*results) != 2 || len(*failures) != 1 || (*failures)[0].Err != says {
					t.Errorf("bundle error %v, %d results, failures %v; want 2 results and one failure saying %q", err, len(*results), *failures, says)
				}
			} else if err == nil || !strings.Contains(err.Error(), "{x: float32[2] [-1 2]}") || !strings.Contains(err.Error(), says) {
				t.Errorf("bundle error %v, want one naming element [-1 2] and saying %q", err, says)
			}
			// Two abandoned runs (batch of 2, then 1) hold a reference each.
			if refs := inference.Shared().StatsFor(spec).Refs - before; refs != 2 {
				t.Errorf("%d references held after Teardown, want 2 (the abandoned runs')", refs)
			}
		})
	}
}

package runinference

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// Each sentinel gives its own kind, wrapped as the runtime wraps them; the
// two causes that both used to read "shape mismatch" (an index out of
// range, an extra input) are told apart; and an error wrapping several
// sentinels gets the first kind of the documented order.
func TestKindOf(t *testing.T) {
	inputs := []inference.TensorInfo{{Name: "input", DType: inference.Int64, Shape: []int{inference.Dynamic, 4}}}
	ids, err := inference.New([]int{4}, []int64{101, 2023, 2003, 102})
	if err != nil {
		t.Fatal(err)
	}
	short, err := inference.New([]int{2}, []int64{101, 102})
	if err != nil {
		t.Fatal(err)
	}
	_, extraInput := inference.Conform(inputs, inference.Example{"input": ids, "id": ids})
	_, missingInput := inference.Conform(inputs, inference.Example{})
	_, typeErr := inference.Conform(inputs, inference.Example{"input": example(1, 2, 3, 4)["x"]})
	_, shapeErr := inference.Conform(inputs, inference.Example{"input": short})
	panicked := func() (err error) {
		defer func() { err = inference.Recovered("Model.Run", recover()) }()
		panic("boom")
	}()
	indexErr := fmt.Errorf(`cpu: node "embed" (Gather): index 30522 is out of range for axis 0 of size 30522: %w`, inference.ErrIndexOutOfRange)

	for _, tc := range []struct {
		name string
		err  error
		want FailureKind
	}{
		{"index out of range", indexErr, KindIndexOutOfRange},
		{"division by zero", fmt.Errorf(`cpu: node "div" (Div): integer division by zero: input 1 holds 0: %w`, inference.ErrDivisionByZero), KindDivisionByZero},
		{"extra input (Conform)", extraInput, KindUnexpectedInput},
		{"missing input (Conform)", missingInput, KindMissingInput},
		{"missing output", fmt.Errorf(`output "logits": %w`, inference.ErrMissingOutput), KindMissingOutput},
		{"element type (Conform)", typeErr, KindElementType},
		{"shape (Conform)", shapeErr, KindShape},
		{"unsupported op", &inference.UnsupportedOpError{Op: "Loop"}, KindUnsupportedOp},
		{"unsupported type", &inference.UnsupportedOpError{Op: "Cast", Detail: "cast to element type DOUBLE (11)", Type: true}, KindUnsupportedType},
		{"unsupported type (decoder)", fmt.Errorf(`onnx: input "x": element type STRING (8): %w`, inference.ErrUnsupportedType), KindUnsupportedType},
		{"device memory", fmt.Errorf("cuda: alloc 2 GiB: %w", inference.ErrOutOfMemory), KindOutOfMemory},
		{"memory budget", &inference.ResourceError{What: "float32[1000 1000]", Bytes: 4e6, Budget: 1e6}, KindMemoryBudget},
		{"panic", panicked, KindPanic},
		{"deadline", &timeoutError{timeout: time.Second, rows: 1, abandoned: true}, KindDeadline},
		{"bad model", fmt.Errorf("onnx: graph has no output: %w", inference.ErrBadModel), KindBadModel},
		{"a model's own error", errors.New("tokenizer: unknown language"), KindOther},
		{"canceled", context.Canceled, KindOther},
		{"panic after the deadline", &timeoutError{timeout: time.Second, rows: 1, err: panicked}, KindPanic},
		{"over budget after the deadline", &timeoutError{timeout: time.Second, rows: 1, err: &inference.ResourceError{}}, KindDeadline},
		{"index and shape", fmt.Errorf("%w: %w", inference.ErrShape, inference.ErrIndexOutOfRange), KindIndexOutOfRange},
		{"extra input and type", errors.Join(typeErr, extraInput), KindUnexpectedInput},
	} {
		if got := kindOf(tc.err); got != tc.want {
			t.Errorf("%s: kindOf(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestFailureCoderRoundTrip(t *testing.T) {
	ids, err := inference.New([]int{3}, []int64{7, 8, 9})
	if err != nil {
		t.Fatal(err)
	}
	f := Failure{
		Example: inference.Example{"ids": ids, "x": example(1, 2)["x"]},
		Kind:    KindUnexpectedInput,
		Err:     `inference: example has tensor "ids", model inputs are [x]: inference: unexpected input`,
		Stage:   StageInput,
		ModelID: inference.ModelID{URI: "stub://echo/2", Instance: "3"},
	}
	b, err := encodeFailure(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFailure(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != f.Kind || got.Err != f.Err || got.Stage != f.Stage || got.ModelID != f.ModelID ||
		len(got.Example) != 2 || !inference.Equal(got.Example["ids"], ids) || !inference.Equal(got.Example["x"], f.Example["x"]) {
		t.Errorf("decoded %+v, want %+v", got, f)
	}

	// The encoding from before Kind (four strings) decodes, as KindOther.
	old, err := inference.AppendTensors(nil, f.Example)
	if err != nil {
		t.Fatal(err)
	}
	old = appendStrings(old, f.Err, string(f.Stage), f.ModelID.URI, f.ModelID.Instance)
	if got, err := decodeFailure(old); err != nil || got.Kind != KindOther || got.Err != f.Err || got.ModelID != f.ModelID {
		t.Errorf("old encoding decoded to %+v, %v; want the failure with KindOther", got, err)
	}

	for _, cut := range []int{1, len(b) - 1} {
		if _, err := decodeFailure(b[:cut]); err == nil {
			t.Errorf("decoding %d of %d bytes succeeded, want an error", cut, len(b))
		}
	}
	if _, err := decodeFailure(append(b, 0)); err == nil || !strings.Contains(err.Error(), "decode Failure") {
		t.Errorf("decoding with a trailing byte: error %v, want one naming Failure", err)
	}
}

// String shows the element's first values, the stage, the kind and the
// message on one line, however large the element or long the message.
func TestFailureString(t *testing.T) {
	ids := make([]int64, 128)
	for i := range ids {
		ids[i] = int64(1000 + i)
	}
	idsT, err := inference.New([]int{128}, ids)
	if err != nil {
		t.Fatal(err)
	}
	mask, err := inference.New([]int{2}, []bool{true, false})
	if err != nil {
		t.Fatal(err)
	}
	f := Failure{
		Example: inference.Example{"ids": idsT, "mask": mask, "x": example(0.5, 0.25, 2)["x"]},
		Kind:    KindElementType,
		Err:     `inference: input "ids": element type int64, want float32: inference: element type mismatch`,
		Stage:   StageInput,
	}
	want := `{ids: int64[128] [1000 1001 1002 1003 …], mask: bool[2] [true false], x: float32[3] [0.5 0.25 2]} failed at stage input (element_type): ` + f.Err
	if got := f.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}

	// A long message (a panic's frames) and many tensors stay bounded.
	many := inference.Example{}
	for i := range 20 {
		many[fmt.Sprintf("t%02d", i)] = idsT
	}
	long := Failure{Example: many, Kind: KindPanic, Stage: StageInference, Err: strings.Repeat("frame (file.go:1); ", 1000)}
	got := long.String()
	if len(got) > 1000 || strings.Contains(got, "\n") {
		t.Errorf("String() of a failure with 20 tensors and a %d-byte message is %d bytes (want at most 1000, one line):\n%s", len(long.Err), len(got), got)
	}
	for _, part := range []string{"{t00: int64[128] [1000 1001 1002 1003 …], ", "t07: int64[128]", ", … 12 more}", "failed at stage inference (panic): frame (file.go:1); ", "…"} {
		if !strings.Contains(got, part) {
			t.Errorf("String() lacks %q:\n%s", part, got)
		}
	}
	if strings.Contains(got, "t08") {
		t.Errorf("String() shows more than %d tensors:\n%s", maxTensorsShown, got)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ααααααα", 10, "ααα…"}, // 2-byte runes: never cut inside one
	} {
		got := truncate(tc.s, tc.n)
		if got != tc.want || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// int64 examples for a model that takes float32 "x": every one fails at
// stage input with kind element_type.
func wrongType(n int) []inference.Example {
	exs := make([]inference.Example, n)
	for i := range exs {
		x, err := inference.New([]int{2}, []int64{int64(i), 0})
		if err != nil {
			panic(err)
		}
		exs[i] = inference.Example{"x": x}
	}
	return exs
}

func goodRows(n int) []inference.Example {
	exs := make([]inference.Example, n)
	for i := range exs {
		exs[i] = example(float32(i), 1)
	}
	return exs
}

// MaxFailureRate fails the bundle at the first outcome (a result as well
// as a failure) past minElements that puts the instance over the limit,
// counting over all the instance's bundles, with a one-line summary.
func TestMaxFailureRate(t *testing.T) {
	ctx := context.Background()
	spec := stub.Tag(stub.Echo(2), t.Name())
	newRunner := func(fraction float64, minElements int) (*bundleRunner, *[]PredictionResult, *[]Failure) {
		c := config{MinBatchSize: 1, MaxBatchSize: 1}
		if err := MaxFailureRate(fraction, minElements)(&c); err != nil {
			t.Fatal(err)
		}
		fn := &inferFn{batcher{Spec: spec, Config: c, Failures: true}}
		if err := fn.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fn.Teardown)
		return collector(fn)
	}

	t.Run("every element of the wrong type", func(t *testing.T) {
		r, _, failures := newRunner(0.1, 5)
		err := r.bundle(ctx, wrongType(100))
		want := fmt.Sprintf(`RunInference: 5 of 5 elements failed, a fraction of 1 over MaxFailureRate(0.1, 5), model %v; by kind: element_type: 5 (first: inference: input "x": element type int64, want float32: inference: element type mismatch)`, spec)
		if err == nil || err.Error() != want {
			t.Errorf("bundle error\n%v\nwant\n%s", err, want)
		}
		if len(*failures) != 5 {
			t.Errorf("%d failures emitted before the bundle failed, want 5", len(*failures))
		}
	})

	t.Run("a result past minElements", func(t *testing.T) {
		// Four failures, then a result: the fifth outcome passes the limit.
		r, results, _ := newRunner(0.5, 5)
		err := r.bundle(ctx, append(wrongType(4), goodRows(10)...))
		if err == nil || !strings.HasPrefix(err.Error(), "RunInference: 4 of 5 elements failed, a fraction of 0.8 over MaxFailureRate(0.5, 5)") {
			t.Errorf("bundle error %v, want 4 of 5 failed", err)
		}
		if len(*results) != 1 {
			t.Errorf("%d results before the bundle failed, want 1", len(*results))
		}
	})

	t.Run("counted over bundles", func(t *testing.T) {
		r, _, _ := newRunner(0.1, 5)
		if err := r.bundle(ctx, append(goodRows(9), wrongType(1)...)); err != nil { // 1 of 10
			t.Fatalf("bundle 1: %v", err)
		}
		if err := r.bundle(ctx, append(goodRows(9), wrongType(1)...)); err != nil { // 2 of 20
			t.Fatalf("bundle 2: %v", err)
		}
		err := r.bundle(ctx, append(goodRows(1), wrongType(2)...)) // 3 of 22, then 4 of 23
		if err == nil || !strings.HasPrefix(err.Error(), "RunInference: 3 of 22 elements failed") {
			t.Errorf("bundle 3: error %v, want 3 of 22 elements failed", err)
		}
	})

	t.Run("several kinds, most frequent first", func(t *testing.T) {
		r, _, _ := newRunner(0.9, 4)
		mixed := []inference.Example{example(1, 2, 3), wrongType(1)[0], wrongType(1)[0], wrongType(1)[0]}
		err := r.bundle(ctx, mixed)
		if err == nil || !strings.Contains(err.Error(), `; by kind: element_type: 3 (first: inference: input "x": element type int64, want float32: inference: element type mismatch); shape: 1 (first: inference: input "x": shape [3], want [2]`) {
			t.Errorf("bundle error %v, want element_type then shape", err)
		}
	})
}

// captureLogger keeps the warnings logged through Beam's log package.
type captureLogger struct {
	mu       sync.Mutex
	warnings []string
}

func (l *captureLogger) Log(_ context.Context, sev log.Severity, _ int, msg string) {
	if sev == log.SevWarn {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.warnings = append(l.warnings, msg)
	}
}

// A bundle whose failures dominate (more than half, at least 10 elements)
// gets one warning line with its failures by kind, without MaxFailureRate;
// other bundles get none.
func TestWarningWhenFailuresDominateBundle(t *testing.T) {
	logs := &captureLogger{}
	log.SetLogger(logs)
	defer log.SetLogger(&log.Structural{}) // the package's default: no pipeline has run yet in this binary

	ctx := context.Background()
	spec := stub.Tag(stub.Echo(2), t.Name())
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 4}, Failures: true}}
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	r, _, _ := collector(fn)
	for _, tc := range []struct {
		name       string
		bad, good  int
		wantWarned bool
	}{
		{"6 of 10", 6, 4, true},
		{"5 of 10", 5, 5, false},
		{"9 of 9", 9, 0, false},
		{"30 of 30", 30, 0, true},
	} {
		logs.warnings = nil
		if err := r.bundle(ctx, append(goodRows(tc.good), wrongType(tc.bad)...)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !tc.wantWarned {
			if len(logs.warnings) != 0 {
				t.Errorf("%s: warnings %q, want none", tc.name, logs.warnings)
			}
			continue
		}
		want := fmt.Sprintf(`RunInference: %d of %d elements of a bundle failed, model %v; by kind: element_type: %d (first: inference: input "x": element type int64, want float32: inference: element type mismatch) (see MaxFailureRate to fail the job instead)`,
			tc.bad, tc.bad+tc.good, spec, tc.bad)
		if len(logs.warnings) != 1 || logs.warnings[0] != want {
			t.Errorf("%s: warnings\n%q\nwant one:\n%q", tc.name, logs.warnings, want)
		}
	}
}

// Without the failures output, the bundle error's first line names a
// keyed element's key.
func TestBundleErrorNamesKey(t *testing.T) {
	ctx := context.Background()
	spec := stub.Tag(stub.Echo(2), t.Name())
	fn := &keyedFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 4}}}
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	emit := func(beam.EventTime, beam.X, PredictionResult) {}
	fail := func(beam.EventTime, beam.X, Failure) {}
	if err := fn.StartBundle(ctx, emit, fail); err != nil {
		t.Fatal(err)
	}
	err := fn.ProcessElement(ctx, nil, 0, "row-17", inference.Example{"x": example(1, 2)["x"], "id": example(17)["x"]}, emit, fail)
	want := `RunInference: element {id: float32[1] [17], x: float32[2] [1 2]} with key "row-17" failed at stage input (unexpected_input): inference: example has tensor "id", model inputs are [x]: inference: unexpected input`
	if err == nil || strings.Split(err.Error(), "\n")[0] != want {
		t.Errorf("bundle error\n%v\nwant first line\n%s", err, want)
	}
	if !errors.Is(err, inference.ErrUnexpectedInput) {
		t.Errorf("bundle error %v does not wrap inference.ErrUnexpectedInput", err)
	}
}

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
		outOfRange: {StageInference, KindPanic, []string{"inference: panic in Model.Run: runtime error: index out of range [2] with length 2 [at ", "runinference.hostileModel.Run (runinference/failures_internal_test.go:"}},
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

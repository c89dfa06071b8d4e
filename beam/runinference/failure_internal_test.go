package runinference

import (
	"context"
	"errors"
	"fmt"
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

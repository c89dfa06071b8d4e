package runinference

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func example(vals ...float32) inference.Example {
	t, err := inference.New([]int{len(vals)}, vals)
	if err != nil {
		panic(err)
	}
	return inference.Example{"x": t}
}

// bundleRunner drives one DoFn instance through bundles the way the Go SDK
// harness does: Setup once, then StartBundle, ProcessElement for each
// element and FinishBundle per bundle, and Teardown at the end.
type bundleRunner struct {
	fn      *inferFn
	emit    func(beam.EventTime, PredictionResult)
	fail    func(beam.EventTime, Failure)
	elemsTS mtime.Time
}

func (r *bundleRunner) bundle(ctx context.Context, exs []inference.Example) error {
	if err := r.fn.StartBundle(ctx, r.emit, r.fail); err != nil {
		return err
	}
	for _, ex := range exs {
		if err := r.fn.ProcessElement(ctx, window.GlobalWindow{}, r.elemsTS, ex, r.emit, r.fail); err != nil {
			return err
		}
	}
	return r.fn.FinishBundle(ctx, r.emit, r.fail)
}

// Many DoFn instances on concurrent goroutines, as the SDK harness makes for
// concurrent bundles, share one model load, emit every element exactly once
// with its value, and give their references back at Teardown. Run with
// -race: the cache, the batcher and the stub model share state.
func TestConcurrentBundlesShareOneModel(t *testing.T) {
	const workers, bundles, perBundle = 16, 25, 25 // 10,000 elements
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), -1), t.Name())
	ctx := context.Background()

	var mu sync.Mutex
	seen := map[int]int{}
	var failures []Failure
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			r := &bundleRunner{
				fn: &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 8}, Failures: true}},
				emit: func(_ beam.EventTime, p PredictionResult) {
					x, _ := inference.Data[float32](p.Example["x"])
					y, _ := inference.Data[float32](p.Outputs.Get("y"))
					mu.Lock()
					defer mu.Unlock()
					if len(y) == 2 && x[0] == y[0] && x[1] == y[1] {
						seen[int(x[1])]++
					} else {
						seen[-1]++
					}
				},
				fail: func(_ beam.EventTime, f Failure) {
					mu.Lock()
					defer mu.Unlock()
					failures = append(failures, f)
				},
			}
			if err := r.fn.Setup(ctx); err != nil {
				errs <- err
				return
			}
			defer r.fn.Teardown()
			for b := range bundles {
				exs := make([]inference.Example, perBundle)
				for i := range exs {
					id := (w*bundles+b)*perBundle + i
					exs[i] = example(float32(id%7), float32(id))
				}
				if err := r.bundle(ctx, exs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(failures) != 0 {
		t.Fatalf("%d failures, first: %v", len(failures), failures[0])
	}
	for id := range workers * bundles * perBundle {
		if seen[id] != 1 {
			t.Fatalf("element %d emitted %d times, want once", id, seen[id])
		}
	}
	if len(seen) != workers*bundles*perBundle {
		t.Fatalf("%d distinct outputs, want %d (wrong values: %d)", len(seen), workers*bundles*perBundle, seen[-1])
	}
	st := inference.Shared().StatsFor(spec)
	if st.Loads != 1 || st.Hits != workers-1 || st.Refs != 0 || st.Releases != workers {
		t.Errorf("cache stats %+v, want 1 load, %d hits, %d releases and no reference left", st, workers-1, workers)
	}
}

// A failing element without the failures output fails the bundle with an
// error whose first line names it (with its first values), the stage, the
// kind and the cause, and whose second line names the model, the event
// time and the window; the good elements of its bundle are emitted before
// the error only as Beam then discards the bundle's output and retries it.
func TestBundleErrorNamesElement(t *testing.T) {
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), -1), t.Name())
	r := &bundleRunner{
		fn:   &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 4}}},
		emit: func(beam.EventTime, PredictionResult) {},
		fail: func(_ beam.EventTime, f Failure) { t.Errorf("failure emitted without the failures output: %v", f) },
	}
	ctx := context.Background()
	if err := r.fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.fn.Teardown()
	err := r.bundle(ctx, []inference.Example{example(1, 1), example(-1, 42), example(2, 2)})
	if err == nil {
		t.Fatal("bundle with a failing element succeeded, want an error")
	}
	want := []string{
		"RunInference: element {x: float32[2] [-1 42]} failed at stage inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail",
		fmt.Sprintf("\tmodel %v, event time %v, window [*]", spec, r.elemsTS),
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("bundle error lines\n%q\nwant\n%q", got, want)
	}
}

// MaxBatchBytes cuts batches by size, but never below MinBatchSize; a
// model's memory ceiling (inference.BatchLimiter) caps MaxBatchSize.
func TestMaxBatchBytes(t *testing.T) {
	for _, tc := range []struct {
		min, max int
		bytes    int64
		ceiling  int // stub.WithMaxBatch: inference.BatchLimiter
		want     []int
	}{
		{min: 1, max: 10, bytes: 24, want: []int{3, 3, 3, 1}}, // 8-byte examples: 3 fit in 24 bytes
		{min: 4, max: 10, bytes: 24, want: []int{4, 4, 2}},    // MinBatchSize wins over the byte cap
		{min: 1, max: 2, bytes: 1 << 20, want: []int{2, 2, 2, 2, 2}},
		{min: 1, max: 10, ceiling: 4, want: []int{4, 4, 2}}, // the model's memory ceiling (a GPU's) caps MaxBatchSize
	} {
		t.Run(fmt.Sprintf("min%d_max%d_bytes%d", tc.min, tc.max, tc.bytes), func(t *testing.T) {
			spec := stub.Tag(stub.WithRecording(stub.Echo(2)), t.Name())
			if tc.ceiling > 0 {
				spec = stub.WithMaxBatch(spec, tc.ceiling)
			}
			fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: tc.min, MaxBatchSize: tc.max, MaxBatchBytes: tc.bytes}}}
			r := &bundleRunner{fn: fn, emit: func(beam.EventTime, PredictionResult) {}, fail: func(beam.EventTime, Failure) {}}
			ctx := context.Background()
			if err := fn.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			defer fn.Teardown()
			exs := make([]inference.Example, 10)
			for i := range exs {
				exs[i] = example(float32(i), 0)
			}
			if err := r.bundle(ctx, exs); err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, b := range fn.handle.Model().(*stub.Model).Batches() {
				got = append(got, len(b))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("batch sizes %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkRunInferenceEcho measures what RunInference adds per element on
// top of the model: checking the example against the model's inputs,
// grouping, stacking, unstacking and emitting. The echo model copies its
// input, so almost all the time is the transform's own. ns/op is per
// element; batches of 64 rows of 16 float32.
func BenchmarkRunInferenceEcho(b *testing.B) {
	spec := stub.Tag(stub.Echo(16), b.Name())
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 64}}}
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		b.Fatal(err)
	}
	defer fn.Teardown()
	emit := func(beam.EventTime, PredictionResult) {}
	fail := func(beam.EventTime, Failure) {}
	ex := example(make([]float32, 16)...)
	if err := fn.StartBundle(ctx, emit, fail); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := fn.ProcessElement(ctx, window.GlobalWindow{}, 0, ex, emit, fail); err != nil {
			b.Fatal(err)
		}
	}
	if err := fn.FinishBundle(ctx, emit, fail); err != nil {
		b.Fatal(err)
	}
}

package runinference_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function2x1(secondsRow)
}

// secondsRow makes the example [v, seconds] of a value v the test stream
// added at its event time.
func secondsRow(ts beam.EventTime, v float64) inference.Example {
	return row(float32(v), float32(ts.ToTime().Unix()))
}

// runOnPrism runs p on prism without its splitting of bundles
// (withoutPrismSplits), under -runner=direct too: the direct runner has no
// state, timers or test stream, which the stateful path needs.
func runOnPrism(t *testing.T, p *beam.Pipeline) beam.PipelineResult {
	t.Helper()
	withoutPrismSplits(t) // the stateful path loses elements to prism's splits (prism_split_test.go)
	pr, err := beam.Run(context.Background(), "prism", p)
	if err != nil {
		t.Fatalf("Failed to execute job: %v", err)
	}
	return pr
}

// streamOf adds each group of values as one event at its element's
// seconds (value i at 20·i s), then advances processing time by gap, and
// ends with the watermark at infinity.
func streamOf(t *testing.T, gap time.Duration, groups ...[]float64) teststream.Config {
	t.Helper()
	c := teststream.NewConfig()
	for _, g := range groups {
		for _, v := range g {
			if err := c.AddElements(int64(v)*20_000, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.AdvanceWatermark(int64(g[len(g)-1])*20_000 + 1); err != nil {
			t.Fatal(err)
		}
		c.AdvanceProcessingTime(gap.Milliseconds())
	}
	if err := c.AdvanceWatermarkToInfinity(); err != nil {
		t.Fatal(err)
	}
	return c
}

// In a stream whose elements come one event at a time, MaxBatchDuration
// batches them across bundles: each group of elements that come within
// the duration is one batch (split at MaxBatchSize), which runs when the
// processing time passes the duration, and every element is predicted
// once, with its timestamp and its fixed window.
func TestMaxBatchDurationBatchesAcrossBundles(t *testing.T) {
	groups := [][]float64{{0, 1, 2}, {3, 4}, {5}, {6, 7, 8, 9}}
	for _, tc := range []struct {
		maxBatch    int
		wantBatches string
	}{
		{64, "[[0 1 2] [3 4] [5] [6 7 8 9]]"},
		{3, "[[0 1 2] [3 4] [5] [6 7 8] [9]]"},
	} {
		t.Run(fmt.Sprint("MaxBatchSize", tc.maxBatch), func(t *testing.T) {
			spec := stub.Tag(stub.WithRecording(stub.Echo(2)), t.Name())
			h, err := inference.Acquire(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Release()

			p, s := beam.NewPipelineWithRoot()
			col := beam.ParDo(s, secondsRow, teststream.Create(s, streamOf(t, 10*time.Second, groups...)))
			col = beam.WindowInto(s, window.NewFixedWindows(time.Minute), col)
			results := runinference.RunInference(s, spec, col, runinference.MaxBatchSize(tc.maxBatch),
				runinference.MaxBatchDuration(5*time.Second), runinference.BatchShards(1))
			var want []any
			for _, g := range groups {
				for _, v := range g {
					sec := int(v) * 20
					want = append(want, fmt.Sprintf("%v at %ds in [%ds, %ds)", []float32{float32(v), float32(sec)}, sec, sec/60*60, sec/60*60+60))
				}
			}
			passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, describeOutput, results)), want...)
			// Grouped in their windows, no result is late: the stateful
			// path holds the watermark at its earliest buffered element.
			// (Without the hold, the watermark passes 180 s before 6, 7
			// and 8 are predicted, and their window drops them.)
			grouped := beam.ParDo(s, describeSession, beam.GroupByKey(s, beam.ParDo(s, underOneKey, results)))
			passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), grouped),
				"[0s, 60s): [0 1 2]", "[60s, 120s): [3 4 5]", "[120s, 180s): [6 7 8]", "[180s, 240s): [9]")
			runOnPrism(t, p)

			batches := h.Model().(*stub.Model).Batches()
			for _, b := range batches {
				slices.Sort(b)
			}
			if fmt.Sprint(batches) != tc.wantBatches {
				t.Errorf("batches %v, want %v: one per group of elements within MaxBatchDuration, of at most %d", batches, tc.wantBatches, tc.maxBatch)
			}
		})
	}
}

// timedInput is n examples [i, 20·i] at 20·i seconds.
func timedInput(s beam.Scope, n int) beam.PCollection {
	var in []inference.Example
	for i := range n {
		in = append(in, row(float32(i), float32(20*i)))
	}
	return beam.ParDo(s, stamp, beam.CreateList(s, in))
}

// With sliding windows, an element lies in several windows: the stateful
// path predicts it once and puts its result back into each of them.
func TestMaxBatchDurationSlidingWindows(t *testing.T) {
	const n, step, size, period = 12, 20, 60, 30
	spec := stub.Tag(stub.WithRecording(stub.Echo(2)), t.Name())
	h, err := inference.Acquire(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()

	p, s := beam.NewPipelineWithRoot()
	col := beam.WindowInto(s, window.NewSlidingWindows(period*time.Second, size*time.Second), timedInput(s, n))
	results := runinference.RunInference(s, spec, col, runinference.MaxBatchDuration(time.Second), runinference.BatchShards(2))
	var want []any
	for i := range n {
		sec := i * step
		for start := sec / period * period; start > sec-size; start -= period {
			want = append(want, fmt.Sprintf("%v at %ds in [%ds, %ds)", []float32{float32(i), float32(sec)}, sec, start, start+size))
		}
	}
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), beam.ParDo(s, describeOutput, results)), want...)
	runOnPrism(t, p)

	var rows, wantRows []float32
	for _, b := range h.Model().(*stub.Model).Batches() {
		rows = append(rows, b...)
	}
	for i := range n {
		wantRows = append(wantRows, float32(i))
	}
	slices.Sort(rows)
	if !slices.Equal(rows, wantRows) {
		t.Errorf("the model ran rows %v, want each of %v once", rows, wantRows)
	}
}

func init() {
	register.Function1x2(underOneKey)
	register.Function3x1(describeSession)
}

func underOneKey(r runinference.PredictionResult) (string, runinference.PredictionResult) {
	return "", r
}

// describeSession prints a window and the first values of its results.
func describeSession(w beam.Window, _ string, rs func(*runinference.PredictionResult) bool) string {
	iw := w.(window.IntervalWindow)
	var firsts []float32
	var r runinference.PredictionResult
	for rs(&r) {
		firsts = append(firsts, values(r.Outputs.Get("y"))[0])
	}
	slices.Sort(firsts)
	return fmt.Sprintf("[%ds, %ds): %v", iw.Start.ToTime().Unix(), iw.End.ToTime().Unix(), firsts)
}

// With session windows, the results' windows merge at the next grouping
// into the sessions of the input. One shard, so that its batch is emitted
// in one timer firing: with three, prism v2.77 split the first session in
// 25 runs of 70 ([0s, 30s) alone, then [20s, 70s)). That is prism's, not
// the holds': each shard's hold was in place until its timer fired, the
// watermark stood at the last shard's hold (40 s), and prism fired 0's
// window [0s, 30s) with 20 waiting in [20s, 50s), as it fires a session
// when the watermark passes the end of one element's own window
// (TestPrismSplitsSessionsAcrossShards, prism_sessions_test.go; BatchShards
// documents the limit).
func TestMaxBatchDurationSessions(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	// Elements at 0, 20, 40, then 100, 120 s, then 200 s: with a gap of 30 s,
	// three sessions.
	var in []inference.Example
	for _, sec := range []int{0, 20, 40, 100, 120, 200} {
		in = append(in, row(float32(sec), float32(sec)))
	}
	col := beam.WindowInto(s, window.NewSessions(30*time.Second), beam.ParDo(s, stamp, beam.CreateList(s, in)))
	results := runinference.RunInference(s, stub.Echo(2), col, runinference.MaxBatchDuration(time.Second), runinference.BatchShards(1))
	sessions := beam.ParDo(s, describeSession, beam.GroupByKey(s, beam.ParDo(s, underOneKey, results)))
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), sessions),
		"[0s, 70s): [0 20 40]", "[100s, 150s): [100 120]", "[200s, 230s): [200]")
	runOnPrism(t, p)
}

// The keyed variant with failures keeps each result's key and sends a bad
// element to the failures output, on the stateful path as on the other.
func TestMaxBatchDurationKeyedWithFailures(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	in, _, _ := failingInput()
	col := beam.ParDo(s, keyByMod3, beam.CreateList(s, in[:24]))
	spec := stub.Tag(stub.WithFailures(stub.Echo(2), bad), t.Name())
	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, col, runinference.MaxBatchSize(8),
		runinference.MaxBatchDuration(time.Second), runinference.BatchShards(3))
	var want []any
	for _, ex := range in[:24] {
		if x := values(ex["x"]); x[0] != bad {
			want = append(want, fmt.Sprintf("k%d: %v -> %v", int(x[0])%3, x, x))
		}
	}
	passert.Equals(s, beam.ParDo(s, formatKeyed, results), want...)
	passert.Equals(s, beam.ParDo(s, describeKeyedFailure, failures),
		"k-1: [-1 5] at inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail (model true)",
		"k-1: [-1 20] at inference (other): stub: row 0 of 1 has x[0] = -1, marked to fail (model true)")
	runOnPrism(t, p)
}

func TestMaxBatchDurationOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		opt  runinference.Option
		want string
	}{
		{runinference.MaxBatchDuration(0), "MaxBatchDuration(0s): must be positive"},
		{runinference.MaxBatchDuration(-time.Second), "MaxBatchDuration(-1s): must be positive"},
		{runinference.BatchShards(0), "BatchShards(0): must be positive"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !contains(fmt.Sprint(r), tc.want) {
					t.Errorf("recovered %v, want a panic with %q", r, tc.want)
				}
			}()
			_, s := beam.NewPipelineWithRoot()
			runinference.RunInference(s, stub.Echo(2), beam.CreateList(s, []inference.Example{row(1, 2)}), tc.opt)
		}()
	}
}

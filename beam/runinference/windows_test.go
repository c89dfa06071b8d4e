package runinference_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x2(stamp)
	register.Function3x1(describeOutput)
}

// stamp gives an example [i, seconds] the event time of its second value.
func stamp(ex inference.Example) (beam.EventTime, inference.Example) {
	return mtime.FromTime(time.Unix(int64(values(ex["x"])[1]), 0)), ex
}

// describeOutput prints a result with the timestamp and window it carries.
func describeOutput(w beam.Window, ts beam.EventTime, r runinference.PredictionResult) string {
	iw := w.(window.IntervalWindow)
	return fmt.Sprintf("%v at %ds in [%ds, %ds)", values(r.Outputs.Get("y")), ts.ToTime().Unix(),
		iw.Start.ToTime().Unix(), iw.End.ToTime().Unix())
}

// Elements i = 0..29 lie at i·20 s, so each 1-minute window holds three.
// With MaxBatchSize 2 every window runs one full batch in ProcessElement and
// a batch of one at the end of the bundle: both paths must keep the window
// and the timestamp, and no batch may hold two windows.
func TestFixedWindowsKeepWindowAndTimestamp(t *testing.T) {
	const n, step, size = 30, 20, 60
	spec := stub.Tag(stub.WithRecording(stub.Echo(2)), t.Name())
	h, err := inference.Acquire(context.Background(), spec) // hold the model to read its record afterwards
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()

	p, s := beam.NewPipelineWithRoot()
	var in []inference.Example
	var want []any
	for i := range n {
		sec := i * step
		in = append(in, row(float32(i), float32(sec)))
		start := sec / size * size
		want = append(want, fmt.Sprintf("%v at %ds in [%ds, %ds)", []float32{float32(i), float32(sec)}, sec, start, start+size))
	}
	col := beam.WindowInto(s, window.NewFixedWindows(size*time.Second), beam.ParDo(s, stamp, beam.CreateList(s, in)))
	results := runinference.RunInference(s, spec, col, runinference.MaxBatchSize(2))
	described := beam.ParDo(s, describeOutput, results)
	passert.Equals(s, beam.WindowInto(s, window.NewGlobalWindows(), described), want...)
	ptest.RunAndValidate(t, p)

	batches := h.Model().(*stub.Model).Batches()
	rows := 0
	for _, b := range batches {
		rows += len(b)
		for _, first := range b[1:] {
			if int(first)*step/size != int(b[0])*step/size {
				t.Errorf("batch %v mixes windows", b)
			}
		}
	}
	if rows != n {
		t.Errorf("batches %v hold %d rows, want %d", batches, rows, n)
	}
}

func TestSlidingWindowsRefused(t *testing.T) {
	_, s := beam.NewPipelineWithRoot()
	col := beam.WindowInto(s, window.NewSlidingWindows(time.Minute, 2*time.Minute), beam.CreateList(s, []inference.Example{row(1, 2)}))
	defer func() {
		if r := recover(); r == nil || !contains(fmt.Sprint(r), "windowing") {
			t.Errorf("RunInference on sliding windows: recovered %v, want a panic about windowing", r)
		}
	}()
	runinference.RunInference(s, stub.Echo(2), col)
}

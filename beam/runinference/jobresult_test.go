package runinference_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// The shape of prism's error for a failed bundle: the plan, then the
// DoFn's error quoted with escaped newlines.
const prismError = `job failed: bundle inst002 failed: process bundle failed for instruction inst002 using plan stage-002 : while executing Up for Plan[stage-002]:\n1: DataSource[S[stage-002_source@localhost:42245], i0] Out:26\n20: ParDo[runinference.keyedFn] Out:[15 19]\n\tcaused by:\nDoFn[UID:20, PID:e7, Name: github.com/beamml/beamml/beam/runinference.keyedFn] failed:\nRunInference: inference: load onnx:/m.onnx on auto: onnx: read /m.onnx: open /m.onnx: no such file or directory: inference: bad model"`

func TestJobErrorCause(t *testing.T) {
	got := runinference.JobErrorCause(errors.New(prismError))
	want := "RunInference: inference: load onnx:/m.onnx on auto: onnx: read /m.onnx: open /m.onnx: no such file or directory: inference: bad model"
	if got != want {
		t.Errorf("JobErrorCause = %q\nwant %q", got, want)
	}
	if got := runinference.JobErrorCause(errors.New("plain\nerror")); got != "plain | error" {
		t.Errorf("JobErrorCause of a plain error = %q", got)
	}
	long := runinference.JobErrorCause(errors.New(strings.Repeat("x", 2000)))
	if len(long) > 600+len("…") || strings.Contains(long, "\n") {
		t.Errorf("JobErrorCause of a long error: %d bytes, want at most 600 on one line", len(long))
	}
	if got := runinference.JobErrorCause(nil); got != "" {
		t.Errorf("JobErrorCause(nil) = %q", got)
	}
}

func TestMetricsSummary(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	runinference.RunInference(s, stub.Tag(stub.Echo(2), t.Name()), beam.CreateList(s, []inference.Example{row(1, 2), row(3, 4), row(5, 6)}),
		runinference.MaxBatchSize(2))
	pr := ptest.RunAndValidate(t, p)
	if got, want := runinference.MetricsSummary(pr), "num_inferences=3 failed_batches=0 batches=2 (sizes 1 to 2)"; got != want {
		t.Errorf("MetricsSummary = %q, want %q", got, want)
	}
	if got := runinference.MetricsSummary(nil); got != "no metrics from this runner" {
		t.Errorf("MetricsSummary(nil) = %q", got)
	}
}

package jobs

import (
	"errors"
	"strings"
	"testing"
)

// The shape of prism's error for a failed bundle: the plan, then the
// DoFn's error quoted with escaped newlines.
const prismError = `job failed: bundle inst002 failed: process bundle failed for instruction inst002 using plan stage-002 : while executing Up for Plan[stage-002]:\n1: DataSource[S[stage-002_source@localhost:42245], i0] Out:26\n20: ParDo[runinference.keyedFn] Out:[15 19]\n\tcaused by:\nDoFn[UID:20, PID:e7, Name: github.com/beamml/beamml/beam/runinference.keyedFn] failed:\nRunInference: inference: load onnx:/m.onnx on auto: onnx: read /m.onnx: open /m.onnx: no such file or directory: inference: bad model"`

func TestCause(t *testing.T) {
	got := Cause(errors.New(prismError))
	want := "RunInference: inference: load onnx:/m.onnx on auto: onnx: read /m.onnx: open /m.onnx: no such file or directory: inference: bad model"
	if got != want {
		t.Errorf("Cause = %q\nwant %q", got, want)
	}
	if got := Cause(errors.New("plain\nerror")); got != "plain | error" {
		t.Errorf("Cause of a plain error = %q", got)
	}
	long := Cause(errors.New(strings.Repeat("x", 2*maxCause)))
	if len(long) > maxCause+len("…") || strings.Contains(long, "\n") {
		t.Errorf("Cause of a long error: %d bytes, want at most %d on one line", len(long), maxCause)
	}
	var b strings.Builder
	fail(&b, "classify", "pipeline failed", errors.New(prismError))
	if s := b.String(); strings.Count(s, "\n") != 1 || !strings.HasPrefix(s, "classify: pipeline failed: RunInference: ") {
		t.Errorf("fail wrote %q, want one line naming the program and the cause", s)
	}
}

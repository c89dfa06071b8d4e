// Package jobs is what the examples do with a pipeline's result: when it
// failed, say why in one line on stderr and exit non-zero (Exit); when it
// ran, print RunInference's metrics in one line (Metrics).
//
// A runner's error for a failed job is long: prism's repeats the bundle's
// whole execution plan before the DoFn's own error, after "caused by:".
// The cause a user needs (RunInference's "element …: stage …: kind …:
// cause") is the innermost one, at the end.
package jobs

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/beamml/beamml/beam/runinference"
)

// maxCause bounds the line Cause returns: a terminal line or two.
const maxCause = 600

// Cause returns the innermost cause of a runner's error as one line: the
// text after its last "caused by:", with the DoFn's name line dropped
// when another follows, its lines joined with " | ", at most maxCause
// bytes. An error without "caused by:" gives its own text, so joined.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "caused by:"); i >= 0 {
		msg = msg[i+len("caused by:"):]
	}
	// Prism quotes the worker's error: its newlines arrive escaped.
	msg = strings.ReplaceAll(msg, `\n`, "\n")
	msg = strings.TrimRight(strings.TrimSpace(msg), `"`)
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > 1 && strings.HasPrefix(lines[0], "DoFn[") {
		lines = lines[1:] // "DoFn[UID:20, …] failed:": which DoFn, not why
	}
	line := strings.Join(lines, " | ")
	if len(line) > maxCause {
		line = line[:maxCause] + "…"
	}
	return line
}

// Exit writes "<prog>: <what>: <Cause(err)>" to stderr and exits with
// status 1. The examples call it rather than log.Fatal: beamlog's
// SetupLogging routes the log package through its handler at the level
// it is given, so a log.Fatal under "warn" exits with nothing printed.
func Exit(prog, what string, err error) {
	fail(os.Stderr, prog, what, err)
	os.Exit(1)
}

func fail(w io.Writer, prog, what string, err error) {
	fmt.Fprintf(w, "%s: %s: %s\n", prog, what, Cause(err))
}

// Metrics is RunInference's counters and batch sizes in one line:
// "num_inferences=N failed_batches=F batches=B (sizes MIN to MAX)".
func Metrics(pr beam.PipelineResult) string {
	if pr == nil {
		return "no metrics from this runner"
	}
	q := pr.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == runinference.Namespace })
	counts := map[string]int64{}
	for _, c := range q.Counters() {
		counts[c.Name()] += c.Result()
	}
	line := fmt.Sprintf("num_inferences=%d failed_batches=%d", counts["num_inferences"], counts["failed_batches_counter"])
	for _, d := range q.Distributions() {
		if d.Name() == "inference_request_batch_size" {
			v := d.Result()
			line += fmt.Sprintf(" batches=%d (sizes %d to %d)", v.Count, v.Min, v.Max)
		}
	}
	return line
}

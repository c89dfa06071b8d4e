package runinference

import (
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
)

// What a pipeline's main does with the job's outcome: say why it failed in
// one line, or summarize what RunInference did.

// maxCause bounds the line JobErrorCause returns: a terminal line or two.
const maxCause = 600

// JobErrorCause returns the innermost cause of the error a runner returned
// for a failed job, in one line, for a program to print before it exits
// non-zero. A runner's error is long: prism's repeats the bundle's whole
// execution plan before the DoFn's error, after "caused by:", and
// RunInference's own (the element, its key, the stage, the kind, the model
// and the cause) is the innermost. It is the text after the last "caused
// by:", without the line naming the DoFn when another follows, its lines
// joined with " | ", at most 600 bytes; an error without "caused by:" gives
// its own text, so joined.
func JobErrorCause(err error) string {
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

// MetricsSummary returns what RunInference did in a finished job, in one
// line, from the job's metrics: "num_inferences=N failed_batches=F
// batches=B (sizes MIN to MAX)", summed over the pipeline's RunInference
// transforms (the batch sizes where there is one); "no metrics from this
// runner" when the runner gives none.
func MetricsSummary(pr beam.PipelineResult) string {
	if pr == nil {
		return "no metrics from this runner"
	}
	q := pr.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == Namespace })
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

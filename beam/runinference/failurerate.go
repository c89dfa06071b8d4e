package runinference

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// A bundle whose failures dominate gets a warning in the worker's log even
// without MaxFailureRate: more than half of its elements failed, and it
// had at least warnMinElements, so that a small bundle with one bad
// element stays quiet.
const warnMinElements = 10

// How many kinds, and how much of each kind's first message, a summary of
// failures shows.
const (
	summaryKinds   = 3
	summaryMessage = 200
)

// tally counts the elements that got an outcome (a result or a Failure)
// and the failures among them by kind, with each kind's first message:
// what MaxFailureRate and the bundle warning report.
type tally struct {
	elements int
	failures int
	kinds    []kindCount // in the order first seen
}

type kindCount struct {
	kind  FailureKind
	count int
	first string // the first failure's message, cut at summaryMessage bytes
}

// add counts n elements with a result, or one failed element f.
func (t *tally) add(n int, f *Failure) {
	t.elements += n
	if f == nil {
		return
	}
	t.failures += n
	i := slices.IndexFunc(t.kinds, func(k kindCount) bool { return k.kind == f.Kind })
	if i < 0 {
		t.kinds = append(t.kinds, kindCount{kind: f.Kind, first: truncate(f.Err, summaryMessage)})
		i = len(t.kinds) - 1
	}
	t.kinds[i].count += n
}

// byKind summarizes the failures on one line, the most frequent kinds
// first: "element_type: 20 (first: inference: input …); shape: 1 (first: …)".
func (t *tally) byKind() string {
	kinds := slices.Clone(t.kinds)
	slices.SortStableFunc(kinds, func(a, b kindCount) int { return cmp.Compare(b.count, a.count) })
	var sb strings.Builder
	for i, k := range kinds {
		if i == summaryKinds {
			fmt.Fprintf(&sb, "; %d more kinds", len(kinds)-i)
			break
		}
		if i > 0 {
			sb.WriteString("; ")
		}
		fmt.Fprintf(&sb, "%s: %d (first: %s)", k.kind, k.count, oneLine(k.first))
	}
	return sb.String()
}

// oneLine keeps a message on the summary's line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// count records the outcome of n elements with a result, or of one failed
// element f, for this bundle and for the DoFn instance.
func (b *batcher) count(n int, f *Failure) {
	b.bundleTally.add(n, f)
	b.instanceTally.add(n, f)
}

// checkFailureRate fails the bundle when MaxFailureRate is set and the
// DoFn instance's failures have passed it.
func (b *batcher) checkFailureRate() error {
	t, c := &b.instanceTally, &b.Config
	if c.FailureRateMinElements == 0 || t.elements < c.FailureRateMinElements ||
		float64(t.failures) <= c.MaxFailureRate*float64(t.elements) {
		return nil
	}
	return fmt.Errorf("RunInference: %d of %d elements failed, a fraction of %.3g over MaxFailureRate(%g, %d), model %v; by kind: %s",
		t.failures, t.elements, float64(t.failures)/float64(t.elements), c.MaxFailureRate, c.FailureRateMinElements, b.Spec, t.byKind())
}

// warnIfFailuresDominate logs, at the end of a bundle, a warning with its
// failures by kind when they dominate it (see warnMinElements): a
// systematic mistake (a wrong element type for every row) that
// MaxFailureRate would catch, said in the log when it is not set.
func (b *batcher) warnIfFailuresDominate(ctx context.Context) {
	t := &b.bundleTally
	if t.elements < warnMinElements || 2*t.failures <= t.elements {
		return
	}
	log.Warnf(ctx, "RunInference: %d of %d elements of a bundle failed, model %v; by kind: %s (see MaxFailureRate to fail the job instead)",
		t.failures, t.elements, b.Spec, t.byKind())
}

package runinference_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// Prism splits the bundles of stateful stages and loses their state. A
// bundle that makes no progress for one of prism's progress ticks is split
// (runners/prism/internal/stage.go, Execute: "slow && unsplit && …
// s.sdfSplittable", every stage of a Go SDK pipeline), and
// engine/elementmanager.go's (*stageState).splitBundle then removes the
// key of every residual element from inprogressKeys, even where the
// primary, still running, holds elements of the same key. Another bundle
// of that key starts with a copy of its state taken before the primary
// commits (StateForBundle), and whichever commits last (PersistBundle)
// overwrites the other's state: buffered elements are lost, or run twice.
// RunInference's stateful path (MaxBatchDuration) runs a batch inside
// ProcessElement, so a batch slower than the tick is enough. The
// experiment prism_disable_sdf_split turns the splitting off.
const prismSplitsStatefulBundles = "prism v2.77.0 splits a slow bundle of a stateful stage (stage.go, Execute) and " +
	"releases the residual's keys while the primary still holds them (engine/elementmanager.go, splitBundle): " +
	"another bundle of the key runs on a stale copy of its state, and buffered elements are lost or run twice; " +
	"BEAMML_PRISM_REPRO=1 runs this reproducer"

// withoutPrismSplits runs the rest of the test with the experiment
// prism_disable_sdf_split, which the stateful path needs on prism.
func withoutPrismSplits(t *testing.T) {
	t.Helper()
	old := *jobopts.Experiments
	if slices.Contains(strings.Split(old, ","), "prism_disable_sdf_split") {
		return // set already, by this test or the flag
	}
	*jobopts.Experiments = strings.Trim(old+",prism_disable_sdf_split", ",")
	t.Cleanup(func() { *jobopts.Experiments = old })
}

func init() {
	register.Function1x2(toTwoShards)
	register.DoFn6x1[context.Context, state.Provider, timers.Provider, int, int64, func(int64), error](&slowBufferFn{})
	register.Emitter1[int64]()
}

func toTwoShards(v int64) (int, int64) { return int(v % 2), v }

// slowBufferFn is the stateful path reduced to its state: it buffers a
// shard's elements in a bag and, at every eighth, emits the bag and clears
// it after a pause, as a model's batch would take; a processing-time timer
// set at the first element emits what is left.
type slowBufferFn struct {
	Buffer state.Bag[int64]
	Count  state.Value[int64]
	Due    timers.ProcessingTime
}

func (f *slowBufferFn) ProcessElement(_ context.Context, sp state.Provider, tp timers.Provider, _ int, v int64, emit func(int64)) error {
	n, _, err := f.Count.Read(sp)
	if err != nil {
		return err
	}
	if err := f.Buffer.Add(sp, v); err != nil {
		return err
	}
	if n++; n == 1 {
		f.Due.Set(tp, time.Now().Add(100*time.Millisecond))
	}
	if n < 8 {
		return f.Count.Write(sp, n)
	}
	time.Sleep(100 * time.Millisecond) // the batch
	return f.flush(sp, emit)
}

func (f *slowBufferFn) OnTimer(_ context.Context, sp state.Provider, _ timers.Provider, _ int, _ timers.Context, emit func(int64)) error {
	return f.flush(sp, emit)
}

func (f *slowBufferFn) flush(sp state.Provider, emit func(int64)) error {
	buf, _, err := f.Buffer.Read(sp)
	if err != nil {
		return err
	}
	for _, v := range buf {
		emit(v)
	}
	if err := f.Buffer.Clear(sp); err != nil {
		return err
	}
	return f.Count.Clear(sp)
}

// Every element comes out of the slow stateful DoFn once; with prism's
// splitting on, some are lost or come out twice.
func TestPrismSplitsStatefulBundles(t *testing.T) {
	if os.Getenv("BEAMML_PRISM_REPRO") != "1" {
		t.Skip("NOT RUN: " + prismSplitsStatefulBundles)
	}
	const n = 400
	p, s := beam.NewPipelineWithRoot()
	in := make([]int64, n)
	want := make([]any, n)
	for i := range in {
		in[i], want[i] = int64(i), int64(i)
	}
	out := beam.ParDo(s, &slowBufferFn{
		Buffer: state.MakeBagState[int64]("buffer"),
		Count:  state.MakeValueState[int64]("count"),
		Due:    timers.InProcessingTime("due"),
	}, beam.ParDo(s, toTwoShards, beam.CreateList(s, in)))
	passert.Equals(s, out, want...)
	if _, err := beam.Run(context.Background(), "prism", p); err != nil { // with prism's splitting: not runOnPrism
		t.Fatalf("Failed to execute job: %v", err)
	}
}

// RunInference's stateful path with batches slower than prism's progress
// tick, on prism without its splitting (withoutPrismSplits): every element
// comes out once.
func TestMaxBatchDurationSlowBatchesLoseNothing(t *testing.T) {
	withoutPrismSplits(t)
	const n = 200
	p, s := beam.NewPipelineWithRoot()
	in := make([]inference.Example, n)
	want := make([]any, n)
	for i := range in {
		in[i], want[i] = row(float32(i), float32(-i)), i
	}
	spec := stub.Tag(stub.WithDelay(stub.Echo(2), 150*time.Millisecond), t.Name())
	results := runinference.RunInference(s, spec, beam.CreateList(s, in), runinference.MaxBatchSize(8),
		runinference.MaxBatchDuration(100*time.Millisecond), runinference.BatchShards(2))
	passert.Equals(s, beam.ParDo(s, checkEcho, results), want...)
	runOnPrism(t, p)
}

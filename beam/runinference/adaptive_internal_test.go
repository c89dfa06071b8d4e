package runinference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// linear is a model's batch latency fixed + perRow·n.
func linear(fixed, perRow time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration { return fixed + time.Duration(n)*perRow }
}

// simulate runs steps batches through s, each of s's size and taking
// latency(i, size) for batch i, and returns the sizes run. It fails t if a
// size leaves [s.min, s.max] or changes by more than twice or half.
func simulate(t *testing.T, s *batchSizer, steps int, latency func(i, n int) time.Duration) []int {
	t.Helper()
	sizes := make([]int, steps)
	for i := range sizes {
		n := s.size
		sizes[i] = n
		if n < s.min || n > s.max {
			t.Fatalf("batch %d: size %d outside [%d, %d]; sizes so far %v", i, n, s.min, s.max, sizes[:i+1])
		}
		if i > 0 && (n > 2*sizes[i-1] || 2*n < sizes[i-1]) {
			t.Fatalf("batch %d: size %d after %d, more than a step of 2; sizes so far %v", i, n, sizes[i-1], sizes[:i+1])
		}
		s.observe(n, latency(i, n))
	}
	return sizes
}

// noisy multiplies latency by a factor in [1-spread, 1+spread] drawn from a
// seeded generator, so that every run sees the same noise.
func noisy(latency func(n int) time.Duration, spread float64, seed uint64) func(i, n int) time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	return func(_, n int) time.Duration {
		return time.Duration(float64(latency(n)) * (1 + spread*(2*r.Float64()-1)))
	}
}

func exact(latency func(n int) time.Duration) func(i, n int) time.Duration {
	return func(_, n int) time.Duration { return latency(n) }
}

// settledAt reports the index of the first size from which every size is in
// [lo, hi], or -1.
func settledAt(sizes []int, lo, hi int) int {
	at := -1
	for i, n := range sizes {
		if n < lo || n > hi {
			at = -1
		} else if at < 0 {
			at = i
		}
	}
	return at
}

// With latency 2ms + 0.5ms·n and a target of 20ms the size whose latency is
// the target is 36: the sizer doubles from 1 while the fit lacks a second
// size, then reaches 36 and stays there.
func TestBatchSizerConverges(t *testing.T) {
	s := newBatchSizer(20*time.Millisecond, 1, 1000)
	sizes := simulate(t, s, 100, exact(linear(2*time.Millisecond, 500*time.Microsecond)))
	at := settledAt(sizes, 33, 39) // 36 ± 10%
	if at < 0 || at > 10 {
		t.Fatalf("sizes %v: settle within 36 ± 10%% at batch %d, want by batch 10", sizes, at)
	}
	if got := sizes[len(sizes)-1]; got != 36 {
		t.Errorf("last size %d, want 36; sizes %v", got, sizes)
	}
	t.Logf("settled at batch %d: %v", at, sizes[:at+1])
}

// A model whose fixed cost is most of the target (15ms + 0.1ms·n, target
// 20ms: 50 rows) converges too, more slowly: the fixed cost used is at
// most half the average latency (7.5ms here), which keeps the size steady
// under noisy latencies.
func TestBatchSizerFixedCostDominates(t *testing.T) {
	s := newBatchSizer(20*time.Millisecond, 1, 1000)
	sizes := simulate(t, s, 80, exact(linear(15*time.Millisecond, 100*time.Microsecond)))
	at := settledAt(sizes, 45, 55)
	if at < 0 || at > 45 {
		t.Fatalf("sizes %v: settle within 50 ± 10%% at batch %d, want by batch 45", sizes, at)
	}
	if got := sizes[len(sizes)-1]; got != 50 {
		t.Errorf("last size %d, want 50; sizes %v", got, sizes)
	}
	t.Logf("settled at batch %d: %v", at, sizes[:at+1])
}

// With latencies off by up to ±20% at random, the size stays near 36:
// within ±25% after it has settled, and within ±10% on average.
func TestBatchSizerNoise(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newBatchSizer(20*time.Millisecond, 1, 1000)
			sizes := simulate(t, s, 500, noisy(linear(2*time.Millisecond, 500*time.Microsecond), 0.2, seed))
			tail := sizes[20:]
			lo, hi := slices.Min(tail), slices.Max(tail)
			sum := 0
			for _, n := range tail {
				sum += n
			}
			mean := float64(sum) / float64(len(tail))
			t.Logf("after batch 20: sizes in [%d, %d], mean %.1f", lo, hi, mean)
			if lo < 27 || hi > 45 {
				t.Errorf("after batch 20, sizes in [%d, %d], want within [27, 45] (36 ± 25%%); first sizes %v", lo, hi, sizes[:40])
			}
			if mean < 32.4 || mean > 39.6 {
				t.Errorf("after batch 20, mean size %.1f, want 36 ± 10%%", mean)
			}
		})
	}
}

// When the cost per row triples (0.5ms to 1.5ms), the size falls from 36 to
// the new one, 12, within a few batches, halving at most per batch.
func TestBatchSizerShrinks(t *testing.T) {
	before, after := linear(2*time.Millisecond, 500*time.Microsecond), linear(2*time.Millisecond, 1500*time.Microsecond)
	const jump = 30
	s := newBatchSizer(20*time.Millisecond, 1, 1000)
	sizes := simulate(t, s, 80, func(i, n int) time.Duration {
		if i < jump {
			return before(n)
		}
		return after(n)
	})
	if sizes[jump] != 36 {
		t.Fatalf("size %d before the jump, want 36; sizes %v", sizes[jump], sizes)
	}
	if sizes[jump+1] >= 36 {
		t.Errorf("size %d after a batch over target, want less than 36; sizes %v", sizes[jump+1], sizes[jump:])
	}
	at := settledAt(sizes[jump:], 11, 13) // 12 ± 10%
	if at < 0 || at > 10 {
		t.Fatalf("sizes after the jump %v: settle within 12 ± 10%% at batch %d, want by batch 10", sizes[jump:], at)
	}
	t.Logf("after the jump, settled at batch %d: %v", at, sizes[jump:jump+at+1])
}

// The size never leaves [min, max]: it settles at max when the batch of max
// rows takes less than the target, and at min when the fixed cost alone
// passes it.
func TestBatchSizerBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max int
		latency  func(n int) time.Duration
		want     int
	}{
		{"max below the target's size", 1, 20, linear(2*time.Millisecond, 500*time.Microsecond), 20},
		{"fixed cost over the target", 4, 100, linear(30*time.Millisecond, 500*time.Microsecond), 4},
		{"rows cost nothing", 2, 500, linear(time.Millisecond, 0), 500},
		{"no measurable time", 1, 64, linear(0, 0), 64},
		{"min above the target's size", 50, 100, linear(2*time.Millisecond, 500*time.Microsecond), 50},
		{"min equals max", 8, 8, linear(2*time.Millisecond, 500*time.Microsecond), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBatchSizer(20*time.Millisecond, tc.min, tc.max)
			sizes := simulate(t, s, 40, exact(tc.latency))
			if got := sizes[len(sizes)-1]; got != tc.want {
				t.Errorf("sizes %v, settle at %d, want %d", sizes, got, tc.want)
			}
		})
	}

	// Random models, bounds and noise: simulate checks the bounds and the
	// step at every batch.
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 200 {
		lo := 1 + r.IntN(20)
		hi := lo + r.IntN(300)
		fixed := time.Duration(r.IntN(40_000)) * time.Microsecond
		perRow := time.Duration(r.IntN(2_000)) * time.Microsecond
		s := newBatchSizer(time.Duration(1+r.IntN(50))*time.Millisecond, lo, hi)
		simulate(t, s, 100, noisy(linear(fixed, perRow), r.Float64(), uint64(i)))
	}
}

// TargetBatchLatency must be positive.
func TestTargetBatchLatencyOption(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		func() {
			want := fmt.Sprintf("RunInference: TargetBatchLatency(%v): must be positive", d)
			defer func() {
				if r := recover(); r == nil || fmt.Sprint(r) != want {
					t.Errorf("TargetBatchLatency(%v) panicked with %v, want %q", d, r, want)
				}
			}()
			newConfig(stub.Echo(2), []Option{TargetBatchLatency(d)})
		}()
	}
	_, c := newConfig(stub.Echo(2), []Option{TargetBatchLatency(time.Second)})
	if c.TargetBatchLatency != time.Second {
		t.Errorf("config's TargetBatchLatency %v, want 1s", c.TargetBatchLatency)
	}
}

// runBatches runs elements elements through one inferFn in bundles of
// perBundle and returns the sizes of the batches the stub model ran.
func runBatches(t testing.TB, spec inference.Spec, c config, elements, perBundle int) []int {
	t.Helper()
	fn := &inferFn{batcher{Spec: stub.WithRecording(spec), Config: c}}
	r := &bundleRunner{fn: fn, emit: func(beam.EventTime, PredictionResult) {},
		fail: func(_ beam.EventTime, f Failure) { t.Errorf("failure: %v", f) }}
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	for start := 0; start < elements; start += perBundle {
		exs := make([]inference.Example, min(perBundle, elements-start))
		for i := range exs {
			exs[i] = example(float32(start+i), 0)
		}
		if err := r.bundle(ctx, exs); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for _, b := range fn.handle.Model().(*stub.Model).Batches() {
		sizes = append(sizes, len(b))
	}
	return sizes
}

func median(v []int) int {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// Through the DoFn, on a stub whose Run sleeps 2ms + 0.5ms per row, the
// batches grow from MinBatchSize to about 36 rows, the size whose latency
// is the 20ms target, across bundles. Sleeps overshoot on a busy machine,
// which makes batches smaller, so the band below 36 is wider.
func TestTargetBatchLatencyConverges(t *testing.T) {
	spec := stub.Tag(stub.WithLatency(stub.Echo(2), 2*time.Millisecond, 500*time.Microsecond), t.Name())
	c := config{MinBatchSize: 1, MaxBatchSize: 64, TargetBatchLatency: 20 * time.Millisecond}
	sizes := runBatches(t, spec, c, 1500, 500)
	t.Logf("batch sizes %v", sizes)
	if sizes[0] != 1 {
		t.Errorf("first batch of %d, want MinBatchSize, 1", sizes[0])
	}
	last := sizes[len(sizes)-12 : len(sizes)-1]
	if m := median(last); m < 27 || m > 40 {
		t.Errorf("median of the last batches %v is %d, want about 36 (27 to 40)", last, m)
	}
	if slices.Max(sizes) > 64 {
		t.Errorf("a batch of %d, over MaxBatchSize 64", slices.Max(sizes))
	}
}

// The batch size never passes the model's memory ceiling
// (inference.BatchLimiter) nor MaxBatchSize, though the target would allow
// 36 rows: it settles at the ceiling.
func TestTargetBatchLatencyCeiling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int
		ceiling int // stub.WithMaxBatch
	}{
		{"BatchLimiter", 64, 12},
		{"MaxBatchSize", 12, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := stub.Tag(stub.WithLatency(stub.Echo(2), 2*time.Millisecond, 500*time.Microsecond), t.Name())
			if tc.ceiling > 0 {
				spec = stub.WithMaxBatch(spec, tc.ceiling)
			}
			c := config{MinBatchSize: 1, MaxBatchSize: tc.max, TargetBatchLatency: 20 * time.Millisecond}
			sizes := runBatches(t, spec, c, 200, 100)
			t.Logf("batch sizes %v", sizes)
			if got := slices.Max(sizes); got != 12 {
				t.Errorf("largest batch %d, want the ceiling, 12; sizes %v", got, sizes)
			}
			// The last batch is what the bundle left.
			for _, n := range sizes[len(sizes)-6 : len(sizes)-1] {
				if n != 12 {
					t.Errorf("last batches %v, want the ceiling, 12", sizes[len(sizes)-6:len(sizes)-1])
					break
				}
			}
		})
	}
}

// BenchmarkAdaptiveBatchSize compares the throughput of fixed batch sizes
// with TargetBatchLatency's on a stub model whose batch of n rows takes
// 1ms + 20µs·n: the fixed cost dominates below 50 rows. A 10ms target
// allows 450 rows. rows/s is the throughput, rows/batch the mean batch
// size and ms/batch the mean time per batch, the transform's own
// included.
func BenchmarkAdaptiveBatchSize(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    config
	}{
		{"MaxBatchSize=1", config{MinBatchSize: 1, MaxBatchSize: 1}},
		{"MaxBatchSize=8", config{MinBatchSize: 1, MaxBatchSize: 8}},
		{"MaxBatchSize=64", config{MinBatchSize: 1, MaxBatchSize: 64}},
		{"TargetBatchLatency=10ms", config{MinBatchSize: 1, MaxBatchSize: 1024, TargetBatchLatency: 10 * time.Millisecond}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			spec := stub.Tag(stub.WithLatency(stub.Echo(16), time.Millisecond, 20*time.Microsecond), b.Name())
			fn := &inferFn{batcher{Spec: spec, Config: bc.c}}
			ctx := context.Background()
			if err := fn.Setup(ctx); err != nil {
				b.Fatal(err)
			}
			defer fn.Teardown()
			emit := func(beam.EventTime, PredictionResult) {}
			fail := func(_ beam.EventTime, f Failure) { b.Fatalf("failure: %v", f) }
			ex := example(make([]float32, 16)...)
			if err := fn.StartBundle(ctx, emit, fail); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := fn.ProcessElement(ctx, window.GlobalWindow{}, 0, ex, emit, fail); err != nil {
					b.Fatal(err)
				}
			}
			elapsed := b.Elapsed()
			st := fn.handle.Model().(*stub.Model).Stats()
			if err := fn.FinishBundle(ctx, emit, fail); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(st.Rows)/float64(st.Runs), "rows/batch")
			b.ReportMetric(elapsed.Seconds()*1000/float64(st.Runs), "ms/batch")
		})
	}
}

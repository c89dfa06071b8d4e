package runinference

import (
	"fmt"
	"math"
	"time"
)

// TargetBatchLatency sizes batches so that each batch's Model.Run takes
// about d, the latency that inference_batch_latency_micro_secs measures.
// d must be positive.
//
// A group of elements runs when it holds the current batch size, which
// starts at MinBatchSize. After each batch that the model runs without
// error, the size becomes (d − fixed) / perRow, rounded: the size whose
// latency the model latency = fixed + perRow·n, fitted to the batches run
// so far, predicts to be d. With n̄ and t̄ the means of those batches'
// sizes and latencies, each batch weighted 0.8ᵏ when k batches have run
// after it (so the last five or so count):
//
//   - fixed is the weighted least-squares intercept, kept within
//     [0, t̄/2], or 0 while the sizes' weighted standard deviation is under
//     n̄/10, when the intercept is mostly noise; perRow is (t̄ − fixed) / n̄
//     (when that is 0, the size doubles);
//   - while fixed is 0 for want of differing sizes and t̄ is under d, the
//     size grows by at least one, so that the fit gets a second size to
//     tell the fixed cost from the cost per row;
//   - the size at most doubles and at least halves per batch, and stays
//     within [MinBatchSize, MaxBatchSize], MaxBatchSize being capped by the
//     model's fixed batch dimension and its memory ceiling
//     (inference.BatchLimiter), as without this option.
//
// The size settles where t̄ equals d, or at MaxBatchSize when even that
// batch takes less than d, or at MinBatchSize when the model's fixed cost
// alone passes d. It is kept per DoFn instance and model across bundles,
// and shared by the model's groups (windows and tensor shapes): with
// ModelsByKey or WithModelUpdates, each model's batches are sized from its
// own latencies. MaxBatchBytes still cuts a batch short, the end of a
// bundle still runs what is left, and with MaxBatchDuration a shard still
// gathers up to MaxBatchSize elements, then runs them in batches of the
// current size.
func TargetBatchLatency(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("TargetBatchLatency(%v): must be positive", d)
		}
		c.TargetBatchLatency = d
		return nil
	}
}

// The constants of TargetBatchLatency's rule.
const (
	// sizerDecay is the factor by which a batch's weight falls with each
	// later batch.
	sizerDecay = 0.8
	// sizerMinSpread is the least standard deviation of the recent batch
	// sizes, as a fraction of their mean, at which the fitted fixed cost
	// is used.
	sizerMinSpread = 0.1
	// sizerMaxFixed is the largest fixed cost used, as a fraction of the
	// average latency. Below (fixed cost + target)/2 the size converges
	// whatever the true fixed cost; half the latency is below that near
	// the target.
	sizerMaxFixed = 0.5
	// sizerMaxStep is the most the size grows, or shrinks, by in one batch.
	sizerMaxStep = 2
)

// batchSizer is TargetBatchLatency's rule: it picks the size of the next
// batch from the latencies of the batches run so far. It is not safe for
// concurrent use.
type batchSizer struct {
	target   float64 // seconds
	min, max int
	size     int // the next batch's

	// Weighted sums over the batches seen, of 1, n, t, n² and n·t, for
	// batches of n rows that took t seconds; each batch's weight falls by
	// sizerDecay with each later batch.
	w, n, t, nn, nt float64
}

// newBatchSizer returns a sizer for target latency that starts at min and
// stays within [min, max]; it needs 1 ≤ min ≤ max.
func newBatchSizer(target time.Duration, min, max int) *batchSizer {
	return &batchSizer{target: target.Seconds(), min: min, max: max, size: min}
}

// observe takes a batch of n rows that took latency, and picks the next
// size.
func (s *batchSizer) observe(n int, latency time.Duration) {
	if n <= 0 {
		return
	}
	x, t := float64(n), max(latency.Seconds(), 0)
	s.w = sizerDecay*s.w + 1
	s.n = sizerDecay*s.n + x
	s.t = sizerDecay*s.t + t
	s.nn = sizerDecay*s.nn + x*x
	s.nt = sizerDecay*s.nt + x*t
	s.size = s.next()
}

// next is the size whose latency the fit predicts to be the target,
// within the bounds of TargetBatchLatency's rule.
func (s *batchSizer) next() int {
	meanN, meanT := s.n/s.w, s.t/s.w
	varN := s.nn/s.w - meanN*meanN
	fitted := varN >= (sizerMinSpread*meanN)*(sizerMinSpread*meanN)
	fixed := 0.0
	if fitted {
		perRow := (s.nt/s.w - meanN*meanT) / varN
		fixed = min(max(meanT-perRow*meanN, 0), sizerMaxFixed*meanT)
	}
	want := math.Inf(1) // rows that take no measurable time
	if perRow := (meanT - fixed) / meanN; perRow > 0 {
		want = (s.target - fixed) / perRow
	}
	size := float64(s.size)
	want = min(max(want, size/sizerMaxStep), size*sizerMaxStep)
	next := int(math.Round(want))
	if !fitted && meanT < s.target {
		next = max(next, s.size+1)
	}
	return min(max(next, s.min), s.max)
}

// batchLimit is the number of elements at which add runs a group of m's:
// m's largest batch, or with TargetBatchLatency m's sizer's size, which
// stays within [MinBatchSize, the largest batch] (the largest alone when
// it is less). Each model has its own sizer, fed its own latencies; when
// its largest batch changes (the model was acquired again), the sizer
// starts afresh.
func (b *batcher) batchLimit(m *batchModel) int {
	target, maxBatch := b.Config.TargetBatchLatency, m.info.maxBatch
	if target <= 0 {
		return maxBatch
	}
	if m.sizer == nil || m.sizer.max != maxBatch {
		m.sizer = newBatchSizer(target, min(b.Config.MinBatchSize, maxBatch), maxBatch)
	}
	return m.sizer.size
}

// observeLatency gives m's sizer, if any, the latency of a batch of n rows
// that the model ran without error.
func (m *batchModel) observeLatency(n int, latency time.Duration) {
	if m.sizer != nil {
		m.sizer.observe(n, latency)
	}
}

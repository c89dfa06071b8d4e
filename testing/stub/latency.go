package stub

import (
	"time"

	"github.com/beamml/beamml/inference"
)

// optDelayPerRow adds this long per row to each Run's delay (WithLatency).
const optDelayPerRow = "delay_per_row"

// WithLatency makes each Run of rows rows sleep fixed + perRow·rows before
// computing: a model whose batch latency grows with its batch size, with a
// fixed cost that dominates small batches, for tests of adaptive batch
// sizes. fixed replaces WithDelay's delay.
func WithLatency(s inference.Spec, fixed, perRow time.Duration) inference.Spec {
	return with(WithDelay(s, fixed), optDelayPerRow, perRow.String())
}

// runDelay is how long a Run of rows rows sleeps.
func (m *Model) runDelay(rows int) time.Duration {
	return m.delay + time.Duration(rows)*m.delayPerRow
}

package stub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// WithLatency travels in the Spec's options as the delay and the delay per
// row; a delay per row that is not a duration fails to load.
func TestWithLatencyOptions(t *testing.T) {
	spec := stub.WithLatency(stub.Echo(2), 2*time.Millisecond, 500*time.Microsecond)
	if got, want := spec.Options["delay"]+" "+spec.Options["delay_per_row"], "2ms 500µs"; got != want {
		t.Errorf("options delay and delay_per_row %q, want %q", got, want)
	}
	spec.Options["delay_per_row"] = "slow"
	if _, err := inference.NewCache(0).Acquire(context.Background(), spec); !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("delay_per_row=slow: error %v, want ErrBadModel", err)
	}
}

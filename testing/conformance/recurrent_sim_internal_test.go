//go:build cgo

package main

import (
	"io"
	"path/filepath"
	"regexp"
	"testing"
)

// TestRecurrentOnSimulatedDevice runs the suites' RNN, GRU and LSTM tests
// through the CUDA executor on the simulated device: they pass with every
// node on the device.
func TestRecurrentOnSimulatedDevice(t *testing.T) {
	simulated, err := resolve("sim")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := RunAll(io.Discard, filepath.Join(suites, "node"), simulated, regexp.MustCompile(`(?i)(lstm|gru|rnn)`))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed < 8 || sum.Failed+sum.Skipped > 0 || sum.OnDevice != sum.Passed {
		t.Errorf("%d passed (%d every node on the device), %d failed, %d skipped; host nodes: %v",
			sum.Passed, sum.OnDevice, sum.Failed, sum.Skipped, sum.HostOps)
	}
	for _, r := range sum.Results {
		t.Log(r)
	}
}

//go:build cgo

package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// A sticky device fault (issue 14, item 4): the batch that meets it fails
// with an error wrapping inference.ErrDeviceFailed and naming the device's
// status; from then on every Run of every model on the device fails at
// once with it, queuing nothing, and no model compiles; a model that runs
// wholly on the CPU is not affected.
func TestDeviceFaultIsFatal(t *testing.T) {
	b, dev := newSim(t, 0)
	ctx := context.Background()
	conv, mlp := compile(t, b, convNet(t)), compile(t, b, digits(t))
	defer conv.Close()
	defer mlp.Close()
	if _, err := conv.Run(ctx, batchOf(convNet(t), 2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Failed(); err != nil {
		t.Fatalf("Failed() before any fault: %v", err)
	}

	dev.InjectFault("", "CUDA_ERROR_ILLEGAL_ADDRESS")
	_, err := conv.Run(ctx, batchOf(convNet(t), 2, 2))
	if !errors.Is(err, inference.ErrDeviceFailed) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("Run after the fault: %v, want an error wrapping ErrDeviceFailed that names CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	if errors.Is(err, inference.ErrOutOfMemory) {
		t.Errorf("a device fault reads as out of memory, which RunInference would split: %v", err)
	}

	before := dev.Stats()
	for name, run := range map[string]func() error{
		"the faulted model": func() error { _, err := conv.Run(ctx, batchOf(convNet(t), 2, 3)); return err },
		"another model":     func() error { _, err := mlp.Run(ctx, batchOf(digits(t), 4, 4)); return err },
		"a new compile":     func() error { _, err := b.Compile(digits(t)); return err },
	} {
		err := run()
		if !errors.Is(err, inference.ErrDeviceFailed) || !strings.Contains(err.Error(), "failed earlier in this process") ||
			!strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
			t.Errorf("%s after the fault: %v, want the recorded device failure", name, err)
		}
	}
	if after := dev.Stats(); after != before {
		t.Errorf("runs after the fault reached the device: %+v, then %+v", before, after)
	}
	if err := b.Failed(); !errors.Is(err, inference.ErrDeviceFailed) {
		t.Errorf("Failed() = %v, want the device failure", err)
	}
}

// Errors that are not device failures leave the device in service: a bad
// feed fails only its own Run.
func TestBadFeedIsNotFatal(t *testing.T) {
	b, _ := newSim(t, 0)
	m := compile(t, b, digits(t))
	defer m.Close()
	ctx := context.Background()
	if _, err := m.Run(ctx, batchOf(convNet(t), 1, 1)); err == nil {
		t.Fatal("Run with the wrong input succeeded")
	}
	if err := b.Failed(); err != nil {
		t.Fatalf("a bad feed marked the device failed: %v", err)
	}
	if _, err := m.Run(ctx, batchOf(digits(t), 3, 2)); err != nil {
		t.Fatal(err)
	}
}

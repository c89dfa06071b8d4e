package runinference

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
)

// A model whose device fails on every Run, as a GPU does after a sticky
// fault, counting its Runs.
func init() { inference.RegisterLoader("failingdevice", loadFailingDevice) }

var failingDeviceRuns atomic.Int64

func loadFailingDevice(context.Context, inference.Spec, inference.Backend) (inference.Model, error) {
	return failingDeviceModel{}, nil
}

type failingDeviceModel struct{ hostileModel }

func (failingDeviceModel) Run(context.Context, map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	failingDeviceRuns.Add(1)
	return nil, fmt.Errorf("cu: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): %w", inference.ErrDeviceFailed)
}

// A device failure (issue 14, item 4) is not split and not retried, sends
// nothing to the failures output, fails the bundle with the device's
// error, and ends the process with DeviceFailureExitStatus, once, after
// the delay.
func TestDeviceFailureFailsBundleAndExits(t *testing.T) {
	exited := make(chan int, 2)
	deviceFailureOnce = sync.Once{}
	oldExit, oldDelay := exitProcess, deviceFailureExitDelay
	exitProcess, deviceFailureExitDelay = func(code int) { exited <- code }, 10*time.Millisecond
	defer func() { exitProcess, deviceFailureExitDelay = oldExit, oldDelay }()

	spec := inference.Spec{URI: "failingdevice://" + t.Name(), Format: "failingdevice"}
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 8}, Failures: true}}
	r, results, failures := collector(fn)
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	var exs []inference.Example
	for i := range 8 {
		exs = append(exs, example(float32(i), 1))
	}
	runs := failingDeviceRuns.Load()
	err := r.bundle(ctx, exs)
	if !errors.Is(err, inference.ErrDeviceFailed) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") ||
		!strings.Contains(err.Error(), "exits with status 75") {
		t.Fatalf("bundle error %v, want the device failure and the exit", err)
	}
	if n := failingDeviceRuns.Load() - runs; n != 1 {
		t.Errorf("%d runs of the batch, want 1: a device failure must not be split", n)
	}
	if len(*results) != 0 || len(*failures) != 0 {
		t.Errorf("%d results and %d failures, want none: the elements are retried in a new process", len(*results), len(*failures))
	}
	select {
	case code := <-exited:
		if code != DeviceFailureExitStatus {
			t.Errorf("exit status %d, want %d", code, DeviceFailureExitStatus)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the process was not ended after the device failure")
	}

	// A second bundle fails the same way, and the exit is not scheduled again.
	if err := r.bundle(ctx, exs[:2]); !errors.Is(err, inference.ErrDeviceFailed) {
		t.Errorf("second bundle: %v", err)
	}
	select {
	case <-exited:
		t.Error("the exit was scheduled twice")
	case <-time.After(100 * time.Millisecond):
	}
}

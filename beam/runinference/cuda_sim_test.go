//go:build cgo

package runinference_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels/emu"
	"github.com/beamml/beamml/internal/sim"
)

// This test binary registers the CUDA backend on the simulated device:
// RunInference with Device(CUDA) then runs the GPU executor, its memory
// plan and the host-emulated CUDA kernels, as a worker built with the cuda
// tag would on a GPU.
var (
	simDev = sim.New(sim.Options{Runner: emu.NewRunner(), FailAlloc: failAlloc})
	// oomAbove, when positive, fails every device allocation larger than it.
	oomAbove atomic.Int64
)

func failAlloc(bytes int64) error {
	if limit := oomAbove.Load(); limit > 0 && bytes > limit {
		return fmt.Errorf("injected: %d bytes > %d: %w", bytes, limit, inference.ErrOutOfMemory)
	}
	return nil
}

func init() {
	inference.RegisterBackend(cuda.NewBackend(func() (cuda.Device, error) { return simDev, nil }))
	register.Function1x1(checkDigit)
	register.Function2x0(mismatches)
}

const digitsPath = "../../examples/classify/digits.onnx"

var cpuDigits = sync.OnceValues(func() (inference.Model, error) {
	h, err := inference.Acquire(context.Background(), onnx.Model(digitsPath).WithDevice(inference.CPU))
	if err != nil {
		return nil, err
	}
	return h.Model(), nil // held for the life of the test binary
})

// mismatches passes on the checks that did not say "ok".
func mismatches(r string, emit func(string)) {
	if r != "ok" {
		emit(r)
	}
}

// checkDigit compares a result with the CPU backend's for the same row.
func checkDigit(r runinference.PredictionResult) string {
	m, err := cpuDigits()
	if err != nil {
		return "cpu model: " + err.Error()
	}
	batch := map[string]inference.Tensor{}
	for name, t := range r.Example {
		b, err := inference.Stack([]inference.Tensor{t})
		if err != nil {
			return err.Error()
		}
		batch[name] = b
	}
	want, err := m.Run(context.Background(), batch)
	if err != nil {
		return "cpu run: " + err.Error()
	}
	for name, w := range want {
		rows, _ := inference.Unstack(w)
		if err := check.Compare(r.Outputs.Get(name), rows[0], 1e-4, 1e-5); err != nil {
			return fmt.Sprintf("output %s: %v", name, err)
		}
	}
	return "ok"
}

// digitRows returns the first n held-out digits of the example's data.
func digitRows(t *testing.T, n int) []inference.Example {
	t.Helper()
	data, err := os.ReadFile("../../examples/classify/testdata/digits.csv")
	if err != nil {
		t.Fatal(err)
	}
	var in []inference.Example
	for _, line := range strings.Split(string(data), "\n") {
		_, ex, _, err := digits.Parse(line)
		if errors.Is(err, digits.ErrSkip) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if in = append(in, ex); len(in) == n {
			break
		}
	}
	return in
}

// copyModel gives a test its own model URI, so the shared cache loads it
// afresh.
func copyModel(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(digitsPath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "digits.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// RunInference with Device(CUDA) on the simulated device: one model load
// for the process, every result equal to the CPU backend's.
func TestCUDAOnSimulatedDevice(t *testing.T) {
	spec := onnx.Model(copyModel(t))
	const n = 300
	before := simDev.Stats()
	p, s := beam.NewPipelineWithRoot()
	results := runinference.RunInference(s, spec, beam.CreateList(s, digitRows(t, n)),
		runinference.Device(inference.CUDA), runinference.MaxBatchSize(32))
	checked := beam.ParDo(s, checkDigit, results)
	passert.Count(s, checked, "results", n)
	passert.Empty(s, beam.ParDo(s, mismatches, checked))
	ptest.RunAndValidate(t, p)

	st := inference.Shared().StatsFor(spec.WithDevice(inference.CUDA))
	if st.Loads != 1 {
		t.Errorf("%d model loads, want 1 per process", st.Loads)
	}
	after := simDev.Stats()
	if after.Launches == before.Launches || after.Gemms == before.Gemms {
		t.Errorf("the simulated GPU ran %d launches and %d GEMMs: the model did not run on it",
			after.Launches-before.Launches, after.Gemms-before.Gemms)
	}
}

// An out-of-memory error on large batches splits them until they fit:
// every element gets its result and none fails.
func TestCUDAOutOfMemorySplitsBatches(t *testing.T) {
	spec := onnx.Model(copyModel(t)).WithDevice(inference.CUDA)
	h, err := inference.Acquire(context.Background(), spec) // load before the injection
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	// The digits MLP's workspace is about 0.8 KiB per row: allow about 8.
	oomAbove.Store(7 << 10)
	defer oomAbove.Store(0)

	const n = 100
	p, s := beam.NewPipelineWithRoot()
	results, failures := runinference.RunInferenceWithFailures(s, spec, beam.CreateList(s, digitRows(t, n)),
		runinference.Device(inference.CUDA), runinference.MaxBatchSize(64))
	checked := beam.ParDo(s, checkDigit, results)
	passert.Count(s, checked, "results", n)
	passert.Empty(s, beam.ParDo(s, mismatches, checked))
	passert.Empty(s, failures)
	ptest.RunAndValidate(t, p)
	if st := inference.Shared().StatsFor(spec); st.Loads != 1 {
		t.Errorf("%d loads, want 1", st.Loads)
	}
}

// A sticky fault of the GPU (issue 14, item 4) ends the worker process:
// the pipeline's bundle fails with the device's error, the log says why,
// and the process exits with DeviceFailureExitStatus so that the runner
// starts a new one. The pipeline runs in a child process (this test
// binary again), whose simulated device gets the fault: the exit is real.
func TestCUDADeviceFailureEndsProcess(t *testing.T) {
	if os.Getenv("BEAMML_TEST_DEVICE_FAILURE") == "child" {
		simDev.InjectFault("", "CUDA_ERROR_ILLEGAL_ADDRESS")
		p, s := beam.NewPipelineWithRoot()
		results, failures := runinference.RunInferenceWithFailures(s, onnx.Model(copyModel(t)), beam.CreateList(s, digitRows(t, 20)),
			runinference.Device(inference.CUDA), runinference.MaxBatchSize(8))
		passert.Empty(s, results)
		passert.Empty(s, failures)
		err := ptest.Run(p)
		fmt.Fprintf(os.Stderr, "pipeline error: %v\n", err)
		time.Sleep(time.Minute) // the exit comes first
		t.Fatal("the process did not exit after the device failure")
	}
	args := []string{"-test.run=^TestCUDADeviceFailureEndsProcess$"}
	if f := flag.Lookup("runner"); f != nil {
		args = append(args, "-runner="+f.Value.String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BEAMML_TEST_DEVICE_FAILURE=child")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != runinference.DeviceFailureExitStatus {
		t.Fatalf("child process: %v, want exit status %d; output:\n%s", err, runinference.DeviceFailureExitStatus, out)
	}
	for _, want := range []string{
		"pipeline error: ",                    // the bundle, and so the pipeline, failed
		"CUDA_ERROR_ILLEGAL_ADDRESS",          // naming the device's error
		"the device failed, and nothing more", // the log line
		"exits with status 75",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "pipeline error: <nil>") {
		t.Errorf("the pipeline succeeded on a failed device:\n%s", out)
	}
}

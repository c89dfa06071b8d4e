//go:build cgo

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/kernels/emu"
	"github.com/beamml/beamml/internal/sim"
)

// suites is ONNX's backend test data, in the repository.
var suites = filepath.Join("..", "..", "testing", "conformance", "testdata")

// useSim makes the command's GPU the CUDA executor on the simulated
// device, so that everything but the cuda-tagged wiring runs here.
func useSim(t *testing.T) {
	old := openGPU
	t.Cleanup(func() { openGPU = old })
	openGPU = func() (graph.Compiler, string, error) {
		dev := sim.New(sim.Options{Runner: emu.NewRunner()})
		b := cuda.NewBackend(func() (cuda.Device, error) { return dev, nil })
		return b, dev.Name(), b.Available()
	}
}

func TestRunOnSim(t *testing.T) {
	useSim(t)
	model := filepath.Join(suites, "node", "test_gemm_default_vector_bias", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("conformance data not found: %v", err)
	}
	var out bytes.Buffer
	code := run(&out, []string{"--run", "^binary/Add/", "--model", model})
	t.Logf("output:\n%s", out.String())
	if code != exitOK {
		t.Fatalf("exit status %d, want 0", code)
	}
	for _, want := range []string{"CUDA backend on sim", "PASS  op binary/Add/same", "PASS  model " + model, " 0 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not contain %q", want)
		}
	}
}

func TestRunNoDevice(t *testing.T) {
	old := openGPU
	t.Cleanup(func() { openGPU = old })
	openGPU = func() (graph.Compiler, string, error) {
		return nil, "", fmt.Errorf("cuda: cu: cuDeviceGetCount: CUDA_ERROR_NO_DEVICE: %w", inference.ErrNoDevice)
	}
	var out bytes.Buffer
	if code := run(&out, nil); code != exitNoGPU || !strings.Contains(out.String(), "NO GPU: the CUDA backend did not start: cuda: cu: cuDeviceGetCount") {
		t.Errorf("exit status %d, output:\n%s", code, out.String())
	}
}

func TestRunModelMismatch(t *testing.T) {
	useSim(t)
	model := filepath.Join(suites, "node", "test_relu", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("conformance data not found: %v", err)
	}
	inner := openGPU
	openGPU = func() (graph.Compiler, string, error) {
		b, name, err := inner()
		return wrong{b}, name, err
	}
	var out bytes.Buffer
	code := run(&out, []string{"--run", "^$", "--model", model})
	if code != exitMismatch || !strings.Contains(out.String(), "FAIL  model "+model) {
		t.Errorf("exit status %d, output:\n%s", code, out.String())
	}
}

// A model whose CPU output holds NaN for the random inputs (Log of
// floats in [-1, 1)) fails rather than passing because NaN equals NaN.
func TestRunModelNaN(t *testing.T) {
	useSim(t)
	model := filepath.Join(suites, "node", "test_log", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Fatalf("conformance data not found: %v", err)
	}
	var out bytes.Buffer
	code := run(&out, []string{"--run", "^$", "--model", model})
	if code != exitMismatch || !strings.Contains(out.String(), "FAIL  model "+model) || !strings.Contains(out.String(), "NaN element(s)") {
		t.Errorf("exit status %d, output:\n%s", code, out.String())
	}
}

// wrong is a backend whose models add one to every float output.
type wrong struct{ graph.Compiler }

func (w wrong) Compile(g *graph.Graph) (inference.Model, error) {
	m, err := w.Compiler.Compile(g)
	return wrongModel{m}, err
}

type wrongModel struct{ inference.Model }

func (m wrongModel) Run(ctx context.Context, in map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	out, err := m.Model.Run(ctx, in)
	for _, t := range out {
		if v, err := inference.Data[float32](t); err == nil {
			for i := range v {
				v[i]++
			}
		}
	}
	return out, err
}

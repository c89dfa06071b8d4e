//go:build cgo

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
)

// cpuAndSim returns the CPU backend and the CUDA backend on the simulated
// device.
func cpuAndSim(t *testing.T) (inference.Backend, *cuda.Backend) {
	t.Helper()
	cpuBackend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	simulated, err := resolve("sim")
	if err != nil {
		t.Fatal(err)
	}
	return cpuBackend, simulated.(*cuda.Backend)
}

// TestConformanceSimMatchesCPU runs every suite through the CUDA executor
// on the simulated device (host-emulated kernels) and requires the same
// outcome as the CPU backend for every test: the same PASS list, no FAIL.
func TestConformanceSimMatchesCPU(t *testing.T) {
	if _, err := os.Stat(suites); err != nil {
		t.Fatalf("conformance data not found at %s: %v", suites, err)
	}
	cpuBackend, simulated := cpuAndSim(t)
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			want, err := RunAll(io.Discard, filepath.Join(suites, suite), cpuBackend, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := RunAll(io.Discard, filepath.Join(suites, suite), simulated, nil)
			if err != nil {
				t.Fatal(err)
			}
			status := map[string]Status{}
			for _, r := range want.Results {
				status[r.Name] = r.Status
			}
			for _, r := range got.Results {
				if r.Status != status[r.Name] {
					t.Errorf("%s: %s on the simulated device, %s on the CPU", r, r.Status, status[r.Name])
				}
			}
			if len(got.Results) != len(want.Results) || got.Failed > 0 {
				t.Errorf("sim: %d passed, %d failed, %d skipped; cpu: %d passed, %d failed, %d skipped",
					got.Passed, got.Failed, got.Skipped, want.Passed, want.Failed, want.Skipped)
			}
			t.Logf("%d passed on the simulated device (%d ran every node on the device), %d failed, %d skipped",
				got.Passed, got.OnDevice, got.Failed, got.Skipped)
			if suite == "node" {
				return // one-operator tests: some operators and types have no kernel
			}
			// The model suites run with no node on the host (issue 14,
			// item 9), but for models that run whole on the CPU backend
			// (control flow, sequences: Fallback says why).
			for _, r := range got.Results {
				switch {
				case r.Status != Pass || r.hostOps == nil || len(*r.hostOps) == 0:
				case r.fallback != "":
					t.Logf("%s runs on the CPU backend: %s", r.Name, r.fallback)
				default:
					t.Errorf("%s: nodes on the host: %v", r.Name, *r.hostOps)
				}
			}
		})
	}
}

// exports are the tiny PyTorch exports the graph passes are tested on.
var exports = "../../inference/graph/passes/testdata"

// TestExportsOnSimulatedDevice runs the graph passes' PyTorch exports
// (Conv+BatchNormalization blocks, BERT- and GPT-style layers) through the
// CUDA backend on the simulated device: they pass, and every node runs on
// the device, the recognised LayerNormalization and Gelu included.
func TestExportsOnSimulatedDevice(t *testing.T) {
	simulated, err := resolve("sim")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := RunAll(io.Discard, exports, simulated, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Passed == 0 || sum.Failed+sum.Skipped > 0 || sum.OnDevice != sum.Passed {
		t.Errorf("%d passed (%d every node on the device), %d failed, %d skipped; host nodes: %v",
			sum.Passed, sum.OnDevice, sum.Failed, sum.Skipped, sum.HostOps)
	}
}

// onDeviceML are the ai.onnx.ml operators the device runs (ml.cu); the
// others (the SVMs, the encoders, the feature extractors) run on the host.
var onDeviceML = map[string]bool{"TreeEnsembleClassifier": true, "TreeEnsembleRegressor": true, "TreeEnsemble": true,
	"LinearClassifier": true, "LinearRegressor": true, "Scaler": true, "Normalizer": true, "Binarizer": true, "Imputer": true, "ZipMap": true}

// TestConformanceSimMLModels runs the classical models of
// testing/mlmodels through the CUDA executor on the simulated device:
// every one passes, as on the CPU, and no operator of onDeviceML runs on
// the host (a model's strings stay on the host at its edges).
func TestConformanceSimMLModels(t *testing.T) {
	_, simulated := cpuAndSim(t)
	sum, err := RunAll(io.Discard, mlModels, simulated, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Results) < 35 {
		t.Fatalf("%d models under %s, want the 35 the export script writes", len(sum.Results), mlModels)
	}
	for _, r := range sum.Results {
		switch {
		case r.Status != Pass:
			t.Errorf("%v", r)
		case r.fallback == "" && r.hostOps != nil:
			for _, op := range *r.hostOps {
				if onDeviceML[op] {
					t.Errorf("%s: nodes on the host: %v, and the device runs %s", r.Name, *r.hostOps, op)
				}
			}
		}
	}
	t.Logf("%d passed on the simulated device, %d of them whole on the CPU backend", sum.Passed, fallbacks(sum))
}

// fallbacks counts the results of models the GPU backend sent to the CPU.
func fallbacks(sum Summary) int {
	n := 0
	for _, r := range sum.Results {
		if r.fallback != "" {
			n++
		}
	}
	return n
}

// TestConformanceSimTreeEnsembles runs every model of testing/mlmodels
// that has a tree ensemble, and ONNX's TreeEnsemble node tests, through
// the CUDA executor on the simulated device, at TestTreeEnsembleModels'
// tolerances, on fresh and on reused buffers: each passes with its
// ensembles on the device (ml.cu); a model's strings (string inputs and
// class labels) stay on the host at its edges (inference/cuda/edges.go).
func TestConformanceSimTreeEnsembles(t *testing.T) {
	_, simulated := cpuAndSim(t)
	tight := func(*graph.Graph) (rtol, atol float64) { return 1e-4, 1e-5 }
	models, err := filepath.Glob(filepath.Join(mlModels, "*", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range models {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("TreeEnsemble")) {
			dirs = append(dirs, filepath.Dir(m))
		}
	}
	for _, name := range treeModels {
		if !slices.Contains(dirs, filepath.Join(mlModels, name)) {
			t.Errorf("%s: no tree ensemble found in its model.onnx", name)
		}
	}
	nodes, err := filepath.Glob(filepath.Join(suites, "node", "test_ai_onnx_ml_tree_ensemble_*"))
	if err != nil || len(nodes) < 2 {
		t.Fatalf("ONNX's TreeEnsemble node tests: %v, %v", nodes, err)
	}
	onDevice := 0
	for _, dir := range append(dirs, nodes...) {
		for _, primed := range []bool{false, true} {
			r := runTestWithin(dir, simulated, nil, primed, tight)
			switch {
			case r.Status != Pass:
				t.Errorf("%s (primed %v): %v", filepath.Base(dir), primed, r)
			case r.fallback != "":
				t.Errorf("%s: runs on the CPU backend: %s", filepath.Base(dir), r.fallback)
			case r.hostOps == nil:
				t.Errorf("%s: the run reported no host nodes", filepath.Base(dir))
			case slices.ContainsFunc(*r.hostOps, func(op string) bool { return strings.HasPrefix(op, "TreeEnsemble") }):
				t.Errorf("%s: a tree ensemble ran on the host: %v", filepath.Base(dir), *r.hostOps)
			case !primed:
				onDevice++
			}
		}
	}
	t.Logf("%d of %d models and node tests ran their tree ensembles on the device", onDevice, len(dirs)+len(nodes))
}

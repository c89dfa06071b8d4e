//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
)

// tf32Backend compiles on the simulated device in TF32.
type tf32Backend struct{ *cuda.Backend }

func (b tf32Backend) Compile(g *graph.Graph) (inference.Model, error) {
	return b.CompileWith(g, graph.Options{Precision: inference.TF32})
}

// gemmOps are the operators whose products the CUDA backend runs as GEMMs,
// which TF32 rounds.
var gemmOps = map[string]bool{"MatMul": true, "Gemm": true, "Conv": true, "ConvTranspose": true,
	"LSTM": true, "GRU": true, "RNN": true, "Einsum": true}

// Tolerances of a test with a GEMM in TF32: TF32 keeps 10 bits of
// float32's mantissa, so a product errs by about 1e-3 of its terms'
// magnitude; the suites' largest relative error is below 1e-2.
const (
	tf32RTol = 1e-2
	tf32ATol = 1e-3
)

// In TF32 on the simulated device (issue 15, item 1), every conformance
// test that passes on the CPU passes: within the package's tolerances,
// or, where the graph has a GEMM (gemmOps), within tf32RTol and tf32ATol.
func TestConformanceSimTF32(t *testing.T) {
	cpuBackend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	simulated, err := resolve("sim")
	if err != nil {
		t.Fatal(err)
	}
	tf32 := tf32Backend{simulated.(*cuda.Backend)}
	within := func(g *graph.Graph) (float64, float64) {
		for _, n := range g.Nodes {
			if gemmOps[n.OpType] {
				return tf32RTol, tf32ATol
			}
		}
		return rtol, atol
	}
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			tests, err := testDirs(filepath.Join(suites, suite))
			if err != nil {
				t.Fatal(err)
			}
			passed := 0
			for _, dir := range tests {
				if RunTest(dir, cpuBackend).Status != Pass {
					continue
				}
				if r := runTestWithin(dir, tf32, nil, false, within); r.Status != Pass {
					t.Errorf("%s in TF32: %s %s", testName(filepath.Join(suites, suite), dir), r.Status, r.Detail)
				} else {
					passed++
				}
			}
			t.Logf("%d tests pass in TF32", passed)
		})
	}
}

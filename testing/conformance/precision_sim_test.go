//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
)

// inPrecision compiles on the simulated device in one precision.
type inPrecision struct {
	*cuda.Backend
	p inference.Precision
}

func (b inPrecision) Compile(g *graph.Graph) (inference.Model, error) {
	return b.CompileWith(g, graph.Options{Precision: b.p})
}

// gemmOps are the operators whose products the CUDA backend runs as GEMMs,
// which TF32 and FP16 round.
var gemmOps = map[string]bool{"MatMul": true, "Gemm": true, "Conv": true, "ConvTranspose": true,
	"LSTM": true, "GRU": true, "RNN": true, "Einsum": true}

// reducedPrecisions are the modes that round GEMM inputs, with the
// tolerances of a test whose graph has a GEMM. Both keep 11 significant
// bits of each input (TF32 with float32's range; half up to 65504 and
// normal from 2^-14, which no input of the suites leaves), so a product
// errs by about 1e-3 of its terms' magnitude, and both give the same
// errors here. The largest are 1.8e-3 on 0.383 (test_matmul_4d) and,
// where terms cancel, 5.0e-4 on 9.3e-5 (test_Conv2d_no_bias): FP16's
// tolerances are the tightest round ones that hold them (rtol 2.5e-3
// passes, atol 6e-4 does not); TF32's are those it was introduced with.
var reducedPrecisions = []struct {
	p          inference.Precision
	rtol, atol float64
}{
	{inference.TF32, 1e-2, 1e-3},
	{inference.FP16, 3e-3, 1e-3},
}

// In TF32 and in FP16 on the simulated device (issue 15, item 1), every
// conformance test that passes on the CPU passes: within the package's
// tolerances, or, where the graph has a GEMM (gemmOps), within the mode's.
// Some test with a GEMM must fail the package's tolerances in the mode, or
// the mode did not reach the device.
func TestConformanceSimReducedPrecision(t *testing.T) {
	cpuBackend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	simulated, err := resolve("sim")
	if err != nil {
		t.Fatal(err)
	}
	hasGemm := func(g *graph.Graph) bool {
		for _, n := range g.Nodes {
			if gemmOps[n.OpType] {
				return true
			}
		}
		return false
	}
	for _, mode := range reducedPrecisions {
		t.Run(string(mode.p), func(t *testing.T) {
			in := inPrecision{simulated.(*cuda.Backend), mode.p}
			var gemms, rounded int
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
						// First at the package's tolerances; a graph with a
						// GEMM that fails them gets the mode's.
						gemm := false
						strict := func(g *graph.Graph) (float64, float64) {
							gemm = hasGemm(g)
							return rtol, atol
						}
						r := runTestWithin(dir, in, nil, false, strict)
						if gemm {
							gemms++
						}
						if r.Status != Pass && gemm {
							rounded++
							r = runTestWithin(dir, in, nil, false, func(*graph.Graph) (float64, float64) { return mode.rtol, mode.atol })
						}
						if r.Status != Pass {
							t.Errorf("%s in %s: %s %s", testName(filepath.Join(suites, suite), dir), mode.p, r.Status, r.Detail)
						} else {
							passed++
						}
					}
					t.Logf("%d tests pass in %s", passed, mode.p)
				})
			}
			t.Logf("%d of %d tests with a GEMM fail the package's tolerances in %s", rounded, gemms, mode.p)
			if gemms > 0 && rounded == 0 {
				t.Errorf("none of %d tests with a GEMM differs from float32 beyond the package's tolerances in %s: the mode does not reach the device", gemms, mode.p)
			}
		})
	}
}

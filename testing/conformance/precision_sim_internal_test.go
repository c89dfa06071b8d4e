//go:build cgo

package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
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
// which TF32 rounds.
var gemmOps = map[string]bool{"MatMul": true, "Gemm": true, "Conv": true, "ConvTranspose": true,
	"LSTM": true, "GRU": true, "RNN": true, "Einsum": true}

// reducedPrecisions are the modes that round GEMM inputs and nothing
// else, with the tolerances of a test whose graph has a GEMM. TF32 keeps
// 11 significant bits of each input, with float32's range, so a product
// errs by about 1e-3 of its terms' magnitude: the largest errors are
// 1.8e-3 on 0.383 (test_matmul_4d) and, where terms cancel, 5.0e-4 on
// 9.3e-5 (test_Conv2d_no_bias); the tolerances are those TF32 was
// introduced with. (FP16 stores values in float16 as well:
// TestConformanceSimFP16.)
var reducedPrecisions = []struct {
	p          inference.Precision
	rtol, atol float64
}{
	{inference.TF32, 1e-2, 1e-3},
}

// In TF32 on the simulated device (issue 15, item 1), every conformance
// test that passes on the CPU passes: within the package's tolerances, or,
// where the graph has a GEMM (gemmOps), within the mode's. Some test with
// a GEMM must fail the package's tolerances in the mode, or the mode did
// not reach the device.
func TestConformanceSimReducedPrecision(t *testing.T) {
	cpuBackend, simulated := cpuAndSim(t)
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
			in := inPrecision{simulated, mode.p}
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

// The FP16 mode's tolerances (inference/cuda's fp16_mode_test.go gives the
// reasons): against its meaning, the CPU's run of the graph the mode
// rewrites (cuda.Reference), float16's 2e-3; against the suites' expected
// outputs, 1e-2 where the problem is inside float16 at 5e-3
// (check.RoundedToFloat16). Beyond float16 in the suites: inputs such as
// 10000 and 10001 that float16 cannot tell apart (softmax_large_number),
// a product beyond 65504 (reduce_prod_default_axes_keepdims_example), Tan
// next to its pole (test_tan).
const (
	fp16Tol                    = 2e-3
	fp16Float32Tol, insideHalf = 1e-2, 5e-3
)

// In FP16 on the simulated device (issue 15, item 1), every conformance
// test that passes on the CPU gives the outputs of the mode's meaning, and
// those of float32 where its problem is inside float16.
func TestConformanceSimFP16(t *testing.T) {
	cpuBackend, simulated := cpuAndSim(t)
	in := inPrecision{simulated, inference.FP16}
	ref := cuda.Reference(inference.FP16)
	within := func(tol float64) tolerance {
		return func(*graph.Graph) (float64, float64) { return tol, tol }
	}
	// Both runs go through every data set whatever their outputs: they are
	// compared with each other.
	anything := within(math.Inf(1))
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			tests, err := testDirs(filepath.Join(suites, suite))
			if err != nil {
				t.Fatal(err)
			}
			var beyond, passed int
			for _, dir := range tests {
				name := testName(filepath.Join(suites, suite), dir)
				if RunTest(dir, cpuBackend).Status != Pass {
					continue
				}
				on, got := runTestOutputs(dir, in, anything)
				off, want := runTestOutputs(dir, ref, anything)
				if on.Status != off.Status {
					t.Errorf("%s: %v on the device in fp16, %v in the mode's reference", name, on, off)
					continue
				}
				ok := true
				for set, outs := range want {
					for out, w := range outs {
						if msg := compareWithin(got[set][out], w, fp16Tol, fp16Tol); msg != "" {
							t.Errorf("%s %s output %q: against the mode's reference: %s", name, set, out, msg)
							ok = false
						}
					}
				}
				if r := runTestWithin(dir, check.RoundedToFloat16(cpuBackend.(graph.Compiler)), nil, false, within(insideHalf)); r.Status != Pass {
					beyond++
					t.Logf("%s: beyond float16, not compared with float32: %s", name, r.Detail)
				} else if r := runTestWithin(dir, in, nil, false, within(fp16Float32Tol)); r.Status != Pass {
					t.Errorf("%s in fp16 against float32: %v %s", name, r.Status, r.Detail)
					ok = false
				}
				if ok {
					passed++
				}
			}
			t.Logf("%s: %d tests pass in fp16; %d beyond float16 at %g", suite, passed, beyond, insideHalf)
		})
	}
}

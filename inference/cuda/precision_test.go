//go:build cgo

package cuda_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
)

// inPrecision compiles with the CUDA backend in one precision: check.Run
// takes a plain graph.Compiler.
type inPrecision struct {
	*cuda.Backend
	p inference.Precision
}

func (c inPrecision) Compile(g *graph.Graph) (inference.Model, error) {
	return c.Backend.CompileWith(g, graph.Options{Precision: c.p})
}

// reducedPrecisions are the modes that round GEMM inputs and nothing
// else, with the tolerances of the check cases whose products run as GEMMs
// in them (the others keep float32's). TF32 keeps 11 significant bits of
// each input (10 stored and the implicit one, against float32's 24): each
// input of a product is off by up to 2^-11 of itself (4.9e-4), so a sum of
// K products of inputs in [-1, 1] is off by about √K·5e-4 (K·1e-3 at
// worst). The largest error over the cases (|got-want| / (1+|want|)) is
// 1.46e-3 (nn/Gemm/one-row, K = 300); the tolerance is the one TF32 was
// introduced with. All 65 cases with a GEMM fail float32's tolerances,
// which shows the mode reaches their GEMMs. (FP16 stores values in
// float16 as well: fp16_mode_test.go.)
var reducedPrecisions = []struct {
	p          inference.Precision
	rtol, atol float64
}{
	{inference.TF32, 3e-3, 3e-3},
}

// Every check case passes in TF32 on the simulated device (issue 15, item
// 1): at float32's tolerances (the case's own) where no GEMM ran, and at
// the mode's where one did, the device rounding the GEMMs' inputs as
// tensor cores do. Some case with a GEMM must fail float32's tolerances,
// or the mode did not reach the device.
func TestOpsMatchCPUInReducedPrecision(t *testing.T) {
	ctx := context.Background()
	for _, mode := range reducedPrecisions {
		t.Run(string(mode.p), func(t *testing.T) {
			var gemmCases, rounded int
			for _, c := range check.Cases() {
				t.Run(c.Name, func(t *testing.T) {
					b, dev := newSim(t, 0)
					in := inPrecision{b, mode.p}
					g, feeds, err := c.Graph()
					if err != nil {
						t.Fatal(err)
					}
					m, err := in.Compile(g)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := m.Run(ctx, feeds); err != nil {
						t.Fatal(err)
					}
					m.Close()
					if dev.Stats().Gemms > 0 {
						gemmCases++
						if check.Run(ctx, in, c) != nil {
							rounded++
						}
						c.RTol, c.ATol = max(c.RTol, mode.rtol), max(c.ATol, mode.atol)
					}
					if err := check.Run(ctx, in, c); err != nil {
						t.Fatal(err)
					}
				})
			}
			t.Logf("%d of %d cases with a GEMM fail float32's tolerances in %s", rounded, gemmCases, mode.p)
			if gemmCases > 0 && rounded == 0 {
				t.Errorf("none of %d cases with a GEMM differs from float32 beyond its tolerances in %s: the mode does not reach the device", gemmCases, mode.p)
			}
		})
	}
}

// The precision reaches the device: x·1 for inputs x that tell the modes
// apart. 1 + 2^-12 needs 13 significant bits: exact in FP32, 1 in TF32
// and FP16 (both keep 11). 2^-20·(1 + 2^-10) is a normal TF32 number but a
// subnormal half, whose steps are 2^-24: it stays in TF32 and becomes
// 2^-20 in FP16. 65536 is beyond half's largest, 65504: +Inf in FP16.
// A precision that names none is refused at load.
func TestPrecisionReachesTheGEMM(t *testing.T) {
	ctx := context.Background()
	build := func() *graph.Graph {
		g := &graph.Graph{Name: "mm", Opsets: map[string]int64{"": 17},
			Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 1}}},
			Outputs:      []graph.Value{{Name: "y", DType: inference.Float32}},
			Initializers: map[string]inference.Tensor{"w": check.Floats([]int{1, 1}, 1)},
			Nodes:        []*graph.Node{{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"y"}}}}
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		return g
	}
	fine := float32(1 + math.Pow(2, -12))
	tiny := float32(math.Pow(2, -20) * (1 + math.Pow(2, -10)))
	x := []float32{fine, tiny, 65536}
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		p    inference.Precision
		want []float32
	}{
		{inference.FP32, []float32{fine, tiny, 65536}},
		{inference.TF32, []float32{1, tiny, 65536}},
		{inference.FP16, []float32{1, float32(math.Pow(2, -20)), inf}},
	} {
		b, _ := newSim(t, 0)
		m, err := b.CompileWith(build(), graph.Options{Precision: c.p})
		if err != nil {
			t.Fatalf("%s: %v", c.p, err)
		}
		out, err := m.Run(ctx, map[string]inference.Tensor{"x": check.Floats([]int{len(x), 1}, x...)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := inference.Data[float32](out["y"])
		for i := range x {
			if got[i] != c.want[i] {
				t.Errorf("%s: %.9g·1 = %.9g, want %.9g", c.p, x[i], got[i], c.want[i])
			}
		}
		m.Close()
	}
	b, _ := newSim(t, 0)
	if _, err := b.CompileWith(build(), graph.Options{Precision: "bf16"}); err == nil {
		t.Error("precision bf16 compiled")
	}
}

// A device refuses a product in a precision it does not know instead of
// running it in float32 (Gemm.Shapes checks it for every device).
func TestGemmRefusesUnknownPrecision(t *testing.T) {
	g := cuda.Gemm{M: 1, N: 1, K: 1, Alpha: 1, LDA: 1, LDB: 1, LDC: 1, Batch: 1, Precision: "bf16"}
	if _, _, _, _, err := g.Shapes(); err == nil || !strings.Contains(err.Error(), `precision "bf16"`) {
		t.Errorf("Shapes of a product in bf16: %v, want an error naming the precision", err)
	}
	_, dev := newSim(t, 0)
	if err := dev.Gemm(nil, g); err == nil {
		t.Error("the simulated device ran a product in bf16")
	}
}

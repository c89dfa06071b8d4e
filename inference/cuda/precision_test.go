//go:build cgo

package cuda_test

import (
	"context"
	"errors"
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

// Tolerances of the cases whose products run as GEMMs in TF32. TF32 keeps
// 10 bits of float32's 23-bit mantissa: each input of a product is off by
// up to 2^-11 of itself (4.9e-4), so a sum of K products of inputs in
// [-1, 1] is off by about √K·5e-4 (K·1e-3 at worst). The check cases'
// largest error is about 1e-3 (65 of them fail float32's tolerances in
// TF32, which shows the mode reaches their GEMMs).
const (
	tf32RTol = 3e-3
	tf32ATol = 3e-3
)

// Every check case passes in TF32 on the simulated device (issue 15, item
// 1): at float32's tolerances (the case's own) where no GEMM ran, and at
// tf32RTol and tf32ATol where one did, TF32 rounding the GEMMs' inputs as
// tensor cores do.
func TestOpsMatchCPUInTF32(t *testing.T) {
	ctx := context.Background()
	for _, c := range check.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			b, dev := newSim(t, 0)
			tf32 := inPrecision{b, inference.TF32}
			g, feeds, err := c.Graph()
			if err != nil {
				t.Fatal(err)
			}
			m, err := tf32.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Run(ctx, feeds); err != nil {
				t.Fatal(err)
			}
			m.Close()
			if dev.Stats().Gemms > 0 {
				c.RTol, c.ATol = max(c.RTol, tf32RTol), max(c.ATol, tf32ATol)
			}
			if err := check.Run(ctx, tf32, c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The precision reaches the device: a product whose input TF32 cannot
// hold (1 + 2^-12) is exact in FP32 and rounded in TF32; FP16 is refused
// at load, naming itself.
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
	x := float32(1 + math.Pow(2, -12))
	for _, c := range []struct {
		p    inference.Precision
		want float32
	}{{inference.FP32, x}, {inference.TF32, 1}} {
		b, _ := newSim(t, 0)
		m, err := b.CompileWith(build(), graph.Options{Precision: c.p})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(ctx, map[string]inference.Tensor{"x": check.Floats([]int{1, 1}, x)})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := inference.Data[float32](out["y"]); got[0] != c.want {
			t.Errorf("%s: (1 + 2^-12)·1 = %.9g, want %.9g", c.p, got[0], c.want)
		}
	}
	b, _ := newSim(t, 0)
	if _, err := b.CompileWith(build(), graph.Options{Precision: inference.FP16}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("fp16: %v, want ErrUnsupportedOp", err)
	}
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

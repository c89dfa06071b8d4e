//go:build cgo

package cuda_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels"
)

// halfNormKernels are the normalisation operators whose lowerings take
// float16, with the kernel each launches for it.
var halfNormKernels = map[string]string{
	"BatchNormalization":    kernels.NormBatchF16,
	"InstanceNormalization": kernels.NormRowsF16,
	"GroupNormalization":    kernels.NormRowsF16,
	"LayerNormalization":    kernels.NormRowsF16,
	"RMSNormalization":      kernels.NormRowsF16,
	"LpNormalization":       kernels.NormLpF16,
	"LRN":                   kernels.LrnF16,
	"Softmax":               kernels.SoftmaxF16,
	"LogSoftmax":            kernels.SoftmaxF16,
	"Hardmax":               kernels.SoftmaxF16,
}

// runHalfCase runs c on the CPU reference (cpu.NewModel: each float16 node
// widened to float32 and its float16 outputs rounded, the semantics) and
// on a simulated device, and returns both outputs and the device's
// launches by kernel. Every node must run on the device.
func runHalfCase(t *testing.T, c check.Case) (got, want map[string]inference.Tensor, launched map[string]int) {
	t.Helper()
	ctx := context.Background()
	g, feeds, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if want, err = cpu.NewModel(g).Run(ctx, feeds); err != nil {
		t.Fatalf("cpu: %v", err)
	}
	b, _ := newSim(t, 0)
	g, feeds, _ = c.Graph() // Compile rewrites its graph
	m, err := b.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before := runner.Launched()
	if got, err = m.Run(ctx, feeds); err != nil {
		t.Fatal(err)
	}
	launched = launchedSince(before)
	if host := m.(*cuda.Model).Stats().HostNodes; len(host) > 0 {
		t.Errorf("nodes on the host: %q", host)
	}
	return got, want, launched
}

// The float16 forms of the normalisation and softmax kernels (norm.cu's
// _f16 entry points) on every check case of those operators with its
// float32 data rounded to float16 (scale, bias and the statistics too,
// which have X's type): rows longer than a block (LayerNormalization and
// Softmax over 1000 elements, RMSNormalization over 1500), broadcast
// scales, Mean and InvStdDev (float32 whatever X is), NaN and ties. The
// node must launch its kernel's _f16 form and no cast_convert: a node
// run in float32 between casts would give the same values.
//
// Tolerances: the device and the CPU both compute in float32 and round
// each float16 output once, but their sums (mean, variance, Σ exp) add in
// different orders, a few float32 ulps apart, which can move a value
// across a float16 rounding boundary: one float16 ulp, at most 2⁻¹⁰ of the
// value (rtol 1e-3), or 2⁻²⁴ below float16's normals (atol 1e-4 bounds
// both). That happens rarely, so at most 1% of an operator's elements
// (over its cases) may differ in their bits: a kernel that rounded
// otherwise than once to nearest even, or computed something else within
// an ulp, changes far more.
func TestFloat16NormKernels(t *testing.T) {
	elements, differ := map[string]int{}, map[string]int{}
	for _, c := range check.Cases() {
		kernel, ok := halfNormKernels[c.Op]
		if !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			h, _ := c.Float16()
			got, want, launched := runHalfCase(t, h)
			if launched[kernel] == 0 || launched[kernels.CastConvert] > 0 {
				t.Errorf("launches %v, want %s and no %s", launched, kernel, kernels.CastConvert)
			}
			for name, w := range want {
				if err := check.Compare(got[name], w, 1e-3, 1e-4); err != nil {
					t.Errorf("output %s: %v", name, err)
					continue
				}
				if w.DType() != inference.Float16 {
					continue // Mean and InvStdDev, float32
				}
				differ[c.Op] += bitsDiffer(got[name], w)
				elements[c.Op] += w.Len()
			}
		})
	}
	for _, op := range slices.Sorted(maps.Keys(halfNormKernels)) {
		t.Logf("%s: %d of %d elements differ from the CPU's in their bits", op, differ[op], elements[op])
		if elements[op] == 0 || float64(differ[op]) > 0.01*float64(elements[op]) {
			t.Errorf("%s: %d of %d elements differ from the CPU's in their bits, want at most 1%%", op, differ[op], elements[op])
		}
	}
}

// BatchNormalization's scale, B, mean and var may have a type other than
// X's: float16 X with float32 statistics (and float32 X with float16 ones)
// runs the float32 kernel between casts, as the CPU does.
func TestFloat16BatchNormMixedTypes(t *testing.T) {
	for _, c := range check.Cases() {
		if c.Name != "norm/BatchNormalization/4d" {
			continue
		}
		for _, halfX := range []bool{true, false} {
			m := c
			m.Inputs = slices.Clone(c.Inputs)
			name := "float16-statistics"
			if halfX {
				m.Inputs[0].T = check.ToFloat16(m.Inputs[0].T)
				name = "float16-x"
			} else {
				for i := 1; i < len(m.Inputs); i++ {
					m.Inputs[i].T = check.ToFloat16(m.Inputs[i].T)
				}
			}
			t.Run(name, func(t *testing.T) {
				got, want, launched := runHalfCase(t, m)
				if launched[kernels.NormBatchF32] == 0 || launched[kernels.NormBatchF16] > 0 {
					t.Errorf("launches %v, want %s and no %s", launched, kernels.NormBatchF32, kernels.NormBatchF16)
				}
				if halfX && launched[kernels.CastConvert] != 2 {
					t.Errorf("launches %v, want two %s (X and Y)", launched, kernels.CastConvert)
				}
				for name, w := range want {
					if err := check.Compare(got[name], w, 1e-3, 1e-4); err != nil {
						t.Errorf("output %s: %v", name, err)
					}
				}
			})
		}
		return
	}
	t.Fatal("no case norm/BatchNormalization/4d")
}

//go:build cgo

package cuda_test

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/check"
)

// The tolerances of the FP16 mode (issue 15, item 1), in which the nodes
// the device runs in float16 store their values, weights included, in
// float16 (passes.StoreInFloat16):
//   - against its meaning, the CPU's run of the rewritten graph
//     (cuda.Reference), float16's: rtol and atol 2e-3, two float16 ulps of
//     values of order 1, as check.Case.Float16 states them (the device
//     accumulates in another order than the CPU, which can move a
//     rounding by an ulp);
//   - against float32 (the CPU's run of the case itself), rtol and atol
//     1e-2 where the problem is inside float16 at half that: where the
//     float32 answer to the inputs rounded to float16, itself rounded to
//     float16 (check.RoundedToFloat16), is within 5e-3 of the float32
//     answer. The mode adds its nodes' own roundings, and accumulations of
//     rounded terms, to that. The problems beyond float16 here are those
//     whose outputs leave its range (Clip's bounds at float32's largest, a
//     Cast of 3e9), steps of rounded inputs (Ceil, Round, float to int
//     Casts): 12 of 934, none beyond 1e-2 in the mode where the problem is
//     inside.
const (
	fp16RTol, fp16ATol         = 2e-3, 2e-3
	fp16Float32Tol, insideHalf = 1e-2, 5e-3
)

// Every check case passes in FP16 on the simulated device, at the
// tolerances above; the cases launch the float16 kernels of the nodes the
// mode converts.
func TestOpsMatchCPUInFP16Mode(t *testing.T) {
	ctx := context.Background()
	before := runner.Launched()
	var beyond int
	cases := check.Cases()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			b, _ := newSim(t, 0)
			in := inPrecision{b, inference.FP16}
			h := c
			h.RTol, h.ATol = max(c.RTol, fp16RTol), max(c.ATol, fp16ATol)
			if err := check.RunAgainst(ctx, cuda.Reference(inference.FP16), in, h); err != nil {
				t.Error(err)
			}
			edge := c
			edge.RTol, edge.ATol = max(c.RTol, insideHalf), max(c.ATol, insideHalf)
			if err := check.RunAgainst(ctx, cpu.Backend{}, check.RoundedToFloat16(cpu.Backend{}), edge); err != nil {
				beyond++
				t.Logf("beyond float16, not compared with float32: %v", err)
				return
			}
			f := c
			f.RTol, f.ATol = max(c.RTol, fp16Float32Tol), max(c.ATol, fp16Float32Tol)
			if err := check.Run(ctx, in, f); err != nil {
				t.Errorf("against float32: %v", err)
			}
		})
	}
	t.Logf("%d of %d cases beyond float16 at %g", beyond, len(cases), insideHalf)
	after := runner.Launched()
	for _, k := range []string{"unary_f16", "binary_f16", "variadic_f16", "epilogue_f16",
		"conv_im2col32_f16", "norm_rows_f16", "norm_batch_f16", "softmax_f16", "attention_softmax_f16", "pool_f16", "reduce_f16", "arg_f16"} {
		if after[k] == before[k] {
			t.Errorf("no case launched %s in FP16", k)
		}
	}
}

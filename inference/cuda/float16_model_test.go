//go:build cgo

package cuda_test

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/check"
)

// Every check case with a float32 input runs again as a float16 model
// (check.Case.Float16): its float inputs float16, which the device keeps
// as float16 and computes with the kernels' float16 forms (registerHalf)
// or in float32 between casts (lowerNode), and the CPU computes widened
// node by node; the outputs agree within float16's tolerances. The float16
// forms must run: at least one case launches each of them.
func TestOpsMatchCPUAsFloat16Models(t *testing.T) {
	ctx := context.Background()
	before := runner.Launched()
	ran := 0
	for _, c := range check.Cases() {
		h, ok := c.Float16()
		if !ok {
			continue
		}
		t.Run(h.Name, func(t *testing.T) {
			b, _ := newSim(t, 0)
			if err := check.Run(ctx, b, h); err != nil {
				t.Error(err)
			}
		})
		ran++
	}
	// The 64-bit im2col, which large layers take.
	restore := cuda.SetIm2col32(false)
	for _, c := range check.Cases() {
		if h, ok := c.Float16(); ok && c.Op == "Conv" {
			t.Run(h.Name+"/im2col64", func(t *testing.T) {
				b, _ := newSim(t, 0)
				if err := check.Run(ctx, b, h); err != nil {
					t.Error(err)
				}
			})
		}
	}
	restore()
	after := runner.Launched()
	t.Logf("%d cases in float16", ran)
	for _, k := range []string{"unary_f16", "binary_f16", "binary_same_f16", "variadic_f16", "epilogue_f16", "gemm_fill_f16",
		"conv_im2col32_f16", "conv_im2col_f16", "conv_direct_f16"} {
		if after[k] == before[k] {
			t.Errorf("no case launched %s", k)
		}
	}
}

package cpu

import "github.com/beamml/beamml/inference/graph/passes"

// graphPasses returns the graph passes Compile runs, in order: float16
// values computed in float32 with float16 rounding
// (passes.ComputeFloat16InFloat32: the model's meaning, so it runs
// Unoptimized too); constant folding with the reference kernels (RunNode);
// then, unless b is Unoptimized, dead-node elimination, BatchNormalization
// folding, the recognition of LayerNormalization, Gelu, HardSwish and
// Attention in their decomposed forms, and every epilogue fusion (passes.AllEpilogues),
// which the Conv, Gemm and MatMul kernels honour (fuse.go).
func (b Backend) graphPasses() []passes.Pass {
	half := passes.ComputeFloat16InFloat32()
	fold := passes.FoldConstants(RunNode)
	if b.Unoptimized {
		return []passes.Pass{half, fold}
	}
	return []passes.Pass{
		half,
		fold,
		passes.EliminateDeadNodes(),
		passes.FoldBatchNorm(),
		passes.RecognizeLayerNorm(),
		passes.RecognizeGelu(),
		passes.RecognizeHardSwish(),
		passes.RecognizeAttention(),
		passes.FuseEpilogues(passes.AllEpilogues.WithBatchNorm()),
	}
}

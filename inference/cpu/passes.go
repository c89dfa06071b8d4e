package cpu

import "github.com/beamml/beamml/inference/graph/passes"

// graphPasses returns the graph passes Compile runs, in order: constant
// folding with the reference kernels (RunNode); then, unless b is
// Unoptimized, dead-node elimination, BatchNormalization folding, the
// recognition of LayerNormalization, Gelu and Attention in their
// decomposed forms, and every epilogue fusion (passes.AllEpilogues), which
// the Conv, Gemm and MatMul kernels honour (fuse.go).
func (b Backend) graphPasses() []passes.Pass {
	fold := passes.FoldConstants(RunNode)
	if b.Unoptimized {
		return []passes.Pass{fold}
	}
	return []passes.Pass{
		fold,
		passes.EliminateDeadNodes(),
		passes.FoldBatchNorm(),
		passes.RecognizeLayerNorm(),
		passes.RecognizeGelu(),
		passes.RecognizeAttention(),
		passes.FuseEpilogues(passes.AllEpilogues),
	}
}

package cuda

import "github.com/beamml/beamml/inference/internal/opsem"

// Lowerings of the permuting operators (shape.cu shape_copy): Transpose,
// DepthToSpace and SpaceToDepth, each one strided copy of the
// opsem.Permutation that opsem.Transpose, opsem.DepthToSpace and
// opsem.SpaceToDepth give.

func init() {
	registerLowering("Transpose", func(l *lowering) error { return lowerPermutation(l, opsem.Transpose) })
	registerLowering("DepthToSpace", func(l *lowering) error { return lowerPermutation(l, opsem.DepthToSpace) })
	registerLowering("SpaceToDepth", func(l *lowering) error { return lowerPermutation(l, opsem.SpaceToDepth) })
	registerHalf("Transpose", "DepthToSpace", "SpaceToDepth")
}

// lowerPermutation copies the input, read with the permutation's view
// shape, with its axes permuted into the output.
func lowerPermutation(l *lowering, rule func(opsem.Node, []int) (opsem.Permutation, error)) error {
	x := l.In[0]
	p, err := rule(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, x.DType, p.Out); err != nil {
		return err
	}
	vs := rowMajorStrides(p.View)
	dims := make([]int, len(p.Perm)) // the output, as the view's axes permuted
	xs := make([]int64, len(p.Perm))
	for j, a := range p.Perm {
		dims[j], xs[j] = p.View[a], vs[a]
	}
	return launchCopy(l, l.Out[0], x, int64Dims(dims), 0, 0, rowMajorStrides(dims), xs)
}

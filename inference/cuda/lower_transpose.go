package cuda

// Lowerings of the permuting operators (shape.cu shape_copy): Transpose,
// DepthToSpace and SpaceToDepth, each one strided copy whose dims and
// strides the host works out at plan time.

func init() {
	registerLowering("Transpose", lowerTranspose)
	registerLowering("DepthToSpace", lowerDepthToSpace)
	registerLowering("SpaceToDepth", lowerSpaceToDepth)
}

func lowerTranspose(l *lowering) error {
	x := l.In[0]
	rank := x.Rank()
	perm := l.Ints("perm", nil)
	if len(perm) == 0 {
		for i := rank - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != rank {
		return l.NoKernel("perm %v for rank %d", perm, rank)
	}
	p, err := normalizeAxes(l, perm, rank)
	if err != nil {
		return err
	}
	shape := make([]int, rank)
	for j, a := range p {
		shape[j] = x.Shape[a]
	}
	if err := checkOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return permuteCopy(l, l.Out[0], x, x.Shape, p)
}

// lowerDepthToSpace views [N, C, H, W] as six dims and permutes them
// (DCR: [N, b, b, C/b², H, W]; CRD: [N, C/b², b, b, H, W]).
func lowerDepthToSpace(l *lowering) error {
	x := l.In[0]
	s := x.Shape
	b := int(l.Int("blocksize", 0))
	if len(s) != 4 || b <= 0 || s[1]%(b*b) != 0 {
		return l.NoKernel("input %v with blocksize %d", s, b)
	}
	c := s[1] / (b * b)
	var view, perm []int
	switch mode := l.Str("mode", "DCR"); mode {
	case "DCR":
		view, perm = []int{s[0], b, b, c, s[2], s[3]}, []int{0, 3, 4, 1, 5, 2}
	case "CRD":
		view, perm = []int{s[0], c, b, b, s[2], s[3]}, []int{0, 1, 4, 2, 5, 3}
	default:
		return l.NoKernel("mode %q", mode)
	}
	if err := checkOut(l, 0, x.DType, []int{s[0], c, s[2] * b, s[3] * b}); err != nil {
		return err
	}
	return permuteCopy(l, l.Out[0], x, view, perm)
}

func lowerSpaceToDepth(l *lowering) error {
	x := l.In[0]
	s := x.Shape
	b := int(l.Int("blocksize", 0))
	if len(s) != 4 || b <= 0 || s[2]%b != 0 || s[3]%b != 0 {
		return l.NoKernel("input %v with blocksize %d", s, b)
	}
	if err := checkOut(l, 0, x.DType, []int{s[0], s[1] * b * b, s[2] / b, s[3] / b}); err != nil {
		return err
	}
	view := []int{s[0], s[1], s[2] / b, b, s[3] / b, b}
	return permuteCopy(l, l.Out[0], x, view, []int{0, 3, 5, 1, 2, 4})
}

// permuteCopy queues y = x, read with shape view, with its axes permuted:
// output axis j is view axis perm[j].
func permuteCopy(l *lowering, y, x operand, view []int, perm []int) error {
	vs := rowMajorStrides(view)
	dims := make([]int64, len(perm))
	xs := make([]int64, len(perm))
	for j, p := range perm {
		dims[j], xs[j] = int64(view[p]), vs[p]
	}
	ys := make([]int64, len(dims))
	acc := int64(1)
	for j := len(dims) - 1; j >= 0; j-- {
		ys[j] = acc
		acc *= dims[j]
	}
	return launchCopy(l, y, x, dims, 0, 0, ys, xs)
}

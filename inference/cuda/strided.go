package cuda

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/internal/kernels"
)

// The strided machinery the lowerings share: the dims and strides
// arithmetic, the strided copy of shape.cu (shape_copy, which
// lower_transpose.go and lower_slice.go build on), and the broadcasting
// strides of the binary kernels (elementwise.cu binary_*, logic.cu cmp_*
// and logic_binary). Dimensions of size 1 are dropped and neighbours that
// every operand walks contiguously are merged, so that a higher rank fits
// the kernels when it reduces to MaxRank.

// rowMajorStrides returns the element strides of shape.
func rowMajorStrides(shape []int) []int64 {
	s := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= int64(shape[i])
	}
	return s
}

// int64Dims returns shape as int64 dims.
func int64Dims(shape []int) []int64 {
	d := make([]int64, len(shape))
	for i, v := range shape {
		d[i] = int64(v)
	}
	return d
}

// dimsProduct is the number of elements of a tensor of shape dims.
func dimsProduct(dims []int) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	return n
}

// broadcastInto returns the strides of a tensor of shape in read along
// the dims of out (aligned right, 0 where in is broadcast), and false when
// in does not broadcast to out.
func broadcastInto(out, in []int) ([]int64, bool) {
	if len(in) > len(out) {
		return nil, false
	}
	s := make([]int64, len(out))
	st := rowMajorStrides(in)
	for k := range in {
		o := len(out) - len(in) + k
		switch {
		case in[k] == out[o]:
			s[o] = st[k]
		case in[k] != 1:
			return nil, false
		}
	}
	return s, true
}

// simplifyDims drops the dims of size 1 and merges neighbouring dims that
// every stride set walks contiguously (s[k] = s[k+1]·d[k+1]): the same
// copy over fewer dims.
func simplifyDims(dims []int64, strides ...[]int64) ([]int64, [][]int64) {
	var d []int64
	s := make([][]int64, len(strides))
	for k := len(dims) - 1; k >= 0; k-- {
		if dims[k] == 1 {
			continue
		}
		if last := len(d) - 1; last >= 0 {
			merge := true
			for j := range strides {
				merge = merge && strides[j][k] == s[j][last]*d[last]
			}
			if merge {
				d[last] *= dims[k]
				continue
			}
		}
		d = append(d, dims[k])
		for j := range strides {
			s[j] = append(s[j], strides[j][k])
		}
	}
	slices.Reverse(d)
	for j := range s {
		slices.Reverse(s[j])
	}
	return d, s
}

// maxRankArgs pads v on the left to MaxRank entries of fill, as kernel args.
func maxRankArgs(v []int64, fill int64) []kernelArg {
	args := make([]kernelArg, 0, kernels.MAXRANK)
	for range kernels.MAXRANK - len(v) {
		args = append(args, intArg(fill))
	}
	for _, x := range v {
		args = append(args, intArg(x))
	}
	return args
}

// launchCopy queues y[yb + Σ c·ys] = x[xb + Σ c·xs] over the coordinates
// c of dims: a device copy when that is one contiguous block, else
// shape_copy.
func launchCopy(l *lowering, y, x operand, dims []int64, yb, xb int64, ys, xs []int64) error {
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	if n == 0 {
		return nil
	}
	d, s := simplifyDims(dims, ys, xs)
	if len(d) == 0 || len(d) == 1 && s[0][0] == 1 && s[1][0] == 1 {
		return l.Copy(y.Offset(yb, []int{int(n)}), x.Offset(xb, []int{int(n)}))
	}
	if len(d) > kernels.MAXRANK {
		return l.NoKernel("strided copy of rank %d > %d", len(d), kernels.MAXRANK)
	}
	args := []kernelArg{ptrArg(y), ptrArg(x), intArg(w), intArg(n), intArg(yb), intArg(xb)}
	args = append(args, maxRankArgs(d, 1)...)
	args = append(args, maxRankArgs(s[0], 0)...)
	args = append(args, maxRankArgs(s[1], 0)...)
	return l.Launch(kernels.ShapeCopy, n, args...)
}

// legacyBroadcast returns y as it broadcasts to x in a binary operator of
// opset < 7 (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater,
// Less): only with broadcast=1, y's dimensions aligned with x's from axis
// (default: at the right), or y a single element. From opset 7 on it
// returns y unchanged (numpy broadcasting).
func legacyBroadcast(l *lowering, x, y operand) (operand, error) {
	if l.Opset >= 7 {
		return y, nil
	}
	if l.Int("broadcast", 0) == 0 {
		if !slices.Equal(x.Shape, y.Shape) {
			return y, l.NoKernel("shapes %v and %v with broadcast=0", x.Shape, y.Shape)
		}
		return y, nil
	}
	if y.Len() == 1 {
		y.Shape = nil
		return y, nil
	}
	axis := int64(x.Rank() - y.Rank())
	if l.Node.Has("axis") {
		if axis = l.Int("axis", 0); axis < 0 {
			axis += int64(x.Rank())
		}
	}
	if axis < 0 || axis+int64(y.Rank()) > int64(x.Rank()) {
		return y, l.NoKernel("input 1 of shape %v does not fit %v at axis %d", y.Shape, x.Shape, axis)
	}
	aligned := make([]int, x.Rank())
	for i := range aligned {
		aligned[i] = 1
	}
	copy(aligned[axis:], y.Shape)
	y.Shape = aligned
	return y, nil
}

// launchBroadcast launches a broadcasting binary kernel with the
// signature of binary_f32: (op, z, x, y, n, dims[6], xstrides[6],
// ystrides[6]). Operands of z's shape take binary_same_f32 when the
// kernel is binary_f32.
func launchBroadcast(l *lowering, kernel string, code int, z, x, y operand) error {
	if kernel == kernels.BinaryF32 && equalShapes(x.Shape, z.Shape) && equalShapes(y.Shape, z.Shape) {
		return l.Launch(kernels.BinarySameF32, z.Len(), intArg(code), ptrArg(z), ptrArg(x), ptrArg(y), intArg(z.Len()))
	}
	b, err := broadcastArgs(z, x, y)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	return l.Launch(kernel, z.Len(), append([]kernelArg{intArg(code), ptrArg(z), ptrArg(x), ptrArg(y)}, b...)...)
}

// broadcastArgs returns the broadcasting parameters of a kernel writing
// z from the operands ins: z's element count, its dims and each
// operand's strides (see broadcastStrides).
func broadcastArgs(z operand, ins ...operand) ([]kernelArg, error) {
	shapes := make([][]int, len(ins))
	for i, in := range ins {
		shapes[i] = in.Shape
	}
	dims, strides, err := broadcastStrides(z.Shape, shapes...)
	if err != nil {
		return nil, err
	}
	args := []kernelArg{intArg(z.Len())}
	for _, v := range append([][kernels.MAXRANK]int64{dims}, strides...) {
		for _, d := range v {
			args = append(args, intArg(d))
		}
	}
	return args, nil
}

// broadcastStrides returns out's dims, padded with 1 on the left to
// MaxRank, and for each input its element strides along them (0 where it
// is broadcast). Dimensions of size 1 are dropped and neighbours that
// every input steps through contiguously (or broadcasts along both) are
// merged first, so higher ranks fit when they reduce to MaxRank, and
// same-shape operands and scalars come out as one dimension.
func broadcastStrides(out []int, ins ...[]int) (dims [kernels.MAXRANK]int64, strides [][kernels.MAXRANK]int64, err error) {
	full := make([][]int64, len(ins))
	for k, in := range ins {
		if len(in) > len(out) {
			return dims, nil, fmt.Errorf("input rank %d > output rank %d", len(in), len(out))
		}
		s := make([]int64, len(out))
		stride := int64(1)
		for j := len(in) - 1; j >= 0; j-- {
			o := len(out) - len(in) + j
			switch {
			case in[j] == out[o]:
				s[o] = stride
			case in[j] == 1:
				s[o] = 0
			default:
				return dims, nil, fmt.Errorf("shape %v does not broadcast to %v", in, out)
			}
			stride *= int64(in[j])
		}
		full[k] = s
	}
	type axis struct {
		d int64
		s []int64
	}
	var axes []axis
	for i, d := range out {
		if d == 1 {
			continue
		}
		a := axis{d: int64(d), s: make([]int64, len(ins))}
		for k := range ins {
			a.s[k] = full[k][i]
		}
		if n := len(axes); n > 0 {
			prev := &axes[n-1]
			merge := true
			for k := range ins {
				merge = merge && prev.s[k] == a.s[k]*a.d
			}
			if merge {
				prev.d *= a.d
				prev.s = a.s
				continue
			}
		}
		axes = append(axes, a)
	}
	if len(axes) > kernels.MAXRANK {
		return dims, nil, fmt.Errorf("rank %d > %d after merging dimensions", len(axes), kernels.MAXRANK)
	}
	pad := kernels.MAXRANK - len(axes)
	for i := range dims {
		dims[i] = 1
	}
	strides = make([][kernels.MAXRANK]int64, len(ins))
	for i, a := range axes {
		dims[pad+i] = a.d
		for k := range ins {
			strides[k][pad+i] = a.s[k]
		}
	}
	return dims, strides, nil
}

func equalShapes(a, b []int) bool { return slices.Equal(a, b) }

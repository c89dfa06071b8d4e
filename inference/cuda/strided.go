package cuda

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// The strided machinery the lowerings share: the dims and strides
// arithmetic, the strided copy of shape.cu (shape_copy, which
// lower_transpose.go and lower_slice.go build on), and the broadcasting
// strides of the binary kernels (elementwise.cu binary_*, logic.cu cmp_*
// and logic_binary). Dimensions of size 1 are dropped and neighbours that
// every operand walks contiguously are merged, so that a higher rank fits
// the kernels when it reduces to MAXRANK.

// rowMajorStrides returns the element strides of shape (opsem.Strides),
// as the kernels take them.
func rowMajorStrides(shape []int) []int64 { return int64Dims(opsem.Strides(shape)) }

// int64Dims returns shape (or strides) as int64 values.
func int64Dims(shape []int) []int64 {
	d := make([]int64, len(shape))
	for i, v := range shape {
		d[i] = int64(v)
	}
	return d
}

// broadcastInto returns the element strides of a tensor of shape in read
// along the dims of out, as opsem.BroadcastStrides gives them (0 where in
// is broadcast).
func broadcastInto(l *lowering, in, out []int) ([]int64, error) {
	s, err := opsem.BroadcastStrides(in, out)
	if err != nil {
		return nil, l.NoKernel("%v", err)
	}
	return int64Dims(s), nil
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

// maxRankArgs pads v on the left to MAXRANK entries of fill, as kernel args.
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

// legacyBroadcast returns y with the shape it takes against x in a binary
// operator: opsem.LegacyBroadcast's (y unchanged from opset 7 on).
func legacyBroadcast(l *lowering, x, y operand) (operand, error) {
	s, err := opsem.LegacyBroadcast(l.Node, x.Shape, y.Shape)
	if err != nil {
		return y, l.NoKernel("%v", err)
	}
	y.Shape = s
	return y, nil
}

// launchBroadcast launches a broadcasting binary kernel with the
// signature of binary_f32: (op, z, x, y, n, dims[6], xstrides[6],
// ystrides[6]). Operands of z's shape take binary_same_f32 when the
// kernel is binary_f32.
func launchBroadcast(l *lowering, kernel string, code int, z, x, y operand) error {
	same := map[string]string{kernels.BinaryF32: kernels.BinarySameF32, kernels.BinaryF16: kernels.BinarySameF16}[kernel]
	if same != "" && slices.Equal(x.Shape, z.Shape) && slices.Equal(y.Shape, z.Shape) {
		return l.Launch(same, z.Len(), intArg(code), ptrArg(z), ptrArg(x), ptrArg(y), intArg(z.Len()))
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
// MAXRANK, and for each input its element strides along them
// (opsem.BroadcastStrides: 0 where it is broadcast), simplified by
// simplifyDims first: dimensions of size 1 dropped and neighbours that
// every input steps through contiguously (or broadcasts along both)
// merged, so higher ranks fit when they reduce to MAXRANK, and same-shape
// operands and scalars come out as one dimension.
func broadcastStrides(out []int, ins ...[]int) (dims [kernels.MAXRANK]int64, strides [][kernels.MAXRANK]int64, err error) {
	full := make([][]int64, len(ins))
	for k, in := range ins {
		s, err := opsem.BroadcastStrides(in, out)
		if err != nil {
			return dims, nil, err
		}
		full[k] = int64Dims(s)
	}
	d, s := simplifyDims(int64Dims(out), full...)
	if len(d) > kernels.MAXRANK {
		return dims, nil, fmt.Errorf("rank %d > %d after merging dimensions", len(d), kernels.MAXRANK)
	}
	pad := kernels.MAXRANK - len(d)
	for i := range dims {
		dims[i] = 1
	}
	strides = make([][kernels.MAXRANK]int64, len(ins))
	for i := range d {
		dims[pad+i] = d[i]
		for k := range ins {
			strides[k][pad+i] = s[k][i]
		}
	}
	return dims, strides, nil
}

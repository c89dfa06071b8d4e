package cpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Helpers shared by the kernels.

// Int64s returns the values of an integer (or float, truncated) tensor as
// int64: shape operands, axes, indices.
func Int64s(t inference.Tensor) ([]int64, error) {
	switch t.DType() {
	case inference.Int64:
		return inference.Data[int64](t)
	case inference.Int32:
		return widen[int32](t), nil
	case inference.Uint8:
		return widen[uint8](t), nil
	case inference.Float32:
		return widen[float32](t), nil
	case inference.Bool:
		d, _ := inference.Data[bool](t)
		out := make([]int64, len(d))
		for i, v := range d {
			if v {
				out[i] = 1
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%v is not numeric: %w", t, inference.ErrType)
}

// widen converts t's elements, which the caller knows to be T, to int64.
func widen[T int32 | uint8 | float32](t inference.Tensor) []int64 {
	d, _ := inference.Data[T](t)
	out := make([]int64, len(d))
	for i, v := range d {
		out[i] = int64(v)
	}
	return out
}

// NormAxis maps an axis in [-rank, rank) to [0, rank).
func NormAxis(axis int64, rank int) (int, error) {
	if axis < -int64(rank) || axis >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d: %w", axis, rank, inference.ErrShape)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

// Strides returns the row-major strides of shape, in elements.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// BroadcastShape returns the shape that numpy-style (multidirectional)
// broadcasting gives shapes: aligned at the right, each dimension equal or 1.
func BroadcastShape(shapes ...[]int) ([]int, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast: %w", shapes, inference.ErrShape)
			}
		}
	}
	return out, nil
}

// BroadcastOffsets returns, for each element of a tensor of shape out in
// row-major order, the offset of the element of a tensor of shape in that
// broadcasting maps to it. in must broadcast to out.
func BroadcastOffsets(in, out []int) []int {
	n := 1
	for _, d := range out {
		n *= d
	}
	offs := make([]int, n)
	if n == 0 {
		return offs
	}
	if slices.Equal(in, out) {
		for i := range offs {
			offs[i] = i
		}
		return offs
	}
	rank := len(out)
	// strides of in, aligned right, 0 where in is broadcast
	st := make([]int, rank)
	inStrides := Strides(in)
	for i := range in {
		if in[i] != 1 {
			st[rank-len(in)+i] = inStrides[i]
		}
	}
	idx := make([]int, rank)
	off := 0
	for i := range offs {
		offs[i] = off
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			off += st[d]
			if idx[d] < out[d] {
				break
			}
			off -= st[d] * idx[d]
			idx[d] = 0
		}
	}
	return offs
}

// Floats returns a float32 tensor's data, failing with ErrType otherwise.
func Floats(t inference.Tensor) ([]float32, error) { return inference.Data[float32](t) }

// Unsupported builds the error a kernel returns for a case it does not
// implement (an attribute value, an element type).
func Unsupported(n Node, format string, args ...any) error {
	return &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType, Opset: n.Opset, Detail: fmt.Sprintf(format, args...)}
}

// Arg returns input i, or the zero Tensor when the node leaves it out.
func Arg(in []inference.Tensor, i int) inference.Tensor {
	if i < len(in) {
		return in[i]
	}
	return inference.Tensor{}
}

// Present reports whether an optional input was given.
func Present(t inference.Tensor) bool { return t.DType() != 0 }

// product is the product of dims (1 for none): the element count of a shape
// already known to be valid.
func product(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}

// splitAxis views shape as [outer, shape[axis], inner] around axis.
func splitAxis(shape []int, axis int) (outer, n, inner int) {
	return product(shape[:axis]), shape[axis], product(shape[axis+1:])
}

// compareNaNLast orders values as numpy's sort and PyTorch's topk do: NaN
// after every number, NaNs equal.
func compareNaNLast[T cmp.Ordered](a, b T) int {
	aNaN, bNaN := a != a, b != b
	switch {
	case aNaN && bNaN:
		return 0
	case aNaN:
		return 1
	case bNaN:
		return -1
	}
	return cmp.Compare(a, b)
}

// singleOutput wraps a kernel's one output tensor as its result.
func singleOutput[T inference.Element](shape []int, data []T) ([]inference.Tensor, error) {
	t, err := inference.New(shape, data)
	if err != nil {
		return nil, err
	}
	return []inference.Tensor{t}, nil
}

// wantsOutput reports whether the node names output i (optional outputs may
// be left out, as an empty name or by ending the list early).
func wantsOutput(n Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// needInputs checks that the node gives its first k inputs, which are
// required.
func needInputs(in []inference.Tensor, k int) error {
	if len(in) < k {
		return fmt.Errorf("%d inputs, want at least %d: %w", len(in), k, inference.ErrBadModel)
	}
	for i, t := range in[:k] {
		if !Present(t) {
			return fmt.Errorf("required input %d is missing: %w", i, inference.ErrBadModel)
		}
	}
	return nil
}

// requiredArg returns input i, named name in the operator's signature,
// failing with ErrBadModel when the node leaves it out.
func requiredArg(in []inference.Tensor, i int, name string) (inference.Tensor, error) {
	t := Arg(in, i)
	if !Present(t) {
		return t, fmt.Errorf("input %d (%s) is missing: %w", i, name, inference.ErrBadModel)
	}
	return t, nil
}

// floatArg returns input i and its data (nil data when the node leaves it
// out), failing with Unsupported for an element type other than float32.
func floatArg(n Node, in []inference.Tensor, i int, name string) (inference.Tensor, []float32, error) {
	t := Arg(in, i)
	if !Present(t) {
		return t, nil, nil
	}
	if t.DType() != inference.Float32 {
		return t, nil, Unsupported(n, "input %d (%s) of element type %v", i, name, t.DType())
	}
	d, err := Floats(t)
	return t, d, err
}

// requiredFloatArg is floatArg for an input the node must give.
func requiredFloatArg(n Node, in []inference.Tensor, i int, name string) (inference.Tensor, []float32, error) {
	if _, err := requiredArg(in, i, name); err != nil {
		return inference.Tensor{}, nil, err
	}
	return floatArg(n, in, i, name)
}

// inputs returns in padded with zero tensors to size entries (inputs the
// node leaves out at the end), failing when one of the first required
// inputs is absent.
func inputs(in []inference.Tensor, size, required int) ([]inference.Tensor, error) {
	if len(in) < size {
		in = append(slices.Clip(in), make([]inference.Tensor, size-len(in))...)
	}
	if err := needInputs(in, required); err != nil {
		return nil, err
	}
	return in, nil
}

// normAxes normalizes axes for the given rank and rejects repeats.
func normAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		ax, err := NormAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out[:i], ax) {
			return nil, fmt.Errorf("axis %d repeated in %v: %w", a, axes, inference.ErrShape)
		}
		out[i] = ax
	}
	return out, nil
}

// dimsOf converts a shape operand to dimensions, rejecting negative ones.
func dimsOf(t inference.Tensor, what string) ([]int, error) {
	v, err := Int64s(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]int, len(v))
	for i, d := range v {
		if d < 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("%s %v: dimension %d is %d: %w", what, v, i, d, inference.ErrShape)
		}
		out[i] = int(d)
	}
	if _, err := inference.NumElements(out); err != nil {
		return nil, err
	}
	return out, nil
}

// scalarOf returns a rank-0 tensor of type dt holding v converted as a C
// cast would (bool: v ≠ 0).
func scalarOf(dt inference.DType, v float64) (inference.Tensor, error) {
	switch dt {
	case inference.Float32:
		return inference.New([]int{}, []float32{float32(v)})
	case inference.Int64:
		return inference.New([]int{}, []int64{int64(v)})
	case inference.Int32:
		return inference.New([]int{}, []int32{int32(v)})
	case inference.Bool:
		return inference.New([]int{}, []bool{v != 0})
	case inference.Uint8:
		return inference.New([]int{}, []uint8{uint8(v)})
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", dt, inference.ErrType)
}

// wantShape checks that input i has exactly the shape want.
func wantShape(t inference.Tensor, i int, name string, want ...int) error {
	if !slices.Equal(t.Shape(), want) {
		return fmt.Errorf("input %d (%s) is %v, want shape %v: %w", i, name, t, want, inference.ErrShape)
	}
	return nil
}

// number is the numeric element types; bool is not one.
type number interface {
	float32 | int64 | int32 | uint8
}

// dataOf returns t's elements; the caller has checked t's DType.
func dataOf[T inference.Element](t inference.Tensor) []T {
	d, _ := inference.Data[T](t)
	return d
}

// sameType checks that every present input has input 0's element type.
func sameType(in []inference.Tensor) error {
	for i, t := range in[1:] {
		if Present(t) && t.DType() != in[0].DType() {
			return fmt.Errorf("input %d is %v, input 0 is %v: %w", i+1, t, in[0], inference.ErrType)
		}
	}
	return nil
}

// wantType is the error for an input whose element type the operator
// does not take.
func wantType(i int, t inference.Tensor, want string) error {
	return fmt.Errorf("input %d is %v, want %s: %w", i, t, want, inference.ErrType)
}

// mapElems applies f to every element of x.
func mapElems[T, U inference.Element](x []T, f func(T) U) []U {
	out := make([]U, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// softplus is log(1 + e^x), computed without overflow for large x.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

package cpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Helpers shared by the kernels.

// floats returns a float32 tensor's data, failing with ErrType otherwise.
func floats(t inference.Tensor) ([]float32, error) { return inference.Data[float32](t) }

// arg returns input i, or the zero Tensor when the node leaves it out.
func arg(in []inference.Tensor, i int) inference.Tensor {
	if i < len(in) {
		return in[i]
	}
	return inference.Tensor{}
}

// present reports whether an optional input was given.
func present(t inference.Tensor) bool { return t.DType() != 0 }

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
func wantsOutput(n opsem.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// needInputs checks that the node gives its first k inputs, which are
// required.
func needInputs(in []inference.Tensor, k int) error {
	if len(in) < k {
		return fmt.Errorf("%d inputs, want at least %d: %w", len(in), k, inference.ErrBadModel)
	}
	for i, t := range in[:k] {
		if !present(t) {
			return fmt.Errorf("required input %d is missing: %w", i, inference.ErrBadModel)
		}
	}
	return nil
}

// requiredArg returns input i, named name in the operator's signature,
// failing with ErrBadModel when the node leaves it out.
func requiredArg(in []inference.Tensor, i int, name string) (inference.Tensor, error) {
	t := arg(in, i)
	if !present(t) {
		return t, fmt.Errorf("input %d (%s) is missing: %w", i, name, inference.ErrBadModel)
	}
	return t, nil
}

// floatArg returns input i and its data (nil data when the node leaves it
// out), failing with Unsupported for an element type other than float32.
func floatArg(n opsem.Node, in []inference.Tensor, i int, name string) (inference.Tensor, []float32, error) {
	t := arg(in, i)
	if !present(t) {
		return t, nil, nil
	}
	if t.DType() != inference.Float32 {
		return t, nil, n.Unsupported("input %d (%s) of element type %v", i, name, t.DType())
	}
	d, err := floats(t)
	return t, d, err
}

// requiredFloatArg is floatArg for an input the node must give.
func requiredFloatArg(n opsem.Node, in []inference.Tensor, i int, name string) (inference.Tensor, []float32, error) {
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
	case inference.Float64:
		return inference.New([]int{}, []float64{v})
	case inference.Int16:
		return inference.New([]int{}, []int16{int16(v)})
	case inference.Int8:
		return inference.New([]int{}, []int8{int8(v)})
	case inference.Uint64:
		return inference.New([]int{}, []uint64{uint64Of(v)})
	case inference.Uint32:
		return inference.New([]int{}, []uint32{uint32(int64(v))})
	case inference.Uint16:
		return inference.New([]int{}, []uint16{uint16(int64(v))})
	case inference.Float16:
		return inference.New([]int{}, []inference.Half{inference.HalfFromFloat32(float32(v))})
	case inference.BFloat16:
		return inference.New([]int{}, []inference.BF16{inference.BF16FromFloat32(float32(v))})
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", dt, inference.ErrType)
}

// uint64Of converts v to uint64 as Cast does: truncated toward zero, and
// below 2⁶³ through int64, so that a negative value wraps as a negative
// integer does.
func uint64Of(v float64) uint64 {
	if v < 1<<63 {
		return uint64(int64(v))
	}
	return uint64(v)
}

// wantShape checks that input i has exactly the shape want.
func wantShape(t inference.Tensor, i int, name string, want ...int) error {
	if !slices.Equal(t.Shape(), want) {
		return fmt.Errorf("input %d (%s) is %v, want shape %v: %w", i, name, t, want, inference.ErrShape)
	}
	return nil
}

// number is the element types that are Go numbers: bool is not one, nor
// are the 16-bit floats, which the kernels compute widened (half.go).
type number interface {
	float | integer
}

type float interface{ float32 | float64 }

type integer interface {
	int64 | int32 | int16 | int8 | uint64 | uint32 | uint16 | uint8
}

// isFloat reports whether T is float32 or float64.
func isFloat[T number]() bool {
	var zero T
	switch any(zero).(type) {
	case float32, float64:
		return true
	}
	return false
}

// isSigned reports whether T holds negative numbers (the floats do).
func isSigned[T number]() bool {
	var zero T
	return zero-1 < 0
}

// limits returns the least and the greatest value of T: −Inf and +Inf for
// the floats.
func limits[T number]() (lo, hi T) {
	var zero T
	bits := 8 * unsafe.Sizeof(zero)
	switch {
	case isFloat[T]():
		return T(math.Inf(-1)), T(math.Inf(1))
	case isSigned[T]():
		hi = T(uint64(1)<<(bits-1) - 1)
		return -hi - 1, hi
	}
	return 0, T(uint64(math.MaxUint64) >> (64 - bits))
}

// dataOf returns t's elements; the caller has checked t's DType.
func dataOf[T inference.Element](t inference.Tensor) []T {
	d, _ := inference.Data[T](t)
	return d
}

// sameType checks that every present input has input 0's element type.
func sameType(in []inference.Tensor) error {
	for i, t := range in[1:] {
		if present(t) && t.DType() != in[0].DType() {
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

// mapData applies f to every element of x, of the given shape, into a
// buffer from the run's pool. A shape the caller keeps, rather than
// len(x), sizes it: the slice that a variadic call builds of its
// arguments would be allocated.
func mapData[T, U inference.Element](r *limit.Run, shape []int, x []T, f func(T) U) ([]U, error) {
	out, err := limit.MakeOverwritten[U](r, shape...)
	if err != nil {
		return nil, err
	}
	for i, v := range x {
		out[i] = f(v)
	}
	return out, nil
}

// mapOutput applies f to every element of x, a tensor of the given shape,
// and returns the result as the node's one output, of that shape
// (opsem.Single: give it a shape the node's plan keeps).
func mapOutput[T, U inference.Element](n opsem.Node, shape []int, x []T, f func(T) U) ([]inference.Tensor, error) {
	out, err := mapData(n.Run, shape, x, f)
	if err != nil {
		return nil, err
	}
	return opsem.Single(n, shape, out)
}

// keptShape returns the shape of the node's input i, kept from run to run
// in its memo (opsem.Plan): the plan of a kernel whose output has its
// input's shape and that keeps nothing else.
func keptShape(n opsem.Node, in []inference.Tensor, i int) []int {
	s, _ := opsem.Plan(n, in, func() ([]int, error) { return in[i].Shape(), nil })
	return s
}

// valuesKeyed returns n, without its memo when one of the inputs idx holds
// more than opsem.MemoValues elements: a plan that depends on the values
// of those inputs (a shape, starts, axes) is kept only while they key it.
func valuesKeyed(n opsem.Node, in []inference.Tensor, idx ...int) opsem.Node {
	for _, i := range idx {
		if i < len(in) && in[i].Len() > opsem.MemoValues {
			n.Memo = nil
		}
	}
	return n
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

// given returns d, or for nil d an empty slice: the values of an optional
// input the node gives, which opsem tells apart from one it leaves out
// (nil) even when it is empty.
func given[T any](d []T) []T {
	if d == nil {
		return []T{}
	}
	return d
}

// cloneOf returns a copy of src allocated under r: the output of a kernel
// that updates its input's elements (the scatters).
func cloneOf[T any](r *limit.Run, src []T) ([]T, error) {
	out, err := limit.Make[T](r, len(src))
	copy(out, src)
	return out, err
}

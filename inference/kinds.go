package inference

import (
	"math"
	"slices"
	"unsafe"
)

// kind is what code that is not generic in the element type needs of one:
// the generic functions instantiated for it. kinds holds one per DType, so
// that a new element type is one line there rather than a case in every
// switch on DType.
type kind struct {
	make     func(n int) any // a new []T of n zero elements
	wrap     func(shape []int, data any) (Tensor, bool)
	elements func(t Tensor) any // t's elements as a []T
	equal    func(a, b Tensor) bool
	stack    func(shape []int, ts []Tensor) Tensor
	// fromLittleEndian makes a tensor of shape from raw, the little-endian
	// encoding of its elements (fixed-size types only).
	fromLittleEndian func(shape []int, raw []byte) Tensor
}

var kinds = [...]*kind{
	Float32:  kindFor[float32](),
	Int64:    kindFor[int64](),
	Int32:    kindFor[int32](),
	Bool:     kindFor[bool](),
	Uint8:    kindFor[uint8](),
	Float16:  kindFor[Half](),
	Float64:  kindFor[float64](),
	String:   kindFor[string](),
	Int8:     kindFor[int8](),
	Int16:    kindFor[int16](),
	Uint16:   kindFor[uint16](),
	Uint32:   kindFor[uint32](),
	Uint64:   kindFor[uint64](),
	BFloat16: kindFor[BF16](),
}

// kindOf returns d's kind, nil for a value that is not a DType.
func kindOf(d DType) *kind {
	if int(d) < len(kinds) {
		return kinds[d]
	}
	return nil
}

func kindFor[T Element]() *kind {
	return &kind{
		make: func(n int) any { return make([]T, n) },
		wrap: func(shape []int, data any) (Tensor, bool) {
			d, ok := data.([]T)
			if !ok {
				return Tensor{}, false
			}
			return wrap(shape, d), true
		},
		elements:         func(t Tensor) any { return view[T](t) },
		equal:            func(a, b Tensor) bool { return equalElements(view[T](a), view[T](b)) },
		stack:            stack[T],
		fromLittleEndian: func(shape []int, raw []byte) Tensor { return wrap(shape, fromLittleEndian[T](raw)) },
	}
}

// equalElements compares floats bit for bit, so that NaN equals itself
// (and 0 does not equal -0); the 16-bit floats are their bits already.
func equalElements[T Element](x, y []T) bool {
	switch x := any(x).(type) {
	case []float32:
		return slices.EqualFunc(x, any(y).([]float32), func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })
	case []float64:
		return slices.EqualFunc(x, any(y).([]float64), func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
	}
	return slices.Equal(x, y)
}

// fromLittleEndian returns the elements whose little-endian encoding is
// raw as a new []T: a bool is true for any byte but 0. T is a fixed-size
// type (not string).
func fromLittleEndian[T Element](raw []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	d := make([]T, len(raw)/size)
	if len(d) == 0 {
		return d
	}
	if b, ok := any(d).([]bool); ok {
		for i, v := range raw {
			b[i] = v != 0
		}
		return d
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&d[0])), len(raw))
	copy(mem, raw)
	if !littleEndian {
		swapBytes(mem, size)
	}
	return d
}

// appendLittleEndian appends the little-endian encoding of the elements of
// t, of a fixed-size type, to b.
func appendLittleEndian(b []byte, t Tensor) []byte {
	mem := t.Bytes()
	start := len(b)
	b = append(b, mem...)
	if !littleEndian {
		swapBytes(b[start:], t.dtype.Size())
	}
	return b
}

// swapBytes reverses the bytes of each size-byte word of b.
func swapBytes(b []byte, size int) {
	if size == 1 {
		return
	}
	for i := 0; i+size <= len(b); i += size {
		slices.Reverse(b[i : i+size])
	}
}

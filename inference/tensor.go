package inference

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// DType is the element type of a Tensor.
type DType uint8

// The element types a Tensor can hold. Float32 carries activations and
// weights; the integer, bool and uint8 types carry indices, masks and images.
// Float16 (Go type Half) carries the inputs, weights and outputs of models
// exported in half precision; the backends compute them in float32, rounded
// to float16 after every operator (passes.ComputeFloat16InFloat32).
// Float64 and String carry the columns and labels of classical models
// (scikit-learn's DoubleTensorType inputs, categories, class names); the
// narrower integers and BFloat16 (Go type BF16) are ONNX's other tensor
// types. The numbers are part of the tensor encoding (AppendBinary): new
// types are added at the end.
const (
	Float32 DType = iota + 1
	Int64
	Int32
	Bool
	Uint8
	Float16
	Float64
	String
	Int8
	Int16
	Uint16
	Uint32
	Uint64
	BFloat16
)

// dtypes are the DTypes in order: DTypes returns a copy.
var dtypes = []DType{Float32, Int64, Int32, Bool, Uint8, Float16, Float64, String, Int8, Int16, Uint16, Uint32, Uint64, BFloat16}

// DTypes returns every element type a Tensor holds.
func DTypes() []DType { return slices.Clone(dtypes) }

// String returns the ONNX name of the type ("float32" is "float" in ONNX;
// we use the Go name to avoid confusion with float64).
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Int64:
		return "int64"
	case Int32:
		return "int32"
	case Bool:
		return "bool"
	case Uint8:
		return "uint8"
	case Float16:
		return "float16"
	case Float64:
		return "float64"
	case String:
		return "string"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Uint16:
		return "uint16"
	case Uint32:
		return "uint32"
	case Uint64:
		return "uint64"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size is the number of bytes of one element in memory: 4 for float32, 8
// for int64, and so on; for String the size of a Go string header (16 on
// 64-bit machines), the bytes it points to not included (Tensor.ByteSize
// counts them). It is 0 for a value that is not a DType.
func (d DType) Size() int {
	switch d {
	case Float32, Int32, Uint32:
		return 4
	case Int64, Float64, Uint64:
		return 8
	case Bool, Uint8, Int8:
		return 1
	case Float16, BFloat16, Int16, Uint16:
		return 2
	case String:
		return int(unsafe.Sizeof(""))
	}
	return 0
}

// Element is the set of Go types a Tensor can hold.
type Element interface {
	float32 | int64 | int32 | bool | uint8 | Half | float64 | string | int8 | int16 | uint16 | uint32 | uint64 | BF16
}

// DTypeOf returns the DType of the Go element type T.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case float32:
		return Float32
	case int64:
		return Int64
	case int32:
		return Int32
	case bool:
		return Bool
	case Half:
		return Float16
	case float64:
		return Float64
	case string:
		return String
	case int8:
		return Int8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case BF16:
		return BFloat16
	default: // uint8, the only type left in Element.
		return Uint8
	}
}

// Tensor is an n-dimensional array of one element type, stored in row-major
// order: for shape [d0, d1, …, dk] the element at index (i0, i1, …, ik) is
// data[((i0·d1 + i1)·d2 + …)·dk + ik]. A tensor of rank 0 (shape []) holds
// one element. The zero Tensor holds nothing and has DType 0.
//
// A Tensor does not copy the slice it is built from, and tensors made by
// Unstack share their batch's array; treat the data as read-only once it is
// in a Tensor.
type Tensor struct {
	// The elements: a []float32, []int64, []int32, []bool, []uint8 or
	// []Half as dtype says, held as its first element and length rather
	// than in an interface, which would allocate for every tensor made
	// (WithData makes one over a new buffer for nothing). ptr is nil for
	// the zero Tensor and for a nil slice.
	ptr unsafe.Pointer
	n   int
	// The shape, held as its first dimension and rank rather than as a
	// slice: a Tensor is 32 bytes, not 48, which is a third less for every
	// map of tensors (a map's slots hold their values) and every copy.
	dims  *int
	rank  int32
	dtype DType
}

// makeTensor returns the tensor of dtype and shape over n elements at ptr,
// sharing shape.
func makeTensor(dtype DType, shape []int, ptr unsafe.Pointer, n int) Tensor {
	return Tensor{ptr: ptr, n: n, dims: unsafe.SliceData(shape), rank: int32(len(shape)), dtype: dtype}
}

// shape returns the tensor's shape, sharing it.
func (t Tensor) shape() []int {
	return unsafe.Slice(t.dims, t.rank)
}

// wrap returns the tensor of shape over d, sharing both.
func wrap[T Element](shape []int, d []T) Tensor {
	return makeTensor(DTypeOf[T](), shape, unsafe.Pointer(unsafe.SliceData(d)), len(d))
}

// wrapAny is wrap for a slice makeData returned.
func wrapAny(shape []int, data any) Tensor {
	for _, k := range kinds {
		if k != nil {
			if t, ok := k.wrap(shape, data); ok {
				return t
			}
		}
	}
	return Tensor{}
}

// view returns t's elements as a []T; T must be t's element type.
func view[T Element](t Tensor) []T {
	if t.ptr == nil {
		return nil
	}
	return unsafe.Slice((*T)(t.ptr), t.n)
}

// elements returns t's elements as the typed slice in an interface, nil
// for the zero Tensor.
func (t Tensor) elements() any {
	if k := kindOf(t.dtype); k != nil {
		return k.elements(t)
	}
	return nil
}

// New returns a tensor of the given shape over data. The length of data must
// equal the product of the shape (1 for the empty shape), and no dimension
// may be negative.
func New[T Element](shape []int, data []T) (Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return Tensor{}, err
	}
	if n != len(data) {
		return Tensor{}, fmt.Errorf("inference: %d %s values for shape %v, want %d: %w",
			len(data), DTypeOf[T](), shape, n, ErrShape)
	}
	return wrap(append([]int(nil), shape...), data), nil
}

// Zeros returns a tensor of the given type and shape filled with zero values.
func Zeros(dtype DType, shape []int) (Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return Tensor{}, err
	}
	data, err := makeData(dtype, n)
	if err != nil {
		return Tensor{}, err
	}
	return wrapAny(append([]int(nil), shape...), data), nil
}

// NumElements returns the product of the dimensions of shape, 1 for the empty
// shape. It fails on a negative dimension or a product that overflows int.
func NumElements(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("inference: shape %v: dimension %d is negative: %w", shape, i, ErrShape)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("inference: shape %v: element count overflows: %w", shape, ErrShape)
		}
		n *= d
	}
	return n, nil
}

func makeData(dtype DType, n int) (any, error) {
	if k := kindOf(dtype); k != nil {
		return k.make(n), nil
	}
	return nil, fmt.Errorf("inference: %v: %w", dtype, ErrType)
}

// DType returns the element type.
func (t Tensor) DType() DType { return t.dtype }

// Shape returns a copy of the shape.
func (t Tensor) Shape() []int { return append([]int(nil), t.shape()...) }

// Rank returns the number of dimensions.
func (t Tensor) Rank() int { return int(t.rank) }

// Dim returns the size of dimension i, 0 ≤ i < Rank(): Shape()[i] without
// copying the shape.
func (t Tensor) Dim(i int) int { return t.shape()[i] }

// Len returns the number of elements: the product of the shape.
func (t Tensor) Len() int { return t.n }

// ByteSize returns the size of the data in bytes: Len() · DType().Size(),
// and for a String tensor the bytes of its strings besides.
func (t Tensor) ByteSize() int64 {
	size := int64(t.Len()) * int64(t.dtype.Size())
	if t.dtype == String {
		for _, s := range view[string](t) {
			size += int64(len(s))
		}
	}
	return size
}

// Data returns the tensor's elements as a []T without copying. It fails with
// ErrType when T is not the tensor's element type.
func Data[T Element](t Tensor) ([]T, error) {
	if t.dtype != DTypeOf[T]() {
		return nil, fmt.Errorf("inference: tensor %v read as %v: %w", t, DTypeOf[T](), ErrType)
	}
	return view[T](t), nil
}

// WithData returns a tensor of t's element type and shape over data, which
// must hold t.Len() elements of that type: the shape is t's, shared and not
// copied, so that a runtime that keeps the tensors it returned from one run
// to the next makes the next over a new buffer without allocating. A
// tensor's shape is never written, so sharing it is safe. It fails with
// ErrType or ErrShape when data does not fit.
func WithData[T Element](t Tensor, data []T) (Tensor, error) {
	if t.dtype != DTypeOf[T]() {
		return Tensor{}, fmt.Errorf("inference: %d %v values for tensor %v: %w", len(data), DTypeOf[T](), t, ErrType)
	}
	if len(data) != t.n {
		return Tensor{}, fmt.Errorf("inference: %d values for tensor %v of %d: %w", len(data), t, t.n, ErrShape)
	}
	t.ptr, t.n = unsafe.Pointer(unsafe.SliceData(data)), len(data)
	return t, nil
}

// String describes the type and shape, as in "float32[8 3 224 224]".
func (t Tensor) String() string {
	var b strings.Builder
	b.WriteString(t.dtype.String())
	b.WriteByte('[')
	for i, d := range t.shape() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// Equal reports whether a and b have the same type, shape and elements
// (floats compared bit for bit, so NaN equals itself).
func Equal(a, b Tensor) bool {
	if a.dtype != b.dtype || !slices.Equal(a.shape(), b.shape()) {
		return false
	}
	if a.n != b.n {
		return false
	}
	if k := kindOf(a.dtype); k != nil {
		return k.equal(a, b)
	}
	return a.ptr == nil && b.ptr == nil
}

// Stack joins tensors of one type and shape along a new leading axis: n
// tensors of shape s give one of shape [n, s...]. The data is copied.
func Stack(ts []Tensor) (Tensor, error) {
	if len(ts) == 0 {
		return Tensor{}, fmt.Errorf("inference: stack of no tensors: %w", ErrShape)
	}
	first := ts[0]
	for i, t := range ts[1:] {
		if t.dtype != first.dtype {
			return Tensor{}, fmt.Errorf("inference: stack: tensor %d is %v, tensor 0 is %v: %w", i+1, t, first, ErrType)
		}
		if !slices.Equal(t.shape(), first.shape()) {
			return Tensor{}, fmt.Errorf("inference: stack: tensor %d is %v, tensor 0 is %v: %w", i+1, t, first, ErrShape)
		}
	}
	k := kindOf(first.dtype)
	if k == nil {
		return Tensor{}, fmt.Errorf("inference: stack: %v: %w", first.dtype, ErrType)
	}
	return k.stack(append([]int{len(ts)}, first.shape()...), ts), nil
}

func stack[T Element](shape []int, ts []Tensor) Tensor {
	per := ts[0].Len()
	out := make([]T, 0, per*len(ts))
	for _, t := range ts {
		out = append(out, view[T](t)...)
	}
	return wrap(shape, out)
}

// Unstack splits a tensor of shape [n, s...] along its leading axis into n
// tensors of shape s. The results share t's array (each capped at its own
// end, so appending to one never writes into the next). A rank-0 tensor
// fails with ErrShape.
func Unstack(t Tensor) ([]Tensor, error) {
	if len(t.shape()) == 0 {
		return nil, fmt.Errorf("inference: unstack of rank-0 tensor %v: %w", t, ErrShape)
	}
	if kindOf(t.dtype) == nil {
		return nil, fmt.Errorf("inference: unstack: %v: %w", t.dtype, ErrType)
	}
	n, per := t.rows()
	out := make([]Tensor, n)
	for i := range out {
		out[i] = t.row(i, per, t.shape()[1:])
	}
	return out, nil
}

// rows returns the number of rows of t along its leading axis and the
// elements in each.
func (t Tensor) rows() (n, per int) {
	n = t.shape()[0]
	if n > 0 {
		per = t.n / n
	}
	return n, per
}

// row returns row i of t along its leading axis, of shape inner
// (t.shape()[1:]) and per elements, sharing t's array: what Unstack makes
// of it, without a slice of all of them.
func (t Tensor) row(i, per int, inner []int) Tensor {
	r := makeTensor(t.dtype, inner, nil, per)
	if t.ptr != nil {
		r.ptr = unsafe.Add(t.ptr, i*per*t.dtype.Size())
	}
	return r
}

// Bytes returns the tensor's elements as the ByteSize bytes that hold
// them in memory, in the machine's byte order (bool as one byte, 0 or 1;
// float16 and bfloat16 as their 16 bits), sharing the tensor's array; nil
// when it has no elements, and for a String tensor, whose elements are
// not their bytes. It is for code that moves whole tensors to and from
// another memory, as a GPU backend does; like the slice Data returns, it
// is written to only by the code that made the tensor.
func (t Tensor) Bytes() []byte {
	if t.ptr == nil || t.n == 0 || t.dtype == String {
		return nil
	}
	return unsafe.Slice((*byte)(t.ptr), t.ByteSize())
}

// AppendBinary appends the tensor's encoding to b: the DType byte, the rank
// and each dimension as uvarints, then the elements: little-endian for
// the numbers (bool as one byte, 0 or 1; float16 and bfloat16 as their 16
// bits), and for String each string's length as a uvarint followed by its
// bytes. It implements encoding.BinaryAppender.
func (t Tensor) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(t.dtype))
	b = binary.AppendUvarint(b, uint64(len(t.shape())))
	for _, d := range t.shape() {
		b = binary.AppendUvarint(b, uint64(d))
	}
	if t.n == 0 {
		return b, nil
	}
	if t.dtype == String {
		for _, s := range view[string](t) {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b, nil
	}
	return appendLittleEndian(b, t), nil
}

// littleEndian says the machine stores numbers little-endian, as the
// tensor encoding does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// MarshalBinary returns the encoding of AppendBinary.
func (t Tensor) MarshalBinary() ([]byte, error) {
	return t.AppendBinary(make([]byte, 0, 2+2*len(t.shape())+int(t.ByteSize())+t.n))
}

// UnmarshalBinary decodes what MarshalBinary wrote, and fails on trailing
// bytes.
func (t *Tensor) UnmarshalBinary(b []byte) error {
	n, err := t.decode(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("inference: tensor encoding has %d trailing bytes: %w", len(b)-n, ErrShape)
	}
	return nil
}

// decode reads one tensor from the front of b and returns the bytes read. It
// checks the declared size against the bytes present before allocating.
func (t *Tensor) decode(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("inference: empty tensor encoding: %w", ErrShape)
	}
	dtype := DType(b[0])
	if dtype.Size() == 0 {
		if dtype == 0 && len(b) >= 2 && b[1] == 0 {
			*t = Tensor{}
			return 2, nil
		}
		return 0, fmt.Errorf("inference: tensor encoding: unknown element type %d: %w", b[0], ErrType)
	}
	off := 1
	rank, k := binary.Uvarint(b[off:])
	if k <= 0 || rank > uint64(len(b)) {
		return 0, fmt.Errorf("inference: tensor encoding: bad rank: %w", ErrShape)
	}
	off += k
	var buf [8]int // on the stack: the errors below format copies
	dims, n := buf[:0], 1
	for i := range int(rank) {
		d, k := binary.Uvarint(b[off:])
		if k <= 0 || d > math.MaxInt {
			return 0, fmt.Errorf("inference: tensor encoding: bad dimension %d: %w", i, ErrShape)
		}
		if d != 0 && n > math.MaxInt/int(d) {
			return 0, fmt.Errorf("inference: tensor encoding: shape %v: element count overflows: %w", slices.Clone(append(dims, int(d))), ErrShape)
		}
		dims, n = append(dims, int(d)), n*int(d)
		off += k
	}
	if dtype == String {
		shape := slices.Clone(dims)
		d, k, err := decodeStrings(b[off:], n)
		if err != nil {
			return 0, fmt.Errorf("inference: tensor encoding: %v%v: %w", dtype, shape, err)
		}
		*t = wrap(shape, d)
		return off + k, nil
	}
	size := dtype.Size()
	if n > (len(b)-off)/size {
		return 0, fmt.Errorf("inference: tensor encoding: %v%v needs %d bytes, %d present: %w",
			dtype, slices.Clone(dims), n*size, len(b)-off, ErrShape)
	}
	raw := b[off : off+n*size]
	if n == 0 {
		*t = kindOf(dtype).fromLittleEndian(slices.Clone(dims), raw)
		return off, nil
	}
	// The shape and the elements share one allocation of words, which hold
	// no pointers: a decoded tensor costs the collector one object, not two.
	words := make([]int, len(dims)+(len(raw)+7)/8)
	shape := words[:len(dims):len(dims)]
	copy(shape, dims)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[len(dims)])), len(raw))
	copy(mem, raw)
	switch {
	case dtype == Bool: // a bool is true for any byte but 0, and Go's is 0 or 1
		for i, v := range mem {
			mem[i] = min(v, 1)
		}
	case !littleEndian:
		swapBytes(mem, size)
	}
	*t = makeTensor(dtype, shape, unsafe.Pointer(&mem[0]), n)
	return off + len(raw), nil
}

// decodeStrings reads n strings, each a uvarint length and its bytes, from
// the front of b, and returns them and the bytes read. Each string takes
// at least one byte, which bounds n by len(b) before anything is made.
func decodeStrings(b []byte, n int) ([]string, int, error) {
	if n > len(b) {
		return nil, 0, fmt.Errorf("%d strings need at least %d bytes, %d present: %w", n, n, len(b), ErrShape)
	}
	d := make([]string, n)
	off := 0
	for i := range d {
		l, k := binary.Uvarint(b[off:])
		if k <= 0 || l > uint64(len(b)-off-k) {
			return nil, 0, fmt.Errorf("string %d: bad length: %w", i, ErrShape)
		}
		off += k
		d[i] = string(b[off : off+int(l)])
		off += int(l)
	}
	return d, off, nil
}

// onnxTypes maps ONNX's TensorProto.DataType numbers to the DTypes a Tensor
// holds.
var onnxTypes = map[int64]DType{1: Float32, 2: Uint8, 3: Int8, 4: Uint16, 5: Int16, 6: Int32, 7: Int64, 8: String,
	9: Bool, 10: Float16, 11: Float64, 12: Uint32, 13: Uint64, 16: BFloat16}

// onnxTypeNames are ONNX's TensorProto.DataType names, by number.
var onnxTypeNames = map[int64]string{0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16",
	6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
	14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
	20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2"}

// ONNXTypeName names an ONNX TensorProto.DataType number as ONNX does
// ("DOUBLE (11)"), for messages about the types a Tensor does not hold.
func ONNXTypeName(code int64) string {
	if name, ok := onnxTypeNames[code]; ok {
		return fmt.Sprintf("%s (%d)", name, code)
	}
	return fmt.Sprintf("%d, which ONNX does not define", code)
}

// DTypeFromONNX maps an ONNX TensorProto.DataType number (FLOAT = 1, UINT8 =
// 2, …, DOUBLE = 11, …, BFLOAT16 = 16) to its DType; ok is false for the
// types a Tensor does not hold (complex numbers, float8, int4, …).
func DTypeFromONNX(code int64) (d DType, ok bool) {
	d, ok = onnxTypes[code]
	return d, ok
}

// FromLittleEndian returns the tensor of dtype and shape whose elements
// are raw, their little-endian encoding (bool as one byte, any but 0 being
// true; float16 and bfloat16 as their 16 bits), as ONNX's raw_data and
// NumPy's "<" files hold them. The bytes are copied. It fails with ErrType
// for String, whose elements have no fixed size, and with ErrShape when
// raw does not hold exactly the shape's elements.
func FromLittleEndian(dtype DType, shape []int, raw []byte) (Tensor, error) {
	k := kindOf(dtype)
	if k == nil || dtype == String {
		return Tensor{}, fmt.Errorf("inference: %v from little-endian bytes: %w", dtype, ErrType)
	}
	n, err := NumElements(shape)
	if err != nil {
		return Tensor{}, err
	}
	if size := dtype.Size(); n > len(raw)/size || n*size != len(raw) {
		return Tensor{}, fmt.Errorf("inference: %v%v from %d bytes, want %d·%d: %w", dtype, shape, len(raw), n, dtype.Size(), ErrShape)
	}
	return k.fromLittleEndian(slices.Clone(shape), raw), nil
}

// DTypeToONNX returns the ONNX TensorProto.DataType number of d (FLOAT =
// 1 for Float32, DOUBLE = 11 for Float64, …), 0 (UNDEFINED) for a value
// that is not a DType.
func DTypeToONNX(d DType) int64 {
	for code, t := range onnxTypes {
		if t == d {
			return code
		}
	}
	return 0
}

// AppendLittleEndian appends t's elements to b as FromLittleEndian reads
// them, as NumPy's "<" arrays and ONNX's raw_data hold them. It fails with
// ErrType for String.
func (t Tensor) AppendLittleEndian(b []byte) ([]byte, error) {
	if t.dtype == String || kindOf(t.dtype) == nil {
		return b, fmt.Errorf("inference: %v as little-endian bytes: %w", t, ErrType)
	}
	return appendLittleEndian(b, t), nil
}

// Values returns the tensor's elements as the slice of its element type
// ([]float32, []string, …) in an interface, without copying: for code that
// handles every type, such as printing; nil for the zero Tensor. Use Data
// where the type is known.
func (t Tensor) Values() any { return t.elements() }

// Float64s returns the elements of a tensor of numbers or bools as
// float64s, a new slice: exact for every type but 64-bit integers beyond
// 2⁵³, which round; true is 1. It fails with ErrType for strings.
func Float64s(t Tensor) ([]float64, error) {
	switch d := t.elements().(type) {
	case []float32:
		return widened(d, func(v float32) float64 { return float64(v) }), nil
	case []float64:
		return slices.Clone(d), nil
	case []int64:
		return widened(d, func(v int64) float64 { return float64(v) }), nil
	case []int32:
		return widened(d, func(v int32) float64 { return float64(v) }), nil
	case []int16:
		return widened(d, func(v int16) float64 { return float64(v) }), nil
	case []int8:
		return widened(d, func(v int8) float64 { return float64(v) }), nil
	case []uint64:
		return widened(d, func(v uint64) float64 { return float64(v) }), nil
	case []uint32:
		return widened(d, func(v uint32) float64 { return float64(v) }), nil
	case []uint16:
		return widened(d, func(v uint16) float64 { return float64(v) }), nil
	case []uint8:
		return widened(d, func(v uint8) float64 { return float64(v) }), nil
	case []Half:
		return widened(d, func(v Half) float64 { return float64(v.Float32()) }), nil
	case []BF16:
		return widened(d, func(v BF16) float64 { return float64(v.Float32()) }), nil
	case []bool:
		return widened(d, func(v bool) float64 {
			if v {
				return 1
			}
			return 0
		}), nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("inference: %v as numbers: %w", t, ErrType)
}

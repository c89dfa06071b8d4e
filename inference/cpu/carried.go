package cpu

import (
	"fmt"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Operators that only move elements (reshape, transpose, concatenate,
// slice, gather, pad, select, scatter without a reduction) compute every
// element type the same way: their kernels, written for baseTypes, run the
// others carried (runCarried). A value of a type beyond baseTypes enters
// the kernel as one of a base type that holds the same elements one for
// one, and the outputs the model types otherwise are turned back:
//   - float64, uint64 as int64, uint32 as int32 and int8 as uint8: the
//     same memory, read as the other type;
//   - int16, uint16 and bfloat16 (its bits) as int32: widened, and
//     narrowed back;
//   - strings as int64 indices into a table of the node's strings, whose
//     entry 0 is "", so that the zero a kernel fills with (Pad) is the
//     empty string, as ONNX's default for strings is.
//
// movement maps those operators to the positions of the inputs whose
// elements they move (the others are shapes, indices, axes or
// conditions, which stay as they are); shapeOnly are those that read only
// their input's shape.
var movement = map[string][]int{
	"Identity": {0}, "Reshape": {0}, "Flatten": {0}, "Squeeze": {0}, "Unsqueeze": {0}, "Transpose": {0},
	"Concat": nil, "Split": {0}, "Slice": {0}, "Gather": {0}, "GatherElements": {0}, "GatherND": {0},
	"Tile": {0}, "Expand": {0}, "Pad": {0, 2}, "DepthToSpace": {0}, "SpaceToDepth": {0}, "Compress": {0},
	"ReverseSequence": {0}, "Where": {1, 2}, "Dropout": {0}, "Constant": {},
	"Scatter": {0, 2}, "ScatterElements": {0, 2}, "ScatterND": {0, 2},
	"Shape": {}, "Size": {},
}

// moves reports whether n only moves elements, and which inputs: every
// input for Concat; none but the reduction-free scatters' data and updates.
func moves(n opsem.Node) (positions []int, ok bool) {
	positions, ok = movement[n.OpType]
	if !ok {
		return nil, false
	}
	if r, has := n.Attrs["reduction"]; has && string(r.String) != "none" {
		return nil, false // a scatter that adds, multiplies or keeps the larger
	}
	if v, has := n.Attrs["value"]; n.OpType == "Pad" && has && v.Float != 0 {
		return nil, false // Pad-2's fill value, a float the carrier would not hold
	}
	if n.OpType == "Concat" {
		positions = everyInput(len(n.Inputs))
	}
	return positions, true
}

// firstInputs is 0, 1, …: everyInput's positions without allocating, as
// callKernel asks for them at every run of every Concat.
var firstInputs = func() []int {
	p := make([]int, 64)
	for i := range p {
		p[i] = i
	}
	return p
}()

// everyInput is the positions 0 to n−1.
func everyInput(n int) []int {
	if n <= len(firstInputs) {
		return firstInputs[:n:n]
	}
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// carried reports whether t's type is one runCarried carries.
func carried(t inference.Tensor) bool {
	d := t.DType()
	return d != 0 && !isBaseType(d)
}

func isBaseType(d inference.DType) bool {
	for _, b := range baseTypes {
		if b == d {
			return true
		}
	}
	return false
}

// needsCarrying reports whether one of the inputs at positions is of a
// type beyond baseTypes.
func needsCarrying(in []inference.Tensor, positions []int) bool {
	for _, i := range positions {
		if i < len(in) && carried(in[i]) {
			return true
		}
	}
	return false
}

// runCarried runs k on n with its moved inputs carried as above, and turns
// back the outputs whose type the model gives as a carried one.
func runCarried(k kernel, n opsem.Node, in []inference.Tensor, positions []int) ([]inference.Tensor, error) {
	types := make([]inference.DType, len(in))
	for i, t := range in {
		types[i] = t.DType()
	}
	c := make([]inference.Tensor, len(in))
	copy(c, in)
	var table []string // strings: entry 0 is ""
	for _, i := range positions {
		if i >= len(in) || !carried(in[i]) {
			continue
		}
		var err error
		if c[i], table, err = carry(n.Run, in[i], table); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
	}
	out, err := k(n, c)
	if err != nil {
		return nil, err
	}
	want := opsem.OutputDTypes(n, types)
	for j, t := range out {
		if j < len(want) && want[j] != 0 && want[j] != t.DType() && !isBaseType(want[j]) {
			if out[j], err = uncarry(n.Run, t, want[j], table); err != nil {
				return nil, fmt.Errorf("output %d: %w", j, err)
			}
		}
	}
	return out, nil
}

// carry returns t as the tensor of a base type that holds its elements,
// and the string table with t's strings added.
func carry(r *limit.Run, t inference.Tensor, table []string) (inference.Tensor, []string, error) {
	switch t.DType() {
	case inference.Float64:
		return sameMemory[float64, int64](t), table, nil
	case inference.Uint64:
		return sameMemory[uint64, int64](t), table, nil
	case inference.Uint32:
		return sameMemory[uint32, int32](t), table, nil
	case inference.Int8:
		return sameMemory[int8, uint8](t), table, nil
	case inference.Int16:
		w, err := widen(r, t, func(v int16) int32 { return int32(v) })
		return w, table, err
	case inference.Uint16:
		w, err := widen(r, t, func(v uint16) int32 { return int32(v) })
		return w, table, err
	case inference.BFloat16:
		w, err := widen(r, t, func(v inference.BF16) int32 { return int32(v) })
		return w, table, err
	case inference.String:
		if table == nil {
			table = []string{""}
		}
		s := dataOf[string](t)
		idx, err := limit.MakeOverwritten[int64](r, len(s))
		if err != nil {
			return inference.Tensor{}, table, err
		}
		for i, v := range s {
			idx[i] = int64(len(table))
			table = append(table, v)
		}
		c, err := inference.New(t.Shape(), idx)
		return c, table, err
	}
	return inference.Tensor{}, table, fmt.Errorf("%v carried: %w", t, inference.ErrType)
}

// uncarry turns t, a kernel's output of a carrying type, back into the
// type the model gives it.
func uncarry(r *limit.Run, t inference.Tensor, to inference.DType, table []string) (inference.Tensor, error) {
	switch {
	case to == inference.Float64 && t.DType() == inference.Int64:
		return sameMemory[int64, float64](t), nil
	case to == inference.Uint64 && t.DType() == inference.Int64:
		return sameMemory[int64, uint64](t), nil
	case to == inference.Uint32 && t.DType() == inference.Int32:
		return sameMemory[int32, uint32](t), nil
	case to == inference.Int8 && t.DType() == inference.Uint8:
		return sameMemory[uint8, int8](t), nil
	case to == inference.Int16 && t.DType() == inference.Int32:
		return widen(r, t, func(v int32) int16 { return int16(v) })
	case to == inference.Uint16 && t.DType() == inference.Int32:
		return widen(r, t, func(v int32) uint16 { return uint16(v) })
	case to == inference.BFloat16 && t.DType() == inference.Int32:
		return widen(r, t, func(v int32) inference.BF16 { return inference.BF16(v) })
	case to == inference.String && t.DType() == inference.Int64:
		idx := dataOf[int64](t)
		s, err := limit.MakeOverwritten[string](r, len(idx))
		if err != nil {
			return inference.Tensor{}, err
		}
		for i, v := range idx {
			if v < 0 || v >= int64(len(table)) {
				return inference.Tensor{}, fmt.Errorf("string %d of %d: %w", v, len(table), inference.ErrShape)
			}
			s[i] = table[v]
		}
		return inference.New(t.Shape(), s)
	}
	return inference.Tensor{}, fmt.Errorf("%v as %v: %w", t, to, inference.ErrType)
}

// sameMemory returns t, of element type T, as a tensor of U, a type of the same
// size, over the same memory.
func sameMemory[T, U inference.Element](t inference.Tensor) inference.Tensor {
	var zt T
	var zu U
	if unsafe.Sizeof(zt) != unsafe.Sizeof(zu) {
		panic("cpu: same of types of different sizes")
	}
	d := dataOf[T](t)
	u := unsafe.Slice((*U)(unsafe.Pointer(unsafe.SliceData(d))), len(d))
	r, _ := inference.New(t.Shape(), u)
	return r
}

// widen returns t, of element type T, converted element by element to U,
// allocated under r.
func widen[T, U inference.Element](r *limit.Run, t inference.Tensor, f func(T) U) (inference.Tensor, error) {
	u, err := mapData(r, []int{t.Len()}, dataOf[T](t), f)
	if err != nil {
		return inference.Tensor{}, err
	}
	return inference.New(t.Shape(), u)
}

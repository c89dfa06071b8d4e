package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Operand helpers the lowerings share: element widths and the kernels'
// type codes, planned outputs checked against what a lowering computes,
// and values read on the host.
//
// Shape operands (Reshape's shape, Slice's bounds, Pad's pads, …) are known
// on the host whenever a node is lowered: the executor sends a model whose
// shapes depend on input data to the CPU backend. Output shapes come from
// the plan; each lowering checks them against what it computes and sends
// the node to the host when they differ.

// elemWidth is the w parameter of the data movement kernels: the element
// size in bytes.
func elemWidth(l *lowering, d inference.DType) (int64, error) {
	switch s := d.Size(); s {
	case 1, 2, 4, 8:
		return int64(s), nil
	}
	return 0, l.NoKernel("element type %v", d)
}

// checkOut sends the node to the host unless output i is planned with
// the given type and shape.
func checkOut(l *lowering, i int, dtype inference.DType, shape []int) error {
	if i >= len(l.Out) || !l.Out[i].Present() {
		return l.NoKernel("output %d is not used", i)
	}
	if o := l.Out[i]; o.DType != dtype || !slices.Equal(o.Shape, shape) {
		return l.NoKernel("output %d planned as %v%v, computed %v%v", i, o.DType, o.Shape, dtype, shape)
	}
	return nil
}

// hostInts returns the values of a shape operand, which must be known
// on the host.
func hostInts(l *lowering, o operand, what string) ([]int64, error) {
	t, ok := o.Host()
	if !ok {
		return nil, l.NoKernel("%s %q computed on the device", what, o.Name)
	}
	v, err := opsem.Int64s(t)
	if err != nil {
		return nil, l.NoKernel("%s %v: %v", what, t, err)
	}
	return v, nil
}

// hostIntsOrNil is hostInts for an optional operand: nil when the node
// leaves it out.
func hostIntsOrNil(l *lowering, o operand, what string) ([]int64, error) {
	if !o.Present() {
		return nil, nil
	}
	return hostInts(l, o, what)
}

// scalarBits returns the bits of v converted to dtype as the CPU
// backend's constants are (a C cast; bool is v != 0), for shape_fill and
// shape_pad.
func scalarBits(dtype inference.DType, v float64) uint64 {
	switch dtype {
	case inference.Float32:
		return uint64(math.Float32bits(float32(v)))
	case inference.Float16:
		return uint64(inference.HalfFromFloat32(float32(v)))
	case inference.Int64:
		return uint64(int64(v))
	case inference.Int32:
		return uint64(uint32(int32(v)))
	case inference.Uint8:
		return uint64(uint8(int64(v)))
	case inference.Bool:
		if v != 0 {
			return 1
		}
	}
	return 0
}

// b2i is 1 for true and 0 for false: a flag as a kernel parameter.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// typeCode is the kernels' code of element type t (common.cuh T_*), for
// the kernels that take an operand's type as a parameter; false for a
// type they do not take.
func typeCode(t inference.DType) (int, bool) {
	switch t {
	case inference.Float32:
		return kernels.T_F32, true
	case inference.Int64:
		return kernels.T_I64, true
	case inference.Int32:
		return kernels.T_I32, true
	case inference.Uint8:
		return kernels.T_U8, true
	}
	return 0, false
}

// castCodes are cast_convert's type codes (common.cuh T_*).
var castCodes = map[inference.DType]int64{
	inference.Float32: kernels.T_F32, inference.Int64: kernels.T_I64, inference.Int32: kernels.T_I32,
	inference.Uint8: kernels.T_U8, inference.Bool: kernels.T_BOOL, inference.Float16: kernels.T_F16,
}

// indexTypes are the index type codes of the kernels (shape.cu IDX_*).
var indexTypes = map[inference.DType]int64{inference.Int64: kernels.IDX_I64, inference.Int32: kernels.IDX_I32, inference.Float32: kernels.IDX_F32}

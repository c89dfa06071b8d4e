package cpu

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// numberKernels are the numeric kernels' generic functions instantiated
// for one element type. numbers holds them by DType, so that a kernel
// picks its element type's with one lookup (numbersOf) rather than a
// switch with a case per type, and a numeric type is one line there (as
// inference's kinds table does for the Tensor's functions). Each field
// belongs to the operator family named beside it.
type numberKernels struct {
	// ops_elementwise.go
	unary    func(n opsem.Node, shape []int, x inference.Tensor, u ewUnary) ([]inference.Tensor, error)
	arith    func(n opsem.Node, in []inference.Tensor, op ewArithOp) ([]inference.Tensor, error)
	prelu    func(n opsem.Node, p *broadcastPlan, x, slope inference.Tensor) ([]inference.Tensor, error)
	mod      func(n opsem.Node, p *broadcastPlan, a, b inference.Tensor, fmod bool) ([]inference.Tensor, error)
	shift    func(n opsem.Node, p *broadcastPlan, a, b inference.Tensor, left bool) ([]inference.Tensor, error) // nil but for the unsigned types
	clip     func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error)
	variadic func(n opsem.Node, p *broadcastPlan, in []inference.Tensor) ([]inference.Tensor, error)

	// ops_logic.go
	compare func(n opsem.Node, p *broadcastPlan, a, b inference.Tensor) ([]inference.Tensor, error)

	// ops_reduce.go
	reduce   func(n opsem.Node, op rdOp, p *rdPlan, x inference.Tensor) ([]inference.Tensor, error)
	argIndex func(r *limit.Run, x inference.Tensor, shape []int, axis int, max, last bool) ([]int64, error)
	cumSum   func(r *limit.Run, x inference.Tensor, axis int, exclusive, reverse bool) (inference.Tensor, error)

	// ops_sort.go
	topK func(r *limit.Run, x inference.Tensor, axis, k int, largest bool) (inference.Tensor, []int64, error)
}

var numbers = [...]*numberKernels{
	inference.Float32: floatKernels[float32](),
	inference.Float64: floatKernels[float64](),
	inference.Int64:   integerKernels[int64](),
	inference.Int32:   integerKernels[int32](),
	inference.Int16:   integerKernels[int16](),
	inference.Int8:    integerKernels[int8](),
	inference.Uint64:  integerKernels[uint64](),
	inference.Uint32:  integerKernels[uint32](),
	inference.Uint16:  integerKernels[uint16](),
	inference.Uint8:   integerKernels[uint8](),
}

// numbersOf returns the kernels of element type d, nil when d is not a Go
// number.
func numbersOf(d inference.DType) *numberKernels {
	if int(d) < len(numbers) {
		return numbers[d]
	}
	return nil
}

// floatKernels and integerKernels make a type's kernels: the functions
// generic in every number (numberKernelsOf), and those written for the
// floats or for the integers.
func floatKernels[T float]() *numberKernels {
	k := numberKernelsOf[T]()
	k.unary = ewUnaryFloat[T]
	k.mod = ewModFloat[T]
	k.reduce = rdReduceFloatTensor[T]
	k.cumSum = rdCumSumFloats[T]
	return k
}

func integerKernels[T integer]() *numberKernels {
	k := numberKernelsOf[T]()
	k.unary = ewUnaryInteger[T]
	k.mod = ewModInteger[T]
	if !isSigned[T]() {
		k.shift = ewBitShiftOf[T]
	}
	k.reduce = rdReduceIntTensor[T]
	k.cumSum = rdCumSumInts[T]
	return k
}

func numberKernelsOf[T number]() *numberKernels {
	return &numberKernels{
		arith:    ewArithOf[T],
		prelu:    ewPReluOf[T],
		clip:     ewClipInputs[T],
		variadic: ewVariadicOf[T],
		compare:  lgCompareOf[T],
		argIndex: rdArgIndexOf[T],
		topK:     soTopKOf[T],
	}
}

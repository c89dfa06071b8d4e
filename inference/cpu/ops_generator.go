package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Operators that create tensors: Constant, ConstantOfShape, Range, EyeLike
// and OneHot, and Trilu, which keeps a triangle of its input.

func init() {
	register("Constant", gnConstant)
	register("ConstantOfShape", gnConstantOfShape)
	register("Range", gnRange)
	register("EyeLike", gnEyeLike)
	registerTypes("EyeLike", moreNumbers...)
	register("OneHot", gnOneHot)
	register("Trilu", gnTrilu)

	// The types beyond baseTypes that each operator's ONNX schema admits.
	registerTypes("ConstantOfShape", moreNumbers...)
	registerTypes("Range", inference.Float64, inference.Int16, inference.BFloat16)
}

// gnDType maps an ONNX TensorProto element type number (a dtype or to
// attribute) to ours.
func gnDType(n opsem.Node, onnxType int64) (inference.DType, error) {
	if d, ok := inference.DTypeFromONNX(onnxType); ok {
		return d, nil
	}
	return 0, n.UnsupportedType("element type", onnxType)
}

func gnConstant(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	for name, a := range n.Attrs {
		var y inference.Tensor
		var err error
		switch name {
		case "value":
			y = a.Tensor
		case "value_float":
			y, err = inference.New([]int{}, []float32{a.Float})
		case "value_floats":
			y, err = inference.New([]int{len(a.Floats)}, slices.Clone(a.Floats))
		case "value_int":
			y, err = inference.New([]int{}, []int64{a.Int})
		case "value_ints":
			y, err = inference.New([]int{len(a.Ints)}, slices.Clone(a.Ints))
		case "value_string", "value_strings", "sparse_value":
			return nil, n.Unsupported("attribute %s", name)
		default:
			continue
		}
		if err == nil && !present(y) {
			err = fmt.Errorf("attribute %s holds no tensor: %w", name, inference.ErrBadModel)
		}
		return []inference.Tensor{y}, err
	}
	return nil, fmt.Errorf("no value attribute: %w", inference.ErrBadModel)
}

func gnConstantOfShape(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	v, err := opsem.Int64s(in[0])
	if err != nil {
		return nil, fmt.Errorf("shape: %w", err)
	}
	shape, err := opsem.Dims(v, "shape")
	if err != nil {
		return nil, err
	}
	value, err := opsem.ConstantOfShapeValue(n)
	if err != nil {
		return nil, err
	}
	zeros, err := limit.Make[int](n.Run, shape...) // every element is value's first
	if err != nil {
		return nil, err
	}
	if !carried(value) {
		y, err := take(n.Run, value, shape, zeros, inference.Tensor{})
		return []inference.Tensor{y}, err
	}
	// A value of a type beyond baseTypes is taken carried (carried.go).
	c, table, err := carry(n.Run, value, nil)
	if err != nil {
		return nil, err
	}
	y, err := take(n.Run, c, shape, zeros, inference.Tensor{})
	if err == nil {
		y, err = uncarry(n.Run, y, value.DType(), table)
	}
	return []inference.Tensor{y}, err
}

func gnRange(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	dt := in[0].DType()
	for i, t := range in[:3] {
		if t.DType() != dt || t.Len() != 1 {
			return nil, fmt.Errorf("input %d is %v, want a single %v: %w", i, t, dt, inference.ErrShape)
		}
	}
	var y inference.Tensor
	switch dt {
	case inference.Float32:
		y, err = gnRangeFloat[float32](n.Run, in)
	case inference.Float64:
		y, err = gnRangeFloat[float64](n.Run, in)
	case inference.Int64:
		y, err = gnRangeInt[int64](n.Run, in)
	case inference.Int32:
		y, err = gnRangeInt[int32](n.Run, in)
	case inference.Int16:
		y, err = gnRangeInt[int16](n.Run, in)
	default:
		return nil, n.Unsupported("element type %v", dt)
	}
	return []inference.Tensor{y}, err
}

// gnRangeFloat computes the opsem.RangeCountFloat values start + i·delta,
// in float64.
func gnRangeFloat[T float](r *limit.Run, in []inference.Tensor) (inference.Tensor, error) {
	var v [3]float64
	for i := range v {
		v[i] = float64(dataOf[T](in[i])[0])
	}
	start, delta := v[0], v[2]
	count, err := opsem.RangeCountFloat(start, v[1], delta)
	if err != nil {
		return inference.Tensor{}, err
	}
	out, err := limit.Make[T](r, count)
	if err != nil {
		return inference.Tensor{}, err
	}
	for i := range out {
		out[i] = T(start + float64(i)*delta)
	}
	return inference.New([]int{len(out)}, out)
}

func gnRangeInt[T int64 | int32 | int16](r *limit.Run, in []inference.Tensor) (inference.Tensor, error) {
	var v [3]int64
	for i := range v {
		d, err := inference.Data[T](in[i])
		if err != nil {
			return inference.Tensor{}, err
		}
		v[i] = int64(d[0])
	}
	start, delta := v[0], v[2]
	count, err := opsem.RangeCountInt(start, v[1], delta)
	if err != nil {
		return inference.Tensor{}, err
	}
	out, err := limit.Make[T](r, count)
	if err != nil {
		return inference.Tensor{}, err
	}
	for i := range out {
		// i·delta may wrap, the sum does not: it lies between start and limit,
		// and int64 arithmetic is exact modulo 2⁶⁴.
		out[i] = T(start + int64(i)*delta)
	}
	return inference.New([]int{len(out)}, out)
}

func gnEyeLike(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	if x.Rank() != 2 {
		return nil, fmt.Errorf("input %v is not 2-D: %w", x, inference.ErrShape)
	}
	dt := x.DType()
	if n.Has("dtype") {
		if dt, err = gnDType(n, n.Int("dtype", 0)); err != nil {
			return nil, err
		}
	}
	one, err := scalarOf(dt, 1)
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	k := n.Int("k", 0)
	offs, err := limit.Make[int](n.Run, x.Len())
	if err != nil {
		return nil, err
	}
	for p := range offs {
		if i, j := p/shape[1], p%shape[1]; int64(j-i) != k {
			offs[p] = -1
		}
	}
	y, err := take(n.Run, one, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gnOneHot(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	ind, values := in[0], in[2]
	idx, err := int64sUnder(n.Run, ind)
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	dv, err := opsem.Int64s(in[1])
	if err != nil {
		return nil, fmt.Errorf("depth: %w", err)
	}
	is := ind.Shape()
	axis, depth, shape, err := opsem.OneHot(n, is, dv, values.Len())
	if err != nil {
		return nil, err
	}
	inner := 0
	if len(idx) > 0 { // else the indices' other dimensions may not count within int
		inner = opsem.Count(is[axis:])
	}
	// offs picks values[0] (off) everywhere but at the index, values[1];
	// indices outside [-depth, depth) give an all-off row.
	offs, err := limit.Make[int](n.Run, shape...)
	if err != nil {
		return nil, err
	}
	for p, v := range idx {
		k, err := opsem.Index(v, depth)
		if err != nil {
			continue
		}
		o, i := p/inner, p%inner
		offs[(o*depth+k)*inner+i] = 1
	}
	y, err := take(n.Run, values, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gnTrilu(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 2, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape := x.Shape()
	if len(shape) < 2 {
		return nil, fmt.Errorf("input %v has rank below 2: %w", x, inference.ErrShape)
	}
	var k int64
	if present(in[1]) {
		kv, err := opsem.Int64s(in[1])
		if err != nil || len(kv) != 1 {
			return nil, fmt.Errorf("k %v is not one integer: %w", in[1], inference.ErrShape)
		}
		k = kv[0]
	}
	upper := opsem.TriluUpper(n)
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	offs, err := limit.Make[int](n.Run, x.Len())
	if err != nil {
		return nil, err
	}
	// upper keeps j - i ≥ k, lower keeps j - i ≤ k.
	for p := range offs {
		i, j := p/cols%rows, p%cols
		if d := int64(j - i); upper && d >= k || !upper && d <= k {
			offs[p] = p
		} else {
			offs[p] = -1
		}
	}
	y, err := take(n.Run, x, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

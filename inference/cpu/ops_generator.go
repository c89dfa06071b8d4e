package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Operators that create tensors: Constant, ConstantOfShape, Range, EyeLike
// and OneHot, and Trilu, which keeps a triangle of its input.

func init() {
	register("Constant", gnConstant)
	register("ConstantOfShape", gnConstantOfShape)
	register("Range", gnRange)
	register("EyeLike", gnEyeLike)
	register("OneHot", gnOneHot)
	register("Trilu", gnTrilu)
}

// gnDType maps an ONNX TensorProto element type number (a dtype or to
// attribute) to ours.
func gnDType(n Node, onnxType int64) (inference.DType, error) {
	if d, ok := inference.DTypeFromONNX(onnxType); ok {
		return d, nil
	}
	return 0, Unsupported(n, "element type %d", onnxType)
}

func gnConstant(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
			return nil, Unsupported(n, "attribute %s", name)
		default:
			continue
		}
		if err == nil && !Present(y) {
			err = fmt.Errorf("attribute %s holds no tensor: %w", name, inference.ErrBadModel)
		}
		return []inference.Tensor{y}, err
	}
	return nil, fmt.Errorf("no value attribute: %w", inference.ErrBadModel)
}

func gnConstantOfShape(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	shape, err := dimsOf(in[0], "shape")
	if err != nil {
		return nil, err
	}
	value := n.Attrs["value"].Tensor
	if !Present(value) {
		if value, err = scalarOf(inference.Float32, 0); err != nil {
			return nil, err
		}
	}
	if value.Len() != 1 {
		return nil, fmt.Errorf("value %v is not one element: %w", value, inference.ErrBadModel)
	}
	y, err := take(value, shape, make([]int, product(shape)), inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gnRange(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
		y, err = gnRangeFloat(in)
	case inference.Int64:
		y, err = gnRangeInt[int64](in)
	case inference.Int32:
		y, err = gnRangeInt[int32](in)
	default:
		return nil, Unsupported(n, "element type %v", dt)
	}
	return []inference.Tensor{y}, err
}

// gnRangeFloat computes max(ceil((limit-start)/delta), 0) values start +
// i·delta in float64, as numpy.arange sizes its result.
func gnRangeFloat(in []inference.Tensor) (inference.Tensor, error) {
	var v [3]float64
	for i := range v {
		d, err := Floats(in[i])
		if err != nil {
			return inference.Tensor{}, err
		}
		v[i] = float64(d[0])
	}
	start, limit, delta := v[0], v[1], v[2]
	if delta == 0 || math.IsNaN(start) || math.IsNaN(limit) || math.IsNaN(delta) {
		return inference.Tensor{}, fmt.Errorf("range(%v, %v, %v): %w", start, limit, delta, inference.ErrShape)
	}
	count := max(math.Ceil((limit-start)/delta), 0)
	if count > math.MaxInt32 {
		return inference.Tensor{}, fmt.Errorf("range(%v, %v, %v) has %v elements: %w", start, limit, delta, count, inference.ErrShape)
	}
	out := make([]float32, int(count))
	for i := range out {
		out[i] = float32(start + float64(i)*delta)
	}
	return inference.New([]int{len(out)}, out)
}

func gnRangeInt[T int64 | int32](in []inference.Tensor) (inference.Tensor, error) {
	var v [3]int64
	for i := range v {
		d, err := inference.Data[T](in[i])
		if err != nil {
			return inference.Tensor{}, err
		}
		v[i] = int64(d[0])
	}
	start, limit, delta := v[0], v[1], v[2]
	if delta == 0 {
		return inference.Tensor{}, fmt.Errorf("range(%d, %d, %d): %w", start, limit, delta, inference.ErrShape)
	}
	// count = ceil((limit-start)/delta)
	span := limit - start
	count := span / delta
	if span%delta != 0 {
		count++
	}
	count = max(count, 0)
	if count > math.MaxInt32 {
		return inference.Tensor{}, fmt.Errorf("range(%d, %d, %d) has %d elements: %w", start, limit, delta, count, inference.ErrShape)
	}
	out := make([]T, count)
	for i := range out {
		out[i] = T(start + int64(i)*delta)
	}
	return inference.New([]int{len(out)}, out)
}

func gnEyeLike(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
	offs := make([]int, x.Len())
	for p := range offs {
		if i, j := p/shape[1], p%shape[1]; int64(j-i) != k {
			offs[p] = -1
		}
	}
	y, err := take(one, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gnOneHot(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 3, 3)
	if err != nil {
		return nil, err
	}
	ind, values := in[0], in[2]
	idx, err := Int64s(ind)
	if err != nil {
		return nil, fmt.Errorf("indices: %w", err)
	}
	dv, err := Int64s(in[1])
	if err != nil || len(dv) != 1 || dv[0] < 0 || dv[0] > math.MaxInt32 {
		return nil, fmt.Errorf("depth %v is not one non-negative integer: %w", in[1], inference.ErrShape)
	}
	depth := int(dv[0])
	if values.Len() != 2 {
		return nil, fmt.Errorf("values %v is not [off, on]: %w", values, inference.ErrShape)
	}
	is := ind.Shape()
	axis := n.Int("axis", -1)
	if axis < 0 {
		axis += int64(len(is)) + 1
	}
	if axis < 0 || axis > int64(len(is)) {
		return nil, fmt.Errorf("axis %d out of range for indices %v: %w", n.Int("axis", -1), ind, inference.ErrShape)
	}
	shape := slices.Concat(is[:axis], []int{depth}, is[axis:])
	if _, err := inference.NumElements(shape); err != nil {
		return nil, err
	}
	inner := product(is[axis:])
	// offs picks values[0] (off) everywhere but at the index, values[1];
	// indices outside [-depth, depth) give an all-off row.
	offs := make([]int, product(shape))
	for p, v := range idx {
		if v < 0 {
			v += int64(depth)
		}
		if v < 0 || v >= int64(depth) {
			continue
		}
		o, i := p/inner, p%inner
		offs[(o*depth+int(v))*inner+i] = 1
	}
	y, err := take(values, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func gnTrilu(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
	if Present(in[1]) {
		kv, err := Int64s(in[1])
		if err != nil || len(kv) != 1 {
			return nil, fmt.Errorf("k %v is not one integer: %w", in[1], inference.ErrShape)
		}
		k = kv[0]
	}
	upper := n.Int("upper", 1) == 1
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	offs := make([]int, x.Len())
	// upper keeps j - i ≥ k, lower keeps j - i ≤ k.
	for p := range offs {
		i, j := p/cols%rows, p%cols
		if d := int64(j - i); upper && d >= k || !upper && d <= k {
			offs[p] = p
		} else {
			offs[p] = -1
		}
	}
	y, err := take(x, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the operators that create tensors (shape.cu shape_range,
// shape_fill, shape_onehot and shape_trilu): Range (opsem.RangeCountFloat,
// opsem.RangeCountInt), ConstantOfShape (opsem.ConstantOfShapeValue),
// OneHot (opsem.OneHot) and Trilu.

func init() {
	registerLowering("Range", lowerRange)
	registerLowering("ConstantOfShape", lowerConstantOfShape)
	registerLowering("OneHot", lowerOneHot)
	registerLowering("Trilu", lowerTrilu)
}

// lowerRange fills start + i·delta, opsem.RangeCountFloat or
// opsem.RangeCountInt elements; its bounds are known on the host (the node
// is lowered only when its output is too large to compute at plan time).
func lowerRange(l *lowering) error {
	y := l.Out[0]
	var t [3]inference.Tensor
	for i := range t {
		o := l.input(i)
		v, ok := o.Host()
		if !ok || v.Len() != 1 || v.DType() != y.DType {
			return l.NoKernel("input %d %q is not one %v known on the host", i, o.Name, y.DType)
		}
		t[i] = v
	}
	var count int
	var err error
	var fstart, fdelta float64
	var istart, idelta int64
	switch y.DType {
	case inference.Float32:
		var v [3]float64
		for i := range v {
			d, _ := inference.Data[float32](t[i])
			v[i] = float64(d[0])
		}
		count, err = opsem.RangeCountFloat(v[0], v[1], v[2])
		fstart, fdelta = v[0], v[2]
	case inference.Int64, inference.Int32:
		var v [3]int64
		for i := range v {
			d, _ := opsem.Int64s(t[i])
			v[i] = d[0]
		}
		count, err = opsem.RangeCountInt(v[0], v[1], v[2])
		istart, idelta = v[0], v[2]
	default:
		return l.NoKernel("element type %v", y.DType)
	}
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, y.DType, []int{count}); err != nil {
		return err
	}
	return l.Launch(kernels.ShapeRange, int64(count), ptrArg(y), intArg(castCodes[y.DType]), intArg(count), floatArg(fstart), floatArg(fdelta), intArg(istart), intArg(idelta))
}

// lowerConstantOfShape fills the output with opsem.ConstantOfShapeValue.
func lowerConstantOfShape(l *lowering) error {
	y := l.Out[0]
	value, err := opsem.ConstantOfShapeValue(l.Node)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if dims, err := hostInts(l, l.In[0], "shape"); err == nil {
		if !slices.Equal(int64Dims(y.Shape), dims) {
			return l.NoKernel("output %v for shape %v", y.Shape, dims)
		}
	}
	if err := checkOut(l, 0, value.DType(), y.Shape); err != nil {
		return err
	}
	w, err := elemWidth(l, y.DType)
	if err != nil {
		return err
	}
	return l.Launch(kernels.ShapeFill, y.Len(), ptrArg(y), intArg(w), intArg(y.Len()), intArg(int64(firstBits(value))))
}

// firstBits returns the bits of t's first element.
func firstBits(t inference.Tensor) uint64 {
	b := t.Bytes()
	var v uint64
	for i := t.DType().Size() - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// lowerOneHot lowers OneHot (opsem.OneHot) with depth known on the host;
// the indices may be device data (an index out of range gives an all-off
// row, no error).
func lowerOneHot(l *lowering) error {
	ind, vals := l.In[0], l.In[2]
	dv, err := hostInts(l, l.In[1], "depth")
	if err != nil {
		return err
	}
	axis, depth, shape, err := opsem.OneHot(l.Node, ind.Shape, dv, int(vals.Len()))
	if err != nil {
		return l.NoKernel("%v", err)
	}
	itype, ok := indexTypes[ind.DType]
	if !ok {
		return l.NoKernel("indices of type %v", ind.DType)
	}
	if err := checkOut(l, 0, vals.DType, shape); err != nil {
		return err
	}
	w, err := elemWidth(l, vals.DType)
	if err != nil {
		return err
	}
	y := l.Out[0]
	n := y.Len()
	return l.Launch(kernels.ShapeOnehot, n, ptrArg(y), ptrArg(ind), ptrArg(vals), intArg(itype), intArg(w), intArg(n), intArg(depth), intArg(opsem.Count(ind.Shape[axis:])))
}

// lowerTrilu zeroes what lies outside the kept triangle; k may be device
// data (any value is valid).
func lowerTrilu(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.Rank() < 2 {
		return l.NoKernel("input %v has rank below 2", x.Shape)
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	kp, k := intArg(0), int64(0)
	if ko := l.input(1); ko.Present() {
		if ko.Len() != 1 {
			return l.NoKernel("k %v is not one integer", ko.Shape)
		}
		if t, ok := ko.Host(); ok {
			v, err := opsem.Int64s(t)
			if err != nil {
				return l.NoKernel("k %v", t)
			}
			k = v[0]
		} else if ko.DType == inference.Int64 {
			kp = ptrArg(ko)
		} else {
			return l.NoKernel("k of type %v on the device", ko.DType)
		}
	}
	upper := b2i(opsem.TriluUpper(l.Node))
	rows, cols := x.Shape[x.Rank()-2], x.Shape[x.Rank()-1]
	n := y.Len()
	return l.Launch(kernels.ShapeTrilu, n, ptrArg(y), ptrArg(x), kp, intArg(k), intArg(w), intArg(n), intArg(rows), intArg(cols), intArg(upper))
}

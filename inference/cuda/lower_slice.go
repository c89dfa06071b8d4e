package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the operators that select, join, repeat and pad (shape.cu
// shape_copy and shape_pad): Slice, Concat, Split, Pad, Tile and Expand.
// Each is strided copies or a strided pad whose dims and strides the host
// works out at plan time.

func init() {
	registerLowering("Slice", lowerSlice)
	registerLowering("Concat", lowerConcat)
	registerLowering("Split", lowerSplit)
	registerLowering("Pad", lowerPad)
	registerLowering("Tile", lowerTile)
	registerLowering("Expand", lowerExpand)
}

func lowerSlice(l *lowering) error {
	x := l.In[0]
	var starts, ends, axes, steps []int64
	if l.Opset < 10 {
		starts, ends, axes = l.Ints("starts", nil), l.Ints("ends", nil), l.Ints("axes", nil)
	} else {
		for i, p := range []*[]int64{&starts, &ends, &axes, &steps} {
			o := l.input(i + 1)
			if !o.Present() {
				continue
			}
			v, err := hostInts(l, o, "Slice input")
			if err != nil {
				return err
			}
			*p = v
		}
	}
	if axes == nil {
		for i := range starts {
			axes = append(axes, int64(i))
		}
	}
	if steps == nil {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return l.NoKernel("starts %v, ends %v, axes %v, steps %v", starts, ends, axes, steps)
	}
	ax, err := normalizeAxes(l, axes, x.Rank())
	if err != nil {
		return err
	}
	st := rowMajorStrides(x.Shape)
	dims, xs := int64Dims(x.Shape), slices.Clone(st)
	var xb int64
	for i, a := range ax {
		first, count, ok := sliceRange(starts[i], ends[i], steps[i], int64(x.Shape[a]))
		if !ok {
			return l.NoKernel("step 0")
		}
		dims[a], xs[a] = count, st[a]*steps[i]
		xb += first * st[a]
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		shape[i] = int(d)
	}
	if err := checkOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return launchCopy(l, l.Out[0], x, dims, 0, xb, rowMajorStrides(shape), xs)
}

// sliceRange clamps a slice of a dimension as ONNX Slice does (as the
// CPU backend's shSliceRange) and returns its first index and length.
func sliceRange(start, end, step, dim int64) (first, count int64, ok bool) {
	if step == 0 {
		return 0, 0, false
	}
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start, end = min(max(start, 0), dim), min(max(end, 0), dim)
		if end <= start {
			return 0, 0, true
		}
		return start, (end - start + step - 1) / step, true
	}
	start, end = min(max(start, 0), dim-1), min(max(end, -1), dim-1)
	if start <= end {
		return 0, 0, true
	}
	return start, (start - end - step - 1) / -step, true
}

// lowerConcat copies each input into its columns of the output.
func lowerConcat(l *lowering) error {
	y := l.Out[0]
	if !l.Node.Has("axis") && l.Opset >= 4 {
		return l.NoKernel("no axis attribute")
	}
	axis, err := cpu.NormAxis(l.Int("axis", 1), y.Rank())
	if err != nil {
		return l.NoKernel("axis %d for output %v", l.Int("axis", 1), y.Shape)
	}
	return copyParts(l, y, l.In, axis, true)
}

// lowerSplit copies each output's columns of the input. The parts are the
// planned outputs' lengths along the axis, whichever way the node gave
// them (split input or attribute, num_outputs, equal parts).
func lowerSplit(l *lowering) error {
	x := l.In[0]
	axis, err := cpu.NormAxis(l.Int("axis", 0), x.Rank())
	if err != nil {
		return l.NoKernel("axis %d for input %v", l.Int("axis", 0), x.Shape)
	}
	return copyParts(l, x, l.Out, axis, false)
}

// copyParts copies between whole and parts laid side by side along axis,
// all viewed as [outer, axis·inner]: into whole (Concat) or out of it
// (Split). The parts must fill whole exactly.
func copyParts(l *lowering, whole operand, parts []operand, axis int, into bool) (err error) {
	outer, inner := dimsProduct(whole.Shape[:axis]), dimsProduct(whole.Shape[axis+1:])
	total := int64(whole.Shape[axis])
	var at int64
	for i, p := range parts {
		if !p.Present() || p.DType != whole.DType || p.Rank() != whole.Rank() {
			return l.NoKernel("part %d %v%v of %v%v", i, p.DType, p.Shape, whole.DType, whole.Shape)
		}
		for k := range p.Shape {
			if k != axis && p.Shape[k] != whole.Shape[k] {
				return l.NoKernel("part %d %v of %v", i, p.Shape, whole.Shape)
			}
		}
		a := int64(p.Shape[axis])
		if at+a > total {
			return l.NoKernel("parts overflow %v on axis %d", whole.Shape, axis)
		}
		dims := []int64{outer, a * inner}
		wholeStrides, partStrides := []int64{total * inner, 1}, []int64{a * inner, 1}
		if into {
			err = launchCopy(l, whole, p, dims, at*inner, 0, wholeStrides, partStrides)
		} else {
			err = launchCopy(l, p, whole, dims, 0, at*inner, partStrides, wholeStrides)
		}
		if err != nil {
			return err
		}
		at += a
	}
	if at != total {
		return l.NoKernel("parts fill %d of %d along axis %d", at, total, axis)
	}
	return nil
}

var padModes = map[string]int64{"constant": kernels.PAD_CONSTANT, "edge": kernels.PAD_EDGE, "reflect": kernels.PAD_REFLECT, "wrap": kernels.PAD_WRAP}

// launchPad queues shape_pad: output dims d, input lengths n and strides
// xs from element xb on, leading pads p; fill (when present) or fbits
// supplies the constant.
func launchPad(l *lowering, y, x, fill operand, fbits uint64, mode int64, xb int64, d, n, p, xs []int64) error {
	w, err := elemWidth(l, y.DType)
	if err != nil {
		return err
	}
	total := y.Len()
	if total == 0 {
		return nil
	}
	var kd, kn, kp, ks []int64
	for k := range d {
		if d[k] == 1 && n[k] == 1 && p[k] == 0 {
			continue // the one coordinate reads coordinate 0
		}
		kd, kn, kp, ks = append(kd, d[k]), append(kn, n[k]), append(kp, p[k]), append(ks, xs[k])
	}
	if len(kd) > kernels.MAXRANK {
		return l.NoKernel("rank %d > %d", len(kd), kernels.MAXRANK)
	}
	fp := intArg(0)
	if fill.Present() {
		fp = ptrArg(fill)
	}
	args := []kernelArg{ptrArg(y), ptrArg(x), fp, intArg(int64(fbits)), intArg(w), intArg(mode), intArg(total), intArg(xb)}
	args = append(args, maxRankArgs(kd, 1)...)
	args = append(args, maxRankArgs(kn, 1)...)
	args = append(args, maxRankArgs(kp, 0)...)
	args = append(args, maxRankArgs(ks, 0)...)
	return l.Launch(kernels.ShapePad, total, args...)
}

func lowerPad(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	var pads, axes []int64
	var fill operand
	var fbits uint64
	if l.Opset < 11 {
		switch {
		case l.Node.Has("pads"):
			pads = l.Ints("pads", nil)
		case l.Node.Has("paddings"):
			pads = l.Ints("paddings", nil)
		default:
			return l.NoKernel("no pads attribute")
		}
		fbits = scalarBits(x.DType, float64(l.Float("value", 0)))
	} else {
		var err error
		if pads, err = hostInts(l, l.input(1), "pads"); err != nil {
			return err
		}
		if f := l.input(2); f.Present() {
			if f.DType != x.DType {
				return l.NoKernel("constant_value %v for data %v", f.DType, x.DType)
			}
			if f.Len() > 0 {
				fill = f
			}
		}
		if a := l.input(3); a.Present() {
			if axes, err = hostInts(l, a, "axes"); err != nil {
				return err
			}
		}
	}
	rank := x.Rank()
	if axes == nil {
		for i := range rank {
			axes = append(axes, int64(i))
		}
	}
	ax, err := normalizeAxes(l, axes, rank)
	if err != nil {
		return err
	}
	if len(pads) != 2*len(ax) {
		return l.NoKernel("pads %v for axes %v", pads, ax)
	}
	modeName := l.Str("mode", "constant")
	mode, ok := padModes[modeName]
	if !ok {
		return l.NoKernel("mode %q", modeName)
	}
	xs := rowMajorStrides(x.Shape)
	d, n, p := int64Dims(x.Shape), int64Dims(x.Shape), make([]int64, rank)
	var xb int64
	for i, a := range ax {
		begin, end := pads[i], pads[i+len(ax)]
		kept := int64(x.Shape[a]) - max(-begin, 0) - max(-end, 0)
		size := kept + max(begin, 0) + max(end, 0)
		if kept < 0 || kept == 0 && mode != kernels.PAD_CONSTANT && size > 0 {
			return l.NoKernel("pads %v of axis %d of %v", pads, a, x.Shape)
		}
		d[a], n[a], p[a] = size, kept, max(begin, 0)
		xb += max(-begin, 0) * xs[a]
	}
	shape := make([]int, rank)
	for i, v := range d {
		shape[i] = int(v)
	}
	if err := checkOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return launchPad(l, y, x, fill, fbits, mode, xb, d, n, p, xs)
}

// lowerTile is a wrap-around pad: output coordinate c reads c mod the
// input's length. The repeats are the planned output's dims over the
// input's.
func lowerTile(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if y.DType != x.DType || y.Rank() != x.Rank() {
		return l.NoKernel("output %v%v for input %v%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	var reps []int64
	if l.Opset >= 6 {
		if v, err := hostInts(l, l.input(1), "repeats"); err == nil {
			reps = v
		}
	}
	for k, d := range x.Shape {
		switch {
		case reps != nil && (len(reps) != x.Rank() || int64(y.Shape[k]) != int64(d)*reps[k]):
			return l.NoKernel("output %v for input %v repeated %v", y.Shape, x.Shape, reps)
		case d == 0 && y.Shape[k] != 0, d != 0 && y.Shape[k]%d != 0:
			return l.NoKernel("output %v for input %v", y.Shape, x.Shape)
		}
	}
	zeros := make([]int64, x.Rank())
	return launchPad(l, y, x, operand{}, 0, kernels.PAD_WRAP, 0, int64Dims(y.Shape), int64Dims(x.Shape), zeros, rowMajorStrides(x.Shape))
}

func lowerExpand(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if target, err := hostInts(l, l.input(1), "shape"); err == nil {
		t := make([]int, len(target))
		for i, d := range target {
			t[i] = int(d)
		}
		if want, err := cpu.BroadcastShape(x.Shape, t); err != nil || !slices.Equal(want, y.Shape) {
			return l.NoKernel("output %v for input %v expanded to %v", y.Shape, x.Shape, target)
		}
	}
	if y.DType != x.DType {
		return l.NoKernel("output %v for input %v", y.DType, x.DType)
	}
	xs, ok := broadcastInto(y.Shape, x.Shape)
	if !ok {
		return l.NoKernel("input %v does not broadcast to %v", x.Shape, y.Shape)
	}
	return launchCopy(l, y, x, int64Dims(y.Shape), 0, 0, rowMajorStrides(y.Shape), xs)
}

package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the operators that select, join, repeat and pad (shape.cu
// shape_copy and shape_pad): Slice, Concat, Split, Pad, Tile and Expand.
// Each is strided copies or a strided pad whose dims and strides the host
// works out at plan time, from what opsem.Slice, opsem.ConcatAxis and
// opsem.ConcatShape, opsem.SplitParts, opsem.PadGeometry,
// opsem.TileRepeats and opsem.ExpandShape say the operator does.

func init() {
	registerLowering("Slice", lowerSlice)
	registerLowering("Concat", lowerConcat)
	registerLowering("Split", lowerSplit)
	registerLowering("Pad", lowerPad)
	registerLowering("Tile", lowerTile)
	registerLowering("Expand", lowerExpand)
	registerHalf("Slice", "Concat", "Split", "Pad", "Tile", "Expand")
}

// lowerSlice copies what opsem.Slice keeps: a strided copy, the steps as
// strides.
func lowerSlice(l *lowering) error {
	x := l.In[0]
	var ops [4][]int64 // starts, ends, axes, steps: nil when left out
	for i := range ops {
		v, err := hostIntsOrNil(l, l.input(i+1), "Slice input")
		if err != nil {
			return err
		}
		ops[i] = v
	}
	kept, shape, err := opsem.Slice(l.Node, x.Shape, ops[0], ops[1], ops[2], ops[3])
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	st := rowMajorStrides(x.Shape)
	xs := slices.Clone(st)
	var xb int64
	for _, k := range kept {
		xs[k.Axis] = st[k.Axis] * int64(k.Step)
		xb += int64(k.First) * st[k.Axis]
	}
	return launchCopy(l, l.Out[0], x, int64Dims(shape), 0, xb, rowMajorStrides(shape), xs)
}

// lowerConcat copies each input into its columns of the output, along
// opsem.ConcatAxis.
func lowerConcat(l *lowering) error {
	y := l.Out[0]
	shapes := make([][]int, len(l.In))
	for i, p := range l.In {
		if !p.Present() || p.DType != y.DType {
			return l.NoKernel("input %d %v%v for output %v%v", i, p.DType, p.Shape, y.DType, y.Shape)
		}
		shapes[i] = p.Shape
	}
	if len(shapes) == 0 {
		return l.NoKernel("no inputs")
	}
	axis, err := opsem.ConcatAxis(l.Node, len(shapes[0]))
	if err != nil {
		return l.NoKernel("%v", err)
	}
	shape, err := opsem.ConcatShape(shapes, axis)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if err := checkOut(l, 0, y.DType, shape); err != nil {
		return err
	}
	return copyParts(l, y, l.In, axis, true)
}

// lowerSplit copies each output's columns of the input: the parts of
// opsem.SplitParts, with the split operand known on the host.
func lowerSplit(l *lowering) error {
	x := l.In[0]
	split, err := hostIntsOrNil(l, l.input(1), "split")
	if err != nil {
		return err
	}
	axis, parts, err := opsem.SplitParts(l.Node, x.Shape, split)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	for i, a := range parts {
		shape := slices.Clone(x.Shape)
		shape[axis] = a
		if err := checkOut(l, i, x.DType, shape); err != nil {
			return err
		}
	}
	return copyParts(l, x, l.Out, axis, false)
}

// copyParts copies between whole and parts laid side by side along axis
// (which fill it), all viewed as [outer, axis·inner]: into whole (Concat)
// or out of it (Split).
func copyParts(l *lowering, whole operand, parts []operand, axis int, into bool) (err error) {
	o, total, i := opsem.SplitAxis(whole.Shape, axis)
	outer, inner := int64(o), int64(i)
	var at int64
	for _, p := range parts {
		a := int64(p.Shape[axis])
		dims := []int64{outer, a * inner}
		wholeStrides, partStrides := []int64{int64(total) * inner, 1}, []int64{a * inner, 1}
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

// lowerPad pads as opsem.PadGeometry says, with opsem.PadValue (Pad-1,
// Pad-2) or the constant_value operand (Pad-11 on) as the constant.
func lowerPad(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	var fill operand
	var fbits uint64
	if l.Opset < 11 {
		fbits = scalarBits(x.DType, float64(opsem.PadValue(l.Node)))
	} else if f := l.input(2); f.Present() {
		if f.DType != x.DType {
			return l.NoKernel("constant_value %v for data %v", f.DType, x.DType)
		}
		if f.Len() > 0 {
			fill = f
		}
	}
	pads, err := hostIntsOrNil(l, l.input(1), "pads")
	if err != nil {
		return err
	}
	axes, err := hostIntsOrNil(l, l.input(3), "axes")
	if err != nil {
		return err
	}
	g, err := opsem.PadGeometry(l.Node, x.Shape, pads, axes)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	mode, ok := padModes[g.Mode]
	if !ok {
		return l.NoKernel("mode %q", g.Mode)
	}
	if err := checkOut(l, 0, x.DType, g.Out); err != nil {
		return err
	}
	xs := rowMajorStrides(x.Shape)
	rank := x.Rank()
	d, n, p := make([]int64, rank), make([]int64, rank), make([]int64, rank)
	var xb int64
	for a, pd := range g.Dims {
		d[a], n[a], p[a] = int64(pd.Size), int64(pd.Kept), int64(pd.Before)
		xb += int64(pd.Crop) * xs[a]
	}
	return launchPad(l, y, x, fill, fbits, mode, xb, d, n, p, xs)
}

// lowerTile is a wrap-around pad: output coordinate c reads c mod the
// input's length. The repeats are opsem.TileRepeats' when its operands are
// known on the host; otherwise the planned output, which the pad can
// produce when each of its dims is a multiple of the input's.
func lowerTile(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if y.DType != x.DType || y.Rank() != x.Rank() {
		return l.NoKernel("output %v%v for input %v%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	// Input 1 is repeats from Tile-6 on; Tile-1 takes tiles and axis
	// (inputs 1 and 2). opsem.TileRepeats reads what the node's version
	// takes.
	var ops [2][]int64
	onHost := true
	for i := range ops {
		v, err := hostIntsOrNil(l, l.input(i+1), "Tile input")
		if err != nil {
			onHost = false
			break
		}
		ops[i] = v
	}
	if onHost {
		_, out, err := opsem.TileRepeats(l.Node, x.Shape, ops[0], ops[0], ops[1])
		if err != nil {
			return l.NoKernel("%v", err)
		}
		if err := checkOut(l, 0, x.DType, out); err != nil {
			return err
		}
	}
	for k, d := range x.Shape {
		if d == 0 && y.Shape[k] != 0 || d != 0 && y.Shape[k]%d != 0 {
			return l.NoKernel("output %v for input %v", y.Shape, x.Shape)
		}
	}
	zeros := make([]int64, x.Rank())
	return launchPad(l, y, x, operand{}, 0, kernels.PAD_WRAP, 0, int64Dims(y.Shape), int64Dims(x.Shape), zeros, rowMajorStrides(x.Shape))
}

// lowerExpand copies the input broadcast to the output: opsem.ExpandShape's
// when the shape operand is known on the host, else the planned output's.
func lowerExpand(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if target, err := hostInts(l, l.input(1), "shape"); err == nil {
		out, err := opsem.ExpandShape(x.Shape, target)
		if err != nil {
			return l.NoKernel("%v", err)
		}
		if err := checkOut(l, 0, x.DType, out); err != nil {
			return err
		}
	}
	if y.DType != x.DType {
		return l.NoKernel("output %v for input %v", y.DType, x.DType)
	}
	xs, err := broadcastInto(l, x.Shape, y.Shape)
	if err != nil {
		return err
	}
	return launchCopy(l, y, x, int64Dims(y.Shape), 0, 0, rowMajorStrides(y.Shape), xs)
}

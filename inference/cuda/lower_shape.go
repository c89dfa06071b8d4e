package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
)

// Lowerings of the operators that move, select or create elements
// (kernels/shape.cu). Views (Reshape, Flatten, Squeeze, Unsqueeze, Dropout)
// are device copies; most of the rest is one strided copy (shape_copy) whose
// dims and strides the host works out at plan time. The kernels move
// elements as raw bits of 1, 4 or 8 bytes, so they serve every element type.
//
// Shape operands (Reshape's shape, Slice's bounds, Pad's pads, …) are known
// on the host whenever a node is lowered: the executor sends a model whose
// shapes depend on input data to the CPU backend. Output shapes come from
// the plan; each lowering checks them against what it computes and sends
// the node to the host when they differ.

func init() {
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze"} {
		registerLowering(op, lowerView)
	}
	registerLowering("Dropout", lowerDropout)
	registerLowering("Cast", lowerCast)
	registerLowering("CastLike", lowerCast)
	registerLowering("Transpose", lowerTranspose)
	registerLowering("DepthToSpace", lowerDepthToSpace)
	registerLowering("SpaceToDepth", lowerSpaceToDepth)
	registerLowering("Expand", lowerExpand)
	registerLowering("Where", lowerWhere)
	registerLowering("Concat", lowerConcat)
	registerLowering("Split", lowerSplit)
	registerLowering("Slice", lowerSlice)
	registerLowering("Tile", lowerTile)
	registerLowering("Pad", lowerPad)
	registerLowering("Trilu", lowerTrilu)
	registerLowering("Range", lowerRange)
	registerLowering("ConstantOfShape", lowerConstantOfShape)
	registerLowering("OneHot", lowerOneHot)
	registerLowering("Resize", lowerResize)
}

// ---- helpers --------------------------------------------------------------------

// shWidth is the w parameter of the data movement kernels: the element
// size in bytes.
func shWidth(l *Lower, d inference.DType) (int64, error) {
	switch s := d.Size(); s {
	case 1, 4, 8:
		return int64(s), nil
	}
	return 0, l.NoKernel("element type %v", d)
}

// shCheckOut sends the node to the host unless output i is planned with
// the given type and shape.
func shCheckOut(l *Lower, i int, dtype inference.DType, shape []int) error {
	if i >= len(l.Out) || !l.Out[i].Present() {
		return l.NoKernel("output %d is not used", i)
	}
	if o := l.Out[i]; o.DType != dtype || !slices.Equal(o.Shape, shape) {
		return l.NoKernel("output %d planned as %v%v, computed %v%v", i, o.DType, o.Shape, dtype, shape)
	}
	return nil
}

// shRowMajor returns the element strides of shape.
func shRowMajor(shape []int) []int64 {
	s := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= int64(shape[i])
	}
	return s
}

func shDims(shape []int) []int64 {
	d := make([]int64, len(shape))
	for i, v := range shape {
		d[i] = int64(v)
	}
	return d
}

func shProduct(dims []int) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	return n
}

// shBroadcastInto returns the strides of a tensor of shape in read along
// the dims of out (aligned right, 0 where in is broadcast), and false when
// in does not broadcast to out.
func shBroadcastInto(out, in []int) ([]int64, bool) {
	if len(in) > len(out) {
		return nil, false
	}
	s := make([]int64, len(out))
	st := shRowMajor(in)
	for k := range in {
		o := len(out) - len(in) + k
		switch {
		case in[k] == out[o]:
			s[o] = st[k]
		case in[k] != 1:
			return nil, false
		}
	}
	return s, true
}

// shSimplify drops the dims of size 1 and merges neighbouring dims that
// every stride set walks contiguously (s[k] = s[k+1]·d[k+1]): the same
// copy over fewer dims.
func shSimplify(dims []int64, strides ...[]int64) ([]int64, [][]int64) {
	var d []int64
	s := make([][]int64, len(strides))
	for k := len(dims) - 1; k >= 0; k-- {
		if dims[k] == 1 {
			continue
		}
		if last := len(d) - 1; last >= 0 {
			merge := true
			for j := range strides {
				merge = merge && strides[j][k] == s[j][last]*d[last]
			}
			if merge {
				d[last] *= dims[k]
				continue
			}
		}
		d = append(d, dims[k])
		for j := range strides {
			s[j] = append(s[j], strides[j][k])
		}
	}
	slices.Reverse(d)
	for j := range s {
		slices.Reverse(s[j])
	}
	return d, s
}

// shPad6 pads v on the left to MaxRank entries of fill, as kernel args.
func shPad6(v []int64, fill int64) []Arg {
	args := make([]Arg, 0, MaxRank)
	for range MaxRank - len(v) {
		args = append(args, I(fill))
	}
	for _, x := range v {
		args = append(args, I(x))
	}
	return args
}

// shLaunchCopy queues y[yb + Σ c·ys] = x[xb + Σ c·xs] over the coordinates
// c of dims: a device copy when that is one contiguous block, else
// shape_copy.
func shLaunchCopy(l *Lower, y, x Operand, dims []int64, yb, xb int64, ys, xs []int64) error {
	w, err := shWidth(l, x.DType)
	if err != nil {
		return err
	}
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	if n == 0 {
		return nil
	}
	d, s := shSimplify(dims, ys, xs)
	if len(d) == 0 || len(d) == 1 && s[0][0] == 1 && s[1][0] == 1 {
		return l.Copy(y.Offset(yb, []int{int(n)}), x.Offset(xb, []int{int(n)}))
	}
	if len(d) > MaxRank {
		return l.NoKernel("strided copy of rank %d > %d", len(d), MaxRank)
	}
	args := []Arg{P(y), P(x), I(w), I(n), I(yb), I(xb)}
	args = append(args, shPad6(d, 1)...)
	args = append(args, shPad6(s[0], 0)...)
	args = append(args, shPad6(s[1], 0)...)
	return l.Launch("shape_copy", n, args...)
}

// shPermuteCopy queues y = x, read with shape view, with its axes permuted:
// output axis j is view axis perm[j].
func shPermuteCopy(l *Lower, y, x Operand, view []int, perm []int) error {
	vs := shRowMajor(view)
	dims := make([]int64, len(perm))
	xs := make([]int64, len(perm))
	for j, p := range perm {
		dims[j], xs[j] = int64(view[p]), vs[p]
	}
	ys := make([]int64, len(dims))
	acc := int64(1)
	for j := len(dims) - 1; j >= 0; j-- {
		ys[j] = acc
		acc *= dims[j]
	}
	return shLaunchCopy(l, y, x, dims, 0, 0, ys, xs)
}

// Pad modes of shape_pad.
const (
	padConstant = iota
	padEdge
	padReflect
	padWrap
)

var padModes = map[string]int64{"constant": padConstant, "edge": padEdge, "reflect": padReflect, "wrap": padWrap}

// shLaunchPad queues shape_pad: output dims d, input lengths n and strides
// xs from element xb on, leading pads p; fill (when present) or fbits
// supplies the constant.
func shLaunchPad(l *Lower, y, x, fill Operand, fbits uint64, mode int64, xb int64, d, n, p, xs []int64) error {
	w, err := shWidth(l, y.DType)
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
	if len(kd) > MaxRank {
		return l.NoKernel("rank %d > %d", len(kd), MaxRank)
	}
	fp := I(0)
	if fill.Present() {
		fp = P(fill)
	}
	args := []Arg{P(y), P(x), fp, I(int64(fbits)), I(w), I(mode), I(total), I(xb)}
	args = append(args, shPad6(kd, 1)...)
	args = append(args, shPad6(kn, 1)...)
	args = append(args, shPad6(kp, 0)...)
	args = append(args, shPad6(ks, 0)...)
	return l.Launch("shape_pad", total, args...)
}

// shHostInts returns the values of a shape operand, which must be known
// on the host.
func shHostInts(l *Lower, o Operand, what string) ([]int64, error) {
	t, ok := o.Host()
	if !ok {
		return nil, l.NoKernel("%s %q computed on the device", what, o.Name)
	}
	v, err := cpu.Int64s(t)
	if err != nil {
		return nil, l.NoKernel("%s %v: %v", what, t, err)
	}
	return v, nil
}

// shAxes normalizes axes for rank, rejecting repeats.
func shAxes(l *Lower, axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		ax, err := cpu.NormAxis(a, rank)
		if err != nil || slices.Contains(out[:i], ax) {
			return nil, l.NoKernel("axes %v for rank %d", axes, rank)
		}
		out[i] = ax
	}
	return out, nil
}

// shScalarBits returns the bits of v converted to dtype as the CPU
// backend's constants are (a C cast; bool is v != 0), for shape_fill and
// shape_pad.
func shScalarBits(dtype inference.DType, v float64) uint64 {
	switch dtype {
	case inference.Float32:
		return uint64(math.Float32bits(float32(v)))
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

// shFirstBits returns the bits of t's first element.
func shFirstBits(t inference.Tensor) uint64 {
	b := tensorBytes(t)
	var v uint64
	for i := t.DType().Size() - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// ---- views ------------------------------------------------------------------------

// lowerView lowers the operators whose output is the input with another
// shape: a device copy.
func lowerView(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != y.DType || x.Len() != y.Len() {
		return l.NoKernel("%v%v viewed as %v%v", x.DType, x.Shape, y.DType, y.Shape)
	}
	return l.Copy(y, x)
}

// lowerDropout lowers inference-mode Dropout: the output is the input and
// the mask, when asked for, is all true (1 of the input's type before
// Dropout-10).
func lowerDropout(l *Lower) error {
	x := l.In[0]
	training := l.Opset < 7 && l.Int("is_test", 0) == 0
	ratio := float64(l.Float("ratio", 0.5))
	if l.Opset >= 12 {
		ratio = 0.5
		if r := l.Arg(1); r.Present() {
			if r.DType != inference.Float32 || r.Len() != 1 {
				return l.NoKernel("ratio %v%v is not one float", r.DType, r.Shape)
			}
			// Outside training the ratio is not used: a ratio computed
			// on the device matters only to training, which stays on
			// the host.
			ratio = math.NaN()
			if t, ok := r.Host(); ok {
				v, _ := inference.Data[float32](t)
				ratio = float64(v[0])
			}
		}
		if m := l.Arg(2); m.Present() {
			v, err := shHostInts(l, m, "training_mode")
			if err != nil {
				return err
			}
			if len(v) != 1 {
				return l.NoKernel("training_mode has %d values", len(v))
			}
			training = v[0] != 0
		}
	}
	if training && ratio != 0 {
		return l.NoKernel("training mode")
	}
	if err := shCheckOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	if err := l.Copy(l.Out[0], x); err != nil {
		return err
	}
	if len(l.Out) < 2 || !l.Out[1].Present() {
		return nil
	}
	mt := inference.Bool
	if l.Opset < 10 {
		mt = x.DType
	}
	if err := shCheckOut(l, 1, mt, x.Shape); err != nil {
		return err
	}
	mask := l.Out[1]
	w, err := shWidth(l, mt)
	if err != nil {
		return err
	}
	return l.Launch("shape_fill", mask.Len(), P(mask), I(w), I(mask.Len()), I(int64(shScalarBits(mt, 1))))
}

// ---- Cast ----------------------------------------------------------------------

// castCodes are cast_convert's type codes (shape.cu T_*).
var castCodes = map[inference.DType]int64{
	inference.Float32: 0, inference.Int64: 1, inference.Int32: 2, inference.Uint8: 3, inference.Bool: 4,
}

// lowerCast lowers Cast and CastLike: the target type is the planned
// output's, whatever names it (Cast-1's string, Cast-6's code, CastLike's
// second input).
func lowerCast(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if l.Node.OpType == "CastLike" && l.Arg(1).DType != y.DType {
		return l.NoKernel("output %v, want %v", y.DType, l.Arg(1).DType)
	}
	from, ok1 := castCodes[x.DType]
	to, ok2 := castCodes[y.DType]
	if !ok1 || !ok2 {
		return l.NoKernel("cast from %v to %v", x.DType, y.DType)
	}
	if !slices.Equal(x.Shape, y.Shape) {
		return l.NoKernel("output shape %v for input %v", y.Shape, x.Shape)
	}
	if from == to {
		return l.Copy(y, x)
	}
	return l.Launch("cast_convert", y.Len(), P(y), P(x), I(y.Len()), I(from), I(to))
}

// ---- permuting -----------------------------------------------------------------

func lowerTranspose(l *Lower) error {
	x := l.In[0]
	rank := x.Rank()
	perm := l.Ints("perm", nil)
	if len(perm) == 0 {
		for i := rank - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != rank {
		return l.NoKernel("perm %v for rank %d", perm, rank)
	}
	p, err := shAxes(l, perm, rank)
	if err != nil {
		return err
	}
	shape := make([]int, rank)
	for j, a := range p {
		shape[j] = x.Shape[a]
	}
	if err := shCheckOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return shPermuteCopy(l, l.Out[0], x, x.Shape, p)
}

// lowerDepthToSpace views [N, C, H, W] as six dims and permutes them
// (DCR: [N, b, b, C/b², H, W]; CRD: [N, C/b², b, b, H, W]).
func lowerDepthToSpace(l *Lower) error {
	x := l.In[0]
	s := x.Shape
	b := int(l.Int("blocksize", 0))
	if len(s) != 4 || b <= 0 || s[1]%(b*b) != 0 {
		return l.NoKernel("input %v with blocksize %d", s, b)
	}
	c := s[1] / (b * b)
	var view, perm []int
	switch mode := l.Str("mode", "DCR"); mode {
	case "DCR":
		view, perm = []int{s[0], b, b, c, s[2], s[3]}, []int{0, 3, 4, 1, 5, 2}
	case "CRD":
		view, perm = []int{s[0], c, b, b, s[2], s[3]}, []int{0, 1, 4, 2, 5, 3}
	default:
		return l.NoKernel("mode %q", mode)
	}
	if err := shCheckOut(l, 0, x.DType, []int{s[0], c, s[2] * b, s[3] * b}); err != nil {
		return err
	}
	return shPermuteCopy(l, l.Out[0], x, view, perm)
}

func lowerSpaceToDepth(l *Lower) error {
	x := l.In[0]
	s := x.Shape
	b := int(l.Int("blocksize", 0))
	if len(s) != 4 || b <= 0 || s[2]%b != 0 || s[3]%b != 0 {
		return l.NoKernel("input %v with blocksize %d", s, b)
	}
	if err := shCheckOut(l, 0, x.DType, []int{s[0], s[1] * b * b, s[2] / b, s[3] / b}); err != nil {
		return err
	}
	view := []int{s[0], s[1], s[2] / b, b, s[3] / b, b}
	return shPermuteCopy(l, l.Out[0], x, view, []int{0, 3, 5, 1, 2, 4})
}

// ---- broadcasting ----------------------------------------------------------------

func lowerExpand(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if target, err := shHostInts(l, l.Arg(1), "shape"); err == nil {
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
	xs, ok := shBroadcastInto(y.Shape, x.Shape)
	if !ok {
		return l.NoKernel("input %v does not broadcast to %v", x.Shape, y.Shape)
	}
	return shLaunchCopy(l, y, x, shDims(y.Shape), 0, 0, shRowMajor(y.Shape), xs)
}

// lowerWhere picks, with broadcasting, x where the condition holds and y
// elsewhere.
func lowerWhere(l *Lower) error {
	c, a, b, y := l.In[0], l.In[1], l.In[2], l.Out[0]
	if c.DType != inference.Bool || a.DType != b.DType {
		return l.NoKernel("condition %v, values %v and %v", c.DType, a.DType, b.DType)
	}
	shape, err := cpu.BroadcastShape(c.Shape, a.Shape, b.Shape)
	if err != nil {
		return l.NoKernel("shapes %v, %v and %v do not broadcast", c.Shape, a.Shape, b.Shape)
	}
	if err := shCheckOut(l, 0, a.DType, shape); err != nil {
		return err
	}
	w, err := shWidth(l, a.DType)
	if err != nil {
		return err
	}
	n := y.Len()
	if n == 0 {
		return nil
	}
	var sets [][]int64
	for _, in := range []Operand{y, c, a, b} {
		s, _ := shBroadcastInto(shape, in.Shape)
		sets = append(sets, s)
	}
	d, s := shSimplify(shDims(shape), sets...)
	if len(d) > MaxRank {
		return l.NoKernel("rank %d > %d", len(d), MaxRank)
	}
	args := []Arg{P(y), P(c), P(a), P(b), I(w), I(n)}
	args = append(args, shPad6(d, 1)...)
	for _, st := range s[1:] {
		args = append(args, shPad6(st, 0)...)
	}
	return l.Launch("shape_where", n, args...)
}

// ---- joining and splitting -----------------------------------------------------

// lowerConcat copies each input into its columns of the output.
func lowerConcat(l *Lower) error {
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
func lowerSplit(l *Lower) error {
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
func copyParts(l *Lower, whole Operand, parts []Operand, axis int, into bool) (err error) {
	outer, inner := shProduct(whole.Shape[:axis]), shProduct(whole.Shape[axis+1:])
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
			err = shLaunchCopy(l, whole, p, dims, at*inner, 0, wholeStrides, partStrides)
		} else {
			err = shLaunchCopy(l, p, whole, dims, 0, at*inner, partStrides, wholeStrides)
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

// ---- selecting -------------------------------------------------------------------

func lowerSlice(l *Lower) error {
	x := l.In[0]
	var starts, ends, axes, steps []int64
	if l.Opset < 10 {
		starts, ends, axes = l.Ints("starts", nil), l.Ints("ends", nil), l.Ints("axes", nil)
	} else {
		for i, p := range []*[]int64{&starts, &ends, &axes, &steps} {
			o := l.Arg(i + 1)
			if !o.Present() {
				continue
			}
			v, err := shHostInts(l, o, "Slice input")
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
	ax, err := shAxes(l, axes, x.Rank())
	if err != nil {
		return err
	}
	st := shRowMajor(x.Shape)
	dims, xs := shDims(x.Shape), slices.Clone(st)
	var xb int64
	for i, a := range ax {
		first, count, ok := shSliceRange(starts[i], ends[i], steps[i], int64(x.Shape[a]))
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
	if err := shCheckOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return shLaunchCopy(l, l.Out[0], x, dims, 0, xb, shRowMajor(shape), xs)
}

// shSliceRange clamps a slice of a dimension as ONNX Slice does (as the
// CPU backend's slSliceRange) and returns its first index and length.
func shSliceRange(start, end, step, dim int64) (first, count int64, ok bool) {
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

// ---- repeating and padding ----------------------------------------------------

// lowerTile is a wrap-around pad: output coordinate c reads c mod the
// input's length. The repeats are the planned output's dims over the
// input's.
func lowerTile(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if y.DType != x.DType || y.Rank() != x.Rank() {
		return l.NoKernel("output %v%v for input %v%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	var reps []int64
	if l.Opset >= 6 {
		if v, err := shHostInts(l, l.Arg(1), "repeats"); err == nil {
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
	return shLaunchPad(l, y, x, Operand{}, 0, padWrap, 0, shDims(y.Shape), shDims(x.Shape), zeros, shRowMajor(x.Shape))
}

func lowerPad(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	var pads, axes []int64
	var fill Operand
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
		fbits = shScalarBits(x.DType, float64(l.Float("value", 0)))
	} else {
		var err error
		if pads, err = shHostInts(l, l.Arg(1), "pads"); err != nil {
			return err
		}
		if f := l.Arg(2); f.Present() {
			if f.DType != x.DType {
				return l.NoKernel("constant_value %v for data %v", f.DType, x.DType)
			}
			if f.Len() > 0 {
				fill = f
			}
		}
		if a := l.Arg(3); a.Present() {
			if axes, err = shHostInts(l, a, "axes"); err != nil {
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
	ax, err := shAxes(l, axes, rank)
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
	xs := shRowMajor(x.Shape)
	d, n, p := shDims(x.Shape), shDims(x.Shape), make([]int64, rank)
	var xb int64
	for i, a := range ax {
		begin, end := pads[i], pads[i+len(ax)]
		kept := int64(x.Shape[a]) - max(-begin, 0) - max(-end, 0)
		size := kept + max(begin, 0) + max(end, 0)
		if kept < 0 || kept == 0 && mode != padConstant && size > 0 {
			return l.NoKernel("pads %v of axis %d of %v", pads, a, x.Shape)
		}
		d[a], n[a], p[a] = size, kept, max(begin, 0)
		xb += max(-begin, 0) * xs[a]
	}
	shape := make([]int, rank)
	for i, v := range d {
		shape[i] = int(v)
	}
	if err := shCheckOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	return shLaunchPad(l, y, x, fill, fbits, mode, xb, d, n, p, xs)
}

// ---- creating ----------------------------------------------------------------------

// lowerTrilu zeroes what lies outside the kept triangle; k may be device
// data (any value is valid).
func lowerTrilu(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.Rank() < 2 {
		return l.NoKernel("input %v has rank below 2", x.Shape)
	}
	if err := shCheckOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	w, err := shWidth(l, x.DType)
	if err != nil {
		return err
	}
	kp, k := I(0), int64(0)
	if ko := l.Arg(1); ko.Present() {
		if ko.Len() != 1 {
			return l.NoKernel("k %v is not one integer", ko.Shape)
		}
		if t, ok := ko.Host(); ok {
			v, err := cpu.Int64s(t)
			if err != nil {
				return l.NoKernel("k %v", t)
			}
			k = v[0]
		} else if ko.DType == inference.Int64 {
			kp = P(ko)
		} else {
			return l.NoKernel("k of type %v on the device", ko.DType)
		}
	}
	upper := b2i(l.Int("upper", 1) == 1)
	rows, cols := x.Shape[x.Rank()-2], x.Shape[x.Rank()-1]
	n := y.Len()
	return l.Launch("shape_trilu", n, P(y), P(x), kp, I(k), I(w), I(n), I(rows), I(cols), I(upper))
}

// lowerRange fills start + i·delta; its bounds are known on the host (the
// node is lowered only when its output is too large to compute at plan
// time).
func lowerRange(l *Lower) error {
	y := l.Out[0]
	var t [3]inference.Tensor
	for i := range t {
		o := l.Arg(i)
		v, ok := o.Host()
		if !ok || v.Len() != 1 || v.DType() != y.DType {
			return l.NoKernel("input %d %q is not one %v known on the host", i, o.Name, y.DType)
		}
		t[i] = v
	}
	var count int64
	var fstart, fdelta float64
	var istart, idelta int64
	switch y.DType {
	case inference.Float32:
		var v [3]float64
		for i := range v {
			d, _ := inference.Data[float32](t[i])
			v[i] = float64(d[0])
		}
		if v[2] == 0 || math.IsNaN(v[0]) || math.IsNaN(v[1]) || math.IsNaN(v[2]) {
			return l.NoKernel("range(%v, %v, %v)", v[0], v[1], v[2])
		}
		count = int64(max(math.Ceil((v[1]-v[0])/v[2]), 0))
		fstart, fdelta = v[0], v[2]
	case inference.Int64, inference.Int32:
		var v [3]int64
		for i := range v {
			d, _ := cpu.Int64s(t[i])
			v[i] = d[0]
		}
		if v[2] == 0 {
			return l.NoKernel("range(%d, %d, %d)", v[0], v[1], v[2])
		}
		span := v[1] - v[0]
		count = span / v[2]
		if span%v[2] != 0 {
			count++
		}
		count = max(count, 0)
		istart, idelta = v[0], v[2]
	default:
		return l.NoKernel("element type %v", y.DType)
	}
	if err := shCheckOut(l, 0, y.DType, []int{int(count)}); err != nil {
		return err
	}
	return l.Launch("shape_range", count, P(y), I(castCodes[y.DType]), I(count), F(fstart), F(fdelta), I(istart), I(idelta))
}

func lowerConstantOfShape(l *Lower) error {
	y := l.Out[0]
	value := l.Node.Attrs["value"].Tensor
	if value.DType() == 0 {
		v, err := inference.New([]int{}, []float32{0})
		if err != nil {
			return err
		}
		value = v
	}
	if value.Len() != 1 {
		return l.NoKernel("value %v is not one element", value)
	}
	if dims, err := shHostInts(l, l.In[0], "shape"); err == nil {
		if !slices.Equal(shDims(y.Shape), dims) {
			return l.NoKernel("output %v for shape %v", y.Shape, dims)
		}
	}
	if err := shCheckOut(l, 0, value.DType(), y.Shape); err != nil {
		return err
	}
	w, err := shWidth(l, y.DType)
	if err != nil {
		return err
	}
	return l.Launch("shape_fill", y.Len(), P(y), I(w), I(y.Len()), I(int64(shFirstBits(value))))
}

// shIndexTypes are the index type codes of the kernels (shape.cu IDX_*).
var shIndexTypes = map[inference.DType]int64{inference.Int64: 0, inference.Int32: 1, inference.Float32: 2}

// lowerOneHot lowers OneHot with depth known on the host; the indices may
// be device data (an index out of range gives an all-off row, no error).
func lowerOneHot(l *Lower) error {
	ind, vals := l.In[0], l.In[2]
	dv, err := shHostInts(l, l.In[1], "depth")
	if err != nil {
		return err
	}
	if len(dv) != 1 || dv[0] < 0 || dv[0] > math.MaxInt32 || vals.Len() != 2 {
		return l.NoKernel("depth %v, values %v", dv, vals.Shape)
	}
	depth := int(dv[0])
	itype, ok := shIndexTypes[ind.DType]
	if !ok {
		return l.NoKernel("indices of type %v", ind.DType)
	}
	is := ind.Shape
	axis := l.Int("axis", -1)
	if axis < 0 {
		axis += int64(len(is)) + 1
	}
	if axis < 0 || axis > int64(len(is)) {
		return l.NoKernel("axis %d for indices %v", l.Int("axis", -1), is)
	}
	shape := slices.Concat(is[:axis], []int{depth}, is[axis:])
	if err := shCheckOut(l, 0, vals.DType, shape); err != nil {
		return err
	}
	w, err := shWidth(l, vals.DType)
	if err != nil {
		return err
	}
	y := l.Out[0]
	n := y.Len()
	return l.Launch("shape_onehot", n, P(y), P(ind), P(vals), I(itype), I(w), I(n), I(depth), I(shProduct(is[axis:])))
}

// ---- Resize ----------------------------------------------------------------------

// Codes of resize_axis (shape.cu RS_*, RC_*, RN_*).
var (
	resizeModes  = map[string]int64{"nearest": 0, "linear": 1, "cubic": 2}
	resizeCoords = map[string]int64{
		"half_pixel": 0, "half_pixel_symmetric": 1, "pytorch_half_pixel": 2, "align_corners": 3,
		"asymmetric": 4, "tf_half_pixel_for_nn": 5, "tf_crop_and_resize": 6,
	}
	resizeNearest = map[string]int64{"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}
)

const resizeLegacyNearest = 4 // Resize-10: floor when upsampling, ceil when downsampling

// resizeParams are resize_axis's parameters other than the axis.
type resizeParams struct {
	mode, coord, nearest int64
	antialias, exclude   bool
	cubicA, extrapolate  float64
}

// lowerResize resizes one axis at a time, as the CPU backend does (imResample
// in inference/cpu/ops_image.go), with the same float64 arithmetic: float64
// temporaries between the axes, float32 at the end.
func lowerResize(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("input of type %v", x.DType)
	}
	rank := x.Rank()
	in := x.Shape
	scale := make([]float64, rank)
	for i := range scale {
		scale[i] = 1
	}
	out := slices.Clone(in)
	var roi [][2]float64
	var rp resizeParams
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	mode := l.Str("mode", "nearest")
	if l.Opset < 11 {
		if mode == "bilinear" {
			mode = "linear"
		}
		if mode != "nearest" && mode != "linear" {
			return l.NoKernel("mode %q", mode)
		}
		s, err := resizeFloats(l, l.Arg(1), "scales")
		if err != nil {
			return err
		}
		if len(s) != rank {
			return l.NoKernel("scales %v for rank %d", s, rank)
		}
		for i, v := range s {
			if !(v > 0) || math.IsInf(v, 0) || math.Floor(v*float64(in[i])) > math.MaxInt32 {
				return l.NoKernel("scales %v", s)
			}
			scale[i], out[i] = v, int(math.Floor(v*float64(in[i])))
		}
		rp = resizeParams{mode: resizeModes[mode], coord: resizeCoords["asymmetric"], nearest: resizeLegacyNearest}
	} else {
		coord := l.Str("coordinate_transformation_mode", "half_pixel")
		nearest := l.Str("nearest_mode", "round_prefer_floor")
		var ok1, ok2, ok3 bool
		rp.mode, ok1 = resizeModes[mode]
		rp.coord, ok2 = resizeCoords[coord]
		rp.nearest, ok3 = resizeNearest[nearest]
		if coord == "tf_half_pixel_for_nn" && l.Opset >= 13 || coord == "half_pixel_symmetric" && l.Opset < 19 {
			ok2 = false
		}
		if !ok1 || !ok2 || !ok3 {
			return l.NoKernel("mode %q, coordinate_transformation_mode %q, nearest_mode %q", mode, coord, nearest)
		}
		rp.cubicA = float64(l.Float("cubic_coeff_a", -0.75))
		rp.exclude = l.Int("exclude_outside", 0) != 0
		rp.extrapolate = float64(l.Float("extrapolation_value", 0))
		policy := "stretch"
		if l.Opset >= 18 {
			rp.antialias = l.Int("antialias", 0) != 0
			policy = l.Str("keep_aspect_ratio_policy", "stretch")
			if l.Node.Has("axes") {
				a, err := shAxes(l, l.Ints("axes", nil), rank)
				if err != nil {
					return err
				}
				axes = a
			}
		}
		scalesOp, sizesOp := l.Arg(2), l.Arg(3)
		hasScales, hasSizes := scalesOp.Present() && scalesOp.Len() > 0, sizesOp.Present() && sizesOp.Len() > 0
		switch {
		case hasScales && !hasSizes:
			s, err := resizeFloats(l, scalesOp, "scales")
			if err != nil {
				return err
			}
			if len(s) != len(axes) {
				return l.NoKernel("scales %v for axes %v", s, axes)
			}
			for i, ax := range axes {
				v := s[i]
				if !(v > 0) || math.IsInf(v, 0) || math.Floor(v*float64(in[ax])) > math.MaxInt32 {
					return l.NoKernel("scales %v", s)
				}
				scale[ax], out[ax] = v, int(math.Floor(v*float64(in[ax])))
			}
		case hasSizes && !hasScales:
			sz, err := shHostInts(l, sizesOp, "sizes")
			if err != nil {
				return err
			}
			if len(sz) != len(axes) {
				return l.NoKernel("sizes %v for axes %v", sz, axes)
			}
			for i, ax := range axes {
				if sz[i] < 0 || sz[i] > math.MaxInt32 || in[ax] == 0 {
					return l.NoKernel("sizes %v for input %v", sz, in)
				}
				scale[ax], out[ax] = float64(sz[i])/float64(in[ax]), int(sz[i])
			}
			if policy != "stretch" {
				var s float64
				switch policy {
				case "not_larger":
					s = math.Inf(1)
					for _, ax := range axes {
						s = min(s, scale[ax])
					}
				case "not_smaller":
					s = math.Inf(-1)
					for _, ax := range axes {
						s = max(s, scale[ax])
					}
				default:
					return l.NoKernel("keep_aspect_ratio_policy %q", policy)
				}
				for _, ax := range axes {
					scale[ax] = s
					out[ax] = int(s*float64(in[ax]) + 0.5)
				}
			}
		default:
			return l.NoKernel("scales and sizes both given or both left out")
		}
		if coord == "tf_crop_and_resize" {
			r, err := resizeFloats(l, l.Arg(1), "roi")
			if err != nil {
				return err
			}
			if len(r) != 2*len(axes) {
				return l.NoKernel("roi %v for axes %v", r, axes)
			}
			roi = make([][2]float64, rank)
			for i := range roi {
				roi[i] = [2]float64{0, 1}
			}
			for i, ax := range axes {
				roi[ax] = [2]float64{r[i], r[len(axes)+i]}
			}
		}
		slices.Sort(axes)
	}
	if err := shCheckOut(l, 0, inference.Float32, out); err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	if x.Len() == 0 {
		return l.NoKernel("empty input %v resized to %v", in, out)
	}

	// The axes that change, in order; the others are skipped as the CPU
	// backend skips them.
	type pass struct {
		ax     int
		roi    [2]float64
		before []int // shape before the pass
	}
	var passes []pass
	cur := slices.Clone(in)
	for _, ax := range axes {
		r := [2]float64{0, 1}
		if roi != nil {
			r = roi[ax]
		}
		if resizeIsClose(scale[ax], 1) && out[ax] == cur[ax] && resizeIsClose(r[0], 0) && resizeIsClose(r[1], 1) {
			continue
		}
		passes = append(passes, pass{ax: ax, roi: r, before: slices.Clone(cur)})
		cur[ax] = out[ax]
	}
	if len(passes) == 0 {
		return l.Copy(y, x)
	}
	src, srcDouble := x, int64(0)
	for i, p := range passes {
		after := slices.Clone(p.before)
		after[p.ax] = out[p.ax]
		dst, dstDouble := y, int64(0)
		if i < len(passes)-1 {
			dst, dstDouble = l.Scratch(inference.Int64, after), 1 // float64 temporaries
		}
		outer, inner := shProduct(p.before[:p.ax]), shProduct(p.before[p.ax+1:])
		n := outer * int64(out[p.ax]) * inner
		err := l.Launch("resize_axis", n, P(dst), P(src), I(dstDouble), I(srcDouble), I(outer), I(p.before[p.ax]),
			I(out[p.ax]), I(inner), I(rp.mode), I(rp.coord), I(rp.nearest), I(b2i(rp.antialias)), I(b2i(rp.exclude)),
			F(rp.cubicA), F(scale[p.ax]), F(p.roi[0]), F(p.roi[1]), F(rp.extrapolate))
		if err != nil {
			return err
		}
		src, srcDouble = dst, dstDouble
	}
	return nil
}

// resizeFloats returns a float32 operand's values known on the host.
func resizeFloats(l *Lower, o Operand, what string) ([]float64, error) {
	t, ok := o.Host()
	if !ok {
		return nil, l.NoKernel("%s %q computed on the device", what, o.Name)
	}
	v, err := inference.Data[float32](t)
	if err != nil {
		return nil, l.NoKernel("%s %v is not float32", what, t)
	}
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out, nil
}

// resizeIsClose is Python's math.isclose with rel_tol 1e-9, with which
// the CPU backend (as ONNX's reference) skips the axes it leaves unchanged.
func resizeIsClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))
}

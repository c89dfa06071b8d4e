package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the image operators (shape.cu resize_axis): Resize, as
// opsem.Resize says, one axis at a time as the CPU backend does.

func init() {
	registerLowering("Resize", lowerResize)
}

// Codes of resize_axis (shape.cu RS_*, RC_*, RN_*) for the fields of an
// opsem.Resampling.
var (
	resizeModes  = map[string]int64{"nearest": kernels.RS_NEAREST, "linear": kernels.RS_LINEAR, "cubic": kernels.RS_CUBIC}
	resizeCoords = map[string]int64{
		"half_pixel": kernels.RC_HALF_PIXEL, "half_pixel_symmetric": kernels.RC_HALF_PIXEL_SYMMETRIC,
		"pytorch_half_pixel": kernels.RC_PYTORCH_HALF_PIXEL, "align_corners": kernels.RC_ALIGN_CORNERS,
		"asymmetric": kernels.RC_ASYMMETRIC, "tf_half_pixel_for_nn": kernels.RC_TF_HALF_PIXEL_FOR_NN,
		"tf_crop_and_resize": kernels.RC_TF_CROP_AND_RESIZE,
	}
	resizeNearest = map[string]int64{
		"round_prefer_floor": kernels.RN_ROUND_PREFER_FLOOR, "round_prefer_ceil": kernels.RN_ROUND_PREFER_CEIL,
		"floor": kernels.RN_FLOOR, "ceil": kernels.RN_CEIL, opsem.LegacyNearest: kernels.RN_LEGACY,
	}
)

// lowerResize resizes one axis at a time, as the CPU backend does, with
// the same float64 arithmetic: float64 temporaries between the axes,
// float32 at the end. The geometry is opsem.Resize's; the axes it leaves
// unchanged (ResizeGeometry.Unchanged) are skipped.
func lowerResize(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("input of type %v", x.DType)
	}
	var roi, scales []float32
	var sizes []int64
	var err error
	if l.Opset < 11 { // Resize-10: X, scales
		if scales, err = resizeFloats(l, l.input(1), "scales"); err != nil {
			return err
		}
	} else {
		// roi matters only to tf_crop_and_resize, where opsem.Resize
		// rejects a nil one: it is left nil unless the host knows it as
		// float32.
		if t, ok := l.input(1).Host(); ok && t.Len() > 0 {
			roi, _ = inference.Data[float32](t)
		}
		if scales, err = resizeFloats(l, l.input(2), "scales"); err != nil {
			return err
		}
		if o := l.input(3); o.Present() && o.Len() > 0 {
			if sizes, err = hostInts(l, o, "sizes"); err != nil {
				return err
			}
		}
	}
	g, err := opsem.Resize(l.Node, x.Shape, roi, scales, sizes)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	mode, ok1 := resizeModes[g.Mode]
	coord, ok2 := resizeCoords[g.Coord]
	nearest, ok3 := resizeNearest[g.NearestMode]
	if !ok1 || !ok2 || !ok3 {
		return l.NoKernel("mode %q, coordinate_transformation_mode %q, nearest_mode %q", g.Mode, g.Coord, g.NearestMode)
	}
	if err := checkOut(l, 0, inference.Float32, g.Out); err != nil {
		return err
	}
	if y.Len() == 0 {
		return nil
	}
	if x.Len() == 0 {
		return l.NoKernel("empty input %v resized to %v", x.Shape, g.Out)
	}

	// The axes that change, in order.
	type pass struct {
		ax     int
		before []int // shape before the pass
	}
	var passes []pass
	cur := slices.Clone(x.Shape)
	for _, ax := range g.Axes {
		if g.Unchanged(ax, cur[ax]) {
			continue
		}
		passes = append(passes, pass{ax: ax, before: slices.Clone(cur)})
		cur[ax] = g.Out[ax]
	}
	if len(passes) == 0 {
		return l.Copy(y, x)
	}
	src, srcDouble := x, int64(0)
	for i, p := range passes {
		after := slices.Clone(p.before)
		after[p.ax] = g.Out[p.ax]
		dst, dstDouble := y, int64(0)
		if i < len(passes)-1 {
			dst, dstDouble = l.Scratch(inference.Int64, after), 1 // float64 temporaries
		}
		outer, _, inner := opsem.SplitAxis(p.before, p.ax)
		n := int64(outer) * int64(g.Out[p.ax]) * int64(inner)
		roi := g.AxisROI(p.ax)
		err := l.Launch(kernels.ResizeAxis, n, ptrArg(dst), ptrArg(src), intArg(dstDouble), intArg(srcDouble), intArg(outer), intArg(p.before[p.ax]),
			intArg(g.Out[p.ax]), intArg(inner), intArg(mode), intArg(coord), intArg(nearest), intArg(b2i(g.Antialias)), intArg(b2i(g.Exclude)),
			floatArg(g.CubicA), floatArg(g.Scale[p.ax]), floatArg(roi[0]), floatArg(roi[1]), floatArg(g.Extrapolate))
		if err != nil {
			return err
		}
		src, srcDouble = dst, dstDouble
	}
	return nil
}

// resizeFloats returns the values of a float32 operand known on the host,
// or nil when the node leaves it out or gives it empty.
func resizeFloats(l *lowering, o operand, what string) ([]float32, error) {
	if !o.Present() || o.Len() == 0 {
		return nil, nil
	}
	t, ok := o.Host()
	if !ok {
		return nil, l.NoKernel("%s %q computed on the device", what, o.Name)
	}
	v, err := inference.Data[float32](t)
	if err != nil {
		return nil, l.NoKernel("%s %v is not float32", what, t)
	}
	return v, nil
}

package cuda

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the image operators (shape.cu resize_axis): Resize, one
// axis at a time, as the CPU backend does.

func init() {
	registerLowering("Resize", lowerResize)
}

// Codes of resize_axis (shape.cu RS_*, RC_*, RN_*).
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

// resizeParams are resize_axis's parameters other than the axis.
type resizeParams struct {
	mode, coord, nearest int64
	antialias, exclude   bool
	cubicA, extrapolate  float64
}

// lowerResize resizes one axis at a time, as the CPU backend does (imResample
// in inference/cpu/ops_image.go), with the same float64 arithmetic: float64
// temporaries between the axes, float32 at the end.
func lowerResize(l *lowering) error {
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
		s, err := resizeFloats(l, l.input(1), "scales")
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
		rp = resizeParams{mode: resizeModes[mode], coord: resizeCoords["asymmetric"], nearest: kernels.RN_LEGACY}
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
				a, err := normalizeAxes(l, l.Ints("axes", nil), rank)
				if err != nil {
					return err
				}
				axes = a
			}
		}
		scalesOp, sizesOp := l.input(2), l.input(3)
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
			sz, err := hostInts(l, sizesOp, "sizes")
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
			r, err := resizeFloats(l, l.input(1), "roi")
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
	if err := checkOut(l, 0, inference.Float32, out); err != nil {
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
		outer, inner := dimsProduct(p.before[:p.ax]), dimsProduct(p.before[p.ax+1:])
		n := outer * int64(out[p.ax]) * inner
		err := l.Launch(kernels.ResizeAxis, n, ptrArg(dst), ptrArg(src), intArg(dstDouble), intArg(srcDouble), intArg(outer), intArg(p.before[p.ax]),
			intArg(out[p.ax]), intArg(inner), intArg(rp.mode), intArg(rp.coord), intArg(rp.nearest), intArg(b2i(rp.antialias)), intArg(b2i(rp.exclude)),
			floatArg(rp.cubicA), floatArg(scale[p.ax]), floatArg(p.roi[0]), floatArg(p.roi[1]), floatArg(rp.extrapolate))
		if err != nil {
			return err
		}
		src, srcDouble = dst, dstDouble
	}
	return nil
}

// resizeFloats returns a float32 operand's values known on the host.
func resizeFloats(l *lowering, o operand, what string) ([]float64, error) {
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

package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Resampling is how Resize (or Upsample) maps output positions to input
// positions and weighs them.
type Resampling struct {
	Mode        string  // nearest, linear or cubic
	Coord       string  // coordinate_transformation_mode
	NearestMode string  // round_prefer_floor, round_prefer_ceil, floor, ceil, or legacy (Resize-10, Upsample)
	CubicA      float64 // cubic_coeff_a
	Exclude     bool    // exclude_outside
	Antialias   bool
	Extrapolate float64 // extrapolation_value, for tf_crop_and_resize
}

// LegacyNearest is the nearest mode of Resize-10 and Upsample: floor(x_in)
// when upsampling and ceil(x_in) when downsampling along the axis, as ONNX
// Runtime does for these versions (the spec does not say; both agree with
// the operators' examples).
const LegacyNearest = "legacy"

// ResizeGeometry is what Resize does to an input: it resamples each of the
// Axes (sorted) with the factor Scale[axis] (1 elsewhere) to the size
// Out[axis]. ROI, per dimension, is the [start, end] of the input region in
// normalised coordinates, nil unless Coord is tf_crop_and_resize.
type ResizeGeometry struct {
	Resampling
	Axes  []int
	Scale []float64
	Out   []int
	ROI   [][2]float64
}

// Resize returns what Resize does to an input of shape x, from its
// attributes and its operands roi, scales and sizes (each nil when the node
// leaves it out or gives it empty). Resize-10 takes only scales (its
// input 1, passed here as scales) and resizes as Upsample does. From
// Resize-11 exactly one of scales and sizes is given, per axis of the
// attribute axes (Resize-18; default all); sizes with
// keep_aspect_ratio_policy not_larger or not_smaller scale every axis by
// one factor, the smallest or largest of the sizes' ratios.
func Resize(n Node, x []int, roi, scales []float32, sizes []int64) (ResizeGeometry, error) {
	mode := n.Str("mode", "nearest")
	if n.Opset < 11 {
		return legacyResize(n, x, mode, scales)
	}
	g := ResizeGeometry{Resampling: Resampling{
		Mode:        mode,
		Coord:       n.Str("coordinate_transformation_mode", "half_pixel"),
		NearestMode: n.Str("nearest_mode", "round_prefer_floor"),
		CubicA:      float64(n.Float("cubic_coeff_a", -0.75)),
		Exclude:     n.Int("exclude_outside", 0) != 0,
		Extrapolate: float64(n.Float("extrapolation_value", 0)),
	}}
	switch g.Mode {
	case "nearest", "linear", "cubic":
	default:
		return g, n.Unsupported("mode %q", g.Mode)
	}
	switch g.NearestMode {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return g, n.Unsupported("nearest_mode %q", g.NearestMode)
	}
	switch c := g.Coord; {
	case c == "half_pixel", c == "pytorch_half_pixel", c == "align_corners", c == "asymmetric", c == "tf_crop_and_resize":
	case c == "tf_half_pixel_for_nn" && n.Opset < 13:
	case c == "half_pixel_symmetric" && n.Opset >= 19:
	default:
		return g, n.Unsupported("coordinate_transformation_mode %q", c)
	}

	rank := len(x)
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	policy := "stretch"
	if n.Opset >= 18 {
		g.Antialias = n.Int("antialias", 0) != 0
		policy = n.Str("keep_aspect_ratio_policy", "stretch")
		if n.Has("axes") {
			raw := n.Ints("axes", nil)
			a, err := NormAxes(raw, rank)
			if err != nil {
				return g, fmt.Errorf("attribute axes %v: %w", raw, err)
			}
			axes = a
		}
	}

	g.Scale = make([]float64, rank)
	g.Out = slices.Clone(x)
	for i := range g.Scale {
		g.Scale[i] = 1
	}
	switch {
	case scales != nil && sizes != nil:
		return g, fmt.Errorf("both scales and sizes are given: %w", inference.ErrBadModel)
	case scales != nil:
		if len(scales) != len(axes) {
			return g, fmt.Errorf("scales has %d values for %d axes of X %v: %w", len(scales), len(axes), x, inference.ErrShape)
		}
		for i, ax := range axes {
			if err := g.scaleAxis(ax, x[ax], float64(scales[i])); err != nil {
				return g, fmt.Errorf("scales %v: %w", scales, err)
			}
		}
	case sizes != nil:
		if len(sizes) != len(axes) {
			return g, fmt.Errorf("sizes has %d values for %d axes of X %v: %w", len(sizes), len(axes), x, inference.ErrShape)
		}
		for i, ax := range axes {
			if sizes[i] < 0 || sizes[i] > maxDim {
				return g, fmt.Errorf("sizes %v: size %d is out of range: %w", sizes, i, inference.ErrShape)
			}
			if x[ax] == 0 {
				if sizes[i] != 0 {
					return g, fmt.Errorf("sizes %v: axis %d of X %v is empty: %w", sizes, ax, x, inference.ErrShape)
				}
				g.Out[ax] = 0
				continue
			}
			g.Scale[ax] = float64(sizes[i]) / float64(x[ax])
			g.Out[ax] = int(sizes[i])
		}
		if policy != "stretch" {
			var s float64
			switch policy {
			case "not_larger":
				s = math.Inf(1)
				for _, ax := range axes {
					s = min(s, g.Scale[ax])
				}
			case "not_smaller":
				s = math.Inf(-1)
				for _, ax := range axes {
					s = max(s, g.Scale[ax])
				}
			default:
				return g, n.Unsupported("keep_aspect_ratio_policy %q", policy)
			}
			for _, ax := range axes {
				size := math.Floor(s*float64(x[ax]) + 0.5) // round half up, as the spec's round_int
				if size > maxDim {
					return g, fmt.Errorf("sizes %v with keep_aspect_ratio_policy %s: axis %d of X %v scaled by %g is %g long, more than 2³¹−1: %w", sizes, policy, ax, x, s, size, inference.ErrShape)
				}
				g.Scale[ax], g.Out[ax] = s, int(size)
			}
		}
	default:
		return g, fmt.Errorf("neither scales nor sizes is given: %w", inference.ErrBadModel)
	}

	if g.Coord == "tf_crop_and_resize" {
		if len(roi) != 2*len(axes) {
			return g, fmt.Errorf("roi has %d values, want %d (start and end of %d axes): %w", len(roi), 2*len(axes), len(axes), inference.ErrShape)
		}
		g.ROI = make([][2]float64, rank)
		for i := range g.ROI {
			g.ROI[i] = [2]float64{0, 1}
		}
		for i, ax := range axes {
			g.ROI[ax] = [2]float64{float64(roi[i]), float64(roi[len(axes)+i])}
		}
	}
	slices.Sort(axes)
	g.Axes = axes
	return g, g.check(x)
}

// Upsample returns what Upsample does to an input of shape x: Resize-10's
// resampling with the scales of Upsample-9 (the operand scales),
// Upsample-7 (the attribute scales) or Upsample-1 (attributes height_scale
// and width_scale of a 4-D input).
func Upsample(n Node, x []int, scales []float32) (ResizeGeometry, error) {
	switch {
	case n.Opset >= 9:
	case n.Opset >= 7:
		if !n.Has("scales") {
			return ResizeGeometry{}, fmt.Errorf("attribute scales is missing: %w", inference.ErrBadModel)
		}
		scales = n.Floats("scales", nil)
	default:
		if len(x) != 4 {
			return ResizeGeometry{}, fmt.Errorf("X is %v, Upsample-1 takes 4-D input: %w", x, inference.ErrShape)
		}
		if !n.Has("height_scale") || !n.Has("width_scale") {
			return ResizeGeometry{}, fmt.Errorf("attribute height_scale or width_scale is missing: %w", inference.ErrBadModel)
		}
		scales = []float32{1, 1, n.Float("height_scale", 1), n.Float("width_scale", 1)}
	}
	return legacyResize(n, x, n.Str("mode", "nearest"), scales)
}

// legacyResize is Resize-10 and Upsample: output size floor(in·scale),
// coordinates x_in = x_out/scale, LegacyNearest.
func legacyResize(n Node, x []int, mode string, scales []float32) (ResizeGeometry, error) {
	switch mode {
	case "nearest", "linear":
	case "bilinear": // Upsample-1's name for it
		mode = "linear"
	default:
		return ResizeGeometry{}, n.Unsupported("mode %q", mode)
	}
	if len(scales) != len(x) {
		return ResizeGeometry{}, fmt.Errorf("scales has %d values for X %v: %w", len(scales), x, inference.ErrShape)
	}
	g := ResizeGeometry{
		Resampling: Resampling{Mode: mode, Coord: "asymmetric", NearestMode: LegacyNearest},
		Axes:       make([]int, len(x)), Scale: make([]float64, len(x)), Out: make([]int, len(x)),
	}
	for i, s := range scales {
		g.Axes[i] = i
		if err := g.scaleAxis(i, x[i], float64(s)); err != nil {
			return g, fmt.Errorf("scales %v: %w", scales, err)
		}
	}
	return g, g.check(x)
}

// scaleAxis resizes axis ax, of length dim, by s: to floor(s·dim), at most
// 2³¹−1. s must be finite and positive.
func (g *ResizeGeometry) scaleAxis(ax, dim int, s float64) error {
	if !(s > 0) || math.IsInf(s, 0) {
		return fmt.Errorf("scale %g of axis %d, want finite and > 0: %w", s, ax, inference.ErrShape)
	}
	f := math.Floor(s * float64(dim))
	if f > maxDim {
		return fmt.Errorf("axis %d of length %d scaled by %g is %g long, more than 2³¹−1: %w", ax, dim, s, f, inference.ErrShape)
	}
	g.Scale[ax], g.Out[ax] = s, int(f)
	return nil
}

// check rejects an output shape whose element count overflows, and an
// empty axis of x resized to a nonempty one.
func (g ResizeGeometry) check(x []int) error {
	if _, err := inference.NumElements(g.Out); err != nil {
		return fmt.Errorf("output shape %v: %w", g.Out, err)
	}
	for ax, d := range x {
		if d == 0 && g.Out[ax] != 0 {
			return fmt.Errorf("cannot resize empty axis %d of X %v to %d: %w", ax, x, g.Out[ax], inference.ErrShape)
		}
	}
	return nil
}

// Unchanged reports whether Resize leaves axis ax, now of length cur,
// untouched: a scale, output length and region of interest equal to the
// identity's, within Python's math.isclose (rel_tol 1e-9), with which ONNX's
// reference implementation skips such axes.
func (g ResizeGeometry) Unchanged(ax, cur int) bool {
	r := g.AxisROI(ax)
	return isClose(g.Scale[ax], 1) && g.Out[ax] == cur && isClose(r[0], 0) && isClose(r[1], 1)
}

// AxisROI is the region of interest of axis ax: [0, 1] unless the
// coordinate transformation is tf_crop_and_resize.
func (g ResizeGeometry) AxisROI(ax int) [2]float64 {
	if g.ROI == nil {
		return [2]float64{0, 1}
	}
	return g.ROI[ax]
}

func isClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))
}

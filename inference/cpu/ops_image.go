package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Image operators: resampling (Resize, Upsample) and sampling at given
// positions (GridSample, AffineGrid). They read and write float32; weights
// and sums are float64.
//
// Resize is separable: it resizes one axis at a time, each output position
// along the axis being a weighted sum of a few input positions (imTaps), as
// ONNX's reference implementation does.

func init() {
	register("Resize", imResize)
	register("Upsample", imUpsample)
	register("GridSample", imGridSample)
	register("AffineGrid", imAffineGrid)
}

// ---- Resize and Upsample ----------------------------------------------------

// imResampling is how Resize or Upsample maps output positions to input
// positions and weighs them.
type imResampling struct {
	mode        string  // "nearest", "linear" or "cubic"
	coord       string  // coordinate_transformation_mode
	nearestMode string  // round_prefer_floor, round_prefer_ceil, floor, ceil, or "legacy"
	cubicA      float64 // cubic_coeff_a
	exclude     bool    // exclude_outside
	antialias   bool
	extrapolate float64 // extrapolation_value, for tf_crop_and_resize
}

// imTaps lists, for each position along one output axis, the input
// positions it reads and their weights.
type imTaps struct {
	width  int       // taps per output position
	index  []int     // [out·width], each in [0, in)
	weight []float64 // [out·width]
	extrap []bool    // [out]; true where the position takes extrapolate; nil if none does
}

// imResize implements Resize-10 (scales input, asymmetric coordinates) and
// Resize-11 and later (roi, scales, sizes inputs and the attributes that
// pick the coordinate transformation and the interpolation kernel).
func imResize(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, _, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	mode := n.Str("mode", "nearest")
	if n.Opset < 11 {
		_, scales, err := requiredFloatArg(n, in, 1, "scales")
		if err != nil {
			return nil, err
		}
		return imLegacyResize(n, x, mode, scales)
	}
	rs := imResampling{
		mode:        mode,
		coord:       n.Str("coordinate_transformation_mode", "half_pixel"),
		nearestMode: n.Str("nearest_mode", "round_prefer_floor"),
		cubicA:      float64(n.Float("cubic_coeff_a", -0.75)),
		exclude:     n.Int("exclude_outside", 0) != 0,
		extrapolate: float64(n.Float("extrapolation_value", 0)),
	}
	switch rs.mode {
	case "nearest", "linear", "cubic":
	default:
		return nil, Unsupported(n, "mode %q", rs.mode)
	}
	switch rs.nearestMode {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return nil, Unsupported(n, "nearest_mode %q", rs.nearestMode)
	}
	switch c := rs.coord; {
	case c == "half_pixel", c == "pytorch_half_pixel", c == "align_corners", c == "asymmetric", c == "tf_crop_and_resize":
	case c == "tf_half_pixel_for_nn" && n.Opset < 13:
	case c == "half_pixel_symmetric" && n.Opset >= 19:
	default:
		return nil, Unsupported(n, "coordinate_transformation_mode %q", c)
	}

	rank := x.Rank()
	inShape := x.Shape()
	axes := make([]int, rank)
	for i := range axes {
		axes[i] = i
	}
	policy := "stretch"
	if n.Opset >= 18 {
		rs.antialias = n.Int("antialias", 0) != 0
		policy = n.Str("keep_aspect_ratio_policy", "stretch")
		if n.Has("axes") {
			raw := n.Ints("axes", nil)
			axes = axes[:0]
			for _, a := range raw {
				ax, err := NormAxis(a, rank)
				if err != nil {
					return nil, fmt.Errorf("attribute axes %v: %w", raw, err)
				}
				if slices.Contains(axes, ax) {
					return nil, fmt.Errorf("attribute axes %v repeats axis %d: %w", raw, ax, inference.ErrShape)
				}
				axes = append(axes, ax)
			}
		}
	}

	// scale and out per dimension of X; dimensions outside axes keep scale 1.
	scale := make([]float64, rank)
	out := slices.Clone(inShape)
	for i := range scale {
		scale[i] = 1
	}
	scalesT, sizesT := Arg(in, 2), Arg(in, 3)
	hasScales := Present(scalesT) && scalesT.Len() > 0
	hasSizes := Present(sizesT) && sizesT.Len() > 0
	switch {
	case hasScales && hasSizes:
		return nil, fmt.Errorf("both scales and sizes are given: %w", inference.ErrBadModel)
	case hasScales:
		_, s, err := requiredFloatArg(n, in, 2, "scales")
		if err != nil {
			return nil, err
		}
		if len(s) != len(axes) {
			return nil, fmt.Errorf("scales has %d values for %d axes of X %v: %w", len(s), len(axes), x, inference.ErrShape)
		}
		for i, ax := range axes {
			v := float64(s[i])
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("scales %v: scale %d is %g, want > 0: %w", s, i, v, inference.ErrShape)
			}
			scale[ax] = v
			if out[ax], err = imScaledDim(v, inShape[ax]); err != nil {
				return nil, fmt.Errorf("scales %v: %w", s, err)
			}
		}
	case hasSizes:
		sz, err := Int64s(sizesT)
		if err != nil {
			return nil, fmt.Errorf("sizes: %w", err)
		}
		if len(sz) != len(axes) {
			return nil, fmt.Errorf("sizes has %d values for %d axes of X %v: %w", len(sz), len(axes), x, inference.ErrShape)
		}
		for i, ax := range axes {
			if sz[i] < 0 || sz[i] > math.MaxInt32 {
				return nil, fmt.Errorf("sizes %v: size %d is out of range: %w", sz, i, inference.ErrShape)
			}
			if inShape[ax] == 0 {
				if sz[i] != 0 {
					return nil, fmt.Errorf("sizes %v: axis %d of X %v is empty: %w", sz, ax, x, inference.ErrShape)
				}
				out[ax] = 0
				continue
			}
			scale[ax] = float64(sz[i]) / float64(inShape[ax])
			out[ax] = int(sz[i])
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
				return nil, Unsupported(n, "keep_aspect_ratio_policy %q", policy)
			}
			for _, ax := range axes {
				scale[ax] = s
				// round half up, as the spec's round_int
				out[ax] = int(s*float64(inShape[ax]) + 0.5)
			}
		}
	default:
		return nil, fmt.Errorf("neither scales nor sizes is given: %w", inference.ErrBadModel)
	}

	// roi per dimension, [start, end] in the input's normalized coordinates.
	var roi [][2]float64
	if rs.coord == "tf_crop_and_resize" {
		_, r, err := requiredFloatArg(n, in, 1, "roi")
		if err != nil {
			return nil, err
		}
		if len(r) != 2*len(axes) {
			return nil, fmt.Errorf("roi has %d values, want %d (start and end of %d axes): %w", len(r), 2*len(axes), len(axes), inference.ErrShape)
		}
		roi = make([][2]float64, rank)
		for i := range roi {
			roi[i] = [2]float64{0, 1}
		}
		for i, ax := range axes {
			roi[ax] = [2]float64{float64(r[i]), float64(r[len(axes)+i])}
		}
	}

	slices.Sort(axes)
	return imResample(n, x, rs, axes, scale, out, roi)
}

// imLegacyResize implements Resize-10 and Upsample: output size
// floor(in·scale), coordinates x_in = x_out/scale. Nearest takes
// floor(x_in) when upsampling and ceil(x_in) when downsampling along the
// axis, as ONNX Runtime does for these versions (the spec does not say;
// both agree with the operators' examples).
func imLegacyResize(n Node, x inference.Tensor, mode string, scales []float32) ([]inference.Tensor, error) {
	switch mode {
	case "nearest", "linear":
	case "bilinear": // Upsample-1's name for it
		mode = "linear"
	default:
		return nil, Unsupported(n, "mode %q", mode)
	}
	rank := x.Rank()
	if len(scales) != rank {
		return nil, fmt.Errorf("scales has %d values for X %v: %w", len(scales), x, inference.ErrShape)
	}
	inShape := x.Shape()
	scale := make([]float64, rank)
	out := make([]int, rank)
	axes := make([]int, rank)
	for i, s := range scales {
		v := float64(s)
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("scales %v: scale %d is %g, want > 0: %w", scales, i, v, inference.ErrShape)
		}
		scale[i] = v
		var err error
		if out[i], err = imScaledDim(v, inShape[i]); err != nil {
			return nil, fmt.Errorf("scales %v: %w", scales, err)
		}
		axes[i] = i
	}
	rs := imResampling{mode: mode, coord: "asymmetric", nearestMode: "legacy"}
	return imResample(n, x, rs, axes, scale, out, nil)
}

// imScaledDim returns floor(scale·dim), the output length of an axis of
// length dim resized by scale.
func imScaledDim(scale float64, dim int) (int, error) {
	f := math.Floor(scale * float64(dim))
	if f > math.MaxInt32 {
		return 0, fmt.Errorf("output length %g of an axis of length %d is too large: %w", f, dim, inference.ErrShape)
	}
	return int(f), nil
}

// imUpsample implements Upsample-1 (height_scale and width_scale
// attributes on 4-D input), Upsample-7 (scales attribute) and Upsample-9
// (scales input), all with Resize-10's semantics.
func imUpsample(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, _, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	var scales []float32
	switch {
	case n.Opset >= 9:
		_, s, err := requiredFloatArg(n, in, 1, "scales")
		if err != nil {
			return nil, err
		}
		scales = s
	case n.Opset >= 7:
		if !n.Has("scales") {
			return nil, fmt.Errorf("attribute scales is missing: %w", inference.ErrBadModel)
		}
		scales = n.Floats("scales", nil)
	default:
		if x.Rank() != 4 {
			return nil, fmt.Errorf("X is %v, Upsample-1 takes 4-D input: %w", x, inference.ErrShape)
		}
		if !n.Has("height_scale") || !n.Has("width_scale") {
			return nil, fmt.Errorf("attribute height_scale or width_scale is missing: %w", inference.ErrBadModel)
		}
		scales = []float32{1, 1, n.Float("height_scale", 1), n.Float("width_scale", 1)}
	}
	return imLegacyResize(n, x, n.Str("mode", "nearest"), scales)
}

// imResample resizes x along axes (sorted) to the sizes in out, with the
// scale factors in scale; roi is nil unless the coordinate transformation
// is tf_crop_and_resize.
func imResample(n Node, x inference.Tensor, rs imResampling, axes []int, scale []float64, out []int, roi [][2]float64) ([]inference.Tensor, error) {
	if _, err := inference.NumElements(out); err != nil {
		return nil, fmt.Errorf("output shape %v: %w", out, err)
	}
	src, _ := Floats(x)
	cur := x.Shape()
	if x.Len() == 0 {
		for ax := range cur {
			if cur[ax] == 0 && out[ax] != 0 {
				return nil, fmt.Errorf("cannot resize empty axis %d of X %v to %d: %w", ax, x, out[ax], inference.ErrShape)
			}
		}
	}
	data := make([]float64, len(src))
	for i, v := range src {
		data[i] = float64(v)
	}
	for _, ax := range axes {
		r := [2]float64{0, 1}
		if roi != nil {
			r = roi[ax]
		}
		if imIsClose(scale[ax], 1) && out[ax] == cur[ax] && imIsClose(r[0], 0) && imIsClose(r[1], 1) {
			continue // identity along this axis
		}
		if cur[ax] == 0 || out[ax] == 0 {
			cur[ax] = out[ax]
			size, _ := inference.NumElements(cur)
			data = make([]float64, size)
			continue
		}
		taps := imResizeTaps(rs, cur[ax], out[ax], scale[ax], r)
		data = imApplyTaps(data, cur, ax, taps, rs.extrapolate)
		cur[ax] = out[ax]
	}
	res := make([]float32, len(data))
	for i, v := range data {
		res[i] = float32(v)
	}
	return singleOutput(out, res)
}

// imIsClose is Python's math.isclose with its default rel_tol 1e-9, which
// the reference implementation uses to skip axes it leaves unchanged.
func imIsClose(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b))
}

// imSourceCoord maps output position y along an axis of length inW,
// resized to outW with scale factor scale, to the input coordinate, and
// reports false when tf_crop_and_resize puts it outside the input.
// outWf = scale·inW is the output length before rounding down.
func imSourceCoord(coord string, y float64, inW, outW int, scale float64, roi [2]float64) (float64, bool) {
	outWf := scale * float64(inW)
	switch coord {
	case "half_pixel":
		return (y+0.5)/scale - 0.5, true
	case "half_pixel_symmetric":
		adjustment := float64(outW) / outWf
		offset := float64(inW) / 2 * (1 - adjustment)
		return offset + (y+0.5)/scale - 0.5, true
	case "pytorch_half_pixel":
		if outW > 1 {
			return (y+0.5)/scale - 0.5, true
		}
		return 0, true
	case "align_corners":
		if outWf == 1 {
			return 0, true
		}
		return y * float64(inW-1) / (outWf - 1), true
	case "asymmetric":
		return y / scale, true
	case "tf_half_pixel_for_nn":
		return (y + 0.5) / scale, true
	case "tf_crop_and_resize":
		var v float64
		if outWf == 1 {
			v = (roi[1] - roi[0]) * float64(inW-1) / 2
		} else {
			v = y * (roi[1] - roi[0]) * float64(inW-1) / (outWf - 1)
		}
		v += roi[0] * float64(inW-1)
		return v, v >= 0 && v <= float64(inW-1)
	}
	panic("cpu: Resize: unchecked coordinate_transformation_mode " + coord)
}

// imResizeTaps computes the taps of each of the outW positions of an axis
// of length inW. With x the source coordinate, base = floor(x) and
// ratio = x − base, except that an integral x gives base = x−1 and
// ratio = 1; the taps are the inputs base+i, i in [start, start+width), of
// weight k(s·(i − ratio)) for the kernel k of the mode, with s = 1, or
// min(scale, 1) and the weights normalized when antialiasing. Inputs
// beyond the edges read the edge value (after exclude_outside dropped
// their weight, if set).
func imResizeTaps(rs imResampling, inW, outW int, scale float64, roi [2]float64) imTaps {
	var kernel func(float64) float64
	radius, s := 1.0, 1.0
	switch rs.mode {
	case "linear":
		kernel = func(d float64) float64 { return max(0, 1-math.Abs(d)) }
	case "cubic":
		radius = 2
		a := rs.cubicA
		kernel = func(d float64) float64 {
			d = math.Abs(d)
			switch {
			case d <= 1:
				return ((a+2)*d-(a+3))*d*d + 1
			case d < 2:
				return ((a*d-5*a)*d+8*a)*d - 4*a
			}
			return 0
		}
	}
	if rs.antialias && rs.mode != "nearest" {
		s = min(scale, 1)
	}
	start := int(math.Floor(-radius/s)) + 1
	width := 2 - 2*start
	if rs.mode == "nearest" {
		width = 1
	}
	t := imTaps{width: width, index: make([]int, outW*width), weight: make([]float64, outW*width)}
	for y := range outW {
		x, inside := imSourceCoord(rs.coord, float64(y), inW, outW, scale, roi)
		if !inside {
			if t.extrap == nil {
				t.extrap = make([]bool, outW)
			}
			t.extrap[y] = true
			continue
		}
		fl := math.Floor(x)
		base, ratio := int(fl), x-fl
		if ratio == 0 {
			base, ratio = base-1, 1
		}
		idx := t.index[y*width : (y+1)*width]
		w := t.weight[y*width : (y+1)*width]
		if rs.mode == "nearest" {
			pick := base + 1
			if ratio != 1 && imNearestFloor(rs.nearestMode, ratio, scale) {
				pick = base
			}
			idx[0], w[0] = pick, 1
		} else {
			var sum float64
			for k := range width {
				idx[k] = base + start + k
				w[k] = kernel(s * (float64(start+k) - ratio))
				sum += w[k]
			}
			if rs.antialias && sum != 0 {
				for k := range w {
					w[k] /= sum
				}
			}
		}
		if rs.exclude {
			var sum float64
			for k := range idx {
				if idx[k] < 0 || idx[k] >= inW {
					w[k] = 0
				}
				sum += w[k]
			}
			if sum != 0 && rs.mode != "nearest" {
				for k := range w {
					w[k] /= sum
				}
			}
		}
		for k := range idx {
			idx[k] = min(max(idx[k], 0), inW-1)
		}
	}
	return t
}

// imNearestFloor reports whether nearest mode picks floor(x) over
// floor(x)+1 for a non-integral x with fractional part ratio. The legacy
// mode (Resize-10, Upsample) floors when upsampling and ceils when
// downsampling.
func imNearestFloor(mode string, ratio, scale float64) bool {
	switch mode {
	case "round_prefer_floor":
		return ratio <= 0.5
	case "round_prefer_ceil":
		return ratio < 0.5
	case "floor":
		return true
	case "ceil":
		return false
	}
	return scale >= 1
}

// imApplyTaps resizes data, of shape shape, along axis with taps, and
// returns the new data.
func imApplyTaps(data []float64, shape []int, axis int, t imTaps, extrap float64) []float64 {
	outer, inner := 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	inW := shape[axis]
	outW := len(t.index) / t.width
	res := make([]float64, outer*outW*inner)
	for o := range outer {
		src := data[o*inW*inner : (o+1)*inW*inner]
		for y := range outW {
			dst := res[(o*outW+y)*inner : (o*outW+y+1)*inner]
			if t.extrap != nil && t.extrap[y] {
				for i := range dst {
					dst[i] = extrap
				}
				continue
			}
			for k := y * t.width; k < (y+1)*t.width; k++ {
				w := t.weight[k]
				if w == 0 {
					continue
				}
				row := src[t.index[k]*inner : (t.index[k]+1)*inner]
				for i, v := range row {
					dst[i] += w * v
				}
			}
		}
	}
	return res
}

// ---- GridSample ---------------------------------------------------------------

// imGridTap is one input position along a spatial axis that a sample
// reads, with its weight; index −1 reads zero (padding_mode zeros).
type imGridTap struct {
	index  int
	weight float64
}

// imGridSample implements GridSample-16 (4-D input; modes bilinear,
// nearest, bicubic) and GridSample-20 and later (N-D; modes linear,
// nearest, cubic), following PyTorch's grid_sample: nearest rounds half to
// even, cubic uses Keys' kernel with a = −0.75.
func imGridSample(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	_, gd, err := requiredFloatArg(n, in, 1, "grid")
	if err != nil {
		return nil, err
	}
	x, grid := in[0], in[1]
	xs, gs := x.Shape(), grid.Shape()
	r := len(xs) - 2
	if r < 1 {
		return nil, fmt.Errorf("X is %v, want rank 3 or more: %w", x, inference.ErrShape)
	}
	if n.Opset < 20 && r != 2 {
		return nil, fmt.Errorf("X is %v, GridSample-16 takes 4-D input: %w", x, inference.ErrShape)
	}
	if len(gs) != r+2 || gs[0] != xs[0] || gs[r+1] != r {
		return nil, fmt.Errorf("grid is %v for X %v, want [%d, …%d output dims…, %d]: %w", grid, x, xs[0], r, r, inference.ErrShape)
	}
	defMode := "linear"
	if n.Opset < 20 {
		defMode = "bilinear"
	}
	mode := n.Str("mode", defMode)
	switch mode {
	case "bilinear":
		mode = "linear"
	case "bicubic":
		mode = "cubic"
	case "linear", "cubic", "nearest":
	default:
		return nil, Unsupported(n, "mode %q", mode)
	}
	padding := n.Str("padding_mode", "zeros")
	switch padding {
	case "zeros", "border", "reflection":
	default:
		return nil, Unsupported(n, "padding_mode %q", padding)
	}
	align := n.Int("align_corners", 0) != 0

	batch, channels := xs[0], xs[1]
	dims := xs[2:]
	outShape := append([]int{batch, channels}, gs[1:r+1]...)
	y, err := inference.Zeros(inference.Float32, outShape)
	if err != nil {
		return nil, err
	}
	yd, _ := Floats(y)
	if y.Len() == 0 {
		return []inference.Tensor{y}, nil
	}
	inPlane, _ := inference.NumElements(dims)
	if inPlane == 0 {
		// Every sample lies outside an empty image: zero in any padding mode.
		return []inference.Tensor{y}, nil
	}
	outPlane, _ := inference.NumElements(gs[1 : r+1])
	strides := Strides(dims)
	// lo and hi bound each axis's coordinates: the centers of the edge
	// pixels with align_corners, their outer edges without.
	lo, hi := make([]float64, r), make([]float64, r)
	for d, size := range dims {
		lo[d], hi[d] = -0.5, float64(size)-0.5
		if align {
			lo[d], hi[d] = 0, float64(size-1)
		}
	}
	taps := make([][]imGridTap, r)
	var offsets []int
	var weights []float64
	for b := range batch {
		for p := range outPlane {
			g := gd[(b*outPlane+p)*r : (b*outPlane+p+1)*r]
			for d := range r {
				// grid lists coordinates innermost axis first
				c := imDenormalize(g[r-1-d], dims[d], align)
				taps[d] = imGridTaps(taps[d][:0], mode, padding, c, dims[d], lo[d], hi[d])
			}
			offsets, weights = imTapProduct(offsets[:0], weights[:0], taps, strides)
			for ch := range channels {
				plane := xd[(b*channels+ch)*inPlane : (b*channels+ch+1)*inPlane]
				var v float64
				for k, off := range offsets {
					v += weights[k] * float64(plane[off])
				}
				yd[(b*channels+ch)*outPlane+p] = float32(v)
			}
		}
	}
	return []inference.Tensor{y}, nil
}

// imDenormalize maps a normalized grid coordinate in [−1, 1] to a pixel
// coordinate along an axis of size pixels, in float32 as the reference
// implementation does (it decides ties in nearest mode).
func imDenormalize(v float32, size int, align bool) float64 {
	if align {
		return float64(float32(float32(v+1)/2) * float32(size-1))
	}
	return float64(float32(float32(float32(v+1)*float32(size))-1) / 2)
}

// imGridTaps appends to taps the input positions along one axis of the
// given size that coordinate c reads, with their weights, after padding.
func imGridTaps(taps []imGridTap, mode, padding string, c float64, size int, lo, hi float64) []imGridTap {
	if mode == "nearest" {
		c = math.RoundToEven(c)
	}
	if c < lo || c > hi {
		switch padding {
		case "border":
			c = min(max(c, 0), float64(size-1))
		case "reflection":
			c = imReflect(c, lo, hi)
		}
	}
	switch mode {
	case "nearest":
		return append(taps, imGridTap{imGridIndex(math.Trunc(c), padding, size, lo, hi), 1})
	case "linear":
		f := math.Floor(c)
		t := c - f
		return append(taps,
			imGridTap{imGridIndex(f, padding, size, lo, hi), 1 - t},
			imGridTap{imGridIndex(f+1, padding, size, lo, hi), t})
	}
	f := math.Floor(c)
	t := c - f
	const a = -0.75
	w := [4]float64{
		((a*(t+1)-5*a)*(t+1)+8*a)*(t+1) - 4*a,
		((a+2)*t-(a+3))*t*t + 1,
		((a+2)*(1-t)-(a+3))*(1-t)*(1-t) + 1,
		((a*(2-t)-5*a)*(2-t)+8*a)*(2-t) - 4*a,
	}
	for k := range 4 {
		taps = append(taps, imGridTap{imGridIndex(f-1+float64(k), padding, size, lo, hi), w[k]})
	}
	return taps
}

// imGridIndex maps the integral position i to the index it reads along an
// axis of the given size: −1 (zero) outside it with padding zeros, the
// nearest edge with border, the reflection with reflection.
func imGridIndex(i float64, padding string, size int, lo, hi float64) int {
	switch padding {
	case "zeros":
		if i >= 0 && i < float64(size) {
			return int(i)
		}
		return -1
	case "reflection":
		i = math.Trunc(imReflect(i, lo, hi))
	}
	// Clamping also keeps NaN and infinite coordinates in bounds.
	if !(i >= 0) {
		return 0
	}
	return int(min(i, float64(size-1)))
}

// imReflect reflects x at lo and hi until it lies between them.
func imReflect(x, lo, hi float64) float64 {
	span := hi - lo
	if span <= 0 {
		return lo
	}
	switch {
	case x < lo:
		d := lo - x
		k := math.Trunc(d / span)
		rem := d - k*span
		if math.Mod(k, 2) == 0 {
			return lo + rem
		}
		return hi - rem
	case x > hi:
		d := x - hi
		k := math.Trunc(d / span)
		rem := d - k*span
		if math.Mod(k, 2) == 0 {
			return hi - rem
		}
		return lo + rem
	}
	return x
}

// imTapProduct appends the offsets (with strides) and weights of every
// combination of one tap per axis, leaving out those that read a zero.
func imTapProduct(offsets []int, weights []float64, taps [][]imGridTap, strides []int) ([]int, []float64) {
	pick := make([]int, len(taps))
	for {
		off, w := 0, 1.0
		for d, k := range pick {
			tp := taps[d][k]
			if tp.index < 0 {
				w = 0
				break
			}
			off += tp.index * strides[d]
			w *= tp.weight
		}
		if w != 0 {
			offsets = append(offsets, off)
			weights = append(weights, w)
		}
		d := len(pick) - 1
		for ; d >= 0; d-- {
			if pick[d]++; pick[d] < len(taps[d]) {
				break
			}
			pick[d] = 0
		}
		if d < 0 {
			return offsets, weights
		}
	}
}

// ---- AffineGrid ---------------------------------------------------------------

// imAffineGrid implements AffineGrid-20: for theta [N, 2, 3] and size
// [N, C, H, W], grid[n, h, w] = theta[n] · (x_w, y_h, 1); for theta
// [N, 3, 4] and size [N, C, D, H, W], grid[n, d, h, w] =
// theta[n] · (x_w, y_h, z_d, 1). The base coordinates along an axis of
// length L are −1 + 2i/(L−1) with align_corners (−1 when L = 1), and
// −1 + (2i+1)/L without.
func imAffineGrid(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, theta, err := requiredFloatArg(n, in, 0, "theta")
	if err != nil {
		return nil, err
	}
	sizeT, err := requiredArg(in, 1, "size")
	if err != nil {
		return nil, err
	}
	size, err := Int64s(sizeT)
	if err != nil {
		return nil, fmt.Errorf("size: %w", err)
	}
	ts := in[0].Shape()
	if len(size) != 4 && len(size) != 5 {
		return nil, fmt.Errorf("size %v has %d values, want 4 (N, C, H, W) or 5 (N, C, D, H, W): %w", size, len(size), inference.ErrShape)
	}
	r := len(size) - 2
	if len(ts) != 3 || ts[1] != r || ts[2] != r+1 {
		return nil, fmt.Errorf("theta is %v for size %v, want [N, %d, %d]: %w", in[0], size, r, r+1, inference.ErrShape)
	}
	if size[0] != int64(ts[0]) {
		return nil, fmt.Errorf("size %v is for %d images, theta %v for %d: %w", size, size[0], in[0], ts[0], inference.ErrShape)
	}
	dims := make([]int, r)
	for i, v := range size[2:] {
		if v < 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("size %v: dimension %d is out of range: %w", size, i+2, inference.ErrShape)
		}
		dims[i] = int(v)
	}
	align := n.Int("align_corners", 0) != 0
	// base[d] holds the coordinates along spatial axis d (outermost first).
	base := make([][]float64, r)
	for d, l := range dims {
		base[d] = make([]float64, l)
		for i := range l {
			if align {
				if l > 1 {
					base[d][i] = -1 + float64(i)*(2/float64(l-1))
				} else {
					base[d][i] = -1
				}
			} else {
				step := 2 / float64(l)
				base[d][i] = -1 + step/2 + float64(i)*step
			}
		}
	}
	outShape := append([]int{ts[0]}, dims...)
	outShape = append(outShape, r)
	y, err := inference.Zeros(inference.Float32, outShape)
	if err != nil {
		return nil, err
	}
	yd, _ := Floats(y)
	points, _ := inference.NumElements(dims)
	strides := Strides(dims)
	homo := make([]float64, r+1) // (x, y[, z], 1): innermost axis first
	homo[r] = 1
	for b := range ts[0] {
		th := theta[b*r*(r+1) : (b+1)*r*(r+1)]
		for p := range points {
			for d := range r {
				homo[r-1-d] = base[d][p/strides[d]%dims[d]]
			}
			out := yd[(b*points+p)*r : (b*points+p+1)*r]
			for i := range r {
				var v float64
				for j, h := range homo {
					v += float64(th[i*(r+1)+j]) * h
				}
				out[i] = float32(v)
			}
		}
	}
	return []inference.Tensor{y}, nil
}

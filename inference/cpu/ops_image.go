package cpu

import (
	"fmt"
	"math"
	"runtime"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Image operators: resampling (Resize, Upsample) and sampling at given
// positions (GridSample, AffineGrid). They read and write float32; weights
// and sums are float64.
//
// Resize is separable: it resizes one axis at a time, each output position
// along the axis being a weighted sum of a few input positions (imTaps), as
// ONNX's reference implementation does. What it resizes to, and how, is
// opsem's (Resize, Upsample: a ResizeGeometry); the taps are the CPU's.

func init() {
	register("Resize", imResize)
	register("Upsample", imUpsample)
	register("GridSample", imGridSample)
	register("AffineGrid", imAffineGrid)
}

// ---- Resize and Upsample ----------------------------------------------------

// imTaps lists, for each position along one output axis, the input
// positions it reads and their weights.
type imTaps struct {
	width  int       // taps per output position
	index  []int     // [out·width], each in [0, in)
	weight []float64 // [out·width]
	extrap []bool    // [out]; true where the position takes extrapolate; nil if none does
}

// imResize implements Resize: Resize-10 (scales input, asymmetric
// coordinates) and Resize-11 and later (roi, scales, sizes inputs and the
// attributes that pick the coordinate transformation and the interpolation
// kernel), as opsem.Resize reads them.
func imResize(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, _, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	var roi, scales []float32
	var sizes []int64
	if n.Opset < 11 {
		// Resize-10's input 1 is its scales.
		if _, scales, err = requiredFloatArg(n, in, 1, "scales"); err != nil {
			return nil, err
		}
	} else {
		if roi, err = imFloatOperand(n, in, 1, "roi"); err != nil {
			return nil, err
		}
		if scales, err = imFloatOperand(n, in, 2, "scales"); err != nil {
			return nil, err
		}
		if t := arg(in, 3); present(t) && t.Len() > 0 {
			if sizes, err = opsem.Int64s(t); err != nil {
				return nil, fmt.Errorf("sizes: %w", err)
			}
		}
	}
	// The geometry depends on roi, scales and sizes (inputs 1 to 3): kept
	// while their values key the plan.
	p, err := opsem.Plan(valuesKeyed(n, in, 1, 2, 3), in, func() (*imResizePlan, error) {
		g, err := opsem.Resize(n, x.Shape(), roi, scales, sizes)
		if err != nil {
			return nil, err
		}
		return newImResizePlan(n.Run, x, g)
	})
	if err != nil {
		return nil, err
	}
	return p.resize(n, x)
}

// imResizePlan is what Resize and Upsample keep from one run to the next:
// the geometry, and the float32 path where it runs (imPlanes).
type imResizePlan struct {
	g      opsem.ResizeGeometry
	planes *imPlanes // nil: the general path
}

func newImResizePlan(r *limit.Run, x inference.Tensor, g opsem.ResizeGeometry) (*imResizePlan, error) {
	planes, err := newImPlanes(r, x, g)
	if err != nil {
		return nil, err
	}
	return &imResizePlan{g: g, planes: planes}, nil
}

// resize resizes x, of the shape the plan was made for.
func (p *imResizePlan) resize(n opsem.Node, x inference.Tensor) ([]inference.Tensor, error) {
	if p.planes == nil {
		return imResample(n.Run, x, p.g)
	}
	xd, err := floats(x)
	if err != nil {
		return nil, err
	}
	y, err := limit.MakeOverwritten[float32](n.Run, p.g.Out...) // every output row is written
	if err != nil {
		return nil, err
	}
	if err := p.planes.resize(n.Run, xd, y); err != nil {
		return nil, err
	}
	t, err := opsem.Output(n, 0, p.g.Out, y)
	if err != nil {
		return nil, err
	}
	res := n.Results(1)
	res[0] = t
	return res, nil
}

// imFloatOperand returns the values of Resize's optional float32 input i,
// nil when the node leaves it out or gives it empty.
func imFloatOperand(n opsem.Node, in []inference.Tensor, i int, name string) ([]float32, error) {
	if t := arg(in, i); !present(t) || t.Len() == 0 {
		return nil, nil
	}
	_, d, err := floatArg(n, in, i, name)
	return d, err
}

// imUpsample implements Upsample-1 (height_scale and width_scale
// attributes on 4-D input), Upsample-7 (scales attribute) and Upsample-9
// (scales input), all with Resize-10's semantics (opsem.Upsample).
func imUpsample(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, _, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	var scales []float32
	if n.Opset >= 9 {
		// Upsample-9's input 1 is its scales.
		if _, scales, err = requiredFloatArg(n, in, 1, "scales"); err != nil {
			return nil, err
		}
	}
	p, err := opsem.Plan(valuesKeyed(n, in, 1), in, func() (*imResizePlan, error) {
		g, err := opsem.Upsample(n, x.Shape(), scales)
		if err != nil {
			return nil, err
		}
		return newImResizePlan(n.Run, x, g)
	})
	if err != nil {
		return nil, err
	}
	return p.resize(n, x)
}

// imResample resizes x as g says, one axis at a time.
func imResample(r *limit.Run, x inference.Tensor, g opsem.ResizeGeometry) ([]inference.Tensor, error) {
	src, _ := floats(x)
	cur := x.Shape()
	data, err := limit.Make[float64](r, len(src))
	if err != nil {
		return nil, err
	}
	for i, v := range src {
		data[i] = float64(v)
	}
	for _, ax := range g.Axes {
		if g.Unchanged(ax, cur[ax]) {
			continue // identity along this axis
		}
		if cur[ax] == 0 || g.Out[ax] == 0 {
			cur[ax] = g.Out[ax]
			var err error
			if data, err = limit.Make[float64](r, cur...); err != nil {
				return nil, err
			}
			continue
		}
		taps, err := imResizeTaps(r, g.Resampling, cur[ax], g.Out[ax], g.Scale[ax], g.AxisROI(ax))
		if err != nil {
			return nil, err
		}
		if data, err = imApplyTaps(r, data, cur, ax, taps, g.Extrapolate); err != nil {
			return nil, err
		}
		cur[ax] = g.Out[ax]
	}
	res, err := limit.Make[float32](r, len(data))
	if err != nil {
		return nil, err
	}
	for i, v := range data {
		res[i] = float32(v)
	}
	return singleOutput(g.Out, res)
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
func imResizeTaps(r *limit.Run, rs opsem.Resampling, inW, outW int, scale float64, roi [2]float64) (imTaps, error) {
	var kernel func(float64) float64
	radius, s := 1.0, 1.0
	switch rs.Mode {
	case "linear":
		kernel = func(d float64) float64 { return max(0, 1-math.Abs(d)) }
	case "cubic":
		radius = 2
		a := rs.CubicA
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
	if rs.Antialias && rs.Mode != "nearest" {
		s = min(scale, 1)
	}
	start := int(math.Floor(-radius/s)) + 1
	width := 2 - 2*start
	if rs.Mode == "nearest" {
		width = 1
	}
	index, err := limit.Make[int](r, outW, width)
	if err != nil {
		return imTaps{}, err
	}
	weight, err := limit.Make[float64](r, outW, width)
	if err != nil {
		return imTaps{}, err
	}
	t := imTaps{width: width, index: index, weight: weight}
	for y := range outW {
		x, inside := imSourceCoord(rs.Coord, float64(y), inW, outW, scale, roi)
		if !inside {
			if t.extrap == nil {
				if t.extrap, err = limit.Make[bool](r, outW); err != nil {
					return imTaps{}, err
				}
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
		if rs.Mode == "nearest" {
			pick := base + 1
			if ratio != 1 && imNearestFloor(rs.NearestMode, ratio, scale) {
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
			if rs.Antialias && sum != 0 {
				for k := range w {
					w[k] /= sum
				}
			}
		}
		if rs.Exclude {
			var sum float64
			for k := range idx {
				if idx[k] < 0 || idx[k] >= inW {
					w[k] = 0
				}
				sum += w[k]
			}
			if sum != 0 && rs.Mode != "nearest" {
				for k := range w {
					w[k] /= sum
				}
			}
		}
		for k := range idx {
			idx[k] = min(max(idx[k], 0), inW-1)
		}
	}
	return t, nil
}

// imNearestFloor reports whether nearest mode picks floor(x) over
// floor(x)+1 for a non-integral x with fractional part ratio.
// opsem.LegacyNearest (Resize-10, Upsample) floors when upsampling and
// ceils when downsampling.
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
	case opsem.LegacyNearest:
		return scale >= 1
	}
	panic("cpu: Resize: unchecked nearest_mode " + mode)
}

// imApplyTaps resizes data, of shape shape, along axis with taps, and
// returns the new data.
func imApplyTaps(r *limit.Run, data []float64, shape []int, axis int, t imTaps, extrap float64) ([]float64, error) {
	outer, inner := 1, 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	inW := shape[axis]
	outW := len(t.index) / t.width
	res, err := limit.Make[float64](r, outer, outW, inner)
	if err != nil {
		return nil, err
	}
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
	return res, nil
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
func imGridSample(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
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
		return nil, n.Unsupported("mode %q", mode)
	}
	padding := n.Str("padding_mode", "zeros")
	switch padding {
	case "zeros", "border", "reflection":
	default:
		return nil, n.Unsupported("padding_mode %q", padding)
	}
	align := n.Int("align_corners", 0) != 0

	batch, channels := xs[0], xs[1]
	dims := xs[2:]
	outShape := append([]int{batch, channels}, gs[1:r+1]...)
	yd, err := limit.Make[float32](n.Run, outShape...)
	if err != nil {
		return nil, err
	}
	y, err := inference.New(outShape, yd)
	if err != nil {
		return nil, err
	}
	if y.Len() == 0 {
		return []inference.Tensor{y}, nil
	}
	inPlane, _ := inference.NumElements(dims)
	if inPlane == 0 {
		// Every sample lies outside an empty image: zero in any padding mode.
		return []inference.Tensor{y}, nil
	}
	outPlane, _ := inference.NumElements(gs[1 : r+1])
	strides := opsem.Strides(dims)
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
func imAffineGrid(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	_, theta, err := requiredFloatArg(n, in, 0, "theta")
	if err != nil {
		return nil, err
	}
	sizeT, err := requiredArg(in, 1, "size")
	if err != nil {
		return nil, err
	}
	size, err := opsem.Int64s(sizeT)
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
	outShape := append([]int{ts[0]}, dims...)
	outShape = append(outShape, r)
	yd, err := limit.Make[float32](n.Run, outShape...)
	if err != nil {
		return nil, err
	}
	if len(yd) == 0 { // the coordinates below would count the dimensions that are not 0
		return opsem.Single(n, outShape, yd)
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
	points, _ := inference.NumElements(dims)
	strides := opsem.Strides(dims)
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
	return opsem.Single(n, outShape, yd)
}

// ---- Resize's float32 path ---------------------------------------------------

// imPlanes is Resize over the last two axes of a float32 tensor, the
// others unchanged, as a segmentation head or a feature pyramid upsamples:
// plane by plane in float32, with the taps computed once per plan. Along
// the rows (H) each output row is a weighted sum of whole input rows, a
// vector loop (axpy); along the columns (W) each output element gathers
// its taps. It runs W first, on the input's rows, when that gathers fewer
// elements than running it on the output's rows (upsampling), and H first
// otherwise. Units of work are a plane's block of output rows, so that a
// few large planes still spread over the cores.
//
// The sums are float32 where the general path's are float64: each output
// is within a few float32 roundings of Σ|w|·|x| of the general path's.
type imPlanes struct {
	planes, ih, iw, oh, ow int
	h, w                   imTaps32 // an axis left unchanged has no taps
	wFirst                 bool
	blocks                 int // units of output rows per plane
	scratch                int // floats of scratch per unit in progress
	body                   func(lo, hi int)
	scratches              plScratches[[]float32]

	x, y []float32 // the operands of the run in progress
}

// imTaps32 lists each output position's taps along one axis, those of
// weight zero left out (the general path skips them, so that a zero weight
// on an infinite input adds nothing): position o reads index[k] with
// weight[k] for k in [start[o], start[o+1]).
type imTaps32 struct {
	start  []int32
	index  []int32
	weight []float32
}

func (t imTaps32) resized() bool { return t.start != nil }

// newImTaps32 packs taps (without extrapolated positions) as imTaps32.
func newImTaps32(t imTaps) imTaps32 {
	n := len(t.index) / t.width
	p := imTaps32{start: make([]int32, 1, n+1)}
	for o := range n {
		for k := o * t.width; k < (o+1)*t.width; k++ {
			if t.weight[k] != 0 {
				p.index = append(p.index, int32(t.index[k]))
				p.weight = append(p.weight, float32(t.weight[k]))
			}
		}
		p.start = append(p.start, int32(len(p.index)))
	}
	return p
}

// gather sets dst[o] to position o's weighted sum of src.
func (t imTaps32) gather(dst, src []float32) {
	start, index, weight := t.start[:len(dst)+1], t.index, t.weight
	for o := range dst {
		var s float32
		for k := start[o]; k < start[o+1]; k++ {
			s += weight[k] * src[index[k]]
		}
		dst[o] = s
	}
}

// rows sets row o of dst (width floats) to position o's weighted sum of
// src's rows, for o in [lo, hi); src's row i begins at (i−first)·width.
func (t imTaps32) rows(dst, src []float32, width, lo, hi, first int) {
	for o := lo; o < hi; o++ {
		row := dst[(o-lo)*width : (o-lo+1)*width]
		k0, k1 := t.start[o], t.start[o+1]
		if k0 == k1 {
			clear(row)
			continue
		}
		for k := k0; k < k1; k++ {
			i := (int(t.index[k]) - first) * width
			if k == k0 {
				scaleFloats(row, src[i:i+width], t.weight[k])
			} else {
				axpy(row, src[i:i+width], t.weight[k])
			}
		}
	}
}

// span is the range of indexes positions [lo, hi) read.
func (t imTaps32) span(lo, hi int) (first, last int) {
	first, last = math.MaxInt, -1
	for _, i := range t.index[t.start[lo]:t.start[hi]] {
		first, last = min(first, int(i)), max(last, int(i))
	}
	return first, last
}

// newImPlanes returns Resize's float32 path for g over x, or nil where the
// general path runs: an axis before the last two resized, an empty
// tensor, a position extrapolated (tf_crop_and_resize outside its region).
func newImPlanes(r *limit.Run, x inference.Tensor, g opsem.ResizeGeometry) (*imPlanes, error) {
	xs := x.Shape()
	rank := len(xs)
	if x.DType() != inference.Float32 || rank < 2 || limit.Count(g.Out...) == 0 || x.Len() == 0 {
		return nil, nil
	}
	for ax := range rank - 2 {
		if !g.Unchanged(ax, xs[ax]) {
			return nil, nil
		}
	}
	p := &imPlanes{planes: x.Len() / (xs[rank-2] * xs[rank-1]), ih: xs[rank-2], iw: xs[rank-1], oh: g.Out[rank-2], ow: g.Out[rank-1]}
	for i, t := range []*imTaps32{&p.h, &p.w} {
		ax := rank - 2 + i
		if g.Unchanged(ax, xs[ax]) {
			continue
		}
		taps, err := imResizeTaps(r, g.Resampling, xs[ax], g.Out[ax], g.Scale[ax], g.AxisROI(ax))
		if err != nil {
			return nil, err
		}
		if taps.extrap != nil {
			return nil, nil
		}
		*t = newImTaps32(taps)
	}
	// Gathers cost about four times a vector loop's element.
	tapsH, tapsW := 1, 1
	if p.h.resized() {
		tapsH = max(1, len(p.h.index)/p.oh)
	}
	if p.w.resized() {
		tapsW = max(1, len(p.w.index)/p.ow)
	}
	p.wFirst = p.ih*p.ow*tapsW*4+p.oh*p.ow*tapsH <= p.oh*p.iw*tapsH+p.oh*p.ow*tapsW*4
	procs := runtime.GOMAXPROCS(0)
	p.blocks = 1
	if p.planes < 4*procs {
		p.blocks = min(p.oh, (4*procs+p.planes-1)/p.planes)
	}
	switch {
	case p.h.resized() && p.w.resized() && p.wFirst:
		p.scratch = p.ih * p.ow // the W-resized rows a block reads, at most all
	case p.h.resized() && p.w.resized():
		p.scratch = p.iw // one H-resized row
	}
	p.body = p.run
	return p, nil
}

// run resizes units lo…hi−1: unit u is plane u/blocks, its block u%blocks
// of output rows.
func (p *imPlanes) run(lo, hi int) {
	var sc *[]float32
	if p.scratch > 0 {
		sc = p.scratches.get()
		defer p.scratches.put(sc)
		if cap(*sc) < p.scratch {
			*sc = make([]float32, p.scratch)
		}
	}
	isp, osp := p.ih*p.iw, p.oh*p.ow
	for u := lo; u < hi; u++ {
		pl, b := u/p.blocks, u%p.blocks
		y0, y1 := p.oh*b/p.blocks, p.oh*(b+1)/p.blocks
		src := p.x[pl*isp : (pl+1)*isp]
		dst := p.y[pl*osp+y0*p.ow : pl*osp+y1*p.ow]
		switch {
		case !p.w.resized() && !p.h.resized():
			copy(dst, src[y0*p.iw:y1*p.iw])
		case !p.w.resized():
			p.h.rows(dst, src, p.iw, y0, y1, 0)
		case !p.h.resized():
			for y := y0; y < y1; y++ {
				p.w.gather(dst[(y-y0)*p.ow:(y-y0+1)*p.ow], src[y*p.iw:(y+1)*p.iw])
			}
		case p.wFirst:
			// The input rows the block reads, resized along W, then
			// combined along H.
			first, last := p.h.span(y0, y1)
			if last < first {
				p.h.rows(dst, nil, p.ow, y0, y1, 0) // no taps: zeros
				continue
			}
			t := (*sc)[:(last-first+1)*p.ow]
			for i := first; i <= last; i++ {
				p.w.gather(t[(i-first)*p.ow:(i-first+1)*p.ow], src[i*p.iw:(i+1)*p.iw])
			}
			p.h.rows(dst, t, p.ow, y0, y1, first)
		default:
			row := (*sc)[:p.iw]
			for y := y0; y < y1; y++ {
				p.h.rows(row, src, p.iw, y, y+1, 0)
				p.w.gather(dst[(y-y0)*p.ow:(y-y0+1)*p.ow], row)
			}
		}
	}
}

// resize runs Resize's float32 path from xd into y.
func (p *imPlanes) resize(r *limit.Run, xd, y []float32) error {
	if p.scratch > 0 {
		if _, err := limit.Claim[float32](r, min(p.planes*p.blocks, runtime.GOMAXPROCS(0)), p.scratch); err != nil {
			return err
		}
	}
	p.x, p.y = xd, y
	taps := 1 + len(p.h.index)/max(1, p.oh) + 4*len(p.w.index)/max(1, p.ow)
	parallelFor(p.planes*p.blocks, (p.oh*p.ow/p.blocks)*taps, p.body)
	p.x, p.y = nil, nil // the plan outlives them
	return nil
}

// scaleFloats sets y[i] = a·x[i]; x is at least as long as y.
func scaleFloats(y, x []float32, a float32) {
	x = x[:len(y)]
	if a == 1 {
		copy(y, x)
		return
	}
	ewArithVS(ewMul, y, x, a)
}

// axpyGo is axpy's loop.
func axpyGo(y, x []float32, a float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] += a * v
	}
}

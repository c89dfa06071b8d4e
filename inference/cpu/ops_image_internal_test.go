package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Values are hand-computed; float32 results are held to rtol 1e-4,
// atol 1e-5.

func TestResizeLinearOpsets(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 1, 2, 2}, 1, 2, 3, 4)
	scales := tensorOf[float32](t, []int{4}, 1, 1, 2, 2)
	linear := map[string]graph.Attr{"mode": attrString("linear")}

	// Resize-19 defaults to half_pixel: x_in = (x_out + 0.5)/2 − 0.5, so
	// a row [a, b] becomes [a, .75a+.25b, .25a+.75b, b].
	got := runKernel(t, testNode("Resize", 19, linear, 1), x, inference.Tensor{}, scales)[0]
	checkFloats(t, got, []int{1, 1, 4, 4},
		1, 1.25, 1.75, 2,
		1.5, 1.75, 2.25, 2.5,
		2.5, 2.75, 3.25, 3.5,
		3, 3.25, 3.75, 4)

	// Resize-10 maps x_in = x_out/2: a row [a, b] becomes [a, (a+b)/2, b, b].
	got = runKernel(t, testNode("Resize", 10, linear, 1), x, scales)[0]
	checkFloats(t, got, []int{1, 1, 4, 4},
		1, 1.5, 2, 2,
		2, 2.5, 3, 3,
		3, 3.5, 4, 4,
		3, 3.5, 4, 4)
}

func TestResizeNearestLegacyDownsample(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 4}, 1, 2, 3, 4)
	scales := tensorOf[float32](t, []int{2}, 1, 0.6)
	// floor(4·0.6) = 2 outputs at x_in = 0 and 1/0.6 ≈ 1.67; Resize-10 takes
	// the ceiling when downsampling (index 2), Resize-19 with asymmetric
	// coordinates and nearest_mode floor takes index 1.
	got := runKernel(t, testNode("Resize", 10, nil, 1), x, scales)[0]
	checkFloats(t, got, []int{1, 2}, 1, 3)
	got = runKernel(t, testNode("Resize", 19, map[string]graph.Attr{
		"coordinate_transformation_mode": attrString("asymmetric"), "nearest_mode": attrString("floor"),
	}, 1), x, inference.Tensor{}, scales)[0]
	checkFloats(t, got, []int{1, 2}, 1, 2)
}

func TestResizeSizesAxesNotLarger(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 1, 2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)
	sizes := tensorOf[int64](t, []int{2}, 2, 2)
	// Scales would be 1 and 0.5; not_larger keeps 0.5 on both axes, giving
	// [1, 2]. Half-pixel source coordinates are 0.5 (rows) and 0.5, 2.5
	// (columns), which round_prefer_floor takes to 0 and 0, 2.
	got := runKernel(t, testNode("Resize", 18, map[string]graph.Attr{
		"axes": attrInts(-2, -1), "keep_aspect_ratio_policy": attrString("not_larger"),
	}, 1), x, inference.Tensor{}, inference.Tensor{}, sizes)[0]
	checkFloats(t, got, []int{1, 1, 1, 2}, 1, 3)
}

func TestResizeCubicAsymmetric(t *testing.T) {
	x := tensorOf[float32](t, []int{4}, 0, 1, 0, 0)
	scales := tensorOf[float32](t, []int{1}, 2)
	// Output 3 samples x_in = 1.5: taps 0..3 weigh k(1.5), k(0.5), k(0.5),
	// k(1.5) with Keys' kernel (a = −0.75): k(0.5) = 0.59375,
	// k(1.5) = −0.09375. Output 2 samples x_in = 1 exactly.
	got := runKernel(t, testNode("Resize", 13, map[string]graph.Attr{
		"mode": attrString("cubic"), "coordinate_transformation_mode": attrString("asymmetric"),
	}, 1), x, inference.Tensor{}, scales)[0]
	d, _ := floats(got)
	if len(d) != 8 || math.Abs(float64(d[2])-1) > 1e-5 || math.Abs(float64(d[3])-0.59375) > 1e-5 {
		t.Fatalf("got %v, want 8 values with [2] = 1, [3] = 0.59375", d)
	}
}

func TestResizeCropAndResizeExtrapolation(t *testing.T) {
	x := tensorOf[float32](t, []int{3}, 1, 2, 3)
	roi := tensorOf[float32](t, []int{2}, 0.5, 1.5)
	sizes := tensorOf[int64](t, []int{1}, 3)
	// x_in = 0.5·2 + x_out·(1.5−0.5)·2/2 = 1, 2, 3; 3 lies outside [0, 2].
	got := runKernel(t, testNode("Resize", 13, map[string]graph.Attr{
		"mode": attrString("linear"), "coordinate_transformation_mode": attrString("tf_crop_and_resize"),
		"extrapolation_value": attrFloat(9),
	}, 1), x, roi, inference.Tensor{}, sizes)[0]
	checkFloats(t, got, []int{3}, 2, 3, 9)
}

func TestResizeErrors(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 1, 2, 2}, 1, 2, 3, 4)
	_, err := imResize(testNode("Resize", 13, nil, 1), []inference.Tensor{x, {}, tensorOf[float32](t, []int{3}, 1, 2, 2)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("3 scales for rank 4: got %v, want ErrShape", err)
	}
	_, err = imResize(testNode("Resize", 13, nil, 1), []inference.Tensor{x, {}, tensorOf[float32](t, []int{4}, 1, 1, 0, 2)})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("scale 0: got %v, want ErrShape", err)
	}
	xi := tensorOf[int64](t, []int{2}, 1, 2)
	_, err = imResize(testNode("Resize", 13, nil, 1), []inference.Tensor{xi, {}, tensorOf[float32](t, []int{1}, 2)})
	if !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("int64 X: got %v, want ErrUnsupportedOp", err)
	}
}

func TestUpsampleOpsets(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 2}, 1, 2)
	want := []float32{1, 1, 1, 2, 2, 2}
	// Upsample-7 takes scales as an attribute, Upsample-9 as an input.
	got := runKernel(t, testNode("Upsample", 7, map[string]graph.Attr{"scales": attrFloats(1, 3)}, 1), x)[0]
	checkFloats(t, got, []int{1, 6}, want...)
	got = runKernel(t, testNode("Upsample", 9, nil, 1), x, tensorOf[float32](t, []int{2}, 1, 3))[0]
	checkFloats(t, got, []int{1, 6}, want...)
}

func TestGridSample(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 1, 2, 2}, 1, 2, 3, 4)
	// Points (x, y): the center (0, 0), the top-left corner (−1, −1) and
	// (1, −1). Without align_corners they map to pixel coordinates
	// (0.5, 0.5), (−0.5, −0.5) and (1.5, −0.5).
	grid := tensorOf[float32](t, []int{1, 1, 3, 2}, 0, 0, -1, -1, 1, -1)

	// zeros: the corner reads a quarter of pixel (0, 0); (1.5, −0.5) a
	// quarter of pixel (0, 1).
	got := runKernel(t, testNode("GridSample", 20, nil, 1), x, grid)[0]
	checkFloats(t, got, []int{1, 1, 1, 3}, 2.5, 0.25, 0.5)

	got = runKernel(t, testNode("GridSample", 16, map[string]graph.Attr{"padding_mode": attrString("border")}, 1), x, grid)[0]
	checkFloats(t, got, []int{1, 1, 1, 3}, 2.5, 1, 2)

	// nearest rounds half to even: 0.5 → 0, −0.5 → −0, 1.5 → 2 (outside).
	got = runKernel(t, testNode("GridSample", 20, map[string]graph.Attr{"mode": attrString("nearest")}, 1), x, grid)[0]
	checkFloats(t, got, []int{1, 1, 1, 3}, 1, 1, 0)

	// GridSample-16 takes only 4-D input.
	x5 := tensorOf[float32](t, []int{1, 1, 1, 2, 2}, 1, 2, 3, 4)
	g5 := tensorOf[float32](t, []int{1, 1, 1, 1, 3}, 0, 0, 0)
	if _, err := imGridSample(testNode("GridSample", 16, nil, 1), []inference.Tensor{x5, g5}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("GridSample-16 on 5-D input: got %v, want ErrShape", err)
	}
	got = runKernel(t, testNode("GridSample", 20, nil, 1), x5, g5)[0]
	checkFloats(t, got, []int{1, 1, 1, 1, 1}, 2.5)
}

func TestAffineGrid(t *testing.T) {
	// Scale x by 2 and shift y by 0.5.
	theta := tensorOf[float32](t, []int{1, 2, 3}, 2, 0, 0, 0, 1, 0.5)
	size := tensorOf[int64](t, []int{4}, 1, 1, 2, 2)
	// Base coordinates ±0.5 without align_corners, ±1 with.
	got := runKernel(t, testNode("AffineGrid", 20, nil, 1), theta, size)[0]
	checkFloats(t, got, []int{1, 2, 2, 2}, -1, 0, 1, 0, -1, 1, 1, 1)
	got = runKernel(t, testNode("AffineGrid", 20, map[string]graph.Attr{"align_corners": attrInt(1)}, 1), theta, size)[0]
	checkFloats(t, got, []int{1, 2, 2, 2}, -2, -0.5, 2, -0.5, -2, 1.5, 2, 1.5)

	if _, err := imAffineGrid(testNode("AffineGrid", 20, nil, 1), []inference.Tensor{theta, tensorOf[int64](t, []int{5}, 1, 1, 2, 2, 2)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("2-D theta with 3-D size: got %v, want ErrShape", err)
	}
}

// TestResizePlanes checks Resize's float32 path (imPlanes) against the
// general float64 path (imResample) on random geometries: ranks 2 to 5,
// every mode, coordinate transformation and nearest mode, cubic
// coefficients, antialiasing and exclude_outside, by scales and by sizes,
// up and down; W first and H first; a block of rows per unit when planes
// are few. Each output is within (taps along H + taps along W + 2)
// float32 roundings of 1.5²·max|x| (|weights| sum to at most 1.5 along an
// axis) of the general path's. Geometries that resize an axis before the
// last two, or extrapolate, must take the general path.
func TestResizePlanes(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	modes := []string{"nearest", "linear", "cubic"}
	coords := []string{"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"}
	nearests := []string{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
	fast := 0
	for trial := range 400 {
		rank := 2 + r.IntN(4)
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = 1 + r.IntN(4)
		}
		shape[rank-2], shape[rank-1] = 1+r.IntN(20), 1+r.IntN(20)
		scales := make([]float32, rank)
		for i := range scales {
			scales[i] = 1
		}
		for _, ax := range []int{rank - 2, rank - 1} {
			switch r.IntN(4) {
			case 0: // unchanged
			case 1:
				scales[ax] = float32(1 + r.IntN(4)) // integral upsampling
			default:
				scales[ax] = 0.25 + 3.75*r.Float32()
			}
		}
		leading := rank > 2 && trial%10 == 9 // an axis before the last two resized: the general path
		if leading {
			scales[r.IntN(rank-2)] = 2
		}
		mode := modes[r.IntN(len(modes))]
		attrs := map[string]graph.Attr{
			"mode":                           attrString(mode),
			"coordinate_transformation_mode": attrString(coords[r.IntN(len(coords))]),
			"nearest_mode":                   attrString(nearests[r.IntN(len(nearests))]),
			"cubic_coeff_a":                  attrFloat([]float32{-0.75, -0.5}[r.IntN(2)]),
			"exclude_outside":                attrInt(int64(r.IntN(2))),
			"antialias":                      attrInt(int64(r.IntN(2))),
		}
		n := testNode("Resize", 19, attrs, 1)
		x := randTensor(t, r, shape...)
		in := []inference.Tensor{x, {}, tensorOf(t, []int{rank}, scales...)}
		if r.IntN(3) == 0 && !leading {
			// By sizes instead.
			sizes := make([]int64, rank)
			for i, d := range shape {
				sizes[i] = int64(math.Floor(float64(scales[i]) * float64(d)))
				sizes[i] = max(sizes[i], 1)
			}
			in = []inference.Tensor{x, {}, {}, tensorOf(t, []int{rank}, sizes...)}
		}
		got := floatsOf(t, runKernel(t, n, in...)[0])

		var sizes []int64
		var sc []float32
		if len(in) == 4 {
			sizes = must(opsem.Int64s(in[3]))
		} else {
			sc = scales
		}
		g, err := opsem.Resize(n, shape, nil, sc, sizes)
		if err != nil {
			t.Fatal(err)
		}
		p, err := newImPlanes(nil, x, g)
		if err != nil {
			t.Fatal(err)
		}
		if want := !leading && limit.Count(g.Out...) > 0; want != (p != nil) {
			t.Fatalf("trial %d: %v → %v: float32 path %v, want %v", trial, shape, g.Out, p != nil, want)
		}
		general := floatsOf(t, must(imResample(nil, x, g))[0])
		if len(got) != len(general) {
			t.Fatalf("trial %d: %d outputs, general path %d", trial, len(got), len(general))
		}
		if p == nil {
			if !slices.Equal(got, general) {
				t.Fatalf("trial %d: general path differs", trial)
			}
			continue
		}
		fast++
		most := func(t imTaps32) int {
			m := 1
			for o := 0; o+1 < len(t.start); o++ {
				m = max(m, int(t.start[o+1]-t.start[o]))
			}
			return m
		}
		var maxX float64
		for _, v := range floatsOf(t, x) {
			maxX = max(maxX, math.Abs(float64(v)))
		}
		bound := float64(most(p.h)+most(p.w)+2) * 0x1p-24 * 1.5 * 1.5 * maxX
		for i := range got {
			if d := math.Abs(float64(got[i]) - float64(general[i])); !(d <= bound) {
				t.Fatalf("trial %d: %v → %v, %v: element %d = %v, general path %v (|Δ| %.3g > %.3g); wFirst %v",
					trial, shape, g.Out, attrs, i, got[i], general[i], d, bound, p.wFirst)
			}
		}
	}
	if fast < 300 {
		t.Fatalf("%d of 400 trials took the float32 path, want at least 300", fast)
	}
}

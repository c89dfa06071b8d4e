package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

func TestPools(t *testing.T) {
	x := tensorOf(t, []int{1, 1, 3, 3}, float32(1), 2, 3, 4, 5, 6, 7, 8, 9)

	// MaxPool 2×2 stride 1 with Indices, row-major and column-major.
	n := testNode("MaxPool", 12, map[string]graph.Attr{"kernel_shape": attrInts(2, 2)}, 2)
	out := runKernel(t, n, x)
	checkFloats(t, out[0], []int{1, 1, 2, 2}, 5, 6, 8, 9)
	if idx, _ := inference.Data[int64](out[1]); !slices.Equal(idx, []int64{4, 5, 7, 8}) {
		t.Fatalf("MaxPool indices %v, want [4 5 7 8]", idx)
	}
	n = testNode("MaxPool", 12, map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "storage_order": attrInt(1)}, 2)
	out = runKernel(t, n, x)
	if idx, _ := inference.Data[int64](out[1]); !slices.Equal(idx, []int64{4, 7, 5, 8}) {
		t.Fatalf("MaxPool column-major indices %v, want [4 7 5 8]", idx)
	}

	// MaxPool-1 still honours dilations (taps 0 and 2 of each row).
	n = testNode("MaxPool", 1, map[string]graph.Attr{"kernel_shape": attrInts(1, 2), "dilations": attrInts(1, 2)}, 1)
	out = runKernel(t, n, x)
	checkFloats(t, out[0], []int{1, 1, 3, 1}, 3, 6, 9)

	// AveragePool 2×2, stride 2, ceil_mode, pad 1 at the start: the
	// corner window holds 1 element (4 with count_include_pad).
	attrs := map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "strides": attrInts(2, 2), "pads": attrInts(1, 1, 0, 0)}
	out = runKernel(t, testNode("AveragePool", 19, attrs, 1), x)
	checkFloats(t, out[0], []int{1, 1, 2, 2}, 1, 2.5, 5.5, 7)
	attrs["count_include_pad"] = attrInt(1)
	out = runKernel(t, testNode("AveragePool", 19, attrs, 1), x)
	checkFloats(t, out[0], []int{1, 1, 2, 2}, 0.25, 1.25, 2.75, 7)

	// ceil_mode keeps a last, partial window: 3 wide, kernel 2, stride 2.
	out = runKernel(t, testNode("AveragePool", 19, map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "strides": attrInts(2, 2), "ceil_mode": attrInt(1)}, 1), x)
	checkFloats(t, out[0], []int{1, 1, 2, 2}, 3, 4.5, 7.5, 9)

	// LpPool p=1 sums magnitudes; LpPool-1 takes p as a float.
	neg := tensorOf(t, []int{1, 1, 3}, float32(-3), 4, 0)
	out = runKernel(t, testNode("LpPool", 18, map[string]graph.Attr{"kernel_shape": attrInts(2), "p": attrInt(1)}, 1), neg)
	checkFloats(t, out[0], []int{1, 1, 2}, 7, 4)
	out = runKernel(t, testNode("LpPool", 1, map[string]graph.Attr{"kernel_shape": attrInts(2), "p": attrFloat(2)}, 1), neg)
	checkFloats(t, out[0], []int{1, 1, 2}, 5, 4)

	out = runKernel(t, testNode("GlobalAveragePool", 1, nil, 1), x)
	checkFloats(t, out[0], []int{1, 1, 1, 1}, 5)
	out = runKernel(t, testNode("GlobalMaxPool", 1, nil, 1), x)
	checkFloats(t, out[0], []int{1, 1, 1, 1}, 9)

	// A window larger than the input is a shape error.
	if _, err := plMaxPool(testNode("MaxPool", 12, map[string]graph.Attr{"kernel_shape": attrInts(4, 4)}, 1), []inference.Tensor{x}); !errors.Is(err, inference.ErrShape) {
		t.Fatalf("MaxPool 4×4 on 3×3: err = %v, want ErrShape", err)
	}
}

func TestMaxUnpool(t *testing.T) {
	n := testNode("MaxUnpool", 11, map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "strides": attrInts(2, 2)}, 1)
	x := tensorOf(t, []int{1, 1, 1, 2}, float32(5), 7)
	i := tensorOf(t, []int{1, 1, 1, 2}, int64(1), 6)
	out := runKernel(t, n, x, i)
	checkFloats(t, out[0], []int{1, 1, 2, 4}, 0, 5, 0, 0, 0, 0, 7, 0)

	out = runKernel(t, n, x, i, tensorOf(t, []int{4}, int64(1), 1, 3, 4))
	checkFloats(t, out[0], []int{1, 1, 3, 4}, 0, 5, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0)

	if _, err := plMaxUnpool(n, []inference.Tensor{x, tensorOf(t, []int{1, 1, 1, 2}, int64(1), 8)}); !errors.Is(err, inference.ErrShape) {
		t.Fatalf("MaxUnpool index 8 into 8 elements: err = %v, want ErrShape", err)
	}
}

// BenchmarkMaxPool times 3×3 stride-2 max pools: ResNet's over
// 64×112×112 (padding 1; 3.2 MB, which the cache holds), SqueezeNet's
// first over 64×111×111 (ceil_mode) at batch 1 and at batch 8 (25 MB,
// read from memory, where the row loops' prefetching counts), and its
// second over 128×55×55.
func BenchmarkMaxPool(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		name  string
		shape []int
		attrs map[string]graph.Attr
	}{
		{"resnet", []int{1, 64, 112, 112}, map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}},
		{"squeezenet", []int{1, 64, 111, 111}, map[string]graph.Attr{"ceil_mode": attrInt(1)}},
		{"squeezenet_b8", []int{8, 64, 111, 111}, map[string]graph.Attr{"ceil_mode": attrInt(1)}},
		{"squeezenet_55", []int{1, 128, 55, 55}, map[string]graph.Attr{"ceil_mode": attrInt(1)}},
	} {
		c.attrs["kernel_shape"], c.attrs["strides"] = attrInts(3, 3), attrInts(2, 2)
		x, _ := inference.New(c.shape, nnRandom(r, limit.Count(c.shape...)))
		n := testNode("MaxPool", 12, c.attrs, 1)
		in := []inference.Tensor{x}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := plMaxPool(n, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMaxPool2DRows checks MaxPool's row path (maxPool2D, taken without
// Indices) and its whole-plane path ("same" pools at stride 1,
// maxPoolFlat) against the general path (taken with Indices) on random
// planes, kernels, strides 1 and 2, pads and ceil_mode, some with
// infinities: the maxima are the same elements, so they agree exactly.
func TestMaxPool2DRows(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for trial := range 300 {
		h, w := 1+r.IntN(13), 1+r.IntN(40)
		kh, kw := 1+r.IntN(min(h, 4)), 1+r.IntN(min(w, 4))
		attrs := map[string]graph.Attr{
			"kernel_shape": attrInts(int64(kh), int64(kw)),
			"strides":      attrInts(int64(1+r.IntN(2)), int64(1+r.IntN(2))),
			"pads":         attrInts(int64(r.IntN(kh)), int64(r.IntN(kw)), int64(r.IntN(kh)), int64(r.IntN(kw))),
			"ceil_mode":    attrInt(int64(r.IntN(2))),
		}
		if trial%3 == 0 {
			// A "same" pool at stride 1 (maxPoolFlat): pads summing to
			// kw − 1 along the row, any along the column, kernels to 13.
			kh, kw = 1+r.IntN(min(h, 13)), 1+r.IntN(min(w, 13))
			pw := r.IntN(kw)
			attrs["kernel_shape"] = attrInts(int64(kh), int64(kw))
			attrs["strides"] = attrInts(1, 1)
			attrs["pads"] = attrInts(int64(r.IntN(kh)), int64(pw), int64(r.IntN(kh)), int64(kw-1-pw))
		}
		x := tensorOf(t, []int{2, 3, h, w}, nnRandom(r, 6*h*w)...)
		if trial%5 == 0 {
			// Infinities. (Not NaN: with Indices the general path keeps
			// a window's first element even when it is NaN; the vector
			// loops' NaN is TestMaxPoolRowLoops'.)
			xd := floatsOf(t, x)
			for range 1 + r.IntN(6) {
				xd[r.IntN(len(xd))] = float32(math.Inf(1 - 2*r.IntN(2)))
			}
		}
		rows := runKernel(t, testNode("MaxPool", 12, attrs, 1), x)[0]
		general := runKernel(t, testNode("MaxPool", 12, attrs, 2), x)[0]
		if !inference.Equal(rows, general) {
			t.Fatalf("trial %d: %dx%d planes, attributes %v: row path %v, general %v", trial, h, w, attrs, rows, general)
		}
	}
}

// TestMaxPoolNarrow checks MaxPool on narrow maps (rows of at most 31,
// output rows of at most 16: maxPoolNarrow where the CPU runs it) against
// the maximum over each window taken element by element, skipping NaN
// (−Inf for a window all padding): kernels to 5, strides 1 to 3,
// dilations 1 and 2, any pads, ceil_mode, up to 40 planes, and values
// with NaN, ±Inf and signed zeros (compared as the float32 bits, NaN as
// NaN).
func TestMaxPoolNarrow(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	checked := 0
	for trial := range 400 {
		h, w := 1+r.IntN(20), 1+r.IntN(31)
		kh, kw := 1+r.IntN(5), 1+r.IntN(5)
		sh, sw := 1+r.IntN(3), 1+r.IntN(3)
		dh, dw := 1+r.IntN(2), 1+r.IntN(2)
		if (kh-1)*dh+1 > h+4 || (kw-1)*dw+1 > w+4 {
			continue
		}
		ph0, pw0 := r.IntN(min(3, kh)), r.IntN(min(3, kw))
		ph1, pw1 := r.IntN(min(3, kh)), r.IntN(min(3, kw))
		attrs := map[string]graph.Attr{
			"kernel_shape": attrInts(int64(kh), int64(kw)),
			"strides":      attrInts(int64(sh), int64(sw)),
			"dilations":    attrInts(int64(dh), int64(dw)),
			"pads":         attrInts(int64(ph0), int64(pw0), int64(ph1), int64(pw1)),
			"ceil_mode":    attrInt(int64(r.IntN(2))),
		}
		n := testNode("MaxPool", 12, attrs, 1)
		batch, chans := 1+r.IntN(2), 1+r.IntN(20)
		g, err := opsem.PoolWindow(n, []int{batch, chans, h, w})
		if err != nil || g.Out[0] < 1 || g.Out[1] < 1 || g.Out[1] > 16 {
			continue
		}
		checked++
		xd := nnRandom(r, batch*chans*h*w)
		for i := range xd {
			if r.IntN(10) == 0 {
				xd[i] = specials[r.IntN(len(specials))]
			}
		}
		got := floatsOf(t, runKernel(t, n, tensorOf(t, []int{batch, chans, h, w}, xd...))[0])
		oh, ow := g.Out[0], g.Out[1]
		for pl := range batch * chans {
			for oy := range oh {
				for ox := range ow {
					want := float32(math.Inf(-1))
					for ky := range kh {
						iy := oy*sh + ky*dh - ph0
						for kx := range kw {
							ix := ox*sw + kx*dw - pw0
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue
							}
							if v := xd[pl*h*w+iy*w+ix]; v > want || (v == 0 && want == 0 && !math.Signbit(float64(v))) {
								want = v
							}
						}
					}
					if e := got[(pl*oh+oy)*ow+ox]; !same(e, want) && !(e == 0 && want == 0) {
						t.Fatalf("trial %d: %dx%d planes, attributes %v: plane %d output (%d, %d) = %v, want %v", trial, h, w, attrs, pl, oy, ox, e, want)
					}
				}
			}
		}
	}
	if checked < 200 {
		t.Fatalf("%d geometries checked of 400 drawn, want at least 200", checked)
	}
}

// TestGlobalPools checks GlobalAveragePool and GlobalMaxPool on planes of
// every size from 1 to 70 and EfficientNet's 7×7 to 56×56, against the
// float64 mean and Go's max folded over each plane. The mean is held to
// sumFloats' bound, (size/8 + 16)·2⁻²⁴·Σ|x| over size, plus half an ulp
// for the division; the max is exact.
func TestGlobalPools(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var sizes [][]int
	for s := 1; s <= 70; s++ {
		sizes = append(sizes, []int{s})
	}
	sizes = append(sizes, []int{7, 7}, []int{14, 14}, []int{28, 28}, []int{56, 56}, []int{3, 5, 7})
	for _, spatial := range sizes {
		shape := append([]int{2, 3}, spatial...)
		x := randTensor(t, r, shape...)
		xd := floatsOf(t, x)
		avg := floatsOf(t, runKernel(t, testNode("GlobalAveragePool", 1, nil, 1), x)[0])
		mx := floatsOf(t, runKernel(t, testNode("GlobalMaxPool", 1, nil, 1), x)[0])
		size := len(xd) / 6
		for p := range 6 {
			plane := xd[p*size : (p+1)*size]
			var sum, mag float64
			best := float32(math.Inf(-1))
			for _, v := range plane {
				sum += float64(v)
				mag += math.Abs(float64(v))
				best = max(best, v)
			}
			mean := sum / float64(size)
			if bound := (float64(size)/8+16)*0x1p-24*mag/float64(size) + 0x1p-24*math.Abs(mean); math.Abs(float64(avg[p])-mean) > bound {
				t.Errorf("%v plane %d: mean %v, want %v ± %.3g", shape, p, avg[p], mean, bound)
			}
			if mx[p] != best {
				t.Errorf("%v plane %d: max %v, want %v", shape, p, mx[p], best)
			}
		}
	}
}

// BenchmarkGlobalAveragePool times GlobalAveragePool on the shapes
// EfficientNet-B0's squeeze-excite blocks average, [1, C, H, W].
func BenchmarkGlobalAveragePool(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	n := testNode("GlobalAveragePool", 1, nil, 1)
	for _, s := range [][3]int{{32, 112, 112}, {96, 56, 56}, {144, 28, 28}, {480, 14, 14}, {1152, 7, 7}} {
		x, _ := inference.New([]int{1, s[0], s[1], s[2]}, nnRandom(r, s[0]*s[1]*s[2]))
		in := []inference.Tensor{x}
		b.Run(fmt.Sprintf("%dx%dx%d", s[0], s[1], s[2]), func(b *testing.B) {
			b.SetBytes(int64(4 * s[0] * s[1] * s[2]))
			for b.Loop() {
				if _, err := plGlobalAveragePool(n, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAvgPool2DRows checks AveragePool's 2-D path (avgPool2D: rows, then
// columns, then the count) against the float64 mean over each window on
// random planes, kernels to 5×5 (and up to the plane), strides 1 and 2
// along the row (any along the column), pads, ceil_mode and
// count_include_pad: each output within (kh·kw + 2)·2⁻²⁴ of the window's
// Σ|x| over its count, the count being the taps inside the input, or with
// count_include_pad inside the padded input (not past it, where ceil_mode
// puts a window's end).
func TestAvgPool2DRows(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for trial := range 300 {
		h, w := 1+r.IntN(13), 1+r.IntN(40)
		kh, kw := 1+r.IntN(min(h, 5)), 1+r.IntN(min(w, 5))
		sh, sw := 1+r.IntN(3), 1+r.IntN(2)
		pads := []int{r.IntN(kh), r.IntN(kw), r.IntN(kh), r.IntN(kw)}
		ceil, include := r.IntN(2), r.IntN(2)
		attrs := map[string]graph.Attr{
			"kernel_shape":      attrInts(int64(kh), int64(kw)),
			"strides":           attrInts(int64(sh), int64(sw)),
			"pads":              attrInts(int64(pads[0]), int64(pads[1]), int64(pads[2]), int64(pads[3])),
			"ceil_mode":         attrInt(int64(ceil)),
			"count_include_pad": attrInt(int64(include)),
		}
		x := tensorOf(t, []int{2, 3, h, w}, nnRandom(r, 6*h*w)...)
		y := runKernel(t, testNode("AveragePool", 19, attrs, 1), x)[0]
		ys, yd, xd := y.Shape(), floatsOf(t, y), floatsOf(t, x)
		oh, ow := ys[2], ys[3]
		// count returns the taps of the window from o·s − p along a
		// dimension of n inside [lo, hi).
		count := func(o, s, p, k, lo, hi int) int {
			c := 0
			for j := range k {
				if at := o*s - p + j; at >= lo && at < hi {
					c++
				}
			}
			return c
		}
		for pl := range 6 {
			plane := xd[pl*h*w : (pl+1)*h*w]
			for oy := range oh {
				for ox := range ow {
					var sum, mag float64
					for ky := range kh {
						for kx := range kw {
							iy, ix := oy*sh-pads[0]+ky, ox*sw-pads[1]+kx
							if iy >= 0 && iy < h && ix >= 0 && ix < w {
								sum += float64(plane[iy*w+ix])
								mag += math.Abs(float64(plane[iy*w+ix]))
							}
						}
					}
					n := count(oy, sh, pads[0], kh, 0, h) * count(ox, sw, pads[1], kw, 0, w)
					if include == 1 {
						n = count(oy, sh, pads[0], kh, -pads[0], h+pads[2]) * count(ox, sw, pads[1], kw, -pads[1], w+pads[3])
					}
					want := sum / float64(n)
					got := float64(yd[(pl*oh+oy)*ow+ox])
					if bound := float64(kh*kw+2) * 0x1p-24 * mag / float64(n); !(math.Abs(got-want) <= bound) {
						t.Fatalf("trial %d: %dx%d, %v: plane %d (%d, %d) = %v, want %v ± %.2g", trial, h, w, attrs, pl, oy, ox, got, want, bound)
					}
				}
			}
		}
	}
}

// TestAvgPoolHalves checks AveragePool's 2×2 stride-2 path (avgPoolHalves,
// which plHalves selects) on planes of even and odd sizes (an odd last row
// or column left out), with ceil_mode where it adds no window, on one and
// two cores, against ((x₀₀ + x₁₀) + (x₀₁ + x₁₁)) / 4 in float32, the order
// the general row path adds in: equal, bit for bit. A ceil_mode that adds
// a window past an odd edge, and a pad, are left to the general path.
func TestAvgPoolHalves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(63, 64))
	for trial := range 60 {
		runtime.GOMAXPROCS(1 + trial%2)
		n, c, h, w := 1+r.IntN(2), 1+r.IntN(96), 2+r.IntN(40), 2+r.IntN(40)
		ceil := r.IntN(2)
		attrs := map[string]graph.Attr{
			"kernel_shape": attrInts(2, 2),
			"strides":      attrInts(2, 2),
			"ceil_mode":    attrInt(int64(ceil)),
		}
		node := testNode("AveragePool", 19, attrs, 1)
		g, err := opsem.PoolWindow(node, []int{n, c, h, w})
		if err != nil {
			t.Fatal(err)
		}
		if want := ceil == 0 || h%2 == 0 && w%2 == 0; plHalves(g) != want {
			t.Fatalf("trial %d: %dx%d, ceil_mode %d: plHalves %v, want %v", trial, h, w, ceil, plHalves(g), want)
		}
		x := tensorOf(t, []int{n, c, h, w}, nnRandom(r, n*c*h*w)...)
		y := runKernel(t, node, x)[0]
		ys, yd, xd := y.Shape(), floatsOf(t, y), floatsOf(t, x)
		oh, ow := ys[2], ys[3]
		if !plHalves(g) {
			continue // TestAvgPool2DRows checks the general path
		}
		for pl := range n * c {
			a := xd[pl*h*w : (pl+1)*h*w]
			for oy := range oh {
				for ox := range ow {
					i := 2*oy*w + 2*ox
					want := ((a[i] + a[i+w]) + (a[i+1] + a[i+w+1])) / 4
					if got := yd[(pl*oh+oy)*ow+ox]; got != want {
						t.Fatalf("trial %d: %dx%d: plane %d (%d, %d) = %v, want %v", trial, h, w, pl, oy, ox, got, want)
					}
				}
			}
		}
	}
	pad := testNode("AveragePool", 19, map[string]graph.Attr{"kernel_shape": attrInts(2, 2), "strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1)}, 1)
	if g, err := opsem.PoolWindow(pad, []int{1, 1, 8, 8}); err != nil || plHalves(g) {
		t.Fatalf("a padded 2×2 window taken as halves (%v)", err)
	}
}

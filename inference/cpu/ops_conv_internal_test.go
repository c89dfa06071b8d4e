package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

func TestConvHand(t *testing.T) {
	// 3×3 input, 2×2 kernel of ones, pads 1 at the start only, stride 2:
	// windows start at -1 and 1 in each dimension.
	x := tensorOf(t, []int{1, 1, 3, 3}, float32(1), 2, 3, 4, 5, 6, 7, 8, 9)
	w := tensorOf(t, []int{1, 1, 2, 2}, float32(1), 1, 1, 1)
	bias := tensorOf(t, []int{1}, float32(100))
	n := testNode("Conv", 11, map[string]graph.Attr{"pads": attrInts(1, 1, 0, 0), "strides": attrInts(2, 2)}, 1)
	out := runKernel(t, n, x, w, bias)
	checkFloats(t, out[0], []int{1, 1, 2, 2}, 101, 105, 111, 128)

	// SAME_UPPER with stride 2 on a width-4 1-D input: output 2, total
	// padding 1, at the end.
	n = testNode("Conv", 11, map[string]graph.Attr{"auto_pad": attrString("SAME_UPPER"), "strides": attrInts(2)}, 1)
	out = runKernel(t, n, tensorOf(t, []int{1, 1, 4}, float32(1), 2, 3, 4), tensorOf(t, []int{1, 1, 3}, float32(1), 1, 1))
	checkFloats(t, out[0], []int{1, 1, 2}, 6, 7)

	// Two groups of one channel each.
	n = testNode("Conv", 11, map[string]graph.Attr{"group": attrInt(2)}, 1)
	out = runKernel(t, n, tensorOf(t, []int{1, 2, 2}, float32(1), 2, 3, 4), tensorOf(t, []int{2, 1, 1}, float32(10), -1))
	checkFloats(t, out[0], []int{1, 2, 2}, 10, 20, -3, -4)

	// Channels that do not match W are a shape error.
	if _, err := cvConv(n, []inference.Tensor{tensorOf(t, []int{1, 3, 2}, make([]float32, 6)...), tensorOf(t, []int{2, 1, 1}, float32(1), 1)}); !errors.Is(err, inference.ErrShape) {
		t.Fatalf("Conv with 3 channels, W for 2: err = %v, want ErrShape", err)
	}
	n = testNode("Conv", 11, map[string]graph.Attr{"auto_pad": attrString("SAME_MIDDLE")}, 1)
	if _, err := cvConv(n, []inference.Tensor{x, w}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Fatalf("Conv with auto_pad SAME_MIDDLE: err = %v, want ErrUnsupportedOp", err)
	}
}

// cvDirectConv is the reference convolution: a loop over every output
// element and every tap, in float64.
func cvDirectConv(xs, ws []int, x, w, bias []float32, g opsem.Window, group int) []float32 {
	batch, chans, outChans := xs[0], xs[1], ws[0]
	cg, mg := chans/group, outChans/group
	isp, osp, ksz := opsem.Count(g.In), opsem.Count(g.Out), opsem.Count(g.Kernel)
	out := make([]float32, batch*outChans*osp)
	r := len(g.In)
	for b := range batch {
		for m := range outChans {
			grp := m / mg
			for o := range osp {
				s := 0.0
				if bias != nil {
					s = float64(bias[m])
				}
				for c := range cg {
					for k := range ksz {
						at, inside := 0, true
						orem, krem := o, k
						mul := 1
						for d := r - 1; d >= 0; d-- {
							od, kd := orem%g.Out[d], krem%g.Kernel[d]
							orem, krem = orem/g.Out[d], krem/g.Kernel[d]
							i := od*g.Stride[d] - g.PadBegin[d] + kd*g.Dilation[d]
							inside = inside && i >= 0 && i < g.In[d]
							at += i * mul
							mul *= g.In[d]
						}
						if inside {
							s += float64(x[(b*chans+grp*cg+c)*isp+at]) * float64(w[(m*cg+c)*ksz+k])
						}
					}
				}
				out[(b*outChans+m)*osp+o] = float32(s)
			}
		}
	}
	return out
}

// TestConvRandom compares Conv (im2col + SGEMM) with the direct loop on
// random 1-D, 2-D and 3-D cases with groups, strides, dilations and
// asymmetric pads, batches large enough to run in parallel included. Each
// output sums at most 8·27 products of values in [-1, 1); the tolerance
// is atol 1e-4 + rtol 1e-4 (atol scaled from 1e-5 for those long sums).
func TestConvRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 60 {
		rank := 1 + trial%3
		group := 1 + r.IntN(3)
		cg, mg := 1+r.IntN(3), 1+r.IntN(3)
		batch := 1 + r.IntN(3)
		if trial%10 == 0 {
			batch, cg, mg = 4, 8, 16
		}
		xs := []int{batch, cg * group}
		ws := []int{mg * group, cg}
		var strides, dils, pads []int64
		padEnd := []int64{}
		for range rank {
			k := 1 + r.IntN(3)
			ws = append(ws, k)
			xs = append(xs, k*3+r.IntN(12/rank+2))
			strides = append(strides, int64(1+r.IntN(2)))
			dils = append(dils, int64(1+r.IntN(2)))
			pads = append(pads, int64(r.IntN(2)))
			padEnd = append(padEnd, int64(r.IntN(3)))
		}
		pads = append(pads, padEnd...)
		attrs := map[string]graph.Attr{"group": attrInt(int64(group)), "strides": attrInts(strides...), "dilations": attrInts(dils...), "pads": attrInts(pads...)}
		n := testNode("Conv", 11, attrs, 1)
		x := nnRandom(r, opsem.Count(xs))
		w := nnRandom(r, opsem.Count(ws))
		bias := nnRandom(r, ws[0])
		out := runKernel(t, n, tensorOf(t, xs, x...), tensorOf(t, ws, w...), tensorOf(t, []int{ws[0]}, bias...))
		g, err := opsem.SlidingWindow(n, xs[2:], ws[2:], false)
		if err != nil {
			t.Fatal(err)
		}
		want := cvDirectConv(xs, ws, x, w, bias, g, group)
		got, _ := floats(out[0])
		name := fmt.Sprintf("trial %d: X %v W %v attrs strides %v dilations %v pads %v group %d", trial, xs, ws, strides, dils, pads, group)
		if !slices.Equal(out[0].Shape(), append([]int{xs[0], ws[0]}, g.Out...)) {
			t.Fatalf("%s: shape %v", name, out[0].Shape())
		}
		for i := range want {
			if !near(got[i], want[i], 1e-4, 1e-4) {
				t.Fatalf("%s: element %d = %g, want %g", name, i, got[i], want[i])
			}
		}
	}
}

// cvConvCase runs Conv on x (shape xs) and w (shape ws) with attrs and an
// optional bias, and returns the output and the geometry.
func cvConvCase(t *testing.T, xs, ws []int, x, w, bias []float32, attrs map[string]graph.Attr) ([]float32, opsem.Window) {
	t.Helper()
	n := testNode("Conv", 11, attrs, 1)
	in := []inference.Tensor{tensorOf(t, xs, x...), tensorOf(t, ws, w...)}
	if bias != nil {
		in = append(in, tensorOf(t, []int{ws[0]}, bias...))
	}
	out := runKernel(t, n, in...)
	g, err := opsem.SlidingWindow(n, xs[2:], ws[2:], false)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]int{xs[0], ws[0]}, g.Out...); !slices.Equal(out[0].Shape(), want) {
		t.Fatalf("X %v W %v: output shape %v, want %v", xs, ws, out[0].Shape(), want)
	}
	got, _ := floats(out[0])
	return got, g
}

// cvCheckNear fails the test at the first element of got not near want
// (rtol 1e-4, atol 1e-5).
func cvCheckNear(t *testing.T, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range want {
		if !near(got[i], want[i], 1e-4, 1e-5) {
			t.Fatalf("%s: element %d = %g, want %g", name, i, got[i], want[i])
		}
	}
}

// TestConvDepthwise compares the direct depthwise path with the im2col +
// SGEMM path (cvConvGemm) and with the reference loop, on random 2-D cases:
// 3×3 kernels (the register kernel) and others, strides and dilations of 1
// and 2, asymmetric pads or none, channel multipliers 1 to 3, batches of 1
// and 2, with and without bias, some large enough to run in parallel.
func TestConvDepthwise(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 80 {
		batch, chans, mult, extra := 1+trial%2, 2+r.IntN(4), 1+r.IntN(3), 9
		if trial%4 == 0 {
			mult = 2
		}
		if trial%10 == 0 { // large enough to run in parallel
			batch, chans, extra = 2, 16, 40
		}
		xs := []int{batch, chans}
		ws := []int{chans * mult, 1}
		var strides, dils, pads, padEnd []int64
		for d := range 2 {
			k := 3
			if trial%3 == 2 {
				k = 1 + r.IntN(5)
			}
			dil := 1 + r.IntN(2)
			if trial%7 < 3 {
				dil = 1
			}
			pb, pe := r.IntN(3), r.IntN(3)
			if trial%5 == 4 {
				pb, pe = 0, 0
			}
			// Inputs may be narrower than the window, the padding making
			// up the difference.
			eff := (k-1)*dil + 1
			ws = append(ws, k)
			xs = append(xs, max(1, eff-pb-pe)+r.IntN(k+extra))
			strides = append(strides, int64(1+(trial/2+d)%2))
			dils = append(dils, int64(dil))
			pads, padEnd = append(pads, int64(pb)), append(padEnd, int64(pe))
		}
		attrs := map[string]graph.Attr{"group": attrInt(int64(chans)), "strides": attrInts(strides...), "dilations": attrInts(dils...), "pads": attrInts(append(pads, padEnd...)...)}
		x, w := nnRandom(r, opsem.Count(xs)), nnRandom(r, opsem.Count(ws))
		var bias []float32
		if trial%6 != 5 {
			bias = nnRandom(r, ws[0])
		}
		name := fmt.Sprintf("trial %d: X %v W %v strides %v dilations %v pads %v %v", trial, xs, ws, strides, dils, pads, padEnd)
		if !cvDepthwise(chans, chans, ws[0], ws[2:]) {
			t.Fatalf("%s: not depthwise", name)
		}
		got, g := cvConvCase(t, xs, ws, x, w, bias, attrs)
		gemm := make([]float32, len(got))
		if err := cvConvGemm(nil, x, w, nil, bias, batch, chans, ws[0], chans, g, gemm, nil); err != nil {
			t.Fatal(err)
		}
		cvCheckNear(t, name+" vs im2col", got, gemm)
		cvCheckNear(t, name+" vs direct loop", got, cvDirectConv(xs, ws, x, w, bias, g, chans))
	}
}

// TestConvPointwise checks 1×1 convolutions, which with unit strides and
// no padding skip im2col and multiply the input directly, against the
// reference loop: groups of 1 and 2, batches of 1 and 3, and the im2col
// cases beside them (stride 2, padding). As in TestConvRandom, atol is
// 1e-4 for sums of up to 64 products.
func TestConvPointwise(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	cases := []struct {
		batch, chans, outChans, group, h, w int
		stride, pad                         int64
	}{
		{1, 4, 6, 1, 5, 7, 1, 0},
		{3, 8, 5, 1, 6, 6, 1, 0},
		{3, 6, 4, 2, 4, 5, 1, 0},
		{1, 64, 48, 1, 16, 16, 1, 0}, // large enough to run in parallel
		{2, 4, 6, 1, 7, 7, 2, 0},
		{2, 4, 6, 1, 5, 5, 1, 1},
	}
	for _, c := range cases {
		xs := []int{c.batch, c.chans, c.h, c.w}
		ws := []int{c.outChans, c.chans / c.group, 1, 1}
		x, w, bias := nnRandom(r, opsem.Count(xs)), nnRandom(r, opsem.Count(ws)), nnRandom(r, c.outChans)
		attrs := map[string]graph.Attr{"group": attrInt(int64(c.group)), "strides": attrInts(c.stride, c.stride), "pads": attrInts(c.pad, c.pad, c.pad, c.pad)}
		name := fmt.Sprintf("X %v W %v stride %d pad %d group %d", xs, ws, c.stride, c.pad, c.group)
		for _, b := range [][]float32{bias, nil} {
			got, g := cvConvCase(t, xs, ws, x, w, b, attrs)
			want := cvDirectConv(xs, ws, x, w, b, g, c.group)
			for i := range want {
				if !near(got[i], want[i], 1e-4, 1e-4) {
					t.Fatalf("%s, bias %v: element %d = %g, want %g", name, b != nil, i, got[i], want[i])
				}
			}
		}
	}
}

// TestPackIm2col2D compares cvPackIm2col2D with nnPackB over the
// matrix the N-D cvIm2col fills, on random 2-D geometries and random
// blocks, for the panel widths of every micro-kernel, into buffers filled
// with NaN as pooled ones may be: every element must be written.
func TestPackIm2col2D(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for trial := range 60 {
		chans := 1 + r.IntN(3)
		g := opsem.Window{In: make([]int, 2), Out: make([]int, 2), Kernel: make([]int, 2), Stride: make([]int, 2), Dilation: make([]int, 2), PadBegin: make([]int, 2), PadEnd: make([]int, 2)}
		for d := range 2 {
			g.Kernel[d], g.Stride[d], g.Dilation[d] = 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(2)
			g.PadBegin[d], g.PadEnd[d] = r.IntN(4), r.IntN(4)
			// Inputs may be narrower than the window: some taps then
			// fall wholly in the padding.
			eff := (g.Kernel[d]-1)*g.Dilation[d] + 1
			g.In[d] = max(1, eff-g.PadBegin[d]-g.PadEnd[d]) + r.IntN(12)
			if trial == 0 { // taps 2 and 4 past the end of a 1-wide input
				g.In[d], g.Kernel[d], g.Dilation[d], g.PadBegin[d], g.PadEnd[d], eff = 1, 3, 2, 0, 4, 5
			}
			g.Out[d] = (g.In[d]+g.PadBegin[d]+g.PadEnd[d]-eff)/g.Stride[d] + 1
		}
		x := nnRandom(r, chans*opsem.Count(g.In))
		rows, cols := chans*opsem.Count(g.Kernel), opsem.Count(g.Out)
		col := make([]float32, rows*cols)
		cvIm2col(x, chans, cvTaps{cols: g.Out, img: g.In, kernel: g.Kernel, stride: g.Stride, dilation: g.Dilation, pad: g.PadBegin}, col)
		for _, nr := range []int{4, 16, 32} {
			p0, j0 := r.IntN(rows), r.IntN(cols)
			kc, nc := 1+r.IntN(rows-p0), 1+r.IntN(cols-j0)
			if trial%4 == 0 { // the whole matrix
				p0, j0, kc, nc = 0, 0, rows, cols
			}
			size := nnRoundUp(nc, nr) * kc
			got, want := make([]float32, size), make([]float32, size)
			for i := range got {
				got[i], want[i] = float32(math.NaN()), float32(math.NaN())
			}
			cvPackIm2col2D(x, g, cvAllTaps(g), nr, kc, nc, p0, j0, got)
			nnPackB(false, nr, kc, nc, col, cols, p0, j0, want)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: geometry %+v, %d channels, nr %d, rows %d+%d, columns %d+%d: packing differs:\n got %v\nwant %v", trial, g, chans, nr, p0, kc, j0, nc, got, want)
			}
		}
	}
}

func TestConvTranspose(t *testing.T) {
	// 1-D, stride 2, kernel of ones: input i lands on outputs 2i…2i+2.
	x := tensorOf(t, []int{1, 1, 2}, float32(1), 2)
	w := tensorOf(t, []int{1, 1, 3}, float32(1), 1, 1)
	n := testNode("ConvTranspose", 11, map[string]graph.Attr{"strides": attrInts(2)}, 1)
	out := runKernel(t, n, x, w)
	checkFloats(t, out[0], []int{1, 1, 5}, 1, 1, 3, 2, 2)

	// output_shape 6 leaves total padding −1: one extra zero at the end.
	n = testNode("ConvTranspose", 11, map[string]graph.Attr{"strides": attrInts(2), "output_shape": attrInts(6)}, 1)
	out = runKernel(t, n, x, w, tensorOf(t, []int{1}, float32(10)))
	checkFloats(t, out[0], []int{1, 1, 6}, 11, 11, 13, 12, 12, 10)

	// pads trim the ends; output_padding adds to the end.
	n = testNode("ConvTranspose", 11, map[string]graph.Attr{"strides": attrInts(2), "pads": attrInts(1, 0), "output_padding": attrInts(1)}, 1)
	out = runKernel(t, n, x, w)
	checkFloats(t, out[0], []int{1, 1, 5}, 1, 3, 2, 2, 0)

	if _, err := cvConvTranspose(n, []inference.Tensor{tensorOf(t, []int{1, 2, 2}, make([]float32, 4)...), w}); !errors.Is(err, inference.ErrShape) {
		t.Fatalf("ConvTranspose with 2 channels, W for 1: err = %v, want ErrShape", err)
	}
}

// TestConvTransposeSplit runs a ConvTranspose large enough that its
// product Wᵀ·X, with Wᵀ 576 rows long and 128 deep, is split among
// threads by rows (an autoencoder's decoder: stride 2, pads 1,
// output_padding 1), and compares it with the definition summed in
// float64: input (c, i, j) times W(c, m, a, b) adds to output
// (m, 2i − 1 + a, 2j − 1 + b). Each output sums at most 128·9 terms of
// size below 1: rtol 1e-4, atol 1e-4.
func TestConvTransposeSplit(t *testing.T) {
	const c, m, k, side, out = 128, 64, 3, 8, 16
	r := rand.New(rand.NewPCG(3, 4))
	xd, wd := nnRandom(r, c*side*side), nnRandom(r, c*m*k*k)
	x := tensorOf(t, []int{1, c, side, side}, xd...)
	w := tensorOf(t, []int{c, m, k, k}, wd...)
	n := testNode("ConvTranspose", 11, map[string]graph.Attr{"strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1), "output_padding": attrInts(1, 1)}, 1)
	want := make([]float64, m*out*out)
	for ci := range c {
		for i := range side {
			for j := range side {
				for mi := range m {
					for a := range k {
						for b := range k {
							y, z := 2*i-1+a, 2*j-1+b
							if y < 0 || y >= out || z < 0 || z >= out {
								continue
							}
							want[(mi*out+y)*out+z] += float64(xd[(ci*side+i)*side+j]) * float64(wd[((ci*m+mi)*k+a)*k+b])
						}
					}
				}
			}
		}
	}
	got := runKernel(t, n, x, w)[0]
	if s := got.Shape(); !slices.Equal(s, []int{1, m, out, out}) {
		t.Fatalf("shape %v, want [1 %d %d %d]", s, m, out, out)
	}
	gd, _ := inference.Data[float32](got)
	for i, v := range gd {
		if d := math.Abs(float64(v) - want[i]); d > 1e-4+1e-4*math.Abs(want[i]) {
			t.Fatalf("element %d = %g, want %g", i, v, want[i])
		}
	}
}

func TestCol2Im(t *testing.T) {
	// A 2×3 image from 1×2 blocks at stride 1: 2×2 block positions. Block
	// offset 0 holds 1..4, offset 1 holds 10..40, one per position.
	x := tensorOf[float32](t, []int{1, 2, 4}, 1, 2, 3, 4, 10, 20, 30, 40)
	image := tensorOf[int64](t, []int{2}, 2, 3)
	block := tensorOf[int64](t, []int{2}, 1, 2)
	got := runKernel(t, testNode("Col2Im", 18, nil, 1), x, image, block)[0]
	checkFloats(t, got, []int{1, 1, 2, 3}, 1, 12, 20, 3, 34, 40)

	// With stride 2 along the width only one block position fits per row.
	_, err := cvCol2Im(testNode("Col2Im", 18, map[string]graph.Attr{"strides": attrInts(1, 2)}, 1), []inference.Tensor{x, image, block})
	if !errors.Is(err, inference.ErrShape) {
		t.Errorf("4 blocks where 2 fit: got %v, want ErrShape", err)
	}
}

// BenchmarkConv times a ResNet-style 3×3 convolution, 64 → 64 channels
// on 56×56 with padding 1: the 64×3136×576 product of BenchmarkSgemmOurs
// plus im2col.
func BenchmarkConv(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, _ := inference.New([]int{1, 64, 56, 56}, nnRandom(r, 64*56*56))
	w, _ := inference.New([]int{64, 64, 3, 3}, nnRandom(r, 64*64*9))
	n := testNode("Conv", 11, map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}, 1)
	in := []inference.Tensor{x, w}
	for b.Loop() {
		if _, err := cvConv(n, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*64*576*3136*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkConvDepthwise times MobileNetV2's 3×3 depthwise convolutions
// over 144 channels of 56×56, at strides 1 and 2.
func BenchmarkConvDepthwise(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	x, _ := inference.New([]int{1, 144, 56, 56}, nnRandom(r, 144*56*56))
	w, _ := inference.New([]int{144, 1, 3, 3}, nnRandom(r, 144*9))
	bias, _ := inference.New([]int{144}, nnRandom(r, 144))
	for _, stride := range []int64{1, 2} {
		b.Run(fmt.Sprintf("stride%d", stride), func(b *testing.B) {
			n := testNode("Conv", 11, map[string]graph.Attr{"group": attrInt(144), "pads": attrInts(1, 1, 1, 1), "strides": attrInts(stride, stride)}, 1)
			in := []inference.Tensor{x, w, bias}
			for b.Loop() {
				if _, err := cvConv(n, in); err != nil {
					b.Fatal(err)
				}
			}
			outs := 144 * 56 * 56 / stride / stride
			b.ReportMetric(2*9*float64(outs)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestConvGeometryKept runs a compiled Conv whose batch changes from run
// to run, from several goroutines at once, and checks every output
// against the reference loop: the geometry a Conv keeps (cvPrepared) must
// follow the shapes it is given. Once warm, a run at one shape must not
// work the geometry out again (fewer allocations than a cold node).
func TestConvGeometryKept(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	xs0, ws := []int{-1, 4, 9, 7}, []int{6, 4, 3, 3}
	w, bias := nnRandom(r, opsem.Count(ws)), nnRandom(r, ws[0])
	attrs := map[string]graph.Attr{"pads": attrInts(1, 0, 1, 2), "strides": attrInts(2, 1)}
	g := &graph.Graph{
		Name:    "conv",
		Opsets:  map[string]int64{"": 13},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: xs0}},
		Outputs: []graph.Value{{Name: "y"}},
		Initializers: map[string]inference.Tensor{
			"w": tensorOf(t, ws, w...),
			"b": tensorOf(t, []int{ws[0]}, bias...),
		},
		Nodes: []*graph.Node{{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"y"}, Attrs: attrs}},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	check := func(batch int) error {
		xs := []int{batch, 4, 9, 7}
		x := nnRandom(rand.New(rand.NewPCG(uint64(batch), 1)), opsem.Count(xs))
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, xs, x...)})
		if err != nil {
			return err
		}
		n := testNode("Conv", 13, attrs, 1)
		geo, err := opsem.SlidingWindow(n, xs[2:], ws[2:], false)
		if err != nil {
			return err
		}
		want := cvDirectConv(xs, ws, x, w, bias, geo, 1)
		got := dataOf[float32](out["y"])
		if !slices.Equal(out["y"].Shape(), append([]int{batch, ws[0]}, geo.Out...)) || len(got) != len(want) {
			return fmt.Errorf("batch %d: output %v", batch, out["y"])
		}
		for i := range want {
			if !near(got[i], want[i], 1e-4, 1e-5) {
				return fmt.Errorf("batch %d: element %d = %g, want %g", batch, i, got[i], want[i])
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for caller := range 4 {
		wg.Go(func() {
			for i := range 8 {
				if err := check(1 + (caller+i)%3); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	x := tensorOf(t, []int{2, 4, 9, 7}, nnRandom(r, 2*4*9*7)...)
	n := opsem.Node{Node: g.Nodes[0], Opset: 13, Prepared: &cvPrepared{}}
	cold := testing.AllocsPerRun(20, func() {
		n.Prepared = &cvPrepared{}
		if _, err := cvConv(n, []inference.Tensor{x, g.Initializers["w"], g.Initializers["b"]}); err != nil {
			t.Fatal(err)
		}
	})
	warm := testing.AllocsPerRun(20, func() {
		if _, err := cvConv(n, []inference.Tensor{x, g.Initializers["w"], g.Initializers["b"]}); err != nil {
			t.Fatal(err)
		}
	})
	if warm >= cold-5 {
		t.Errorf("%v allocations per Conv with its geometry kept, %v without: want at least 5 fewer", warm, cold)
	}
}

// A 2-D convolution whose kernel has taps that read only padding (a
// dilation as wide as the image, as DeepLab's ASPP) leaves them out of its
// product, and computes what the direct loop computes: dilations 6 and 12
// on 5×7 and 7×7 images, strides 1 and 2, groups 1 and 2, followed by a
// Relu the compiler fuses into the product.
func TestConvDropsDeadTaps(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct {
		xs, ws          []int
		dil, pad, strd  int64
		group, wantLive int
	}{
		{[]int{1, 8, 5, 5}, []int{16, 8, 3, 3}, 6, 6, 1, 1, 1},  // only the centre tap
		{[]int{2, 8, 7, 7}, []int{8, 4, 3, 3}, 12, 12, 1, 2, 1}, // groups, a batch of 2
		{[]int{1, 6, 7, 7}, []int{12, 6, 3, 3}, 4, 4, 1, 1, 9},  // 4 < 7: every tap reads the image
		{[]int{1, 6, 9, 9}, []int{12, 6, 3, 3}, 6, 6, 2, 1, 9},  // stride 2, 5 outputs a side: all live
		{[]int{1, 6, 5, 9}, []int{12, 6, 3, 3}, 6, 6, 1, 1, 3},  // dead rows, live columns
		{[]int{1, 8, 5, 7}, []int{16, 8, 3, 3}, 6, 6, 1, 1, 3},  // 7 wide: the side taps reach columns 0 and 6
		{[]int{1, 4, 7, 7}, []int{8, 4, 3, 3}, 1, 0, 1, 1, 9},   // a plain 3×3
		{[]int{1, 4, 6, 6}, []int{8, 4, 5, 5}, 3, 6, 1, 1, 9},   // 5×5, pad 6: each tap still reads some
		{[]int{1, 4, 3, 3}, []int{8, 4, 3, 3}, 4, 4, 1, 1, 1},   // tiny image
	} {
		name := fmt.Sprintf("X %v W %v dilation %d pad %d stride %d group %d", tc.xs, tc.ws, tc.dil, tc.pad, tc.strd, tc.group)
		w, bias := nnRandom(r, opsem.Count(tc.ws)), nnRandom(r, tc.ws[0])
		attrs := map[string]graph.Attr{"group": attrInt(int64(tc.group)), "dilations": attrInts(tc.dil, tc.dil),
			"pads": attrInts(tc.pad, tc.pad, tc.pad, tc.pad), "strides": attrInts(tc.strd, tc.strd)}
		g := &graph.Graph{
			Name:    "conv",
			Opsets:  map[string]int64{"": 13},
			Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: tc.xs}},
			Outputs: []graph.Value{{Name: "y"}},
			Initializers: map[string]inference.Tensor{
				"w": tensorOf(t, tc.ws, w...),
				"b": tensorOf(t, []int{tc.ws[0]}, bias...),
			},
			Nodes: []*graph.Node{
				{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"}, Attrs: attrs},
				{Name: "relu", OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}},
			},
		}
		if err := g.Sort(nil); err != nil {
			t.Fatal(err)
		}
		n := testNode("Conv", 13, attrs, 1)
		geo, err := opsem.SlidingWindow(n, tc.xs[2:], tc.ws[2:], false)
		if err != nil {
			t.Fatal(err)
		}
		if live := cvLiveTaps(geo); len(live) != tc.wantLive {
			t.Errorf("%s: %d live taps %v, want %d", name, len(live), live, tc.wantLive)
		}
		// The plan's product has as many rows as the group's channels
		// times the live taps.
		prep := &cvPrepared{packs: convPacks(g, g.Nodes[0], nnBestKernel)}
		x := nnRandom(r, opsem.Count(tc.xs))
		xt, wt := tensorOf(t, tc.xs, x...), tensorOf(t, tc.ws, w...)
		n.Prepared = prep
		plan, err := newCvPlan(n, []inference.Tensor{xt, wt}, prep, xt, wt)
		if err != nil {
			t.Fatal(err)
		}
		// Or, where the live taps read the image for few outputs, one
		// product per tap (cvByTap, TestConvByTap).
		switch wantRows := tc.ws[1] * tc.wantLive; {
		case plan.gemm == nil:
			t.Errorf("%s: no product", name)
		case plan.gemm.byTap != nil:
			if len(plan.gemm.byTap.regions) != tc.wantLive {
				t.Errorf("%s: %d products by tap, want %d", name, len(plan.gemm.byTap.regions), tc.wantLive)
			}
		case plan.gemm.rows != wantRows:
			t.Errorf("%s: the plan's product has %d rows, want %d", name, plan.gemm.rows, wantRows)
		}
		m, err := Backend{}.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": xt})
		if err != nil {
			t.Fatal(err)
		}
		want := cvDirectConv(tc.xs, tc.ws, x, w, bias, geo, tc.group)
		for i, v := range want {
			want[i] = max(v, 0)
		}
		cvCheckNear(t, name, dataOf[float32](out["y"]), want)
	}
}

// BenchmarkStem times the first convolution of CNNs on a 224×224 RGB image
// (three input channels, so K is 27 or 147: the product is small beside
// the copy of the image into phases and the compaction of the output),
// with its Relu, through a compiled model: MobileNetV2's and
// EfficientNet's 3×3 stride-2 to 32 channels, ResNet's 7×7 stride-2 to
// 64, SqueezeNet's 3×3 stride-2 without padding to 64.
func BenchmarkStem(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ co, k, s, p int }{{32, 3, 2, 1}, {64, 7, 2, 3}, {64, 3, 2, 0}} {
		b.Run(fmt.Sprintf("m%d_k%d_s%d_p%d", c.co, c.k, c.s, c.p), func(b *testing.B) {
			w, _ := inference.New([]int{c.co, 3, c.k, c.k}, nnRandom(r, c.co*3*c.k*c.k))
			bias, _ := inference.New([]int{c.co}, nnRandom(r, c.co))
			p := int64(c.p)
			g := &graph.Graph{Name: "t", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{"w": w, "b": bias},
				Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{1, 3, 224, 224}}},
				Outputs: []graph.Value{{Name: "y"}},
				Nodes: []*graph.Node{{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"}, Attrs: map[string]graph.Attr{"pads": attrInts(p, p, p, p), "strides": attrInts(int64(c.s), int64(c.s))}},
					{Name: "relu", OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"r"}},
					// A small output: the convolution's is the pool's,
					// as in a model, not a new one each run.
					{Name: "pool", OpType: "GlobalAveragePool", Inputs: []string{"r"}, Outputs: []string{"y"}}}}
			m, err := Backend{}.Compile(g)
			if err != nil {
				b.Fatal(err)
			}
			x, _ := inference.New([]int{1, 3, 224, 224}, nnRandom(r, 3*224*224))
			feeds := map[string]inference.Tensor{"x": x}
			for b.Loop() {
				if _, err := m.Run(context.Background(), feeds); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPointwiseWide times MobileNetV2's first inverted residual at
// batch 8 as its 1×1 convolutions run it: 16 → 96 channels (ReLU6) and
// 96 → 16 on 112×112 maps, then a global average pool (so that the
// output, which each run allocates, stays small): products of K = 16 and
// 96 whose outputs (38 and 6 MB) pass through memory, not the cache.
func BenchmarkPointwiseWide(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 9))
	const batch, hw = 8, 112
	w1, _ := inference.New([]int{96, 16, 1, 1}, nnRandom(r, 96*16))
	w2, _ := inference.New([]int{16, 96, 1, 1}, nnRandom(r, 16*96))
	lo, _ := inference.New(nil, []float32{0})
	hi, _ := inference.New(nil, []float32{6})
	g := &graph.Graph{Name: "t", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{"w1": w1, "w2": w2, "lo": lo, "hi": hi},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{batch, 16, hw, hw}}},
		Outputs: []graph.Value{{Name: "y"}},
		Nodes: []*graph.Node{
			{Name: "expand", OpType: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"e"}},
			{Name: "relu6", OpType: "Clip", Inputs: []string{"e", "lo", "hi"}, Outputs: []string{"a"}},
			{Name: "project", OpType: "Conv", Inputs: []string{"a", "w2"}, Outputs: []string{"p"}},
			{Name: "pool", OpType: "GlobalAveragePool", Inputs: []string{"p"}, Outputs: []string{"y"}},
		}}
	if err := g.Sort(nil); err != nil {
		b.Fatal(err)
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		b.Fatal(err)
	}
	x, _ := inference.New([]int{batch, 16, hw, hw}, nnRandom(r, batch*16*hw*hw))
	feeds := map[string]inference.Tensor{"x": x}
	for b.Loop() {
		if _, err := m.Run(context.Background(), feeds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*2*16*96*batch*hw*hw*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

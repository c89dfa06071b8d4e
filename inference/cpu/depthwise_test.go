package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference/internal/opsem"
)

// dwBenchShapes are the depthwise convolutions of MobileNetV2 and
// EfficientNet-B0 at 224×224, batch 1: kernel k, stride s, padding k/2
// on every side, an input plane of in×in, and the channel count.
var dwBenchShapes = []struct{ k, s, in, chans int }{
	{3, 1, 112, 32}, // both
	{3, 2, 112, 96}, // both
	{3, 1, 56, 144}, // both
	{3, 2, 56, 144}, // MobileNetV2
	{5, 2, 56, 144}, // EfficientNet
	{3, 1, 28, 192}, // MobileNetV2
	{5, 1, 28, 240}, // EfficientNet
	{3, 2, 28, 240}, // EfficientNet
	{3, 1, 14, 480}, // EfficientNet (MobileNetV2: 384, 576)
	{5, 1, 14, 672}, // EfficientNet
	{5, 2, 14, 672}, // EfficientNet
	{3, 1, 7, 960},  // MobileNetV2
	{5, 1, 7, 1152}, // EfficientNet
	{3, 1, 7, 1152}, // EfficientNet
}

// BenchmarkDepthwise times cvConvDepthwise, with its padded copy and
// stride-2 split, on dwBenchShapes with a bias and no epilogue. Run it
// with -cpu 1 for one thread.
func BenchmarkDepthwise(b *testing.B) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range dwBenchShapes {
		p := c.k / 2
		out := (c.in+2*p-c.k)/c.s + 1
		g := opsem.Window{
			In: []int{c.in, c.in}, Out: []int{out, out}, Kernel: []int{c.k, c.k},
			Stride: []int{c.s, c.s}, Dilation: []int{1, 1},
			PadBegin: []int{p, p}, PadEnd: []int{p, p},
		}
		x, w, bias := nnRandom(r, c.chans*c.in*c.in), nnRandom(r, c.chans*c.k*c.k), nnRandom(r, c.chans)
		y := make([]float32, c.chans*out*out)
		b.Run(fmt.Sprintf("k%ds%d/%dx%dx%d", c.k, c.s, c.in, c.in, c.chans), func(b *testing.B) {
			for b.Loop() {
				if err := cvConvDepthwise(nil, x, w, bias, 1, c.chans, 1, g, y, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(2*float64(c.k*c.k*len(y))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

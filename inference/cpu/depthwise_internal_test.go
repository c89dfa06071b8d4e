package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// dwEachLevel runs check in a subtest for each vecLevel, with dw set to
// its depthwise loops, skipping (with the reason) the levels beyond what
// this CPU and build run.
func dwEachLevel(t *testing.T, check func(t *testing.T, lv vecLevel, l dwLoop)) {
	for lv := vecGo; lv <= vecAVX512; lv++ {
		t.Run(lv.String(), func(t *testing.T) {
			if lv > dwBest {
				t.Skipf("%v depthwise loops not run: the best level this build (%s, tags) and CPU run is %v", lv, runtime.GOARCH, dwBest)
			}
			defer func(was dwLoop) { dw = was }(dw)
			dw = dwLoopsOn(lv)
			check(t, lv, dw)
		})
	}
}

// dwEndAtGuard returns n float32s for the loops to read. Where the
// platform allows (depthwise_linux_internal_test.go), they end where a page with
// no access begins, so that a loop reading past them faults.
var dwEndAtGuard = func(t *testing.T, n int) []float32 { return make([]float32, n) }

// fma32 returns a·b + c rounded once to float32, as VFMADD231PS does. The
// product is exact in float64, and the float64 sum, rounded to odd (its
// last bit set when it is inexact), rounds to float32 as the exact sum
// would: 53 bits are at least 24 + 2 (Boldo and Melquiond, "Emulation of
// FMA and correctly rounded sums: proved algorithms using rounding to
// odd", 2008).
func fma32(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// TwoSum: s + e = p + q exactly.
	v := s - p
	e := (p - (s - v)) + (q - v)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}

// TestFma32 checks the reference's rounding where float64 rounding alone
// would round twice: 1.5·(1+2⁻²³) lies halfway between two float32s, so a
// tiny addend decides the rounding.
func TestFma32(t *testing.T) {
	a, b, tiny := float32(1.5), 1+float32(math.Ldexp(1, -23)), float32(math.Ldexp(1, -80))
	for _, c := range []struct{ c, want float32 }{
		{0, 1.5 + float32(math.Ldexp(1, -22))}, // a tie, to even
		{tiny, 1.5 + float32(math.Ldexp(1, -22))},
		{-tiny, 1.5 + float32(math.Ldexp(1, -23))},
	} {
		// 1.5·(1+2⁻²³) = 1.5 + 2⁻²³ + 2⁻²⁴: between 1.5 + 2⁻²³ and 1.5 + 2⁻²².
		if got := fma32(a, b, c.c); got != c.want {
			t.Errorf("fma32(%g, %g, %g) = %.10g, want %.10g", a, b, c.c, got, c.want)
		}
	}
	if got := fma32(float32(math.Inf(1)), 0, 1); !math.IsNaN(float64(got)) {
		t.Errorf("fma32(+Inf, 0, 1) = %g, want NaN", got)
	}
}

// dwRowsFused is dwRowsGo with each product added in one rounding (fma32):
// what the vector loops compute, in the same order, then clamped.
func dwRowsFused(y []float32, rows, n int, x []float32, xs int, taps []dwTap, w []float32, b float32, c dwClamp) {
	for j := range rows {
		yr := y[j*n : (j+1)*n]
		for i := range yr {
			yr[i] = b
		}
		for _, t := range taps {
			for i, v := range x[j*xs+t.off : j*xs+t.off+n] {
				yr[i] = fma32(w[t.w], v, yr[i])
			}
		}
		clampsGo(yr, c.lo, c.hi)
	}
}

// dwRowsCase is a call of a depthwise row loop: rows × n outputs from x
// with the taps of a kernel.
type dwRowsCase struct {
	rows, n int
	t       dwTaps
	x, w    []float32
	b       float32
	c       dwClamp // the clamp the loop applies as it stores
}

// dwGuard is the number of elements past y that the tests check the row
// loops leave alone, and the value they hold.
const dwGuard = 20

var dwGuardValue = float32(math.Float32frombits(0x7fc0beef)) // a NaN no loop computes

// run calls l's rows loop on c, or its shared loop at shared input rows
// between output rows where shared > 0, with y filled with the guard
// value and dwGuard more elements past it, and returns y and its guard.
func (c dwRowsCase) run(l dwLoop, shared int) (y, guard []float32) {
	all := make([]float32, c.rows*c.n+dwGuard)
	for i := range all {
		all[i] = dwGuardValue
	}
	y = all[:c.rows*c.n]
	if shared > 0 {
		l.shared(y, c.rows, c.n, c.x, c.t.rs, shared, c.t.kh, c.t.taps, c.w, c.b, c.c.lo, c.c.hi)
	} else {
		l.rows(y, c.rows, c.n, c.x, c.t.xs, c.t.taps, c.w, c.b, c.c.lo, c.c.hi)
	}
	return y, all[c.rows*c.n:]
}

// magnitude returns |b| + Σ|w·x| over output (j, i)'s taps: the bound on
// its terms' size behind the tolerance of unfused sums.
func (c dwRowsCase) magnitude(j, i int) float64 {
	m := math.Abs(float64(c.b))
	for _, t := range c.t.taps {
		m += math.Abs(float64(c.w[t.w]) * float64(c.x[j*c.t.xs+t.off+i]))
	}
	return m
}

// dwWidths are the output row widths the row loops are checked on.
var dwWidths = func() []int {
	var ns []int
	for n := 1; n <= 33; n++ {
		ns = append(ns, n)
	}
	return append(ns, 47, 48, 49, 63, 64, 65)
}()

// dwRowsCases returns calls of the row loops with kernels 1×1 to 7×7
// (and 1×7, 7×1, 3×5), strides 1 and 2 down columns, dilations 1 and 2,
// split stride-2 planes, 1 to 17 rows in turn (groups of eight and
// four, and their remainders) and 1 to 33 columns, 47 to 49 and 63 to 65 (every
// tail of 16 and of 8), x
// random in [−1, 1) and exactly as long as the loops may read (ending at
// a guard page, dwEndAtGuard): with overrun, 7 output rows' inputs more,
// NaN, which no stored output may read. With special, some inputs and
// weights are NaN or ±Inf. A third of the cases clamp nothing, a third
// as Relu does, a third to [−0.5, 0.25] (Clip).
func dwRowsCases(t *testing.T, r *rand.Rand, overrun, special bool) []dwRowsCase {
	var cases []dwRowsCase
	kernels := [][2]int{{1, 1}, {1, 3}, {3, 1}, {2, 3}, {3, 3}, {3, 5}, {5, 5}, {7, 1}, {1, 7}, {7, 7}}
	for _, k := range kernels {
		for _, geo := range []struct{ sh, dh, dw int }{{1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {2, 2, 1}} {
			for _, split := range []bool{false, true} {
				if split && geo.dw != 1 {
					continue
				}
				for _, n := range dwWidths {
					rows := 1 + len(cases)%17
					kh, kw := k[0], k[1]
					g := opsem.Window{Kernel: []int{kh, kw}, Stride: []int{geo.sh, 1}, Dilation: []int{geo.dh, geo.dw}}
					// The input plane: as wide as the row's taps reach, or
					// a bit wider; with split, two planes of half its width.
					width := n + (kw-1)*geo.dw + r.IntN(3)
					height := (rows-1)*geo.sh + (kh-1)*geo.dh + 1
					ld := width
					if split {
						ld = (width + 1) / 2
						width = 2 * ld
					}
					taps := cvDepthwiseTaps(g, ld, height, split)
					need := (rows-1)*taps.xs + taps.hi + n
					size := need
					if overrun {
						size = ((rows-1)/8*8+7)*taps.xs + taps.hi + n
					}
					x := dwEndAtGuard(t, size)
					copy(x, nnRandom(r, size))
					for i := need; i < size; i++ {
						x[i] = float32(math.NaN())
					}
					w := nnRandom(r, kh*kw)
					if special {
						for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
							x[r.IntN(need)] = float32(v)
						}
						if r.IntN(4) == 0 {
							w[r.IntN(len(w))] = float32([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)])
						}
					}
					clamps := []dwClamp{dwNoClamp, {0, float32(math.Inf(1))}, {-0.5, 0.25}}
					cases = append(cases, dwRowsCase{rows, n, taps, x, w, r.Float32()*2 - 1, clamps[len(cases)%3]})
				}
			}
		}
	}
	return cases
}

// TestDwRows checks each level's row loop against dwRowsFused, bit for bit:
// the same taps in the same order, each product added with one rounding,
// NaN and ±Inf where the sum has them. The vector loops must match
// exactly; the Go twin rounds its products (on amd64) and may differ by
// at most 1e-5·(|b| + Σ|w·x|) an output: each of up to 49 roundings of a
// product errs by at most 2⁻²⁴ of it. Every output is written, nothing
// past y.
func TestDwRows(t *testing.T) {
	dwEachLevel(t, func(t *testing.T, lv vecLevel, l dwLoop) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, special := range []bool{false, true} {
			for _, c := range dwRowsCases(t, r, false, special) {
				dwCheckRows(t, lv, l, c, 0)
			}
		}
	})
}

// TestDwRowsShared checks the shared row loops, on the kernels they take,
// as TestDwRows checks the others, with x running 7 output rows' inputs
// past the last, all NaN: the rows a last group of eight computes past
// the last must not be stored.
func TestDwRowsShared(t *testing.T) {
	dwEachLevel(t, func(t *testing.T, lv vecLevel, l dwLoop) {
		if l.shared == nil {
			t.Skipf("the %v depthwise loops have no shared row loop", lv)
		}
		r := rand.New(rand.NewPCG(25, 26))
		checked := 0
		for _, special := range []bool{false, true} {
			for _, c := range dwRowsCases(t, r, true, special) {
				if s := dwShared(c.t.kh, c.t.rs, c.t.xs); s > 0 {
					dwCheckRows(t, lv, l, c, s)
					checked++
				}
			}
		}
		if checked < 100 {
			t.Fatalf("%d cases took the shared loop, want 100 or more", checked)
		}
	})
}

// dwCheckRows runs c through l's row loop (shared at s, or not with 0)
// and checks it as TestDwRows says.
func dwCheckRows(t *testing.T, lv vecLevel, l dwLoop, c dwRowsCase, s int) {
	t.Helper()
	name := fmt.Sprintf("%v: %d×%d kernel, %d rows of %d, xs %d, rs %d, shared %d, clamp %v", lv, c.t.kh, c.t.weights/c.t.kh, c.rows, c.n, c.t.xs, c.t.rs, s, c.c)
	got, guard := c.run(l, s)
	want := make([]float32, len(got))
	dwRowsFused(want, c.rows, c.n, c.x, c.t.xs, c.t.taps, c.w, c.b, c.c)
	for _, v := range guard {
		if math.Float32bits(v) != math.Float32bits(dwGuardValue) {
			t.Fatalf("%s: wrote past y", name)
		}
	}
	for k := range want {
		g, w := got[k], want[k]
		if math.Float32bits(g) == math.Float32bits(dwGuardValue) {
			t.Fatalf("%s: y[%d] not written", name, k)
		}
		ok := same(g, w)
		if lv == vecGo && !ok {
			ok = near(g, w, 0, 1e-5*c.magnitude(k/c.n, k%c.n))
		}
		if !ok {
			t.Fatalf("%s: y[%d] (row %d, column %d) = %g, want %g", name, k, k/c.n, k%c.n, g, w)
		}
	}
}

// TestDwRowsEmpty checks that dwRows with no rows, no columns or no taps
// writes the bias to whatever outputs there are, on every level.
func TestDwRowsEmpty(t *testing.T) {
	dwEachLevel(t, func(t *testing.T, lv vecLevel, l dwLoop) {
		y := []float32{1, 2, 3}
		dwRows(y[:0], 0, 3, nil, dwTaps{}, nil, 5, dwNoClamp)
		dwRows(y[:0], 2, 0, nil, dwTaps{}, nil, 5, dwNoClamp)
		dwRows(y, 1, 3, nil, dwTaps{}, nil, 5, dwNoClamp)
		if !slices.Equal(y, []float32{5, 5, 5}) {
			t.Errorf("y = %v, want [5 5 5]", y)
		}
	})
}

// TestDwSplitCopyRows checks each level's split and copy loops against
// their Go twins, bit for bit (NaN payloads included), on widths 1 to 70
// (every tail of 32, 16 and 8), 1 to 3 rows, source rows further apart
// than their width (the split) and destination rows wider than needed, and that they write nothing else and read nothing past x
// (dwEndAtGuard).
func TestDwSplitCopyRows(t *testing.T) {
	dwEachLevel(t, func(t *testing.T, lv vecLevel, l dwLoop) {
		r := rand.New(rand.NewPCG(27, 28))
		fill := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = dwGuardValue
			}
			return v
		}
		for width := 1; width <= 70; width++ {
			for rows := 1; rows <= 3; rows++ {
				// Source rows width apart, or further (every other row
				// of an image, as the stride-2 layout reads them).
				ldx := width + []int{0, 2, width + 1}[r.IntN(3)]
				xs := dwEndAtGuard(t, (rows-1)*ldx+width)
				copy(xs, nnRandom(r, len(xs)))
				xs[r.IntN(len(xs))] = math.Float32frombits(0x7fa00001) // a signalling NaN, kept as it is
				lde, ldo := (width+1)/2+r.IntN(3), width/2+r.IntN(3)
				even, odd := fill(rows*lde+dwGuard), fill(rows*ldo+dwGuard)
				wantEven, wantOdd := fill(len(even)), fill(len(odd))
				dwSplitRowsGo(wantEven, wantOdd, xs, rows, width, lde, ldo, ldx)
				l.split(even, odd, xs, rows, width, lde, ldo, ldx)
				name := fmt.Sprintf("%v split: %d rows of %d, ldx %d, lde %d, ldo %d", lv, rows, width, ldx, lde, ldo)
				dwCheckBits(t, name+", even", even, wantEven)
				dwCheckBits(t, name+", odd", odd, wantOdd)

				x := dwEndAtGuard(t, rows*width)
				copy(x, nnRandom(r, rows*width))
				ld := width + r.IntN(3)
				dst, want := fill(rows*ld+dwGuard), fill(rows*ld+dwGuard)
				dwCopyRowsGo(want, x, rows, width, ld)
				l.copy(dst, x, rows, width, ld)
				dwCheckBits(t, fmt.Sprintf("%v copy: %d rows of %d, ld %d", lv, rows, width, ld), dst, want)
			}
		}
	})
}

// dwCheckBits fails the test at the first element of got whose bits
// differ from want's.
func dwCheckBits(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %g (%#x), want %g (%#x)", name, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestConvDepthwiseLoops runs depthwise convolutions through each level's
// loops: kernels 1×1 to 7×7, strides 1 to 3, dilations 1 and 2, padding
// on either side or none, channel multipliers 1 and 2. Each must be near
// the float64 reference loop (rtol 1e-4, atol 1e-5, for sums of up to 49
// products of inputs in [−1, 1)), and the vector levels must agree bit for
// bit, adding the same taps in the same order with fused multiply-adds.
func TestConvDepthwiseLoops(t *testing.T) {
	type trial struct {
		name     string
		xs, ws   []int
		x, w, b  []float32
		g        opsem.Window
		want     []float32
		vector   []float32 // the first vector level's output
		vectorBy vecLevel
	}
	r := rand.New(rand.NewPCG(29, 30))
	var trials []*trial
	for i := range 60 {
		chans, mult := 1+r.IntN(4), 1+r.IntN(2)
		sizes := []int{1, 2, 3, 3, 3, 5, 5, 7}
		kh, kw := sizes[r.IntN(8)], sizes[r.IntN(8)]
		if i%3 == 0 {
			kw = kh
		}
		sh, sw := 1+r.IntN(2), 1+r.IntN(2)
		if i%11 == 0 {
			sh, sw = 3, 3
		}
		dh, dw := 1, 1
		if i%4 == 3 {
			dh, dw = 1+r.IntN(2), 1+r.IntN(2)
		}
		pads := []int64{int64(r.IntN(kh)), int64(r.IntN(kw)), int64(r.IntN(kh)), int64(r.IntN(kw))}
		if i%5 == 0 {
			pads = []int64{0, 0, 0, 0}
		}
		ih := max(1, (kh-1)*dh+1-int(pads[0]+pads[2])) + r.IntN(20)
		iw := max(1, (kw-1)*dw+1-int(pads[1]+pads[3])) + r.IntN(40)
		c := &trial{xs: []int{1, chans, ih, iw}, ws: []int{chans * mult, 1, kh, kw}}
		n := testNode("Conv", 11, map[string]graph.Attr{
			"group": attrInt(int64(chans)), "strides": attrInts(int64(sh), int64(sw)),
			"dilations": attrInts(int64(dh), int64(dw)), "pads": attrInts(pads...),
		}, 1)
		g, err := opsem.SlidingWindow(n, c.xs[2:], c.ws[2:], false)
		if err != nil {
			t.Fatal(err)
		}
		c.g = g
		c.x, c.w, c.b = nnRandom(r, opsem.Count(c.xs)), nnRandom(r, opsem.Count(c.ws)), nnRandom(r, c.ws[0])
		c.want = cvDirectConv(c.xs, c.ws, c.x, c.w, c.b, g, chans)
		c.name = fmt.Sprintf("trial %d: X %v W %v strides %d %d dilations %d %d pads %v", i, c.xs, c.ws, sh, sw, dh, dw, pads)
		trials = append(trials, c)
	}
	dwEachLevel(t, func(t *testing.T, lv vecLevel, l dwLoop) {
		for _, c := range trials {
			y := make([]float32, len(c.want))
			if err := cvConvDepthwise(nil, c.x, c.w, c.b, 1, c.xs[1], c.ws[0]/c.xs[1], c.g, y, nil); err != nil {
				t.Fatal(err)
			}
			cvCheckNear(t, c.name+" vs direct loop", y, c.want)
			switch {
			case lv == vecGo:
			case c.vector == nil:
				c.vector, c.vectorBy = y, lv
			default:
				dwCheckBits(t, fmt.Sprintf("%s vs %v", c.name, c.vectorBy), y, c.vector)
			}
		}
	})
}

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
		for _, ep := range []*epilogue{nil, {clamp: clamp{on: true, lo: 0, hi: 6}, biasIn: -1, residualIn: -1}} {
			name := fmt.Sprintf("k%ds%d/%dx%dx%d", c.k, c.s, c.in, c.in, c.chans)
			if ep != nil {
				name += "/relu6"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if err := cvConvDepthwise(nil, x, w, bias, 1, c.chans, 1, g, y, ep); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*float64(c.k*c.k*len(y))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestConvDepthwiseEpilogues compiles depthwise convolutions followed by
// the activations an exporter writes after them (Relu, Clip to 6 as
// MobileNet's ReLU6, HardSwish, a Clip then a Sigmoid, a residual Add then
// a Relu) and runs them at 1 and 2 threads against the float64 loop with
// the same activations: the row loops clamp as they store where the
// epilogue has no residual to add first, the rest of the epilogue runs
// after them (rtol 1e-4, atol 1e-5: sums of up to 25 products of values
// in [−1, 1), times 8 to reach the clamps).
func TestConvDepthwiseEpilogues(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	type geo struct {
		k, s, d, pad int
	}
	geos := []geo{{3, 1, 1, 1}, {3, 2, 1, 1}, {5, 1, 1, 2}, {3, 1, 2, 2}, {3, 3, 1, 1}}
	relu6 := func(v float64) float64 { return min(max(v, 0), 6) }
	acts := []struct {
		name  string
		nodes func(in string) []*graph.Node
		inits map[string]inference.Tensor
		f     func(v, res float64) float64
	}{
		{"relu", func(in string) []*graph.Node {
			return []*graph.Node{{Name: "act", OpType: "Relu", Inputs: []string{in}, Outputs: []string{"y"}}}
		}, nil, func(v, _ float64) float64 { return max(v, 0) }},
		{"relu6", func(in string) []*graph.Node {
			return []*graph.Node{{Name: "act", OpType: "Clip", Inputs: []string{in, "lo", "hi"}, Outputs: []string{"y"}}}
		}, map[string]inference.Tensor{"lo": tensorOf(t, nil, float32(0)), "hi": tensorOf(t, nil, float32(6))}, func(v, _ float64) float64 { return relu6(v) }},
		{"hardswish", func(in string) []*graph.Node {
			return []*graph.Node{{Name: "act", OpType: "HardSwish", Inputs: []string{in}, Outputs: []string{"y"}}}
		}, nil, func(v, _ float64) float64 { return v * min(max(v/6+0.5, 0), 1) }},
		{"clip-sigmoid", func(in string) []*graph.Node {
			return []*graph.Node{
				{Name: "clip", OpType: "Clip", Inputs: []string{in, "lo", "hi"}, Outputs: []string{"c"}},
				{Name: "act", OpType: "Sigmoid", Inputs: []string{"c"}, Outputs: []string{"y"}},
			}
		}, map[string]inference.Tensor{"lo": tensorOf(t, nil, float32(-1)), "hi": tensorOf(t, nil, float32(2))}, func(v, _ float64) float64 {
			return 1 / (1 + math.Exp(-min(max(v, -1), 2)))
		}},
		{"add-relu", func(in string) []*graph.Node {
			return []*graph.Node{
				{Name: "add", OpType: "Add", Inputs: []string{in, "res"}, Outputs: []string{"s"}},
				{Name: "act", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"y"}},
			}
		}, nil, func(v, res float64) float64 { return max(v+res, 0) }},
	}
	const chans, batch = 5, 2
	for _, gm := range geos {
		for _, a := range acts {
			t.Run(fmt.Sprintf("k%ds%dd%d/%s", gm.k, gm.s, gm.d, a.name), func(t *testing.T) {
				xs, ws := []int{batch, chans, 13, 11}, []int{chans, 1, gm.k, gm.k}
				p := int64(gm.pad)
				attrs := map[string]graph.Attr{
					"group": attrInt(chans), "pads": attrInts(p, p, p, p),
					"strides": attrInts(int64(gm.s), int64(gm.s)), "dilations": attrInts(int64(gm.d), int64(gm.d)),
				}
				win, err := opsem.SlidingWindow(testNode("Conv", 13, attrs, 1), xs[2:], ws[2:], false)
				if err != nil {
					t.Fatal(err)
				}
				ys := append([]int{batch, chans}, win.Out...)
				x, w, bias, res := nnRandom(r, opsem.Count(xs)), nnRandom(r, opsem.Count(ws)), nnRandom(r, chans), nnRandom(r, opsem.Count(ys))
				for i := range w {
					w[i] *= 8 // outputs past 6 and below −1, for the clamps
				}
				inits := map[string]inference.Tensor{"w": tensorOf(t, ws, w...), "b": tensorOf(t, []int{chans}, bias...)}
				for k, v := range a.inits {
					inits[k] = v
				}
				g := &graph.Graph{
					Name:         "dw",
					Opsets:       map[string]int64{"": 14},
					Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: xs}, {Name: "res", DType: inference.Float32, Shape: ys}},
					Outputs:      []graph.Value{{Name: "y"}},
					Initializers: inits,
					Nodes: append([]*graph.Node{
						{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"conv"}, Attrs: attrs},
					}, a.nodes("conv")...),
				}
				if err := g.Sort(nil); err != nil {
					t.Fatal(err)
				}
				m, err := Backend{}.Compile(g)
				if err != nil {
					t.Fatal(err)
				}
				want := cvDirectConv(xs, ws, x, w, bias, win, chans)
				for i := range want {
					want[i] = float32(a.f(float64(want[i]), float64(res[i])))
				}
				withProcs(t, func(t *testing.T) {
					out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, xs, x...), "res": tensorOf(t, ys, res...)})
					if err != nil {
						t.Fatal(err)
					}
					got, _ := floats(out["y"])
					cvCheckNearTol(t, "y", got, want, 1e-4, 1e-5)
				})
			})
		}
	}
}

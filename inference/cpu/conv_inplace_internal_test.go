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

// cvInPlaceCase is a 2-D convolution for the in-place product's tests.
type cvInPlaceCase struct {
	name           string
	xs, ws         []int
	stride, dil    [2]int64
	pads           [4]int64 // begin h, begin w, end h, end w
	group          int
	bias           bool
	wantInPlace    bool // whether the plan reads B in place (with the AVX-512 kernel's 32-wide panels)
	wantReadsImage bool
}

func (tc cvInPlaceCase) attrs() map[string]graph.Attr {
	return map[string]graph.Attr{
		"group":     attrInt(int64(tc.group)),
		"strides":   attrInts(tc.stride[0], tc.stride[1]),
		"dilations": attrInts(tc.dil[0], tc.dil[1]),
		"pads":      attrInts(tc.pads[:]...),
	}
}

var cvInPlaceCases = []cvInPlaceCase{
	{"3x3 stride 1 pad 1, 14x14", []int{1, 8, 14, 14}, []int{16, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 1, ResNet's channels: k spans three blocks", []int{1, 64, 28, 28}, []int{64, 64, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 1 pad 1, 7x7, 20 output channels (edge tiles in M)", []int{1, 24, 7, 7}, []int{20, 24, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 2 pad 1 on an even map", []int{1, 16, 56, 56}, []int{24, 16, 3, 3}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 2, TensorFlow's SAME pads (0 before, 1 after)", []int{1, 8, 56, 56}, []int{16, 8, 3, 3}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{0, 0, 1, 1}, 1, false, true, false},
	{"1x1 stride 1: reads the image, writes the output", []int{2, 40, 28, 28}, []int{24, 40, 1, 1}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, true, true},
	{"1x1 stride 2 (a downsample): one phase of four", []int{1, 16, 56, 56}, []int{32, 16, 1, 1}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{}, 1, true, true, false},
	{"3x3 valid: reads the image, drops two columns of each row", []int{1, 8, 30, 30}, []int{8, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, true, true},
	{"3x3 dilation 2 pad 2", []int{1, 8, 28, 28}, []int{16, 8, 3, 3}, [2]int64{1, 1}, [2]int64{2, 2}, [4]int64{2, 2, 2, 2}, 1, true, true, false},
	{"5x5 stride 1 pad 2", []int{1, 6, 28, 28}, []int{10, 6, 5, 5}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{2, 2, 2, 2}, 1, true, true, false},
	{"7x7 stride 2 pad 3 on 3 channels (a stem)", []int{1, 3, 64, 64}, []int{16, 3, 7, 7}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{3, 3, 3, 3}, 1, true, true, false},
	{"3x3 stride 3 pad 1, asymmetric", []int{1, 4, 90, 90}, []int{8, 4, 3, 3}, [2]int64{3, 3}, [2]int64{1, 1}, [4]int64{1, 0, 2, 1}, 1, true, true, false},
	{"grouped 3x3 (ResNeXt's form)", []int{2, 32, 28, 28}, []int{32, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 4, true, true, false},
	{"3 output channels: row kernels", []int{1, 4, 28, 28}, []int{3, 4, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 rate 12 on 14x14 (DeepLab's ASPP): packs", []int{1, 8, 14, 14}, []int{8, 8, 3, 3}, [2]int64{1, 1}, [2]int64{12, 12}, [4]int64{12, 12, 12, 12}, 1, true, false, false},
	{"1x1 map (a squeeze-and-excitation): packs", []int{1, 16, 1, 1}, []int{8, 16, 1, 1}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, false, false},
	{"strides 2 and 1: packs", []int{1, 8, 28, 28}, []int{8, 8, 3, 3}, [2]int64{2, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, false, false},
	{"3x3 pad 1 on 56x56 to 64 channels: chunks of 17 rows", []int{1, 8, 56, 56}, []int{64, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 2 stem on 112x112 to 64 channels: chunks", []int{1, 3, 112, 112}, []int{64, 3, 3, 3}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
}

// TestConvInPlace checks the product that reads the im2col matrix in place
// (cvInPlace) on convolutions of every geometry it takes: strides 1 to 3
// through phases, dilations, asymmetric pads, groups, a 7×7 stem, 1×1
// convolutions that read the image and write the output, products long
// enough for several blocks of k, and output channels that leave edge
// tiles or take the row kernels. Its sums are the packed product's, in
// the same order through the same kernels, so the two outputs must be
// equal bit for bit; and both within rtol 1e-4, atol 1e-4 of the float64
// loop (sums of up to 576 products of values in [-1, 1)). Where the wide
// output would cost too many columns, or strides differ, the plan packs
// as before.
func TestConvInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tc := range cvInPlaceCases {
		t.Run(tc.name, func(t *testing.T) {
			n := testNode("Conv", 11, tc.attrs(), 1)
			x, w := nnRandom(r, opsem.Count(tc.xs)), nnRandom(r, opsem.Count(tc.ws))
			var bias []float32
			if tc.bias {
				bias = nnRandom(r, tc.ws[0])
			}
			xt, wt := tensorOf(t, tc.xs, x...), tensorOf(t, tc.ws, w...)
			plan, err := newCvPlan(n, []inference.Tensor{xt, wt}, nil, xt, wt)
			if err != nil {
				t.Fatal(err)
			}
			d := plan.gemm.inPlace
			if nnBestKernel.nr == 32 && (d != nil) != tc.wantInPlace {
				t.Fatalf("reads B in place: %v, want %v", d != nil, tc.wantInPlace)
			}
			if d != nil && d.readsImage != tc.wantReadsImage {
				t.Errorf("reads the image itself: %v, want %v", d.readsImage, tc.wantReadsImage)
			}
			run := func() []float32 {
				out := make([]float32, opsem.Count(plan.geo.out))
				for i := range out {
					out[i] = float32(math.NaN()) // every element must be written
				}
				if err := plan.gemm.run(nil, x, w, nil, bias, out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			got := run()
			plan.gemm.inPlace = nil
			packed := run()
			plan.gemm.inPlace = d
			want := cvDirectConv(tc.xs, tc.ws, x, w, bias, plan.geo.g, tc.group)
			for i := range want {
				if got[i] != packed[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(packed[i]))) {
					t.Fatalf("element %d: in place %g, packed %g: not the same sum", i, got[i], packed[i])
				}
				if !near(got[i], want[i], 1e-4, 1e-4) {
					t.Fatalf("element %d = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestConvInPlaceEpilogue runs a compiled Conv whose W is packed at
// compile time, with a residual Add and a Relu fused into it, on the
// in-place product: the epilogue applies to the output after the wide
// rows are compacted, chunk by chunk (the 56×56 case: four chunks), at 1
// and 2 threads and batches of 1 and 3 (units side by side, or one unit's
// columns split between threads).
func TestConvInPlaceEpilogue(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, tc := range []cvInPlaceCase{cvInPlaceCases[1], cvInPlaceCases[3], cvInPlaceCases[5], cvInPlaceCases[len(cvInPlaceCases)-2]} {
		for _, batch := range []int{1, 3} {
			xs := append([]int{batch}, tc.xs[1:]...)
			w, bias := nnRandom(r, opsem.Count(tc.ws)), nnRandom(r, tc.ws[0])
			n := testNode("Conv", 13, tc.attrs(), 1)
			geo, err := opsem.SlidingWindow(n, xs[2:], tc.ws[2:], false)
			if err != nil {
				t.Fatal(err)
			}
			ys := append([]int{batch, tc.ws[0]}, geo.Out...)
			g := &graph.Graph{
				Name:    "conv",
				Opsets:  map[string]int64{"": 13},
				Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: xs}, {Name: "res", DType: inference.Float32, Shape: ys}},
				Outputs: []graph.Value{{Name: "y"}},
				Initializers: map[string]inference.Tensor{
					"w": tensorOf(t, tc.ws, w...),
					"b": tensorOf(t, []int{tc.ws[0]}, bias...),
				},
				Nodes: []*graph.Node{
					{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"}, Attrs: tc.attrs()},
					{Name: "add", OpType: "Add", Inputs: []string{"c", "res"}, Outputs: []string{"s"}},
					{Name: "relu", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"y"}},
				},
			}
			if err := g.Sort(nil); err != nil {
				t.Fatal(err)
			}
			m, err := Backend{}.Compile(g)
			if err != nil {
				t.Fatal(err)
			}
			x, res := nnRandom(r, opsem.Count(xs)), nnRandom(r, opsem.Count(ys))
			want := cvDirectConv(xs, tc.ws, x, w, bias, geo, tc.group)
			for i := range want {
				want[i] = max(want[i]+res[i], 0)
			}
			t.Run(fmt.Sprintf("%s, batch %d", tc.name, batch), func(t *testing.T) {
				withProcs(t, func(t *testing.T) {
					out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, xs, x...), "res": tensorOf(t, ys, res...)})
					if err != nil {
						t.Fatal(err)
					}
					got, _ := floats(out["y"])
					cvCheckNearTol(t, "y", got, want, 1e-4, 1e-4)
				})
			})
		}
	}
}

// cvCheckNearTol fails the test at the first element of got not within
// rtol, atol of want.
func cvCheckNearTol(t *testing.T, name string, got, want []float32, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i := range want {
		if !near(got[i], want[i], rtol, atol) {
			t.Fatalf("%s: element %d = %g, want %g", name, i, got[i], want[i])
		}
	}
}

// TestConvByTap checks convolutions whose taps read mostly padding, run as
// one product per tap over the outputs the tap reads the image for
// (cvByTap): DeepLab's atrous rates on maps smaller than the rate, a 3×3
// kernel on a 2×2 map, different rates and asymmetric pads along the two
// dimensions, groups, batches of 2, with and without bias, each compiled
// (W packed at compile time) with a residual Add and a Relu fused in, at
// 1 and 2 threads, against the float64 loop (rtol 1e-4, atol 1e-4: sums
// of up to 144 products of values in [-1, 1)). Dense convolutions, and
// strides above 1, take the whole product.
func TestConvByTap(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, tc := range []cvInPlaceCase{
		{"rate 12 on 14x14 (DeepLab's ASPP)", []int{1, 16, 14, 14}, []int{24, 16, 3, 3}, [2]int64{1, 1}, [2]int64{12, 12}, [4]int64{12, 12, 12, 12}, 1, true, true, false},
		{"rate 6 on 7x7, batch 2", []int{2, 8, 7, 7}, []int{16, 8, 3, 3}, [2]int64{1, 1}, [2]int64{6, 6}, [4]int64{6, 6, 6, 6}, 1, false, true, false},
		{"3x3 pad 1 on 2x2", []int{1, 16, 2, 2}, []int{8, 16, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
		{"rates 12 and 6, asymmetric pads, groups", []int{1, 8, 14, 10}, []int{8, 4, 3, 3}, [2]int64{1, 1}, [2]int64{12, 6}, [4]int64{12, 5, 11, 7}, 2, true, true, false},
		{"dense 3x3 pad 1 on 14x14", []int{1, 8, 14, 14}, []int{8, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, false, false},
		{"rate 12 at stride 2", []int{1, 8, 14, 14}, []int{8, 8, 3, 3}, [2]int64{2, 2}, [2]int64{12, 12}, [4]int64{12, 12, 12, 12}, 1, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cvCheckCompiled(t, r, tc, func(t *testing.T, plan *cvPlan) {
				// wantInPlace says here whether the plan makes one product per tap.
				if got := plan.gemm.byTap != nil; got != tc.wantInPlace {
					t.Fatalf("one product per tap: %v, want %v", got, tc.wantInPlace)
				}
			})
		})
	}
}

// cvCheckCompiled compiles tc's Conv, W a constant (packed as prepare
// packs it) and its bias where tc has one, with a residual Add and a Relu
// after it, hands check the plan the node makes, and runs the model at 1
// and 2 threads against the float64 loop plus the residual, clamped
// (rtol 1e-4, atol 1e-4: sums of up to 1024 products of values in
// [-1, 1)).
func cvCheckCompiled(t *testing.T, r *rand.Rand, tc cvInPlaceCase, check func(t *testing.T, plan *cvPlan)) {
	t.Helper()
	w := nnRandom(r, opsem.Count(tc.ws))
	var bias []float32
	inputs := []string{"x", "w"}
	inits := map[string]inference.Tensor{"w": tensorOf(t, tc.ws, w...)}
	if tc.bias {
		bias = nnRandom(r, tc.ws[0])
		inputs = append(inputs, "b")
		inits["b"] = tensorOf(t, []int{tc.ws[0]}, bias...)
	}
	n := testNode("Conv", 13, tc.attrs(), 1)
	geo, err := opsem.SlidingWindow(n, tc.xs[2:], tc.ws[2:], false)
	if err != nil {
		t.Fatal(err)
	}
	ys := append([]int{tc.xs[0], tc.ws[0]}, geo.Out...)
	g := &graph.Graph{
		Name:         "conv",
		Opsets:       map[string]int64{"": 13},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: tc.xs}, {Name: "res", DType: inference.Float32, Shape: ys}},
		Outputs:      []graph.Value{{Name: "y"}},
		Initializers: inits,
		Nodes: []*graph.Node{
			{Name: "conv", OpType: "Conv", Inputs: inputs, Outputs: []string{"c"}, Attrs: tc.attrs()},
			{Name: "add", OpType: "Add", Inputs: []string{"c", "res"}, Outputs: []string{"s"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"y"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	x, res := nnRandom(r, opsem.Count(tc.xs)), nnRandom(r, opsem.Count(ys))
	xt, wt := tensorOf(t, tc.xs, x...), tensorOf(t, tc.ws, w...)
	prep := &cvPrepared{packs: convPacks(g, g.Nodes[0], nnBestKernel)}
	n.Prepared = prep
	plan, err := newCvPlan(n, []inference.Tensor{xt, wt}, prep, xt, wt)
	if err != nil {
		t.Fatal(err)
	}
	check(t, plan)
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	want := cvDirectConv(tc.xs, tc.ws, x, w, bias, geo, tc.group)
	for i := range want {
		want[i] = max(want[i]+res[i], 0)
	}
	withProcs(t, func(t *testing.T) {
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": xt, "res": tensorOf(t, ys, res...)})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := floats(out["y"])
		cvCheckNearTol(t, "y", got, want, 1e-4, 1e-4)
	})
}

// TestConvInPlaceThreads checks one image's in-place product on two
// threads, with a residual and a Relu as its epilogue, equal to the packed
// product on one thread: its image copied in parallel, and each thread
// taking whole chunks of output rows, their products and compaction (a
// padded 3×3 convolution, a stem, a downsampling convolution).
func TestConvInPlaceThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, tc := range []struct {
		xs, ws  []int
		attrs   map[string]graph.Attr
		chunked bool
	}{
		{[]int{1, 96, 56, 56}, []int{64, 96, 3, 3}, map[string]graph.Attr{"pads": attrInts(1, 1, 1, 1)}, true},
		{[]int{1, 3, 113, 109}, []int{64, 3, 3, 3}, map[string]graph.Attr{"strides": attrInts(2, 2)}, true},
		{[]int{1, 32, 161, 167}, []int{48, 32, 3, 3}, map[string]graph.Attr{"strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1)}, true},
	} {
		name := fmt.Sprintf("x %v w %v %v", tc.xs, tc.ws, tc.attrs)
		xs, ws := tc.xs, tc.ws
		n := testNode("Conv", 11, tc.attrs, 1)
		x, w, bias := nnRandom(r, opsem.Count(xs)), nnRandom(r, opsem.Count(ws)), nnRandom(r, ws[0])
		g, err := opsem.SlidingWindow(n, xs[2:], ws[2:], false)
		if err != nil {
			t.Fatal(err)
		}
		osp := opsem.Count(g.Out)
		res := nnRandom(r, ws[0]*osp)
		ep := &epilogue{residual: res, clamp: clamp{on: true, lo: 0, hi: float32(math.Inf(1))}, biasIn: -1, residualIn: -1}
		c, err := newCvGemm(nil, 1, xs[1], ws[0], 1, g, ep)
		if err != nil {
			t.Fatal(err)
		}
		c.taps2 = cvAllTaps(g)
		c.readInPlace()
		if c.inPlace == nil || c.inPlace.readsImage {
			t.Fatalf("%s: the product does not copy its image to read it in place", name)
		}
		d := c.inPlace
		if chunked := !d.writesOut && d.chunkRows(ws[0]) < d.oh; chunked != tc.chunked {
			t.Fatalf("%s: in chunks of output rows %v, want %v", name, chunked, tc.chunked)
		}
		run := func(procs int) []float32 {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			out := make([]float32, ws[0]*osp)
			if err := c.run(nil, x, w, nil, bias, out); err != nil {
				t.Fatal(err)
			}
			return out
		}
		got := run(2)
		c.inPlace = nil
		want := run(1)
		c.inPlace = d
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: element %d: %g in place on 2 threads, %g packed on 1", name, i, got[i], want[i])
			}
		}
	}
}

// TestScatterColumns2D checks ConvTranspose's 2-D scatter against the
// general one (cvScatterColumns) on random geometries: strides 1 to 3,
// dilations 1 and 2, kernels 1 to 4, pads that trim or (negative, as an
// output_shape beyond the natural size makes them) extend the output.
// Both add each column into its output in the same order: the results
// are equal.
func TestScatterColumns2D(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for trial := range 200 {
		var m cvTaps
		channels := 1 + r.IntN(3)
		for range 2 {
			cvAddTransposedDim(r, &m, 1+r.IntN(6), 1+r.IntN(4), 1+r.IntN(3), 1+r.IntN(2), r.IntN(4)-1)
		}
		col := nnRandom(r, channels*opsem.Count(m.kernel)*opsem.Count(m.cols))
		want := nnRandom(r, channels*opsem.Count(m.img))
		got := slices.Clone(want)
		cvScatterColumns(col, channels, m, want)
		cvScatterColumns2D(col, channels, m, got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, %+v: 2-D scatter differs from the general one", trial, m)
		}
	}
}

// cvAddTransposedDim adds to m a dimension of a ConvTranspose's scatter:
// in input columns, kernel k at stride s and dilation dil, pads pad, and
// the output as long as that makes (at least 1), one longer at random
// (output padding).
func cvAddTransposedDim(r *rand.Rand, m *cvTaps, in, k, s, dil, pad int) {
	m.cols = append(m.cols, in)
	m.img = append(m.img, max(1, (in-1)*s+(k-1)*dil+1-2*pad+r.IntN(2)))
	m.kernel = append(m.kernel, k)
	m.stride = append(m.stride, s)
	m.dilation = append(m.dilation, dil)
	m.pad = append(m.pad, pad)
}

// TestScatterPhases2 checks the ConvTranspose scatter at column stride 2
// through the output's two column phases (cvScatterPhases2, with the
// bias) against the 2-D scatter into zeros plus the bias, on 300 random
// geometries: kernels to 5, row strides 1 to 3, dilations 1 and 2, pads
// −1 to 2, output padding, odd and even output widths to 40 (the vector
// interleave's tails). The phases add a tap's values in the same order as
// the scatter does (by channel, tap, input row), so the sums agree
// exactly.
func TestScatterPhases2(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for trial := range 300 {
		var m cvTaps
		channels := 1 + r.IntN(3)
		for d := range 2 {
			in, k, s, dil, pad := 1+r.IntN(20), 1+r.IntN(5), 1+r.IntN(3), 1+r.IntN(2), r.IntN(4)-1
			if d == 1 {
				s = 2
			}
			cvAddTransposedDim(r, &m, in, k, s, dil, pad)
		}
		col := nnRandom(r, channels*opsem.Count(m.kernel)*opsem.Count(m.cols))
		bias := nnRandom(r, channels)
		osp := opsem.Count(m.img)
		want := make([]float32, channels*osp)
		cvScatterColumns2D(col, channels, m, want)
		cvAddBias(want, bias, osp)
		got := nnRandom(r, channels*osp) // overwritten
		scratch := make([]float32, m.img[0]*2*((m.img[1]+1)/2))
		cvScatterPhases2(col, channels, m, got, bias, scratch)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, %+v: the phases' scatter differs from the 2-D one", trial, m)
		}
	}
}

// TestConvTransposePrepacked runs a compiled ConvTranspose, its W packed
// at compile time, against the kernel with W packed at each run: equal.
func TestConvTransposePrepacked(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	xs, ws := []int{2, 16, 7, 7}, []int{16, 4, 3, 3} // two groups of 8 input channels, 4 output channels each
	attrs := map[string]graph.Attr{"group": attrInt(2), "strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1), "output_padding": attrInts(1, 1)}
	w, bias, x := nnRandom(r, opsem.Count(ws)), nnRandom(r, 8), nnRandom(r, opsem.Count(xs))
	g := &graph.Graph{
		Name:         "deconv",
		Opsets:       map[string]int64{"": 13},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float32, Shape: xs}},
		Outputs:      []graph.Value{{Name: "y"}},
		Initializers: map[string]inference.Tensor{"w": tensorOf(t, ws, w...), "b": tensorOf(t, []int{8}, bias...)},
		Nodes:        []*graph.Node{{Name: "deconv", OpType: "ConvTranspose", Inputs: []string{"x", "w", "b"}, Outputs: []string{"y"}, Attrs: attrs}},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	prepared, err := prepare(g)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prepared[g.Nodes[0]].(nnPackedSet); !ok {
		t.Fatalf("ConvTranspose's W is not packed at compile time: %T", prepared[g.Nodes[0]])
	}
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, xs, x...)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := floats(out["y"])
	want, _ := floats(runKernel(t, testNode("ConvTranspose", 13, attrs, 1), tensorOf(t, xs, x...), tensorOf(t, ws, w...), tensorOf(t, []int{8}, bias...))[0])
	if !slices.Equal(got, want) {
		t.Fatal("the compiled ConvTranspose differs from the kernel packing W at each run")
	}
}

// TestConvTransposeThreads runs a ConvTranspose at stride 2 on a batch of
// one, whose one unit has every thread (its 32 output channels, 64×64,
// scattered in parallel chunks by scatterPhases), with 1, 2 and 3
// threads: the same output.
func TestConvTransposeThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	xs, ws := []int{1, 8, 32, 32}, []int{8, 32, 3, 3}
	attrs := map[string]graph.Attr{"strides": attrInts(2, 2), "pads": attrInts(1, 1, 1, 1), "output_padding": attrInts(1, 1)}
	x, w, bias := tensorOf(t, xs, nnRandom(r, opsem.Count(xs))...), tensorOf(t, ws, nnRandom(r, opsem.Count(ws))...), tensorOf(t, []int{32}, nnRandom(r, 32)...)
	var want []float32
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, threads := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(threads)
		got, _ := floats(runKernel(t, testNode("ConvTranspose", 13, attrs, 1), x, w, bias)[0])
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d threads: the output differs from 1 thread's", threads)
		}
	}
}

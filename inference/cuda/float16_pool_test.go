//go:build cgo

package cuda_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels"
)

// halfCase is an operator on float16 data with the kernels its lowering
// launches: exactly those, each at least once.
type halfCase struct {
	check.Case
	kernels []string
	// exact marks the operators that select an element rather than
	// compute one (Max, Min, ArgMax, ArgMin): no tolerance.
	exact bool
}

// halfRand returns a float16 tensor of the given shape with values
// uniform in [lo, hi), rounded to float16, from a generator seeded by seed.
// step > 0 rounds them to multiples of step first, which makes ties.
func halfRand(seed uint64, lo, hi, step float32, shape ...int) inference.Tensor {
	v := check.Float32s(check.Rand(seed, lo, hi, shape...))
	h := make([]inference.Half, len(v))
	for i, f := range v {
		if step > 0 {
			f = step * float32(math.Round(float64(f/step)))
		}
		h[i] = inference.HalfFromFloat32(f)
	}
	t, err := inference.New(shape, h)
	if err != nil {
		panic(err)
	}
	return t
}

// withNaN returns x with element i a NaN.
func withNaN(x inference.Tensor, i int) inference.Tensor {
	h, _ := inference.Data[inference.Half](x)
	h = slices.Clone(h)
	h[i] = inference.HalfFromFloat32(float32(math.NaN()))
	t, err := inference.New(x.Shape(), h)
	if err != nil {
		panic(err)
	}
	return t
}

// runHalf runs c on the simulated device and on the CPU reference,
// cpu.NewModel, which runs a float16 node widened: each float16 input read
// exactly into float32, the float32 kernel, each float16 output rounded
// once. That is what the device's float16 kernels compute, but their sums
// go in another order (in float32, in a tree of BLOCK partial sums in the
// block kernels; the CPU's reductions sum in float64, its pools in partial
// sums of their own). The results before rounding differ by a few float32
// ulps, which can carry one over a float16 rounding boundary: one float16
// ulp apart, at most 2⁻¹⁰ of the value (rtol 1e-3), or, for a result that
// cancels to near 0, where float16 steps are finer than the float32 error
// of the sum, atol 1e-4. An operator that selects an element (c.exact)
// must give its value exactly. The node must run on the device, as
// c.kernels, without a cast_convert: a float16 node lowered in float32
// between casts (lowerNode) would pass the comparison too. rounded and
// differ count the float16 elements that c computes and those of them
// whose bits differ from the CPU's (checkRounding).
func runHalf(t *testing.T, c halfCase, rounded, differ *int) {
	t.Helper()
	ctx := context.Background()
	g, feeds, err := c.Graph()
	if err != nil {
		t.Fatal(err)
	}
	want, err := cpu.NewModel(g).Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	g, _, _ = c.Graph() // the device gets its own graph: Compile rewrites it
	b, _ := newSim(t, 0)
	m := compile(t, b, g)
	defer m.Close()
	before := runner.Launched()
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	launched := launchedSince(before)
	if host := m.(*cuda.Model).Stats().HostNodes; len(host) > 0 {
		t.Fatalf("nodes on the host: %q", host)
	}
	if ks := slices.Sorted(maps.Keys(launched)); !slices.Equal(ks, slices.Sorted(slices.Values(c.kernels))) {
		t.Errorf("launched %v, want each of %v and nothing else (no %s)", launched, c.kernels, kernels.CastConvert)
	}
	rtol, atol := 1e-3, 1e-4
	if c.exact {
		rtol, atol = 0, 0
	}
	for name, w := range want {
		if err := check.Compare(got[name], w, rtol, atol); err != nil {
			t.Errorf("output %s: %v", name, err)
		} else if w.DType() == inference.Float16 && !c.exact {
			*rounded += w.Len()
			*differ += bitsDiffer(got[name], w)
		}
	}
}

// bitsDiffer counts the elements of the float tensors got and want whose
// bits differ, NaN matching NaN.
func bitsDiffer(got, want inference.Tensor) int {
	g, w := check.Float32s(got), check.Float32s(want)
	n := 0
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
			n++
		}
	}
	return n
}

// checkRounding requires that at most 10% of the rounded elements, the
// float16 outputs of the cases that compute them, differ in their bits
// from the CPU's. The tolerance of one float16 ulp lets through a kernel
// that rounds toward zero, which differs in about half of them; the orders
// of the sums flip a rounding only where a result lies within a few
// float32 ulps of a midpoint between two float16 values, a few in a
// thousand.
func checkRounding(t *testing.T, rounded, differ int) {
	t.Helper()
	t.Logf("%d of %d rounded float16 elements differ from the CPU's in their bits", differ, rounded)
	if differ*10 > rounded {
		t.Errorf("%d of %d rounded float16 elements differ from the CPU's in their bits, want at most 10%%", differ, rounded)
	}
}

// The pooling operators on float16 X run pool_f16, pool_max_index_f16 and
// pool_global_f16 (planes of 323 elements, more than a block's threads,
// one of them holding a NaN) and agree with the CPU's float16 semantics
// (runHalf).
func TestFloat16Pooling(t *testing.T) {
	x4 := halfRand(1, -2, 2, 0, 2, 3, 9, 9)
	global := withNaN(halfRand(2, 0, 4, 0, 4, 8, 17, 19), 17*19+40) // the second plane holds a NaN
	window := map[string]graph.Attr{"kernel_shape": check.AInts(3, 3), "strides": check.AInts(2, 2), "pads": check.AInts(1, 1, 1, 1)}
	cases := []halfCase{
		{Case: check.Case{Name: "MaxPool", Op: "MaxPool", Attrs: window, Inputs: []check.Input{{T: x4}}},
			kernels: []string{kernels.PoolF16}, exact: true},
		{Case: check.Case{Name: "MaxPool/indices", Op: "MaxPool", Attrs: window, Inputs: []check.Input{{T: x4}}, Outputs: 2},
			kernels: []string{kernels.PoolMaxIndexF16}, exact: true},
		{Case: check.Case{Name: "MaxPool/3d", Op: "MaxPool", Inputs: []check.Input{{T: halfRand(3, -2, 2, 0, 1, 2, 5, 6, 7)}},
			Attrs: map[string]graph.Attr{"kernel_shape": check.AInts(2, 3, 2), "dilations": check.AInts(2, 1, 1)}},
			kernels: []string{kernels.PoolF16}, exact: true},
		{Case: check.Case{Name: "AveragePool/pads", Op: "AveragePool", Inputs: []check.Input{{T: x4}},
			Attrs: map[string]graph.Attr{"kernel_shape": check.AInts(3, 3), "pads": check.AInts(1, 1, 1, 1), "count_include_pad": check.AInt(1)}},
			kernels: []string{kernels.PoolF16}},
		{Case: check.Case{Name: "AveragePool/1d", Op: "AveragePool", Inputs: []check.Input{{T: halfRand(4, -1, 1, 0, 1, 4, 40)}},
			Attrs: map[string]graph.Attr{"kernel_shape": check.AInts(7), "strides": check.AInts(3)}},
			kernels: []string{kernels.PoolF16}},
		{Case: check.Case{Name: "LpPool", Op: "LpPool", Inputs: []check.Input{{T: x4}},
			Attrs: map[string]graph.Attr{"kernel_shape": check.AInts(3, 2), "p": check.AInt(3)}},
			kernels: []string{kernels.PoolF16}},
		{Case: check.Case{Name: "GlobalAveragePool", Op: "GlobalAveragePool", Inputs: []check.Input{{T: global}}},
			kernels: []string{kernels.PoolGlobalF16}},
		{Case: check.Case{Name: "GlobalMaxPool", Op: "GlobalMaxPool", Inputs: []check.Input{{T: global}}},
			kernels: []string{kernels.PoolGlobalF16}, exact: true},
	}
	var rounded, differ int
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runHalf(t, c, &rounded, &differ) })
	}
	checkRounding(t, rounded, differ)
}

// The reductions on float16 X run reduce_f16 (a thread per output),
// reduce_block_f16 (a block per output, mostly of 260 to 527 elements),
// reduce_gather_b2 (reduced axes apart), arg_f16 and arg_block_f16, and
// agree with the CPU's float16 semantics (runHalf): each output the float
// reduction of the float16 inputs, rounded once. ArgMin's input is in
// steps of 0.5, so that its minima tie.
func TestFloat16Reductions(t *testing.T) {
	axes := func(v ...int64) map[string]graph.Attr { return map[string]graph.Attr{"axes": check.AInts(v...)} }
	in := func(x inference.Tensor) []check.Input { return []check.Input{{T: x}} }
	thread, block := []string{kernels.ReduceF16}, []string{kernels.ReduceBlockF16}
	cases := []halfCase{
		{Case: check.Case{Name: "ReduceSum/block", Op: "ReduceSum",
			Inputs: []check.Input{{T: halfRand(5, -1, 1, 0, 4, 300, 3)}, {T: check.Ints([]int{1}, 1), Const: true}}},
			kernels: block},
		{Case: check.Case{Name: "ReduceSum/thread", Op: "ReduceSum",
			Inputs: []check.Input{{T: halfRand(6, -1, 1, 0, 3, 5, 8)}, {T: check.Ints([]int{1}, -1), Const: true}}},
			kernels: thread},
		{Case: check.Case{Name: "ReduceMean/thread", Op: "ReduceMean", Attrs: axes(2), Inputs: in(halfRand(7, -1, 1, 0, 3, 5, 8))},
			kernels: thread},
		{Case: check.Case{Name: "ReduceMean/all", Op: "ReduceMean", Inputs: in(halfRand(8, -1, 3, 0, 17, 31)),
			Attrs: map[string]graph.Attr{"keepdims": check.AInt(0)}},
			kernels: block},
		{Case: check.Case{Name: "ReduceSumSquare/gather", Op: "ReduceSumSquare", Attrs: axes(0, 2), Inputs: in(halfRand(9, -1, 1, 0, 6, 5, 70))},
			kernels: []string{kernels.ReduceGatherB2, kernels.ReduceBlockF16}},
		{Case: check.Case{Name: "ReduceLogSumExp/block", Op: "ReduceLogSumExp", Attrs: axes(1), Inputs: in(halfRand(10, -4, 4, 0, 2, 260))},
			kernels: block},
		{Case: check.Case{Name: "ReduceLogSumExp/thread", Op: "ReduceLogSumExp", Attrs: axes(1), Inputs: in(halfRand(11, -4, 4, 0, 40, 20))},
			kernels: thread},
		{Case: check.Case{Name: "ReduceL2", Op: "ReduceL2", Attrs: axes(1), Inputs: in(halfRand(12, -1, 1, 0, 40, 20))},
			kernels: thread},
		{Case: check.Case{Name: "ReduceL1", Op: "ReduceL1", Attrs: axes(1, 2), Inputs: in(halfRand(13, -1, 1, 0, 3, 4, 100))},
			kernels: block},
		{Case: check.Case{Name: "ReduceProd", Op: "ReduceProd", Attrs: axes(1), Inputs: in(halfRand(14, 0.5, 1.5, 0, 10, 6))},
			kernels: thread},
		{Case: check.Case{Name: "ReduceLogSum", Op: "ReduceLogSum", Attrs: axes(1), Inputs: in(halfRand(15, 0.1, 1, 0, 5, 50))},
			kernels: block},
		{Case: check.Case{Name: "ReduceMax", Op: "ReduceMax", Attrs: axes(1), Inputs: in(halfRand(16, -2, 2, 0, 7, 9, 30))},
			kernels: thread, exact: true},
		{Case: check.Case{Name: "ReduceMin", Op: "ReduceMin", Attrs: axes(1), Inputs: in(halfRand(17, -2, 2, 0, 3, 290))},
			kernels: block, exact: true},
		{Case: check.Case{Name: "ArgMax/block", Op: "ArgMax", Attrs: map[string]graph.Attr{"axis": check.AInt(1)},
			Inputs: in(halfRand(18, -2, 2, 0, 4, 300))},
			kernels: []string{kernels.ArgBlockF16}, exact: true},
		{Case: check.Case{Name: "ArgMin/ties-last", Op: "ArgMin", Inputs: in(halfRand(19, -2, 2, 0.5, 5, 7, 3)),
			Attrs: map[string]graph.Attr{"axis": check.AInt(1), "keepdims": check.AInt(0), "select_last_index": check.AInt(1)}},
			kernels: []string{kernels.ArgF16}, exact: true},
	}
	var rounded, differ int
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { runHalf(t, c, &rounded, &differ) })
	}
	checkRounding(t, rounded, differ)
}

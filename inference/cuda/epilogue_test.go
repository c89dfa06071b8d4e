//go:build cgo

package cuda_test

import (
	"context"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels"
)

// residualNet has a residual Add (and a Relu or Clip after it) after each
// kind of convolution the lowering has: im2col with a bias, a 1×1 without
// one, a depthwise one (the direct kernel), and one whose residual
// broadcasts.
func residualNet(t testing.TB) *graph.Graph {
	t.Helper()
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	pad := func() map[string]graph.Attr { return map[string]graph.Attr{"pads": ints(1, 1, 1, 1)} } // a map per node: passes add to it
	g := &graph.Graph{
		Name:    "residual",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 4, 6, 6}}},
		Outputs: []graph.Value{{Name: "y", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{
			"w1": check.Rand(1, -0.5, 0.5, 4, 4, 3, 3), "b1": check.Rand(2, -0.1, 0.1, 4),
			"w2": check.Rand(3, -0.5, 0.5, 4, 4, 1, 1),
			"w3": check.Rand(4, -0.5, 0.5, 4, 1, 3, 3), "b3": check.Rand(5, -0.1, 0.1, 4),
			"w4": check.Rand(6, -0.5, 0.5, 4, 4, 3, 3), "b4": check.Rand(7, -0.1, 0.1, 4),
			"lo": check.Floats([]int{}, 0), "hi": check.Floats([]int{}, 0.5),
		},
		Nodes: []*graph.Node{
			{Name: "conv1", OpType: "Conv", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"c1"}, Attrs: pad()},
			{Name: "add1", OpType: "Add", Inputs: []string{"c1", "x"}, Outputs: []string{"s1"}},
			{Name: "relu1", OpType: "Relu", Inputs: []string{"s1"}, Outputs: []string{"r1"}},
			{Name: "conv2", OpType: "Conv", Inputs: []string{"r1", "w2"}, Outputs: []string{"c2"}},
			{Name: "add2", OpType: "Add", Inputs: []string{"r1", "c2"}, Outputs: []string{"s2"}},
			{Name: "relu2", OpType: "Relu", Inputs: []string{"s2"}, Outputs: []string{"r2"}},
			{Name: "conv3", OpType: "Conv", Inputs: []string{"r2", "w3", "b3"}, Outputs: []string{"c3"},
				Attrs: map[string]graph.Attr{"pads": ints(1, 1, 1, 1), "group": {Type: graph.AttrInt, Int: 4}}},
			{Name: "add3", OpType: "Add", Inputs: []string{"c3", "r2"}, Outputs: []string{"s3"}},
			{Name: "clip3", OpType: "Clip", Inputs: []string{"s3", "lo", "hi"}, Outputs: []string{"r3"}},
			{Name: "pool", OpType: "ReduceMean", Inputs: []string{"r3"}, Outputs: []string{"m"},
				Attrs: map[string]graph.Attr{"axes": ints(2, 3)}},
			{Name: "conv4", OpType: "Conv", Inputs: []string{"r3", "w4", "b4"}, Outputs: []string{"c4"}, Attrs: pad()},
			{Name: "add4", OpType: "Add", Inputs: []string{"c4", "m"}, Outputs: []string{"s4"}}, // m [N, 4, 1, 1] broadcasts
			{Name: "relu4", OpType: "Relu", Inputs: []string{"s4"}, Outputs: []string{"y"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// A residual Add and the Relu or Clip after it run in the convolution's
// epilogue launch (issue 15, item 4): one epilogue_f32 per
// convolution, and none of the Adds, Relus and Clips as launches of their
// own: a residual that broadcasts as a run of dimensions (conv4's [N, 4,
// 1, 1], one value per image and channel) is read in the same launch
// (residualRun). The results are the CPU backend's.
func TestConvResidualEpilogue(t *testing.T) {
	b, _ := newSim(t, 0)
	m := compile(t, b, residualNet(t))
	ctx := context.Background()
	for i := range 2 {
		feeds := batchOf(residualNet(t), 2, uint64(i))
		before := runner.Launched()
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		matchCPU(t, residualNet, feeds, got)
		if host := m.(*cuda.Model).Stats().HostNodes; len(host) > 0 {
			t.Fatalf("nodes on the host: %q", host)
		}
		if i == 0 {
			continue // the first batch of a shape plans it
		}
		launched := launchedSince(before)
		// conv1, conv2, conv3 and conv4's epilogues.
		if launched[kernels.EpilogueF32] != 4 || launched[kernels.BinaryF32] != 0 {
			t.Errorf("launches %v: want 4 of %s and none of %s (conv4's broadcast residual in its epilogue)", launched, kernels.EpilogueF32, kernels.BinaryF32)
		}
		for _, k := range []string{kernels.BinarySameF32, kernels.UnaryF32, kernels.UnaryClipF32} {
			if launched[k] > 0 {
				t.Errorf("%d launches of %s: an Add, Relu or Clip was not fused", launched[k], k)
			}
		}
	}
}

// launchedSince returns the launches by kernel since before (a
// runner.Launched()).
func launchedSince(before map[string]int) map[string]int {
	launched := map[string]int{}
	for k, n := range runner.Launched() {
		if d := n - before[k]; d > 0 {
			launched[k] = d
		}
	}
	return launched
}

// ffnNet is a transformer's feed-forward block as exporters write it:
// MatMul and bias Add, Gelu in its erf form, MatMul and bias Add, the
// residual Add; then a MatMul whose bias Add and Sigmoid·x (SiLU) fuse.
func ffnNet(t testing.TB) *graph.Graph {
	t.Helper()
	c := func(name string, v float32) *graph.Node {
		return &graph.Node{Name: name, OpType: "Constant", Outputs: []string{name},
			Attrs: map[string]graph.Attr{"value": {Type: graph.AttrTensor, Tensor: check.Floats([]int{}, v)}}}
	}
	g := &graph.Graph{
		Name:    "ffn",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 5, 8}}},
		Outputs: []graph.Value{{Name: "y", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{
			"w1": check.Rand(1, -0.5, 0.5, 8, 16), "b1": check.Rand(2, -0.1, 0.1, 16),
			"w2": check.Rand(3, -0.5, 0.5, 16, 8), "b2": check.Rand(4, -0.1, 0.1, 8),
			"w3": check.Rand(5, -0.5, 0.5, 8, 6), "b3": check.Rand(6, -0.1, 0.1, 6),
		},
		Nodes: []*graph.Node{
			{Name: "mm1", OpType: "MatMul", Inputs: []string{"x", "w1"}, Outputs: []string{"m1"}},
			{Name: "bias1", OpType: "Add", Inputs: []string{"b1", "m1"}, Outputs: []string{"h"}},
			c("sqrt2", 1.4142135), c("one", 1), c("half", 0.5),
			{Name: "div", OpType: "Div", Inputs: []string{"h", "sqrt2"}, Outputs: []string{"d"}},
			{Name: "erf", OpType: "Erf", Inputs: []string{"d"}, Outputs: []string{"e"}},
			{Name: "add1", OpType: "Add", Inputs: []string{"e", "one"}, Outputs: []string{"e1"}},
			{Name: "mul1", OpType: "Mul", Inputs: []string{"h", "e1"}, Outputs: []string{"g0"}},
			{Name: "mul2", OpType: "Mul", Inputs: []string{"g0", "half"}, Outputs: []string{"g"}},
			{Name: "mm2", OpType: "MatMul", Inputs: []string{"g", "w2"}, Outputs: []string{"m2"}},
			{Name: "bias2", OpType: "Add", Inputs: []string{"m2", "b2"}, Outputs: []string{"o"}},
			{Name: "res", OpType: "Add", Inputs: []string{"o", "x"}, Outputs: []string{"r"}},
			{Name: "mm3", OpType: "MatMul", Inputs: []string{"r", "w3"}, Outputs: []string{"m3"}},
			{Name: "bias3", OpType: "Add", Inputs: []string{"m3", "b3"}, Outputs: []string{"s"}},
			{Name: "sig", OpType: "Sigmoid", Inputs: []string{"s"}, Outputs: []string{"sg"}},
			{Name: "silu", OpType: "Mul", Inputs: []string{"s", "sg"}, Outputs: []string{"y"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// A MatMul's bias, residual and activation (Gelu; a gated Sigmoid, SiLU)
// run in one epilogue_f32 launch after its GEMM (issue 15, item 4): three
// GEMMs and three epilogue launches in all, and the results are the CPU
// backend's.
func TestMatMulEpilogue(t *testing.T) {
	b, _ := newSim(t, 0)
	m := compile(t, b, ffnNet(t))
	for i := range 2 {
		feeds := batchOf(ffnNet(t), 3, uint64(i))
		before := runner.Launched()
		got, err := m.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		matchCPU(t, ffnNet, feeds, got)
		if host := m.(*cuda.Model).Stats().HostNodes; len(host) > 0 {
			t.Fatalf("nodes on the host: %q", host)
		}
		if launched := launchedSince(before); i > 0 && (len(launched) != 1 || launched[kernels.EpilogueF32] != 3) {
			t.Errorf("launches %v: want 3 of %s and nothing else", launched, kernels.EpilogueF32)
		}
	}
}

// deferNet has pointwise epilogues (a bias and a Relu or Clip) that the
// reader of a convolution's output applies as it gathers it: a 1×1
// convolution's for the im2col of a 3×3 one, whose own goes to a depthwise
// convolution's direct kernel. conv_d's output has two readers, so its
// epilogue stays a launch; conv_c's output is a graph output, read by
// nothing, so its clamp stays in its kernel.
func deferNet(t testing.TB) *graph.Graph {
	t.Helper()
	ints := func(v ...int64) graph.Attr { return graph.Attr{Type: graph.AttrInts, Ints: v} }
	g := &graph.Graph{
		Name:    "defer",
		Opsets:  map[string]int64{"": 17},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 3, 7, 7}}},
		Outputs: []graph.Value{{Name: "y", DType: inference.Float32}, {Name: "z", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{
			"wa": check.Rand(1, -0.5, 0.5, 4, 3, 1, 1), "ba": check.Rand(2, -0.5, 0.5, 4),
			"wb": check.Rand(3, -0.5, 0.5, 4, 4, 3, 3), "bb": check.Rand(4, -0.5, 0.5, 4),
			"wc": check.Rand(5, -0.5, 0.5, 4, 1, 3, 3), "bc": check.Rand(6, -0.1, 0.1, 4),
			"wd": check.Rand(7, -0.5, 0.5, 4, 3, 1, 1), "bd": check.Rand(8, -0.5, 0.5, 4),
			"we": check.Rand(9, -0.5, 0.5, 4, 4, 3, 3),
			"lo": check.Floats([]int{}, 0), "hi": check.Floats([]int{}, 0.6),
		},
		Nodes: []*graph.Node{
			{Name: "conv_a", OpType: "Conv", Inputs: []string{"x", "wa", "ba"}, Outputs: []string{"a"}},
			{Name: "relu_a", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"ra"}},
			{Name: "conv_b", OpType: "Conv", Inputs: []string{"ra", "wb", "bb"}, Outputs: []string{"b"},
				Attrs: map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}},
			{Name: "clip_b", OpType: "Clip", Inputs: []string{"b", "lo", "hi"}, Outputs: []string{"rb"}},
			{Name: "conv_c", OpType: "Conv", Inputs: []string{"rb", "wc", "bc"}, Outputs: []string{"c"},
				Attrs: map[string]graph.Attr{"pads": ints(1, 1, 1, 1), "group": {Type: graph.AttrInt, Int: 4}}},
			{Name: "relu_c", OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}},
			{Name: "conv_d", OpType: "Conv", Inputs: []string{"x", "wd", "bd"}, Outputs: []string{"d"}},
			{Name: "relu_d", OpType: "Relu", Inputs: []string{"d"}, Outputs: []string{"rd"}},
			{Name: "conv_e", OpType: "Conv", Inputs: []string{"rd", "we"}, Outputs: []string{"e"},
				Attrs: map[string]graph.Attr{"pads": ints(1, 1, 1, 1)}},
			{Name: "add", OpType: "Add", Inputs: []string{"e", "rd"}, Outputs: []string{"z"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// A pointwise epilogue whose output has one reader runs in that reader's
// gather (im2col, or the direct kernel of a depthwise convolution)
// instead of a launch of its own; one with two readers stays a launch.
// The results are the CPU backend's, and the same with deferral off.
func TestDeferredEpilogues(t *testing.T) {
	for _, deferring := range []bool{true, false} {
		restore := cuda.SetDeferEpilogues(deferring)
		b, _ := newSim(t, 0)
		m := compile(t, b, deferNet(t))
		for i := range 2 {
			feeds := batchOf(deferNet(t), 2, uint64(i))
			before := runner.Launched()
			got, err := m.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			matchCPU(t, deferNet, feeds, got)
			if i == 0 {
				continue
			}
			// conv_a's and conv_b's epilogues deferred; conv_d's
			// stays, and conv_e's residual is an epilogue of its own.
			want := 2
			if !deferring {
				want = 4
			}
			if launched := launchedSince(before); launched[kernels.EpilogueF32] != want {
				t.Errorf("deferring %t: launches %v: want %d of %s", deferring, launched, want, kernels.EpilogueF32)
			}
		}
		restore()
	}
}

// fp16DeferNet is deferNet with a product whose bias alone goes to the
// residual read of its reader: conv_f's output f is added to conv_g's (the
// first product the graph passes meet takes the Add, as a ResNet's block
// takes its shortcut's).
func fp16DeferNet(t testing.TB) *graph.Graph {
	g := deferNet(t)
	g.Initializers["wf"] = check.Rand(10, -0.5, 0.5, 4, 3, 1, 1)
	g.Initializers["bf"] = check.Rand(11, -0.5, 0.5, 4)
	g.Initializers["wg"] = check.Rand(12, -0.5, 0.5, 4, 3, 3, 3)
	g.Nodes = append(g.Nodes,
		&graph.Node{Name: "conv_g", OpType: "Conv", Inputs: []string{"x", "wg"}, Outputs: []string{"g"},
			Attrs: map[string]graph.Attr{"pads": {Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}},
		&graph.Node{Name: "conv_f", OpType: "Conv", Inputs: []string{"x", "wf", "bf"}, Outputs: []string{"f"}},
		&graph.Node{Name: "add_g", OpType: "Add", Inputs: []string{"g", "f"}, Outputs: []string{"s"}},
		&graph.Node{Name: "relu_g", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"w"}})
	g.Outputs = append(g.Outputs, graph.Value{Name: "w", DType: inference.Float32})
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// In FP16 mode a float16 Conv whose reader applies its pointwise epilogue
// rounds its product before the epilogue, and the reader applies it as in
// float32 (conv_a's and conv_b's as they are gathered, conv_f's bias with
// conv_g's residual): no epilogue launch for them, and no float32
// accumulator. Where the reader does not take it, the product's own
// epilogue_rounded_f16 finishes it in place. The results are the mode's
// meaning (cuda.Reference) at its tolerances (fp16_mode_test.go), with the one
// more rounding this adds.
func TestDeferredEpiloguesInFP16(t *testing.T) {
	ctx := context.Background()
	ref := compile(t, cuda.Reference(inference.FP16), fp16DeferNet(t))
	for _, c := range []struct {
		name               string
		deferring, taking  bool
		epilogues, inPlace int // epilogue_f16 and epilogue_rounded_f16 launches
	}{
		{"deferred", true, true, 3, 0},
		{"not taken", true, false, 3, 3},
		{"not deferred", false, true, 6, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer cuda.SetDeferEpilogues(c.deferring)()
			defer cuda.SetTakeEpilogues(c.taking)()
			b, _ := newSim(t, 0)
			m := compile(t, inPrecision{b, inference.FP16}, fp16DeferNet(t))
			for i := range 2 {
				feeds := batchOf(fp16DeferNet(t), 2, uint64(i))
				before := runner.Launched()
				got, err := m.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				launched := launchedSince(before)
				want, err := ref.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				for name, w := range want {
					if err := check.Compare(got[name], w, fp16RTol, fp16ATol); err != nil {
						t.Errorf("output %s: %v", name, err)
					}
				}
				if i > 0 && (launched[kernels.EpilogueF16] != c.epilogues || launched[kernels.EpilogueRoundedF16] != c.inPlace) {
					t.Errorf("launches %v: want %d of %s and %d of %s", launched,
						c.epilogues, kernels.EpilogueF16, c.inPlace, kernels.EpilogueRoundedF16)
				}
			}
		})
	}
}

// gapNet's MatMul has a residual Add whose operand broadcasts along a
// middle dimension ([N, 1, 4] against the product's [N, 3, 4]): no run of
// dimensions (residualRun), so a broadcasting Add adds it between the
// bias and the Relu.
func gapNet(t testing.TB) *graph.Graph {
	t.Helper()
	g := &graph.Graph{
		Name:   "gap",
		Opsets: map[string]int64{"": 17},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 3, 5}},
			{Name: "r", DType: inference.Float32, Shape: []int{inference.Dynamic, 1, 4}}},
		Outputs:      []graph.Value{{Name: "y", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{"w": check.Rand(1, -0.5, 0.5, 5, 4), "b": check.Rand(2, -0.5, 0.5, 4)},
		Nodes: []*graph.Node{
			{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"p"}},
			{Name: "bias", OpType: "Add", Inputs: []string{"p", "b"}, Outputs: []string{"pb"}},
			{Name: "res", OpType: "Add", Inputs: []string{"pb", "r"}, Outputs: []string{"s"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"s"}, Outputs: []string{"y"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// A fused residual that broadcasts other than as a run of dimensions is
// added by one broadcasting Add between the bias's epilogue launch and the
// Relu's, with the CPU's results.
func TestEpilogueResidualWithAGap(t *testing.T) {
	b, _ := newSim(t, 0)
	m := compile(t, b, gapNet(t))
	for i := range 2 {
		feeds := batchOf(gapNet(t), 2, uint64(i))
		feeds["r"] = check.Rand(uint64(i)+10, -1, 1, 2, 1, 4)
		before := runner.Launched()
		got, err := m.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		matchCPU(t, gapNet, feeds, got)
		if launched := launchedSince(before); i > 0 && (launched[kernels.EpilogueF32] != 2 || launched[kernels.BinaryF32] != 1) {
			t.Errorf("launches %v: want 2 of %s and 1 of %s", launched, kernels.EpilogueF32, kernels.BinaryF32)
		}
	}
}

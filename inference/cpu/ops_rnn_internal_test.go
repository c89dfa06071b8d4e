package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

func rnSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// One hidden unit, one input, X = [1, -1]: each step written out.
func TestRecurrentHandComputed(t *testing.T) {
	x := tensorOf(t, []int{2, 1, 1}, float32(1), -1)

	// RNN: h = tanh(2x + 0.5h + 0.1 + 0.2).
	out := runKernel(t, testNode("RNN", 22, nil, 2), x, tensorOf(t, []int{1, 1, 1}, float32(2)), tensorOf(t, []int{1, 1, 1}, float32(0.5)), tensorOf(t, []int{1, 2}, float32(0.1), 0.2))
	h1 := math.Tanh(2 + 0.3)
	h2 := math.Tanh(-2 + 0.5*h1 + 0.3)
	checkFloats(t, out[0], []int{2, 1, 1, 1}, float32(h1), float32(h2))
	checkFloats(t, out[1], []int{1, 1, 1}, float32(h2))

	// GRU, linear_before_reset: W = [z r h] = [1 2 3], R = [0.5 0.25 2],
	// B = [Wb | Rb] = [0.1 0.2 0.3 | 0.4 0.5 0.6], initial_h = 0.5.
	w := tensorOf(t, []int{1, 3, 1}, float32(1), 2, 3)
	rr := tensorOf(t, []int{1, 3, 1}, float32(0.5), 0.25, 2)
	b := tensorOf(t, []int{1, 6}, float32(0.1), 0.2, 0.3, 0.4, 0.5, 0.6)
	h0 := tensorOf(t, []int{1, 1, 1}, float32(0.5))
	gru := func(xv, h float64, lbr bool) float64 {
		z := rnSigmoid(xv + 0.5*h + 0.1 + 0.4)
		r := rnSigmoid(2*xv + 0.25*h + 0.2 + 0.5)
		var hh float64
		if lbr {
			hh = math.Tanh(3*xv + r*(2*h+0.6) + 0.3)
		} else {
			hh = math.Tanh(3*xv + 2*(r*h) + 0.6 + 0.3)
		}
		return (1-z)*hh + z*h
	}
	for _, lbr := range []bool{false, true} {
		attrs := map[string]graph.Attr{"linear_before_reset": attrInt(map[bool]int64{false: 0, true: 1}[lbr])}
		out = runKernel(t, testNode("GRU", 22, attrs, 2), x, w, rr, b, inference.Tensor{}, h0)
		g1 := gru(1, 0.5, lbr)
		g2 := gru(-1, g1, lbr)
		checkFloats(t, out[0], []int{2, 1, 1, 1}, float32(g1), float32(g2))
	}

	// LSTM with peepholes P = [i o f] = [0.3 0.2 0.1], W = [i o f c] =
	// [1 2 3 4], R = [0.1 0.2 0.3 0.4], no bias, initial_c = 0.5; then
	// input_forget (f = 1 - i).
	w4 := tensorOf(t, []int{1, 4, 1}, float32(1), 2, 3, 4)
	r4 := tensorOf(t, []int{1, 4, 1}, float32(0.1), 0.2, 0.3, 0.4)
	p := tensorOf(t, []int{1, 3}, float32(0.3), 0.2, 0.1)
	c0 := tensorOf(t, []int{1, 1, 1}, float32(0.5))
	lstm := func(xv, h, c float64, coupled bool) (float64, float64) {
		i := rnSigmoid(xv + 0.1*h + 0.3*c)
		f := rnSigmoid(3*xv + 0.3*h + 0.1*c)
		if coupled {
			f = 1 - i
		}
		g := math.Tanh(4*xv + 0.4*h)
		c = f*c + i*g
		o := rnSigmoid(2*xv + 0.2*h + 0.2*c)
		return o * math.Tanh(c), c
	}
	for _, coupled := range []bool{false, true} {
		attrs := map[string]graph.Attr{"input_forget": attrInt(map[bool]int64{false: 0, true: 1}[coupled])}
		none := inference.Tensor{}
		out = runKernel(t, testNode("LSTM", 22, attrs, 3), x, w4, r4, none, none, none, c0, p)
		l1, c1 := lstm(1, 0, 0.5, coupled)
		l2, c2 := lstm(-1, l1, c1, coupled)
		checkFloats(t, out[0], []int{2, 1, 1, 1}, float32(l1), float32(l2))
		checkFloats(t, out[2], []int{1, 1, 1}, float32(c2))
	}
}

// rnSlice returns rows [from, to) of the leading axis of x.
func rnSlice(t *testing.T, x inference.Tensor, from, to int) inference.Tensor {
	t.Helper()
	s := x.Shape()
	per := x.Len() / s[0]
	return tensorOf(t, append([]int{to - from}, s[1:]...), floatsOf(t, x)[from*per:to*per]...)
}

// rnFlip reverses the leading axis of x.
func rnFlip(t *testing.T, x inference.Tensor) inference.Tensor {
	t.Helper()
	s := x.Shape()
	per := x.Len() / s[0]
	d := floatsOf(t, x)
	var out []float32
	for i := s[0] - 1; i >= 0; i-- {
		out = append(out, d[i*per:(i+1)*per]...)
	}
	return tensorOf(t, s, out...)
}

// The driver: reverse runs forward over the flipped sequence,
// bidirectional stacks the two, sequence_lens truncates each batch row and
// layout 1 transposes — checked for each cell against single forward runs.
func TestRecurrentDirectionsLengthsLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const seq, batch, input, hidden = 4, 2, 3, 2
	none := inference.Tensor{}
	for _, cell := range []struct {
		op    string
		gates int
		outs  int
	}{{"RNN", 1, 2}, {"GRU", 3, 2}, {"LSTM", 4, 3}} {
		t.Run(cell.op, func(t *testing.T) {
			x := randTensor(t, r, seq, batch, input)
			w := randTensor(t, r, 2, cell.gates*hidden, input)
			rr := randTensor(t, r, 2, cell.gates*hidden, hidden)
			b := randTensor(t, r, 2, 2*cell.gates*hidden)
			h0 := randTensor(t, r, 2, batch, hidden)
			c0 := randTensor(t, r, 2, batch, hidden)
			p := randTensor(t, r, 2, 3*hidden)
			dir := func(d int) []inference.Tensor {
				in := []inference.Tensor{none, rnSlice(t, w, d, d+1), rnSlice(t, rr, d, d+1), rnSlice(t, b, d, d+1), none, rnSlice(t, h0, d, d+1)}
				if cell.op == "LSTM" {
					in = append(in, rnSlice(t, c0, d, d+1), rnSlice(t, p, d, d+1))
				}
				return in
			}
			run := func(attrs map[string]graph.Attr, in []inference.Tensor) []inference.Tensor {
				return runKernel(t, testNode(cell.op, 22, attrs, cell.outs), in...)
			}
			withX := func(in []inference.Tensor, x inference.Tensor) []inference.Tensor {
				in = slices.Clone(in)
				in[0] = x
				return in
			}
			fwd := run(nil, withX(dir(0), x))
			rev := run(map[string]graph.Attr{"direction": attrString("reverse")}, withX(dir(1), x))
			flipped := run(nil, withX(dir(1), rnFlip(t, x)))
			checkFloats(t, rev[0], []int{seq, 1, batch, hidden}, floatsOf(t, rnFlip(t, flipped[0]))...)
			checkFloats(t, rev[1], []int{1, batch, hidden}, floatsOf(t, flipped[1])...)

			bi := []inference.Tensor{x, w, rr, b, none, h0}
			if cell.op == "LSTM" {
				bi = append(bi, c0, p)
			}
			both := run(map[string]graph.Attr{"direction": attrString("bidirectional")}, bi)
			var wantY []float32
			fy, ry := floatsOf(t, fwd[0]), floatsOf(t, rev[0])
			for s := range seq {
				wantY = append(wantY, fy[s*batch*hidden:(s+1)*batch*hidden]...)
				wantY = append(wantY, ry[s*batch*hidden:(s+1)*batch*hidden]...)
			}
			checkFloats(t, both[0], []int{seq, 2, batch, hidden}, wantY...)
			checkFloats(t, both[1], []int{2, batch, hidden}, append(floatsOf(t, fwd[1]), floatsOf(t, rev[1])...)...)

			// Layout 1: X [batch, seq, input], states [batch, dirs, hidden], Y
			// [batch, seq, dirs, hidden].
			tr := func(x inference.Tensor) inference.Tensor {
				s := x.Shape()
				inner := x.Len() / (s[0] * s[1])
				return tensorOf(t, append([]int{s[1], s[0]}, s[2:]...), rnSwap01(floatsOf(t, x), s[0], s[1], inner)...)
			}
			bi1 := slices.Clone(bi)
			bi1[0], bi1[5] = tr(x), tr(h0)
			if cell.op == "LSTM" {
				bi1[6] = tr(c0)
			}
			both1 := run(map[string]graph.Attr{"direction": attrString("bidirectional"), "layout": attrInt(1)}, bi1)
			y1 := tensorOf(t, []int{seq * 2, batch, hidden}, floatsOf(t, both[0])...)
			checkFloats(t, both1[0], []int{batch, seq, 2, hidden}, floatsOf(t, tr(y1))...)
			checkFloats(t, both1[1], []int{batch, 2, hidden}, floatsOf(t, tr(both[1]))...)

			// sequence_lens [2, 4]: row 0 is a two-step run of row 0 alone,
			// zero after; Y_h its last state. Checked in both directions.
			lens := tensorOf(t, []int{batch}, int32(2), 4)
			bl := slices.Clone(bi)
			bl[4] = lens
			short := run(map[string]graph.Attr{"direction": attrString("bidirectional")}, bl)
			row0 := func(x inference.Tensor, steps int) inference.Tensor {
				d := floatsOf(t, x)
				var out []float32
				for s := range steps {
					out = append(out, d[(s*batch)*input:(s*batch+1)*input]...)
				}
				return tensorOf(t, []int{steps, 1, input}, out...)
			}
			state0 := func(in []inference.Tensor) []inference.Tensor {
				in = slices.Clone(in)
				in[5] = tensorOf(t, []int{1, 1, hidden}, floatsOf(t, in[5])[:hidden]...)
				if cell.op == "LSTM" {
					in[6] = tensorOf(t, []int{1, 1, hidden}, floatsOf(t, in[6])[:hidden]...)
				}
				return in
			}
			f0 := run(nil, withX(state0(dir(0)), row0(x, 2)))
			r0 := run(map[string]graph.Attr{"direction": attrString("reverse")}, withX(state0(dir(1)), row0(x, 2)))
			sy := floatsOf(t, short[0])
			for s := range seq {
				for d, ref := range [][]float32{floatsOf(t, f0[0]), floatsOf(t, r0[0])} {
					got := sy[((s*2+d)*batch)*hidden:][:hidden]
					want := make([]float32, hidden)
					if s < 2 {
						want = ref[s*hidden : (s+1)*hidden]
					}
					checkFloats(t, tensorOf(t, []int{hidden}, got...), []int{hidden}, want...)
				}
			}
			sh := floatsOf(t, short[1])
			checkFloats(t, tensorOf(t, []int{hidden}, sh[:hidden]...), []int{hidden}, floatsOf(t, f0[1])...)
			checkFloats(t, tensorOf(t, []int{hidden}, sh[batch*hidden:batch*hidden+hidden]...), []int{hidden}, floatsOf(t, r0[1])...)
			// Row 1 runs the full length, as without sequence_lens.
			checkFloats(t, tensorOf(t, []int{hidden}, sh[hidden:2*hidden]...), []int{hidden}, floatsOf(t, both[1])[hidden:2*hidden]...)
		})
	}
}

func TestRecurrentActivationsAndErrors(t *testing.T) {
	x := tensorOf(t, []int{1, 1, 1}, float32(-2))
	w := tensorOf(t, []int{1, 1, 1}, float32(1))
	rr := tensorOf(t, []int{1, 1, 1}, float32(0))
	// LeakyRelu takes its alpha from activation_alpha; clip 1 bounds the
	// pre-activation first: -2 → -1 → -0.5.
	attrs := map[string]graph.Attr{
		"activations":      attrStrings("LeakyRelu"),
		"activation_alpha": attrFloats(0.5),
		"clip":             attrFloat(1),
	}
	out := runKernel(t, testNode("RNN", 22, attrs, 2), x, w, rr)
	checkFloats(t, out[1], []int{1, 1, 1}, -0.5)

	bad := map[string]graph.Attr{"activations": attrStrings("Gelu")}
	if _, err := kernels["RNN"](testNode("RNN", 22, bad, 1), []inference.Tensor{x, w, rr}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("Gelu activation: %v, want ErrUnsupportedOp", err)
	}
	// W for 2 gates' worth of hidden units does not fit an RNN.
	w2 := tensorOf(t, []int{1, 2, 1}, float32(1), 1)
	if _, err := kernels["RNN"](testNode("RNN", 22, nil, 1), []inference.Tensor{x, w2, rr}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("W [1 2 1] with R [1 1 1]: %v, want ErrShape", err)
	}
	lens := tensorOf(t, []int{1}, int32(2))
	if _, err := kernels["RNN"](testNode("RNN", 22, nil, 1), []inference.Tensor{x, w, rr, {}, lens}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("sequence_lens 2 for 1 step: %v, want ErrShape", err)
	}
}

// lstmGraph is a bidirectional LSTM over x [5, 3, 4] (hidden 6) with W, R
// and B initializers and the given attributes.
func lstmGraph(t *testing.T, attrs map[string]graph.Attr) *graph.Graph {
	t.Helper()
	return recurrentGraph(t, "LSTM", 6, 3, attrs)
}

// recurrentGraph is an op (LSTM or GRU) node over x [5, batch, 4] with
// hidden units, random constant W, R and B, and outputs y, h (and c);
// bidirectional unless attrs say otherwise.
func recurrentGraph(t *testing.T, op string, hidden, batch int, attrs map[string]graph.Attr) *graph.Graph {
	t.Helper()
	r := rand.New(rand.NewPCG(13, 14))
	attrs["hidden_size"] = attrInt(int64(hidden))
	dirs := 1
	if _, ok := attrs["direction"]; !ok {
		attrs["direction"] = attrString("bidirectional")
		dirs = 2
	}
	gh := map[string]int{"GRU": 3, "LSTM": 4}[op] * hidden
	outs := []string{"y", "h", "c"}
	if op == "GRU" {
		outs = outs[:2]
	}
	g := &graph.Graph{
		Name:   strings.ToLower(op),
		Opsets: map[string]int64{"": 14},
		Inputs: []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{5, batch, 4}}},
		Initializers: map[string]inference.Tensor{
			"w": tensorOf(t, []int{dirs, gh, 4}, nnRandom(r, dirs*gh*4)...),
			"r": tensorOf(t, []int{dirs, gh, hidden}, nnRandom(r, dirs*gh*hidden)...),
			"b": tensorOf(t, []int{dirs, 2 * gh}, nnRandom(r, dirs*2*gh)...),
		},
		Nodes: []*graph.Node{{Name: "rnn", OpType: op, Inputs: []string{"x", "w", "r", "b"}, Outputs: outs, Attrs: attrs}},
	}
	for _, o := range outs {
		g.Outputs = append(g.Outputs, graph.Value{Name: o})
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// The LSTM's float32 path (default activations, W and R packed at
// compile time, directions side by side on two cores) computes what the
// float64 path computes on one core: a clip that never binds keeps a node
// on that path.
// Tolerance 1e-5 absolute: states and outputs lie in (-1, 1), and the
// float32 activations are within 3 ulp.
func TestLSTMFastPath(t *testing.T) {
	compile := func(attrs map[string]graph.Attr) *Model {
		m, err := Backend{}.Compile(lstmGraph(t, attrs))
		if err != nil {
			t.Fatal(err)
		}
		return m.(*Model)
	}
	fast := compile(map[string]graph.Attr{})
	ref := compile(map[string]graph.Attr{"clip": attrFloat(1e30)})
	if p, ok := fast.prepared[fast.g.Nodes[0]].(rnPacked); !ok || len(p.w) != 2 || len(p.r) != 2 {
		t.Fatalf("prepared %#v, want W and R packed for both directions", fast.prepared[fast.g.Nodes[0]])
	}
	r := rand.New(rand.NewPCG(15, 16))
	feeds := map[string]inference.Tensor{"x": tensorOf(t, []int{5, 3, 4}, nnRandom(r, 60)...)}
	checkFastPath(t, "", fast, ref, feeds, "y", "h", "c")
}

// A one-direction LSTM on two cores splits each step among the workers by
// hidden units (rnStepSplit) once it has rnSplitCells cells: each computes
// its units' columns of every gate and their cells. It computes what the float64 path computes on one
// core, for hidden sizes of 2, 3 and 4 micro-tile columns (parts of
// unequal size) and one that is not whole tiles (not split), forward and
// reverse, with and without input_forget. Tolerance as TestLSTMFastPath's.
func TestLSTMStepSplit(t *testing.T) {
	nr := nnBestKernel.nr
	for _, hidden := range []int{2 * nr, 3 * nr, 4 * nr, 2*nr + 5} {
		for _, dir := range []string{"forward", "reverse"} {
			for _, forget := range []int64{0, 1} {
				name := fmt.Sprintf("hidden%d_%s_forget%d", hidden, dir, forget)
				batch := (rnSplitCells + hidden - 1) / hidden // the fewest rows split
				var s rnStepSplit
				s.plan(nnBestKernel, 2, nnPrepacked{}, nil, batch, hidden, false)
				if split := hidden%nr == 0; (s.parts == 2) != split {
					t.Fatalf("%s: step split in %d parts on 2 cores, want split %v", name, s.parts, split)
				}
				if s.plan(nnBestKernel, 2, nnPrepacked{}, nil, batch-1, hidden, false); s.parts > 1 {
					t.Fatalf("%s: a step of %d cells split in %d parts, below rnSplitCells", name, (batch-1)*hidden, s.parts)
				}
				compile := func(attrs map[string]graph.Attr) *Model {
					attrs["direction"] = attrString(dir)
					attrs["input_forget"] = attrInt(forget)
					m, err := Backend{}.Compile(recurrentGraph(t, "LSTM", hidden, batch, attrs))
					if err != nil {
						t.Fatal(err)
					}
					return m.(*Model)
				}
				fast := compile(map[string]graph.Attr{})
				ref := compile(map[string]graph.Attr{"clip": attrFloat(1e30)})
				r := rand.New(rand.NewPCG(19, uint64(hidden)))
				feeds := map[string]inference.Tensor{"x": tensorOf(t, []int{5, batch, 4}, nnRandom(r, 5*batch*4)...)}
				checkFastPath(t, name+", ", fast, ref, feeds, "y", "h", "c")
			}
		}
	}
}

// The GRU's float32 path (default activations, one product H·Rᵀ for all
// three gates with linear_before_reset, R and its h block packed at
// compile time) computes what the float64 path computes on one core, with
// and without linear_before_reset, for hidden sizes that are and are not
// whole micro-tiles. Tolerance as TestLSTMFastPath's.
func TestGRUFastPath(t *testing.T) {
	for _, hidden := range []int{6, 37, 64} {
		for _, lbr := range []int64{0, 1} {
			name := fmt.Sprintf("hidden%d_lbr%d", hidden, lbr)
			compile := func(attrs map[string]graph.Attr) *Model {
				attrs["linear_before_reset"] = attrInt(lbr)
				m, err := Backend{}.Compile(recurrentGraph(t, "GRU", hidden, 3, attrs))
				if err != nil {
					t.Fatal(err)
				}
				return m.(*Model)
			}
			fast := compile(map[string]graph.Attr{})
			ref := compile(map[string]graph.Attr{"clip": attrFloat(1e30)})
			p, ok := fast.prepared[fast.g.Nodes[0]].(rnPacked)
			if !ok || len(p.w) != 2 || len(p.r) != 2 || (len(p.rh) == 2) != (lbr == 0) {
				t.Fatalf("%s: prepared %#v, want W and R packed for both directions, and R's h block without linear_before_reset", name, fast.prepared[fast.g.Nodes[0]])
			}
			r := rand.New(rand.NewPCG(17, 18))
			feeds := map[string]inference.Tensor{"x": tensorOf(t, []int{5, 3, 4}, nnRandom(r, 60)...)}
			checkFastPath(t, name+", ", fast, ref, feeds, "y", "h")
		}
	}
}

// checkFastPath runs ref on one core and fast on one and two, on feeds,
// and fails at the first element of outputs outs more than 1e-5 apart.
func checkFastPath(t *testing.T, name string, fast, ref *Model, feeds map[string]inference.Tensor, outs ...string) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	want, err := ref.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		got, err := fast.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range outs {
			g, w := dataOf[float32](got[out]), dataOf[float32](want[out])
			for i := range w {
				if math.Abs(float64(g[i]-w[i])) > 1e-5 {
					t.Fatalf("%s%d cores: %s[%d] = %v, want %v", name, procs, out, i, g[i], w[i])
				}
			}
		}
	}
}

package check

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Cases of the recurrent operators (rnn.cu; lower_rnn.go): RNN, GRU and
// LSTM forward, reverse and bidirectional, in both layouts, with and
// without biases and initial states, sequence_lens with shorter (and
// empty) rows as int32 and int64, LSTM peepholes, clip and input_forget,
// GRU's linear_before_reset, activations other than the defaults (with
// their alpha and beta, different per direction), batch 1 and more, and
// the state outputs left out.
func init() {
	type attrs = map[string]graph.Attr
	// rnn describes one node: its geometry and which optional inputs it
	// has.
	type rnn struct {
		seq, batch, input, hidden int
		bias, h0, c0, peep        bool
		lens                      inference.Tensor // absent when zero
		outputs                   int
		a                         attrs
	}
	gates := map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}
	mk := func(op, name string, seed uint64, r rnn) Case {
		dirs, layout := 1, int64(0)
		if r.a["direction"].String == "bidirectional" {
			dirs = 2
		}
		if a, ok := r.a["layout"]; ok {
			layout = a.Int
		}
		x := []int{r.seq, r.batch, r.input}
		state := []int{dirs, r.batch, r.hidden}
		if layout == 1 {
			x = []int{r.batch, r.seq, r.input}
			state = []int{r.batch, dirs, r.hidden}
		}
		g := gates[op] * r.hidden
		in := []Input{
			{T: Rand(seed, -1, 1, x...)},
			{T: Rand(seed+1, -0.6, 0.6, dirs, g, r.input), Const: true},
			{T: Rand(seed+2, -0.6, 0.6, dirs, g, r.hidden), Const: true},
			{T: Rand(seed+3, -0.4, 0.4, dirs, 2*g), Const: true, Absent: !r.bias},
			{T: r.lens, Absent: r.lens.DType() == 0},
			{T: Rand(seed+4, -0.8, 0.8, state...), Absent: !r.h0},
		}
		if op == "LSTM" {
			in = append(in, Input{T: Rand(seed+5, -0.8, 0.8, state...), Absent: !r.c0},
				Input{T: Rand(seed+6, -0.5, 0.5, dirs, 3*r.hidden), Const: true, Absent: !r.peep})
		}
		for len(in) > 0 && in[len(in)-1].Absent {
			in = in[:len(in)-1]
		}
		if r.a == nil {
			r.a = attrs{}
		}
		r.a["hidden_size"] = AInt(int64(r.hidden))
		return Case{Name: "rnn/" + op + "/" + name, Op: op, Attrs: r.a, Inputs: in, Outputs: r.outputs}
	}
	i32 := func(v ...int32) inference.Tensor {
		t, err := inference.New([]int{len(v)}, v)
		if err != nil {
			panic(err)
		}
		return t
	}
	bi, rev := AStr("bidirectional"), AStr("reverse")
	names := func(v ...string) graph.Attr { return graph.Attr{Type: graph.AttrStrings, Strings: v} }

	Add(
		mk("LSTM", "forward", 100, rnn{seq: 5, batch: 3, input: 4, hidden: 6, bias: true, outputs: 3}),
		mk("LSTM", "batch1-y-only", 110, rnn{seq: 4, batch: 1, input: 3, hidden: 5, outputs: 1}),
		mk("LSTM", "reverse-initial-states", 120, rnn{seq: 6, batch: 2, input: 5, hidden: 4, bias: true, h0: true, c0: true,
			outputs: 3, a: attrs{"direction": rev}}),
		mk("LSTM", "bidirectional-lens-int32", 130, rnn{seq: 5, batch: 4, input: 3, hidden: 7, bias: true, h0: true, c0: true,
			lens: i32(5, 2, 0, 4), outputs: 3, a: attrs{"direction": bi}}),
		mk("LSTM", "bidirectional-layout1-lens", 140, rnn{seq: 4, batch: 3, input: 6, hidden: 5, bias: true, h0: true,
			lens: Ints([]int{3}, 1, 4, 3), outputs: 3, a: attrs{"direction": bi, "layout": AInt(1)}}),
		mk("LSTM", "layout1-forward", 145, rnn{seq: 3, batch: 2, input: 4, hidden: 3, c0: true, outputs: 3,
			a: attrs{"layout": AInt(1)}}),
		mk("LSTM", "peepholes-clip-input-forget", 150, rnn{seq: 5, batch: 2, input: 4, hidden: 6, bias: true, h0: true, c0: true,
			peep: true, outputs: 3, a: attrs{"clip": AFloat(0.7), "input_forget": AInt(1)}}),
		mk("LSTM", "peepholes-reverse", 155, rnn{seq: 4, batch: 3, input: 2, hidden: 3, bias: true, peep: true,
			lens: Ints([]int{3}, 2, 4, 1), outputs: 3, a: attrs{"direction": rev}}),
		mk("LSTM", "activations", 160, rnn{seq: 4, batch: 2, input: 3, hidden: 5, bias: true, h0: true, c0: true, outputs: 3,
			a: attrs{"activations": names("HardSigmoid", "LeakyRelu", "Softsign"),
				"activation_alpha": AFloats(0.3, 0.2), "activation_beta": AFloats(0.4)}}),
		mk("LSTM", "activations-per-direction", 165, rnn{seq: 3, batch: 2, input: 3, hidden: 4, bias: true, outputs: 3,
			a: attrs{"direction": bi, "activations": names("Sigmoid", "Tanh", "Tanh", "HardSigmoid", "ScaledTanh", "Elu"),
				"activation_alpha": AFloats(0.25, 1.5, 0.8), "activation_beta": AFloats(0.45, 0.7)}}),
		mk("LSTM", "y-and-h", 170, rnn{seq: 3, batch: 2, input: 4, hidden: 4, bias: true, outputs: 2}),

		mk("GRU", "forward", 200, rnn{seq: 5, batch: 3, input: 4, hidden: 6, bias: true, outputs: 2}),
		mk("GRU", "batch1-initial-h", 210, rnn{seq: 4, batch: 1, input: 3, hidden: 5, bias: true, h0: true, outputs: 2}),
		mk("GRU", "linear-before-reset-bidirectional", 220, rnn{seq: 5, batch: 3, input: 3, hidden: 4, bias: true, h0: true,
			lens: i32(5, 3, 1), outputs: 2, a: attrs{"direction": bi, "linear_before_reset": AInt(1)}}),
		mk("GRU", "linear-before-reset-no-bias", 225, rnn{seq: 3, batch: 2, input: 3, hidden: 4, outputs: 2,
			a: attrs{"linear_before_reset": AInt(1)}}),
		mk("GRU", "reverse-layout1", 230, rnn{seq: 4, batch: 2, input: 5, hidden: 3, outputs: 2,
			a: attrs{"direction": rev, "layout": AInt(1)}}),
		mk("GRU", "bidirectional-lens", 235, rnn{seq: 6, batch: 3, input: 2, hidden: 5, bias: true, h0: true,
			lens: Ints([]int{3}, 6, 0, 2), outputs: 2, a: attrs{"direction": bi, "layout": AInt(1)}}),
		mk("GRU", "activations-clip", 240, rnn{seq: 4, batch: 2, input: 3, hidden: 4, bias: true, h0: true, outputs: 1,
			a: attrs{"activations": names("HardSigmoid", "Softplus"), "clip": AFloat(0.5)}}),

		mk("RNN", "forward", 300, rnn{seq: 5, batch: 3, input: 4, hidden: 6, bias: true, outputs: 2}),
		mk("RNN", "batch1-y-only", 305, rnn{seq: 3, batch: 1, input: 2, hidden: 3, outputs: 1}),
		mk("RNN", "bidirectional-layout1-lens", 310, rnn{seq: 4, batch: 3, input: 3, hidden: 5, bias: true, h0: true,
			lens: i32(2, 4, 3), outputs: 2, a: attrs{"direction": bi, "layout": AInt(1)}}),
		mk("RNN", "reverse-initial-h", 315, rnn{seq: 5, batch: 2, input: 3, hidden: 4, h0: true, outputs: 2,
			a: attrs{"direction": rev}}),
		mk("RNN", "activations-per-direction-clip", 320, rnn{seq: 4, batch: 2, input: 3, hidden: 4, bias: true, outputs: 2,
			a: attrs{"direction": bi, "activations": names("Relu", "Affine"), "activation_alpha": AFloats(0.5),
				"activation_beta": AFloats(-0.1), "clip": AFloat(0.9)}}),
		mk("RNN", "thresholded-relu", 325, rnn{seq: 3, batch: 2, input: 3, hidden: 4, bias: true, outputs: 2,
			a: attrs{"activations": names("ThresholdedRelu"), "activation_alpha": AFloats(0.1)}}),
	)
}

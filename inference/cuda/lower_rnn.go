package cuda

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the recurrent operators RNN, GRU and LSTM (rnn.cu), whose
// options are opsem.Recurrent's. Per node, one GEMM projects the input of
// every time step (X·Wᵀ for all directions at once); then each step runs
// one strided batched GEMM of the previous states by Rᵀ (the directions
// are its batch) and one rnn_cell_f32 launch that adds the biases, applies
// the activations, updates the states and writes the step's Y. A GRU
// without linear_before_reset needs r before its h gate's product: its
// step is a GEMM of H by [Rz; Rr]ᵀ, rnn_gru_reset_f32 (r⊙H), a GEMM of that
// by Rhᵀ, then the cell. With no initial_h the first step skips its GEMMs
// (the state is zero). A bidirectional node whose directions have
// different activations launches its cell kernels once per direction.
//
// The states live in Y_h and Y_c where the node names them (else in
// scratch), in the outputs' layout, so the last step leaves the outputs in
// place. sequence_lens known on the host is checked at plan time (a value
// outside [0, seq] sends the node to the host, where the CPU kernel
// rejects it); computed on the device (fed with the batch), the first
// step's cell kernel checks it and reports a value outside [0, seq] on the
// error channel (errword.go), and the run fails as on the CPU. The launches grow with the sequence: 2 per step (4 for a GRU
// without linear_before_reset), which a CUDA graph of the plan would
// replay without the launch costs.

func init() {
	registerLowering("RNN", func(l *lowering) error { return lowerRecurrent(l, kernels.CELL_RNN) })
	registerLowering("GRU", func(l *lowering) error { return lowerRecurrent(l, kernels.CELL_GRU) })
	registerLowering("LSTM", func(l *lowering) error { return lowerRecurrent(l, kernels.CELL_LSTM) })
}

// recurrentGates is each cell's gate count, by kernels.CELL_* code.
var recurrentGates = [...]int{kernels.CELL_RNN: 1, kernels.CELL_GRU: 3, kernels.CELL_LSTM: 4}

// recurrentActivations are rnn.cu's codes of opsem.RecurrentActivation's
// names.
var recurrentActivations = map[string]int{
	"tanh": kernels.RNN_TANH, "sigmoid": kernels.RNN_SIGMOID, "relu": kernels.RNN_RELU,
	"softsign": kernels.RNN_SOFTSIGN, "softplus": kernels.RNN_SOFTPLUS, "affine": kernels.RNN_AFFINE,
	"leakyrelu": kernels.RNN_LEAKYRELU, "thresholdedrelu": kernels.RNN_THRESHOLDEDRELU,
	"scaledtanh": kernels.RNN_SCALEDTANH, "hardsigmoid": kernels.RNN_HARDSIGMOID, "elu": kernels.RNN_ELU,
}

func lowerRecurrent(l *lowering, cell int) error {
	o, err := opsem.Recurrent(l.Node)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	x, w, r := l.input(0), l.input(1), l.input(2)
	bias, lens, h0, c0, peep := l.input(3), l.input(4), l.input(5), l.input(6), l.input(7)
	if cell != kernels.CELL_LSTM {
		c0, peep = operand{}, operand{}
	}
	for i, in := range []operand{x, w, r, bias, {}, h0, c0, peep} {
		if in.Present() && in.DType != inference.Float32 {
			return l.NoKernel("input %d is %v", i, in.DType)
		}
	}
	if x.Rank() != 3 || r.Rank() != 3 {
		return l.NoKernel("X %v, R %v: want rank 3", x.Shape, r.Shape)
	}
	seq, batch, input := x.Shape[0], x.Shape[1], x.Shape[2]
	if o.Layout == 1 {
		seq, batch = batch, seq
	}
	dirs, hidden := o.Dirs, r.Shape[2]
	gh := recurrentGates[cell] * hidden
	state := []int{dirs, batch, hidden}
	yShape := []int{seq, dirs, batch, hidden}
	// Strides of a state element (d, b, j) and of a step's Y; the rows of
	// the input projection, in X's order.
	sd, sr := int64(batch*hidden), int64(hidden)
	yt, yd, yb := int64(dirs*batch*hidden), int64(batch*hidden), int64(hidden)
	xt, xb := int64(batch), int64(1)
	if o.Layout == 1 {
		state = []int{batch, dirs, hidden}
		yShape = []int{batch, seq, dirs, hidden}
		sd, sr = int64(hidden), int64(dirs*hidden)
		yt, yd, yb = int64(dirs*hidden), int64(hidden), int64(seq*dirs*hidden)
		xt, xb = 1, int64(seq)
	}
	for _, v := range []struct {
		name  string
		o     operand
		shape []int
	}{
		{"W", w, []int{dirs, gh, input}}, {"R", r, []int{dirs, gh, hidden}}, {"B", bias, []int{dirs, 2 * gh}},
		{"initial_h", h0, state}, {"initial_c", c0, state}, {"P", peep, []int{dirs, 3 * hidden}},
	} {
		if v.o.Present() && !slices.Equal(v.o.Shape, v.shape) {
			return l.NoKernel("%s is %v, want %v", v.name, v.o.Shape, v.shape)
		}
	}
	if hs := l.Int("hidden_size", int64(hidden)); hs != int64(hidden) {
		return l.NoKernel("hidden_size %d, R %v", hs, r.Shape)
	}
	outShapes := [][]int{yShape, state, state}
	for i := range min(len(l.Out), len(outShapes)) {
		if l.Out[i].Present() {
			if err := checkOut(l, i, inference.Float32, outShapes[i]); err != nil {
				return err
			}
		}
	}
	if batch == 0 || hidden == 0 {
		return nil // every output is empty
	}
	if seq == 0 || input == 0 {
		return l.NoKernel("X %v: empty sequence or input", x.Shape)
	}
	lensType := int64(0)
	lensCheck := noErrorWord // the cell kernel's error-channel parameters
	if lens.Present() {
		code, ok := typeCode(lens.DType)
		if !ok || (code != kernels.T_I32 && code != kernels.T_I64) || lens.Len() != int64(batch) {
			return l.NoKernel("sequence_lens %v%v", lens.DType, lens.Shape)
		}
		lensType = int64(code)
		if v, ok := lens.Host(); ok {
			lv, err := opsem.Int64s(v)
			if err != nil || slices.ContainsFunc(lv, func(n int64) bool { return n < 0 || n > int64(seq) }) {
				return l.NoKernel("sequence_lens %v outside [0, %d]", v, seq)
			}
		} else {
			lensCheck = l.errorWord(fmt.Sprintf("input 4 (sequence_lens) %q", lens.Name))
		}
	}
	// Activations by direction: a group of directions shares one launch.
	type group struct {
		d0, nd int
		args   []kernelArg // f, g and h: code, alpha, beta
	}
	var groups []group
	for d, acts := range o.Activations {
		var args []kernelArg
		for k := range 3 {
			a := opsem.RecurrentActivation{Name: "tanh"}
			if k < len(acts) {
				a = acts[k]
			}
			code, ok := recurrentActivations[a.Name]
			if !ok {
				return l.NoKernel("activation %q", a.Name)
			}
			args = append(args, intArg(code), floatArg(a.Alpha), floatArg(a.Beta))
		}
		if n := len(groups); n > 0 && slices.Equal(groups[n-1].args, args) {
			groups[n-1].nd++
			continue
		}
		groups = append(groups, group{d0: d, nd: 1, args: args})
	}
	rev := int64(b2i(o.Reverse))
	if dirs == 2 {
		rev = 2
	}

	rows := seq * batch
	xw := l.Scratch(inference.Float32, []int{rows, dirs * gh})
	gates := l.Scratch(inference.Float32, []int{dirs, batch, gh})
	var hState, cState operand
	if len(l.Out) > 1 && l.Out[1].Present() {
		hState = l.Out[1]
	} else {
		hState = l.Scratch(inference.Float32, state)
	}
	if cell == kernels.CELL_LSTM {
		if len(l.Out) > 2 && l.Out[2].Present() {
			cState = l.Out[2]
		} else {
			cState = l.Scratch(inference.Float32, state)
		}
	}
	resetFirst := cell == kernels.CELL_GRU && !o.LinearBeforeReset
	var tmp operand
	if resetFirst {
		tmp = l.Scratch(inference.Float32, []int{dirs, batch, hidden})
	}
	y := kernelArg{}
	if len(l.Out) > 0 && l.Out[0].Present() {
		y = ptrArg(l.Out[0])
	}

	// X·Wᵀ for every step and direction: [rows, dirs·gh], column-major
	// (W·Xᵀ).
	if err := l.Gemm(gemmOp{Gemm: Gemm{TransA: true, M: dirs * gh, N: rows, K: input, Alpha: 1,
		LDA: input, LDB: input, LDC: dirs * gh}, OpA: w, OpB: x, OpC: xw}); err != nil {
		return err
	}
	// The recurrent product of n gate rows of R (from row first on) by
	// each direction's state h: [batch, n] at column off of gates.
	recurrent := func(h operand, hsd, hsr int64, first, n int, off int64) error {
		return l.Gemm(gemmOp{Gemm: Gemm{TransA: true, M: n, N: batch, K: hidden, Alpha: 1,
			LDA: hidden, StrideA: int64(gh * hidden), LDB: int(hsr), StrideB: hsd, LDC: gh, StrideC: int64(batch * gh), Batch: dirs},
			OpA: r, AOff: int64(first * hidden), OpB: h, OpC: gates, COff: off})
	}
	for s := range seq {
		hPrev, cPrev := hState, cState
		if s == 0 {
			hPrev, cPrev = h0, c0
		}
		if hPrev.Present() {
			n := gh
			if resetFirst {
				n = 2 * hidden
			}
			if err := recurrent(hPrev, sd, sr, 0, n, 0); err != nil {
				return err
			}
			if resetFirst {
				for _, g := range groups {
					if err := l.Launch(kernels.RnnGruResetF32, int64(g.nd*batch*hidden), intArg(s), intArg(seq), intArg(g.d0), intArg(g.nd),
						intArg(dirs), intArg(rev), intArg(batch), intArg(hidden), ptrArg(xw), intArg(xt), intArg(xb), ptrArg(gates),
						optionalArg(bias), ptrArg(hPrev), intArg(sd), intArg(sr), ptrArg(tmp), floatArg(o.Clip), g.args[0], g.args[1], g.args[2]); err != nil {
						return err
					}
				}
				if err := recurrent(tmp, int64(batch*hidden), int64(hidden), 2*hidden, hidden, int64(2*hidden)); err != nil {
					return err
				}
			}
		}
		for _, g := range groups {
			args := []kernelArg{intArg(cell), intArg(s), intArg(seq), intArg(g.d0), intArg(g.nd), intArg(dirs), intArg(rev),
				intArg(batch), intArg(hidden), ptrArg(xw), intArg(xt), intArg(xb), ptrArg(gates), intArg(b2i(hPrev.Present())),
				optionalArg(bias), optionalArg(peep), optionalArg(hPrev), ptrArg(hState), optionalArg(cPrev), optionalArg(cState),
				intArg(sd), intArg(sr), y, intArg(yt), intArg(yd), intArg(yb), optionalArg(lens), intArg(lensType),
				lensCheck[0], lensCheck[1], floatArg(o.Clip), intArg(b2i(o.LinearBeforeReset)), intArg(b2i(o.InputForget))}
			if err := l.Launch(kernels.RnnCellF32, int64(g.nd*batch*hidden), append(args, g.args...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

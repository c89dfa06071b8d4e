package cpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Recurrent operators: the cells RNN, GRU and LSTM, on float32 tensors.
// Matrix products go through nnSgemm; activations are computed in float64,
// but for the LSTM with its default activations (rnLSTMStep, float32).

func init() {
	register("RNN", rnRecurrent(rnRNN))
	register("GRU", rnRecurrent(rnGRU))
	register("LSTM", rnRecurrent(rnLSTM))
}

// rnCell names a recurrent cell.
type rnCell int

const (
	rnRNN rnCell = iota
	rnGRU
	rnLSTM
)

// gates is the number of gate blocks in W and R: RNN 1, GRU 3 (z, r, h),
// LSTM 4 (i, o, f, c).
func (c rnCell) gates() int { return [...]int{1, 3, 4}[c] }

// activations are the default activation functions of one direction: RNN
// f; GRU f, g; LSTM f, g, h.
func (c rnCell) activations() []string {
	return [...][]string{{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}}[c]
}

// rnActivation is an activation function of a recurrent cell.
type rnActivation func(x float64) float64

// rnActivationDefaults holds the alpha and beta an activation takes when
// activation_alpha/activation_beta run out, as onnxruntime does (0 for
// the others that take them).
var rnActivationDefaults = map[string][2]float64{
	"leakyrelu":   {0.01, 0},
	"hardsigmoid": {0.2, 0.5},
	"elu":         {1, 0},
}

// rnActivations resolves the activations attribute: names
// (case-insensitive) from the RNN operator's list, each consuming the next
// activation_alpha and activation_beta values it takes. It returns
// per-direction lists; a list for one direction serves both.
func rnActivations(n opsem.Node, cell rnCell, dirs int) ([][]rnActivation, error) {
	per := len(cell.activations())
	names := cell.activations()
	if dirs == 2 {
		names = append(names, names...)
	}
	if a, ok := n.Attrs["activations"]; ok && len(a.Strings) > 0 {
		names = a.Strings
		if len(names) == per && dirs == 2 {
			names = append(names, names...)
		}
		if len(names) != per*dirs {
			return nil, fmt.Errorf("activations %v, want %d names: %w", a.Strings, per*dirs, inference.ErrBadModel)
		}
	}
	alphas, betas := n.Floats("activation_alpha", nil), n.Floats("activation_beta", nil)
	next := func(list *[]float32, def float64) float64 {
		if len(*list) == 0 {
			return def
		}
		v := (*list)[0]
		*list = (*list)[1:]
		return float64(v)
	}
	out := make([][]rnActivation, dirs)
	for i, name := range names {
		lower := strings.ToLower(name)
		def := rnActivationDefaults[lower]
		var f rnActivation
		switch lower {
		case "tanh":
			f = math.Tanh
		case "sigmoid":
			f = sigmoid
		case "relu":
			f = func(x float64) float64 { return max(x, 0) }
		case "softsign":
			f = func(x float64) float64 { return x / (1 + math.Abs(x)) }
		case "softplus":
			f = softplus
		case "affine":
			a, b := next(&alphas, def[0]), next(&betas, def[1])
			f = func(x float64) float64 { return a*x + b }
		case "leakyrelu":
			a := next(&alphas, def[0])
			f = func(x float64) float64 {
				if x < 0 {
					return a * x
				}
				return x
			}
		case "thresholdedrelu":
			a := next(&alphas, def[0])
			f = func(x float64) float64 {
				if x > a {
					return x
				}
				return 0
			}
		case "scaledtanh":
			a, b := next(&alphas, def[0]), next(&betas, def[1])
			f = func(x float64) float64 { return a * math.Tanh(b*x) }
		case "hardsigmoid":
			a, b := next(&alphas, def[0]), next(&betas, def[1])
			f = func(x float64) float64 { return max(0, min(1, a*x+b)) }
		case "elu":
			a := next(&alphas, def[0])
			f = func(x float64) float64 {
				if x < 0 {
					return a * (math.Exp(x) - 1)
				}
				return x
			}
		default:
			return nil, n.Unsupported("activation %q", name)
		}
		out[i/per] = append(out[i/per], f)
	}
	return out, nil
}

// rnRecurrent returns the kernel of RNN, GRU or LSTM (opsets 1 to 22).
// With W [dirs, gates·hidden, input], R [dirs, gates·hidden, hidden] and
// B [dirs, 2·gates·hidden] = [Wb, Rb], each step t computes, per direction
// and batch row, from X_t and the previous H (and C):
//
//	RNN:  H = f(X·Wᵀ + H·Rᵀ + Wb + Rb)
//	GRU:  z = f(X·Wzᵀ + H·Rzᵀ + Wbz + Rbz), r likewise,
//	      h = g(X·Whᵀ + (r⊙H)·Rhᵀ + Rbh + Wbh), or with linear_before_reset
//	      h = g(X·Whᵀ + r⊙(H·Rhᵀ + Rbh) + Wbh); H = (1-z)⊙h + z⊙H
//	LSTM: i = f(X·Wiᵀ + H·Riᵀ + Pi⊙C + Wbi + Rbi), f likewise with Pf (or
//	      1 - i with input_forget), c = g(X·Wcᵀ + H·Rcᵀ + Wbc + Rbc),
//	      C = f⊙C + i⊙c, o = f(X·Woᵀ + H·Roᵀ + Po⊙C + Wbo + Rbo), H = o⊙h(C)
//
// clip > 0 bounds every gate's pre-activation to [-clip, clip]. The reverse
// direction runs from the last step to the first. A batch row b with
// sequence_lens[b] = L runs steps 0…L-1 only: Y is zero past them and Y_h
// (Y_c) is the state after them. Y is [seq, dirs, batch, hidden] and Y_h,
// Y_c [dirs, batch, hidden]; layout 1 puts batch first in X, initial_h,
// initial_c and every output.
func rnRecurrent(cell rnCell) kernel {
	return func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		return rnRunRecurrent(n, in, cell)
	}
}

func rnRunRecurrent(n opsem.Node, in []inference.Tensor, cell rnCell) ([]inference.Tensor, error) {
	x, xd, err := requiredFloatArg(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	w, wd, err := requiredFloatArg(n, in, 1, "W")
	if err != nil {
		return nil, err
	}
	r, rd, err := requiredFloatArg(n, in, 2, "R")
	if err != nil {
		return nil, err
	}
	_, bd, err := floatArg(n, in, 3, "B")
	if err != nil {
		return nil, err
	}
	_, h0d, err := floatArg(n, in, 5, "initial_h")
	if err != nil {
		return nil, err
	}
	var c0d, pd []float32
	if cell == rnLSTM {
		if _, c0d, err = floatArg(n, in, 6, "initial_c"); err != nil {
			return nil, err
		}
		if _, pd, err = floatArg(n, in, 7, "P"); err != nil {
			return nil, err
		}
	}

	dirs := 1
	switch d := n.Str("direction", "forward"); d {
	case "forward", "reverse":
	case "bidirectional":
		dirs = 2
	default:
		return nil, fmt.Errorf("direction %q, want forward, reverse or bidirectional: %w", d, inference.ErrBadModel)
	}
	reverse := n.Str("direction", "forward") == "reverse"
	layout := n.Int("layout", 0)
	if layout != 0 && layout != 1 {
		return nil, n.Unsupported("layout %d", layout)
	}
	if x.Rank() != 3 {
		return nil, fmt.Errorf("input 0 (X) is %v, want rank 3: %w", x, inference.ErrShape)
	}
	xs := x.Shape()
	seq, batch, inSize := xs[0], xs[1], xs[2]
	if layout == 1 {
		seq, batch = xs[1], xs[0]
	}
	if r.Rank() != 3 {
		return nil, fmt.Errorf("input 2 (R) is %v, want rank 3: %w", r, inference.ErrShape)
	}
	hidden := r.Shape()[2]
	if hs := n.Int("hidden_size", int64(hidden)); hs != int64(hidden) {
		return nil, fmt.Errorf("hidden_size %d, but R is %v: %w", hs, r, inference.ErrShape)
	}
	g := cell.gates()
	if err := wantShape(w, 1, "W", dirs, g*hidden, inSize); err != nil {
		return nil, err
	}
	if err := wantShape(r, 2, "R", dirs, g*hidden, hidden); err != nil {
		return nil, err
	}
	if bd != nil {
		if err := wantShape(arg(in, 3), 3, "B", dirs, 2*g*hidden); err != nil {
			return nil, err
		}
	}
	stateShape := []int{dirs, batch, hidden}
	if layout == 1 {
		stateShape = []int{batch, dirs, hidden}
	}
	if h0d != nil {
		if err := wantShape(arg(in, 5), 5, "initial_h", stateShape...); err != nil {
			return nil, err
		}
	}
	if c0d != nil {
		if err := wantShape(arg(in, 6), 6, "initial_c", stateShape...); err != nil {
			return nil, err
		}
	}
	if pd != nil {
		if err := wantShape(arg(in, 7), 7, "P", dirs, 3*hidden); err != nil {
			return nil, err
		}
	}
	lens, err := limit.Make[int](n.Run, batch)
	if err != nil {
		return nil, err
	}
	for b := range lens {
		lens[b] = seq
	}
	if t := arg(in, 4); present(t) {
		v, err := opsem.Int64s(t)
		if err != nil {
			return nil, fmt.Errorf("input 4 (sequence_lens): %w", err)
		}
		if len(v) != batch {
			return nil, fmt.Errorf("input 4 (sequence_lens) is %v, want %d values: %w", t, batch, inference.ErrShape)
		}
		for b, l := range v {
			if l < 0 || l > int64(seq) {
				return nil, fmt.Errorf("input 4 (sequence_lens) holds %d, outside [0, %d]: %w", l, seq, inference.ErrShape)
			}
			lens[b] = int(l)
		}
	}
	acts, err := rnActivations(n, cell, dirs)
	if err != nil {
		return nil, err
	}
	clip := float64(n.Float("clip", 0))
	linearBeforeReset := n.Int("linear_before_reset", 0) != 0
	inputForget := n.Int("input_forget", 0) != 0

	// X as [seq·batch, input].
	if layout == 1 {
		xd = rnSwap01(xd, batch, seq, inSize)
	}
	// The states as [dirs, batch, hidden]: two of them.
	if _, err := limit.Claim[float32](n.Run, 2, dirs, batch, hidden); err != nil {
		return nil, err
	}
	state := func(d []float32) []float32 {
		if d == nil {
			return make([]float32, dirs*batch*hidden)
		}
		if layout == 1 {
			return rnSwap01(d, batch, dirs, hidden)
		}
		return append([]float32(nil), d...)
	}
	hState, cState := state(h0d), state(c0d)

	y, err := limit.Make[float32](n.Run, seq, dirs, batch, hidden)
	if err != nil {
		return nil, err
	}
	gh := g * hidden
	bh := batch * hidden
	// Without a state (batch or hidden is 0) the outputs are empty and no
	// direction runs: its loops would only count the steps.
	running := dirs
	if bh == 0 {
		running = 0
	}
	// The two directions of a bidirectional layer are independent: with
	// two cores they run side by side, each with buffers of its own and its
	// products on one core.
	threads := runtime.GOMAXPROCS(0)
	sideBySide := running == 2 && threads >= 2
	if sideBySide {
		threads = 1
	}
	type dirBuffers struct{ xw, gates, newH, newC, tmp []float32 }
	sets := min(running, 1)
	if sideBySide {
		sets = 2
	}
	bufs := make([]dirBuffers, sets)
	for i := range bufs {
		xw, err := limit.Make[float32](n.Run, seq, batch, gh)
		if err != nil {
			return nil, err
		}
		gates, err := limit.Make[float32](n.Run, batch, gh)
		if err != nil {
			return nil, err
		}
		step, err := limit.Make[float32](n.Run, 3, batch, hidden)
		if err != nil {
			return nil, err
		}
		bufs[i] = dirBuffers{xw, gates, step[:bh:bh], step[bh : 2*bh : 2*bh], step[2*bh:]}
	}
	packed, _ := n.Prepared.(rnPacked)
	fast := cell == rnLSTM && clip == 0 && pd == nil && rnDefaultActivations(n, cell)
	direction := func(d int) error {
		buf := bufs[min(d, len(bufs)-1)]
		xw, gatesBuf, newH, newC, tmp := buf.xw, buf.gates, buf.newH, buf.newC, buf.tmp
		wdir := wd[d*gh*inSize : (d+1)*gh*inSize]
		rdir := rd[d*gh*hidden : (d+1)*gh*hidden]
		h, c := hState[d*batch*hidden:(d+1)*batch*hidden], cState[d*batch*hidden:(d+1)*batch*hidden]
		f := acts[d]
		// xw = X·Wᵀ + biases, for all steps at once. GRU with
		// linear_before_reset keeps Rbh apart: it is scaled by r.
		preW := nnPrepacked{b: packed.w.of(d, wdir)} // W and R, packed at compile time
		nnSgemmPre(threads, preW, nnBlocks{}, false, true, seq*batch, gh, inSize, 1, xd, inSize, wdir, inSize, 0, xw, gh)
		pre := nnPrepacked{b: packed.r.of(d, rdir)}
		var rbh []float32
		if bd != nil {
			bdir := bd[d*2*gh : (d+1)*2*gh]
			wb, rb := bdir[:gh], bdir[gh:]
			sum, err := limit.Make[float32](n.Run, gh)
			if err != nil {
				return err
			}
			for j := range sum {
				sum[j] = wb[j] + rb[j]
			}
			if cell == rnGRU && linearBeforeReset {
				rbh = rb[2*hidden:]
				copy(sum[2*hidden:], wb[2*hidden:])
			}
			for row := range seq * batch {
				dst := xw[row*gh : (row+1)*gh]
				for j, v := range sum {
					dst[j] += v
				}
			}
		}
		var peep []float32
		if pd != nil {
			peep = pd[d*3*hidden : (d+1)*3*hidden]
		}
		act := func(fn rnActivation, x float32) float32 {
			v := float64(x)
			if clip > 0 {
				v = max(-clip, min(clip, v))
			}
			return float32(fn(v))
		}
		for step := range seq {
			t := step
			if reverse || d == 1 {
				t = seq - 1 - step
			}
			gates := gatesBuf
			copy(gates, xw[t*batch*gh:(t+1)*batch*gh])
			switch cell {
			case rnRNN:
				nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, hidden, hidden, 1, h, hidden, rdir, hidden, 1, gates, gh)
				for b := range batch {
					for j := range hidden {
						newH[b*hidden+j] = act(f[0], gates[b*gh+j])
					}
				}
			case rnGRU:
				nnSgemmThreads(threads, false, true, batch, 2*hidden, hidden, 1, h, hidden, rdir, hidden, 1, gates, gh)
				rh := rdir[2*hidden*hidden:]
				for b := range batch {
					for j := range 2 * hidden {
						gates[b*gh+j] = act(f[0], gates[b*gh+j])
					}
				}
				if linearBeforeReset {
					// tmp = H·Rhᵀ + Rbh, then the h gate adds r⊙tmp.
					nnSgemmThreads(threads, false, true, batch, hidden, hidden, 1, h, hidden, rh, hidden, 0, tmp, hidden)
					for b := range batch {
						for j := range hidden {
							v := tmp[b*hidden+j]
							if rbh != nil {
								v += rbh[j]
							}
							gates[b*gh+2*hidden+j] += gates[b*gh+hidden+j] * v
						}
					}
				} else {
					// tmp = r⊙H, then the h gate adds tmp·Rhᵀ.
					for b := range batch {
						for j := range hidden {
							tmp[b*hidden+j] = gates[b*gh+hidden+j] * h[b*hidden+j]
						}
					}
					nnSgemmThreads(threads, false, true, batch, hidden, hidden, 1, tmp, hidden, rh, hidden, 1, gates[2*hidden:], gh)
				}
				for b := range batch {
					for j := range hidden {
						z := gates[b*gh+j]
						hh := act(f[1], gates[b*gh+2*hidden+j])
						newH[b*hidden+j] = (1-z)*hh + z*h[b*hidden+j]
					}
				}
			case rnLSTM:
				nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, gh, hidden, 1, h, hidden, rdir, hidden, 1, gates, gh)
				if fast {
					rnLSTMStep(gates, c, newC, newH, batch, hidden, inputForget)
					break
				}
				for b := range batch {
					gr := gates[b*gh : (b+1)*gh]
					for j := range hidden {
						cPrev := c[b*hidden+j]
						pi, po, pf := gr[j], gr[hidden+j], gr[2*hidden+j]
						if peep != nil {
							pi += peep[j] * cPrev
							pf += peep[2*hidden+j] * cPrev
						}
						ig := act(f[0], pi)
						var fg float32
						if inputForget {
							fg = 1 - ig
						} else {
							fg = act(f[0], pf)
						}
						cg := act(f[1], gr[3*hidden+j])
						cNew := fg*cPrev + ig*cg
						if peep != nil {
							po += peep[hidden+j] * cNew
						}
						og := act(f[0], po)
						newC[b*hidden+j] = cNew
						newH[b*hidden+j] = og * float32(f[2](float64(cNew)))
					}
				}
			}
			for b := range batch {
				if t >= lens[b] {
					continue
				}
				copy(h[b*hidden:(b+1)*hidden], newH[b*hidden:(b+1)*hidden])
				if cell == rnLSTM {
					copy(c[b*hidden:(b+1)*hidden], newC[b*hidden:(b+1)*hidden])
				}
				off := ((t*dirs+d)*batch + b) * hidden
				copy(y[off:off+hidden], newH[b*hidden:(b+1)*hidden])
			}
		}
		return nil
	}
	errs := make([]error, running)
	if sideBySide {
		parallelSplit(2, 2, func(lo, hi int) {
			for d := lo; d < hi; d++ {
				errs[d] = direction(d)
			}
		})
	} else {
		for d := range running {
			errs[d] = direction(d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	yShape := []int{seq, dirs, batch, hidden}
	if layout == 1 {
		// [seq, dirs, batch, hidden] → [batch, seq, dirs, hidden].
		y = rnSwap01(y, seq*dirs, batch, hidden)
		yShape = []int{batch, seq, dirs, hidden}
		hState = rnSwap01(hState, dirs, batch, hidden)
		cState = rnSwap01(cState, dirs, batch, hidden)
	}
	datas, shapes := [][]float32{y, hState}, [][]int{yShape, stateShape}
	if cell == rnLSTM {
		datas, shapes = append(datas, cState), append(shapes, stateShape)
	}
	outs := make([]inference.Tensor, len(datas))
	for i := range outs {
		if outs[i], err = inference.New(shapes[i], datas[i]); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// rnDefaultActivations reports whether n uses its cell's default
// activations (the attribute absent, or naming them for each direction).
func rnDefaultActivations(n opsem.Node, cell rnCell) bool {
	a, ok := n.Attrs["activations"]
	if !ok || len(a.Strings) == 0 {
		return true
	}
	def := cell.activations()
	for i, name := range a.Strings {
		if !strings.EqualFold(name, def[i%len(def)]) {
			return false
		}
	}
	return true
}

// rnLSTMStep finishes an LSTM step with the default activations, no
// peepholes and no clip, in float32: gates holds each batch row's
// pre-activations [i, o, f, c]; c the cell state, into newC and newH.
// Sigmoid runs over the i, o and f blocks at once (sigmoids), tanh over c.
func rnLSTMStep(gates, c, newC, newH []float32, batch, hidden int, inputForget bool) {
	gh := 4 * hidden
	for b := range batch {
		gr := gates[b*gh : (b+1)*gh]
		sigmoids(gr[:3*hidden], gr[:3*hidden])
		ig, og, fg, cg := gr[:hidden], gr[hidden:2*hidden], gr[2*hidden:3*hidden], gr[3*hidden:]
		cb, nc, nh := c[b*hidden:(b+1)*hidden], newC[b*hidden:(b+1)*hidden], newH[b*hidden:(b+1)*hidden]
		tanhs(cg, cg)
		for j := range hidden {
			f := fg[j]
			if inputForget {
				f = 1 - ig[j]
			}
			nc[j] = f*cb[j] + ig[j]*cg[j]
		}
		tanhs(nh, nc)
		for j, o := range og {
			nh[j] *= o
		}
	}
}

// rnSwap01 returns x [a, b, inner] transposed to [b, a, inner].
func rnSwap01(x []float32, a, b, inner int) []float32 {
	out := make([]float32, len(x))
	if len(x) == 0 { // the loops would count a and b
		return out
	}
	for i := range a {
		for j := range b {
			copy(out[(j*a+i)*inner:(j*a+i+1)*inner], x[(i*b+j)*inner:(i*b+j+1)*inner])
		}
	}
	return out
}

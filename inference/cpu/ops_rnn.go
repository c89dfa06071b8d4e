package cpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

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

// rnActivation is an activation function of a recurrent cell.
type rnActivation func(x float64) float64

// rnActivations returns the functions of opsem.Recurrent's activations,
// per direction.
func rnActivations(o opsem.RecurrentOptions) [][]rnActivation {
	out := make([][]rnActivation, len(o.Activations))
	for d, acts := range o.Activations {
		for _, a := range acts {
			out[d] = append(out[d], rnActivationFunc(a))
		}
	}
	return out
}

func rnActivationFunc(act opsem.RecurrentActivation) rnActivation {
	a, b := act.Alpha, act.Beta
	switch act.Name {
	case "tanh":
		return math.Tanh
	case "sigmoid":
		return sigmoid
	case "relu":
		return func(x float64) float64 { return max(x, 0) }
	case "softsign":
		return func(x float64) float64 { return x / (1 + math.Abs(x)) }
	case "softplus":
		return softplus
	case "affine":
		return func(x float64) float64 { return a*x + b }
	case "leakyrelu":
		return func(x float64) float64 {
			if x < 0 {
				return a * x
			}
			return x
		}
	case "thresholdedrelu":
		return func(x float64) float64 {
			if x > a {
				return x
			}
			return 0
		}
	case "scaledtanh":
		return func(x float64) float64 { return a * math.Tanh(b*x) }
	case "hardsigmoid":
		return func(x float64) float64 { return max(0, min(1, a*x+b)) }
	case "elu":
		return func(x float64) float64 {
			if x < 0 {
				return a * (math.Exp(x) - 1)
			}
			return x
		}
	}
	panic("cpu: recurrent activation " + act.Name) // opsem.Recurrent takes only these
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

// rnPlan is what a recurrent node keeps from one run to the next
// (opsem.Plan): its inputs' checked geometry, activations and options, the
// outputs' shapes, the dimensions of its buffers (kept, as limit.Make's
// variadic shape would otherwise be allocated every call), and the body
// that runs the two directions side by side, bound once. The operands of
// the run in progress are set by each run before its directions run.
type rnPlan struct {
	cell                                 rnCell
	dirs                                 int
	reverse                              bool
	layout                               int64
	seq, batch, inSize, hidden, gh       int
	acts                                 [][]rnActivation
	clip                                 float64
	linearBeforeReset, inputForget, fast bool
	yShape, stateShape                   []int // the outputs'
	xDims, lensDims, stateDims, yDims    []int
	xwDims, stepDims, sumDims            []int
	sides                                func(lo, hi int)
	splits                               [2]rnStepSplit // by direction

	// The operands of the run in progress.
	run                                   *limit.Run
	xd, wd, rd, bd, pd, hState, cState, y []float32
	lens                                  []int
	packed                                rnPacked
	threads, sets                         int
	bufs                                  [2]rnDirBuffers
	errs                                  [2]error
}

// rnDirBuffers are one direction's buffers: X·Wᵀ for all steps (each
// step's rows its gates), and a step's new states and scratch.
type rnDirBuffers struct{ xw, newH, newC, tmp []float32 }

// newRnPlan checks a recurrent node's inputs (in, with X, R and the data
// of the optional ones given) and attributes, and plans its runs.
func newRnPlan(n opsem.Node, in []inference.Tensor, cell rnCell, x, w, r inference.Tensor, bd, h0d, c0d, pd []float32) (*rnPlan, error) {
	o, err := opsem.Recurrent(n)
	if err != nil {
		return nil, err
	}
	p := &rnPlan{cell: cell, dirs: o.Dirs, reverse: o.Reverse, layout: o.Layout}
	dirs := p.dirs
	if x.Rank() != 3 {
		return nil, fmt.Errorf("input 0 (X) is %v, want rank 3: %w", x, inference.ErrShape)
	}
	xs := x.Shape()
	seq, batch, inSize := xs[0], xs[1], xs[2]
	if p.layout == 1 {
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
	p.stateShape = []int{dirs, batch, hidden}
	if p.layout == 1 {
		p.stateShape = []int{batch, dirs, hidden}
	}
	if h0d != nil {
		if err := wantShape(arg(in, 5), 5, "initial_h", p.stateShape...); err != nil {
			return nil, err
		}
	}
	if c0d != nil {
		if err := wantShape(arg(in, 6), 6, "initial_c", p.stateShape...); err != nil {
			return nil, err
		}
	}
	if pd != nil {
		if err := wantShape(arg(in, 7), 7, "P", dirs, 3*hidden); err != nil {
			return nil, err
		}
	}
	p.acts = rnActivations(o)
	p.clip = o.Clip
	p.linearBeforeReset = o.LinearBeforeReset
	p.inputForget = o.InputForget
	p.fast = cell != rnRNN && p.clip == 0 && pd == nil && o.Default(opsem.RecurrentDefaults[n.OpType])
	p.seq, p.batch, p.inSize, p.hidden, p.gh = seq, batch, inSize, hidden, g*hidden
	p.yShape = []int{seq, dirs, batch, hidden}
	if p.layout == 1 {
		p.yShape = []int{batch, seq, dirs, hidden}
	}
	p.xDims, p.lensDims = []int{x.Len()}, []int{batch}
	p.stateDims, p.yDims = []int{dirs, batch, hidden}, []int{seq, dirs, batch, hidden}
	p.xwDims = []int{seq, batch, p.gh}
	// A step's new H and C, then scratch: a GRU's H·Rᵀ for all three
	// gates, else one state's worth.
	p.stepDims, p.sumDims = []int{3, batch, hidden}, []int{p.gh}
	if cell == rnGRU {
		p.stepDims[0] = 2 + g
	}
	p.sides = p.runSides
	for d := range p.splits {
		p.splits[d].run = p.splits[d].units
	}
	return p, nil
}

// runSides runs directions lo…hi−1, each on a core of its own.
func (p *rnPlan) runSides(lo, hi int) {
	for d := lo; d < hi; d++ {
		p.errs[d] = p.direction(d)
	}
}

// rnSeqLens reads sequence_lens t into lens (batch values within [0, seq]),
// int32 and int64 without converting them into a new slice.
func rnSeqLens(t inference.Tensor, lens []int, seq int) error {
	var v []int64
	switch t.DType() {
	case inference.Int32:
		if t.Len() == len(lens) {
			for b, l := range dataOf[int32](t) {
				if l < 0 || int64(l) > int64(seq) {
					return fmt.Errorf("input 4 (sequence_lens) holds %d, outside [0, %d]: %w", l, seq, inference.ErrShape)
				}
				lens[b] = int(l)
			}
			return nil
		}
	case inference.Int64:
		v = dataOf[int64](t)
	}
	if v == nil {
		var err error
		if v, err = opsem.Int64s(t); err != nil {
			return fmt.Errorf("input 4 (sequence_lens): %w", err)
		}
	}
	if len(v) != len(lens) {
		return fmt.Errorf("input 4 (sequence_lens) is %v, want %d values: %w", t, len(lens), inference.ErrShape)
	}
	for b, l := range v {
		if l < 0 || l > int64(seq) {
			return fmt.Errorf("input 4 (sequence_lens) holds %d, outside [0, %d]: %w", l, seq, inference.ErrShape)
		}
		lens[b] = int(l)
	}
	return nil
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
	p, err := opsem.Plan(n, in, func() (*rnPlan, error) { return newRnPlan(n, in, cell, x, w, r, bd, h0d, c0d, pd) })
	if err != nil {
		return nil, err
	}
	dirs, seq, batch, inSize, hidden, layout := p.dirs, p.seq, p.batch, p.inSize, p.hidden, p.layout
	lens, err := limit.Make[int](n.Run, p.lensDims...)
	if err != nil {
		return nil, err
	}
	for b := range lens {
		lens[b] = seq
	}
	if t := arg(in, 4); present(t) {
		if err := rnSeqLens(t, lens, seq); err != nil {
			return nil, err
		}
	}

	// X as [seq·batch, input].
	if layout == 1 {
		swapped, err := limit.MakeOverwritten[float32](n.Run, p.xDims...)
		if err != nil {
			return nil, err
		}
		xd = rnSwap01Into(swapped, xd, batch, seq, inSize)
	}
	// The states as [dirs, batch, hidden]: initial_h and initial_c, or
	// zeros.
	state := func(d []float32) ([]float32, error) {
		s, err := limit.Make[float32](n.Run, p.stateDims...)
		switch {
		case err != nil || d == nil:
		case layout == 1:
			rnSwap01Into(s, d, batch, dirs, hidden)
		default:
			copy(s, d)
		}
		return s, err
	}
	hState, err := state(h0d)
	if err != nil {
		return nil, err
	}
	cState, err := state(c0d)
	if err != nil {
		return nil, err
	}

	y, err := limit.Make[float32](n.Run, p.yDims...)
	if err != nil {
		return nil, err
	}
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
	sets := min(running, 1)
	if sideBySide {
		sets = 2
	}
	for i := range sets {
		xw, err := limit.Make[float32](n.Run, p.xwDims...)
		if err != nil {
			return nil, err
		}
		step, err := limit.Make[float32](n.Run, p.stepDims...)
		if err != nil {
			return nil, err
		}
		p.bufs[i] = rnDirBuffers{xw, step[:bh:bh], step[bh : 2*bh : 2*bh], step[2*bh:]}
	}
	packed, _ := n.Prepared.(rnPacked)
	p.run, p.xd, p.wd, p.rd, p.bd, p.pd = n.Run, xd, wd, rd, bd, pd
	p.hState, p.cState, p.y, p.lens = hState, cState, y, lens
	p.packed, p.threads, p.sets = packed, threads, sets
	p.errs = [2]error{}
	if sideBySide {
		parallelSplit(2, 2, p.sides)
	} else {
		for d := range running {
			p.errs[d] = p.direction(d)
		}
	}
	err = errors.Join(p.errs[:running]...)
	// The plan outlives the run's operands.
	p.run, p.xd, p.wd, p.rd, p.bd, p.pd = nil, nil, nil, nil, nil, nil
	p.hState, p.cState, p.y, p.lens = nil, nil, nil, nil
	p.packed, p.bufs, p.errs = rnPacked{}, [2]rnDirBuffers{}, [2]error{}
	if err != nil {
		return nil, err
	}

	if layout == 1 {
		// [seq, dirs, batch, hidden] → [batch, seq, dirs, hidden], and the
		// states [dirs, batch, hidden] → [batch, dirs, hidden].
		swap := func(x []float32, a, b int, dims []int) ([]float32, error) {
			out, err := limit.MakeOverwritten[float32](n.Run, dims...)
			if err != nil {
				return nil, err
			}
			return rnSwap01Into(out, x, a, b, hidden), nil
		}
		if y, err = swap(y, seq*dirs, batch, p.yDims); err != nil {
			return nil, err
		}
		if hState, err = swap(hState, dirs, batch, p.stateDims); err != nil {
			return nil, err
		}
		if cell == rnLSTM {
			if cState, err = swap(cState, dirs, batch, p.stateDims); err != nil {
				return nil, err
			}
		}
	}
	// Outputs past the last the node names are left out, and so is the
	// tensor of one it skips (without a Memo every one is returned): the
	// pool hands the states' equal buffers back in either order, and a
	// tensor over the other buffer would be a new one.
	outs := 2
	if cell == rnLSTM {
		outs = 3
	}
	k := outs
	if n.Memo != nil {
		for k > 1 && !wantsOutput(n, k-1) {
			k--
		}
	}
	datas, shapes := [3][]float32{y, hState, cState}, [3][]int{p.yShape, p.stateShape, p.stateShape}
	var ts [3]inference.Tensor
	for j := range k {
		if j > 0 && n.Memo != nil && !wantsOutput(n, j) {
			continue
		}
		if ts[j], err = opsem.Output(n, j, shapes[j], datas[j]); err != nil {
			return nil, err
		}
	}
	res := n.Results(k)
	copy(res, ts[:k])
	return res, nil
}

// direction runs direction d (0 forward, or reverse when the node says so;
// 1 reverse) over every step, with the run's operands in p.
func (p *rnPlan) direction(d int) error {
	cell, seq, batch, inSize, hidden, gh, dirs := p.cell, p.seq, p.batch, p.inSize, p.hidden, p.gh, p.dirs
	xd, wd, rd, bd, pd, y, lens := p.xd, p.wd, p.rd, p.bd, p.pd, p.y, p.lens
	clip, linearBeforeReset, inputForget, fast, threads := p.clip, p.linearBeforeReset, p.inputForget, p.fast, p.threads
	buf := p.bufs[min(d, p.sets-1)]
	xw, newH, newC, tmp := buf.xw, buf.newH, buf.newC, buf.tmp
	wdir := wd[d*gh*inSize : (d+1)*gh*inSize]
	rdir := rd[d*gh*hidden : (d+1)*gh*hidden]
	h, c := p.hState[d*batch*hidden:(d+1)*batch*hidden], p.cState[d*batch*hidden:(d+1)*batch*hidden]
	f := p.acts[d]
	// xw = X·Wᵀ + biases, for all steps at once. GRU with
	// linear_before_reset keeps Rbh apart: it is scaled by r.
	preW := nnPrepacked{b: p.packed.w.of(d, wdir)} // W and R, packed at compile time
	nnSgemmPre(threads, preW, nnBlocks{}, false, true, seq*batch, gh, inSize, 1, xd, inSize, wdir, inSize, 0, xw, gh)
	pre := nnPrepacked{b: p.packed.r.of(d, rdir)}
	split := &p.splits[d]
	if cell == rnLSTM && fast {
		split.plan(nnBestKernel, threads, pre, rdir, batch, hidden, inputForget)
	}
	defer split.drop()
	var rbh []float32
	if bd != nil {
		bdir := bd[d*2*gh : (d+1)*2*gh]
		wb, rb := bdir[:gh], bdir[gh:]
		sum, err := limit.Make[float32](p.run, p.sumDims...)
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
	// With every sequence whole, a float32 LSTM writes each step's H into
	// its block of Y, which the next step reads as its H, and keeps C in
	// two buffers in turn: nothing is copied between steps.
	whole := cell == rnLSTM && fast && !slices.ContainsFunc(lens, func(l int) bool { return l < seq })
	hCur, cCur, cSpare := h, c, newC
	for step := range seq {
		t := step
		if p.reverse || d == 1 {
			t = seq - 1 - step
		}
		// The step's gates: its rows of X·Wᵀ (and biases), which the
		// step's product adds H·Rᵀ to; no other step reads them.
		gates := xw[t*batch*gh : (t+1)*batch*gh]
		if whole {
			hNext, cNext := y[(t*dirs+d)*batch*hidden:(t*dirs+d+1)*batch*hidden], cSpare
			if split.parts > 1 {
				// The step's product and cells split among the workers.
				split.gates, split.h, split.c, split.newH, split.newC = gates, hCur, cCur, hNext, cNext
				parallelSplit(hidden/split.kern.nr, split.parts, split.run)
			} else {
				nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, gh, hidden, 1, hCur, hidden, rdir, hidden, 1, gates, gh)
				rnLSTMStep(gates, cCur, cNext, hNext, batch, hidden, inputForget)
			}
			hCur, cCur, cSpare = hNext, cNext, cCur
			continue
		}
		switch cell {
		case rnRNN:
			nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, hidden, hidden, 1, h, hidden, rdir, hidden, 1, gates, gh)
			for b := range batch {
				for j := range hidden {
					newH[b*hidden+j] = act(f[0], gates[b*gh+j])
				}
			}
		case rnGRU:
			p.gruStep(d, gates, tmp, rdir, rbh, threads)
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
	if whole {
		copy(h, hCur) // the last step's, in Y
		copy(c, cCur)
	}
	return nil
}

// gruStep computes a GRU step's new H into newH, from the step's X·Wᵀ
// and biases in gates ([batch, z r h]) and the state H, with scratch tmp
// (batch·3·hidden). With linear_before_reset one product H·Rᵀ serves all
// three gates; without, r⊙H meets Rh in a second. Both use R as packed at
// compile time when it is a constant. With the default activations
// (sigmoid, tanh) and no clip they run over whole blocks in float32.
func (p *rnPlan) gruStep(d int, gates, tmp, rdir, rbh []float32, threads int) {
	batch, hidden, gh := p.batch, p.hidden, p.gh
	buf := p.bufs[min(d, p.sets-1)]
	h := p.hState[d*batch*hidden : (d+1)*batch*hidden]
	newH := buf.newH
	f := p.acts[d]
	pre := nnPrepacked{b: p.packed.r.of(d, rdir)}
	gate := func(xs []float32) { // z and r
		if p.fast {
			sigmoids(xs, xs)
		} else {
			p.activate(f[0], xs)
		}
	}
	candidate := func(xs []float32) { // h
		if p.fast {
			tanhs(xs, xs)
		} else {
			p.activate(f[1], xs)
		}
	}
	if p.linearBeforeReset {
		hr := tmp[:batch*gh]
		nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, gh, hidden, 1, h, hidden, rdir, hidden, 0, hr, gh)
		for b := range batch {
			g, x := gates[b*gh:(b+1)*gh], hr[b*gh:(b+1)*gh]
			for j := range 2 * hidden {
				g[j] += x[j]
			}
			gate(g[:2*hidden])
			r, hg, xh := g[hidden:2*hidden], g[2*hidden:], x[2*hidden:]
			if rbh != nil {
				for j := range hidden {
					hg[j] += r[j] * (xh[j] + rbh[j])
				}
			} else {
				for j := range hidden {
					hg[j] += r[j] * xh[j]
				}
			}
		}
	} else {
		nnSgemmPre(threads, pre, nnBlocks{}, false, true, batch, 2*hidden, hidden, 1, h, hidden, rdir, hidden, 1, gates, gh)
		rh := rdir[2*hidden*hidden:]
		rs := tmp[:batch*hidden]
		for b := range batch {
			g := gates[b*gh : (b+1)*gh]
			gate(g[:2*hidden])
			for j, r := range g[hidden : 2*hidden] {
				rs[b*hidden+j] = r * h[b*hidden+j]
			}
		}
		preH := nnPrepacked{b: p.packed.rh.of(d, rh)}
		nnSgemmPre(threads, preH, nnBlocks{}, false, true, batch, hidden, hidden, 1, rs, hidden, rh, hidden, 1, gates[2*hidden:], gh)
	}
	for b := range batch {
		g := gates[b*gh : (b+1)*gh]
		z, hh := g[:hidden], g[2*hidden:]
		candidate(hh)
		hb, nh := h[b*hidden:(b+1)*hidden], newH[b*hidden:(b+1)*hidden]
		for j := range hidden {
			nh[j] = (1-z[j])*hh[j] + z[j]*hb[j]
		}
	}
}

// activate sets each of xs to fn of it, computed in float64 after the
// node's clip.
func (p *rnPlan) activate(fn rnActivation, xs []float32) {
	for j, x := range xs {
		v := float64(x)
		if p.clip > 0 {
			v = max(-p.clip, min(p.clip, v))
		}
		xs[j] = float32(fn(v))
	}
}

// rnLSTMStep finishes an LSTM step with the default activations, no
// peepholes and no clip, in float32: gates holds each batch row's
// pre-activations [i, o, f, c]; c the cell state, into newC and newH.
// Sigmoid runs over the i, o and f blocks at once (sigmoids), tanh over c.
func rnLSTMStep(gates, c, newC, newH []float32, batch, hidden int, inputForget bool) {
	rnLSTMCells(gates, c, newC, newH, batch, hidden, 0, hidden, inputForget)
}

// rnLSTMCells is rnLSTMStep for hidden units lo…hi−1 alone.
func rnLSTMCells(gates, c, newC, newH []float32, batch, hidden, lo, hi int, inputForget bool) {
	gh := 4 * hidden
	for b := range batch {
		gr := gates[b*gh : (b+1)*gh]
		ig, og, fg, cg := gr[lo:hi], gr[hidden+lo:hidden+hi], gr[2*hidden+lo:2*hidden+hi], gr[3*hidden+lo:3*hidden+hi]
		if lo == 0 && hi == hidden {
			sigmoids(gr[:3*hidden], gr[:3*hidden]) // i, o and f at once
		} else {
			sigmoids(ig, ig)
			sigmoids(og, og)
			sigmoids(fg, fg)
		}
		tanhs(cg, cg)
		cb, nc, nh := c[b*hidden+lo:b*hidden+hi], newC[b*hidden+lo:b*hidden+hi], newH[b*hidden+lo:b*hidden+hi]
		if inputForget {
			for j, i := range ig {
				fg[j] = 1 - i
			}
		}
		// C' = f⊙C + i⊙g, H' = o⊙tanh(C'), in vector passes.
		ewArithVV(ewMul, nc, fg, cb)
		ewArithVV(ewMul, ig, ig, cg)
		ewArithVV(ewAdd, nc, nc, ig)
		tanhs(nh, nc)
		ewArithVV(ewMul, nh, nh, og)
	}
}

// rnStepSplit is an LSTM step split among workers by hidden units: each
// computes the columns of H·Rᵀ of its units in every gate, on top of X·Wᵀ,
// and runs the cells of those units, so that the step's product and its
// activations, the part a step cannot hand to one product, take one fork
// and join. The step's operands are set before each split, and dropped
// after the run.
type rnStepSplit struct {
	kern                        nnKernel
	pre                         nnPrepacked
	parts, batch, hidden        int
	inputForget                 bool
	rdir                        []float32
	xw, gates, h, c, newH, newC []float32
	run                         func(lo, hi int) // units, bound once
}

// plan sets s to split the steps of an LSTM direction whose recurrence
// weights are rdir (packed in pre, when constant) among up to threads
// workers, in whole micro-tile columns of each gate; s.parts is 0 when the
// step is too small to pay for a split, its cells too few, or its gates
// not whole tiles.
func (s *rnStepSplit) plan(kern nnKernel, threads int, pre nnPrepacked, rdir []float32, batch, hidden int, inputForget bool) {
	s.parts = 0
	gh := 4 * hidden
	flops := 2 * batch * gh * hidden
	if threads <= 1 || hidden%kern.nr != 0 || flops < nnSgemmSerialFlops || batch*hidden < rnSplitCells {
		return
	}
	s.parts = min(threads, hidden/kern.nr, max(1, flops/nnSgemmTaskFlops))
	s.kern, s.pre = kern, pre.usable(kern, 1, batch, gh, hidden)
	s.rdir, s.batch, s.hidden, s.inputForget = rdir, batch, hidden, inputForget
}

// rnSplitCells is the fewest cells (batch × hidden) a step splits by
// units: with fewer, the cells cost less than the split's four products a
// worker (in place of one) add, and the product alone is split.
const rnSplitCells = 1024

// drop lets go of the run's operands.
func (s *rnStepSplit) drop() {
	s.pre, s.rdir = nnPrepacked{}, nil
	s.gates, s.h, s.c, s.newH, s.newC = nil, nil, nil, nil, nil
}

// units runs the step for hidden units lo·nr…hi·nr−1.
func (s *rnStepSplit) units(lo, hi int) {
	hidden, gh := s.hidden, 4*s.hidden
	u0, u1 := lo*s.kern.nr, hi*s.kern.nr
	for g := range 4 {
		col := g*hidden + u0
		pre := s.pre
		pre.j0 += col
		nnSgemmAdd(s.kern, pre, nnBlocks{}, false, true, s.batch, u1-u0, hidden, 1, s.h, hidden, s.rdir[col*hidden:], hidden, s.gates[col:], gh)
	}
	rnLSTMCells(s.gates, s.c, s.newC, s.newH, s.batch, hidden, u0, u1, s.inputForget)
}

// rnSwap01 returns x [a, b, inner] transposed to [b, a, inner].
func rnSwap01(x []float32, a, b, inner int) []float32 {
	return rnSwap01Into(make([]float32, len(x)), x, a, b, inner)
}

// rnSwap01Into writes x [a, b, inner] transposed to [b, a, inner] to out,
// as long, and returns it.
func rnSwap01Into(out, x []float32, a, b, inner int) []float32 {
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

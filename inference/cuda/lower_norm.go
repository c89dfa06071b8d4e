package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
)

// Lowerings of the normalisation operators (norm.cu): BatchNormalization in
// inference mode, the row normalisations (Instance, Group, Layer, RMS),
// LpNormalization, LRN, Softmax, LogSoftmax and Hardmax. The semantics are the CPU
// backend's (inference/cpu/ops_norm.go, and smSoftmax in ops_softmax.go).

// Kinds of softmax_f32 (norm.cu's SOFTMAX, LOG_SOFTMAX, HARDMAX).
const (
	softmaxKind = iota
	logSoftmaxKind
	hardmaxKind
)

func init() {
	registerLowering("BatchNormalization", lowerBatchNorm)
	registerLowering("InstanceNormalization", lowerInstanceNorm)
	registerLowering("GroupNormalization", lowerGroupNorm)
	registerLowering("LayerNormalization", func(l *Lower) error { return lowerBlockNorm(l, false) })
	registerLowering("RMSNormalization", func(l *Lower) error { return lowerBlockNorm(l, true) })
	registerLowering("LpNormalization", lowerLpNorm)
	registerLowering("LRN", lowerLRN)
	registerLowering("Softmax", func(l *Lower) error { return lowerSoftmax(l, softmaxKind) })
	registerLowering("LogSoftmax", func(l *Lower) error { return lowerSoftmax(l, logSoftmaxKind) })
	registerLowering("Hardmax", func(l *Lower) error { return lowerSoftmax(l, hardmaxKind) })
}

// normFloatInputs checks that the first n inputs, where present, are float32.
func normFloatInputs(l *Lower, n int) error {
	for i := range n {
		if o := l.Arg(i); o.Present() && o.DType != inference.Float32 {
			return l.NoKernel("input %d is %v", i, o.DType)
		}
	}
	return nil
}

// normOutputs counts the outputs the node names.
func normOutputs(l *Lower) int {
	c := 0
	for _, o := range l.Out {
		if o.Present() {
			c++
		}
	}
	return c
}

// normLaunchRows queues a kernel that runs a block per row: a grid of up to
// maxGrid blocks of Threads (= BLOCK) threads, looping over the rest.
func normLaunchRows(l *Lower, kernel string, rows int64, args ...Arg) error {
	if rows <= 0 {
		return nil
	}
	return l.LaunchGrid(kernel, Dim3{X: uint32(min(rows, maxGrid))}, Dim3{X: Threads}, args...)
}

// lowerBatchNorm handles inference mode: y = x·a + (B − mean·a) per
// channel, a = scale/√(var + epsilon), or per element of a sample with
// spatial=0 before opset 9.
func lowerBatchNorm(l *Lower) error {
	if l.Opset >= 14 && l.Int("training_mode", 0) != 0 {
		return l.NoKernel("training_mode")
	}
	if normOutputs(l) > 1 {
		return l.NoKernel("training-mode statistics outputs")
	}
	if len(l.In) < 5 {
		return l.NoKernel("%d inputs", len(l.In))
	}
	if err := normFloatInputs(l, 5); err != nil {
		return err
	}
	x, y := l.In[0], l.Out[0]
	if x.Rank() < 2 {
		return l.NoKernel("X %v, want rank ≥ 2", x.Shape)
	}
	params, repeat := int64(x.Shape[1]), numElems(x.Shape[2:])
	if l.Opset < 9 && l.Int("spatial", 1) == 0 {
		params, repeat = params*repeat, 1
	}
	for _, o := range l.In[1:5] {
		if !o.Present() || o.Len() != params {
			return l.NoKernel("statistic %q %v, want %d values", o.Name, o.Shape, params)
		}
	}
	if repeat == 0 {
		return nil
	}
	return l.Launch("norm_batch_f32", y.Len(), P(y), P(x), P(l.In[1]), P(l.In[2]), P(l.In[3]), P(l.In[4]),
		I(y.Len()), I(params), I(repeat), F(l.Float("epsilon", 1e-5)))
}

// normRows is one launch of norm_rows_f32 over the node's X, scale and
// first output.
type normRows struct {
	rows, size             int64
	rms                    bool
	sdiv, smod, bdiv, bmod int64
	bias, mean, inv        Arg
}

func (r normRows) launch(l *Lower) error {
	if r.size == 0 {
		return l.NoKernel("empty rows")
	}
	rms := int64(0)
	if r.rms {
		rms = 1
	}
	return normLaunchRows(l, "norm_rows_f32", r.rows, P(l.Out[0]), P(l.In[0]), P(l.In[1]), r.bias, r.mean, r.inv,
		I(r.rows), I(r.size), F(l.Float("epsilon", 1e-5)), I(rms), I(r.sdiv), I(r.smod), I(r.bdiv), I(r.bmod))
}

// lowerInstanceNorm normalises each (sample, channel) block.
func lowerInstanceNorm(l *Lower) error {
	if len(l.In) < 3 || !l.In[1].Present() || !l.In[2].Present() {
		return l.NoKernel("want input, scale and B")
	}
	if err := normFloatInputs(l, 3); err != nil {
		return err
	}
	x := l.In[0]
	if x.Rank() < 2 {
		return l.NoKernel("input %v, want rank ≥ 2", x.Shape)
	}
	c, size := int64(x.Shape[1]), numElems(x.Shape[2:])
	if l.In[1].Len() != c || l.In[2].Len() != c {
		return l.NoKernel("scale %v, B %v for %d channels", l.In[1].Shape, l.In[2].Shape, c)
	}
	return normRows{rows: int64(x.Shape[0]) * c, size: size,
		sdiv: size, smod: c, bdiv: size, bmod: c, bias: P(l.In[2]), mean: I(0), inv: I(0)}.launch(l)
}

// lowerGroupNorm normalises each (sample, group) block; scale and bias are
// per group before opset 21 and per channel from it.
func lowerGroupNorm(l *Lower) error {
	if len(l.In) < 3 || !l.In[1].Present() || !l.In[2].Present() {
		return l.NoKernel("want X, scale and bias")
	}
	if err := normFloatInputs(l, 3); err != nil {
		return err
	}
	x := l.In[0]
	groups := l.Int("num_groups", 0)
	if x.Rank() < 2 || !l.Node.Has("num_groups") || groups <= 0 || int64(x.Shape[1])%groups != 0 {
		return l.NoKernel("X %v, num_groups %d", x.Shape, groups)
	}
	c, spatial := int64(x.Shape[1]), numElems(x.Shape[2:])
	size := c / groups * spatial
	div, mod := size, groups // per group
	if l.Opset >= 21 {
		div, mod = spatial, c
	}
	if l.In[1].Len() != mod || l.In[2].Len() != mod {
		return l.NoKernel("scale %v, bias %v, want %d values", l.In[1].Shape, l.In[2].Shape, mod)
	}
	return normRows{rows: int64(x.Shape[0]) * groups, size: size,
		sdiv: div, smod: mod, bdiv: div, bmod: mod, bias: P(l.In[2]), mean: I(0), inv: I(0)}.launch(l)
}

// normTrailing returns div and mod such that element i of a block of
// shape block reads element (i / div) % mod of t, which broadcasts to the
// block (nmTrailingOffsets on the CPU). ok is false for a broadcast that
// is not of that form: t's dimensions that are not 1 must be consecutive.
func normTrailing(t Operand, block []int) (div, mod int64, ok bool) {
	s := t.Shape
	for len(s) > len(block) && s[0] == 1 {
		s = s[1:]
	}
	if len(s) > len(block) {
		return 0, 0, false
	}
	for len(s) < len(block) {
		s = append([]int{1}, s...)
	}
	lo, hi := -1, -1
	after := false // past the run, having seen a broadcast dimension
	for d, v := range s {
		switch {
		case block[d] == 1:
			if v != 1 {
				return 0, 0, false
			}
		case v == block[d]:
			if after {
				return 0, 0, false
			}
			if lo < 0 {
				lo = d
			}
			hi = d + 1
		case v == 1:
			after = lo >= 0
		default:
			return 0, 0, false
		}
	}
	if lo < 0 {
		return 1, 1, true
	}
	return numElems(block[hi:]), numElems(block[lo:hi]), true
}

// normOptionalOutput returns the address of output i, or a null pointer when
// the node does not ask for it.
func normOptionalOutput(l *Lower, i int) Arg {
	if i < len(l.Out) && l.Out[i].Present() {
		return P(l.Out[i])
	}
	return I(0)
}

// lowerBlockNorm lowers LayerNormalization (with its optional Mean and
// InvStdDev outputs) and RMSNormalization: each block over the axes
// axis…rank−1 is a row.
func lowerBlockNorm(l *Lower, rms bool) error {
	if len(l.In) < 2 || !l.In[1].Present() {
		return l.NoKernel("want X and scale")
	}
	if err := normFloatInputs(l, 3); err != nil {
		return err
	}
	x := l.In[0]
	if !rms && normOutputs(l) > 1 && l.Int("stash_type", 1) != 1 {
		return l.NoKernel("stash_type %d", l.Int("stash_type", 1))
	}
	axis, err := cpu.NormAxis(l.Int("axis", -1), x.Rank())
	if err != nil {
		return l.NoKernel("%v", err)
	}
	block := x.Shape[axis:]
	r := normRows{rows: numElems(x.Shape[:axis]), size: numElems(block), rms: rms, bias: I(0), mean: I(0), inv: I(0)}
	var ok bool
	if r.sdiv, r.smod, ok = normTrailing(l.In[1], block); !ok {
		return l.NoKernel("scale %v on the normalised shape %v", l.In[1].Shape, block)
	}
	r.bdiv, r.bmod = 1, 1
	if b := l.Arg(2); b.Present() {
		if r.bdiv, r.bmod, ok = normTrailing(b, block); !ok {
			return l.NoKernel("B %v on the normalised shape %v", b.Shape, block)
		}
		r.bias = P(b)
	}
	if !rms {
		r.mean, r.inv = normOptionalOutput(l, 1), normOptionalOutput(l, 2)
	}
	return r.launch(l)
}

// lowerLpNorm divides by the 1- or 2-norm along axis (default −1), a
// block per row of the axis.
func lowerLpNorm(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	p := l.Int("p", 2)
	if p != 1 && p != 2 {
		return l.NoKernel("p=%d", p)
	}
	axis, err := cpu.NormAxis(l.Int("axis", -1), x.Rank())
	if err != nil {
		return l.NoKernel("%v", err)
	}
	outer, size, inner := numElems(x.Shape[:axis]), int64(x.Shape[axis]), numElems(x.Shape[axis+1:])
	return normLaunchRows(l, "norm_lp_f32", outer*inner, P(y), P(x), I(outer), I(size), I(inner), I(p))
}

// lowerLRN sums squares over a window of channels per element.
func lowerLRN(l *Lower) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	size := l.Int("size", 0)
	if x.Rank() < 2 || size <= 0 {
		return l.NoKernel("X %v, size %d", x.Shape, size)
	}
	c, spatial := int64(x.Shape[1]), numElems(x.Shape[2:])
	return l.Launch("lrn_f32", y.Len(), P(y), P(x), I(y.Len()), I(c), I(spatial), I(size), I((size-1)/2), I(size/2),
		F(l.Float("alpha", 1e-4)), F(l.Float("beta", 0.75)), F(l.Float("bias", 1)))
}

// lowerSoftmax lowers Softmax, LogSoftmax and Hardmax: before opset 13 the
// input is flattened to 2-D at axis (default 1) and the rows are the
// trailing block; from 13 the rows run along axis (default −1).
func lowerSoftmax(l *Lower, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	var outer, size, inner int64
	if l.Opset < 13 {
		axis, err := cpu.NormAxis(l.Int("axis", 1), x.Rank())
		if err != nil {
			return l.NoKernel("%v", err)
		}
		outer, size, inner = numElems(x.Shape[:axis]), numElems(x.Shape[axis:]), 1
	} else {
		axis, err := cpu.NormAxis(l.Int("axis", -1), x.Rank())
		if err != nil {
			return l.NoKernel("%v", err)
		}
		outer, size, inner = numElems(x.Shape[:axis]), int64(x.Shape[axis]), numElems(x.Shape[axis+1:])
	}
	if size == 0 {
		return nil
	}
	return normLaunchRows(l, "softmax_f32", outer*inner, I(kind), P(y), P(x), I(outer), I(size), I(inner))
}

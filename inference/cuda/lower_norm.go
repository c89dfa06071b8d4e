package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the normalisation operators (norm.cu): BatchNormalization in
// inference mode, the row normalisations (Instance, Group, Layer, RMS),
// LpNormalization and LRN. The semantics are the CPU backend's
// (inference/cpu/ops_norm.go).

func init() {
	registerLowering("BatchNormalization", lowerBatchNorm)
	registerLowering("InstanceNormalization", lowerInstanceNorm)
	registerLowering("GroupNormalization", lowerGroupNorm)
	registerLowering("LayerNormalization", func(l *lowering) error { return lowerBlockNorm(l, false) })
	registerLowering("RMSNormalization", func(l *lowering) error { return lowerBlockNorm(l, true) })
	registerLowering("LpNormalization", lowerLpNorm)
	registerLowering("LRN", lowerLRN)
}

// normFloatInputs checks that the first n inputs, where present, are float32.
func normFloatInputs(l *lowering, n int) error {
	for i := range n {
		if o := l.input(i); o.Present() && o.DType != inference.Float32 {
			return l.NoKernel("input %d is %v", i, o.DType)
		}
	}
	return nil
}

// normOutputs counts the outputs the node names.
func normOutputs(l *lowering) int {
	c := 0
	for _, o := range l.Out {
		if o.Present() {
			c++
		}
	}
	return c
}

// lowerBatchNorm handles inference mode: y = x·a + (B − mean·a) per
// channel, a = scale/√(var + epsilon), or per element of a sample with
// spatial=0 before opset 9.
func lowerBatchNorm(l *lowering) error {
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
	return l.Launch(kernels.NormBatchF32, y.Len(), ptrArg(y), ptrArg(x), ptrArg(l.In[1]), ptrArg(l.In[2]), ptrArg(l.In[3]), ptrArg(l.In[4]),
		intArg(y.Len()), intArg(params), intArg(repeat), floatArg(l.Float("epsilon", 1e-5)))
}

// normRows is one launch of norm_rows_f32 over the node's X, scale and
// first output.
type normRows struct {
	rows, size             int64
	rms                    bool
	sdiv, smod, bdiv, bmod int64
	bias, mean, inv        kernelArg
}

func (r normRows) launch(l *lowering) error {
	if r.size == 0 {
		return l.NoKernel("empty rows")
	}
	rms := int64(0)
	if r.rms {
		rms = 1
	}
	return launchRows(l, kernels.NormRowsF32, r.rows, ptrArg(l.Out[0]), ptrArg(l.In[0]), ptrArg(l.In[1]), r.bias, r.mean, r.inv,
		intArg(r.rows), intArg(r.size), floatArg(l.Float("epsilon", 1e-5)), intArg(rms), intArg(r.sdiv), intArg(r.smod), intArg(r.bdiv), intArg(r.bmod))
}

// lowerInstanceNorm normalises each (sample, channel) block.
func lowerInstanceNorm(l *lowering) error {
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
		sdiv: size, smod: c, bdiv: size, bmod: c, bias: ptrArg(l.In[2]), mean: intArg(0), inv: intArg(0)}.launch(l)
}

// lowerGroupNorm normalises each (sample, group) block; scale and bias are
// per group before opset 21 and per channel from it.
func lowerGroupNorm(l *lowering) error {
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
		sdiv: div, smod: mod, bdiv: div, bmod: mod, bias: ptrArg(l.In[2]), mean: intArg(0), inv: intArg(0)}.launch(l)
}

// normTrailing returns div and mod such that element i of a block of
// shape block reads element (i / div) % mod of t, which broadcasts to the
// block (rdTrailingOffsets on the CPU). ok is false for a broadcast that
// is not of that form: t's dimensions that are not 1 must be consecutive.
func normTrailing(t operand, block []int) (div, mod int64, ok bool) {
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
func normOptionalOutput(l *lowering, i int) kernelArg {
	if i < len(l.Out) && l.Out[i].Present() {
		return ptrArg(l.Out[i])
	}
	return intArg(0)
}

// lowerBlockNorm lowers LayerNormalization (with its optional Mean and
// InvStdDev outputs) and RMSNormalization: each block over the axes
// axis…rank−1 is a row.
func lowerBlockNorm(l *lowering, rms bool) error {
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
	r := normRows{rows: numElems(x.Shape[:axis]), size: numElems(block), rms: rms, bias: intArg(0), mean: intArg(0), inv: intArg(0)}
	var ok bool
	if r.sdiv, r.smod, ok = normTrailing(l.In[1], block); !ok {
		return l.NoKernel("scale %v on the normalised shape %v", l.In[1].Shape, block)
	}
	r.bdiv, r.bmod = 1, 1
	if b := l.input(2); b.Present() {
		if r.bdiv, r.bmod, ok = normTrailing(b, block); !ok {
			return l.NoKernel("B %v on the normalised shape %v", b.Shape, block)
		}
		r.bias = ptrArg(b)
	}
	if !rms {
		r.mean, r.inv = normOptionalOutput(l, 1), normOptionalOutput(l, 2)
	}
	return r.launch(l)
}

// lowerLpNorm divides by the 1- or 2-norm along axis (default −1), a
// block per row of the axis.
func lowerLpNorm(l *lowering) error {
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
	return launchRows(l, kernels.NormLpF32, outer*inner, ptrArg(y), ptrArg(x), intArg(outer), intArg(size), intArg(inner), intArg(p))
}

// lowerLRN sums squares over a window of channels per element.
func lowerLRN(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	size := l.Int("size", 0)
	if x.Rank() < 2 || size <= 0 {
		return l.NoKernel("X %v, size %d", x.Shape, size)
	}
	c, spatial := int64(x.Shape[1]), numElems(x.Shape[2:])
	return l.Launch(kernels.LrnF32, y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(c), intArg(spatial), intArg(size), intArg((size-1)/2), intArg(size/2),
		floatArg(l.Float("alpha", 1e-4)), floatArg(l.Float("beta", 0.75)), floatArg(l.Float("bias", 1)))
}

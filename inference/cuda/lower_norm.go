package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the normalisation operators (norm.cu): BatchNormalization in
// inference mode, the row normalisations (Instance, Group, Layer, RMS),
// LpNormalization and LRN. Their rules are opsem's: opsem.Epsilon,
// opsem.Channels, opsem.BatchNorm, opsem.GroupNorm, opsem.BlockNormAxis and
// opsem.BlockOperand, opsem.LpNorm and opsem.LRN. Each launches its
// kernel's float32 or float16 form for data of that type (normDType,
// halfKernel); LayerNormalization's Mean and InvStdDev are float32 either
// way.

func init() {
	registerLowering("BatchNormalization", lowerBatchNorm)
	registerLowering("InstanceNormalization", lowerInstanceNorm)
	registerLowering("GroupNormalization", lowerGroupNorm)
	registerLowering("LayerNormalization", func(l *lowering) error { return lowerBlockNorm(l, false) })
	registerLowering("RMSNormalization", func(l *lowering) error { return lowerBlockNorm(l, true) })
	registerLowering("LpNormalization", lowerLpNorm)
	registerLowering("LRN", lowerLRN)
	registerHalf("BatchNormalization", "InstanceNormalization", "GroupNormalization", "LayerNormalization",
		"RMSNormalization", "LpNormalization", "LRN")
}

// normDType returns the element type of the node's data, float32 or
// float16: that of X, of the first n inputs where present and of Y. mixed
// reports float32 and float16 among them, which the kernels do not take
// (BatchNormalization's scale, B, mean and var may each have a type of
// their own, RMSNormalization's scale and Y one other than X's): the
// lowering then runs in float32 between casts (lowerInFloat32).
func normDType(l *lowering, n int) (dt inference.DType, mixed bool, err error) {
	dt = l.In[0].DType
	if dt != inference.Float32 && dt != inference.Float16 {
		return 0, false, l.NoKernel("X is %v", dt)
	}
	for _, o := range append(slices.Clone(l.In[1:min(n, len(l.In))]), l.Out[0]) {
		if !o.Present() {
			continue
		}
		if o.DType != inference.Float32 && o.DType != inference.Float16 {
			return 0, false, l.NoKernel("%q is %v", o.Name, o.DType)
		}
		mixed = mixed || o.DType != dt
	}
	return dt, mixed, nil
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
// statistic, a = scale/√(var + epsilon), the statistics applied as
// opsem.BatchNorm says.
func lowerBatchNorm(l *lowering) error {
	dt, mixed, err := normDType(l, 5)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, lowerBatchNorm)
	}
	x, y := l.In[0], l.Out[0]
	params, repeat, training, err := opsem.BatchNorm(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if training {
		return l.NoKernel("training_mode")
	}
	if normOutputs(l) > 1 {
		return l.NoKernel("training-mode statistics outputs")
	}
	if len(l.In) < 5 {
		return l.NoKernel("%d inputs", len(l.In))
	}
	for _, o := range l.In[1:5] {
		if !o.Present() || o.Len() != int64(params) {
			return l.NoKernel("statistic %q %v, want %d values", o.Name, o.Shape, params)
		}
	}
	if repeat == 0 {
		return nil
	}
	return l.Launch(halfKernel(kernels.NormBatchF32, kernels.NormBatchF16, dt), y.Len(), ptrArg(y), ptrArg(x), ptrArg(l.In[1]), ptrArg(l.In[2]), ptrArg(l.In[3]), ptrArg(l.In[4]),
		intArg(y.Len()), intArg(params), intArg(repeat), floatArg(opsem.Epsilon(l.Node)))
}

// normRows is one launch of norm_rows_f32 or norm_rows_f16 (for dtype)
// over the node's X, scale and first output.
type normRows struct {
	dtype                  inference.DType
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
	return launchRows(l, halfKernel(kernels.NormRowsF32, kernels.NormRowsF16, r.dtype), r.rows, ptrArg(l.Out[0]), ptrArg(l.In[0]), ptrArg(l.In[1]), r.bias, r.mean, r.inv,
		intArg(r.rows), intArg(r.size), floatArg(opsem.Epsilon(l.Node)), intArg(rms), intArg(r.sdiv), intArg(r.smod), intArg(r.bdiv), intArg(r.bmod))
}

// lowerInstanceNorm normalises each (sample, channel) block
// (opsem.Channels).
func lowerInstanceNorm(l *lowering) error {
	if len(l.In) < 3 || !l.In[1].Present() || !l.In[2].Present() {
		return l.NoKernel("want input, scale and B")
	}
	dt, mixed, err := normDType(l, 3)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, lowerInstanceNorm)
	}
	n, c, spatial, err := opsem.Channels(l.In[0].Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if l.In[1].Len() != int64(c) || l.In[2].Len() != int64(c) {
		return l.NoKernel("scale %v, B %v for %d channels", l.In[1].Shape, l.In[2].Shape, c)
	}
	size := int64(spatial)
	return normRows{dtype: dt, rows: int64(n) * int64(c), size: size,
		sdiv: size, smod: int64(c), bdiv: size, bmod: int64(c), bias: ptrArg(l.In[2]), mean: intArg(0), inv: intArg(0)}.launch(l)
}

// lowerGroupNorm normalises each (sample, group) block; scale and bias
// hold opsem.GroupNorm's params values, one per group or one per channel.
func lowerGroupNorm(l *lowering) error {
	if len(l.In) < 3 || !l.In[1].Present() || !l.In[2].Present() {
		return l.NoKernel("want X, scale and bias")
	}
	dt, mixed, err := normDType(l, 3)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, lowerGroupNorm)
	}
	x := l.In[0]
	groups, params, err := opsem.GroupNorm(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	n, c, spatial, _ := opsem.Channels(x.Shape)
	size := int64(c/groups) * int64(spatial)
	div := size // per group: element i of the tensor reads (i / size) % groups
	if params != groups {
		div = int64(spatial) // per channel: (i / spatial) % channels
	}
	mod := int64(params)
	if l.In[1].Len() != mod || l.In[2].Len() != mod {
		return l.NoKernel("scale %v, bias %v, want %d values", l.In[1].Shape, l.In[2].Shape, mod)
	}
	return normRows{dtype: dt, rows: int64(n) * int64(groups), size: size,
		sdiv: div, smod: mod, bdiv: div, bmod: mod, bias: ptrArg(l.In[2]), mean: intArg(0), inv: intArg(0)}.launch(l)
}

// blockDivMod returns div and mod such that element i of a normalised
// block of shape block reads element (i / div) % mod of o, a scale or bias
// that applies to the block as opsem.BlockOperand says. The kernel
// addresses only such broadcasts: o's dimensions that are not broadcast
// must be consecutive.
func blockDivMod(l *lowering, o operand, block []int, name string) (div, mod int64, err error) {
	t, err := opsem.BlockOperand(o.Shape, block, name)
	if err != nil {
		return 0, 0, l.NoKernel("%v", err)
	}
	off := len(block) - len(t)
	lo, hi := -1, -1
	after := false // past the run, having seen a broadcast dimension
	for d, b := range block {
		v := 1
		if d >= off {
			v = t[d-off]
		}
		switch {
		case b == 1:
		case v == b:
			if after {
				return 0, 0, l.NoKernel("%s %v on the normalised shape %v", name, o.Shape, block)
			}
			if lo < 0 {
				lo = d
			}
			hi = d + 1
		default: // v == 1: broadcast
			after = lo >= 0
		}
	}
	if lo < 0 {
		return 1, 1, nil
	}
	return int64(opsem.Count(block[hi:])), int64(opsem.Count(block[lo:hi])), nil
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
	dt, mixed, err := normDType(l, 3)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, func(l *lowering) error { return lowerBlockNorm(l, rms) })
	}
	x := l.In[0]
	if err := opsem.LayerNormStats(l.Node, !rms && normOutputs(l) > 1); err != nil {
		return l.NoKernel("%v", err)
	}
	axis, err := opsem.BlockNormAxis(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	block := x.Shape[axis:]
	r := normRows{dtype: dt, rows: int64(opsem.Count(x.Shape[:axis])), size: int64(opsem.Count(block)), rms: rms, bias: intArg(0), mean: intArg(0), inv: intArg(0)}
	if r.sdiv, r.smod, err = blockDivMod(l, l.In[1], block, "scale"); err != nil {
		return err
	}
	r.bdiv, r.bmod = 1, 1
	if b := l.input(2); b.Present() {
		if r.bdiv, r.bmod, err = blockDivMod(l, b, block, "B"); err != nil {
			return err
		}
		r.bias = ptrArg(b)
	}
	if !rms {
		r.mean, r.inv = normOptionalOutput(l, 1), normOptionalOutput(l, 2)
	}
	return r.launch(l)
}

// lowerLpNorm divides by the 1- or 2-norm along opsem.LpNorm's axis, a
// block per row of the axis.
func lowerLpNorm(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	dt, mixed, err := normDType(l, 1)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, lowerLpNorm)
	}
	p, axis, err := opsem.LpNorm(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	outer, size, inner := opsem.SplitAxis(x.Shape, axis)
	return launchRows(l, halfKernel(kernels.NormLpF32, kernels.NormLpF16, dt), int64(outer)*int64(inner), ptrArg(y), ptrArg(x), intArg(outer), intArg(size), intArg(inner), intArg(p))
}

// lowerLRN sums squares over opsem.LRN's window of channels per element.
func lowerLRN(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	dt, mixed, err := normDType(l, 1)
	if err != nil {
		return err
	}
	if mixed {
		return lowerInFloat32(l, lowerLRN)
	}
	_, c, spatial, err := opsem.Channels(x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	size, alpha, beta, bias, err := opsem.LRN(l.Node)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	return l.Launch(halfKernel(kernels.LrnF32, kernels.LrnF16, dt), y.Len(), ptrArg(y), ptrArg(x), intArg(y.Len()), intArg(c), intArg(spatial), intArg(size), intArg((size-1)/2), intArg(size/2),
		floatArg(alpha), floatArg(beta), floatArg(bias))
}

package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Normalisation operators. Statistics are computed in float64 whatever
// stash_type asks for, which is at least as accurate.

func init() {
	register("BatchNormalization", nmBatchNorm)
	register("InstanceNormalization", nmInstanceNorm)
	register("LayerNormalization", nmLayerNorm)
	register("GroupNormalization", nmGroupNorm)
	register("RMSNormalization", nmRMSNorm)
	register("LRN", nmLRN)
	register("LpNormalization", nmLpNorm)
	register("MeanVarianceNormalization", nmMVN)
}

// nmFloatInputs returns the data of inputs 0, 1, … named names (nil for
// one left out), failing with Unsupported for an element type other than
// float32.
func nmFloatInputs(n Node, in []inference.Tensor, names ...string) ([][]float32, error) {
	out := make([][]float32, len(names))
	for i, name := range names {
		var err error
		if _, out[i], err = floatArg(n, in, i, name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nmMeanVar returns the mean and the population variance of x, in two
// passes for accuracy.
func nmMeanVar(x []float32) (mean, variance float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		d := float64(v) - mean
		variance += d * d
	}
	return mean, variance / float64(len(x))
}

// nmChannels checks that x is [N, C, …] and returns N, C and the number of
// elements per channel and sample.
func nmChannels(x inference.Tensor) (batch, channels, spatial int, err error) {
	shape := x.Shape()
	if len(shape) < 2 {
		return 0, 0, 0, fmt.Errorf("input %v, want rank 2 or more (N, C, …): %w", x, inference.ErrShape)
	}
	return shape[0], shape[1], product(shape[2:]), nil
}

// nmWantLen checks that input i holds want elements.
func nmWantLen(in []inference.Tensor, i int, name string, want int) error {
	if t := in[i]; t.Len() != want {
		return fmt.Errorf("input %d (%s) is %v, want %d elements: %w", i, name, t, want, inference.ErrShape)
	}
	return nil
}

// nmOutputs counts the node outputs that are named (not left out).
func nmOutputs(n Node) int {
	c := 0
	for _, o := range n.Outputs {
		if o != "" {
			c++
		}
	}
	return c
}

// nmBatchNorm is BatchNormalization in inference mode:
// y = scale·(x - mean)/√(var + epsilon) + B per channel (dimension 1); with
// spatial=0 (before opset 9) the statistics are per element of a sample.
// Training (training_mode=1 from opset 14, or the running/saved statistic
// outputs of older opsets) is unsupported.
func nmBatchNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	training := n.Opset >= 14 && n.Int("training_mode", 0) != 0
	if !training && nmOutputs(n) > 1 {
		return nil, Unsupported(n, "training-mode statistics outputs before opset 14")
	}
	if len(in) < 5 {
		return nil, fmt.Errorf("%d inputs, want 5 (X, scale, B, mean, var): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "B", "mean", "var")
	if err != nil {
		return nil, err
	}
	x, scale, bias, mean, variance := d[0], d[1], d[2], d[3], d[4]
	batch, channels, spatial, err := nmChannels(in[0])
	if err != nil {
		return nil, err
	}
	// params is how many values each statistic input holds; each applies to
	// repeat consecutive elements of a sample.
	params, repeat := channels, spatial
	if n.Opset < 9 && n.Int("spatial", 1) == 0 {
		params, repeat = channels*spatial, 1
	}
	for i, name := range []string{"scale", "B", "mean", "var"} {
		if err := nmWantLen(in, i+1, name, params); err != nil {
			return nil, err
		}
	}
	eps := float64(n.Float("epsilon", 1e-5))
	var outs []inference.Tensor
	if training {
		// Normalise with the batch's own statistics (population variance
		// over the batch and spatial axes) and return the running
		// statistics updated with momentum, as ONNX's reference does.
		momentum := float64(n.Float("momentum", 0.9))
		batchMean := make([]float32, params)
		batchVar := make([]float32, params)
		runMean := make([]float32, params)
		runVar := make([]float32, params)
		for c := range params {
			var sum, sq float64
			for s := range batch {
				base := (s*params + c) * repeat
				for _, v := range x[base : base+repeat] {
					sum += float64(v)
					sq += float64(v) * float64(v)
				}
			}
			cnt := float64(batch * repeat)
			m := sum / cnt
			v := sq/cnt - m*m
			batchMean[c], batchVar[c] = float32(m), float32(v)
			runMean[c] = float32(float64(mean[c])*momentum + m*(1-momentum))
			runVar[c] = float32(float64(variance[c])*momentum + v*(1-momentum))
		}
		mean, variance = batchMean, batchVar
		for _, stat := range [][]float32{runMean, runVar} {
			t, err := inference.New([]int{params}, stat)
			if err != nil {
				return nil, err
			}
			outs = append(outs, t)
		}
	}
	y := make([]float32, len(x))
	for c := range params {
		a := float64(scale[c]) / math.Sqrt(float64(variance[c])+eps)
		b := float64(bias[c]) - float64(mean[c])*a
		for s := range batch {
			base := (s*params + c) * repeat
			for i := base; i < base+repeat; i++ {
				y[i] = float32(float64(x[i])*a + b)
			}
		}
	}
	out, err := inference.New(in[0].Shape(), y)
	if err != nil {
		return nil, err
	}
	return append([]inference.Tensor{out}, outs...), nil
}

// nmInstanceNorm is InstanceNormalization: each (sample, channel) block is
// normalised by its own mean and variance, then scaled and shifted per
// channel: y = scale·(x - μ)/√(σ² + epsilon) + B.
func nmInstanceNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 3 {
		return nil, fmt.Errorf("%d inputs, want 3 (input, scale, B): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "input", "scale", "B")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := nmChannels(in[0])
	if err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 1, "scale", channels); err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 2, "B", channels); err != nil {
		return nil, err
	}
	eps := float64(n.Float("epsilon", 1e-5))
	x, y := d[0], make([]float32, len(d[0]))
	for b := range batch * channels {
		c := b % channels
		block := x[b*spatial : (b+1)*spatial]
		mean, variance := nmMeanVar(block)
		a := float64(d[1][c]) / math.Sqrt(variance+eps)
		shift := float64(d[2][c]) - mean*a
		for i, v := range block {
			y[b*spatial+i] = float32(float64(v)*a + shift)
		}
	}
	return singleOutput(in[0].Shape(), y)
}

// nmTrailingOffsets returns, for each element of the normalised block
// shape[axis:], the element of t (a scale or bias) that broadcasting maps to
// it; t must broadcast to the block without growing it. nil t gives nil.
func nmTrailingOffsets(t inference.Tensor, name string, block []int) ([]int, error) {
	if !Present(t) {
		return nil, nil
	}
	s := t.Shape()
	for len(s) > len(block) && s[0] == 1 {
		s = s[1:]
	}
	b, err := BroadcastShape(block, s)
	if err != nil || !slices.Equal(b, block) {
		return nil, fmt.Errorf("%s %v does not broadcast to the normalised shape %v: %w", name, t, block, inference.ErrShape)
	}
	return BroadcastOffsets(s, block), nil
}

// nmLayerNorm is LayerNormalization: each block x[i, …] over the axes
// axis…rank-1 is normalised, y = (x - μ)·InvStdDev·Scale + B with
// InvStdDev = 1/√(σ² + epsilon); the optional outputs are μ and InvStdDev
// with the normalised axes kept as size 1.
func nmLayerNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return nmBlockNorm(n, in, false)
}

// nmRMSNorm is RMSNormalization: y = x / √(mean(x²) + epsilon) ·
// scale over the axes axis…rank-1.
func nmRMSNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return nmBlockNorm(n, in, true)
}

func nmBlockNorm(n Node, in []inference.Tensor, rms bool) ([]inference.Tensor, error) {
	if len(in) < 2 || !Present(in[1]) {
		return nil, fmt.Errorf("%d inputs, want X and scale: %w", len(in), inference.ErrBadModel)
	}
	outputs := len(n.Outputs)
	if rms {
		outputs = 1
	}
	if !rms && nmOutputs(n) > 1 && n.Int("stash_type", 1) != 1 {
		return nil, Unsupported(n, "stash_type %d for the Mean and InvStdDev outputs", n.Int("stash_type", 1))
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "B")
	if err != nil {
		return nil, err
	}
	x, scale, bias := d[0], d[1], d[2]
	shape := in[0].Shape()
	axis, err := NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", in[0], err)
	}
	block := shape[axis:]
	size, rows := product(block), product(shape[:axis])
	scaleAt, err := nmTrailingOffsets(in[1], "scale", block)
	if err != nil {
		return nil, err
	}
	biasAt, err := nmTrailingOffsets(Arg(in, 2), "B", block)
	if err != nil {
		return nil, err
	}
	eps := float64(n.Float("epsilon", 1e-5))
	y := make([]float32, len(x))
	means, invs := make([]float32, rows), make([]float32, rows)
	for r := range rows {
		row := x[r*size : (r+1)*size]
		var mean, inv float64
		if rms {
			var sq float64
			for _, v := range row {
				sq += float64(v) * float64(v)
			}
			inv = 1 / math.Sqrt(sq/float64(size)+eps)
		} else {
			var variance float64
			mean, variance = nmMeanVar(row)
			inv = 1 / math.Sqrt(variance+eps)
		}
		means[r], invs[r] = float32(mean), float32(inv)
		for i, v := range row {
			z := (float64(v) - mean) * inv * float64(scale[scaleAt[i]])
			if bias != nil {
				z += float64(bias[biasAt[i]])
			}
			y[r*size+i] = float32(z)
		}
	}
	out, err := inference.New(shape, y)
	if err != nil {
		return nil, err
	}
	res := []inference.Tensor{out}
	if outputs > 1 {
		statShape := append([]int{}, shape[:axis]...)
		for range block {
			statShape = append(statShape, 1)
		}
		for _, s := range [][]float32{means, invs}[:min(2, outputs-1)] {
			t, err := inference.New(statShape, s)
			if err != nil {
				return nil, err
			}
			res = append(res, t)
		}
	}
	return res, nil
}

// nmGroupNorm is GroupNormalization: the channels are split into
// num_groups groups, each (sample, group) block is normalised by its mean
// and variance, then scaled and shifted per group (opset 18) or per channel
// (opset 21).
func nmGroupNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 3 {
		return nil, fmt.Errorf("%d inputs, want 3 (X, scale, bias): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "bias")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := nmChannels(in[0])
	if err != nil {
		return nil, err
	}
	if !n.Has("num_groups") {
		return nil, fmt.Errorf("attribute num_groups missing: %w", inference.ErrBadModel)
	}
	groups := int(n.Int("num_groups", 0))
	if groups <= 0 || channels%groups != 0 {
		return nil, fmt.Errorf("num_groups %d does not divide the %d channels of input %v: %w", groups, channels, in[0], inference.ErrShape)
	}
	perGroup := n.Opset < 21
	params := channels
	if perGroup {
		params = groups
	}
	if err := nmWantLen(in, 1, "scale", params); err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 2, "bias", params); err != nil {
		return nil, err
	}
	eps := float64(n.Float("epsilon", 1e-5))
	x, scale, bias := d[0], d[1], d[2]
	y := make([]float32, len(x))
	cpg := channels / groups
	size := cpg * spatial
	for b := range batch * groups {
		g := b % groups
		mean, variance := nmMeanVar(x[b*size : (b+1)*size])
		inv := 1 / math.Sqrt(variance+eps)
		for k := range cpg {
			p := g
			if !perGroup {
				p = g*cpg + k
			}
			a := inv * float64(scale[p])
			shift := float64(bias[p]) - mean*a
			base := b*size + k*spatial
			for i := base; i < base+spatial; i++ {
				y[i] = float32(float64(x[i])*a + shift)
			}
		}
	}
	return singleOutput(in[0].Shape(), y)
}

// nmLRN is LRN across channels: y = x / (bias + alpha/size · Σ x²)^beta, the
// sum over channels c - ⌊(size-1)/2⌋ … c + ⌈(size-1)/2⌉ clipped to the input.
func nmLRN(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "X")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := nmChannels(in[0])
	if err != nil {
		return nil, err
	}
	size := n.Int("size", 0)
	if size <= 0 {
		return nil, fmt.Errorf("attribute size is %d, want a positive window: %w", size, inference.ErrBadModel)
	}
	alpha := float64(n.Float("alpha", 1e-4))
	beta := float64(n.Float("beta", 0.75))
	bias := float64(n.Float("bias", 1))
	lo, hi := int((size-1)/2), int(size/2)
	x, y := d[0], make([]float32, len(d[0]))
	for b := range batch {
		for c := range channels {
			from, to := max(0, c-lo), min(channels-1, c+hi)
			for s := range spatial {
				var sq float64
				for k := from; k <= to; k++ {
					v := float64(x[(b*channels+k)*spatial+s])
					sq += v * v
				}
				i := (b*channels+c)*spatial + s
				y[i] = float32(float64(x[i]) / math.Pow(bias+alpha/float64(size)*sq, beta))
			}
		}
	}
	return singleOutput(in[0].Shape(), y)
}

// nmLpNorm is LpNormalization: y = x / ‖x‖_p along axis (default -1), p 1 or
// 2 (default 2); a slice whose norm is 0 gives 0.
func nmLpNorm(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "input")
	if err != nil {
		return nil, err
	}
	p := n.Int("p", 2)
	if p != 1 && p != 2 {
		return nil, Unsupported(n, "p=%d", p)
	}
	shape := in[0].Shape()
	axis, err := NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", in[0], err)
	}
	outer, size, inner := splitAxis(shape, axis)
	x, y := d[0], make([]float32, len(d[0]))
	for o := range outer {
		for j := range inner {
			base := o*size*inner + j
			var norm float64
			for k := range size {
				v := float64(x[base+k*inner])
				if p == 1 {
					norm += math.Abs(v)
				} else {
					norm += v * v
				}
			}
			if p == 2 {
				norm = math.Sqrt(norm)
			}
			if norm == 0 {
				continue
			}
			for k := range size {
				i := base + k*inner
				y[i] = float32(float64(x[i]) / norm)
			}
		}
	}
	return singleOutput(shape, y)
}

// nmMVN is MeanVarianceNormalization: y = (x - μ) / (σ + 1e-9) with μ and σ²
// the mean and population variance over axes (default [0, 2, 3]), as the
// operator's function body defines it.
func nmMVN(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "X")
	if err != nil {
		return nil, err
	}
	axes := n.Ints("axes", []int64{0, 2, 3})
	p, err := newReducePlan(in[0].Shape(), axes, true)
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", in[0], err)
	}
	x := d[0]
	k := product(p.keep)
	// den is first the sum of squared deviations, then σ + 1e-9.
	mean, den := make([]float64, k), make([]float64, k)
	for i, v := range x {
		mean[p.offs[i]] += float64(v)
	}
	for o := range mean {
		mean[o] /= float64(p.count)
	}
	for i, v := range x {
		dv := float64(v) - mean[p.offs[i]]
		den[p.offs[i]] += dv * dv
	}
	for o := range den {
		den[o] = math.Sqrt(den[o]/float64(p.count)) + 1e-9
	}
	y := make([]float32, len(x))
	for i, v := range x {
		o := p.offs[i]
		y[i] = float32((float64(v) - mean[o]) / den[o])
	}
	return singleOutput(in[0].Shape(), y)
}

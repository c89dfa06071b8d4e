package cpu

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
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
// one left out after the first, the data input, which every normalization
// requires; at most nmMaxInputs), failing with Unsupported for an element type other than
// float32.
func nmFloatInputs(n opsem.Node, in []inference.Tensor, names ...string) (out [nmMaxInputs][]float32, err error) {
	if _, err := requiredArg(in, 0, names[0]); err != nil {
		return out, err
	}
	for i, name := range names {
		if _, out[i], err = floatArg(n, in, i, name); err != nil {
			return out, err
		}
	}
	return out, nil
}

// nmMaxInputs is the most inputs a normalization has (BatchNormalization's
// X, scale, B, mean and var): nmFloatInputs returns their data in an
// array, not a slice it would allocate each run.
const nmMaxInputs = 5

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

// nmWantLen checks that input i holds want elements.
func nmWantLen(in []inference.Tensor, i int, name string, want int) error {
	if t := in[i]; t.Len() != want {
		return fmt.Errorf("input %d (%s) is %v, want %d elements: %w", i, name, t, want, inference.ErrShape)
	}
	return nil
}

// nmOutputs counts the node outputs that are named (not left out).
func nmOutputs(n opsem.Node) int {
	c := 0
	for _, o := range n.Outputs {
		if o != "" {
			c++
		}
	}
	return c
}

// nmBatchNorm is BatchNormalization: y = scale·(x - mean)/√(var + epsilon)
// + B with the statistics opsem.BatchNorm applies (per channel, or with
// spatial=0 before opset 9 per element of a sample). In training mode
// (training_mode=1 from opset 14) it normalises with the batch's own
// statistics; the running/saved statistic outputs of older opsets are
// unsupported.
func nmBatchNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 5 {
		return nil, fmt.Errorf("%d inputs, want 5 (X, scale, B, mean, var): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "B", "mean", "var")
	if err != nil {
		return nil, err
	}
	x, scale, bias, mean, variance := d[0], d[1], d[2], d[3], d[4]
	p, err := opsem.Plan(n, in, func() (*nmBatchNormPlan, error) {
		p := &nmBatchNormPlan{shape: in[0].Shape()}
		var err error
		if p.params, p.repeat, p.training, err = opsem.BatchNorm(n, p.shape); err != nil {
			return nil, err
		}
		// The parameters hold a value per channel (which also bounds the
		// plan's table by their size, whatever X's shape claims: a batch
		// of 0 with 2⁶² channels).
		for i, name := range []string{"scale", "B", "mean", "var"} {
			if err := nmWantLen(in, i+1, name, p.params); err != nil {
				return nil, err
			}
		}
		if p.ep, err = fusedEpilogue(n, in, p.shape); err != nil {
			return nil, err
		}
		p.ab = make([]float32, 2*p.params)
		p.body = p.planes
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	params, repeat, training := p.params, p.repeat, p.training
	if !training && nmOutputs(n) > 1 {
		return nil, n.Unsupported("training-mode statistics outputs before opset 14")
	}
	batch := p.shape[0]
	if len(x) == 0 {
		batch = 0 // the loops would count the dimensions that are not 0
	}
	eps := opsem.Epsilon(n)
	var outs []inference.Tensor
	if training {
		// Normalise with the batch's own statistics (population variance
		// over the batch and spatial axes) and return the running
		// statistics updated with momentum, as ONNX's reference does.
		momentum := float64(n.Float("momentum", 0.9))
		// As many as the scale input has, each written below: the batch's
		// statistics (scratch) and the running ones (outputs).
		var stats [4][]float32
		for i := range stats {
			if stats[i], err = limit.MakeOverwritten[float32](n.Run, params); err != nil {
				return nil, err
			}
		}
		batchMean, batchVar, runMean, runVar := stats[0], stats[1], stats[2], stats[3]
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
	y, err := limit.MakeOverwritten[float32](n.Run, p.shape...) // every plane written below
	if err != nil {
		return nil, err
	}
	// y = a·x + b per channel, a and b worked out in float64 and applied
	// in float32, as a BatchNormalization folded into a Conv's weights is,
	// then the activation fused after it (FuseEpilogues), while the plane
	// is in cache: planes in parallel, each with vector loops, scalar for
	// short ones.
	for c := range params {
		a := float64(scale[c]) / math.Sqrt(float64(variance[c])+eps)
		p.ab[2*c], p.ab[2*c+1] = float32(a), float32(float64(bias[c])-float64(mean[c])*a)
	}
	p.x, p.y = x, y
	parallelFor(batch*params, 2*repeat, p.body)
	p.x, p.y = nil, nil
	if !training {
		outs, err := opsem.Single(n, p.shape, y)
		return unfusedEpilogue(n, in, p.ep, outs, err)
	}
	out, err := inference.New(p.shape, y)
	if err != nil {
		return nil, err
	}
	return unfusedEpilogue(n, in, p.ep, append([]inference.Tensor{out}, outs...), nil)
}

// planes computes the output planes lo…hi−1 (sample·params + channel).
func (p *nmBatchNormPlan) planes(lo, hi int) {
	repeat, params := p.repeat, p.params
	for i := lo; i < hi; i++ {
		c := i % params
		a, b := p.ab[2*c], p.ab[2*c+1]
		xs, ys := p.x[i*repeat:(i+1)*repeat], p.y[i*repeat:(i+1)*repeat]
		if repeat >= 16 {
			ewArithVS(ewMul, ys, xs, a)
			ewArithVS(ewAdd, ys, ys, b)
		} else {
			for j, v := range xs {
				ys[j] = v*a + b
			}
		}
		p.ep.apply(ys, i*repeat)
	}
}

// nmBatchNormPlan is what a BatchNormalization keeps from run to run
// (opsem.Plan): X's shape, opsem.BatchNorm's reading of it, the
// activation fused after it (nil for none), and its loop over planes,
// bound once, with the run's operands.
type nmBatchNormPlan struct {
	shape          []int
	params, repeat int
	training       bool
	ep             *epilogue
	ab             []float32 // a and b of each channel, this run
	x, y           []float32 // this run's
	body           func(lo, hi int)
}

// nmInstanceNorm is InstanceNormalization: each (sample, channel) block is
// normalised by its own mean and variance, then scaled and shifted per
// channel: y = scale·(x - μ)/√(σ² + epsilon) + B.
func nmInstanceNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 3 {
		return nil, fmt.Errorf("%d inputs, want 3 (input, scale, B): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "input", "scale", "B")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := opsem.Channels(in[0].Shape())
	if err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 1, "scale", channels); err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 2, "B", channels); err != nil {
		return nil, err
	}
	eps := opsem.Epsilon(n)
	x := d[0]
	y, err := limit.MakeOverwritten[float32](n.Run, len(x)) // every block is written
	if err != nil {
		return nil, err
	}
	if len(x) == 0 { // the loop would count the dimensions that are not 0
		return opsem.Single(n, in[0].Shape(), y)
	}
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
	return opsem.Single(n, in[0].Shape(), y)
}

// nmTrailingOffsets returns, for each element of the normalised block (size
// elements), the element of t (a scale or bias) that broadcasting maps to
// it, t taking the shape opsem.BlockOperand gives it; the table is a
// plan's, claimed under r. nil t gives nil, and so does an input without
// rows (its block may not count within int).
func nmTrailingOffsets(r *limit.Run, t inference.Tensor, name string, block []int, rows, size int) ([]int, error) {
	if !present(t) {
		return nil, nil
	}
	s, err := opsem.BlockOperand(t.Shape(), block, name)
	if err != nil || rows == 0 {
		return nil, err
	}
	if _, err := limit.Claim[int](r, size); err != nil {
		return nil, err
	}
	return opsem.BroadcastOffsets(s, block), nil
}

// isIota reports whether t[i] = i for every i.
func isIota(t []int) bool {
	for i, v := range t {
		if v != i {
			return false
		}
	}
	return true
}

// nmLayerNorm is LayerNormalization: each block x[i, …] over the axes
// axis…rank-1 (opsem.BlockNormAxis) is normalised,
// y = (x - μ)·InvStdDev·Scale + B with InvStdDev = 1/√(σ² + epsilon); the
// optional outputs are μ and InvStdDev with the normalised axes kept as
// size 1.
func nmLayerNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return nmBlockNorm(n, in, false)
}

// nmRMSNorm is RMSNormalization: y = x / √(mean(x²) + epsilon) ·
// scale over the axes axis…rank-1.
func nmRMSNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	return nmBlockNorm(n, in, true)
}

// nmBlockNorm is LayerNormalization and, with rms, RMSNormalization. What
// the input's shape and the scale's and B's decide is planned once for
// them (nmBlockPlan).
func nmBlockNorm(n opsem.Node, in []inference.Tensor, rms bool) ([]inference.Tensor, error) {
	if len(in) < 2 || !present(in[1]) {
		return nil, fmt.Errorf("%d inputs, want X and scale: %w", len(in), inference.ErrBadModel)
	}
	outputs := len(n.Outputs)
	if rms {
		outputs = 1
	}
	if err := opsem.LayerNormStats(n, !rms && nmOutputs(n) > 1); err != nil {
		return nil, err
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "B")
	if err != nil {
		return nil, err
	}
	x, scale, bias := d[0], d[1], d[2]
	p, err := opsem.Plan(n, in, func() (*nmBlockPlan, error) { return newNmBlockPlan(n, in, rms) })
	if err != nil {
		return nil, err
	}
	means, err := limit.Make[float32](n.Run, p.lead...)
	if err != nil {
		return nil, err
	}
	invs, err := limit.Make[float32](n.Run, p.lead...)
	if err != nil {
		return nil, err
	}
	y, err := limit.MakeOverwritten[float32](n.Run, p.count...)
	if err != nil {
		return nil, err
	}
	// Scale and B as long as the block index it directly.
	p.direct = p.rows > 0 && len(scale) == p.size && isIota(p.scaleAt) && (bias == nil || len(bias) == p.size && isIota(p.biasAt))
	p.x, p.scale, p.bias, p.y, p.means, p.invs = x, scale, bias, y, means, invs
	parallelFor(p.rows, 8*p.size, p.body)
	p.x, p.scale, p.bias, p.y, p.means, p.invs = nil, nil, nil, nil, nil, nil // not to hold the buffers until the next run
	k := 1
	if outputs > 1 {
		k += min(2, outputs-1)
	}
	// An output the node leaves unnamed (Mean and InvStdDev mostly) is no
	// one's: its buffer was scratch, and it is returned as the zero Tensor,
	// or not at all after the last named one (namedOutputs).
	k = namedOutputs(n, k)
	res := n.Results(k)
	for j, s := range [][]float32{y, means, invs}[:k] {
		if !wantsOutput(n, j) {
			res[j] = inference.Tensor{}
			continue
		}
		shape := p.shape
		if j > 0 {
			shape = p.statShape
		}
		if res[j], err = opsem.Output(n, j, shape, s); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// nmBlockPlan is what nmBlockNorm keeps for one shape of X, scale and B:
// the shapes of the output and of the statistics, the rows of size
// elements that are normalised on their own, the element of scale and of
// B for each element of a row (nmTrailingOffsets), and the loop over the
// rows, bound once (body) to read the operands of the run under way.
type nmBlockPlan struct {
	rms              bool
	eps              float64
	shape, statShape []int
	lead             []int // shape before the normalised axes: one statistic each
	count            []int // [the elements of X], Make's shape for y
	rows, size       int
	scaleAt, biasAt  []int

	direct                         bool
	x, scale, bias, y, means, invs []float32
	body                           func(lo, hi int)
}

func newNmBlockPlan(n opsem.Node, in []inference.Tensor, rms bool) (*nmBlockPlan, error) {
	shape := in[0].Shape()
	axis, err := opsem.BlockNormAxis(n, shape)
	if err != nil {
		return nil, err
	}
	block := shape[axis:]
	p := &nmBlockPlan{rms: rms, eps: opsem.Epsilon(n), shape: shape, lead: shape[:axis:axis], count: []int{in[0].Len()}}
	p.statShape = append([]int{}, shape[:axis]...)
	for range block {
		p.statShape = append(p.statShape, 1)
	}
	// Checked by the Make of the statistics, before the tables.
	if c := limit.Count(p.lead...); c >= 0 {
		p.rows = c
	}
	if p.rows > 0 {
		p.size = in[0].Len() / p.rows
	}
	if p.scaleAt, err = nmTrailingOffsets(n.Run, in[1], "scale", block, p.rows, p.size); err != nil {
		return nil, err
	}
	if p.biasAt, err = nmTrailingOffsets(n.Run, arg(in, 2), "B", block, p.rows, p.size); err != nil {
		return nil, err
	}
	p.body = p.normRows
	return p, nil
}

// normRows normalises rows lo…hi-1 of x into y, setting their statistics.
func (p *nmBlockPlan) normRows(lo, hi int) {
	x, y, scale, bias, means, invs := p.x, p.y, p.scale, p.bias, p.means, p.invs
	size, rms, eps, direct, scaleAt, biasAt := p.size, p.rms, p.eps, p.direct, p.scaleAt, p.biasAt
	for r := lo; r < hi; r++ {
		row := x[r*size : (r+1)*size]
		if direct {
			p.normRow(r, row, y[r*size:(r+1)*size])
			continue
		}
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
		out := y[r*size : (r+1)*size]
		for i, v := range row {
			z := (float64(v) - mean) * inv * float64(scale[scaleAt[i]])
			if bias != nil {
				z += float64(bias[biasAt[i]])
			}
			out[i] = float32(z)
		}
	}
}

// normRow normalises row r, x's elements row, into out, where scale and B
// are as long as the row (direct): the common case, in vector loops with
// float32 sums. The mean is taken twice: first from the sum (sumFloats),
// then corrected by the mean deviation d from it, with the variance, in
// one pass over the deviations (sumDev), so that their sums' rounding (at
// most about (size/8 + 16)·2⁻²⁴ of Σ|x − m|) is relative to the spread of
// the row, not to its mean; the output takes off m, then d: a row of
// 1000 + noise keeps the noise's digits.
func (p *nmBlockPlan) normRow(r int, row, out []float32) {
	n := float32(len(row))
	var m float32
	if !p.rms {
		m = sumFloats(row) / n
	}
	s, sq := sumDev(row, m)
	d := s / n // the mean's deviation from m
	variance := float64(sq/n) - float64(d)*float64(d)
	if p.rms {
		d, variance = 0, float64(sq/n)
	}
	inv := float32(1 / math.Sqrt(max(variance, 0)+p.eps))
	p.means[r], p.invs[r] = m+d, inv
	normAffine(out, row, p.scale, p.bias, m, d, inv)
}

// sumDevGo is sumDev's loop, in eight partial sums of each as the vector
// loop keeps them.
func sumDevGo(x []float32, m float32) (s, sq float32) {
	var a, b [8]float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		for j, v := range x[i : i+8] {
			d := v - m
			a[j] += d
			b[j] += d * d
		}
	}
	var ta, tb float32
	for _, v := range x[i:] {
		d := v - m
		ta += d
		tb += d * d
	}
	sum8 := func(s *[8]float32) float32 { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) }
	return sum8(&a) + ta, sum8(&b) + tb
}

// normAffineGo is normAffine's loop.
func normAffineGo(y, x, scale, bias []float32, m, d, inv float32) {
	x, scale = x[:len(y)], scale[:len(y)]
	for i, v := range x {
		t := float32(float32(float32(v-m)-d)*inv) * scale[i]
		if bias != nil {
			t += bias[i]
		}
		y[i] = t
	}
}

// nmGroupNorm is GroupNormalization: the channels are split into
// num_groups groups, each (sample, group) block is normalised by its mean
// and variance, then scaled and shifted per group (opset 18) or per channel
// (opset 21), as opsem.GroupNorm says.
func nmGroupNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 3 {
		return nil, fmt.Errorf("%d inputs, want 3 (X, scale, bias): %w", len(in), inference.ErrBadModel)
	}
	d, err := nmFloatInputs(n, in, "X", "scale", "bias")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := opsem.Channels(in[0].Shape())
	if err != nil {
		return nil, err
	}
	groups, params, err := opsem.GroupNorm(n, in[0].Shape())
	if err != nil {
		return nil, err
	}
	perChannel := params == channels
	if err := nmWantLen(in, 1, "scale", params); err != nil {
		return nil, err
	}
	if err := nmWantLen(in, 2, "bias", params); err != nil {
		return nil, err
	}
	eps := opsem.Epsilon(n)
	x, scale, bias := d[0], d[1], d[2]
	y, err := limit.Make[float32](n.Run, len(x))
	if err != nil {
		return nil, err
	}
	if len(x) == 0 { // the loop would count the dimensions that are not 0
		return opsem.Single(n, in[0].Shape(), y)
	}
	cpg := channels / groups
	size := cpg * spatial
	for b := range batch * groups {
		g := b % groups
		mean, variance := nmMeanVar(x[b*size : (b+1)*size])
		inv := 1 / math.Sqrt(variance+eps)
		for k := range cpg {
			p := g
			if perChannel {
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
	return opsem.Single(n, in[0].Shape(), y)
}

// nmLRN is LRN across channels: y = x / (bias + alpha/size · Σ x²)^beta, the
// sum over channels c - ⌊(size-1)/2⌋ … c + ⌈(size-1)/2⌉ clipped to the input
// (the attributes are opsem.LRN's).
func nmLRN(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "X")
	if err != nil {
		return nil, err
	}
	batch, channels, spatial, err := opsem.Channels(in[0].Shape())
	if err != nil {
		return nil, err
	}
	size, alpha, beta, bias, err := opsem.LRN(n)
	if err != nil {
		return nil, err
	}
	lo, hi := (size-1)/2, size/2
	x := d[0]
	y, err := limit.MakeOverwritten[float32](n.Run, len(x)) // every element is written
	if err != nil {
		return nil, err
	}
	if len(x) == 0 { // the loops would count the dimensions that are not 0
		return opsem.Single(n, in[0].Shape(), y)
	}
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
	return opsem.Single(n, in[0].Shape(), y)
}

// nmLpNorm is LpNormalization: y = x / ‖x‖_p along axis, with p and axis
// from opsem.LpNorm; a slice whose norm is 0 gives 0.
func nmLpNorm(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "input")
	if err != nil {
		return nil, err
	}
	shape := in[0].Shape()
	p, axis, err := opsem.LpNorm(n, shape)
	if err != nil {
		return nil, err
	}
	outer, size, inner := opsem.SplitAxis(shape, axis)
	x := d[0]
	y, err := limit.Make[float32](n.Run, len(x)) // a slice whose norm is 0 is left 0
	if err != nil {
		return nil, err
	}
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
	return opsem.Single(n, shape, y)
}

// nmMVN is MeanVarianceNormalization: y = (x - μ) / (σ + 1e-9) with μ and σ²
// the mean and population variance over axes (default [0, 2, 3]), as the
// operator's function body defines it.
func nmMVN(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	d, err := nmFloatInputs(n, in, "X")
	if err != nil {
		return nil, err
	}
	shape := in[0].Shape()
	axes := n.Ints("axes", []int64{0, 2, 3})
	reduced := make([]bool, len(shape))
	for i := range reduced {
		reduced[i] = len(axes) == 0 // an empty list reduces every axis
	}
	for _, a := range axes {
		ax, err := opsem.NormAxis(a, len(shape))
		if err != nil {
			return nil, fmt.Errorf("input %v: axes %v: %w", in[0], axes, err)
		}
		reduced[ax] = true
	}
	p, err := newReducePlan(n.Run, shape, reduced, nil)
	if err != nil {
		return nil, err
	}
	x := d[0]
	k := opsem.Count(p.keep)
	// den is first the sum of squared deviations, then σ + 1e-9. Both are
	// counted: newReducePlan claimed two float64 accumulators per output
	// element.
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
	y, err := limit.Make[float32](n.Run, len(x))
	if err != nil {
		return nil, err
	}
	for i, v := range x {
		o := p.offs[i]
		y[i] = float32((float64(v) - mean[o]) / den[o])
	}
	return opsem.Single(n, in[0].Shape(), y)
}

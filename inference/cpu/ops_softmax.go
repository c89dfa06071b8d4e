package cpu

import (
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The softmax family: Softmax, LogSoftmax and Hardmax.

func init() {
	register("Softmax", smSoftmax(smSoftmaxKind))
	register("LogSoftmax", smSoftmax(smLogSoftmaxKind))
	register("Hardmax", smSoftmax(smHardmaxKind))
	for _, op := range []string{"Softmax", "LogSoftmax", "Hardmax"} {
		registerTypes(op, moreFloats...)
	}
}

type smSoftmaxOp int

const (
	smSoftmaxKind smSoftmaxOp = iota
	smLogSoftmaxKind
	smHardmaxKind
)

// smSoftmax returns the Softmax, LogSoftmax or Hardmax kernel, which
// normalises each row of the input that opsem.SoftmaxRows gives (before
// opset 13 the trailing block from axis, from 13 the slice along axis).
// Softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m)
// with m the slice's maximum, LogSoftmax(x)_i = x_i - m - log Σ_j exp(x_j - m),
// and Hardmax is 1 at the first maximum, 0 elsewhere.
func smSoftmax(kind smSoftmaxOp) kernel {
	return func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		x, err := requiredArg(in, 0, "input")
		if err != nil {
			return nil, err
		}
		if x.DType() != inference.Float32 && x.DType() != inference.Float64 {
			return nil, n.Unsupported("element type %v", x.DType())
		}
		p, err := opsem.Plan(n, in, func() (*smPlan, error) {
			p := &smPlan{shape: x.Shape(), count: []int{x.Len()}}
			var err error
			if p.outer, p.size, p.inner, err = opsem.SoftmaxRows(n, p.shape); err != nil {
				return nil, err
			}
			p.rows = p.softmaxRows
			return p, nil
		})
		if err != nil {
			return nil, err
		}
		outer, size, inner, shape := p.outer, p.size, p.inner, p.shape
		if x.DType() == inference.Float64 {
			return smSoftmaxSlices[float64](n, kind, p, x)
		}
		d, _ := floats(x)
		y, err := limit.Make[float32](n.Run, p.count...)
		if err != nil {
			return nil, err
		}
		if len(d) == 0 { // the loops would count the dimensions that are not 0
			return opsem.Single(n, shape, y)
		}
		if kind == smSoftmaxKind && inner == 1 { // rows of contiguous elements
			p.x, p.y = d, y
			parallelFor(outer, size*ewVecCost, p.rows)
			p.x, p.y = nil, nil // not to hold the buffers until the next run
			return opsem.Single(n, shape, y)
		}
		for o := range outer {
			for j := range inner {
				base := o*size*inner + j
				smSoftmaxSlice(kind, d, y, base, size, inner)
			}
		}
		return opsem.Single(n, shape, y)
	}
}

// smPlan is what a softmax node keeps for one input shape: the shape, its
// rows (opsem.SoftmaxRows), and the parallel loop over contiguous rows,
// bound once (rows) to read the operands of the run under way, x and y.
type smPlan struct {
	shape              []int
	count              []int // [the input's elements], Make's shape for y
	outer, size, inner int
	x, y               []float32
	rows               func(lo, hi int)
}

// softmaxRows sets rows lo…hi-1 of y to the softmax of those of x.
func (p *smPlan) softmaxRows(lo, hi int) {
	size, y, d := p.size, p.y, p.x
	for o := lo; o < hi; o++ {
		smSoftmaxRow(y[o*size:(o+1)*size], d[o*size:(o+1)*size])
	}
}

// smSoftmaxRow sets y to the softmax of x in float32 (the sum in float32
// too: its terms lie in (0, 1]).
func smSoftmaxRow(y, x []float32) {
	m := maxFloats(x)
	if math.IsInf(float64(m), 0) || m != m { // e^(x−m) would be NaN: the reference path says what Softmax gives
		smSoftmaxSlice(smSoftmaxKind, x, y, 0, len(x), 1)
		return
	}
	scale(y, 1/expSum(y, x, m))
}

// scale sets y[i] *= r.
func scale(y []float32, r float32) { ewArithVS(ewMul, y, y, r) }

// smSoftmaxSlices normalises every slice of x, of floats T other than
// float32's hot path, into the node's output.
func smSoftmaxSlices[T float](n opsem.Node, kind smSoftmaxOp, p *smPlan, x inference.Tensor) ([]inference.Tensor, error) {
	d := dataOf[T](x)
	y, err := limit.Make[T](n.Run, p.count...)
	if err != nil {
		return nil, err
	}
	if len(d) == 0 { // the loops would count the dimensions that are not 0
		return opsem.Single(n, p.shape, y)
	}
	for o := range p.outer {
		for j := range p.inner {
			smSoftmaxSlice(kind, d, y, o*p.size*p.inner+j, p.size, p.inner)
		}
	}
	return opsem.Single(n, p.shape, y)
}

// smSoftmaxSlice normalises the size elements of x at base, base+stride, …
// into y, in float64.
func smSoftmaxSlice[T float](kind smSoftmaxOp, x, y []T, base, size, stride int) {
	if size == 0 {
		return
	}
	m, mi := x[base], 0
	for k := 1; k < size; k++ {
		if v := x[base+k*stride]; v > m {
			m, mi = v, k
		}
	}
	if kind == smHardmaxKind {
		y[base+mi*stride] = 1
		return
	}
	mf := float64(m)
	var sum float64
	for k := range size {
		sum += math.Exp(float64(x[base+k*stride]) - mf)
	}
	if kind == smLogSoftmaxKind {
		ls := mf + math.Log(sum)
		for k := range size {
			i := base + k*stride
			y[i] = T(float64(x[i]) - ls)
		}
		return
	}
	for k := range size {
		i := base + k*stride
		y[i] = T(math.Exp(float64(x[i])-mf) / sum)
	}
}

package cpu

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
)

// The softmax family: Softmax, LogSoftmax and Hardmax.

func init() {
	register("Softmax", smSoftmax(smSoftmaxKind))
	register("LogSoftmax", smSoftmax(smLogSoftmaxKind))
	register("Hardmax", smSoftmax(smHardmaxKind))
}

type smSoftmaxOp int

const (
	smSoftmaxKind smSoftmaxOp = iota
	smLogSoftmaxKind
	smHardmaxKind
)

// smSoftmax returns the Softmax, LogSoftmax or Hardmax kernel. Before opset
// 13 the input is coerced to 2-D [prod(shape[:axis]), prod(shape[axis:])]
// (axis default 1) and each row is normalised; from 13 on, each 1-D slice
// along axis (default -1) is. Softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m)
// with m the slice's maximum, LogSoftmax(x)_i = x_i - m - log Σ_j exp(x_j - m),
// and Hardmax is 1 at the first maximum, 0 elsewhere.
func smSoftmax(kind smSoftmaxOp) Kernel {
	return func(n Node, in []inference.Tensor) ([]inference.Tensor, error) {
		x := in[0]
		if x.DType() != inference.Float32 {
			return nil, Unsupported(n, "element type %v", x.DType())
		}
		shape := x.Shape()
		var outer, size, inner int
		if n.Opset < 13 {
			axis, err := NormAxis(n.Int("axis", 1), len(shape))
			if err != nil {
				return nil, fmt.Errorf("input %v: %w", x, err)
			}
			outer, size, inner = product(shape[:axis]), product(shape[axis:]), 1
		} else {
			axis, err := NormAxis(n.Int("axis", -1), len(shape))
			if err != nil {
				return nil, fmt.Errorf("input %v: %w", x, err)
			}
			outer, size, inner = splitAxis(shape, axis)
		}
		d, _ := Floats(x)
		y := make([]float32, len(d))
		for o := range outer {
			for j := range inner {
				base := o*size*inner + j
				smSoftmaxSlice(kind, d, y, base, size, inner)
			}
		}
		return singleOutput(shape, y)
	}
}

// smSoftmaxSlice normalises the size elements of x at base, base+stride, …
// into y.
func smSoftmaxSlice(kind smSoftmaxOp, x, y []float32, base, size, stride int) {
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
			y[i] = float32(float64(x[i]) - ls)
		}
		return
	}
	for k := range size {
		i := base + k*stride
		y[i] = float32(math.Exp(float64(x[i])-mf) / sum)
	}
}

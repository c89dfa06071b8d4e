package inference

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Helpers for the two ends of a pipeline: a row of values as an example's
// tensor, and the scores a classifier returns as labels and probabilities.
// A classifier's output for one example is a tensor whose last axis holds
// one score per class: [classes] for an image or a record, [tokens,
// classes] for token classification. The helpers work along that last
// axis, one row per position of the others.

// Row returns the rank-1 tensor of values: one example's input of
// len(values) elements, as the model's [?, n] input takes it without the
// batch dimension. It keeps values, as New does.
func Row[T Element](values ...T) Tensor {
	if values == nil {
		values = []T{}
	}
	return wrap([]int{len(values)}, values)
}

// rows returns t's elements as float64 rows along the last axis, for the
// numeric element types, or fails naming the helper.
func rows(helper string, t Tensor) (data []float64, width int, err error) {
	if t.Rank() == 0 {
		return nil, 0, fmt.Errorf("inference: %s of %v: a scalar has no class axis: %w", helper, t, ErrShape)
	}
	width = t.shape()[len(t.shape())-1]
	if t.dtype == Bool || t.dtype == String {
		return nil, 0, fmt.Errorf("inference: %s of %v: want numbers: %w", helper, t, ErrType)
	}
	if data, err = Float64s(t); err != nil {
		return nil, 0, fmt.Errorf("inference: %s of %v: want numbers: %w", helper, t, ErrType)
	}
	if width == 0 && rowCount(t) > 0 {
		return nil, 0, fmt.Errorf("inference: %s of %v: no classes: %w", helper, t, ErrShape)
	}
	return data, width, nil
}

// widened is d's values as float64s.
func widened[T Element](d []T, f func(T) float64) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = f(v)
	}
	return out
}

// ArgMax returns the index of the largest value along t's last axis, one
// per row: one label for a [classes] output, one per token for [tokens,
// classes]. Ties go to the first index, and a NaN counts as larger than
// any number (as numpy.argmax), so that a model that produced one is not
// reported as confident in a real class. Rows of zero classes have no
// largest value and fail with ErrShape.
func ArgMax(t Tensor) ([]int, error) {
	data, width, err := rows("ArgMax", t)
	if err != nil {
		return nil, err
	}
	if width == 0 { // no rows either
		return []int{}, nil
	}
	out := make([]int, 0, len(data)/width)
	for r := 0; r < len(data); r += width {
		row, best := data[r:r+width], 0
		for i, v := range row {
			if math.IsNaN(v) {
				best = i
				break
			}
			if v > row[best] {
				best = i
			}
		}
		out = append(out, best)
	}
	return out, nil
}

// rowCount is the number of rows along t's last axis: the product of the
// other dimensions.
func rowCount(t Tensor) int {
	n := 1
	for _, d := range t.shape()[:len(t.shape())-1] {
		n *= d
	}
	return n
}

// Softmax returns the probabilities of float32 scores t along its last
// axis: exp(x − max) / Σ exp(x − max) per row, in float64 and rounded to
// float32, so that large logits neither overflow nor lose the small
// classes. The result has t's shape. A row holding NaN gives NaN.
func Softmax(t Tensor) (Tensor, error) {
	d, err := Data[float32](t)
	if err != nil {
		return Tensor{}, fmt.Errorf("inference: Softmax of %v: want float32 scores: %w", t, ErrType)
	}
	if t.Rank() == 0 {
		return Tensor{}, fmt.Errorf("inference: Softmax of %v: a scalar has no class axis: %w", t, ErrShape)
	}
	width := t.shape()[len(t.shape())-1]
	out := make([]float32, len(d))
	for r := 0; width > 0 && r < len(d); r += width {
		row := d[r : r+width]
		hi := math.Inf(-1)
		for _, v := range row {
			hi = math.Max(hi, float64(v))
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - hi)
		}
		for i, v := range row {
			out[r+i] = float32(math.Exp(float64(v)-hi) / sum)
		}
	}
	return New(t.Shape(), out)
}

// A Scored is a class and its score, as TopK returns them.
type Scored struct {
	Class int     // the index along the class axis
	Score float64 // the value there, as float64 whatever t's element type
}

// TopK returns the k best classes of each row along t's last axis, best
// first (ties by the lower index; NaN first, as ArgMax). A row with fewer
// than k classes returns them all. Pass Softmax's result to get
// probabilities as scores.
func TopK(t Tensor, k int) ([][]Scored, error) {
	if k < 1 {
		return nil, fmt.Errorf("inference: TopK of %v: k is %d, want at least 1: %w", t, k, ErrShape)
	}
	data, width, err := rows("TopK", t)
	if err != nil {
		return nil, err
	}
	var out [][]Scored
	for r := 0; width > 0 && r < len(data); r += width {
		row := make([]Scored, width)
		for i, v := range data[r : r+width] {
			row[i] = Scored{Class: i, Score: v}
		}
		slices.SortStableFunc(row, func(a, b Scored) int {
			an, bn := math.IsNaN(a.Score), math.IsNaN(b.Score)
			switch {
			case an || bn:
				return -cmp.Compare(boolInt(an), boolInt(bn))
			default:
				return -cmp.Compare(a.Score, b.Score)
			}
		})
		out = append(out, row[:min(k, width):min(k, width)])
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Index tables, for the operators that move, select or create elements
// without arithmetic on them: most compute, for each output element, the
// offset of the input element it copies (take), so one generic copy serves
// every element type; viewAs gives a tensor a new shape sharing its data.

// tables returns, for each axis j of shape, the offset contribution of
// coordinate i: i·stride_j. Kernels replace some tables to slice, tile or
// pad along an axis, and pass the result to tableOffsets. The tables hold
// Σ shape[j] entries, which the run's budget bounds: a shape without
// elements may still have huge dimensions.
func tables(r *limit.Run, shape []int) ([][]int, error) {
	st := opsem.Strides(shape)
	tabs := make([][]int, len(shape))
	for j, d := range shape {
		var err error
		if tabs[j], err = axisTable(r, d, func(i int) int { return i * st[j] }); err != nil {
			return nil, err
		}
	}
	return tabs, nil
}

// axisTable returns the table [f(0), …, f(n-1)].
func axisTable(r *limit.Run, n int, f func(i int) int) ([]int, error) {
	t, err := limit.Make[int](r, n)
	for i := range t {
		t[i] = f(i)
	}
	return t, err
}

// tableShape is the shape that tables index: len(tabs[j]) along axis j.
func tableShape(tabs [][]int) []int {
	s := make([]int, len(tabs))
	for j, t := range tabs {
		s[j] = len(t)
	}
	return s
}

// takeTables returns the tensor of the tables' shape whose elements are
// src's elements at tableOffsets(tabs), or fill's where an offset is -1.
func takeTables(r *limit.Run, src inference.Tensor, tabs [][]int, fill inference.Tensor) (inference.Tensor, error) {
	if tableRuns(tabs) {
		switch src.DType() {
		case inference.Float32:
			return takeRunsOf[float32](r, src, tabs)
		case inference.Int64:
			return takeRunsOf[int64](r, src, tabs)
		case inference.Int32:
			return takeRunsOf[int32](r, src, tabs)
		case inference.Bool:
			return takeRunsOf[bool](r, src, tabs)
		case inference.Uint8:
			return takeRunsOf[uint8](r, src, tabs)
		}
	}
	offs, err := tableOffsets(r, tabs)
	if err != nil {
		return inference.Tensor{}, err
	}
	return take(r, src, tableShape(tabs), offs, fill)
}

// tableRuns reports whether the tables take runs of consecutive elements
// and no fill: no offset is negative, and the last axis's table counts up
// by one.
func tableRuns(tabs [][]int) bool {
	if len(tabs) == 0 || len(tabs[len(tabs)-1]) == 0 {
		return false
	}
	for _, t := range tabs[:len(tabs)-1] {
		for _, v := range t {
			if v < 0 {
				return false
			}
		}
	}
	last := tabs[len(tabs)-1]
	for i, v := range last {
		if v != last[0]+i || v < 0 {
			return false
		}
	}
	return true
}

// takeRunsOf is takeTables for tables that tableRuns accepts: a copy per
// run along the last axis, without a table of offsets.
func takeRunsOf[T inference.Element](r *limit.Run, src inference.Tensor, tabs [][]int) (inference.Tensor, error) {
	s, err := inference.Data[T](src)
	if err != nil {
		return inference.Tensor{}, err
	}
	shape := tableShape(tabs)
	out, err := limit.MakeOverwritten[T](r, shape...) // the runs cover it
	if err != nil {
		return inference.Tensor{}, err
	}
	rank := len(tabs)
	first, width := tabs[rank-1][0], len(tabs[rank-1])
	idx := make([]int, rank-1)
	for pos := 0; pos < len(out); pos += width {
		base := first
		for j, i := range idx {
			base += tabs[j][i]
		}
		copy(out[pos:pos+width], s[base:base+width])
		for j := rank - 2; j >= 0; j-- {
			if idx[j]++; idx[j] < len(tabs[j]) {
				break
			}
			idx[j] = 0
		}
	}
	return inference.New(shape, out)
}

// tableOffsets returns, for each element (i_0, …, i_k) of the shape the
// tables span, in row-major order, Σ_j tabs[j][i_j]; or -1 when any term is
// negative (an element taken from the fill value).
func tableOffsets(r *limit.Run, tabs [][]int) ([]int, error) {
	offs, err := limit.Make[int](r, tableShape(tabs)...)
	n := len(offs)
	if err != nil || n == 0 || len(tabs) == 0 {
		return offs, err
	}
	rank := len(tabs)
	last := tabs[rank-1]
	idx := make([]int, rank-1)
	for pos := 0; pos < n; {
		base := 0
		for j, i := range idx {
			t := tabs[j][i]
			if t < 0 || base < 0 {
				base = -1
			} else {
				base += t
			}
		}
		for _, t := range last {
			if base < 0 || t < 0 {
				offs[pos] = -1
			} else {
				offs[pos] = base + t
			}
			pos++
		}
		for j := rank - 2; j >= 0; j-- {
			if idx[j]++; idx[j] < len(tabs[j]) {
				break
			}
			idx[j] = 0
		}
	}
	return offs, nil
}

// eachIndex calls f with the coordinates of every element of shape in
// row-major order, and the element's position. f must not keep idx.
func eachIndex(shape []int, f func(idx []int, pos int) error) error {
	n := opsem.Count(shape)
	idx := make([]int, len(shape))
	for pos := range n {
		if err := f(idx, pos); err != nil {
			return err
		}
		for j := len(shape) - 1; j >= 0; j-- {
			if idx[j]++; idx[j] < shape[j] {
				break
			}
			idx[j] = 0
		}
	}
	return nil
}

// take returns a tensor of the given shape whose element i is src's
// element offs[i], or fill's first element where offs[i] < 0 (the zero
// value when fill is absent). fill must have src's element type.
func take(r *limit.Run, src inference.Tensor, shape, offs []int, fill inference.Tensor) (inference.Tensor, error) {
	switch src.DType() {
	case inference.Float32:
		return takeOf[float32](r, src, shape, offs, fill)
	case inference.Int64:
		return takeOf[int64](r, src, shape, offs, fill)
	case inference.Int32:
		return takeOf[int32](r, src, shape, offs, fill)
	case inference.Bool:
		return takeOf[bool](r, src, shape, offs, fill)
	case inference.Uint8:
		return takeOf[uint8](r, src, shape, offs, fill)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", src, inference.ErrType)
}

func takeOf[T inference.Element](r *limit.Run, src inference.Tensor, shape, offs []int, fill inference.Tensor) (inference.Tensor, error) {
	s, err := inference.Data[T](src)
	if err != nil {
		return inference.Tensor{}, err
	}
	var f T
	if present(fill) {
		fd, err := inference.Data[T](fill)
		if err != nil {
			return inference.Tensor{}, fmt.Errorf("fill value %v for data %v: %w", fill, src, inference.ErrType)
		}
		if len(fd) > 0 {
			f = fd[0]
		}
	}
	out, err := limit.Make[T](r, len(offs))
	if err != nil {
		return inference.Tensor{}, err
	}
	for i, o := range offs {
		if o < 0 {
			out[i] = f
		} else {
			out[i] = s[o]
		}
	}
	return inference.New(shape, out)
}

// viewAs returns x with a new shape of the same element count, sharing
// its data.
func viewAs(x inference.Tensor, shape []int) (inference.Tensor, error) {
	switch x.DType() {
	case inference.Float32:
		return viewAsOf[float32](x, shape)
	case inference.Int64:
		return viewAsOf[int64](x, shape)
	case inference.Int32:
		return viewAsOf[int32](x, shape)
	case inference.Bool:
		return viewAsOf[bool](x, shape)
	case inference.Uint8:
		return viewAsOf[uint8](x, shape)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", x, inference.ErrType)
}

func viewAsOf[T inference.Element](x inference.Tensor, shape []int) (inference.Tensor, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return inference.Tensor{}, err
	}
	t, err := inference.New(shape, d)
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("%v cannot take shape %v: %w", x, shape, err)
	}
	return t, nil
}

// emptyResult returns, when x or the output of the given shape has no
// elements, that output (zeros of x's element type, as many as the shape
// holds) and true: what the take kernels return without building tables,
// which would count a huge dimension of x or of the output.
func emptyResult(r *limit.Run, x inference.Tensor, out []int) (inference.Tensor, bool, error) {
	if x.Len() > 0 && limit.Count(out...) != 0 {
		return inference.Tensor{}, false, nil
	}
	if _, err := limit.Claim[byte](r, x.DType().Size(), limit.Count(out...)); err != nil {
		return inference.Tensor{}, true, err
	}
	y, err := inference.Zeros(x.DType(), out)
	return y, true, err
}

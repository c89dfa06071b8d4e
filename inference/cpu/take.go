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
func tables(r *limit.Run, shape []int) ([][]int, error) { return tablesWith(r, shape, axisTable) }

// tablesWith is tables with the table of each axis made by table.
func tablesWith(r *limit.Run, shape []int, table func(*limit.Run, int, func(int) int) ([]int, error)) ([][]int, error) {
	st := opsem.Strides(shape)
	tabs := make([][]int, len(shape))
	for j, d := range shape {
		var err error
		if tabs[j], err = table(r, d, func(i int) int { return i * st[j] }); err != nil {
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

// keptTables is tables for a plan that keeps them from run to run
// (tableTake): counted under r's budget, but not taken from its pool,
// which hands its buffers out again once the node has run.
func keptTables(r *limit.Run, shape []int) ([][]int, error) {
	return tablesWith(r, shape, keptAxisTable)
}

// keptAxisTable is axisTable for a plan's table, as keptTables makes them.
func keptAxisTable(r *limit.Run, n int, f func(i int) int) ([]int, error) {
	if _, err := limit.Claim[int](r, n); err != nil {
		return nil, err
	}
	t := make([]int, n)
	for i := range t {
		t[i] = f(i)
	}
	return t, nil
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
	takeRuns(out, s, tabs, make([]int, len(tabs)-1))
	return inference.New(shape, out)
}

// takeRuns copies into out the runs of s that tables tableRuns accepts
// take, with idx (an entry per table but the last) as its odometer.
func takeRuns[T inference.Element](out, s []T, tabs [][]int, idx []int) {
	takeRunsRange(out, s, tabs, idx, 0, len(out)/len(tabs[len(tabs)-1]))
}

// takeRunsRange is takeRuns for runs r0…r1−1 alone.
func takeRunsRange[T inference.Element](out, s []T, tabs [][]int, idx []int, r0, r1 int) {
	if r0 >= r1 {
		return // an outer table may be empty
	}
	rank := len(tabs)
	first, width := tabs[rank-1][0], len(tabs[rank-1])
	for j, r := rank-2, r0; j >= 0; j-- {
		idx[j] = r % len(tabs[j])
		r /= len(tabs[j])
	}
	for pos := r0 * width; pos < r1*width; pos += width {
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
}

// A runsSplit is a takeRuns split among goroutines into parts of whole
// runs, each with an odometer of its own (odo[c]): the operands of the
// take under way, and body, bound once.
type runsSplit[T inference.Element] struct {
	out, s      []T
	tabs        [][]int
	runs, parts int
	odo         [][]int
	body        func(lo, hi int)
}

// chunk takes the runs of parts lo…hi−1.
func (rs *runsSplit[T]) chunk(lo, hi int) {
	for c := lo; c < hi; c++ {
		takeRunsRange(rs.out, rs.s, rs.tabs, rs.odo[c], rs.runs*c/rs.parts, rs.runs*(c+1)/rs.parts)
	}
}

// tableOffsets returns, for each element (i_0, …, i_k) of the shape the
// tables span, in row-major order, Σ_j tabs[j][i_j]; or -1 when any term is
// negative (an element taken from the fill value).
func tableOffsets(r *limit.Run, tabs [][]int) ([]int, error) {
	offs, err := limit.Make[int](r, tableShape(tabs)...)
	if err != nil || len(offs) == 0 || len(tabs) == 0 {
		return offs, err
	}
	fillTableOffsets(offs, tabs, make([]int, len(tabs)-1))
	return offs, nil
}

// fillTableOffsets is tableOffsets into offs, which has an entry for each
// element the tables span (at least one, and at least one table), with
// idx (an entry per table but the last) as its odometer.
func fillTableOffsets(offs []int, tabs [][]int, idx []int) {
	clear(idx)
	n := len(offs)
	rank := len(tabs)
	last := tabs[rank-1]
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
}

// A tableTake is takeTables for a kernel that keeps its tables from run
// to run in its plan (keptTables): the tables, the shape they span, and
// the odometer, so that a run takes its output, and its offsets when the
// tables are not runs, from the run's pool and allocates nothing. A kernel
// may replace a table each run (Gather's indices) with one of the same
// length.
type tableTake struct {
	tabs  [][]int
	shape []int
	idx   []int
	split any // a *runsSplit of the element type, made on first use
}

// newTableTake returns the take of tabs, which span shape.
func newTableTake(tabs [][]int, shape []int) *tableTake {
	return &tableTake{tabs: tabs, shape: shape, idx: make([]int, max(len(tabs)-1, 0))}
}

// output returns takeTables(r, src, t.tabs, no fill) as the node's one
// output, of shape (the tables' shape, or one of as many elements: a
// shape the plan keeps).
func (t *tableTake) output(n opsem.Node, src inference.Tensor, shape []int) ([]inference.Tensor, error) {
	y, err := t.outputAt(n, 0, src, shape)
	if err != nil {
		return nil, err
	}
	res := n.Results(1)
	res[0] = y
	return res, nil
}

// outputAt is output as the node's output j (opsem.Output).
func (t *tableTake) outputAt(n opsem.Node, j int, src inference.Tensor, shape []int) (inference.Tensor, error) {
	switch src.DType() {
	case inference.Float32:
		return tableTakeOf[float32](n, j, t, src, shape)
	case inference.Int64:
		return tableTakeOf[int64](n, j, t, src, shape)
	case inference.Int32:
		return tableTakeOf[int32](n, j, t, src, shape)
	case inference.Bool:
		return tableTakeOf[bool](n, j, t, src, shape)
	case inference.Uint8:
		return tableTakeOf[uint8](n, j, t, src, shape)
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", src, inference.ErrType)
}

func tableTakeOf[T inference.Element](n opsem.Node, j int, t *tableTake, src inference.Tensor, shape []int) (inference.Tensor, error) {
	s, err := inference.Data[T](src)
	if err != nil {
		return inference.Tensor{}, err
	}
	if tableRuns(t.tabs) {
		out, err := limit.MakeOverwritten[T](n.Run, t.shape...) // the runs cover it
		if err != nil {
			return inference.Tensor{}, err
		}
		width := len(t.tabs[len(t.tabs)-1])
		runs := len(out) / width
		parts := parallelParts(runs, width*tpCopyCost)
		if parts == 1 {
			takeRuns(out, s, t.tabs, t.idx)
			return opsem.Output(n, j, shape, out)
		}
		rs, _ := t.split.(*runsSplit[T])
		if rs == nil {
			rs = &runsSplit[T]{}
			rs.body = rs.chunk
			t.split = rs
		}
		for len(rs.odo) < parts {
			rs.odo = append(rs.odo, make([]int, len(t.tabs)-1))
		}
		rs.out, rs.s, rs.tabs, rs.runs, rs.parts = out, s, t.tabs, runs, parts
		parallelSplit(parts, parts, rs.body)
		rs.out, rs.s, rs.tabs = nil, nil, nil // not to hold the buffers until the next run
		return opsem.Output(n, j, shape, out)
	}
	offs, err := limit.Make[int](n.Run, t.shape...)
	if err != nil {
		return inference.Tensor{}, err
	}
	if len(offs) > 0 && len(t.tabs) > 0 {
		fillTableOffsets(offs, t.tabs, t.idx)
	}
	out, err := limit.MakeOverwritten[T](n.Run, t.shape...) // len(offs) elements, each written
	if err != nil {
		return inference.Tensor{}, err
	}
	var zero T
	takeInto(out, s, offs, zero)
	return opsem.Output(n, j, shape, out)
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
	case inference.Float16:
		return takeOf[inference.Half](r, src, shape, offs, fill)
	case inference.Float64:
		return takeOf[float64](r, src, shape, offs, fill)
	case inference.String:
		return takeOf[string](r, src, shape, offs, fill)
	case inference.Int8:
		return takeOf[int8](r, src, shape, offs, fill)
	case inference.Int16:
		return takeOf[int16](r, src, shape, offs, fill)
	case inference.Uint16:
		return takeOf[uint16](r, src, shape, offs, fill)
	case inference.Uint32:
		return takeOf[uint32](r, src, shape, offs, fill)
	case inference.Uint64:
		return takeOf[uint64](r, src, shape, offs, fill)
	case inference.BFloat16:
		return takeOf[inference.BF16](r, src, shape, offs, fill)
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
	out, err := limit.MakeOverwritten[T](r, len(offs)) // each written
	if err != nil {
		return inference.Tensor{}, err
	}
	takeInto(out, s, offs, f)
	return inference.New(shape, out)
}

// takeInto sets out[i] to s[offs[i]], or to f where offs[i] < 0.
func takeInto[T inference.Element](out, s []T, offs []int, f T) {
	for i, o := range offs {
		if o < 0 {
			out[i] = f
		} else {
			out[i] = s[o]
		}
	}
}

// takeOutput is take without a fill, as the node's one output, of shape
// (a shape the node's plan keeps).
func takeOutput(n opsem.Node, src inference.Tensor, shape, offs []int) ([]inference.Tensor, error) {
	switch src.DType() {
	case inference.Float32:
		return takeOutputOf[float32](n, src, shape, offs)
	case inference.Int64:
		return takeOutputOf[int64](n, src, shape, offs)
	case inference.Int32:
		return takeOutputOf[int32](n, src, shape, offs)
	case inference.Bool:
		return takeOutputOf[bool](n, src, shape, offs)
	case inference.Uint8:
		return takeOutputOf[uint8](n, src, shape, offs)
	}
	return nil, fmt.Errorf("%v: %w", src, inference.ErrType)
}

func takeOutputOf[T inference.Element](n opsem.Node, src inference.Tensor, shape, offs []int) ([]inference.Tensor, error) {
	s, err := inference.Data[T](src)
	if err != nil {
		return nil, err
	}
	out, err := limit.MakeOverwritten[T](n.Run, shape...) // len(offs) elements, each written
	if err != nil {
		return nil, err
	}
	var zero T
	takeInto(out, s, offs, zero)
	return opsem.Single(n, shape, out)
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
	case inference.Float16:
		return viewAsOf[inference.Half](x, shape)
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

// viewOutput is viewAs as the node's one output (opsem.Single), which is
// the tensor it returned last run when x's data is the same buffer and
// shape the same: give it a shape the node's plan keeps.
func viewOutput(n opsem.Node, x inference.Tensor, shape []int) ([]inference.Tensor, error) {
	switch x.DType() {
	case inference.Float32:
		return viewOutputOf[float32](n, x, shape)
	case inference.Int64:
		return viewOutputOf[int64](n, x, shape)
	case inference.Int32:
		return viewOutputOf[int32](n, x, shape)
	case inference.Bool:
		return viewOutputOf[bool](n, x, shape)
	case inference.Uint8:
		return viewOutputOf[uint8](n, x, shape)
	case inference.Float16:
		return viewOutputOf[inference.Half](n, x, shape)
	case inference.Float64:
		return viewOutputOf[float64](n, x, shape)
	case inference.String:
		return viewOutputOf[string](n, x, shape)
	case inference.Int8:
		return viewOutputOf[int8](n, x, shape)
	case inference.Int16:
		return viewOutputOf[int16](n, x, shape)
	case inference.Uint16:
		return viewOutputOf[uint16](n, x, shape)
	case inference.Uint32:
		return viewOutputOf[uint32](n, x, shape)
	case inference.Uint64:
		return viewOutputOf[uint64](n, x, shape)
	case inference.BFloat16:
		return viewOutputOf[inference.BF16](n, x, shape)
	}
	return nil, fmt.Errorf("%v: %w", x, inference.ErrType)
}

func viewOutputOf[T inference.Element](n opsem.Node, x inference.Tensor, shape []int) ([]inference.Tensor, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return nil, err
	}
	outs, err := opsem.Single(n, shape, d)
	if err != nil {
		return nil, fmt.Errorf("%v cannot take shape %v: %w", x, shape, err)
	}
	return outs, nil
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

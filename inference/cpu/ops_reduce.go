package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Reductions (ReduceX, ArgMax/ArgMin) and CumSum. The plan of a reduction
// is in reduceplan.go.

func init() {
	register("ReduceSum", rdReduce(rdSum))
	register("ReduceMean", rdReduce(rdMean))
	register("ReduceMax", rdReduce(rdMax))
	register("ReduceMin", rdReduce(rdMin))
	register("ReduceProd", rdReduce(rdProd))
	register("ReduceL1", rdReduce(rdL1))
	register("ReduceL2", rdReduce(rdL2))
	register("ReduceLogSum", rdReduce(rdLogSum))
	register("ReduceLogSumExp", rdReduce(rdLogSumExp))
	register("ReduceSumSquare", rdReduce(rdSumSquare))
	register("ArgMax", rdArg(true))
	register("ArgMin", rdArg(false))
	register("CumSum", rdCumSum)

	// The types beyond baseTypes that each operator's ONNX schema admits
	// and its kernel computes (not the integers' LogSum and LogSumExp).
	wide := slices.Concat(moreFloats, []inference.DType{inference.Uint32, inference.Uint64})
	for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceMax", "ReduceMin", "CumSum"} {
		registerTypes(op, wide...)
	}
	registerTypes("ReduceMax", inference.Int8)
	registerTypes("ReduceMin", inference.Int8)
	registerTypes("ReduceLogSum", moreFloats...)
	registerTypes("ReduceLogSumExp", moreFloats...)
	registerTypes("ArgMax", moreNumbers...)
	registerTypes("ArgMin", moreNumbers...)
}

// rdOp is the combining rule of a Reduce operator.
type rdOp int

const (
	rdSum rdOp = iota
	rdMean
	rdMax
	rdMin
	rdProd
	rdL1
	rdL2
	rdLogSum
	rdLogSumExp
	rdSumSquare
)

// rdAxesOf returns which dimensions of x a Reduce node reduces
// (opsem.ReduceAxes), reading the axes input when the node's version takes
// one (opsem.ReduceAxesInput). noop reports an identity: the input form
// with empty axes and noop_with_empty_axes=1.
func rdAxesOf(n opsem.Node, in []inference.Tensor, rank int) (reduced []bool, noop bool, err error) {
	var axes []int64
	if t := arg(in, 1); opsem.ReduceAxesInput(n) && present(t) {
		if t.DType() != inference.Int64 && t.DType() != inference.Int32 {
			return nil, false, fmt.Errorf("axes input is %v, want int64: %w", t, inference.ErrType)
		}
		if axes, err = opsem.Int64s(t); err != nil {
			return nil, false, err
		}
	}
	return opsem.ReduceAxes(n, rank, axes)
}

// rdPlan is what a Reduce node keeps from one run to the next
// (opsem.Plan): the reduced axes of its input's shape and the output
// shape, and either the rows of the trailing-axes path with rowsOf bound
// once, or the general path's reducePlan and accumulators. The operands
// of the run in progress (x, y) are set by each run before its loop.
type rdPlan struct {
	op       rdOp
	noop     bool
	res      [1]inference.Tensor // the noop's result, the input
	shape    []int               // the input's
	reduced  []bool
	out      []int // the output shape
	trailing bool  // rdRows' case: rows of count elements
	count    int
	rowsDims []int // [rows]
	body     func(lo, hi int)
	rp       *reducePlan // the general path's, made by its first run
	outDims  []int       // [output elements], the general path's
	acc, mx  []float64   // rdReduceFloats' accumulators

	// The operands of the run in progress.
	x, y []float32
}

// newRdPlan plans reducing x, in[0], as n asks.
func newRdPlan(n opsem.Node, in []inference.Tensor, x inference.Tensor, op rdOp) (*rdPlan, error) {
	shape := x.Shape()
	reduced, noop, err := rdAxesOf(n, in, len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	p := &rdPlan{op: op, noop: noop, shape: shape, reduced: reduced}
	if noop {
		return p, nil
	}
	p.out = opsem.ReducedShape(n, shape, reduced)
	if rows, count, ok := rdTrailing(shape, reduced); ok && x.DType() == inference.Float32 && rdRowOp(op) {
		p.trailing, p.count, p.rowsDims = true, count, []int{rows}
		p.body = p.rowsOf
	}
	return p, nil
}

// reducePlan returns the general path's reducePlan, made on the first run
// that needs it (it claims its offset table under r, and what the
// reduction allocates per output element) and kept; later runs claim the
// same again.
func (p *rdPlan) reducePlan(r *limit.Run) (*reducePlan, error) {
	if p.rp == nil {
		rp, err := newReducePlan(r, p.shape, p.reduced, p.out)
		if err != nil {
			return nil, err
		}
		p.rp, p.outDims = rp, []int{opsem.Count(rp.keep)}
		return rp, nil
	}
	if _, err := limit.Claim[int](r, p.rp.in...); err != nil {
		return nil, err
	}
	if _, err := limit.Claim[[3]float64](r, p.rp.keep...); err != nil {
		return nil, err
	}
	return p.rp, nil
}

func rdReduce(op rdOp) kernel {
	return func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		x, err := requiredArg(in, 0, "data")
		if err != nil {
			return nil, err
		}
		if t := arg(in, 1); opsem.ReduceAxesInput(n) && present(t) && t.Len() > opsem.MemoValues {
			n.Memo = nil // too many axes to key a plan: this run's own
		}
		p, err := opsem.Plan(n, in, func() (*rdPlan, error) { return newRdPlan(n, in, x, op) })
		if err != nil {
			return nil, err
		}
		if p.noop {
			p.res[0] = x
			return p.res[:], nil
		}
		if p.trailing {
			y, err := limit.Make[float32](n.Run, p.rowsDims...)
			if err != nil {
				return nil, err
			}
			p.x, p.y = dataOf[float32](x), y
			parallelFor(len(y), p.count, p.body)
			p.x, p.y = nil, nil // the plan outlives them
			return opsem.Single(n, p.out, y)
		}
		rp, err := p.reducePlan(n.Run)
		if err != nil {
			return nil, err
		}
		if k := numbersOf(x.DType()); k != nil {
			return k.reduce(n, op, p, x)
		}
		if x.DType() != inference.Bool || (op != rdMax && op != rdMin) || n.Opset < 20 {
			return nil, n.Unsupported("element type %v", x.DType())
		}
		d, _ := inference.Data[bool](x)
		y, err := limit.Make[bool](n.Run, p.outDims...)
		if err != nil {
			return nil, err
		}
		rdReduceBools(op, rp, d, y)
		return opsem.Single(n, p.out, y)
	}
}

// rdReduceFloatTensor reduces floats on the general path, as
// rdReduceFloatsInto does.
func rdReduceFloatTensor[T float](n opsem.Node, op rdOp, p *rdPlan, x inference.Tensor) ([]inference.Tensor, error) {
	y, err := limit.MakeOverwritten[T](n.Run, p.outDims...) // rdReduceFloatsInto writes every element
	if err != nil {
		return nil, err
	}
	if len(p.acc) != len(y) {
		p.acc, p.mx = make([]float64, len(y)), make([]float64, len(y))
	}
	rdReduceFloatsInto(op, p.rp, dataOf[T](x), y, p.acc, p.mx)
	return opsem.Single(n, p.out, y)
}

// rdTrailing reports a reduction of the trailing axes of shape (size-1
// axes aside): rows output elements, each of count contiguous input
// elements, neither 0.
func rdTrailing(shape []int, reduced []bool) (rows, count int, ok bool) {
	rows, count = 1, 1
	for i, d := range shape {
		switch {
		case reduced[i]:
			count *= d
		case d != 1 && count != 1:
			return 0, 0, false // a kept axis inside the reduced ones
		default:
			rows *= d
		}
	}
	return rows, count, rows > 0 && count > 0
}

// rdRowOp reports the operators rdRows computes.
func rdRowOp(op rdOp) bool {
	return op == rdSum || op == rdMean || op == rdSumSquare || op == rdMax || op == rdMin
}

// rdRows reduces each row of count elements of x into y, as
// rdReduceFloats does (the sums in float64, in the same order), without
// its offset table.
func rdRows(op rdOp, x []float32, count int, y []float32) {
	parallelFor(len(y), count, func(lo, hi int) { rdRowRange(op, x, count, y, lo, hi) })
}

// rowsOf is rdRows' loop over rows lo…hi−1 for the plan's operands.
func (p *rdPlan) rowsOf(lo, hi int) { rdRowRange(p.op, p.x, p.count, p.y, lo, hi) }

// rdRowRange is rdRows over rows lo…hi−1.
func rdRowRange(op rdOp, x []float32, count int, y []float32, lo, hi int) {
	for r := lo; r < hi; r++ {
		row := x[r*count : (r+1)*count]
		switch op {
		case rdMax, rdMin:
			m := row[0]
			for _, v := range row[1:] {
				if m != m {
					break
				}
				if v != v || (op == rdMax && v > m) || (op == rdMin && v < m) {
					m = v
				}
			}
			y[r] = m
		case rdSumSquare:
			var a float64
			for _, v := range row {
				a += float64(v) * float64(v)
			}
			y[r] = float32(a)
		default:
			var a float64
			for _, v := range row {
				a += float64(v)
			}
			if op == rdMean {
				a /= float64(count)
			}
			y[r] = float32(a)
		}
	}
}

// rdReduceFloats reduces in float64, except Max and Min, which are exact in
// the element type. The reduction of an empty set is the operator's identity: 0 for
// the sums, 1 for Prod, -inf for Max, LogSum and LogSumExp, +inf for Min,
// and NaN (0/0) for Mean.
func rdReduceFloats[T float](op rdOp, p *reducePlan, x []T) []T {
	n := opsem.Count(p.keep)
	out := make([]T, n)
	rdReduceFloatsInto(op, p, x, out, make([]float64, n), make([]float64, n))
	return out
}

// rdReduceFloatsInto is rdReduceFloats writing every element of out (the
// output, opsem.Count(p.keep) long); acc and mx, as long, are its scratch.
func rdReduceFloatsInto[T float](op rdOp, p *reducePlan, x, out []T, acc, mx []float64) {
	switch op {
	case rdMax, rdMin:
		init, hi := limits[T]()
		if op == rdMin {
			init = hi
		}
		for i := range out {
			out[i] = init
		}
		// NaN propagates: once a NaN is taken, no comparison replaces it.
		for i, v := range x {
			o := p.offs[i]
			if v != v || (op == rdMax && v > out[o]) || (op == rdMin && v < out[o]) {
				out[o] = v
			}
		}
		return
	case rdLogSumExp:
		for i := range mx {
			mx[i] = math.Inf(-1)
		}
		for i, v := range x {
			if o := p.offs[i]; float64(v) > mx[o] || v != v {
				mx[o] = float64(v)
			}
		}
		clear(acc)
		for i, v := range x {
			o := p.offs[i]
			acc[o] += math.Exp(float64(v) - mx[o])
		}
		for i := range out {
			// all -inf (or empty) gives -inf, a +inf gives +inf.
			if math.IsInf(mx[i], 0) {
				out[i] = T(mx[i])
				continue
			}
			out[i] = T(math.Log(acc[i]) + mx[i])
		}
		return
	}
	clear(acc)
	switch op {
	case rdProd:
		for i := range acc {
			acc[i] = 1
		}
		for i, v := range x {
			acc[p.offs[i]] *= float64(v)
		}
	case rdL1:
		for i, v := range x {
			acc[p.offs[i]] += math.Abs(float64(v))
		}
	case rdL2, rdSumSquare:
		for i, v := range x {
			acc[p.offs[i]] += float64(v) * float64(v)
		}
	default: // rdSum, rdMean, rdLogSum
		for i, v := range x {
			acc[p.offs[i]] += float64(v)
		}
	}
	for i, a := range acc {
		switch op {
		case rdMean:
			a /= float64(p.count)
		case rdL2:
			a = math.Sqrt(a)
		case rdLogSum:
			a = math.Log(a)
		}
		out[i] = T(a)
	}
}

// rdReduceIntTensor reduces integers exactly in int64, wrapping on overflow
// as the element type does (the unsigned types' sums and products are the
// same bits). Mean truncates toward zero and L2 truncates the square root,
// as the ONNX reference does when it casts back. The integers narrower
// than 32 bits take only Max and Min, and LogSum and LogSumExp take none.
func rdReduceIntTensor[T integer](n opsem.Node, op rdOp, plan *rdPlan, t inference.Tensor) ([]inference.Tensor, error) {
	x, err := inference.Data[T](t)
	if err != nil {
		return nil, err
	}
	p := plan.rp
	size := opsem.Count(p.keep)
	out, err := limit.Make[T](n.Run, plan.outDims...)
	if err != nil {
		return nil, err
	}
	switch {
	case op != rdMax && op != rdMin && t.DType().Size() < 4:
		return nil, n.Unsupported("element type %v", t.DType())
	case op == rdMax, op == rdMin:
		lo, hi := limits[T]()
		init := lo
		if op == rdMin {
			init = hi
		}
		for i := range out {
			out[i] = init
		}
		for i, v := range x {
			o := p.offs[i]
			if (op == rdMax && v > out[o]) || (op == rdMin && v < out[o]) {
				out[o] = v
			}
		}
		return opsem.Single(n, p.out, out)
	case op == rdLogSum, op == rdLogSumExp:
		return nil, n.Unsupported("element type %v", t.DType())
	case op == rdMean:
		if p.count == 0 && size > 0 {
			return nil, fmt.Errorf("mean of an empty set of %v (input %v): %w", t.DType(), t, inference.ErrShape)
		}
	}
	acc, err := limit.Make[int64](n.Run, plan.outDims...)
	if err != nil {
		return nil, err
	}
	if op == rdProd {
		for i := range acc {
			acc[i] = 1
		}
	}
	for i, v := range x {
		o, w := p.offs[i], int64(v)
		switch op {
		case rdProd:
			acc[o] *= w
		case rdL1:
			if v < 0 {
				w = -w
			}
			acc[o] += w
		case rdL2, rdSumSquare:
			acc[o] += w * w
		default: // rdSum, rdMean
			acc[o] += w
		}
	}
	signed := isSigned[T]()
	for i, a := range acc {
		switch {
		case op == rdMean && signed:
			a /= int64(p.count)
		case op == rdMean:
			a = int64(uint64(a) / uint64(p.count))
		case op == rdL2 && signed:
			a = int64(math.Sqrt(float64(a)))
		case op == rdL2:
			a = int64(math.Sqrt(float64(uint64(a))))
		}
		out[i] = T(a)
	}
	return opsem.Single(n, p.out, out)
}

// rdReduceBools reduces booleans into out, zeroed: Max is any (false when
// empty), Min is all (true when empty).
func rdReduceBools(op rdOp, p *reducePlan, x, out []bool) {
	if op == rdMin {
		for i := range out {
			out[i] = true
		}
	}
	for i, v := range x {
		o := p.offs[i]
		if op == rdMax {
			out[o] = out[o] || v
		} else {
			out[o] = out[o] && v
		}
	}
}

// rdArg returns the ArgMax (max true) or ArgMin kernel: the index along axis
// (opsem.ArgAxis) of the first extreme value, or the last with
// select_last_index=1; a NaN counts as the extreme, as in numpy.
func rdArg(max bool) kernel {
	return func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		x, err := requiredArg(in, 0, "data")
		if err != nil {
			return nil, err
		}
		shape := x.Shape()
		axis, last, outShape, err := opsem.ArgAxis(n, shape)
		if err != nil {
			return nil, err
		}
		if shape[axis] == 0 {
			return nil, fmt.Errorf("input %v: no element along axis %d to take the %s of: %w", x, axis, n.OpType, inference.ErrShape)
		}
		k := numbersOf(x.DType())
		if k == nil {
			return nil, n.Unsupported("element type %v", x.DType())
		}
		idx, err := k.argIndex(n.Run, x, shape, axis, max, last)
		if err != nil {
			return nil, err
		}
		return opsem.Single(n, outShape, idx)
	}
}

// rdArgIndexOf returns the index along axis of the largest (max) or
// smallest element of each line of x, of the given shape, in a buffer
// allocated under r.
func rdArgIndexOf[T number](r *limit.Run, t inference.Tensor, shape []int, axis int, max, last bool) ([]int64, error) {
	x := dataOf[T](t)
	outer, n, inner := opsem.SplitAxis(shape, axis)
	idx, err := limit.MakeOverwritten[int64](r, outer, inner) // every line's index is written
	if err != nil {
		return nil, err
	}
	for o := range outer {
		for j := range inner {
			base := o*n*inner + j
			best, bi := x[base], 0
			for k := 1; k < n; k++ {
				v := x[base+k*inner]
				if best != best { // NaN found: it stays the answer
					break
				}
				better := v != v
				switch {
				case max && last:
					better = better || v >= best
				case max:
					better = better || v > best
				case last:
					better = better || v <= best
				default:
					better = better || v < best
				}
				if better {
					best, bi = v, k
				}
			}
			idx[o*inner+j] = int64(bi)
		}
	}
	return idx, nil
}

// rdCumSum is CumSum: y_i = Σ_{j≤i} x_j along axis (the second input), j<i
// with exclusive=1, and summing from the end with reverse=1.
func rdCumSum(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, err := requiredArg(in, 0, "x")
	if err != nil {
		return nil, err
	}
	at := arg(in, 1)
	if at.DType() != inference.Int64 && at.DType() != inference.Int32 {
		return nil, fmt.Errorf("axis input is %v, want int64 or int32: %w", at, inference.ErrType)
	}
	if at.Len() != 1 {
		return nil, fmt.Errorf("axis input is %v, want one value: %w", at, inference.ErrShape)
	}
	av, _ := opsem.Int64s(at)
	shape := x.Shape()
	axis, err := opsem.NormAxis(av[0], len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	exclusive, reverse := n.Int("exclusive", 0) != 0, n.Int("reverse", 0) != 0
	k := numbersOf(x.DType())
	if k == nil || x.DType().Size() < 4 { // the integers narrower than 32 bits are not CumSum's
		return nil, n.Unsupported("element type %v", x.DType())
	}
	out, err := k.cumSum(n.Run, x, axis, exclusive, reverse)
	if err != nil {
		return nil, err
	}
	return []inference.Tensor{out}, nil
}

// rdCumSumFloats sums floats in float64, each output rounded once.
func rdCumSumFloats[T float](r *limit.Run, x inference.Tensor, axis int, exclusive, reverse bool) (inference.Tensor, error) {
	d := dataOf[T](x)
	y, err := limit.Make[T](r, len(d))
	if err != nil {
		return inference.Tensor{}, err
	}
	shape := x.Shape()
	rdScan(shape, axis, exclusive, reverse, func(i int, acc float64) float64 {
		return acc + float64(d[i])
	}, func(i int, acc float64) { y[i] = T(acc) })
	return inference.New(shape, y)
}

// rdCumSumInts sums integers in int64, wrapping to T (the unsigned types'
// sums are the same bits).
func rdCumSumInts[T integer](r *limit.Run, x inference.Tensor, axis int, exclusive, reverse bool) (inference.Tensor, error) {
	d := dataOf[T](x)
	y, err := limit.Make[T](r, len(d))
	if err != nil {
		return inference.Tensor{}, err
	}
	shape := x.Shape()
	rdScan(shape, axis, exclusive, reverse, func(i int, acc int64) int64 {
		return acc + int64(d[i])
	}, func(i int, acc int64) { y[i] = T(acc) })
	return inference.New(shape, y)
}

// rdScan runs a running accumulation along axis: for each element i in scan
// order it stores the accumulator with set (before adding i when exclusive)
// and folds i in with add.
func rdScan[A float64 | int64](shape []int, axis int, exclusive, reverse bool, add func(i int, acc A) A, set func(i int, acc A)) {
	if limit.Count(shape...) == 0 {
		return // the loops below would count the dimensions that are not 0
	}
	outer, n, inner := opsem.SplitAxis(shape, axis)
	for o := range outer {
		for j := range inner {
			base := o*n*inner + j
			var acc A
			for k := range n {
				if reverse {
					k = n - 1 - k
				}
				i := base + k*inner
				if exclusive {
					set(i, acc)
					acc = add(i, acc)
				} else {
					acc = add(i, acc)
					set(i, acc)
				}
			}
		}
	}
}

package cpu

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Sorting and searching: TopK, Unique and NonZero.

func init() {
	register("TopK", soTopK)
	registerTypes("TopK", moreNumbers...)
	register("Unique", soUnique)
	register("NonZero", soNonZero)
}

func soTopK(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	var k int64
	if n.Opset < 10 {
		var err error
		if in, err = inputs(in, 1, 1); err != nil {
			return nil, err
		}
		if !n.Has("k") {
			return nil, fmt.Errorf("TopK-1 without a k attribute: %w", inference.ErrBadModel)
		}
		k = n.Int("k", 0)
	} else {
		var err error
		if in, err = inputs(in, 2, 2); err != nil {
			return nil, err
		}
		kv, err := opsem.Int64s(in[1])
		if err != nil || len(kv) != 1 {
			return nil, fmt.Errorf("K %v is not one integer: %w", in[1], inference.ErrShape)
		}
		k = kv[0]
	}
	x := in[0]
	shape := x.Shape()
	axis, err := opsem.NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return nil, fmt.Errorf("input %v: %w", x, err)
	}
	if k < 0 || k > int64(shape[axis]) {
		return nil, fmt.Errorf("K %d for axis %d of %v: %w", k, axis, x, inference.ErrShape)
	}
	// sorted=0 leaves the order unspecified; sorted order is one of them.
	largest := n.Int("largest", 1) == 1
	num := numbersOf(x.DType())
	if num == nil {
		return nil, n.Unsupported("element type %v", x.DType())
	}
	vals, idx, err := num.topK(n.Run, x, axis, int(k), largest)
	if err != nil {
		return nil, err
	}
	indices, err := inference.New(vals.Shape(), idx)
	return []inference.Tensor{vals, indices}, err
}

// soTopKOf returns the k largest (or smallest) values along axis and their
// indices; equal values keep the lower index first.
func soTopKOf[T number](r *limit.Run, x inference.Tensor, axis, k int, largest bool) (inference.Tensor, []int64, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return inference.Tensor{}, nil, err
	}
	shape := x.Shape()
	outer, dim, inner := opsem.SplitAxis(shape, axis)
	vals, err := limit.Make[T](r, outer, k, inner)
	if err != nil {
		return inference.Tensor{}, nil, err
	}
	idx, err := limit.Make[int64](r, outer, k, inner)
	if err != nil {
		return inference.Tensor{}, nil, err
	}
	order, err := limit.Make[int](r, dim)
	if err != nil {
		return inference.Tensor{}, nil, err
	}
	for o := range outer {
		for i := range inner {
			base := o*dim*inner + i
			for j := range order {
				order[j] = j
			}
			slices.SortStableFunc(order, func(a, b int) int {
				c := compareNaNLast(d[base+a*inner], d[base+b*inner])
				if largest {
					return -c
				}
				return c
			})
			for j := range k {
				p := (o*k+j)*inner + i
				vals[p] = d[base+order[j]*inner]
				idx[p] = int64(order[j])
			}
		}
	}
	out := slices.Clone(shape)
	out[axis] = k
	t, err := inference.New(out, vals)
	return t, idx, err
}

func soBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// soUnique is Unique: the distinct elements of X (flattened), or with axis
// the distinct slices along axis, in ascending (lexicographic) order when
// sorted=1, else in order of first occurrence. The outputs are Y, the index
// of each one's first occurrence, the index into Y of every element (or
// slice) of X, and how often each occurs.
func soUnique(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 1 {
		return nil, fmt.Errorf("no input: %w", inference.ErrBadModel)
	}
	x := in[0]
	sorted := n.Int("sorted", 1) != 0
	axis := -1
	if n.Has("axis") {
		a, err := opsem.NormAxis(n.Int("axis", 0), x.Rank())
		if err != nil {
			return nil, err
		}
		axis = a
	}
	switch x.DType() {
	case inference.Float32:
		return soUniqueOf(n.Run, x, axis, sorted, compareNaNLast[float32])
	case inference.Int64:
		return soUniqueOf(n.Run, x, axis, sorted, cmp.Compare[int64])
	case inference.Int32:
		return soUniqueOf(n.Run, x, axis, sorted, cmp.Compare[int32])
	case inference.Uint8:
		return soUniqueOf(n.Run, x, axis, sorted, cmp.Compare[uint8])
	case inference.Bool:
		return soUniqueOf(n.Run, x, axis, sorted, func(a, b bool) int { return cmp.Compare(soBoolInt(a), soBoolInt(b)) })
	}
	return nil, n.Unsupported("element type %v", x.DType())
}

// soUniqueOf does Unique on x of element type T; axis -1 flattens x.
// Every table and output is allocated under r.
func soUniqueOf[T inference.Element](r *limit.Run, x inference.Tensor, axis int, sorted bool, compare func(a, b T) int) ([]inference.Tensor, error) {
	data, _ := inference.Data[T](x)
	shape := x.Shape()
	// X is viewed as [outer, count, inner]; slice k is x[:, k, :].
	outer, count, inner := 1, len(data), 1
	if axis >= 0 {
		outer, count, inner = opsem.SplitAxis(shape, axis)
	}
	items, err := limit.Make[[]T](r, count) // count can exceed len(data) when x has no elements
	if err != nil {
		return nil, err
	}
	if outer == 1 { // slice k is contiguous in data
		for k := range items {
			items[k] = data[k*inner : (k+1)*inner : (k+1)*inner]
		}
	} else { // gathered, slice after slice, into one buffer as large as x
		gathered, err := limit.MakeOverwritten[T](r, len(data))
		if err != nil {
			return nil, err
		}
		for k := range items {
			s := gathered[k*outer*inner : k*outer*inner : (k+1)*outer*inner]
			for o := range outer {
				s = append(s, data[(o*count+k)*inner:(o*count+k+1)*inner]...)
			}
			items[k] = s
		}
	}
	compareItems := func(i, j int) int { return slices.CompareFunc(items[i], items[j], compare) }
	order, err := limit.Make[int](r, count)
	if err != nil {
		return nil, err
	}
	for k := range order {
		order[k] = k
	}
	// Stable, so the first index in each run of equal items is its first
	// occurrence.
	slices.SortStableFunc(order, compareItems)
	group, err := limit.Make[int](r, count) // group of each item, numbered in sorted order
	if err != nil {
		return nil, err
	}
	unique := 0
	for i, k := range order {
		if i > 0 && compareItems(order[i-1], k) != 0 {
			unique++
		}
		group[k] = unique
	}
	if count > 0 {
		unique++
	}
	// The first occurrence and count of each group.
	firsts, err := limit.Make[int64](r, unique)
	if err != nil {
		return nil, err
	}
	counts, err := limit.Make[int64](r, unique)
	if err != nil {
		return nil, err
	}
	for i, k := range order {
		g := group[k]
		if i == 0 || g != group[order[i-1]] {
			firsts[g] = int64(k)
		}
		counts[g]++
	}
	rank, err := limit.Make[int](r, unique) // output position of each group
	if err != nil {
		return nil, err
	}
	for g := range rank {
		rank[g] = g
	}
	if !sorted {
		byFirst, err := limit.Make[int](r, unique)
		if err != nil {
			return nil, err
		}
		for g := range byFirst {
			byFirst[g] = g
		}
		slices.SortFunc(byFirst, func(a, b int) int { return cmp.Compare(firsts[a], firsts[b]) })
		f, err := limit.Make[int64](r, unique)
		if err != nil {
			return nil, err
		}
		c, err := limit.Make[int64](r, unique)
		if err != nil {
			return nil, err
		}
		for pos, g := range byFirst {
			rank[g] = pos
			f[pos], c[pos] = firsts[g], counts[g]
		}
		firsts, counts = f, c
	}
	inverse, err := limit.Make[int64](r, count)
	if err != nil {
		return nil, err
	}
	for k := range inverse {
		inverse[k] = int64(rank[group[k]])
	}
	yShape := []int{unique}
	if axis >= 0 {
		yShape = slices.Clone(shape)
		yShape[axis] = unique
	}
	y, err := limit.MakeOverwritten[T](r, outer, unique, inner) // every group's slice is copied
	if err != nil {
		return nil, err
	}
	for pos, k := range firsts {
		for o := range outer {
			copy(y[(o*unique+pos)*inner:(o*unique+pos+1)*inner], data[(o*count+int(k))*inner:(o*count+int(k)+1)*inner])
		}
	}
	yt, err := inference.New(yShape, y)
	if err != nil {
		return nil, err
	}
	out := []inference.Tensor{yt}
	for _, v := range [][]int64{firsts, inverse, counts} {
		t, err := inference.New([]int{len(v)}, v)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func soNonZero(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	in, err := inputs(in, 1, 1)
	if err != nil {
		return nil, err
	}
	x := in[0]
	var nz []bool
	switch x.DType() {
	case inference.Float32:
		nz, err = soNonZeroOf[float32](n.Run, x)
	case inference.Int64:
		nz, err = soNonZeroOf[int64](n.Run, x)
	case inference.Int32:
		nz, err = soNonZeroOf[int32](n.Run, x)
	case inference.Bool:
		nz, err = soNonZeroOf[bool](n.Run, x)
	case inference.Uint8:
		nz, err = soNonZeroOf[uint8](n.Run, x)
	default:
		err = fmt.Errorf("%v: %w", x, inference.ErrType)
	}
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	if len(shape) == 0 {
		// A scalar counts as a 1-element vector, as numpy.nonzero does.
		shape = []int{1}
	}
	count := 0
	for _, b := range nz {
		if b {
			count++
		}
	}
	out, err := limit.Make[int64](n.Run, len(shape), count)
	if err != nil {
		return nil, err
	}
	k := 0
	err = eachIndex(shape, func(c []int, pos int) error {
		if nz[pos] {
			for j, v := range c {
				out[j*count+k] = int64(v)
			}
			k++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	y, err := inference.New([]int{len(shape), count}, out)
	return []inference.Tensor{y}, err
}

// soNonZeroOf returns the mask of x's elements that are not zero, one bool
// per element, allocated under r.
func soNonZeroOf[T inference.Element](r *limit.Run, x inference.Tensor) ([]bool, error) {
	d, err := inference.Data[T](x)
	if err != nil {
		return nil, err
	}
	var zero T
	nz, err := limit.MakeOverwritten[bool](r, len(d)) // every element is written
	if err != nil {
		return nil, err
	}
	for i, v := range d {
		nz[i] = v != zero
	}
	return nz, nil
}

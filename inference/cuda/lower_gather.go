package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the indexed operators: Gather, GatherElements, GatherND and
// their scattering twins Scatter, ScatterElements and ScatterND
// (kernels/shape.cu gather_*). An index out of range is an error of the
// model's input, which the CPU backend reports:
// indices known on the host at plan time (initializers, shape arithmetic)
// are checked here, and the kernels check the others, reporting one out of
// range on the error word (errword.go). The addressing is opsem's:
// opsem.GatherShape and opsem.Index, opsem.ElementOffsets and
// opsem.NDOffsets.

func init() {
	registerLowering("Gather", lowerGather)
	registerLowering("GatherElements", lowerGatherElements)
	registerLowering("ScatterElements", lowerScatterElements)
	registerLowering("Scatter", lowerScatterElements) // ScatterElements' name before opset 11
	registerLowering("GatherND", lowerGatherND)
	registerLowering("ScatterND", lowerScatterND)
	registerHalf("Gather", "GatherElements", "GatherND") // the scatters' reductions are by type
}

// gatherIndices returns the kernel index type of index operand o and its
// values when the host knows them (nil otherwise).
func gatherIndices(l *lowering, o operand) ([]int64, int64, error) {
	if o.DType != inference.Int64 && o.DType != inference.Int32 {
		return nil, 0, l.NoKernel("indices of type %v", o.DType)
	}
	t, ok := o.Host()
	if !ok {
		return nil, indexTypes[o.DType], nil
	}
	v, err := opsem.Int64s(t)
	if err != nil {
		return nil, 0, l.NoKernel("indices %v: %v", t, err)
	}
	return v, indexTypes[o.DType], nil
}

// indexErrors returns the error-channel parameters of a kernel reading
// index operand o: none when the host knows the indices and resolving
// them (valid) found them in range, the node's site otherwise. what
// describes the indices for the error message.
func indexErrors(l *lowering, o operand, valid bool, what string) []kernelArg {
	if _, known := o.Host(); known && valid {
		return noErrorWord
	}
	return l.errorWord(what)
}

// anyIndices returns idx, or, when the host does not know the indices,
// n zeros: opsem's resolvers then check the shapes alone (an index of 0
// fails only along an empty axis, which the caller sends to the host).
func anyIndices(idx []int64, o operand) []int64 {
	if _, known := o.Host(); known {
		return idx
	}
	return make([]int64, o.Len())
}

// resolved reports whether err, from resolving the indices, is nil; an
// error other than an index out of range (the shapes do not fit) sends
// the node to the host, as does any error for indices the host does not
// know (see anyIndices).
func resolved(l *lowering, o operand, err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	if _, known := o.Host(); known && errors.Is(err, inference.ErrIndexOutOfRange) {
		return false, nil // the device reports it at run time
	}
	return false, l.NoKernel("%v", err)
}

// lowerGather gathers along opsem.GatherShape's axis, every index checked
// with opsem.Index.
func lowerGather(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	axis, shape, err := opsem.GatherShape(l.Node, x.Shape, ind.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	dim := x.Shape[axis]
	valid := true
	for _, v := range idx {
		if _, err := opsem.Index(v, dim); err != nil {
			valid = false
		}
	}
	if err := checkOut(l, 0, x.DType, shape); err != nil {
		return err
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	y := l.Out[0]
	n := y.Len()
	if err := unchecked(l, ind, n); err != nil {
		return err
	}
	e := indexErrors(l, ind, valid, fmt.Sprintf("indices %q into data %v, axis %d", ind.Name, x.Shape, axis))
	return l.Launch(kernels.GatherAxis, n, ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(opsem.Count(x.Shape[axis+1:])),
		intArg(ind.Len()), intArg(dim), e[0], e[1])
}

// unchecked sends the node to the host when the kernel would check none of
// the indices the host does not know: no element to write (n is 0), but
// indices to check (the CPU backend checks them).
func unchecked(l *lowering, ind operand, n int64) error {
	if _, known := ind.Host(); !known && n == 0 && ind.Len() > 0 {
		return l.NoKernel("indices %q computed on the device address no elements", ind.Name)
	}
	return nil
}

// lowerGatherElements gathers the elements opsem.ElementOffsets addresses.
func lowerGatherElements(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	if err := checkOut(l, 0, x.DType, ind.Shape); err != nil {
		return err
	}
	return launchElements(l, l.Out[0], x, x.Shape, ind, false)
}

// lowerScatterElements copies the data, then writes the updates over it,
// or combines them with it by scatterMode's reduction.
func lowerScatterElements(l *lowering) error {
	x, ind, upd := l.In[0], l.In[1], l.In[2]
	if upd.DType != x.DType || !slices.Equal(upd.Shape, ind.Shape) {
		return l.NoKernel("updates %v%v for indices %v", upd.DType, upd.Shape, ind.Shape)
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	y := l.Out[0]
	if err := l.Copy(y, x); err != nil {
		return err
	}
	return launchElements(l, y, upd, x.Shape, ind, true)
}

// launchElements queues gather_elements for indices ind into data of shape
// data along opsem.GatherAxis: gathering x into y, or scattering x (the
// updates) into y (see launchScatter). The offsets are
// opsem.ElementOffsets'.
func launchElements(l *lowering, y, x operand, data []int, ind operand, scatter bool) error {
	axis, err := opsem.GatherAxis(l.Node, len(data))
	if err != nil {
		return l.NoKernel("%v", err)
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	offs, err := opsem.ElementOffsets(data, ind.Shape, anyIndices(idx, ind), axis)
	valid, err := resolved(l, ind, err)
	if err != nil {
		return err
	}
	is, st, dim := ind.Shape, rowMajorStrides(data), data[axis]
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	s := slices.Clone(st)
	s[axis] = 0
	d, sets := simplifyDims(int64Dims(is), rowMajorStrides(is), s)
	if len(d) > kernels.MAXRANK {
		return l.NoKernel("rank %d > %d", len(d), kernels.MAXRANK)
	}
	n := ind.Len()
	mode, etype, err := scatterMode(l, scatter, x.DType)
	if err != nil {
		return err
	}
	e := indexErrors(l, ind, valid, fmt.Sprintf("indices %q into data %v, axis %d", ind.Name, data, axis))
	args := func(mode int, count int64, win operand) []kernelArg {
		a := []kernelArg{ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(etype), intArg(count), intArg(mode), winArg(win), e[0], e[1], intArg(st[axis]), intArg(dim)}
		a = append(a, maxRankArgs(d, 1)...)
		return append(a, maxRankArgs(sets[1], 0)...)
	}
	if mode != kernels.GM_SCATTER {
		return l.Launch(kernels.GatherElements, n, args(mode, n, operand{})...)
	}
	_, known := ind.Host()
	return launchScatter(l, kernels.GatherElements, n, n, opsem.Count(data), known && valid && distinct(offs), args)
}

// winArg passes the scatter's claims, or a null pointer when there are none.
func winArg(win operand) kernelArg {
	if !win.Present() {
		return intArg(0)
	}
	return ptrArg(win)
}

// distinct reports whether no two offsets are the same.
func distinct(offs []int) bool {
	s := slices.Clone(offs)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return false
		}
	}
	return true
}

// launchScatter queues the writes of a scatter (kernel, gather_elements or
// gather_nd, whose parameters args gives for a mode, the count of threads'
// items and the claims) of updates updates (n elements) into places places
// (elements or slices).
// Where the host knows the addresses distinct, every update is written at
// once (GM_SCATTER); otherwise the last update addressing each place wins,
// as in the CPU's in-order writes: the claims, an int per place, are set
// to -1 (shape_fill), each update raises its place's claim to its number
// (GM_CLAIM, over the updates), and the winners write (GM_WINNERS).
func launchScatter(l *lowering, kernel string, n, updates int64, places int, unique bool, args func(mode int, count int64, win operand) []kernelArg) error {
	if unique {
		return l.Launch(kernel, n, args(kernels.GM_SCATTER, n, operand{})...)
	}
	if n == 0 {
		return nil
	}
	if updates > math.MaxInt32 {
		return l.NoKernel("%d updates: more than an int32 numbers", updates)
	}
	win := l.Scratch(inference.Int32, []int{places})
	if err := l.Launch(kernels.ShapeFill, win.Len(), ptrArg(win), intArg(4), intArg(win.Len()), intArg(-1)); err != nil {
		return err
	}
	if err := l.Launch(kernel, updates, args(kernels.GM_CLAIM, updates, win)...); err != nil {
		return err
	}
	return l.Launch(kernel, n, args(kernels.GM_WINNERS, n, win)...)
}

// lowerGatherND gathers the slices opsem.NDOffsets addresses.
func lowerGatherND(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	return launchND(l, l.Out[0], x, x.Shape, ind, opsem.GatherNDBatchDims(l.Node), false)
}

// lowerScatterND copies the data, then writes the update slices over it,
// or combines them with it by scatterMode's reduction.
func lowerScatterND(l *lowering) error {
	x, ind, upd := l.In[0], l.In[1], l.In[2]
	if upd.DType != x.DType {
		return l.NoKernel("updates %v for data %v", upd.DType, x.DType)
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	y := l.Out[0]
	if err := l.Copy(y, x); err != nil {
		return err
	}
	return launchND(l, y, upd, x.Shape, ind, 0, true)
}

// launchND queues gather_nd: the index tuples of ind ([..., m]) address
// slices of data (of shape data) after its first batchDims axes, as
// opsem.NDOffsets resolves them. Gathering reads the slices of x into y;
// scattering writes x (the updates) into y's slices (see launchScatter).
func launchND(l *lowering, y, x operand, data []int, ind operand, batchDims int, scatter bool) error {
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	a, err := opsem.NDOffsets(data, ind.Shape, anyIndices(idx, ind), batchDims)
	valid, err := resolved(l, ind, err)
	if err != nil {
		return err
	}
	if !valid { // the shapes, resolved with the tuples of zeros the kernel cannot fail on
		if a, err = opsem.NDOffsets(data, ind.Shape, make([]int64, ind.Len()), batchDims); err != nil {
			return l.NoKernel("%v", err)
		}
	}
	if a.M > kernels.MAXRANK {
		return l.NoKernel("index tuples of %d > %d values", a.M, kernels.MAXRANK)
	}
	want := a.Shape()
	if scatter {
		if !slices.Equal(x.Shape, want) {
			return l.NoKernel("updates %v, want %v", x.Shape, want)
		}
	} else if err := checkOut(l, 0, x.DType, want); err != nil {
		return err
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	inner := int64(opsem.Count(a.Slice))
	tuples := int64(len(a.Offsets))
	n := tuples * inner
	if err := unchecked(l, ind, n); err != nil {
		return err
	}
	mode, etype, err := scatterMode(l, scatter, x.DType)
	if err != nil {
		return err
	}
	e := indexErrors(l, ind, valid, fmt.Sprintf("index tuples %q into data %v, axes %d to %d", ind.Name, data, batchDims, batchDims+a.M-1))
	st := rowMajorStrides(data)
	args := func(mode int, count int64, win operand) []kernelArg {
		args := []kernelArg{ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(etype), intArg(count), intArg(mode), winArg(win), e[0], e[1],
			intArg(inner), intArg(a.M), intArg(a.PerBatch), intArg(a.BatchSize)}
		for _, v := range [][]int64{int64Dims(data[batchDims : batchDims+a.M]), st[batchDims : batchDims+a.M]} {
			for k := range kernels.MAXRANK {
				if k < len(v) {
					args = append(args, intArg(v[k]))
				} else {
					args = append(args, intArg(0))
				}
			}
		}
		return args
	}
	if mode != kernels.GM_SCATTER {
		return l.Launch(kernels.GatherNd, n, args(mode, n, operand{})...)
	}
	_, known := ind.Host()
	return launchScatter(l, kernels.GatherNd, n, tuples, opsem.Count(data[:batchDims+a.M]), known && valid && distinct(a.Offsets), args)
}

// scatterModes are the gather_* modes of the scatter reductions that do
// not depend on the order of the updates, by the element types they take:
// integer add and mul wrap, and max and min are Go's (shape.cu GM_ADD…).
var scatterModes = map[string]map[inference.DType]int{
	"add": {inference.Int64: kernels.GM_ADD, inference.Int32: kernels.GM_ADD},
	"mul": {inference.Int64: kernels.GM_MUL, inference.Int32: kernels.GM_MUL},
	"max": {inference.Int64: kernels.GM_MAX, inference.Int32: kernels.GM_MAX, inference.Float32: kernels.GM_MAX},
	"min": {inference.Int64: kernels.GM_MIN, inference.Int32: kernels.GM_MIN, inference.Float32: kernels.GM_MIN},
}

// scatterMode returns the gather_* mode of the node (GM_GATHER when it
// does not scatter, GM_SCATTER without a reduction) and the type code of
// elements of type t. A float add or mul reduction runs on the host: the
// CPU applies the updates in order, which fixes the rounding.
func scatterMode(l *lowering, scatter bool, t inference.DType) (mode int, etype int, err error) {
	etype, _ = typeCode(t)
	if !scatter {
		return kernels.GM_GATHER, etype, nil
	}
	red, err := opsem.ScatterReduction(l.Node)
	if err != nil {
		return 0, 0, l.NoKernel("%v", err)
	}
	if red == "none" {
		return kernels.GM_SCATTER, etype, nil
	}
	mode, ok := scatterModes[red][t]
	if !ok {
		return 0, 0, l.NoKernel("reduction %q on %v", red, t)
	}
	return mode, etype, nil
}

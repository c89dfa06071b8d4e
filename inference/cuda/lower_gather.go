package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the indexed operators: Gather, GatherElements, GatherND and
// their scattering twins (kernels/shape.cu gather_*). An index out of
// range is an error of the model's input, which the CPU backend reports;
// a kernel has no way to report it, so these lowerings take only indices
// known on the host at plan time (initializers, shape arithmetic), check
// them there, and send the node to the host otherwise. The addressing is
// opsem's: opsem.GatherShape and opsem.Index, opsem.ElementOffsets and
// opsem.NDOffsets.

func init() {
	registerLowering("Gather", lowerGather)
	registerLowering("GatherElements", lowerGatherElements)
	registerLowering("ScatterElements", lowerScatterElements)
	registerLowering("GatherND", lowerGatherND)
	registerLowering("ScatterND", lowerScatterND)
}

// gatherIndices returns the values of index operand o and its kernel
// index type.
func gatherIndices(l *lowering, o operand) ([]int64, int64, error) {
	if o.DType != inference.Int64 && o.DType != inference.Int32 {
		return nil, 0, l.NoKernel("indices of type %v", o.DType)
	}
	t, ok := o.Host()
	if !ok {
		return nil, 0, l.NoKernel("indices %q computed on the device: a kernel cannot report one out of range", o.Name)
	}
	v, err := opsem.Int64s(t)
	if err != nil {
		return nil, 0, l.NoKernel("indices %v: %v", t, err)
	}
	return v, indexTypes[o.DType], nil
}

// gatherUnique sends a scatter to the host when two updates go to the
// same place: the CPU backend writes them in order, the kernel's threads
// in no order.
func gatherUnique(l *lowering, offs []int) error {
	s := slices.Clone(offs)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return l.NoKernel("indices write element %d twice", s[i])
		}
	}
	return nil
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
	for _, v := range idx {
		if _, err := opsem.Index(v, dim); err != nil {
			return l.NoKernel("%v", err)
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
	return l.Launch(kernels.GatherAxis, n, ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(opsem.Count(x.Shape[axis+1:])),
		intArg(len(idx)), intArg(dim))
}

// lowerGatherElements gathers the elements opsem.ElementOffsets addresses.
func lowerGatherElements(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	if err := checkOut(l, 0, x.DType, ind.Shape); err != nil {
		return err
	}
	return launchElements(l, l.Out[0], x, x.Shape, ind, false)
}

// lowerScatterElements copies the data, then writes the updates over it;
// only without a reduction.
func lowerScatterElements(l *lowering) error {
	x, ind, upd := l.In[0], l.In[1], l.In[2]
	if err := scatterReplaces(l); err != nil {
		return err
	}
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
// updates) into y. The offsets are opsem.ElementOffsets'.
func launchElements(l *lowering, y, x operand, data []int, ind operand, scatter bool) error {
	axis, err := opsem.GatherAxis(l.Node, len(data))
	if err != nil {
		return l.NoKernel("%v", err)
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	offs, err := opsem.ElementOffsets(data, ind.Shape, idx, axis)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	is, st, dim := ind.Shape, rowMajorStrides(data), data[axis]
	if scatter {
		if err := gatherUnique(l, offs); err != nil {
			return err
		}
	}
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
	args := []kernelArg{ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(b2i(scatter)), intArg(st[axis]), intArg(dim)}
	args = append(args, maxRankArgs(d, 1)...)
	args = append(args, maxRankArgs(sets[1], 0)...)
	return l.Launch(kernels.GatherElements, n, args...)
}

// lowerGatherND gathers the slices opsem.NDOffsets addresses.
func lowerGatherND(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	return launchND(l, l.Out[0], x, x.Shape, ind, opsem.GatherNDBatchDims(l.Node), false)
}

// lowerScatterND copies the data, then writes the update slices over it;
// only without a reduction.
func lowerScatterND(l *lowering) error {
	x, ind, upd := l.In[0], l.In[1], l.In[2]
	if err := scatterReplaces(l); err != nil {
		return err
	}
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
// scattering writes x (the updates) into y's slices.
func launchND(l *lowering, y, x operand, data []int, ind operand, batchDims int, scatter bool) error {
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	a, err := opsem.NDOffsets(data, ind.Shape, idx, batchDims)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if a.M > kernels.MAXRANK {
		return l.NoKernel("index tuples of %d > %d values", a.M, kernels.MAXRANK)
	}
	want := a.Shape()
	if scatter {
		if !slices.Equal(x.Shape, want) {
			return l.NoKernel("updates %v, want %v", x.Shape, want)
		}
		if err := gatherUnique(l, a.Offsets); err != nil {
			return err
		}
	} else if err := checkOut(l, 0, x.DType, want); err != nil {
		return err
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	inner := int64(opsem.Count(a.Slice))
	n := int64(len(a.Offsets)) * inner
	args := []kernelArg{ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(b2i(scatter)), intArg(inner), intArg(a.M), intArg(a.PerBatch), intArg(a.BatchSize)}
	st := rowMajorStrides(data)
	for _, v := range [][]int64{int64Dims(data[batchDims : batchDims+a.M]), st[batchDims : batchDims+a.M]} {
		for k := range kernels.MAXRANK {
			if k < len(v) {
				args = append(args, intArg(v[k]))
			} else {
				args = append(args, intArg(0))
			}
		}
	}
	return l.Launch(kernels.GatherNd, n, args...)
}

// scatterReplaces sends a scatter with a reduction to the host: the kernel
// only writes the updates over the data.
func scatterReplaces(l *lowering) error {
	red, err := opsem.ScatterReduction(l.Node)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	if red != "none" {
		return l.NoKernel("reduction %q", red)
	}
	return nil
}

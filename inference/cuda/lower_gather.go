package cuda

import (
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the indexed operators: Gather, GatherElements, GatherND and
// their scattering twins (kernels/shape.cu gather_*). An index out of
// range is an error of the model's input, which the CPU backend reports;
// a kernel has no way to report it, so these lowerings take only indices
// known on the host at plan time (initializers, shape arithmetic), check
// them there, and send the node to the host otherwise.

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
	v, err := cpu.Int64s(t)
	if err != nil {
		return nil, 0, l.NoKernel("indices %v: %v", t, err)
	}
	return v, indexTypes[o.DType], nil
}

// gatherIndex maps an index in [-dim, dim) to [0, dim).
func gatherIndex(l *lowering, v, dim int64) (int64, error) {
	if v < -dim || v >= dim {
		return 0, l.NoKernel("index %d out of range for a dimension of %d", v, dim)
	}
	if v < 0 {
		v += dim
	}
	return v, nil
}

// gatherUnique sends a scatter to the host when two updates go to the
// same place: the CPU backend writes them in order, the kernel's threads
// in no order.
func gatherUnique(l *lowering, offs []int64) error {
	s := slices.Clone(offs)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			return l.NoKernel("indices write element %d twice", s[i])
		}
	}
	return nil
}

func lowerGather(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	axis, err := cpu.NormAxis(l.Int("axis", 0), x.Rank())
	if err != nil {
		return l.NoKernel("axis %d for data %v", l.Int("axis", 0), x.Shape)
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	dim := int64(x.Shape[axis])
	for _, v := range idx {
		if _, err := gatherIndex(l, v, dim); err != nil {
			return err
		}
	}
	if err := checkOut(l, 0, x.DType, slices.Concat(x.Shape[:axis], ind.Shape, x.Shape[axis+1:])); err != nil {
		return err
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	y := l.Out[0]
	n := y.Len()
	return l.Launch(kernels.GatherAxis, n, ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(dimsProduct(x.Shape[axis+1:])),
		intArg(len(idx)), intArg(dim))
}

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
	if red := l.Str("reduction", "none"); red != "none" {
		return l.NoKernel("reduction %q", red)
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
// data along the node's axis: gathering x into y, or scattering x (the
// updates) into y.
func launchElements(l *lowering, y, x operand, data []int, ind operand, scatter bool) error {
	axis, err := cpu.NormAxis(l.Int("axis", 0), len(data))
	if err != nil {
		return l.NoKernel("axis %d for data %v", l.Int("axis", 0), data)
	}
	is := ind.Shape
	if len(is) != len(data) {
		return l.NoKernel("indices %v for data %v", is, data)
	}
	for j := range is {
		if j != axis && is[j] > data[j] {
			return l.NoKernel("indices %v exceed data %v on axis %d", is, data, j)
		}
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	st := rowMajorStrides(data)
	dim := int64(data[axis])
	offs := make([]int64, len(idx))
	coord := make([]int, len(is))
	for p, v := range idx {
		k, err := gatherIndex(l, v, dim)
		if err != nil {
			return err
		}
		o := k * st[axis]
		for j, c := range coord {
			if j != axis {
				o += int64(c) * st[j]
			}
		}
		offs[p] = o
		for j := len(coord) - 1; j >= 0; j-- {
			if coord[j]++; coord[j] < is[j] {
				break
			}
			coord[j] = 0
		}
	}
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

func lowerGatherND(l *lowering) error {
	x, ind := l.In[0], l.In[1]
	return launchND(l, l.Out[0], x, x.Shape, ind, int(l.Int("batch_dims", 0)), false)
}

// lowerScatterND copies the data, then writes the update slices over it;
// only without a reduction.
func lowerScatterND(l *lowering) error {
	x, ind, upd := l.In[0], l.In[1], l.In[2]
	if red := l.Str("reduction", "none"); red != "none" {
		return l.NoKernel("reduction %q", red)
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
// slices of data (of shape data) after its first batchDims axes. Gathering
// reads the slices of x into y; scattering writes x (the updates) into
// y's slices.
func launchND(l *lowering, y, x operand, data []int, ind operand, batchDims int, scatter bool) error {
	is := ind.Shape
	q, r := len(is), len(data)
	if q < 1 || batchDims < 0 || batchDims >= min(q, r) {
		return l.NoKernel("indices %v, data %v, batch_dims %d", is, data, batchDims)
	}
	m := is[q-1]
	if m < 1 || m > r-batchDims || m > kernels.MAXRANK || !slices.Equal(is[:batchDims], data[:batchDims]) {
		return l.NoKernel("indices %v for data %v with batch_dims %d", is, data, batchDims)
	}
	lead, slice := is[:q-1], data[batchDims+m:]
	if scatter {
		if want := slices.Concat(lead, slice); !slices.Equal(x.Shape, want) {
			return l.NoKernel("updates %v, want %v", x.Shape, want)
		}
	} else if err := checkOut(l, 0, x.DType, slices.Concat(lead, slice)); err != nil {
		return err
	}
	idx, itype, err := gatherIndices(l, ind)
	if err != nil {
		return err
	}
	st := rowMajorStrides(data)
	perBatch, batchSize := dimsProduct(is[batchDims:q-1]), dimsProduct(data[batchDims:])
	count := dimsProduct(lead)
	offs := make([]int64, count)
	for p := range count {
		var o int64
		if perBatch > 0 {
			o = p / perBatch * batchSize
		}
		for k := range m {
			a := batchDims + k
			v, err := gatherIndex(l, idx[p*int64(m)+int64(k)], int64(data[a]))
			if err != nil {
				return err
			}
			o += v * st[a]
		}
		offs[p] = o
	}
	if scatter {
		if err := gatherUnique(l, offs); err != nil {
			return err
		}
	}
	w, err := elemWidth(l, x.DType)
	if err != nil {
		return err
	}
	inner := dimsProduct(slice)
	n := count * inner
	args := []kernelArg{ptrArg(y), ptrArg(x), ptrArg(ind), intArg(itype), intArg(w), intArg(n), intArg(b2i(scatter)), intArg(inner), intArg(m), intArg(perBatch), intArg(batchSize)}
	for _, v := range [][]int64{int64Dims(data[batchDims : batchDims+m]), st[batchDims : batchDims+m]} {
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

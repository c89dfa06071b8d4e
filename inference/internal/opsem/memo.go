package opsem

import (
	"unsafe"

	"github.com/beamml/beamml/inference"
)

// A Memo is what a kernel keeps from one run of its node to the next: the
// plan it made for its inputs (output shapes, broadcast tables, loop
// bodies), and the tensors it returned. The CPU executor gives each node of
// a model's graph one Memo per concurrent run (so a Memo is never used by
// two runs at once), which is what lets a run with the shapes of the one
// before allocate nothing but its outputs. Node.Memo is nil where nothing
// is kept (subgraphs, RunNode, shape inference): every helper here then
// builds afresh.
//
// A plan is keyed by its inputs: their element types and shapes, and the
// values of those with at most MemoValues elements (shape, axes, starts,
// scalars). A plan may depend on those and on the node's attributes and
// prepared weights, nothing else; the data of larger inputs is read anew by
// every run.
type Memo struct {
	key  []int64
	plan any
	outs []inference.Tensor
}

// MemoValues is the most elements an input may have for its values to key
// a plan.
const MemoValues = 16

// Plan returns the plan kept for n if its inputs are those it was made
// for, and otherwise the one make returns, kept for the next run. An error
// from make is returned and nothing is kept.
func Plan[P any](n Node, in []inference.Tensor, make func() (P, error)) (P, error) {
	m := n.Memo
	if m != nil {
		if p, ok := m.plan.(P); ok && m.matches(in) {
			return p, nil
		}
	}
	p, err := make()
	if err != nil || m == nil {
		return p, err
	}
	m.key = appendKey(m.key[:0], in)
	m.plan = p
	return p, nil
}

// matches reports whether in has the types, shapes and small values of the
// key.
func (m *Memo) matches(in []inference.Tensor) bool {
	k := m.key
	if len(k) == 0 || k[0] != int64(len(in)) {
		return false
	}
	k = k[1:]
	for _, t := range in {
		if len(k) < 2 || k[0] != int64(t.DType()) || k[1] != int64(t.Rank()) {
			return false
		}
		k = k[2:]
		if len(k) < t.Rank() {
			return false
		}
		for d := range t.Rank() {
			if k[d] != int64(t.Dim(d)) {
				return false
			}
		}
		k = k[t.Rank():]
		if t.Len() > MemoValues {
			continue
		}
		var ok bool
		if k, ok = sameValues(k, t); !ok {
			return false
		}
	}
	return len(k) == 0
}

// appendKey appends the key of in to k.
func appendKey(k []int64, in []inference.Tensor) []int64 {
	k = append(k, int64(len(in)))
	for _, t := range in {
		k = append(k, int64(t.DType()), int64(t.Rank()))
		for d := range t.Rank() {
			k = append(k, int64(t.Dim(d)))
		}
		if t.Len() <= MemoValues {
			k = appendValues(k, t)
		}
	}
	return k
}

// appendValues appends t's elements to k, each as the bits of an int64.
func appendValues(k []int64, t inference.Tensor) []int64 {
	switch t.DType() {
	case inference.Float32:
		d, _ := inference.Data[float32](t)
		for _, v := range d {
			k = append(k, int64(*(*uint32)(unsafe.Pointer(&v))))
		}
	case inference.Int64:
		d, _ := inference.Data[int64](t)
		k = append(k, d...)
	case inference.Int32:
		d, _ := inference.Data[int32](t)
		for _, v := range d {
			k = append(k, int64(v))
		}
	case inference.Bool:
		d, _ := inference.Data[bool](t)
		for _, v := range d {
			k = append(k, int64(*(*uint8)(unsafe.Pointer(&v))))
		}
	case inference.Uint8:
		d, _ := inference.Data[uint8](t)
		for _, v := range d {
			k = append(k, int64(v))
		}
	case inference.Float16:
		d, _ := inference.Data[inference.Half](t)
		for _, v := range d {
			k = append(k, int64(v))
		}
	}
	return k
}

// sameValues reports whether k starts with t's elements as appendValues
// writes them, and returns the rest of k.
func sameValues(k []int64, t inference.Tensor) ([]int64, bool) {
	var buf [MemoValues]int64
	v := appendValues(buf[:0], t)
	if len(k) < len(v) {
		return k, false
	}
	for i := range v {
		if k[i] != v[i] {
			return k, false
		}
	}
	return k[len(v):], true
}

// Output returns output j of n: a tensor of the given shape over data.
// When the shape is the one the last run returned, it costs no
// allocation: the tensor shares that run's shape (inference.WithData),
// whatever buffer the executor's pool handed out this time. Results
// returns the tensors made so far.
func Output[T inference.Element](n Node, j int, shape []int, data []T) (inference.Tensor, error) {
	m := n.Memo
	if m == nil {
		return inference.New(shape, data)
	}
	var t inference.Tensor
	var err error
	if j < len(m.outs) && m.outs[j].Len() == len(data) && m.outs[j].DType() == inference.DTypeOf[T]() && SameShape(m.outs[j], shape) {
		t, err = inference.WithData(m.outs[j], data)
	} else {
		t, err = inference.New(shape, data)
	}
	if err != nil {
		return t, err
	}
	for len(m.outs) <= j {
		m.outs = append(m.outs, inference.Tensor{})
	}
	m.outs[j] = t
	return t, nil
}

// Results returns n's first k outputs as Output made them, in a slice the
// next run of n reuses: the caller copies the tensors out before then.
// Without a Memo it is a new slice of k zero tensors.
func (n Node) Results(k int) []inference.Tensor {
	if n.Memo == nil || len(n.Memo.outs) < k {
		return make([]inference.Tensor, k)
	}
	return n.Memo.outs[:k]
}

// Single returns data with the given shape as n's one output, through
// Output and Results.
func Single[T inference.Element](n Node, shape []int, data []T) ([]inference.Tensor, error) {
	t, err := Output(n, 0, shape, data)
	if err != nil {
		return nil, err
	}
	if n.Memo == nil {
		return []inference.Tensor{t}, nil
	}
	return n.Memo.outs[:1], nil
}

// SameShape reports whether t has the given shape, without copying t's
// (inference.Tensor.Shape does): what a kernel's plan compares its inputs
// with.
func SameShape(t inference.Tensor, shape []int) bool {
	if t.Rank() != len(shape) {
		return false
	}
	for d, v := range shape {
		if t.Dim(d) != v {
			return false
		}
	}
	return true
}

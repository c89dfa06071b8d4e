package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Sequence operators: SequenceEmpty, SequenceConstruct, SequenceAt,
// SequenceInsert, SequenceErase, SequenceLength and ConcatFromSequence.
// Their operands may be sequences, so they are not Kernels: the executor
// runs them (runSeq in exec.go) from seqKernels.

// item is an operand of the sequence operators: a tensor, or a sequence of
// tensors. Sequences live only inside a graph run; graph inputs and outputs
// are tensors.
type item struct {
	t     inference.Tensor
	seq   []inference.Tensor
	isSeq bool
}

// seqKernel computes a sequence operator.
type seqKernel func(n opsem.Node, in []item) (item, error)

var seqKernels = map[string]seqKernel{
	"SequenceEmpty":      seqEmpty,
	"SequenceConstruct":  seqConstruct,
	"SequenceAt":         seqAt,
	"SequenceInsert":     seqInsert,
	"SequenceErase":      seqErase,
	"SequenceLength":     seqLength,
	"ConcatFromSequence": seqConcat,
}

// seqKeep counts against n's budget what a sequence the node made keeps
// beyond what its inputs hold: its records (limit.TensorRecord each) and,
// for each tensor, the heap it holds (limit.Held) beyond its elements,
// which are counted as the values or sequences they come from. The records
// are allocated before they are counted: a sequence has at most one per
// node of the graph.
func seqKeep(n opsem.Node, seq []inference.Tensor) error {
	bytes := int64(cap(seq)) * limit.TensorRecord
	for _, t := range seq {
		bytes += limit.Held(t) - t.ByteSize()
	}
	return n.Run.Reserve(func() string { return fmt.Sprintf("a sequence of %d tensors", len(seq)) }, bytes)
}

func seqArg(in []item, i int, wantSeq bool) (item, error) {
	if i >= len(in) {
		return item{}, fmt.Errorf("input %d missing: %w", i, inference.ErrBadModel)
	}
	if in[i].isSeq != wantSeq {
		kind := "a tensor"
		if wantSeq {
			kind = "a sequence"
		}
		return item{}, fmt.Errorf("input %d is not %s: %w", i, kind, inference.ErrType)
	}
	return in[i], nil
}

func seqEmpty(n opsem.Node, _ []item) (item, error) {
	if n.Has("dtype") {
		if _, ok := inference.DTypeFromONNX(n.Int("dtype", 1)); !ok {
			return item{}, n.UnsupportedType("element type", n.Int("dtype", 1))
		}
	}
	return item{isSeq: true, seq: []inference.Tensor{}}, nil
}

func seqConstruct(n opsem.Node, in []item) (item, error) {
	seq := make([]inference.Tensor, len(in)) // one per input of the node
	for i := range in {
		a, err := seqArg(in, i, false)
		if err != nil {
			return item{}, err
		}
		if i > 0 && a.t.DType() != seq[0].DType() {
			return item{}, fmt.Errorf("tensor %d is %v, tensor 0 is %v: %w", i, a.t, seq[0], inference.ErrType)
		}
		seq[i] = a.t
	}
	return item{isSeq: true, seq: seq}, seqKeep(n, seq)
}

// seqPosition reads an optional position input: def when absent, negative
// positions count from the end, and the result must lie in [0, limit].
func seqPosition(in []item, i, def, limit int) (int, error) {
	if i >= len(in) || !present(in[i].t) {
		return def, nil
	}
	v, err := opsem.Int64s(in[i].t)
	if err != nil || len(v) != 1 {
		return 0, fmt.Errorf("position %v is not one integer: %w", in[i].t, inference.ErrShape)
	}
	p := int(v[0])
	if p < 0 {
		p += limit
		if limit > 0 && def == limit { // insert positions range over [-n, n]
			p = int(v[0]) + limit
		}
	}
	if p < 0 || p > limit {
		return 0, fmt.Errorf("position %d out of range for a sequence of %d: %w", v[0], limit, inference.ErrShape)
	}
	return p, nil
}

func seqAt(n opsem.Node, in []item) (item, error) {
	s, err := seqArg(in, 0, true)
	if err != nil {
		return item{}, err
	}
	p, err := seqPosition(in, 1, 0, len(s.seq))
	if err != nil {
		return item{}, err
	}
	if p == len(s.seq) {
		return item{}, fmt.Errorf("position %d out of range for a sequence of %d: %w", p, len(s.seq), inference.ErrShape)
	}
	return item{t: s.seq[p]}, nil
}

func seqInsert(n opsem.Node, in []item) (item, error) {
	s, err := seqArg(in, 0, true)
	if err != nil {
		return item{}, err
	}
	t, err := seqArg(in, 1, false)
	if err != nil {
		return item{}, err
	}
	p, err := seqPosition(in, 2, len(s.seq), len(s.seq))
	if err != nil {
		return item{}, err
	}
	seq := make([]inference.Tensor, 0, len(s.seq)+1)
	seq = append(append(append(seq, s.seq[:p]...), t.t), s.seq[p:]...)
	return item{isSeq: true, seq: seq}, seqKeep(n, seq)
}

func seqErase(n opsem.Node, in []item) (item, error) {
	s, err := seqArg(in, 0, true)
	if err != nil {
		return item{}, err
	}
	if len(s.seq) == 0 {
		return item{}, fmt.Errorf("erase from an empty sequence: %w", inference.ErrShape)
	}
	p, err := seqPosition(in, 1, len(s.seq)-1, len(s.seq))
	if err != nil {
		return item{}, err
	}
	if p == len(s.seq) {
		return item{}, fmt.Errorf("position %d out of range for a sequence of %d: %w", p, len(s.seq), inference.ErrShape)
	}
	seq := make([]inference.Tensor, 0, len(s.seq)-1)
	seq = append(append(seq, s.seq[:p]...), s.seq[p+1:]...)
	return item{isSeq: true, seq: seq}, seqKeep(n, seq)
}

func seqLength(n opsem.Node, in []item) (item, error) {
	s, err := seqArg(in, 0, true)
	if err != nil {
		return item{}, err
	}
	t, err := inference.New([]int{}, []int64{int64(len(s.seq))})
	return item{t: t}, err
}

// seqConcat joins a sequence along axis with the Concat kernel, after
// inserting a new axis with Unsqueeze when new_axis is 1.
func seqConcat(n opsem.Node, in []item) (item, error) {
	s, err := seqArg(in, 0, true)
	if err != nil {
		return item{}, err
	}
	if len(s.seq) == 0 {
		return item{}, fmt.Errorf("concatenation of an empty sequence: %w", inference.ErrShape)
	}
	axis := n.Int("axis", 0)
	parts := s.seq
	// The kernels run under n's budget.
	if n.Int("new_axis", 0) == 1 {
		unsq := opsem.Node{Node: &graph.Node{Name: n.Name, OpType: "Unsqueeze", Attrs: map[string]graph.Attr{
			"axes": {Type: graph.AttrInts, Ints: []int64{axis}}}}, Opset: 11, Run: n.Run}
		if _, err := limit.Claim[inference.Tensor](n.Run, len(s.seq)); err != nil {
			return item{}, err
		}
		parts = make([]inference.Tensor, len(s.seq))
		for i, t := range s.seq {
			out, err := kernels["Unsqueeze"](unsq, []inference.Tensor{t})
			if err != nil {
				return item{}, err
			}
			parts[i] = out[0]
		}
	}
	concat := opsem.Node{Node: &graph.Node{Name: n.Name, OpType: "Concat", Attrs: map[string]graph.Attr{
		"axis": {Type: graph.AttrInt, Int: axis}}}, Opset: 13, Run: n.Run}
	out, err := kernels["Concat"](concat, parts)
	if err != nil {
		return item{}, err
	}
	return item{t: out[0]}, nil
}

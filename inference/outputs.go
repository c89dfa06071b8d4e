package inference

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Outputs is one example's outputs of a model, by name: what a batch's
// outputs unstack into (UnstackRows). Its names are sorted, and shared by
// the rows of a batch, which share one array of tensors too: a row costs
// no allocation of its own, where a map would cost two. It is read-only;
// Map gives a map to change. The zero Outputs holds none.
type Outputs struct {
	names   []string // sorted, distinct; never written once made
	tensors []Tensor // tensors[i] is output names[i]
}

// OutputsOf returns the tensors of m as Outputs, as a model's one-row
// outputs: for code that makes results itself, as a test does.
func OutputsOf(m map[string]Tensor) Outputs {
	names := slices.Sorted(maps.Keys(m))
	ts := make([]Tensor, len(names))
	for i, name := range names {
		ts[i] = m[name]
	}
	return Outputs{names: names, tensors: ts}
}

// Len returns the number of outputs.
func (o Outputs) Len() int { return len(o.names) }

// Lookup returns the output called name, and whether there is one.
func (o Outputs) Lookup(name string) (Tensor, bool) {
	// A model has a few outputs: a scan beats a search, and a hash.
	for i, n := range o.names {
		if n == name {
			return o.tensors[i], true
		}
	}
	return Tensor{}, false
}

// Get returns the output called name, or the zero Tensor (no elements,
// element type 0) when there is none, as indexing a map would: Data and
// the other accessors then fail with an error naming the type.
func (o Outputs) Get(name string) Tensor {
	t, _ := o.Lookup(name)
	return t
}

// Names returns the names of the outputs, sorted, in a new slice.
func (o Outputs) Names() []string { return slices.Clone(o.names) }

// All yields the outputs in the order of their names.
func (o Outputs) All() iter.Seq2[string, Tensor] {
	return func(yield func(string, Tensor) bool) {
		for i, name := range o.names {
			if !yield(name, o.tensors[i]) {
				return
			}
		}
	}
}

// Map returns the outputs in a new map.
func (o Outputs) Map() map[string]Tensor {
	m := make(map[string]Tensor, len(o.names))
	for i, name := range o.names {
		m[name] = o.tensors[i]
	}
	return m
}

// ByteSize is the total size of the outputs' tensor data in bytes.
func (o Outputs) ByteSize() int64 {
	var n int64
	for _, t := range o.tensors {
		n += t.ByteSize()
	}
	return n
}

// String lists the tensors by name, as Example.String does:
// "{label: int64[], scores: float32[3]}".
func (o Outputs) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range o.names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", name, o.tensors[i])
	}
	b.WriteByte('}')
	return b.String()
}

// UnstackRows splits a batch's outputs along axis 0 into the Outputs of
// each of its n examples. Every output must have n rows. The rows share one
// array of tensors, each a view of its batch tensor's elements.
func UnstackRows(outputs map[string]Tensor, n int) ([]Outputs, error) {
	if n < 0 {
		return nil, fmt.Errorf("inference: unstack into %d rows: %w", n, ErrShape)
	}
	names := slices.Sorted(maps.Keys(outputs))
	k := len(names)
	all := make([]Tensor, n*k)
	for j, name := range names {
		t := outputs[name]
		if t.Rank() == 0 || t.shape()[0] != n {
			return nil, fmt.Errorf("inference: output %q is %v, want %d rows along axis 0: %w", name, t, n, ErrShape)
		}
		if kindOf(t.dtype) == nil {
			return nil, fmt.Errorf("inference: output %q: unstack: %v: %w", name, t.dtype, ErrType)
		}
		_, per := t.rows()
		inner := t.shape()[1:]
		for i := range n {
			all[i*k+j] = t.row(i, per, inner)
		}
	}
	rows := make([]Outputs, n)
	for i := range rows {
		rows[i] = Outputs{names: names, tensors: all[i*k : (i+1)*k : (i+1)*k]}
	}
	return rows, nil
}

// AppendBinary appends the outputs in AppendTensors's encoding, the wire
// format of a map of them; DecodeOutputs reads it.
func (o Outputs) AppendBinary(b []byte) ([]byte, error) {
	var buf [16]namedTensor
	return appendEncoded(b, 0, o.appendNamed(buf[:0]), []int{o.Len()})
}

// appendNamed appends the outputs to all, in order.
func (o Outputs) appendNamed(all []namedTensor) []namedTensor {
	for i, name := range o.names {
		all = append(all, namedTensor{name, o.tensors[i]})
	}
	return all
}

package inference

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/beamml/beamml/internal/intern"
)

// Example is one input of a model without the batch dimension: a tensor for
// each model input, by name. For a model whose input x has shape [?, 4], an
// example holds x with shape [4]. A model with exactly one input also takes
// that tensor under the empty name "".
type Example map[string]Tensor

// ByteSize is the total size of the example's tensor data in bytes.
func (e Example) ByteSize() int64 {
	var n int64
	for _, t := range e {
		n += t.ByteSize()
	}
	return n
}

// String lists the tensors by name, as in "{mask: bool[16], x: float32[16 8]}".
func (e Example) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range slices.Sorted(maps.Keys(e)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", name, e[name])
	}
	b.WriteByte('}')
	return b.String()
}

// Conform checks an example against a model's inputs and returns it keyed
// by the model's input names. Each tensor must have the input's element
// type and its shape without the batch dimension, where Dynamic matches any
// size. The error names the input, the shape found and the shape wanted.
func Conform(inputs []TensorInfo, ex Example) (Example, error) {
	if t, ok := ex[""]; ok && len(ex) == 1 && len(inputs) == 1 {
		ex = Example{inputs[0].Name: t}
	}
	if len(ex) != len(inputs) { // else, with every input found below, ex has no other name
		for name := range ex {
			if !slices.ContainsFunc(inputs, func(i TensorInfo) bool { return i.Name == name }) {
				return nil, fmt.Errorf("inference: example has tensor %q, model inputs are %v: %w", name, inputNames(inputs), ErrUnexpectedInput)
			}
		}
	}
	for _, in := range inputs {
		t, ok := ex[in.Name]
		if !ok {
			return nil, fmt.Errorf("inference: example %v lacks model input %q: %w", ex, in.Name, ErrMissingInput)
		}
		if t.dtype != in.DType {
			return nil, fmt.Errorf("inference: input %q: element type %v, want %v: %w", in.Name, t.dtype, in.DType, ErrType)
		}
		if len(in.Shape) == 0 {
			return nil, fmt.Errorf("inference: input %q: model declares rank 0, so it has no batch dimension: %w", in.Name, ErrShape)
		}
		if want := in.Shape[1:]; !matchShape(t.shape(), want) {
			return nil, fmt.Errorf("inference: input %q: shape %v, want %s (the model's %s without the batch dimension): %w",
				in.Name, t.shape(), formatShape(want), formatShape(in.Shape), ErrShape)
		}
	}
	return ex, nil
}

func inputNames(inputs []TensorInfo) []string {
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in.Name
	}
	return names
}

func matchShape(got, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i, w := range want {
		if w != Dynamic && got[i] != w {
			return false
		}
	}
	return true
}

// formatShape prints a declared shape with Dynamic dimensions as "?".
func formatShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d == Dynamic {
			parts[i] = "?"
		} else {
			parts[i] = fmt.Sprint(d)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// StackKey is equal for two examples conformed to inputs exactly when they
// can be stacked into one batch. Conform fixes every dimension but the
// model's Dynamic ones, so the key holds only those: it is "" for a model
// without dynamic dimensions beyond the batch, and otherwise separates, say,
// sequences of different lengths.
func StackKey(inputs []TensorInfo, ex Example) string {
	var key []byte
	for _, in := range inputs {
		if len(in.Shape) < 2 {
			continue
		}
		shape := ex[in.Name].shape()
		for i, d := range in.Shape[1:] {
			if d == Dynamic && i < len(shape) {
				key = binary.AppendUvarint(key, uint64(shape[i]))
			}
		}
	}
	return string(key)
}

// StackExamples stacks examples with equal StackKeys into model inputs: for
// each name, n tensors of shape s become one of shape [n, s...].
func StackExamples(exs []Example) (map[string]Tensor, error) {
	if len(exs) == 0 {
		return nil, fmt.Errorf("inference: stack of no examples: %w", ErrShape)
	}
	out := make(map[string]Tensor, len(exs[0]))
	column := make([]Tensor, len(exs))
	for name := range exs[0] {
		for i, ex := range exs {
			t, ok := ex[name]
			if !ok {
				return nil, fmt.Errorf("inference: stack: example %d lacks %q: %w", i, name, ErrShape)
			}
			column[i] = t
		}
		t, err := Stack(column)
		if err != nil {
			return nil, fmt.Errorf("inference: stack input %q: %w", name, err)
		}
		out[name] = t
	}
	for i, ex := range exs[1:] {
		if len(ex) != len(out) {
			return nil, fmt.Errorf("inference: stack: example %d has %d tensors, example 0 has %d: %w", i+1, len(ex), len(out), ErrShape)
		}
	}
	return out, nil
}

// UnstackOutputs splits a batch's outputs along axis 0 into one map per
// example. Every output must have n rows. UnstackRows does the same
// without a map per example.
func UnstackOutputs(outputs map[string]Tensor, n int) ([]map[string]Tensor, error) {
	rows, err := UnstackRows(outputs, n)
	if err != nil {
		return nil, err
	}
	maps := make([]map[string]Tensor, n)
	for i, r := range rows {
		maps[i] = r.Map()
	}
	return maps, nil
}

// AppendTensors appends a map of tensors to b: the count, then for each
// name in sorted order its length, its bytes and the tensor's AppendBinary
// encoding. It is the wire format of Example and of Outputs.
func AppendTensors(b []byte, ts map[string]Tensor) ([]byte, error) {
	return AppendTensorMaps(b, 0, ts)
}

// AppendTensorMaps appends AppendTensors's encoding of each map in turn,
// reading each map once and growing b once, for them all and extra bytes
// more: what a value holding several maps and a few strings needs to
// encode in one allocation.
func AppendTensorMaps(b []byte, extra int, ms ...map[string]Tensor) ([]byte, error) {
	var buf [16]namedTensor     // most maps have a few names: sort them without allocating
	counts := make([]int, 0, 4) // on the stack, for up to four maps
	all := buf[:0]
	for _, ts := range ms {
		all = appendSorted(all, ts)
		counts = append(counts, len(ts))
	}
	return appendEncoded(b, extra, all, counts)
}

// AppendExampleOutputs appends AppendTensors's encoding of ex, then that of
// o, growing b once for both and extra bytes more: a prediction result's
// tensors in one allocation.
func AppendExampleOutputs(b []byte, extra int, ex Example, o Outputs) ([]byte, error) {
	var buf [16]namedTensor
	all := appendSorted(buf[:0], ex)
	all = o.appendNamed(all)
	counts := [2]int{len(ex), o.Len()}
	return appendEncoded(b, extra, all, counts[:])
}

// appendSorted appends the entries of ts to all, sorted by name.
func appendSorted(all []namedTensor, ts map[string]Tensor) []namedTensor {
	start := len(all)
	for name, t := range ts {
		all = append(all, namedTensor{name, t})
	}
	slices.SortFunc(all[start:], func(a, b namedTensor) int { return strings.Compare(a.name, b.name) })
	return all
}

// appendEncoded appends the encodings of the groups of all, sorted by
// name within each: counts[i] entries in group i.
func appendEncoded(b []byte, extra int, all []namedTensor, counts []int) ([]byte, error) {
	size := extra + len(counts)*binary.MaxVarintLen64
	for _, e := range all {
		// A string's length takes at most the 16 bytes ByteSize counts for its header.
		size += 2*binary.MaxVarintLen64 + len(e.name) + 1 + binary.MaxVarintLen64*len(e.t.shape()) + int(e.t.ByteSize())
	}
	b = slices.Grow(b, size)
	for _, c := range counts {
		b = binary.AppendUvarint(b, uint64(c))
		for _, e := range all[:c] {
			b = binary.AppendUvarint(b, uint64(len(e.name)))
			b = append(b, e.name...)
			var err error
			if b, err = e.t.AppendBinary(b); err != nil {
				return nil, fmt.Errorf("inference: encode tensor %q: %w", e.name, err)
			}
		}
		all = all[c:]
	}
	return b, nil
}

// namedTensor is one entry of a map of tensors.
type namedTensor struct {
	name string
	t    Tensor
}

// DecodeTensors reads what AppendTensors wrote from the front of b and
// returns the map and the number of bytes read.
func DecodeTensors(b []byte) (map[string]Tensor, int, error) {
	count, off, err := decodeCount(b)
	if err != nil {
		return nil, 0, err
	}
	ts := make(map[string]Tensor, count)
	for range count {
		name, t, k, err := decodeEntry(b[off:])
		if err != nil {
			return nil, 0, err
		}
		off += k
		ts[name] = t
	}
	return ts, off, nil
}

// DecodeOutputs reads what AppendTensors (or Outputs.AppendBinary) wrote
// from the front of b as Outputs, and returns the number of bytes read. It
// fails on names out of order or repeated, which no encoder writes.
func DecodeOutputs(b []byte) (Outputs, int, error) {
	count, off, err := decodeCount(b)
	if err != nil || count == 0 {
		return Outputs{}, off, err
	}
	o := Outputs{names: make([]string, count), tensors: make([]Tensor, count)}
	for i := range count {
		name, t, k, err := decodeEntry(b[off:])
		if err != nil {
			return Outputs{}, 0, err
		}
		if i > 0 && name <= o.names[i-1] {
			return Outputs{}, 0, fmt.Errorf("inference: tensor map encoding: %q after %q: names out of order: %w", name, o.names[i-1], ErrShape)
		}
		off += k
		o.names[i], o.tensors[i] = name, t
	}
	return o, off, nil
}

// decodeCount reads the count of a tensor map's encoding, which cannot
// exceed its length (each entry takes a byte at least).
func decodeCount(b []byte) (count, n int, err error) {
	c, n := binary.Uvarint(b)
	if n <= 0 || c > uint64(len(b)) {
		return 0, 0, fmt.Errorf("inference: tensor map encoding: bad count: %w", ErrShape)
	}
	return int(c), n, nil
}

// decodeEntry reads one name and tensor of a tensor map's encoding, and
// the number of bytes they took.
func decodeEntry(b []byte) (name string, t Tensor, n int, err error) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return "", Tensor{}, 0, fmt.Errorf("inference: tensor map encoding: bad name: %w", ErrShape)
	}
	name = intern.String(b[k : k+int(l)])
	n = k + int(l)
	k, err = t.decode(b[n:])
	if err != nil {
		return "", Tensor{}, 0, fmt.Errorf("inference: tensor map encoding: %q: %w", name, err)
	}
	return name, t, n + k, nil
}

// MarshalBinary encodes the example with AppendTensors.
func (e Example) MarshalBinary() ([]byte, error) {
	return AppendTensors(nil, e)
}

// UnmarshalBinary decodes what MarshalBinary wrote.
func (e *Example) UnmarshalBinary(b []byte) error {
	ts, n, err := DecodeTensors(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("inference: example encoding has %d trailing bytes: %w", len(b)-n, ErrShape)
	}
	*e = ts
	return nil
}

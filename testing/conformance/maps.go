package main

import (
	"fmt"
	"os"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

// readMapOutput reads the expected value of an output the runtime gives as
// a [rows, classes] tensor of scores with class labels (a ZipMap's,
// graph.Value.Labels): a serialized onnx.SequenceProto of MapProto, one map
// per row from label to score, each map's values a sequence of scalar
// tensors. It returns the tensor with the scores in the labels' order, and
// fails when a map's keys are not the labels.
func readMapOutput(path string, labels []string) (inference.Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return inference.Tensor{}, err
	}
	column := make(map[string]int, len(labels))
	for j, l := range labels {
		column[l] = j
	}
	var scores []float32
	rows := 0
	err = fields(b, func(num protowire.Number, v []byte) error {
		if num != 6 { // SequenceProto.map_values
			return nil
		}
		keys, values, err := readMap(v)
		if err != nil {
			return err
		}
		if len(keys) != len(labels) || len(values) != len(keys) {
			return fmt.Errorf("map %d has %d keys and %d values, want the %d labels %v", rows, len(keys), len(values), len(labels), labels)
		}
		row := make([]float32, len(labels))
		for i, k := range keys {
			j, ok := column[k]
			if !ok {
				return fmt.Errorf("map %d: key %q is not a label of %v", rows, k, labels)
			}
			row[j] = values[i]
		}
		scores = append(scores, row...)
		rows++
		return nil
	})
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("%s: %w", path, err)
	}
	return inference.New([]int{rows, len(labels)}, scores)
}

// readMap reads a MapProto of int64 or string keys whose values are
// scalar tensors.
func readMap(b []byte) (keys []string, values []float32, err error) {
	err = fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 3: // keys, int64, packed
			for len(v) > 0 {
				k, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return protowire.ParseError(n)
				}
				keys = append(keys, strconv.FormatInt(int64(k), 10))
				v = v[n:]
			}
		case 4: // string_keys
			keys = append(keys, string(v))
		case 5: // values: a SequenceProto of tensors (tensor_values, field 3)
			return fields(v, func(num protowire.Number, t []byte) error {
				if num != 3 {
					return nil
				}
				_, x, err := onnx.ReadTensor(t)
				if err != nil {
					return err
				}
				f, err := inference.Float64s(x)
				if err != nil || len(f) != 1 {
					return fmt.Errorf("map value %v, want one number", x)
				}
				values = append(values, float32(f[0]))
				return nil
			})
		}
		return nil
	})
	return keys, values, err
}

// fields calls f with the number and bytes of each length-delimited field
// of the message b (and the varint of an unpacked int64 key, re-encoded),
// skipping the others.
func fields(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			v = protowire.AppendVarint(nil, x)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if v != nil {
			if err := f(num, v); err != nil {
				return err
			}
		}
	}
	return nil
}

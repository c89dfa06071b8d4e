package runinference

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/intern"
)

// PredictionResult is the output for one input element: the example as it
// came in, the model's outputs for it (the batch dimension removed), and the
// model instance that computed them.
type PredictionResult struct {
	Example inference.Example
	Outputs inference.Outputs // by name: r.Outputs.Get("logits")
	ModelID inference.ModelID
}

// Output returns the one output of a model with exactly one output, so
// that a pipeline need not know the name the model's exporter gave it
// ("output_0", "logits"). It fails with an error wrapping
// inference.ErrMissingOutput, naming the outputs, when the result holds
// none or several: name the one wanted in Outputs or OutputData.
func (r PredictionResult) Output() (inference.Tensor, error) {
	if r.Outputs.Len() == 1 {
		for _, t := range r.Outputs.All() {
			return t, nil
		}
	}
	return inference.Tensor{}, fmt.Errorf("runinference: %s has %d outputs %v, want exactly one for Output; name the one wanted: %w",
		r.what(), r.Outputs.Len(), r.Outputs.Names(), inference.ErrMissingOutput)
}

// OutputData returns the elements of output name of r as a []T, without
// copying; name "" means the one output of a one-output model, as Output.
// It fails with an error wrapping inference.ErrMissingOutput when r has no
// such output, or inference.ErrType when T is not the output's element
// type; each names the output and what r holds.
func OutputData[T inference.Element](r PredictionResult, name string) ([]T, error) {
	if name == "" && r.Outputs.Len() == 1 {
		for n := range r.Outputs.All() {
			name = n
		}
	}
	t, ok := r.Outputs.Lookup(name)
	switch {
	case !ok && name == "":
		_, err := r.Output()
		return nil, err
	case !ok:
		return nil, fmt.Errorf("runinference: %s has no output %q, its outputs are %v: %w",
			r.what(), name, r.Outputs.Names(), inference.ErrMissingOutput)
	}
	d, err := inference.Data[T](t)
	if err != nil {
		return nil, fmt.Errorf("runinference: output %q of %s: %w", name, r.what(), err)
	}
	return d, nil
}

// what names the result in errors: by its model where it has one.
func (r PredictionResult) what() string {
	if r.ModelID.URI == "" {
		return "the result"
	}
	return "the result of model " + r.ModelID.URI
}

// The element types carry tensors, whose data Beam's default (JSON) coder
// would inflate several times over; they get compact binary coders instead.
func init() {
	beam.RegisterCoder(reflect.TypeOf(inference.Tensor{}), encodeTensor, decodeTensor)
	beam.RegisterCoder(reflect.TypeOf(inference.Example{}), encodeExample, decodeExample)
	beam.RegisterCoder(reflect.TypeOf(PredictionResult{}), encodePrediction, decodePrediction)
	beam.RegisterCoder(reflect.TypeOf(Failure{}), encodeFailure, decodeFailure)
	// Registered functions get Beam's generated callers: without them Beam
	// calls a coder through reflect.Value.Call, about 300ns an element.
	register.Function1x2(encodeTensor)
	register.Function1x2(decodeTensor)
	register.Function1x2(encodeExample)
	register.Function1x2(decodeExample)
	register.Function1x2(encodePrediction)
	register.Function1x2(decodePrediction)
	register.Function1x2(encodeFailure)
	register.Function1x2(decodeFailure)
}

func encodeTensor(t inference.Tensor) ([]byte, error) { return t.MarshalBinary() }

func decodeTensor(b []byte) (inference.Tensor, error) {
	var t inference.Tensor
	err := t.UnmarshalBinary(b)
	return t, err
}

func encodeExample(e inference.Example) ([]byte, error) { return e.MarshalBinary() }

func decodeExample(b []byte) (inference.Example, error) {
	var e inference.Example
	err := e.UnmarshalBinary(b)
	return e, err
}

func encodePrediction(p PredictionResult) ([]byte, error) {
	id := p.ModelID
	b, err := inference.AppendExampleOutputs(nil, 3*binary.MaxVarintLen64+len(id.URI)+len(id.Instance)+len(id.Name), p.Example, p.Outputs)
	if err != nil {
		return nil, err
	}
	b = appendStrings(b, id.URI, id.Instance)
	if id.Name != "" { // only then: the encoding stays what it was without names
		b = appendStrings(b, id.Name)
	}
	return b, nil
}

func decodePrediction(b []byte) (PredictionResult, error) {
	var p PredictionResult
	ex, n, err := inference.DecodeTensors(b)
	if err != nil {
		return p, err
	}
	outs, m, err := inference.DecodeOutputs(b[n:])
	if err != nil {
		return p, err
	}
	var id [3]string
	rest, err := readStringsInto(b[n+m:], id[:2])
	if err == nil && len(rest) > 0 { // ModelID.Name, encoded only when set
		if rest, err = readStringsInto(rest, id[2:]); err == nil && id[2] == "" {
			err = errors.New("an empty model name, which is never encoded")
		}
	}
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return p, fmt.Errorf("runinference: decode PredictionResult: %w", err)
	}
	return PredictionResult{Example: ex, Outputs: outs, ModelID: inference.ModelID{URI: id[0], Instance: id[1], Name: id[2]}}, nil
}

// encodeFailure writes the example, then Err, Stage, the model id's URI
// and instance, Kind and the model id's Name. The later fields come last so
// that an encoding from before them (four or five strings) still decodes,
// as a Failure in flight across a pipeline update may be.
func encodeFailure(f Failure) ([]byte, error) {
	id := f.ModelID
	b, err := inference.AppendTensorMaps(nil, 6*binary.MaxVarintLen64+len(f.Err)+len(f.Stage)+len(id.URI)+len(id.Instance)+len(f.Kind)+len(id.Name), f.Example)
	if err != nil {
		return nil, err
	}
	b = appendStrings(b, f.Err, string(f.Stage), f.ModelID.URI, f.ModelID.Instance, string(f.Kind))
	if f.ModelID.Name != "" { // only then: the encoding stays what it was without names
		b = appendStrings(b, f.ModelID.Name)
	}
	return b, nil
}

// decodeFailure reads what encodeFailure writes, or the encoding without
// Kind, whose Failures get KindOther: the kind of their cause is lost.
func decodeFailure(b []byte) (Failure, error) {
	ex, n, err := inference.DecodeTensors(b)
	if err != nil {
		return Failure{}, err
	}
	s, err := readStrings(b[n:], 6)
	if err == nil && s[5] == "" {
		err = errors.New("an empty model name, which is never encoded")
	}
	if err != nil { // an encoding without ModelID.Name, or from before Kind
		s, err = readStrings(b[n:], 5)
	}
	if err != nil {
		old, oldErr := readStrings(b[n:], 4)
		if oldErr != nil {
			return Failure{}, fmt.Errorf("runinference: decode Failure: %w", err)
		}
		s = append(old, string(KindOther))
	}
	s = append(s, "") // Name, when the encoding has none
	return Failure{Example: ex, Err: s[0], Stage: Stage(s[1]), ModelID: inference.ModelID{URI: s[2], Instance: s[3], Name: s[5]}, Kind: FailureKind(s[4])}, nil
}

func appendStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// readStrings reads exactly n strings written by appendStrings.
func readStrings(b []byte, n int) ([]string, error) {
	out := make([]string, n)
	rest, err := readStringsInto(b, out)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d trailing bytes", len(rest))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readStringsInto reads len(out) strings written by appendStrings into
// out, and returns the bytes after them. The strings are interned: the
// elements of a pipeline repeat a few model URIs, instances and names.
func readStringsInto(b []byte, out []string) ([]byte, error) {
	for i := range out {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("string %d of %d is truncated", i, len(out))
		}
		out[i] = intern.String(b[k : k+int(l)])
		b = b[k+int(l):]
	}
	return b, nil
}

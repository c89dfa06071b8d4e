package stub

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/beamml/beamml/inference"
)

// optPorts holds a Shaped model's inputs and outputs, as JSON: names may
// hold any character (TensorFlow exports name inputs "input_1:0"), which
// a separator-joined list could not carry.
const optPorts = "ports"

// A Port is one input or one output of a Shaped model: its name, element
// type and shape. Make it with Input or Output.
type Port struct{ p port }

// port is a Port as a Spec carries it.
type port struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"` // inference.DType.String(): "int64"
	Shape  []int  `json:"shape"`
	Output bool   `json:"output,omitempty"`
}

// Input declares an input of a Shaped model. shape[0] is the batch
// dimension; any dimension may be inference.Dynamic (-1), which takes any
// size.
func Input(name string, dtype inference.DType, shape ...int) Port {
	return Port{port{Name: name, DType: dtype.String(), Shape: slices.Clone(shape)}}
}

// Output declares an output of a Shaped model. shape[0] is the batch
// dimension, whatever is written there: an output has as many rows as the
// inputs. Another dimension that is inference.Dynamic takes the size of
// the same axis of the first input in that run, so that an output
// [-1, -1, 9] follows input_ids [-1, -1] at any sequence length.
func Output(name string, dtype inference.DType, shape ...int) Port {
	return Port{port{Name: name, DType: dtype.String(), Shape: slices.Clone(shape), Output: true}}
}

// Shaped returns the Spec of a model with the inputs and outputs given, in
// their order, which computes each output row from the same row of the
// inputs by one rule, so that a test can predict every value:
//
//	S = the sum of all the values of row r of every input (true counts 1)
//	output[r, j] = S + j
//
// where j is the element's index within its row, counted row-major over
// the dimensions after the batch. The value takes the output's type:
// float32(S + j) for float32, rounded to float16 for float16; int64(S) + j
// (S truncated toward zero) for int64, wrapping to int32 and uint8 for
// those; whether int64(S) + j is odd for bool. Sums are exact while they
// stay below 2⁵³ in magnitude.
//
// Run checks its feeds as a compiled model does: a missing input fails
// with inference.ErrMissingInput, an extra one with
// inference.ErrUnexpectedInput, a wrong element type with inference.ErrType,
// a wrong rank or fixed dimension, or inputs of different batch sizes,
// with inference.ErrShape.
//
// The first value of a row, which WithFault, WithFaultRate, WithMemoryUse
// and WithRecording look at, is the first value of that row of the first
// input, as a float32. Shaped panics on a declaration that no model could
// have: no input or no output, a name used twice or empty, an unknown
// type, a rank below 1, a dimension below -1, or a Dynamic output
// dimension on an axis the first input does not have.
func Shaped(ports ...Port) inference.Spec {
	decl := make([]port, len(ports))
	for i, p := range ports {
		decl[i] = p.p
	}
	if err := checkPorts(decl); err != nil {
		panic(fmt.Sprintf("stub: Shaped: %v", err))
	}
	data, err := json.Marshal(decl)
	if err != nil { // ports hold strings and ints only
		panic(fmt.Sprintf("stub: Shaped: %v", err))
	}
	uri := "stub://shaped"
	for _, p := range decl {
		uri += "/" + p.Name
	}
	return inference.Spec{URI: uri, Format: Format, Options: map[string]string{optKind: "shaped", optPorts: string(data)}}
}

// dtypes maps the names Ports carry to element types.
var dtypes = map[string]inference.DType{}

func init() {
	for _, d := range inference.DTypes() {
		dtypes[d.String()] = d
	}
}

// checkPorts finds what makes ports impossible as a model's signature.
func checkPorts(ports []port) error {
	var ins, outs []inference.TensorInfo
	seen := map[string]bool{}
	for _, p := range ports {
		what := "input"
		if p.Output {
			what = "output"
		}
		if p.Name == "" {
			return fmt.Errorf("an %s has no name", what)
		}
		if seen[p.Name] {
			return fmt.Errorf("the name %q is used twice", p.Name)
		}
		seen[p.Name] = true
		dt, ok := dtypes[p.DType]
		if !ok {
			return fmt.Errorf("%s %q has element type %q, want one of %v", what, p.Name, p.DType, inference.DTypes())
		}
		if len(p.Shape) == 0 {
			return fmt.Errorf("%s %q has no dimensions, want at least the batch", what, p.Name)
		}
		for i, d := range p.Shape {
			if d < inference.Dynamic {
				return fmt.Errorf("%s %q: dimension %d is %d, want a size or inference.Dynamic (-1)", what, p.Name, i, d)
			}
		}
		info := inference.TensorInfo{Name: p.Name, DType: dt, Shape: slices.Clone(p.Shape)}
		if p.Output {
			outs = append(outs, info)
		} else {
			ins = append(ins, info)
		}
	}
	if len(ins) == 0 || len(outs) == 0 {
		return fmt.Errorf("%d inputs and %d outputs, want at least one of each", len(ins), len(outs))
	}
	for _, o := range outs {
		for i, d := range o.Shape[1:] {
			if d == inference.Dynamic && i+1 >= len(ins[0].Shape) {
				return fmt.Errorf("output %q: dimension %d is Dynamic, and the first input %v has no axis %d to take its size from", o.Name, i+1, ins[0], i+1)
			}
		}
	}
	return nil
}

// parsePorts reads a Shaped Spec's signature into m.
func (m *Model) parsePorts(v string) error {
	var ports []port
	if err := json.Unmarshal([]byte(v), &ports); err != nil {
		return fmt.Errorf("stub: option %s=%q: %v: %w", optPorts, v, err, inference.ErrBadModel)
	}
	if err := checkPorts(ports); err != nil {
		return fmt.Errorf("stub: option %s: %v: %w", optPorts, err, inference.ErrBadModel)
	}
	for _, p := range ports {
		info := inference.TensorInfo{Name: p.Name, DType: dtypes[p.DType], Shape: p.Shape}
		if p.Output {
			m.outputs = append(m.outputs, info)
		} else {
			m.inputs = append(m.inputs, info)
		}
	}
	return nil
}

// checkFeeds checks a Shaped model's feeds against its inputs and returns
// the batch size and each row's first value.
func (m *Model) checkFeeds(feeds map[string]inference.Tensor) (rows int, firsts []float32, err error) {
	for name := range feeds {
		if !slices.ContainsFunc(m.inputs, func(in inference.TensorInfo) bool { return in.Name == name }) {
			return 0, nil, fmt.Errorf("stub: feed %q is not an input of the model; its inputs are %v: %w", name, m.inputs, inference.ErrUnexpectedInput)
		}
	}
	for k, in := range m.inputs {
		t, ok := feeds[in.Name]
		if !ok {
			return 0, nil, fmt.Errorf("stub: input %v is not fed: %w", in, inference.ErrMissingInput)
		}
		if t.DType() != in.DType {
			return 0, nil, fmt.Errorf("stub: input %v is fed %v: %w", in, t, inference.ErrType)
		}
		shape := t.Shape()
		fits := len(shape) == len(in.Shape)
		for i := 0; fits && i < len(shape); i++ {
			fits = in.Shape[i] == inference.Dynamic || in.Shape[i] == shape[i]
		}
		if !fits {
			return 0, nil, fmt.Errorf("stub: input %v is fed %v: %w", in, t, inference.ErrShape)
		}
		if k == 0 {
			rows = shape[0]
		} else if shape[0] != rows {
			return 0, nil, fmt.Errorf("stub: input %v is fed %d rows, input %q %d: %w", in, shape[0], m.inputs[0].Name, rows, inference.ErrShape)
		}
	}
	first := floats(feeds[m.inputs[0].Name])
	firsts = make([]float32, rows)
	if width := rowWidth(feeds[m.inputs[0].Name]); width > 0 {
		for r := range firsts {
			firsts[r] = float32(first[r*width])
		}
	}
	return rows, firsts, nil
}

// computeShaped applies Shaped's rule to feeds that checkFeeds accepted.
func (m *Model) computeShaped(feeds map[string]inference.Tensor, rows int) (map[string]inference.Tensor, error) {
	sums := make([]float64, rows)
	for _, in := range m.inputs {
		t := feeds[in.Name]
		width := rowWidth(t)
		for i, v := range floats(t) {
			sums[i/width] += v
		}
	}
	lead := feeds[m.inputs[0].Name].Shape()
	out := make(map[string]inference.Tensor, len(m.outputs))
	for _, o := range m.outputs {
		shape := slices.Clone(o.Shape)
		shape[0] = rows
		for i := 1; i < len(shape); i++ {
			if shape[i] == inference.Dynamic {
				shape[i] = lead[i]
			}
		}
		width, err := inference.NumElements(shape[1:])
		if err != nil {
			return nil, fmt.Errorf("stub: output %q: %w", o.Name, err)
		}
		t, err := shapedOutput(o.DType, shape, rows, width, sums)
		if err != nil {
			return nil, fmt.Errorf("stub: output %q: %w", o.Name, err)
		}
		out[o.Name] = t
	}
	return out, nil
}

func fill[T inference.Element](rows, width int, sums []float64, f func(s float64, j int) T) []T {
	data := make([]T, rows*width)
	for r := range rows {
		for j := range width {
			data[r*width+j] = f(sums[r], j)
		}
	}
	return data
}

// rowWidth is the number of values in one row (along axis 0) of t.
func rowWidth(t inference.Tensor) int {
	if t.Dim(0) == 0 {
		return 0
	}
	return t.Len() / t.Dim(0)
}

// floats returns t's values as float64 (inference.Float64s): exact for
// every value of every numeric type but 64-bit integers beyond 2⁵³; true
// is 1; a string counts as its length, so that string inputs make outputs
// that depend on them too.
func floats(t inference.Tensor) []float64 {
	if t.DType() == inference.String {
		return convert(t, func(v string) float64 { return float64(len(v)) })
	}
	f, _ := inference.Float64s(t)
	return f
}

// shapedOutput is the output of type d and shape [rows, …] whose row r,
// element j is sums[r] + j, in d's terms: rounded to an integer for the
// integer types, odd as true, its decimal for strings.
func shapedOutput(d inference.DType, shape []int, rows, width int, sums []float64) (inference.Tensor, error) {
	v := func(s float64, j int) float64 { return s + float64(j) }
	i := func(s float64, j int) int64 { return int64(s) + int64(j) }
	switch d {
	case inference.Float32:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) float32 { return float32(v(s, j)) }))
	case inference.Float64:
		return inference.New(shape, fill(rows, width, sums, v))
	case inference.Float16:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) inference.Half { return inference.HalfFromFloat32(float32(v(s, j))) }))
	case inference.BFloat16:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) inference.BF16 { return inference.BF16FromFloat32(float32(v(s, j))) }))
	case inference.Int64:
		return inference.New(shape, fill(rows, width, sums, i))
	case inference.Int32:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) int32 { return int32(i(s, j)) }))
	case inference.Int16:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) int16 { return int16(i(s, j)) }))
	case inference.Int8:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) int8 { return int8(i(s, j)) }))
	case inference.Uint64:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) uint64 { return uint64(i(s, j)) }))
	case inference.Uint32:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) uint32 { return uint32(i(s, j)) }))
	case inference.Uint16:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) uint16 { return uint16(i(s, j)) }))
	case inference.Uint8:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) uint8 { return uint8(i(s, j)) }))
	case inference.Bool:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) bool { return i(s, j)%2 != 0 }))
	case inference.String:
		return inference.New(shape, fill(rows, width, sums, func(s float64, j int) string { return strconv.FormatInt(i(s, j), 10) }))
	}
	return inference.Tensor{}, fmt.Errorf("%v: %w", d, inference.ErrType)
}

func convert[T inference.Element](t inference.Tensor, f func(T) float64) []float64 {
	data, _ := inference.Data[T](t) // the caller switched on t's type
	out := make([]float64, len(data))
	for i, v := range data {
		out[i] = f(v)
	}
	return out
}

// sameValue is == but for NaN, which matches NaN: a trigger on NaN finds
// NaNs.
func sameValue(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

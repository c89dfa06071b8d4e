package cpu

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

// FuzzRunNode runs one node of an operator drawn from the registered
// kernels, with attributes and inputs drawn from the fuzz input (fuzzNode
// gives the layout), under a 64 MiB budget and a 2 s deadline. The kernel
// must return within fuzzHang; its error, if any, must not be a recovered
// panic (RunNode returns one as an *inference.PanicError); it must leave
// its inputs as they were; every tensor it returns must hold the product
// of its shape in elements; and the run must allocate at most
// fuzzAllocSlack beyond the budget (kernels allocate through limit.Make,
// which counts against it). The seeds in testdata/fuzz/FuzzRunNode are
// what it found, named after the operator and the case.
func FuzzRunNode(f *testing.F) {
	ops := slices.Sorted(maps.Keys(kernels))
	for i := range ops {
		// Opset 13, one output, no attributes, then one, two and three
		// float32 inputs: [2 3], [3] and [2 1 3], valued −1.5, −1, ….
		x := []byte{byte(i), 13 - fuzzOpsetBase, 0, 0}
		for inputs := 1; inputs <= 3; inputs++ {
			seed := append(slices.Clone(x), byte(inputs))
			for _, shape := range [][]int{{2, 3}, {3}, {2, 1, 3}}[:inputs] {
				seed = append(seed, 0, byte(len(shape))) // float32, rank
				for _, d := range shape {
					seed = append(seed, byte(d))
				}
				for v := range limit.Count(shape...) {
					seed = append(seed, byte(5+v))
				}
			}
			f.Add(seed)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if problem := fuzzRunNode(ops, data); problem != "" {
			t.Fatal(problem)
		}
	})
}

// fuzzRunNode runs the node data describes and returns what was wrong, or
// "".
func fuzzRunNode(ops []string, data []byte) string {
	node, opset, in := fuzzNode(ops, data)
	before := make([]inference.Tensor, len(in))
	for i, x := range in {
		before[i] = cloneTensor(x)
	}
	what := func() string {
		return node.OpType + "-" + strconv.FormatInt(opset, 10) + " " + fuzzAttrs(node) + " on " + fuzzTensors(in)
	}
	ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
	defer cancel()
	run := limit.New(ctx, fuzzBudget)
	type result struct {
		out []inference.Tensor
		err error
	}
	done := make(chan result, 1)
	var mem0, mem1 runtime.MemStats
	runtime.ReadMemStats(&mem0)
	go func() {
		out, err := RunNode(run, node, opset, in)
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(fuzzHang):
		return fmt.Sprintf("%s: did not return in %v", what(), fuzzHang)
	}
	runtime.ReadMemStats(&mem1)
	if grew := mem1.TotalAlloc - mem0.TotalAlloc; grew > fuzzBudget+fuzzAllocSlack {
		return fmt.Sprintf("%s: allocated %d bytes under a budget of %d", what(), grew, fuzzBudget)
	}
	for i := range in {
		if !inference.Equal(in[i], before[i]) {
			return fmt.Sprintf("%s: input %d changed", what(), i)
		}
	}
	if err := res.err; err != nil {
		if pe := (*inference.PanicError)(nil); errors.As(err, &pe) {
			return fmt.Sprintf("%s: %v", what(), err)
		}
		return ""
	}
	for i, y := range res.out {
		if y.DType() == 0 && y.Rank() == 0 && y.Len() == 0 {
			continue // an output not computed, left as the zero Tensor
		}
		if n, err := inference.NumElements(y.Shape()); err != nil || n != y.Len() {
			return fmt.Sprintf("%s: output %d is %v with %d elements", what(), i, y, y.Len())
		}
	}
	return ""
}

const (
	fuzzBudget     = 64 << 20
	fuzzAllocSlack = 16 << 20
	fuzzDeadline   = 2 * time.Second
	fuzzHang       = 20 * time.Second
	fuzzOpsetBase  = 1 // opsets 1 … 24
	fuzzOpsets     = 24
)

// fuzzNode decodes a node, the opset and the inputs from data, read a byte
// at a time (zeros once it is spent):
//
//	op (index into ops, the sorted operator names), opset − fuzzOpsetBase,
//	outputs: bits 0–1: count − 1; bit i+2: output i+1 is left out ("")
//	attributes: count (mod 5), then per attribute: name (index into
//	  fuzzAttrNames), kind (its own kind unless the byte is ≥ 224), values
//	inputs: count (mod 7), then per input: dtype (mod 6: 0–4 float32,
//	  int64, int32, bool, uint8; 5 leaves the input out), rank (mod 5),
//	  dims (fuzzDim), one byte per element (fuzzInt, fuzzFloat)
func fuzzNode(ops []string, data []byte) (*graph.Node, int64, []inference.Tensor) {
	r := &fuzzReader{b: data}
	node := &graph.Node{Name: "fuzz", OpType: ops[int(r.byte())%len(ops)], Attrs: map[string]graph.Attr{}}
	opset := fuzzOpsetBase + int64(r.byte())%fuzzOpsets
	outs := r.byte()
	for i := range int(outs&3) + 1 {
		name := "y" + strconv.Itoa(i)
		if i > 0 && outs&(1<<(i+1)) != 0 {
			name = ""
		}
		node.Outputs = append(node.Outputs, name)
	}
	for range r.byte() % 5 {
		a := fuzzAttrNames[int(r.byte())%len(fuzzAttrNames)]
		kind := a.kind
		if k := r.byte(); k >= 224 {
			kind = fuzzKinds[int(k)%len(fuzzKinds)]
		}
		node.Attrs[a.name] = fuzzAttr(r, kind)
	}
	var in []inference.Tensor
	for i := range int(r.byte() % 7) {
		x := fuzzTensor(r)
		name := ""
		if x.DType() != 0 {
			name = "x" + strconv.Itoa(i)
		}
		node.Inputs = append(node.Inputs, name)
		in = append(in, x)
	}
	return node, opset, in
}

// fuzzReader hands out the fuzz input a byte at a time, then zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// fuzzAttrNames are the attributes the kernels and opsem read, each with
// the kind ONNX gives it.
var fuzzAttrNames = []struct {
	name string
	kind graph.AttrType
}{
	{"axis", graph.AttrInt}, {"axes", graph.AttrInts}, {"keepdims", graph.AttrInt},
	{"perm", graph.AttrInts}, {"mode", graph.AttrString}, {"direction", graph.AttrString},
	{"pads", graph.AttrInts}, {"kernel_shape", graph.AttrInts}, {"strides", graph.AttrInts},
	{"dilations", graph.AttrInts}, {"group", graph.AttrInt}, {"to", graph.AttrInt},
	{"dtype", graph.AttrInt}, {"alpha", graph.AttrFloat}, {"beta", graph.AttrFloat},
	{"gamma", graph.AttrFloat}, {"lambd", graph.AttrFloat}, {"bias", graph.AttrFloat},
	{"epsilon", graph.AttrFloat}, {"transA", graph.AttrInt}, {"transB", graph.AttrInt},
	{"exclusive", graph.AttrInt}, {"reverse", graph.AttrInt}, {"largest", graph.AttrInt},
	{"sorted", graph.AttrInt}, {"k", graph.AttrInt}, {"batch_dims", graph.AttrInt},
	{"reduction", graph.AttrString}, {"auto_pad", graph.AttrString}, {"ceil_mode", graph.AttrInt},
	{"count_include_pad", graph.AttrInt}, {"storage_order", graph.AttrInt},
	{"select_last_index", graph.AttrInt}, {"noop_with_empty_axes", graph.AttrInt},
	{"p", graph.AttrInt}, {"broadcast", graph.AttrInt}, {"blocksize", graph.AttrInt},
	{"align_corners", graph.AttrInt}, {"upper", graph.AttrInt}, {"training_mode", graph.AttrInt},
	{"time_axis", graph.AttrInt}, {"batch_axis", graph.AttrInt}, {"stash_type", graph.AttrInt},
	{"start", graph.AttrInt}, {"end", graph.AttrInt}, {"spatial", graph.AttrInt},
	{"size", graph.AttrInt}, {"fmod", graph.AttrInt}, {"num_outputs", graph.AttrInt},
	{"num_groups", graph.AttrInt}, {"num_heads", graph.AttrInt}, {"q_num_heads", graph.AttrInt},
	{"kv_num_heads", graph.AttrInt}, {"rotary_embedding_dim", graph.AttrInt},
	{"qk_matmul_output_mode", graph.AttrInt}, {"is_causal", graph.AttrInt},
	{"interleaved", graph.AttrInt}, {"new_axis", graph.AttrInt}, {"layout", graph.AttrInt},
	{"hidden_size", graph.AttrInt}, {"linear_before_reset", graph.AttrInt},
	{"input_forget", graph.AttrInt}, {"ignore_index", graph.AttrInt}, {"allowzero", graph.AttrInt},
	{"exclude_outside", graph.AttrInt}, {"antialias", graph.AttrInt},
	{"detect_positive", graph.AttrInt}, {"detect_negative", graph.AttrInt},
	{"center_point_box", graph.AttrInt}, {"starts", graph.AttrInts}, {"ends", graph.AttrInts},
	{"split", graph.AttrInts}, {"shape", graph.AttrInts}, {"paddings", graph.AttrInts},
	{"output_shape", graph.AttrInts}, {"output_padding", graph.AttrInts},
	{"scales", graph.AttrFloats}, {"height_scale", graph.AttrFloat}, {"width_scale", graph.AttrFloat},
	{"value", graph.AttrTensor}, {"value_float", graph.AttrFloat}, {"value_floats", graph.AttrFloats},
	{"value_int", graph.AttrInt}, {"value_ints", graph.AttrInts}, {"scale", graph.AttrFloat},
	{"softcap", graph.AttrFloat}, {"ratio", graph.AttrFloat}, {"momentum", graph.AttrFloat},
	{"min", graph.AttrFloat}, {"max", graph.AttrFloat}, {"extrapolation_value", graph.AttrFloat},
	{"cubic_coeff_a", graph.AttrFloat}, {"clip", graph.AttrFloat},
	{"activation_alpha", graph.AttrFloats}, {"activation_beta", graph.AttrFloats},
	{"activations", graph.AttrStrings}, {"padding_mode", graph.AttrString},
	{"nearest_mode", graph.AttrString}, {"keep_aspect_ratio_policy", graph.AttrString},
	{"coordinate_transformation_mode", graph.AttrString}, {"approximate", graph.AttrString},
}

var fuzzKinds = []graph.AttrType{graph.AttrInt, graph.AttrInts, graph.AttrFloat, graph.AttrFloats, graph.AttrString, graph.AttrStrings, graph.AttrTensor}

// fuzzStrings are the values of the string attributes, all of them
// together, and a few no operator takes.
var fuzzStrings = []string{
	"constant", "reflect", "edge", "wrap", "nearest", "linear", "cubic", "bilinear", "bicubic",
	"DCR", "CRD", "forward", "reverse", "bidirectional", "LEFT", "RIGHT",
	"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "none", "add", "mul", "max", "min", "mean", "sum",
	"zeros", "border", "reflection", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil",
	"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
	"half_pixel_symmetric", "stretch", "not_larger", "not_smaller", "tanh",
	"FLOAT", "INT64", "INT32", "BOOL", "UINT8", "DOUBLE",
	"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus",
	"", "bogus",
}

// fuzzAttr reads an attribute of the given kind: a list holds up to 7
// values (the count mod 8).
func fuzzAttr(r *fuzzReader, kind graph.AttrType) graph.Attr {
	a := graph.Attr{Type: kind}
	switch kind {
	case graph.AttrInt:
		a.Int = fuzzInt(r.byte())
	case graph.AttrFloat:
		a.Float = fuzzFloat(r.byte())
	case graph.AttrString:
		a.String = fuzzStrings[int(r.byte())%len(fuzzStrings)]
	case graph.AttrTensor:
		a.Tensor = fuzzTensor(r)
	case graph.AttrInts:
		a.Ints = []int64{}
		for range r.byte() % 8 {
			a.Ints = append(a.Ints, fuzzInt(r.byte()))
		}
	case graph.AttrFloats:
		a.Floats = []float32{}
		for range r.byte() % 8 {
			a.Floats = append(a.Floats, fuzzFloat(r.byte()))
		}
	case graph.AttrStrings:
		a.Strings = []string{}
		for range r.byte() % 8 {
			a.Strings = append(a.Strings, fuzzStrings[int(r.byte())%len(fuzzStrings)])
		}
	}
	return a
}

// fuzzTensor reads a tensor, or the zero Tensor (an input left out).
func fuzzTensor(r *fuzzReader) inference.Tensor {
	dtype := r.byte() % 6
	if dtype == 5 {
		return inference.Tensor{}
	}
	shape := make([]int, r.byte()%5)
	huge := false
	for i := range shape {
		shape[i] = fuzzDim(r.byte())
		huge = huge || shape[i] > 5
	}
	if huge && !slices.Contains(shape, 0) {
		shape[0] = 0 // a huge dimension beside a zero one: no elements
		if len(shape) == 1 || shape[1] <= 5 {
			shape = append(shape, fuzzDim(255))
		}
	}
	n, err := inference.NumElements(shape)
	if err != nil { // huge dimensions whose product overflows before the zero
		shape = append([]int{0}, shape...)[:len(shape)]
		n = 0
	}
	var x inference.Tensor
	switch dtype {
	case 0:
		x, err = inference.New(shape, fuzzValues(r, n, fuzzFloat))
	case 1:
		x, err = inference.New(shape, fuzzValues(r, n, fuzzInt))
	case 2:
		x, err = inference.New(shape, fuzzValues(r, n, func(b byte) int32 {
			v := fuzzInt(b)
			if v != int64(int32(v)) {
				v >>= 32
			}
			return int32(v)
		}))
	case 3:
		x, err = inference.New(shape, fuzzValues(r, n, func(b byte) bool { return b&1 != 0 }))
	default:
		x, err = inference.New(shape, fuzzValues(r, n, func(b byte) uint8 { return b }))
	}
	if err != nil {
		panic(err) // a bug in the decoder, not in a kernel
	}
	return x
}

func fuzzValues[T any](r *fuzzReader, n int, value func(byte) T) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = value(r.byte())
	}
	return v
}

// fuzzDim is a dimension: 0 … 5 mostly, a huge one for the top bytes.
func fuzzDim(b byte) int {
	switch b {
	case 255:
		return 1 << 40
	case 254:
		return 1 << 62
	case 253:
		return math.MaxInt
	case 252:
		return 1 << 31
	}
	return int(b % 6)
}

// fuzzInts are the integers beside the small ones: bounds of the types,
// and sizes past what a run may allocate.
var fuzzInts = []int64{
	math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32, 1 << 31, 1 << 32, 1 << 40, 1 << 62,
	-(1 << 62), math.MinInt64 + 1, 255, 256, 1000, 1 << 20, -1000, 100,
}

// fuzzInt is −4 … 11 for 240 of the byte values, else one of fuzzInts.
func fuzzInt(b byte) int64 {
	if b >= 240 {
		return fuzzInts[b-240]
	}
	return int64(b%16) - 4
}

var fuzzFloats = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)),
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-30,
	1e30, 0.1, 1.0 / 3, 1 << 24, 1e10, 65504, -1e10, 0.999,
}

// fuzzFloat is −4 … 11.5 in halves for 240 of the byte values, else one of
// fuzzFloats.
func fuzzFloat(b byte) float32 {
	if b >= 240 {
		return fuzzFloats[b-240]
	}
	return float32(int(b%32)-8) / 2
}

func fuzzAttrs(n *graph.Node) string {
	s := "{"
	for _, name := range slices.Sorted(maps.Keys(n.Attrs)) {
		a := n.Attrs[name]
		if len(s) > 1 {
			s += " "
		}
		s += name + "="
		switch a.Type {
		case graph.AttrInt:
			s += strconv.FormatInt(a.Int, 10)
		case graph.AttrFloat:
			s += strconv.FormatFloat(float64(a.Float), 'g', -1, 32)
		case graph.AttrString:
			s += strconv.Quote(a.String)
		case graph.AttrTensor:
			s += a.Tensor.String()
		case graph.AttrInts:
			s += fmt.Sprint(a.Ints)
		case graph.AttrFloats:
			s += fmt.Sprint(a.Floats)
		case graph.AttrStrings:
			s += fmt.Sprintf("%q", a.Strings)
		}
	}
	return s + fmt.Sprintf("} outputs %q", n.Outputs)
}

// fuzzTensors describes the inputs of a run, with their values.
func fuzzTensors(in []inference.Tensor) string {
	s := "["
	for i, x := range in {
		if i > 0 {
			s += ", "
		}
		s += x.String()
		if x.DType() != 0 && x.Len() > 0 {
			var v any
			switch x.DType() {
			case inference.Float32:
				v, _ = inference.Data[float32](x)
			case inference.Int64:
				v, _ = inference.Data[int64](x)
			case inference.Int32:
				v, _ = inference.Data[int32](x)
			case inference.Bool:
				v, _ = inference.Data[bool](x)
			case inference.Uint8:
				v, _ = inference.Data[uint8](x)
			}
			s += fmt.Sprint(v)
		}
	}
	return s + "]"
}

package inference_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// equalTensors reports whether two maps hold the same names and Equal
// tensors.
func equalTensors(a, b map[string]inference.Tensor) bool {
	return maps.EqualFunc(a, b, inference.Equal)
}

// imageInputs is a model with two inputs: images with a fixed shape and
// a mask whose length is dynamic.
var imageInputs = []inference.TensorInfo{
	{Name: "image", DType: inference.Uint8, Shape: []int{inference.Dynamic, 2, 3}},
	{Name: "mask", DType: inference.Bool, Shape: []int{inference.Dynamic, inference.Dynamic}},
}

func TestExampleString(t *testing.T) {
	ex := inference.Example{
		"x":    mustNew(t, []int{16, 8}, make([]float32, 128)),
		"mask": mustNew(t, []int{16}, make([]bool, 16)),
	}
	if got, want := ex.String(), "{mask: bool[16], x: float32[16 8]}"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (inference.Example{}).String(); got != "{}" {
		t.Errorf("empty Example String() = %q, want {}", got)
	}
	if got := ex.ByteSize(); got != 128*4+16 {
		t.Errorf("ByteSize() = %d, want %d", got, 128*4+16)
	}
}

func TestConformSingleInputTakesEmptyName(t *testing.T) {
	inputs := []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 4}}}
	x := sample(t, inference.Float32, []int{4}, 0)
	ex := inference.Example{"": x}
	got, err := inference.Conform(inputs, ex)
	if err != nil {
		t.Fatal(err)
	}
	if !equalTensors(got, inference.Example{"x": x}) {
		t.Errorf("Conform({\"\": x}) = %v, want the tensor under \"x\"", got)
	}
	if _, ok := ex[""]; !ok || len(ex) != 1 {
		t.Errorf("Conform changed the caller's example to %v", ex)
	}

	// The input's own name works too, unchanged.
	got, err = inference.Conform(inputs, inference.Example{"x": x})
	if err != nil || !equalTensors(got, inference.Example{"x": x}) {
		t.Errorf("Conform({x: x}) = %v, %v; want it unchanged", got, err)
	}
}

func TestConformEmptyNameNeedsSingleInput(t *testing.T) {
	_, err := inference.Conform(imageInputs, inference.Example{"": sample(t, inference.Uint8, []int{2, 3}, 0)})
	checkErr(t, err, inference.ErrUnexpectedInput, `""`, "image", "mask")

	inputs := []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic}}}
	_, err = inference.Conform(inputs, inference.Example{
		"":  sample(t, inference.Float32, nil, 0),
		"x": sample(t, inference.Float32, nil, 1),
	})
	checkErr(t, err, inference.ErrUnexpectedInput, `""`)
}

func TestConformAcceptsDynamicDimensions(t *testing.T) {
	for _, maskLen := range []int{0, 1, 7, 300} {
		ex := inference.Example{
			"image": sample(t, inference.Uint8, []int{2, 3}, 0),
			"mask":  sample(t, inference.Bool, []int{maskLen}, 0),
		}
		got, err := inference.Conform(imageInputs, ex)
		if err != nil {
			t.Errorf("Conform with a mask of %d: %v", maskLen, err)
			continue
		}
		if !equalTensors(got, ex) {
			t.Errorf("Conform(%v) = %v, want it unchanged", ex, got)
		}
	}

	// A model exported without a dynamic batch axis has batch size 1; the
	// example still leaves the batch dimension out.
	fixed := []inference.TensorInfo{{Name: "x", DType: inference.Int64, Shape: []int{1, 3}}}
	if _, err := inference.Conform(fixed, inference.Example{"x": sample(t, inference.Int64, []int{3}, 0)}); err != nil {
		t.Errorf("Conform to a fixed batch of 1: %v", err)
	}
}

func TestConformRejects(t *testing.T) {
	image := sample(t, inference.Uint8, []int{2, 3}, 0)
	mask := sample(t, inference.Bool, []int{5}, 0)
	tests := []struct {
		name   string
		inputs []inference.TensorInfo
		ex     inference.Example
		target error
		parts  []string
	}{
		{
			name:   "extra tensor",
			inputs: imageInputs,
			ex:     inference.Example{"image": image, "mask": mask, "labels": mask},
			target: inference.ErrUnexpectedInput,
			parts:  []string{`"labels"`, "image", "mask"},
		},
		{
			name:   "missing input",
			inputs: imageInputs,
			ex:     inference.Example{"image": image},
			target: inference.ErrMissingInput,
			parts:  []string{`"mask"`},
		},
		{
			name:   "wrong element type",
			inputs: imageInputs,
			ex:     inference.Example{"image": sample(t, inference.Float32, []int{2, 3}, 0), "mask": mask},
			target: inference.ErrType,
			parts:  []string{`"image"`, "float32", "uint8"},
		},
		{
			name:   "wrong shape",
			inputs: []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 4}}},
			ex:     inference.Example{"x": sample(t, inference.Float32, []int{3}, 0)},
			target: inference.ErrShape,
			parts:  []string{`"x"`, "shape [3]", "want [4]", "[? 4]"},
		},
		{
			name:   "shape with the batch dimension left in",
			inputs: imageInputs,
			ex:     inference.Example{"image": sample(t, inference.Uint8, []int{1, 2, 3}, 0), "mask": mask},
			target: inference.ErrShape,
			parts:  []string{`"image"`, "[1 2 3]", "want [2 3]", "[? 2 3]"},
		},
		{
			name: "fixed dimension next to a dynamic one",
			inputs: []inference.TensorInfo{
				{Name: "tokens", DType: inference.Int64, Shape: []int{inference.Dynamic, inference.Dynamic, 3}},
			},
			ex:     inference.Example{"tokens": sample(t, inference.Int64, []int{5, 2}, 0)},
			target: inference.ErrShape,
			parts:  []string{`"tokens"`, "[5 2]", "want [? 3]", "[? ? 3]"},
		},
		{
			name:   "rank 0 where the model wants rank 1",
			inputs: imageInputs,
			ex:     inference.Example{"image": image, "mask": sample(t, inference.Bool, nil, 0)},
			target: inference.ErrShape,
			parts:  []string{`"mask"`, "shape []", "want [?]"},
		},
		{
			name:   "model input without a batch dimension",
			inputs: []inference.TensorInfo{{Name: "scale", DType: inference.Float32}},
			ex:     inference.Example{"scale": sample(t, inference.Float32, nil, 0)},
			target: inference.ErrShape,
			parts:  []string{`"scale"`, "rank 0"},
		},
	}
	for _, tt := range tests {
		got, err := inference.Conform(tt.inputs, tt.ex)
		if err == nil {
			t.Errorf("%s: Conform(%v) = %v, want an error", tt.name, tt.ex, got)
			continue
		}
		if got != nil {
			t.Errorf("%s: Conform returned %v along with its error", tt.name, got)
		}
		checkErr(t, err, tt.target, tt.parts...)
	}
}

// conform is inference.Conform for an example the test knows to fit.
func conform(t *testing.T, inputs []inference.TensorInfo, ex inference.Example) inference.Example {
	t.Helper()
	got, err := inference.Conform(inputs, ex)
	if err != nil {
		t.Fatalf("Conform(%v): %v", ex, err)
	}
	return got
}

func TestStackKey(t *testing.T) {
	withMask := func(n, seed int) inference.Example {
		return conform(t, imageInputs, inference.Example{
			"image": sample(t, inference.Uint8, []int{2, 3}, seed),
			"mask":  sample(t, inference.Bool, []int{n}, seed),
		})
	}
	if a, b := inference.StackKey(imageInputs, withMask(4, 0)), inference.StackKey(imageInputs, withMask(4, 1)); a != b {
		t.Errorf("examples with masks of one length have keys %q and %q", a, b)
	}
	keys := map[string]int{}
	for _, n := range []int{0, 1, 4, 5, 127, 128, 300} {
		key := inference.StackKey(imageInputs, withMask(n, 0))
		if m, dup := keys[key]; dup {
			t.Errorf("masks of lengths %d and %d have the same key %q", m, n, key)
		}
		keys[key] = n
	}

	// Without dynamic dimensions beyond the batch, every conformed example
	// stacks with every other.
	fixed := []inference.TensorInfo{
		{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 3}},
		{Name: "id", DType: inference.Int64, Shape: []int{inference.Dynamic}},
	}
	for seed := range 3 {
		ex := conform(t, fixed, inference.Example{
			"x":  sample(t, inference.Float32, []int{3}, seed),
			"id": sample(t, inference.Int64, nil, seed),
		})
		if key := inference.StackKey(fixed, ex); key != "" {
			t.Errorf("StackKey(%v) = %q for a model without dynamic dimensions, want \"\"", ex, key)
		}
	}

	// Several dynamic dimensions, in one input and across inputs: the key
	// tells each combination of sizes apart.
	pairs := []inference.TensorInfo{
		{Name: "a", DType: inference.Int32, Shape: []int{inference.Dynamic, inference.Dynamic}},
		{Name: "b", DType: inference.Int32, Shape: []int{inference.Dynamic, inference.Dynamic, inference.Dynamic}},
	}
	keys = map[string]int{}
	shapes := [][2][]int{
		{{1}, {11, 2}},
		{{11}, {1, 2}},
		{{1}, {1, 12}},
		{{300}, {1, 1}},
		{{44}, {2, 1}},
		{{1}, {2, 11}},
	}
	for i, s := range shapes {
		ex := conform(t, pairs, inference.Example{
			"a": sample(t, inference.Int32, s[0], 0),
			"b": sample(t, inference.Int32, s[1], 0),
		})
		key := inference.StackKey(pairs, ex)
		if j, dup := keys[key]; dup {
			t.Errorf("examples with shapes %v and %v have the same key %q", shapes[j], s, key)
		}
		keys[key] = i
		again := conform(t, pairs, inference.Example{
			"b": sample(t, inference.Int32, s[1], 1),
			"a": sample(t, inference.Int32, s[0], 1),
		})
		if other := inference.StackKey(pairs, again); other != key {
			t.Errorf("examples with shapes %v have keys %q and %q", s, key, other)
		}
	}
}

func TestStackExamples(t *testing.T) {
	var exs []inference.Example
	for i := range 3 {
		exs = append(exs, inference.Example{
			"image": sample(t, inference.Uint8, []int{2, 3}, i),
			"id":    sample(t, inference.Int64, nil, i),
		})
	}
	got, err := inference.StackExamples(exs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"image", "id"} {
		column := []inference.Tensor{exs[0][name], exs[1][name], exs[2][name]}
		want, err := inference.Stack(column)
		if err != nil {
			t.Fatal(err)
		}
		if !inference.Equal(got[name], want) {
			t.Errorf("StackExamples()[%q] = %v, want %v", name, got[name], want)
		}
	}
	if len(got) != 2 {
		t.Errorf("StackExamples gave %d inputs, want 2: %v", len(got), slices.Sorted(maps.Keys(got)))
	}
	if got["image"].String() != "uint8[3 2 3]" || got["id"].String() != "int64[3]" {
		t.Errorf("StackExamples gave image %v and id %v, want uint8[3 2 3] and int64[3]", got["image"], got["id"])
	}
}

func TestStackExamplesRejects(t *testing.T) {
	a := inference.Example{"x": sample(t, inference.Float32, []int{2}, 0), "y": sample(t, inference.Int32, nil, 0)}
	tests := []struct {
		name   string
		exs    []inference.Example
		target error
		parts  []string
	}{
		{"no examples", nil, inference.ErrShape, nil},
		{"missing name", []inference.Example{a, {"x": a["x"]}}, inference.ErrShape, []string{"example 1", `"y"`}},
		{"shapes differ", []inference.Example{a, {"x": sample(t, inference.Float32, []int{3}, 0), "y": a["y"]}},
			inference.ErrShape, []string{`"x"`}},
		{"types differ", []inference.Example{a, a, {"x": a["x"], "y": sample(t, inference.Int64, nil, 0)}},
			inference.ErrType, []string{`"y"`}},
	}
	for _, tt := range tests {
		got, err := inference.StackExamples(tt.exs)
		if err == nil {
			t.Errorf("%s: StackExamples = %v, want an error", tt.name, got)
			continue
		}
		checkErr(t, err, tt.target, tt.parts...)
	}
}

// batchOutputs is a batch of three rows of a classifier's outputs, and the
// rows they unstack into.
func batchOutputs(t *testing.T) (outputs map[string]inference.Tensor, rows []map[string]inference.Tensor) {
	outputs = map[string]inference.Tensor{
		"scores": mustNew(t, []int{3, 2}, []float32{0.1, 0.9, 0.8, 0.2, 0.5, 0.5}),
		"label":  mustNew(t, []int{3}, []int64{1, 0, 7}),
	}
	rows = []map[string]inference.Tensor{
		{"scores": mustNew(t, []int{2}, []float32{0.1, 0.9}), "label": mustNew(t, nil, []int64{1})},
		{"scores": mustNew(t, []int{2}, []float32{0.8, 0.2}), "label": mustNew(t, nil, []int64{0})},
		{"scores": mustNew(t, []int{2}, []float32{0.5, 0.5}), "label": mustNew(t, nil, []int64{7})},
	}
	return outputs, rows
}

func TestUnstackOutputs(t *testing.T) {
	outputs, want := batchOutputs(t)
	rows, err := inference.UnstackOutputs(outputs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(rows, want, equalTensors) {
		t.Errorf("UnstackOutputs = %v, want %v", rows, want)
	}

	rows, err = inference.UnstackOutputs(map[string]inference.Tensor{"y": mustNew[float32](t, []int{0, 4}, nil)}, 0)
	if err != nil || len(rows) != 0 {
		t.Errorf("UnstackOutputs of an empty batch = %v, %v; want no rows", rows, err)
	}
	rows, err = inference.UnstackOutputs(nil, 2)
	if err != nil || len(rows) != 2 || len(rows[0]) != 0 || len(rows[1]) != 0 {
		t.Errorf("UnstackOutputs(nil, 2) = %v, %v; want two empty rows", rows, err)
	}
}

func TestUnstackOutputsRejectsRowCount(t *testing.T) {
	outputs := map[string]inference.Tensor{
		"ok":     mustNew(t, []int{3}, []int32{1, 2, 3}),
		"scores": mustNew(t, []int{2, 2}, []float32{1, 2, 3, 4}),
	}
	_, err := inference.UnstackOutputs(outputs, 3)
	checkErr(t, err, inference.ErrShape, `"scores"`, "float32[2 2]", "3 rows")

	_, err = inference.UnstackOutputs(map[string]inference.Tensor{"loss": mustNew(t, nil, []float32{0.5})}, 1)
	checkErr(t, err, inference.ErrShape, `"loss"`, "float32[]")
}

func TestAppendTensorsEncoding(t *testing.T) {
	// Insert in both orders: the encoding sorts the names, so map order
	// does not show.
	ab := map[string]inference.Tensor{}
	ab["a"] = mustNew(t, nil, []bool{true})
	ab["b"] = mustNew(t, []int{1}, []uint8{7})
	ba := map[string]inference.Tensor{}
	ba["b"] = ab["b"]
	ba["a"] = ab["a"]
	want := []byte{'p', 2, 1, 'a', 4, 0, 1, 1, 'b', 5, 1, 1, 7}
	for _, m := range []map[string]inference.Tensor{ab, ba, ab, ba} {
		got, err := inference.AppendTensors([]byte{'p'}, m)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("AppendTensors(p, %v) = %x, %v; want %x", m, got, err, want)
		}
	}
	got, err := inference.AppendTensors(nil, nil)
	if err != nil || !bytes.Equal(got, []byte{0}) {
		t.Errorf("AppendTensors(nil, nil) = %x, %v; want 00", got, err)
	}
}

func TestDecodeTensorsRoundTrip(t *testing.T) {
	cases := []map[string]inference.Tensor{
		{},
		{"": sample(t, inference.Float32, []int{3}, 0)},
		{"mask": sample(t, inference.Bool, []int{3}, 1)},
		{
			"image":   sample(t, inference.Uint8, []int{2, 3}, 1),
			"mask":    sample(t, inference.Bool, []int{4}, 1),
			"flags":   sample(t, inference.Bool, nil, 2),
			"empty":   sample(t, inference.Bool, []int{0}, 1),
			"id":      sample(t, inference.Int64, nil, 1),
			"offsets": sample(t, inference.Int32, []int{2, 2}, 1),
			"nothing": {},
			"ünïcode": sample(t, inference.Float32, nil, 1),
		},
	}
	for _, m := range cases {
		enc, err := inference.AppendTensors([]byte("head"), m)
		if err != nil {
			t.Fatal(err)
		}
		body := enc[len("head"):]
		trailer := []byte("tail")
		var got map[string]inference.Tensor
		var n int
		err = catch(func() (err error) {
			got, n, err = inference.DecodeTensors(append(slices.Clip(body), trailer...))
			return err
		})
		if err != nil {
			t.Errorf("DecodeTensors(AppendTensors(%v)): %v", m, err)
			continue
		}
		if n != len(body) {
			t.Errorf("DecodeTensors(AppendTensors(%v)) read %d bytes, want %d", m, n, len(body))
		}
		if !equalTensors(got, m) {
			t.Errorf("DecodeTensors(AppendTensors(%v)) = %v", m, got)
		}
	}
}

func TestDecodeTensorsRejectsTruncated(t *testing.T) {
	enc, err := inference.AppendTensors(nil, map[string]inference.Tensor{
		"image": sample(t, inference.Uint8, []int{2, 3}, 1),
		"id":    sample(t, inference.Int64, nil, 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(enc) {
		got, _, err := inference.DecodeTensors(enc[:n])
		if err == nil {
			t.Errorf("DecodeTensors of the first %d of %d bytes succeeded with %v", n, len(enc), got)
			continue
		}
		if !errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrType) {
			t.Errorf("DecodeTensors of %d of %d bytes: error %q wraps neither ErrShape nor ErrType", n, len(enc), err)
		}
	}
}

func TestDecodeTensorsRejects(t *testing.T) {
	tests := []struct {
		name   string
		b      []byte
		target error
		parts  []string
	}{
		{"count larger than the input", []byte{200, 1, 1, 'a', 5, 0, 1}, inference.ErrShape, []string{"count"}},
		{"name longer than the input", []byte{1, 9, 'a', 5, 0, 1}, inference.ErrShape, []string{"name"}},
		{"bad tensor", []byte{1, 1, 'a', 5, 1, 4, 1}, inference.ErrShape, []string{`"a"`}},
		{"unknown element type", []byte{1, 1, 'z', 77, 0, 1}, inference.ErrType, []string{`"z"`}},
	}
	for _, tt := range tests {
		got, _, err := inference.DecodeTensors(tt.b)
		if err == nil {
			t.Errorf("%s: DecodeTensors(%x) = %v, want an error", tt.name, tt.b, got)
			continue
		}
		checkErr(t, err, tt.target, tt.parts...)
	}
}

func TestExampleMarshalRoundTrip(t *testing.T) {
	for _, ex := range []inference.Example{
		{},
		{"x": sample(t, inference.Float32, []int{4}, 2)},
		{"image": sample(t, inference.Uint8, []int{2, 3}, 2), "mask": sample(t, inference.Bool, []int{5}, 2)},
		// A bool tensor followed by another tensor in the encoding.
		{"mask": sample(t, inference.Bool, []int{5}, 2), "x": sample(t, inference.Float32, []int{4}, 2)},
	} {
		b, err := ex.MarshalBinary()
		if err != nil {
			t.Fatalf("%v.MarshalBinary: %v", ex, err)
		}
		var got inference.Example
		if err := catch(func() error { return got.UnmarshalBinary(b) }); err != nil {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)): %v", ex, err)
			continue
		}
		if !equalTensors(got, ex) {
			t.Errorf("UnmarshalBinary(MarshalBinary(%v)) = %v", ex, got)
		}
	}
}

func TestExampleUnmarshalRejects(t *testing.T) {
	ex := inference.Example{"x": sample(t, inference.Int32, []int{3}, 0)}
	b, err := ex.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got inference.Example
	checkErr(t, got.UnmarshalBinary(append(b, 0)), inference.ErrShape, "1 trailing bytes")
	for n := range len(b) {
		if err := got.UnmarshalBinary(b[:n]); err == nil {
			t.Errorf("UnmarshalBinary of the first %d of %d bytes succeeded with %v", n, len(b), got)
		}
	}
	if got != nil {
		t.Errorf("failed UnmarshalBinary calls left %v in the example", got)
	}
}

// FuzzDecodeTensors feeds DecodeTensors arbitrary bytes: it must not panic,
// it must report how much it read, and what it accepts must encode to bytes
// that decode to the same tensors.
func FuzzDecodeTensors(f *testing.F) {
	for _, m := range []map[string]inference.Tensor{
		{},
		{"x": sample(f, inference.Float32, []int{2}, 0)},
		{"image": sample(f, inference.Uint8, []int{2, 3}, 0), "mask": sample(f, inference.Bool, nil, 0), "": {}},
	} {
		b, err := inference.AppendTensors(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, n, err := inference.DecodeTensors(b)
		// DecodeOutputs reads the same encoding: it accepts what
		// DecodeTensors does, as the same tensors, unless the names are
		// out of order, which no encoder writes.
		outs, on, oerr := inference.DecodeOutputs(b)
		switch {
		case err != nil && oerr == nil:
			t.Fatalf("DecodeOutputs(%x) = %v, where DecodeTensors fails: %v", b, outs, err)
		case oerr != nil && !errors.Is(oerr, inference.ErrShape) && !errors.Is(oerr, inference.ErrType):
			t.Fatalf("DecodeOutputs(%x): error %q wraps neither ErrShape nor ErrType", b, oerr)
		case err == nil && oerr == nil && (on != n || !equalTensors(outs.Map(), got) || outs.Len() != len(got)):
			t.Fatalf("DecodeOutputs(%x) = %v, %d bytes; DecodeTensors %v, %d bytes", b, outs, on, got, n)
		case err == nil && oerr != nil && !strings.Contains(oerr.Error(), "out of order"):
			t.Fatalf("DecodeOutputs(%x) fails (%v) where DecodeTensors reads %v", b, oerr, got)
		}
		if err != nil {
			if !errors.Is(err, inference.ErrShape) && !errors.Is(err, inference.ErrType) {
				t.Fatalf("DecodeTensors(%x): error %q wraps neither ErrShape nor ErrType", b, err)
			}
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("DecodeTensors(%x) read %d bytes", b, n)
		}
		enc, err := inference.AppendTensors(nil, got)
		if err != nil {
			t.Fatalf("AppendTensors(%v): %v", got, err)
		}
		again, m, err := inference.DecodeTensors(enc)
		if err != nil || m != len(enc) || !equalTensors(again, got) {
			t.Fatalf("DecodeTensors(%x) = %v, whose encoding %x decodes as %v, %d bytes, %v", b, got, enc, again, m, err)
		}
	})
}

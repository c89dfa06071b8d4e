package inference_test

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

func TestOutputsAccessors(t *testing.T) {
	label := mustNew(t, nil, []int64{7})
	scores := mustNew(t, []int{2}, []float32{0.25, 0.75})
	o := inference.OutputsOf(map[string]inference.Tensor{"scores": scores, "label": label})

	if o.Len() != 2 {
		t.Errorf("Len = %d, want 2", o.Len())
	}
	if got := o.Names(); !slices.Equal(got, []string{"label", "scores"}) {
		t.Errorf("Names = %v, want [label scores]: sorted", got)
	}
	o.Names()[0] = "changed" // a copy: the outputs keep their names
	if got, ok := o.Lookup("label"); !ok || !inference.Equal(got, label) {
		t.Errorf("Lookup(label) = %v, %v; want %v, true", got, ok, label)
	}
	if got := o.Get("scores"); !inference.Equal(got, scores) {
		t.Errorf("Get(scores) = %v, want %v", got, scores)
	}
	if got, ok := o.Lookup("logits"); ok || got.DType() != 0 {
		t.Errorf("Lookup(logits) = %v, %v; want the zero Tensor, false", got, ok)
	}
	if _, err := inference.Data[float32](o.Get("logits")); err == nil {
		t.Error("Data of Get of a missing output succeeded")
	}
	var names []string
	for name, tn := range o.All() {
		names = append(names, name)
		if !inference.Equal(tn, o.Get(name)) {
			t.Errorf("All yields %s = %v, Get gives %v", name, tn, o.Get(name))
		}
		break // All stops when asked to
	}
	if !slices.Equal(names, []string{"label"}) {
		t.Errorf("All yielded %v before its break, want [label]", names)
	}
	if m := o.Map(); !maps.EqualFunc(m, map[string]inference.Tensor{"label": label, "scores": scores}, inference.Equal) {
		t.Errorf("Map = %v", m)
	}
	if got, want := o.String(), "{label: int64[], scores: float32[2]}"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := o.ByteSize(); got != 8+8 {
		t.Errorf("ByteSize = %d, want 16", got)
	}
	var zero inference.Outputs
	if zero.Len() != 0 || len(zero.Map()) != 0 || zero.String() != "{}" {
		t.Errorf("the zero Outputs = %v (%d), want none", zero, zero.Len())
	}
}

func TestUnstackRows(t *testing.T) {
	outputs, want := batchOutputs(t)
	rows, err := inference.UnstackRows(outputs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("UnstackRows gave %d rows, want 3", len(rows))
	}
	for i, r := range rows {
		if !equalTensors(r.Map(), want[i]) || !slices.Equal(r.Names(), []string{"label", "scores"}) {
			t.Errorf("row %d = %v, want %v", i, r, want[i])
		}
	}
	// A row's tensors are views of the batch's: no copy of the elements.
	batchScores, _ := inference.Data[float32](outputs["scores"])
	if d, _ := inference.Data[float32](rows[1].Get("scores")); &d[0] != &batchScores[2] {
		t.Error("row 1's scores do not share the batch tensor's elements")
	}

	rows, err = inference.UnstackRows(map[string]inference.Tensor{"y": mustNew[float32](t, []int{0, 4}, nil)}, 0)
	if err != nil || len(rows) != 0 {
		t.Errorf("UnstackRows of an empty batch = %v, %v; want no rows", rows, err)
	}
	rows, err = inference.UnstackRows(nil, 2)
	if err != nil || len(rows) != 2 || rows[0].Len() != 0 || rows[1].Len() != 0 {
		t.Errorf("UnstackRows(nil, 2) = %v, %v; want two empty rows", rows, err)
	}
	_, err = inference.UnstackRows(outputs, 2)
	checkErr(t, err, inference.ErrShape, "want 2 rows")
	_, err = inference.UnstackRows(outputs, -1)
	checkErr(t, err, inference.ErrShape, "-1 rows")
}

// TestOutputsEncoding checks that Outputs encode as the map of the same
// tensors does (the wire format of a PredictionResult stays what it was),
// decode to what was encoded, and that DecodeOutputs refuses names out of
// order or repeated.
func TestOutputsEncoding(t *testing.T) {
	m := map[string]inference.Tensor{
		"scores": mustNew(t, []int{2}, []float32{0.25, 0.75}),
		"label":  mustNew(t, nil, []string{"cat"}),
		"a":      mustNew(t, []int{0}, []bool{}),
	}
	o := inference.OutputsOf(m)
	fromMap, err := inference.AppendTensors([]byte{0xAA}, m)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := o.AppendBinary([]byte{0xAA})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, fromMap) {
		t.Fatalf("Outputs encode as %x, the map as %x", enc, fromMap)
	}
	got, n, err := inference.DecodeOutputs(enc[1:])
	if err != nil || n != len(enc)-1 || !equalTensors(got.Map(), m) || !slices.Equal(got.Names(), o.Names()) {
		t.Fatalf("DecodeOutputs = %v, %d, %v; want %v, %d", got, n, err, o, len(enc)-1)
	}

	ex := inference.Example{"x": mustNew(t, []int{1}, []float32{3})}
	both, err := inference.AppendExampleOutputs(nil, 0, ex, o)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := inference.AppendTensorMaps(nil, 0, ex, m)
	if !bytes.Equal(both, want) {
		t.Errorf("AppendExampleOutputs = %x, AppendTensorMaps of the maps %x", both, want)
	}

	// Two entries, "b" then "a": a map's encoding never has them so.
	one := func(name string) []byte {
		b, _ := inference.AppendTensors(nil, map[string]inference.Tensor{name: mustNew(t, nil, []int32{1})})
		return b[1:] // without its count
	}
	for _, names := range [][2]string{{"b", "a"}, {"a", "a"}} {
		b := append(append([]byte{2}, one(names[0])...), one(names[1])...)
		_, _, err := inference.DecodeOutputs(b)
		checkErr(t, err, inference.ErrShape, "out of order", names[0])
	}
	_, _, err = inference.DecodeOutputs(append([]byte{3}, one("a")...))
	checkErr(t, err, inference.ErrShape)
}

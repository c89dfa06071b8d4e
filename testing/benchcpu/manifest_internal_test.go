package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

const goodManifest = `{"models": [
 {"name": "mlp", "file": "mlp.onnx", "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, 4], "fill": "sin"}]},
 {"name": "bert", "file": "bert.onnx", "inputs": [
  {"name": "input_ids", "dtype": "int64", "shape": [-1, 8], "fill": "ids", "vocab": 50},
  {"name": "attention_mask", "dtype": "int64", "shape": [-1, 8], "fill": "mask"}]}]}`

func TestReadManifest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(goodManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := readManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Models) != 2 || m.Models[1].Name != "bert" || m.Models[1].Inputs[0].Vocab != 50 ||
		!slices.Equal(m.Models[0].Inputs[0].Shape, []int{-1, 4}) {
		t.Errorf("readManifest = %+v", m)
	}
}

func TestManifestCheckRejects(t *testing.T) {
	input := func(dtype, fill string, vocab int, shape ...int) manifest {
		return manifest{Models: []modelSpec{{Name: "m", File: "m.onnx", Inputs: []inputSpec{{Name: "x", DType: dtype, Fill: fill, Vocab: vocab, Shape: shape}}}}}
	}
	good := input("float32", "sin", 0, -1, 3)
	for _, tc := range []struct {
		name string
		m    manifest
		want string
	}{
		{"empty", manifest{}, "no models"},
		{"unnamed model", manifest{Models: []modelSpec{{File: "m.onnx"}}}, "a model has no name"},
		{"twice", manifest{Models: append(slices.Clone(good.Models), good.Models...)}, `model "m" is listed twice`},
		{"no file", manifest{Models: []modelSpec{{Name: "m"}}}, `model "m" has no file`},
		{"no inputs", manifest{Models: []modelSpec{{Name: "m", File: "m.onnx"}}}, `model "m" has no inputs`},
		{"no batch axis", input("float32", "sin", 0, 2, 3), `input "x": shape [2 3] has 0 batch axes`},
		{"two batch axes", input("float32", "sin", 0, -1, -1), "has 2 batch axes"},
		{"zero dimension", input("float32", "sin", 0, -1, 0), "shape [-1 0] has dimension 0"},
		{"float ids", input("float32", "ids", 5, -1), `dtype "float32" with fill "ids"`},
		{"int sin", input("int64", "sin", 0, -1), `dtype "int64" with fill "sin"`},
		{"unknown fill", input("int64", "zeros", 0, -1), `fill "zeros"`},
		{"no vocab", input("int64", "ids", 0, -1), "vocab 0, want > 0"},
	} {
		err := tc.m.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := good.check(); err != nil {
		t.Errorf("check() = %v on a good manifest", err)
	}
}

func TestInputTensorFills(t *testing.T) {
	sin, err := inputSpec{Name: "x", DType: "float32", Shape: []int{-1, 3}, Fill: "sin"}.tensor(2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sin.Shape(), []int{2, 3}) {
		t.Errorf("sin shape %v, want [2 3]", sin.Shape())
	}
	values, _ := inference.Data[float32](sin)
	for i, v := range values {
		if want := float32(math.Sin(float64(i))*0.5 + 0.5); v != want {
			t.Errorf("sin[%d] = %v, want %v", i, v, want)
		}
	}

	ids, err := inputSpec{Name: "ids", DType: "int64", Shape: []int{-1, 4}, Fill: "ids", Vocab: 100}.tensor(2)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := inference.Data[int64](ids)
	if want := []int64{13, 32, 51, 70, 89, 8, 27, 46}; !slices.Equal(got, want) {
		t.Errorf("ids = %v, want %v ((i·7919 + 13) mod 100)", got, want)
	}

	mask, err := inputSpec{Name: "mask", DType: "int64", Shape: []int{-1, 8}, Fill: "mask"}.tensor(2)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = inference.Data[int64](mask)
	if want := []int64{1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("mask = %v, want %v", got, want)
	}
}

func TestFeedsNameTheModel(t *testing.T) {
	spec := modelSpec{Name: "m", Inputs: []inputSpec{{Name: "x", DType: "float32", Shape: []int{-1}, Fill: "noise"}}}
	if _, err := spec.feeds(1); err == nil || !strings.Contains(err.Error(), `model "m": input "x": unknown fill "noise"`) {
		t.Errorf("feeds = %v, want an error naming the model, the input and the fill", err)
	}
	spec.Inputs[0].Fill = "sin"
	feeds, err := spec.feeds(3)
	if err != nil || !slices.Equal(feeds["x"].Shape(), []int{3}) {
		t.Errorf("feeds = %v, %v, want x of shape [3]", feeds, err)
	}
}

func TestSelected(t *testing.T) {
	m := manifest{Models: []modelSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	got, err := m.selected("c,a")
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" {
		t.Errorf(`selected("c,a") = %v, %v, want a and c in the manifest's order`, got, err)
	}
	if got, err := m.selected(""); err != nil || len(got) != 3 {
		t.Errorf(`selected("") = %v, %v, want all`, got, err)
	}
	if _, err := m.selected("a,z"); err == nil || !strings.Contains(err.Error(), `no model "z"; the manifest has a, b, c`) {
		t.Errorf(`selected("a,z") = %v, want an error naming z and the known models`, err)
	}
}

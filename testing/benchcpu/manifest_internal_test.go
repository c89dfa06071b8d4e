package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
		{"int uniform", input("int64", "uniform", 0, -1), `dtype "int64" with fill "uniform"`},
		{"empty range", input("float32", "uniform", 0, -1), `fill "uniform" over [0, 0], want finite low < high`},
		{"reversed range", withRange(input("float32", "uniform", 0, -1), 3, -3), "over [3, -3]"},
		{"NaN range", withRange(input("float32", "uniform", 0, -1), math.NaN(), 1), "over [NaN, 1]"},
		{"infinite range", withRange(input("float32", "uniform", 0, -1), -math.MaxFloat64, math.MaxFloat64), "want finite"},
		{"negative rows", manifest{Models: []modelSpec{{Name: "m", File: "m.onnx", Rows: -1, Inputs: good.Models[0].Inputs}}},
			`model "m" has -1 rows`},
	} {
		err := tc.m.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if err := good.check(); err != nil {
		t.Errorf("check() = %v on a good manifest", err)
	}
	tabular := withRange(input("float32", "uniform", 0, -1, 50), -3, 3)
	tabular.Models[0].Rows = 10000
	if err := tabular.check(); err != nil {
		t.Errorf("check() = %v on a tabular model", err)
	}
}

// withRange sets the range of m's first input.
func withRange(m manifest, low, high float64) manifest {
	m.Models[0].Inputs[0].Low, m.Models[0].Inputs[0].High = low, high
	return m
}

func TestBatches(t *testing.T) {
	if got := (modelSpec{}).batches([]int{1, 8}); !slices.Equal(got, []int{1, 8}) {
		t.Errorf("a neural model's batches = %v, want --batches", got)
	}
	if got := (modelSpec{Rows: 10000}).batches([]int{1, 8}); !slices.Equal(got, []int{10000}) {
		t.Errorf("a tabular model's batches = %v, want its rows", got)
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

	uniform, err := inputSpec{Name: "x", DType: "float32", Shape: []int{-1, 2}, Fill: "uniform", Low: -3, High: 3}.tensor(2)
	if err != nil {
		t.Fatal(err)
	}
	floats, _ := inference.Data[float32](uniform)
	// MurmurHash3's fmix32 of 0, 1, 2 and 3.
	for i, h := range []uint32{0, 0x514e28b7, 0x30f4c306, 0x85f0b427} {
		if want := float32(-3 + 6*float64(h)/(1<<32)); floats[i] != want {
			t.Errorf("uniform[%d] = %v, want %v", i, floats[i], want)
		}
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

// fillsInNode is run by node with the path of scripts/bench_fill.js, a
// batch size and input specs as JSON; it prints each input's values as a
// JSON array of strings, one input a line.
const fillsInNode = `
const { fillData } = require(process.argv[1]);
const batch = Number(process.argv[2]);
for (const spec of JSON.parse(process.argv[3])) {
  console.log(JSON.stringify(Array.from(fillData(spec, batch).data, String)));
}`

// TestFillsMatchNode checks that scripts/bench_fill.js, which fills ORT's
// inputs, fills every rule's values with the same bits as tensor.
func TestFillsMatchNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("NOT RUN: node is not on PATH")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "bench_fill.js"))
	if err != nil {
		t.Fatal(err)
	}
	specs := []inputSpec{
		{Name: "pixels", DType: "float32", Shape: []int{-1, 3, 5, 5}, Fill: "sin"},
		{Name: "rows", DType: "float32", Shape: []int{-1, 50}, Fill: "uniform", Low: -3, High: 3},
		{Name: "skewed", DType: "float32", Shape: []int{-1, 7}, Fill: "uniform", Low: 0.1, High: 1e6},
		{Name: "input_ids", DType: "int64", Shape: []int{-1, 16}, Fill: "ids", Vocab: 8192},
		{Name: "attention_mask", DType: "int64", Shape: []int{-1, 16}, Fill: "mask"},
	}
	const batch = 40
	js, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, "-e", fillsInNode, script, strconv.Itoa(batch), string(js)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(specs) {
		t.Fatalf("node printed %d lines, want %d", len(lines), len(specs))
	}
	for k, spec := range specs {
		var values []string
		if err := json.Unmarshal([]byte(lines[k]), &values); err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		tensor, err := spec.tensor(batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(values) != tensor.Len() {
			t.Errorf("%s: node filled %d values, tensor %d", spec.Name, len(values), tensor.Len())
			continue
		}
		floats, _ := inference.Data[float32](tensor)
		ints, _ := inference.Data[int64](tensor)
		mismatches := 0
		for i, s := range values {
			var same bool
			var inGo any
			switch spec.DType {
			case "float32":
				f, err := strconv.ParseFloat(s, 64) // exactly the float32 node stored
				same, inGo = err == nil && math.Float32bits(float32(f)) == math.Float32bits(floats[i]), floats[i]
			case "int64":
				n, err := strconv.ParseInt(s, 10, 64)
				same, inGo = err == nil && n == ints[i], ints[i]
			}
			if !same {
				mismatches++
				if mismatches <= 3 {
					t.Errorf("%s: element %d is %s in node, %v in Go", spec.Name, i, s, inGo)
				}
			}
		}
	}
}

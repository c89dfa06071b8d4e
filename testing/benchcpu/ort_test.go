package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseORT(t *testing.T) {
	run, err := parseORT(strings.NewReader(`{"ort_version":"1.30.0"}
{"model":"mlp","batch":8,"threads":2,"ms":0.5,"runs":100,"output":"y","output_shape":[8,10],"output_file":"out/mlp-b8.f32"}
{"model":"gpt","batch":1,"threads":1,"error":"bad model"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if run.version != "1.30.0" || len(run.cells) != 2 {
		t.Fatalf("parseORT = %+v", run)
	}
	c := run.cells[cellKey{"mlp", 8, 2}]
	if c.Ms != 0.5 || c.Output != "y" || c.OutputFile != "out/mlp-b8.f32" || len(c.OutputShape) != 2 {
		t.Errorf("mlp cell = %+v", c)
	}
	if c := run.cells[cellKey{"gpt", 1, 1}]; c.Error != "bad model" || c.Ms != 0 {
		t.Errorf("gpt cell = %+v", c)
	}
}

func TestParseORTRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "printed nothing"},
		{`{"model":"mlp"}`, "line 1"},
		{"{\"ort_version\":\"1\"}\nnot json", "line 2"},
		{"{\"ort_version\":\"1\"}\n{\"model\":\"mlp\",\"batch\":1,\"threads\":1}", "no time and no error"},
		{"{\"ort_version\":\"1\"}\n{\"batch\":1,\"threads\":1,\"ms\":2}", "names no cell"},
	} {
		if _, err := parseORT(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseORT(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestReadFloat32s(t *testing.T) {
	want := []float32{1.5, -2, float32(math.Inf(1))}
	data := make([]byte, 0, 12)
	for _, v := range want {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	path := filepath.Join(t.TempDir(), "out.f32")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readFloat32s(path)
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("readFloat32s = %v, %v, want %v", got, err, want)
	}
	if err := os.WriteFile(path, data[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readFloat32s(path); err == nil || !strings.Contains(err.Error(), "5 bytes") {
		t.Errorf("readFloat32s of 5 bytes = %v, want an error", err)
	}
}

func TestMaxAbsDiff(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		got, want []float32
		d         float64
	}{
		{[]float32{1, 2, 3}, []float32{1, 2.5, 2}, 1},
		{[]float32{nan, inf, -inf}, []float32{nan, inf, -inf}, 0},
		{[]float32{nan, 0}, []float32{1, 0}, math.Inf(1)},
		{[]float32{1}, []float32{nan}, math.Inf(1)},
		{[]float32{inf}, []float32{1}, math.Inf(1)},
		{nil, nil, 0},
	} {
		if d, err := maxAbsDiff(tc.got, tc.want); err != nil || d != tc.d {
			t.Errorf("maxAbsDiff(%v, %v) = %v, %v, want %v", tc.got, tc.want, d, err, tc.d)
		}
	}
	if _, err := maxAbsDiff([]float32{1}, []float32{1, 2}); err == nil {
		t.Error("maxAbsDiff of different lengths: no error")
	}
}

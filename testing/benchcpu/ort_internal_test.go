package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	if v, err := parseVersion([]byte(`{"ort_version":"1.30.0"}`)); err != nil || v != "1.30.0" {
		t.Errorf("parseVersion = %q, %v", v, err)
	}
	for _, bad := range []string{"", `{"model":"mlp"}`, `{"ort_version":""}`, "1.30.0"} {
		if _, err := parseVersion([]byte(bad)); err == nil || !strings.Contains(err.Error(), "want {\"ort_version\"") {
			t.Errorf("parseVersion(%q) = %v, want an error", bad, err)
		}
	}
}

func TestParseCell(t *testing.T) {
	key := cellKey{"mlp", 8, 2}
	c, err := parseCell([]byte(`{"model":"mlp","batch":8,"threads":2,"ms":0.5,"runs":100,"output":"y","output_shape":[8,10],"output_file":"out/mlp-b8.f32"}`), key)
	if err != nil {
		t.Fatal(err)
	}
	if c.Ms != 0.5 || c.Runs != 100 || c.Output != "y" || c.OutputFile != "out/mlp-b8.f32" || len(c.OutputShape) != 2 {
		t.Errorf("parseCell = %+v", c)
	}
	if c, err := parseCell([]byte(`{"model":"mlp","batch":8,"threads":2,"error":"bad model"}`), key); err != nil || c.Error != "bad model" {
		t.Errorf("parseCell of an error = %+v, %v", c, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"not json", "invalid character"},
		{`{"model":"mlp","batch":1,"threads":2,"ms":1}`, "answered for {mlp 1 2}, asked for {mlp 8 2}"},
		{`{"model":"mlp","batch":8,"threads":2}`, "no time and no error"},
	} {
		if _, err := parseCell([]byte(tc.in), key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseCell(%q) = %v, want an error containing %q", tc.in, err, tc.want)
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

package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// writeRaw writes values as ORT's script does: raw little-endian.
func writeRaw[T float32 | int64](t *testing.T, name string, values ...T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := binary.Write(f, binary.LittleEndian, values); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareOutputs(t *testing.T) {
	labels, err := inference.New([]int{4}, []int64{1, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	probabilities, err := inference.New([]int{2, 2}, []float32{0.25, 0.75, 1, float32(math.NaN())})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]inference.Tensor{"label": labels, "probabilities": probabilities}
	ort := []ortOutput{
		{"label", "int64", []int{4}, writeRaw[int64](t, "l.i64", 1, 1, 0, 0)},
		{"probabilities", "float32", []int{2, 2}, writeRaw[float32](t, "p.f32", 0.25, 0.5, 1, float32(math.NaN()))},
	}
	diffs := compareOutputs(out, ort)
	if got, want := formatDiffs(diffs), "label: 2 of 4 differ; probabilities: 2.5e-01"; got != want {
		t.Errorf("formatDiffs = %q, want %q", got, want)
	}
	if got := formatDiffs(diffs[1:]); got != "2.5e-01" {
		t.Errorf("one output: formatDiffs = %q, want max |Δ| alone", got)
	}
	if got := formatDiffs(nil); got != "n/a: no ORT output" {
		t.Errorf("no outputs: formatDiffs = %q", got)
	}

	for _, tc := range []struct {
		o    ortOutput
		want string
	}{
		{ortOutput{"scores", "float32", []int{4}, ort[1].File}, `beamml has no output "scores"`},
		{ortOutput{"label", "int64", []int{2, 2}, ort[0].File}, `output "label" is [4], ORT's is [2 2]`},
		{ortOutput{"label", "string", []int{4}, ""}, `output "label": ORT's string is not compared`},
		{ortOutput{"label", "float32", []int{4}, ort[1].File}, `output "label"`}, // beamml's is int64
		{ortOutput{"label", "int64", []int{4}, writeRaw[int64](t, "short.i64", 1)}, `output "label": 4 values, want 1`},
		{ortOutput{"label", "int64", []int{4}, filepath.Join(t.TempDir(), "missing")}, "no such file"},
	} {
		if got := compareOutput(out, tc.o).String(); !strings.Contains(got, tc.want) {
			t.Errorf("compareOutput(%+v) = %q, want %q in it", tc.o, got, tc.want)
		}
	}
}

func TestReadRaw(t *testing.T) {
	want := []float32{1.5, -2, float32(math.Inf(1))}
	path := writeRaw(t, "out.f32", want...)
	got, err := readRaw[float32](path)
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("readRaw[float32] = %v, %v, want %v", got, err, want)
	}
	ints, err := readRaw[int64](writeRaw[int64](t, "out.i64", -1, 1<<40))
	if err != nil || len(ints) != 2 || ints[0] != -1 || ints[1] != 1<<40 {
		t.Errorf("readRaw[int64] = %v, %v, want [-1 %d]", ints, err, int64(1<<40))
	}
	if err := os.WriteFile(path, make([]byte, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRaw[float32](path); err == nil || !strings.Contains(err.Error(), "5 bytes is not a whole number of float32 values") {
		t.Errorf("readRaw of 5 bytes = %v, want an error", err)
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

func TestCountDiffering(t *testing.T) {
	if n, err := countDiffering([]int64{1, 2, 3}, []int64{1, 0, 0}); err != nil || n != 2 {
		t.Errorf("countDiffering = %v, %v, want 2", n, err)
	}
	if _, err := countDiffering([]int64{1}, nil); err == nil {
		t.Error("countDiffering of different lengths: no error")
	}
}

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/beamml/beamml/inference"
)

// outputDiff is how one of beamml's outputs differs from ORT's output of
// the same name: a float32 output by the largest absolute difference, an
// int64 output (a classifier's labels) by the count of elements that are
// not equal.
type outputDiff struct {
	name    string
	problem string // why the output was not compared; "" when it was
	integer bool
	maxAbs  float64 // float32 outputs
	differ  int     // int64 outputs: elements not equal, of n
	n       int
}

// String is the comparison as the tables print it: max |Δ| as "%.1e",
// "K of N differ", or the problem.
func (d outputDiff) String() string {
	switch {
	case d.problem != "":
		return d.problem
	case d.integer:
		return fmt.Sprintf("%d of %d differ", d.differ, d.n)
	}
	return fmt.Sprintf("%.1e", d.maxAbs)
}

// formatDiffs joins the comparisons of a run's outputs for a table cell:
// one output's comparison alone, several each after its name.
func formatDiffs(diffs []outputDiff) string {
	switch len(diffs) {
	case 0:
		return "n/a: no ORT output"
	case 1:
		return diffs[0].String()
	}
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = d.name + ": " + d.String()
	}
	return strings.Join(parts, "; ")
}

// compareOutputs compares each of ORT's outputs (ortCell.Outputs) with
// beamml's output of the same name in out.
func compareOutputs(out map[string]inference.Tensor, ort []ortOutput) []outputDiff {
	diffs := make([]outputDiff, len(ort))
	for i, o := range ort {
		diffs[i] = compareOutput(out, o)
	}
	return diffs
}

func compareOutput(out map[string]inference.Tensor, o ortOutput) outputDiff {
	d := outputDiff{name: o.Name}
	t, ok := out[o.Name]
	switch {
	case !ok:
		d.problem = fmt.Sprintf("beamml has no output %q", o.Name)
	case !slices.Equal(t.Shape(), o.Shape):
		d.problem = fmt.Sprintf("output %q is %v, ORT's is %v", o.Name, t.Shape(), o.Shape)
	case o.File == "":
		d.problem = fmt.Sprintf("output %q: ORT's %s is not compared", o.Name, o.Type)
	case o.Type == "float32":
		d.maxAbs, d.problem = compareData(t, o, maxAbsDiff)
	case o.Type == "int64":
		d.integer = true
		d.n = t.Len()
		var differ float64
		differ, d.problem = compareData(t, o, countDiffering)
		d.differ = int(differ)
	default:
		d.problem = fmt.Sprintf("output %q: ORT's %s is not compared", o.Name, o.Type)
	}
	return d
}

// compareData reads ORT's values of o and returns diff of beamml's t and
// them, or why it cannot.
func compareData[T float32 | int64](t inference.Tensor, o ortOutput, diff func(got, want []T) (float64, error)) (float64, string) {
	got, err := inference.Data[T](t)
	if err != nil {
		return 0, fmt.Sprintf("output %q: %v", o.Name, err)
	}
	want, err := readRaw[T](o.File)
	if err != nil {
		return 0, err.Error()
	}
	d, err := diff(got, want)
	if err != nil {
		return 0, fmt.Sprintf("output %q: %v", o.Name, err)
	}
	return d, ""
}

// readRaw reads a file of raw little-endian values.
func readRaw[T float32 | int64](path string) ([]T, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	var zero T
	size := binary.Size(zero)
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of %T values", path, len(data), zero)
	}
	out := make([]T, len(data)/size)
	if err := binary.Read(bytes.NewReader(data), binary.LittleEndian, out); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return out, nil
}

// maxAbsDiff returns max |got[i] − want[i]|, where a pair of NaNs, or of
// equal infinities, differs by 0, and a NaN against a number differs by
// +Inf. Slices of different lengths are an error.
func maxAbsDiff(got, want []float32) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	d := 0.0
	for i, g := range got {
		a, b := float64(g), float64(want[i])
		switch {
		case a == b || (math.IsNaN(a) && math.IsNaN(b)):
		case math.IsNaN(a) || math.IsNaN(b):
			d = math.Inf(1)
		default:
			d = max(d, math.Abs(a-b))
		}
	}
	return d, nil
}

// countDiffering returns how many got[i] ≠ want[i]. Slices of different
// lengths are an error.
func countDiffering(got, want []int64) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	n := 0
	for i, g := range got {
		if g != want[i] {
			n++
		}
	}
	return float64(n), nil
}

package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

// TestTakeRuns checks takeTables on tables of runs (the copy per run)
// against take over tableOffsets (an offset per element), for int64 and
// float32 data and ranks 1 to 4, empty axes before the last included.
func TestTakeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		rank := 1 + r.IntN(4)
		src := make([]int64, 4096)
		for i := range src {
			src[i] = int64(i)*3 + 1
		}
		tabs := make([][]int, rank)
		for j := range rank - 1 {
			tabs[j] = make([]int, r.IntN(4)) // may be empty
			for i := range tabs[j] {
				tabs[j][i] = r.IntN(1000)
			}
		}
		width, first := 1+r.IntN(20), r.IntN(100)
		for i := range width {
			tabs[rank-1] = append(tabs[rank-1], first+i)
		}
		if !tableRuns(tabs) {
			t.Fatalf("trial %d: tables %v not taken as runs", trial, tabs)
		}
		name := fmt.Sprintf("trial %d, tables %v", trial, tabs)
		for _, x := range []inference.Tensor{tensorOf(t, []int{len(src)}, src...), tensorOf(t, []int{len(src)}, toFloats(src)...)} {
			got, err := takeTables(nil, x, tabs, inference.Tensor{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			offs, err := tableOffsets(nil, tabs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := take(nil, x, tableShape(tabs), offs, inference.Tensor{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Shape(), want.Shape()) || got.String() != want.String() || fmt.Sprint(anyData(got)) != fmt.Sprint(anyData(want)) {
				t.Fatalf("%s, %v: got %v %v, want %v %v", name, x.DType(), got, anyData(got), want, anyData(want))
			}
		}
	}
	// Offsets that are not runs, or ask for the fill, take the table path.
	for _, tabs := range [][][]int{{{0, 2}}, {{0, -1}}, {{-1, 3}, {0, 1}}, {{1, 0}}} {
		if tableRuns(tabs) {
			t.Errorf("tables %v taken as runs", tabs)
		}
	}
}

func toFloats(x []int64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func anyData(x inference.Tensor) any {
	if d, err := inference.Data[int64](x); err == nil {
		return d
	}
	d, _ := inference.Data[float32](x)
	return d
}

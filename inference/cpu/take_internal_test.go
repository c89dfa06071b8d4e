package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
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

// TestTableTakeParallel checks a tableTake of runs large enough to split
// among goroutines (parts of whole runs, each with an odometer of its
// own), on 2 and 3 cores, against take over tableOffsets, for float32 and
// int64, and that it split.
func TestTableTakeParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(9, 10))
	src := make([]int64, 1<<16)
	for i := range src {
		src[i] = int64(i)*3 + 1
	}
	for _, procs := range []int{2, 3} {
		runtime.GOMAXPROCS(procs)
		for _, outer := range [][]int{{7, 29}, {1, 3, 97}, {203}} {
			tabs := make([][]int, len(outer)+1)
			for j, n := range outer {
				for range n {
					tabs[j] = append(tabs[j], r.IntN(1<<14))
				}
			}
			width := 1 + r.IntN(300) + (1<<18)/opsem.Count(outer)
			for i := range width {
				tabs[len(outer)] = append(tabs[len(outer)], 100+i)
			}
			shape := tableShape(tabs)
			offs, err := tableOffsets(nil, tabs)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []inference.Tensor{tensorOf(t, []int{len(src)}, src...), tensorOf(t, []int{len(src)}, toFloats(src)...)} {
				name := fmt.Sprintf("%d cores, %v, runs of %d over %v", procs, x.DType(), width, outer)
				tt := newTableTake(tabs, shape)
				got, err := tt.output(opsem.Node{}, x, shape)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if tt.split == nil {
					t.Errorf("%s: not split", name)
				}
				want, err := take(nil, x, shape, offs, inference.Tensor{})
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(anyData(got[0])) != fmt.Sprint(anyData(want)) {
					t.Fatalf("%s: the take differs from the offsets'", name)
				}
			}
		}
	}
}

package main

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func timed(model string, batch, threads int, beamml, ort float64) cell {
	return cell{cellKey: cellKey{model, batch, threads}, beamml: measurement{ms: beamml}, ort: ortCell{Ms: ort}}
}

func TestSummarize(t *testing.T) {
	failed := timed("c", 1, 1, 0, 1)
	failed.err = errors.New("run: bad")
	cells := []cell{
		timed("a", 1, 1, 2, 1), timed("b", 1, 1, 8, 1), failed, // ratios 2, 8
		timed("a", 8, 1, 3, 1),                         // ratio 3
		timed("a", 1, 2, 1, 2), timed("b", 1, 2, 4, 0), // ratio 0.5; ORT failed
	}
	got := summarize(cells, []int{1, 2}, []int{1, 8})
	want := []summary{
		{threads: 1, batch: 1, ratios: 2, missing: 1, geomean: 4, max: 8, slowest: cellKey{"b", 1, 1}},
		{threads: 1, batch: 8, ratios: 1, geomean: 3, max: 3, slowest: cellKey{"a", 8, 1}},
		{threads: 1, ratios: 3, missing: 1, geomean: math.Cbrt(48), max: 8, slowest: cellKey{"b", 1, 1}},
		{threads: 2, batch: 1, ratios: 1, missing: 1, geomean: 0.5, max: 0.5, slowest: cellKey{"a", 1, 2}},
		{threads: 2, batch: 8},
		{threads: 2, ratios: 1, missing: 1, geomean: 0.5, max: 0.5, slowest: cellKey{"a", 1, 2}},
		{ratios: 4, missing: 2, geomean: math.Pow(24, 0.25), max: 8, slowest: cellKey{"b", 1, 1}},
	}
	if len(got) != len(want) {
		t.Fatalf("summarize = %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if math.Abs(g.geomean-w.geomean) > 1e-12 {
			t.Errorf("row %d: geomean %v, want %v", i, g.geomean, w.geomean)
		}
		g.geomean, w.geomean = 0, 0
		if g != w {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestSummarizeLeavesOutRepeats(t *testing.T) {
	cells := []cell{timed("a", 1, 1, 2, 1), timed("a", 8, 1, 3, 1)}
	if got := summarize(cells, []int{1}, []int{8}); len(got) != 1 || got[0].batch != 8 || got[0].threads != 1 {
		t.Errorf("one thread count and batch size: summaries %+v, want only theirs", got)
	}
	got := summarize(cells, []int{1}, []int{1, 8})
	if len(got) != 3 || got[2].batch != 0 || got[2].threads != 1 || got[2].ratios != 2 {
		t.Errorf("one thread count, two batch sizes: summaries %+v, want each batch size and both", got)
	}
}

func TestWriteTable(t *testing.T) {
	ok := timed("mlp", 8, 2, 2, 0.5)
	ok.flops, ok.beamml.allocs, ok.beamml.bytes, ok.diff, ok.outputs = 4e6, 6.4, 2048, "1.0e-06", 2
	broken := timed("gpt", 1, 1, 0, 3)
	broken.err = errors.New("run: node \"x\" | bad\nshape")
	noORT := timed("lstm", 1, 1, 1.25, 0)
	noORT.ort.Error = "no result"
	var b strings.Builder
	writeTable(&b, []cell{ok, broken, noORT})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"| mlp | 8 | 2 | 2.00 | 0.500 | 4.00 | 2.0 | 6 | 0 | 2 | 1.0e-06 |",
		`| gpt | 1 | 1 | error: run: node "x" \| bad shape | 3.00 | | | | | | |`,
		"| lstm | 1 | 1 | 1.25 | error: no result | n/a | n/a | 0 | -2 | 0 |  |",
	}
	if len(lines) != 5 || !slices.Equal(lines[2:], want) {
		t.Errorf("writeTable wrote\n%s\nwant rows\n%s", b.String(), strings.Join(want, "\n"))
	}
}

func TestWriteTabularTable(t *testing.T) {
	ok := timed("xgb300", 10000, 2, 25, 100)
	ok.tabular, ok.beamml.allocs, ok.beamml.bytes, ok.outputs = true, 6, 160*1024, 2
	ok.diff = "label: 0 of 10000 differ; probabilities: 4.5e-07"
	broken := timed("rf500_d10", 10000, 1, 0, 640)
	broken.tabular, broken.err = true, errors.New("load: bad")
	var b strings.Builder
	writeTabularTable(&b, []cell{ok, broken})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"| model | rows | threads | beamml ms | ORT ms | ratio | ns/row | allocs/Run | beyond outputs | KiB/Run | outputs vs ORT |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
		"| xgb300 | 10000 | 2 | 25.0 | 100 | 0.25 | 2500 | 6 | 0 | 160 | label: 0 of 10000 differ; probabilities: 4.5e-07 |",
		"| rf500_d10 | 10000 | 1 | error: load: bad | 640 | | | | | | |",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("writeTabularTable wrote\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
}

func TestFormatMs(t *testing.T) {
	for ms, want := range map[float64]string{1234.4: "1234", 56.78: "56.8", 3.14159: "3.14", 0.04156: "0.042"} {
		if got := formatMs(ms); got != want {
			t.Errorf("formatMs(%v) = %q, want %q", ms, got, want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n"
	if got := cpuModel(strings.NewReader(info)); got != "AMD EPYC 7B13" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel(strings.NewReader("processor: 0\n")); got != "" {
		t.Errorf("cpuModel without a model name = %q, want empty", got)
	}
}

func TestPositiveInts(t *testing.T) {
	if got, err := positiveInts("1, 8,32"); err != nil || !slices.Equal(got, []int{1, 8, 32}) {
		t.Errorf(`positiveInts("1, 8,32") = %v, %v`, got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-2", "1,1"} {
		if _, err := positiveInts(bad); err == nil {
			t.Errorf("positiveInts(%q): no error", bad)
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// The demo, ticking every 40 ms for 1.2 s with 3 records a tick in 300 ms
// windows, writes one file for each window that had ticks, and nothing
// else; every record is in exactly one file, the file of the window its
// tick's time lies in, stamped with that time, as the digit the rule of
// tickRecords gives, predicted as the model predicts that digit when run
// directly.
func TestStreamingWritesEachWindow(t *testing.T) {
	c := Config{
		Model: "../classify/digits.onnx", Digits: "../classify/testdata/digits.csv", Output: t.TempDir(),
		Start:    time.Now().Truncate(time.Millisecond),
		Duration: 1200 * time.Millisecond, Interval: 40 * time.Millisecond, PerTick: 3, Window: 300 * time.Millisecond,
		MaxBatchSize: 8, MaxBatchDuration: 100 * time.Millisecond, BatchShards: 2,
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, c)
	// Prism even under -runner=direct: the direct runner has no state or
	// timers, which MaxBatchDuration needs.
	pr, err := beam.Run(context.Background(), "prism", p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	t.Log(runinference.MetricsSummary(pr))
	entries, err := os.ReadDir(c.Output)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{} // name → lines, header dropped
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(c.Output, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		header, body, _ := strings.Cut(string(data), "\n")
		if header != "time,tick,record,digit,predicted,probability" {
			t.Errorf("%s: header %q", e.Name(), header)
		}
		files[e.Name()] = strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	}
	want := expect(t, c)
	for _, err := range want.check(files) {
		t.Error(err)
	}

	// The check fails on output that lost a window, scored a record twice
	// or in the wrong window, or mispredicted one.
	if t.Failed() {
		return
	}
	names := slices.Sorted(maps.Keys(files))
	first, second := names[0], names[1]
	for _, tc := range []struct {
		name   string
		change func(files map[string][]string)
		want   string
	}{
		{"LostWindow", func(f map[string][]string) { delete(f, second) }, "no file for window"},
		{"Duplicate", func(f map[string][]string) { f[second] = append(f[second], f[second][0]) }, "twice"},
		{"WrongWindow", func(f map[string][]string) {
			f[second] = append(f[second], f[first][0])
			f[first] = f[first][1:]
		}, "outside its window"},
		{"Misprediction", func(f map[string][]string) {
			r := strings.Split(f[first][0], ",")
			p, _ := strconv.Atoi(r[4])
			r[4] = strconv.Itoa((p + 1) % 10)
			f[first] = append([]string{strings.Join(r, ",")}, f[first][1:]...)
		}, "the model predicts"},
		{"Sorted", func(f map[string][]string) { slices.Reverse(f[first]) }, "not in time order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := map[string][]string{}
			for name, lines := range files {
				bad[name] = slices.Clone(lines)
			}
			tc.change(bad)
			errs := want.check(bad)
			if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), tc.want) }) {
				t.Errorf("check found %v, want an error with %q", errs, tc.want)
			}
		})
	}
}

// expected is what the demo under c must write.
type expected struct {
	c         Config
	ticks     int
	ids       []string       // the digits' ids, in the CSV's order
	predicted map[string]int // digit id → the model's prediction
}

// expect reads the digits and predicts each with the model, run directly
// through the inference API in one batch.
func expect(t *testing.T, c Config) expected {
	t.Helper()
	data, err := os.ReadFile(c.Digits)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var exs []inference.Example
	for _, line := range strings.Split(string(data), "\n") {
		id, ex, _, err := digits.Parse(line)
		if errors.Is(err, digits.ErrSkip) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ids, exs = append(ids, id), append(exs, ex)
	}
	h, err := inference.Acquire(context.Background(), onnx.Model(c.Model).WithDevice(inference.CPU))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	batch, err := inference.StackExamples(exs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Model().Run(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	classes, err := inference.ArgMax(out["logits"])
	if err != nil || len(classes) != len(ids) {
		t.Fatalf("ArgMax of the logits: %d classes, %v; want %d", len(classes), err, len(ids))
	}
	predicted := map[string]int{}
	for i, id := range ids {
		predicted[id] = classes[i]
	}
	return expected{c: c, ticks: int(c.Duration / c.Interval), ids: ids, predicted: predicted}
}

// window is the file name of the window that holds time ts.
func (e expected) window(ts time.Time) string {
	size := e.c.Window.Milliseconds()
	start := ts.UnixMilli() / size * size
	return fmt.Sprintf("window-%s-%s.txt", time.UnixMilli(start).UTC().Format(windowLayout),
		time.UnixMilli(start+size).UTC().Format(windowLayout))
}

// check returns what is wrong with files, the window files' lines by name.
func (e expected) check(files map[string][]string) []error {
	var errs []error
	wantFiles := map[string]bool{}
	for tick := range e.ticks {
		wantFiles[e.window(e.c.Start.Add(time.Duration(tick)*e.c.Interval))] = true
	}
	for name := range wantFiles {
		if _, ok := files[name]; !ok {
			errs = append(errs, fmt.Errorf("no file for window %s", name))
		}
	}
	seen := map[string]string{} // "tick,record" → its file
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !wantFiles[name] {
			errs = append(errs, fmt.Errorf("file %s: not a window with ticks", name))
		}
		if !slices.IsSorted(files[name]) {
			errs = append(errs, fmt.Errorf("file %s: lines not in time order", name))
		}
		for _, line := range files[name] {
			if err := e.checkLine(name, line, seen); err != nil {
				errs = append(errs, fmt.Errorf("file %s: line %q: %w", name, line, err))
			}
		}
	}
	if want := e.ticks * e.c.PerTick; len(seen) != want {
		errs = append(errs, fmt.Errorf("%d records in all, want %d (%d ticks of %d)", len(seen), want, e.ticks, e.c.PerTick))
	}
	return errs
}

// checkLine checks one line "time,tick,record,digit,predicted,probability"
// of the file name, and records it in seen.
func (e expected) checkLine(name, line string, seen map[string]string) error {
	f := strings.Split(line, ",")
	if len(f) != 6 {
		return fmt.Errorf("%d fields, want 6", len(f))
	}
	ts, err := time.Parse(timeLayout, f[0])
	if err != nil {
		return err
	}
	tick, err1 := strconv.Atoi(f[1])
	n, err2 := strconv.Atoi(f[2])
	predicted, err3 := strconv.Atoi(f[4])
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	if tick < 0 || tick >= e.ticks || n < 0 || n >= e.c.PerTick {
		return fmt.Errorf("no tick %d record %d: want ticks below %d, records below %d", tick, n, e.ticks, e.c.PerTick)
	}
	id := f[1] + "," + f[2]
	if other, ok := seen[id]; ok {
		return fmt.Errorf("tick %d record %d written twice, also in %s", tick, n, other)
	}
	seen[id] = name
	if want := e.c.Start.Add(time.Duration(tick) * e.c.Interval); !ts.Equal(want) {
		return fmt.Errorf("time %v, want tick %d's %v", ts, tick, want.UTC())
	}
	if e.window(ts) != name {
		return fmt.Errorf("time %v outside its window (in %s)", ts, e.window(ts))
	}
	digit := e.ids[(tick*e.c.PerTick+n)%len(e.ids)]
	if f[3] != digit {
		return fmt.Errorf("digit %s, want %s", f[3], digit)
	}
	if predicted != e.predicted[digit] {
		return fmt.Errorf("predicted %d, the model predicts %d for digit %s", predicted, e.predicted[digit], digit)
	}
	return nil
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// cell is one row of a table: one model at one batch size (a tabular
// model's rows per run) and thread count.
type cell struct {
	cellKey
	tabular bool // in the tabular table: batch is rows per run
	beamml  measurement
	outputs int     // the model's outputs, which each Run allocates anew
	err     error   // why beamml has no time (load or run failed)
	ort     ortCell // ORT's time; Ms is 0 when ORT failed (Error says why)
	flops   int64   // of one beamml Run; 0 when not counted
	diff    string  // max |Δ| of beamml's output against ORT's, or why it is missing
}

// ratio is beamml's time over ORT's, when both ran.
func (c cell) ratio() (float64, bool) {
	if c.err != nil || c.beamml.ms <= 0 || c.ort.Ms <= 0 {
		return 0, false
	}
	return c.beamml.ms / c.ort.Ms, true
}

const tableHeader = "| model | batch | threads | beamml ms | ORT ms | ratio | GFLOP/s | allocs/Run | beyond outputs | KiB/Run | max \\|Δ\\| |\n" +
	"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"

// Run's own allocations for what it returns (inference/cpu's executor):
// the result map, and per output tensor its buffer and the pool's record
// of it (the tensor shares the shape of the last run's). The "beyond
// outputs" column is allocs/Run less these: 0 when a Run allocates nothing
// else.
const (
	resultAllocs = 2
	outputAllocs = 2
)

// beyondOutputs is c's allocations per Run less what its outputs account
// for.
func (c cell) beyondOutputs() float64 {
	return c.beamml.allocs - float64(resultAllocs+outputAllocs*c.outputs)
}

// writeTable writes the cells as a markdown table, in the order given.
func writeTable(w io.Writer, cells []cell) {
	fmt.Fprint(w, tableHeader)
	for _, c := range cells {
		if c.err != nil {
			fmt.Fprintf(w, "| %s | %d | %d | error: %s | %s | | | | | | |\n", c.model, c.batch, c.threads, markdown(c.err.Error()), c.ortMs())
			continue
		}
		gflops := "n/a"
		if c.flops > 0 {
			gflops = fmt.Sprintf("%.1f", float64(c.flops)/c.beamml.ms/1e6)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %.0f | %.0f | %.0f | %s |\n", c.model, c.batch, c.threads,
			formatMs(c.beamml.ms), c.ortMs(), c.ratioText(), gflops, c.beamml.allocs, c.beyondOutputs(), c.beamml.bytes/1024, markdown(c.diff))
	}
}

const tabularHeader = "| model | rows | threads | beamml ms | ORT ms | ratio | ns/row | allocs/Run | beyond outputs | KiB/Run | outputs vs ORT |\n" +
	"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"

// writeTabularTable writes the tabular models' cells, whose batch is rows
// per run, as a markdown table, in the order given.
func writeTabularTable(w io.Writer, cells []cell) {
	fmt.Fprint(w, tabularHeader)
	for _, c := range cells {
		if c.err != nil {
			fmt.Fprintf(w, "| %s | %d | %d | error: %s | %s | | | | | | |\n", c.model, c.batch, c.threads, markdown(c.err.Error()), c.ortMs())
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %s |\n", c.model, c.batch, c.threads,
			formatMs(c.beamml.ms), c.ortMs(), c.ratioText(), c.beamml.ms*1e6/float64(c.batch), c.beamml.allocs,
			c.beyondOutputs(), c.beamml.bytes/1024, markdown(c.diff))
	}
}

// ortMs is ORT's time for a table cell, or its error.
func (c cell) ortMs() string {
	if c.ort.Ms > 0 {
		return formatMs(c.ort.Ms)
	}
	return "error: " + markdown(c.ort.Error)
}

// ratioText is the ratio for a table cell, or n/a.
func (c cell) ratioText() string {
	if r, ok := c.ratio(); ok {
		return fmt.Sprintf("%.2f", r)
	}
	return "n/a"
}

// formatMs prints a time in milliseconds to 3 or 4 significant digits.
func formatMs(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f", ms)
	}
	return fmt.Sprintf("%.3f", ms)
}

// markdown makes s fit in one table cell.
func markdown(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// summary is the geometric mean and the maximum of the ratios of the cells
// at one thread count and batch size (0: all of them).
type summary struct {
	threads, batch int
	ratios         int // cells with a ratio
	missing        int // cells without one: beamml or ORT failed
	geomean, max   float64
	slowest        cellKey // the cell of the maximum
}

// summarize returns, for every thread count t in threads, a summary per
// batch size in batches and, when there are several, one over all of them;
// then, when there are several thread counts, one over all cells.
func summarize(cells []cell, threads, batches []int) []summary {
	var out []summary
	for _, t := range threads {
		for _, b := range batches {
			out = append(out, summarizeWhere(cells, t, b))
		}
		if len(batches) > 1 {
			out = append(out, summarizeWhere(cells, t, 0))
		}
	}
	if len(threads) > 1 {
		out = append(out, summarizeWhere(cells, 0, 0))
	}
	return out
}

// summarizeWhere summarizes the cells at thread count t and batch size b,
// where 0 matches any.
func summarizeWhere(cells []cell, t, b int) summary {
	s := summary{threads: t, batch: b}
	logSum := 0.0
	for _, c := range cells {
		if (t != 0 && c.threads != t) || (b != 0 && c.batch != b) {
			continue
		}
		r, ok := c.ratio()
		if !ok {
			s.missing++
			continue
		}
		s.ratios++
		logSum += math.Log(r)
		if r > s.max {
			s.max, s.slowest = r, c.cellKey
		}
	}
	if s.ratios > 0 {
		s.geomean = math.Exp(logSum / float64(s.ratios))
	}
	return s
}

// writeSummary writes the summaries as a markdown table.
func writeSummary(w io.Writer, sums []summary) {
	fmt.Fprint(w, "| threads | batch | ratios | geomean ratio | max ratio | slowest (model, batch, threads) | missing |\n")
	fmt.Fprint(w, "| ---: | ---: | ---: | ---: | ---: | --- | ---: |\n")
	all := func(v int) string {
		if v == 0 {
			return "all"
		}
		return fmt.Sprint(v)
	}
	for _, s := range sums {
		if s.ratios == 0 {
			fmt.Fprintf(w, "| %s | %s | 0 | n/a | n/a | | %d |\n", all(s.threads), all(s.batch), s.missing)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.2f | %.2f | %s, %d, %d | %d |\n", all(s.threads), all(s.batch), s.ratios,
			s.geomean, s.max, s.slowest.model, s.slowest.batch, s.slowest.threads, s.missing)
	}
}

// cpuModel returns the first "model name" of /proc/cpuinfo's text, or ""
// when it has none.
func cpuModel(cpuinfo io.Reader) string {
	sc := bufio.NewScanner(cpuinfo)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

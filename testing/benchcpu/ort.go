package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cellKey names one cell of the table.
type cellKey struct {
	model          string
	batch, threads int
}

// ortCell is one line of scripts/ort_bench.js: the median time of a
// (model, batch, threads) cell, and where the first output is, or what
// failed.
type ortCell struct {
	Model       string  `json:"model"`
	Batch       int     `json:"batch"`
	Threads     int     `json:"threads"`
	Ms          float64 `json:"ms"`
	Runs        int     `json:"runs"`
	Output      string  `json:"output"`
	OutputShape []int   `json:"output_shape"`
	OutputFile  string  `json:"output_file"`
	Error       string  `json:"error"`
}

// ortRun is what scripts/ort_bench.js reported.
type ortRun struct {
	version string
	cells   map[cellKey]ortCell
}

// runORT runs scripts/ort_bench.js (script) with node on the models of the
// manifest at manifestPath, with onnxruntime-node from nodeModules; ORT's
// outputs go to outputs.
func runORT(script, nodeModules, manifestPath, outputs string, models []string, threads, batches []int, budget time.Duration) (ortRun, error) {
	cmd := exec.Command("node", script, manifestPath, joinInts(threads), joinInts(batches),
		strings.Join(models, ","), strconv.FormatInt(budget.Milliseconds(), 10), outputs)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return ortRun{}, fmt.Errorf("node %s: %v", script, err)
	}
	return parseORT(bytes.NewReader(out))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// parseORT reads scripts/ort_bench.js's JSON lines: {"ort_version"} first,
// then one ortCell a line.
func parseORT(r io.Reader) (ortRun, error) {
	run := ortRun{cells: map[cellKey]ortCell{}}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			var v struct {
				Version string `json:"ort_version"`
			}
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil || v.Version == "" {
				return run, fmt.Errorf("ort_bench.js line 1: %q, want {\"ort_version\": …}", sc.Text())
			}
			run.version = v.Version
			continue
		}
		var c ortCell
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return run, fmt.Errorf("ort_bench.js line %d: %v", line, err)
		}
		if c.Model == "" || c.Batch <= 0 || c.Threads <= 0 || (c.Error == "" && c.Ms <= 0) {
			return run, fmt.Errorf("ort_bench.js line %d: %q names no cell, or no time and no error", line, sc.Text())
		}
		run.cells[cellKey{c.Model, c.Batch, c.Threads}] = c
	}
	if err := sc.Err(); err != nil {
		return run, err
	}
	if run.version == "" {
		return run, fmt.Errorf("ort_bench.js printed nothing")
	}
	return run, nil
}

// readFloat32s reads a file of raw little-endian float32 values.
func readFloat32s(path string) ([]float32, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	if len(data)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of float32 values", path, len(data))
	}
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
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

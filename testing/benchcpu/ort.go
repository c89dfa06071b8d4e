package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// cellKey names one cell of the table.
type cellKey struct {
	model          string
	batch, threads int
}

// ortCell is scripts/ort_bench.js's answer for one cell: the median time
// and the outputs of its warm-up run, or what failed.
type ortCell struct {
	Model   string      `json:"model"`
	Batch   int         `json:"batch"`
	Threads int         `json:"threads"`
	Ms      float64     `json:"ms"`
	Runs    int         `json:"runs"`
	Outputs []ortOutput `json:"outputs"`
	Error   string      `json:"error"`
}

// ortOutput is one output of ORT's warm-up run, in the session's order.
// File holds its values, raw little-endian, for Type float32 or int64;
// it is empty for other types.
type ortOutput struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

// ortServer is scripts/ort_bench.js running under node, timing one cell
// per request.
type ortServer struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	version string // of onnxruntime-node
}

// startORT starts script with node on the models of the manifest at
// manifestPath, with onnxruntime-node from nodeModules; ORT's outputs go to
// the folder outputs.
func startORT(script, nodeModules, manifestPath, outputs string, budget time.Duration) (*ortServer, error) {
	cmd := exec.Command("node", script, manifestPath, strconv.FormatInt(budget.Milliseconds(), 10), outputs)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node %s: %v", script, err)
	}
	s := &ortServer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if !s.out.Scan() {
		s.close()
		return nil, fmt.Errorf("node %s: exited before printing its version", script)
	}
	if s.version, err = parseVersion(s.out.Bytes()); err != nil {
		s.close()
		return nil, fmt.Errorf("node %s: %v", script, err)
	}
	return s, nil
}

// time asks ORT for the cell key. An error means that the server is gone;
// a model that fails is an ortCell with Error set.
func (s *ortServer) time(key cellKey) (ortCell, error) {
	req, err := json.Marshal(map[string]any{"model": key.model, "batch": key.batch, "threads": key.threads})
	if err != nil {
		return ortCell{}, err
	}
	if _, err := s.in.Write(append(req, '\n')); err != nil {
		return ortCell{}, fmt.Errorf("ort_bench.js: %v", err)
	}
	if !s.out.Scan() {
		return ortCell{}, fmt.Errorf("ort_bench.js exited (%v)", s.out.Err())
	}
	return parseCell(s.out.Bytes(), key)
}

// close ends the server and waits for it.
func (s *ortServer) close() error {
	s.in.Close()
	return s.cmd.Wait()
}

// parseVersion reads ort_bench.js's first line, {"ort_version": …}.
func parseVersion(line []byte) (string, error) {
	var v struct {
		Version string `json:"ort_version"`
	}
	if err := json.Unmarshal(line, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("first line %q, want {\"ort_version\": …}", line)
	}
	return v.Version, nil
}

// parseCell reads ort_bench.js's answer for the cell key: it must name that
// cell, and have a time or an error.
func parseCell(line []byte, key cellKey) (ortCell, error) {
	var c ortCell
	if err := json.Unmarshal(line, &c); err != nil {
		return c, fmt.Errorf("ort_bench.js: %q: %v", line, err)
	}
	if got := (cellKey{c.Model, c.Batch, c.Threads}); got != key {
		return c, fmt.Errorf("ort_bench.js answered for %v, asked for %v", got, key)
	}
	if c.Error == "" && c.Ms <= 0 {
		return c, fmt.Errorf("ort_bench.js: %q has no time and no error", line)
	}
	return c, nil
}

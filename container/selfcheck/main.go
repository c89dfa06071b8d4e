// Command selfcheck checks the GPU build inside the CUDA container: it
// lists the GPUs the NVIDIA driver sees (inference/gpuinfo), runs every
// operator case of internal/check on the CUDA backend and on the CPU
// backend and compares them, and with --model runs an ONNX model on random
// inputs on both backends and compares the outputs.
//
//	CGO_ENABLED=1 go build -tags cuda -o selfcheck ./container/selfcheck
//	./selfcheck [--run REGEXP] [--model model.onnx [--batch N] [--seed N]]
//
// It prints one line per check ("PASS  op NAME", "FAIL  op NAME: why") and
// a summary, and exits 0 when every check matches, 1 on a mismatch or a
// failed check, and 2 when no GPU answers, with the reason: a binary built
// without the cuda tag (it has no GPU code), no NVIDIA driver, no device. A
// binary built with the cuda tag on a machine whose driver does not answer
// cuInit exits 2 before main runs (see inference/cuda/cu).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/gpuinfo"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
)

// Exit statuses.
const (
	exitOK       = 0
	exitMismatch = 1
	exitNoGPU    = 2
)

// Tolerances for the --model comparison: the conformance runner's.
const (
	modelRTol = 1e-3
	modelATol = 1e-4
)

// openGPU returns the CUDA backend and its device's name; set by cuda.go
// in binaries built with the cuda tag.
var openGPU func() (graph.Compiler, string, error)

func main() { os.Exit(run(os.Stdout, os.Args[1:])) }

func run(w io.Writer, args []string) int {
	fs := flag.NewFlagSet("selfcheck", flag.ContinueOnError)
	fs.SetOutput(w)
	model := fs.String("model", "", "also run this ONNX model on random inputs on both backends")
	batch := fs.Int("batch", 1, "the size --model gives every dynamic input dimension")
	seed := fs.Uint64("seed", 1, "seed of --model's random inputs")
	filter := fs.String("run", "", "only the operator cases whose name matches this regular expression")
	if err := fs.Parse(args); err != nil {
		return exitNoGPU
	}
	var re *regexp.Regexp
	if *filter != "" {
		var err error
		if re, err = regexp.Compile(*filter); err != nil {
			fmt.Fprintf(w, "selfcheck: --run: %v\n", err)
			return exitNoGPU
		}
	}

	printDevices(w)
	if openGPU == nil {
		fmt.Fprintln(w, "selfcheck: NO GPU CODE: this binary was built without the cuda build tag, so it has no CUDA backend and checks nothing.")
		fmt.Fprintln(w, "selfcheck: build it with: CGO_ENABLED=1 go build -tags cuda ./container/selfcheck")
		return exitNoGPU
	}
	backend, name, err := openGPU()
	if err != nil {
		fmt.Fprintf(w, "selfcheck: NO GPU: the CUDA backend did not start: %v\n", err)
		return exitNoGPU
	}
	fmt.Fprintf(w, "selfcheck: CUDA backend on %s\n", name)

	ctx := context.Background()
	passed, failed := 0, 0
	tally := func(what string, err error) {
		if err != nil {
			failed++
			fmt.Fprintf(w, "FAIL  %s: %v\n", what, err)
			return
		}
		passed++
		fmt.Fprintf(w, "PASS  %s\n", what)
	}
	for _, c := range check.Cases() {
		if re != nil && !re.MatchString(c.Name) {
			continue
		}
		tally("op "+c.Name, check.Run(ctx, backend, c))
	}
	if *model != "" {
		note, err := compareModel(ctx, *model, backend, *batch, *seed)
		if note != "" {
			fmt.Fprintf(w, "selfcheck: model %s: %s\n", *model, note)
		}
		tally("model "+*model, err)
	}
	fmt.Fprintf(w, "selfcheck: %d checks on %s: %d passed, %d failed\n", passed+failed, name, passed, failed)
	if failed > 0 {
		return exitMismatch
	}
	return exitOK
}

// printDevices lists what NVML sees, or why it sees nothing.
func printDevices(w io.Writer) {
	devs, err := gpuinfo.Devices()
	if err != nil {
		fmt.Fprintf(w, "%v\n", err)
	}
	for _, d := range devs {
		fmt.Fprintf(w, "gpuinfo: %v\n", d)
	}
	if dir, ok := gpuinfo.MPSControl(); ok {
		fmt.Fprintf(w, "gpuinfo: an MPS control daemon listens in %s\n", dir)
	}
}

// compareModel runs the ONNX model at path on random inputs on the CPU
// backend and on b, and compares every output. The note says which nodes
// b ran on the host, if it tells.
func compareModel(ctx context.Context, path string, b graph.Compiler, batch int, seed uint64) (note string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	decode := func() (*graph.Graph, error) { return onnx.Decode(data, filepath.Dir(path)) }
	g, err := decode() // each backend compiles its own graph: Compile rewrites it
	if err != nil {
		return "", err
	}
	feeds, err := randomFeeds(g.Inputs, batch, seed)
	if err != nil {
		return "", err
	}
	want, err := runModel(ctx, inference.CPU, b, nil, g, feeds)
	if err != nil {
		return "", fmt.Errorf("cpu: %w", err)
	}
	if g, err = decode(); err != nil {
		return "", err
	}
	var hostNodes []string
	got, err := runModel(ctx, b.Device(), b, &hostNodes, g, feeds)
	if err != nil {
		return "", fmt.Errorf("%s: %w", b.Device(), err)
	}
	if len(hostNodes) > 0 {
		note = fmt.Sprintf("%d node(s) ran on the host: %s", len(hostNodes), strings.Join(hostNodes, ", "))
	}
	for _, o := range g.Outputs {
		if nan := check.NaNs(want[o.Name]); nan > 0 {
			return note, fmt.Errorf("the CPU's output %q has %d NaN element(s) of %d: NaN equals NaN, so it compares nothing (the random inputs do not suit the model)", o.Name, nan, want[o.Name].Len())
		}
		if err := check.Compare(got[o.Name], want[o.Name], modelRTol, modelATol); err != nil {
			return note, fmt.Errorf("output %q: %w", o.Name, err)
		}
	}
	return note, nil
}

// runModel compiles g on the CPU backend (device cpu) or on b and runs it.
func runModel(ctx context.Context, device inference.Device, b graph.Compiler, hostNodes *[]string, g *graph.Graph, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	c := b
	if device == inference.CPU {
		backend, err := inference.ResolveDevice(inference.CPU)
		if err != nil {
			return nil, err
		}
		var ok bool
		if c, ok = backend.(graph.Compiler); !ok {
			return nil, fmt.Errorf("the cpu backend does not compile graphs")
		}
	}
	m, err := c.Compile(g)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out, err := m.Run(ctx, feeds)
	if h, ok := m.(interface{ HostNodes() []string }); ok && hostNodes != nil {
		*hostNodes = h.HostNodes()
	}
	return out, err
}

// randomFeeds makes an input for each graph input: every dynamic dimension
// of size batch; floats uniform in [-1, 1), integers 0 or 1 (valid token
// ids and attention masks: check.RandomInput), bools and bytes uniform.
func randomFeeds(inputs []graph.Value, batch int, seed uint64) (map[string]inference.Tensor, error) {
	r := rand.New(rand.NewPCG(seed, 0x5e1fc4ec))
	feeds := map[string]inference.Tensor{}
	for _, in := range inputs {
		if in.Shape == nil {
			return nil, fmt.Errorf("input %q declares no shape, so no random input can be made for it", in.Name)
		}
		shape := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			shape[i] = d
			if d == inference.Dynamic {
				shape[i] = batch
			}
		}
		t, err := check.RandomInput(r, in.Name, in.DType, shape)
		if err != nil {
			return nil, err
		}
		feeds[in.Name] = t
	}
	return feeds, nil
}

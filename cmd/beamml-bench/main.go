// Command beamml-bench times one ONNX model on beamml's CPU or CUDA
// backend: for each batch size it feeds random inputs of the model's
// declared shapes (the batch axis set, other dynamic dimensions set by
// -dynamic), runs the model, and prints a table of the first run's time
// (which builds the plan for that shape), the median and 90th percentile
// of the timed runs, and items per second at the median. A run is
// end to end: host tensors in, host tensors out, as RunInference sees it.
//
//	go run ./cmd/beamml-bench -model m.onnx -device cpu -batch 1,8 -n 20
//	CGO_ENABLED=1 go build -tags cuda -o beamml-bench ./cmd/beamml-bench   # also registers the GPU
//	beamml-bench -model m.onnx -device cuda -batch 1,8,64 -json out.json -dump dir
//
// -dump DIR writes the inputs and outputs of one batch (-dump-batch, by
// default the first of -batch; its inputs drawn from -seed) as .npy files
// with DIR/dump.json naming them, so that another runtime (scripts/gpu's
// PyTorch and ONNX Runtime reference) can run the same inputs and compare.
// -device sim (in a build with cgo) runs the CUDA executor on the
// simulated device, with the host-emulated kernels: its times mean nothing,
// but the report's host nodes are the GPU path's, and -compare cpu checks
// its outputs. -compare cpu runs the first batch size's inputs on the CPU
// backend too and fails (exit 1) when an output differs by more than
// -rtol and -atol (by default 1e-3 and 1e-4, the self-check's
// tolerances), plus -atol-scale times that output's largest |value| (the
// scale of a reduced-precision mode's rounding), or when the reference
// output holds NaN (which would equal NaN and compare nothing); the report
// says how far apart the outputs lie on that scale. -compare reference
// compares with cuda.Reference of the -precision mode instead, the CPU
// backend's run of the graph the CUDA backend's passes rewrite for it (in
// FP16, with the values it stores in float16 rounded to float16), which
// is what an FP16 model should compute; -no-host-nodes fails when a node
// ran on the host.
//
// -load-kernels, in a binary built with the cuda tag, times opening the
// GPU and loading each kernel module's fatbin (machine code where it has the
// device's architecture, else the driver JIT-compiles its PTX; set
// CUDA_CACHE_DISABLE=1 for a cold compile) and exits.
//
// Exit status: 0 when every batch ran, 1 when the model or a batch failed
// (the other batches still run), 2 for a usage error or a device that is
// not available. A binary built with the cuda tag exits 2 before main on a
// machine whose driver does not answer cuInit (inference/cuda/cu).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/sim"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2 // also: the device is not available
)

// config is what the flags ask for.
type config struct {
	model     string
	device    inference.Device
	batches   []int
	runs      int // timed runs per batch size
	warmup    int // untimed runs after the first, per batch size
	dynamic   int // size of dynamic dimensions other than the batch axis
	precision inference.Precision
	seed      uint64 // of the random inputs
	dumpDir   string
	dumpBatch int
	compare   string  // "cpu" or "reference": run the first batch on it too and compare
	rtol      float64 // -compare's tolerances
	atol      float64
	atolScale float64 // of each output's largest |value| in the reference
	noHost    bool    // fail when a node ran on the host
}

// simBackend returns the CUDA executor on the simulated device, and the
// device; set in builds with cgo (sim.go).
var simBackend func() (inference.Backend, *simDevice, error)

// simDevice is the simulated device and its kernel runner's launch counts.
type simDevice struct {
	*sim.Device
	launched func() map[string]int // cumulative launches by kernel
}

// report is what one benchmark measured; -json writes it.
type report struct {
	Model      string   `json:"model"`
	Device     string   `json:"device"`      // the backend that ran: cpu or cuda
	DeviceName string   `json:"device_name"` // the GPU and its cuBLAS, or the CPU's threads
	Precision  string   `json:"precision"`   // the model's precision mode: fp32, tf32 or fp16
	OpenMS     float64  `json:"open_ms"`     // resolving the device: for CUDA, opening it and loading the kernel modules
	LoadMS     float64  `json:"load_ms"`     // reading, decoding and compiling the model (weights uploaded)
	HostNodes  []string `json:"host_nodes,omitempty"`
	HostWhy    []string `json:"host_why,omitempty"` // each host node and why it has no device kernel (the CUDA executor's Stats)
	Compared   string   `json:"compared,omitempty"` // what -compare found
	Work       *work    `json:"device_work,omitempty"`
	Batches    []batch  `json:"batches"`
	Dump       string   `json:"dump,omitempty"` // the folder -dump wrote
}

// work is what the device did for one steady-state batch (-device sim,
// which counts it): the GPU path's cost in calls, whatever the timings.
type work struct {
	Batch      int `json:"batch"`
	Launches   int `json:"launches"`
	Gemms      int `json:"gemms"`
	CopiesHtoD int `json:"copies_htod"`
	CopiesDtoH int `json:"copies_dtoh"`
	CopiesDtoD int `json:"copies_dtod"`
	Syncs      int `json:"syncs"`
	// Calls counts the calls that queued work (launches, products, async
	// copies one by one, or a CUDA graph's replay: sim.Stats.Calls).
	Calls         int `json:"calls"`
	GraphLaunches int `json:"graph_launches"`
	// DeviceBytes is the device memory the model holds besides its weights
	// (workspaces: the memory plan's intermediates, staging; the plans'
	// constants) after the batch.
	DeviceBytes int64 `json:"device_bytes"`
	// Kernels counts the batch's launches by kernel.
	Kernels map[string]int `json:"kernels"`
}

// batch is the timing of one batch size. Times are of one Run, in
// milliseconds; ItemsPerSec is Batch over P50MS.
type batch struct {
	Batch       int     `json:"batch"`
	Runs        int     `json:"runs"`
	FirstMS     float64 `json:"first_ms"`
	P50MS       float64 `json:"p50_ms"`
	P90MS       float64 `json:"p90_ms"`
	MinMS       float64 `json:"min_ms"`
	ItemsPerSec float64 `json:"items_per_s"`
	Error       string  `json:"error,omitempty"`
}

// errNoDevice marks a device that could not be resolved: exit status 2.
var errNoDevice = errors.New("device not available")

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// run parses args, benchmarks, prints the table on stdout and returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("beamml-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "the ONNX model file")
	device := fs.String("device", string(inference.Auto), "cpu, cuda, auto, or sim (the CUDA executor on the simulated device; cgo builds)")
	batchList := fs.String("batch", "1,8", "batch sizes, comma-separated")
	runs := fs.Int("n", 20, "timed runs per batch size")
	warmup := fs.Int("warmup", 3, "untimed runs per batch size after the first (which is timed on its own)")
	dynamic := fs.Int("dynamic", 1, "size of every dynamic input dimension other than the batch axis")
	seed := fs.Uint64("seed", 1, "seed of the random inputs")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	dumpDir := fs.String("dump", "", "write one batch's inputs and outputs as .npy files, and dump.json, to this folder")
	dumpBatch := fs.Int("dump-batch", 0, "the batch size -dump writes (default: the first of -batch)")
	compare := fs.String("compare", "", "cpu: also run the first batch size on the CPU backend and compare the outputs; reference: compare with the CPU's run of the -precision mode's meaning (cuda.Reference)")
	noHost := fs.Bool("no-host-nodes", false, "fail when a node of the model ran on the host")
	rtol := fs.Float64("rtol", 1e-3, "-compare's relative tolerance")
	atol := fs.Float64("atol", 1e-4, "-compare's absolute tolerance")
	atolScale := fs.Float64("atol-scale", 0, "-compare's absolute tolerance, added to -atol, as a fraction of each output's largest |value| in the reference (a reduced-precision mode's rounding is relative to the terms' size, not to each result's)")
	precision := fs.String("precision", string(inference.FP32), "the model's precision mode: fp32, tf32 or fp16 (GPU backends; the CPU computes float32)")
	loadKernels := fs.Bool("load-kernels", false, "time opening the GPU and loading each kernel module, then exit (cuda build)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "beamml-bench: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usage("unexpected arguments %q", fs.Args())
	}
	if *loadKernels {
		return printKernelLoads(stdout, stderr)
	}
	batches, err := positiveInts(*batchList)
	switch {
	case *model == "":
		return usage("-model is required")
	case err != nil:
		return usage("-batch: %v", err)
	case *runs < 0 || *warmup < 0 || *dynamic < 1 || *dumpBatch < 0:
		return usage("-n and -warmup must be at least 0, -dynamic at least 1, -dump-batch at least 0")
	case *compare != "" && *compare != string(inference.CPU) && *compare != "reference":
		return usage("-compare: %q, want cpu or reference", *compare)
	case *rtol < 0 || *atol < 0 || *atolScale < 0:
		return usage("-rtol, -atol and -atol-scale must be at least 0")
	}
	prec, err := inference.ParsePrecision(*precision)
	if err != nil {
		return usage("-precision: %v", err)
	}
	cfg := config{model: *model, device: inference.Device(*device), batches: batches, runs: *runs, warmup: *warmup,
		dynamic: *dynamic, precision: prec, seed: *seed, dumpDir: *dumpDir, dumpBatch: cmp.Or(*dumpBatch, batches[0]),
		compare: *compare, rtol: *rtol, atol: *atol, atolScale: *atolScale, noHost: *noHost}

	rep, err := bench(ctx, cfg)
	if errors.Is(err, errNoDevice) {
		fmt.Fprintf(stderr, "beamml-bench: %v\n", err)
		return exitUsage
	}
	if rep.Model != "" {
		printReport(stdout, rep)
	}
	if *jsonPath != "" && rep.Model != "" {
		data, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(*jsonPath, append(data, '\n'), 0o644)
		}
		if jerr != nil {
			fmt.Fprintf(stderr, "beamml-bench: -json: %v\n", jerr)
			return exitFailed
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "beamml-bench: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// bench loads cfg.model on cfg.device and times it at each batch size. A
// batch size that fails has its error in the report and the others still
// run; the error returned then names the first such failure. An error
// before any batch ran (the device, the model) leaves the report empty,
// or without batches.
func bench(ctx context.Context, cfg config) (report, error) {
	start := time.Now()
	backend, simDev, err := resolve(cfg.device)
	if err != nil {
		return report{}, fmt.Errorf("%w: %w", errNoDevice, err)
	}
	rep := report{Model: cfg.model, Device: string(backend.Device()), Precision: string(cfg.precision), OpenMS: ms(time.Since(start))}
	rep.DeviceName = deviceName(backend)

	start = time.Now()
	m, err := load(cfg.model, backend, cfg.precision)
	if err != nil {
		return rep, err
	}
	defer m.Close()
	rep.LoadMS = ms(time.Since(start))

	var firstErr error
	for _, b := range cfg.batches {
		r := timeBatch(ctx, m, cfg, b)
		if r.Error != "" && firstErr == nil {
			firstErr = fmt.Errorf("batch %d: %s", b, r.Error)
		}
		rep.Batches = append(rep.Batches, r)
	}
	if cfg.dumpDir != "" {
		if err := dump(ctx, m, cfg, rep.Device); err != nil {
			return rep, fmt.Errorf("-dump: %w", err)
		}
		rep.Dump = cfg.dumpDir
	}
	if simDev != nil {
		w, err := measureWork(ctx, m, simDev, cfg)
		if err != nil {
			return rep, fmt.Errorf("device work: %w", err)
		}
		rep.Work = &w
	}
	if cfg.compare != "" {
		worst, err := compareOutputs(ctx, m, cfg)
		rep.Compared = "outputs match the " + compareName(cfg) + " at batch " + strconv.Itoa(cfg.batches[0]) + worst
		if err != nil {
			rep.Compared = err.Error()
			firstErr = cmp.Or(firstErr, err)
		}
	}
	// The nodes of the plans the runs above built (none exists before a
	// run).
	if h, ok := m.(interface{ HostNodes() []string }); ok {
		rep.HostNodes = h.HostNodes()
	}
	if s, ok := m.(interface{ Stats() cuda.Stats }); ok {
		rep.HostWhy = s.Stats().HostNodes
	}
	if cfg.noHost && len(rep.HostNodes) > 0 {
		firstErr = cmp.Or(firstErr, fmt.Errorf("%d node(s) ran on the host: %s", len(rep.HostNodes), strings.Join(rep.HostNodes, ", ")))
	}
	return rep, firstErr
}

// resolve returns the backend of device, and for "sim" the simulated
// device it runs on.
func resolve(device inference.Device) (inference.Backend, *simDevice, error) {
	if device != "sim" {
		b, err := inference.ResolveDevice(device)
		return b, nil, err
	}
	if simBackend == nil {
		return nil, nil, fmt.Errorf("device sim runs the emulated CUDA kernels and needs a build with cgo and a C++ compiler: %w", inference.ErrNoDevice)
	}
	return simBackend()
}

// measureWork counts what the simulated device does for one batch of the
// first batch size, after two warm-up batches of it (so the plan, the
// workspace and its CUDA graph exist): a steady-state batch.
func measureWork(ctx context.Context, m inference.Model, dev *simDevice, cfg config) (work, error) {
	b := cfg.batches[0]
	feeds, err := randomFeeds(m.Inputs(), b, cfg.dynamic, cfg.seed)
	if err != nil {
		return work{}, err
	}
	for range 2 {
		if _, err := m.Run(ctx, feeds); err != nil {
			return work{}, err
		}
	}
	before, launchedBefore := dev.Stats(), dev.launched()
	if _, err := m.Run(ctx, feeds); err != nil {
		return work{}, err
	}
	after := dev.Stats()
	kernels := map[string]int{}
	for k, n := range dev.launched() {
		if d := n - launchedBefore[k]; d > 0 {
			kernels[k] = d
		}
	}
	return work{
		Kernels:       kernels,
		Batch:         b,
		Launches:      after.Launches - before.Launches,
		Gemms:         after.Gemms - before.Gemms,
		CopiesHtoD:    after.CopiesHtoD - before.CopiesHtoD,
		CopiesDtoH:    after.CopiesDtoH - before.CopiesDtoH,
		CopiesDtoD:    after.CopiesDtoD - before.CopiesDtoD,
		Syncs:         after.Syncs - before.Syncs,
		Calls:         after.Calls - before.Calls,
		GraphLaunches: after.GraphLaunches - before.GraphLaunches,
		DeviceBytes:   after.AllocatedBytes - m.ByteSize(),
	}, nil
}

// compareName names what -compare compares with.
func compareName(cfg config) string {
	if cfg.compare == "reference" {
		return fmt.Sprintf("%s reference's", cfg.precision)
	}
	return "cpu backend's"
}

// compareOutputs runs the first batch size's inputs on m and on the model
// compiled by the CPU backend (-compare cpu) or by cuda.Reference in m's
// precision (-compare reference), and compares every output: element by
// element within rtol·|want| + atol + atolScale·max|want|, the largest
// |value| of that output in the reference. It returns where the outputs
// differ most, relative to that scale (", max |Δ| … of …"), as the
// report's comparison says it.
func compareOutputs(ctx context.Context, m inference.Model, cfg config) (string, error) {
	var ref inference.Model
	var err error
	if cfg.compare == "reference" {
		ref, err = loadWith(cfg.model, cuda.Reference(cfg.precision))
	} else {
		var cpuBackend inference.Backend
		if cpuBackend, err = inference.ResolveDevice(inference.CPU); err != nil {
			return "", err
		}
		ref, err = load(cfg.model, cpuBackend, inference.FP32)
	}
	if err != nil {
		return "", fmt.Errorf("-compare: %s: %w", cfg.compare, err)
	}
	defer ref.Close()
	feeds, err := randomFeeds(m.Inputs(), cfg.batches[0], cfg.dynamic, cfg.seed)
	if err != nil {
		return "", fmt.Errorf("-compare: %w", err)
	}
	got, err := m.Run(ctx, feeds)
	if err != nil {
		return "", fmt.Errorf("-compare: %w", err)
	}
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		return "", fmt.Errorf("-compare: %s: %w", cfg.compare, err)
	}
	var worst string
	var worstRatio float64
	for _, o := range ref.Outputs() {
		if nan := check.NaNs(want[o.Name]); nan > 0 {
			return "", fmt.Errorf("-compare: the %s output %q has %d NaN element(s) of %d: NaN equals NaN, so they compare nothing (the random inputs do not suit the model)", compareName(cfg), o.Name, nan, want[o.Name].Len())
		}
		scale, diff := spread(got[o.Name], want[o.Name])
		if r := diff / max(scale, math.SmallestNonzeroFloat64); diff > 0 && r >= worstRatio {
			worstRatio = r
			worst = fmt.Sprintf("; max |Δ| %.3g, %.2g of %q's largest |value| %.3g", diff, r, o.Name, scale)
		}
		if err := check.Compare(got[o.Name], want[o.Name], cfg.rtol, cfg.atol+cfg.atolScale*scale); err != nil {
			return worst, fmt.Errorf("-compare: output %q differs from the %s (atol %g + %g of its largest |value| %.3g): %w", o.Name, compareName(cfg), cfg.atol, cfg.atolScale, scale, err)
		}
	}
	return worst, nil
}

// spread returns the largest finite |value| of want and the largest
// |got − want| over the elements where both are finite: 0 and 0 for
// tensors that are not floats or differ in shape (check.Compare reports
// those).
func spread(got, want inference.Tensor) (scale, diff float64) {
	g, w := check.Float32s(got), check.Float32s(want)
	if len(g) != len(w) {
		return 0, 0
	}
	for i := range w {
		a, b := float64(g[i]), float64(w[i])
		if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			continue
		}
		scale, diff = max(scale, math.Abs(b)), max(diff, math.Abs(a-b))
	}
	return scale, diff
}

// loadWith reads and decodes the model file and compiles it with c.
func loadWith(path string, c graph.Compiler) (inference.Model, error) {
	g, err := decode(path)
	if err != nil {
		return nil, err
	}
	return c.Compile(g)
}

// decode reads and decodes the model file.
func decode(path string) (*graph.Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return onnx.Decode(data, filepath.Dir(path))
}

// load reads, decodes and compiles the model file for backend, in
// precision p.
func load(path string, backend inference.Backend, p inference.Precision) (inference.Model, error) {
	g, err := decode(path)
	if err != nil {
		return nil, err
	}
	if oc, ok := backend.(graph.OptionsCompiler); ok {
		return oc.CompileWith(g, graph.Options{Precision: p})
	}
	c, ok := backend.(graph.Compiler)
	if !ok {
		return nil, fmt.Errorf("the %s backend does not compile ONNX graphs", backend.Device())
	}
	if p != inference.FP32 {
		return nil, fmt.Errorf("the %s backend computes float32 only, not %s", backend.Device(), p)
	}
	return c.Compile(g)
}

// deviceName says what the backend runs on: the GPU and its cuBLAS, or
// the CPU's architecture and the threads its parallel loops use.
func deviceName(backend inference.Backend) string {
	if cb, ok := backend.(*cuda.Backend); ok {
		dev, err := cb.Open()
		if err != nil {
			return err.Error()
		}
		if b, ok := dev.(interface{ BLAS() string }); ok {
			return dev.Name() + ", " + b.BLAS()
		}
		return dev.Name()
	}
	return fmt.Sprintf("%s/%s, GOMAXPROCS %d", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
}

// timeBatch runs the model at batch size b: once on its own, cfg.warmup
// times untimed, cfg.runs times timed.
func timeBatch(ctx context.Context, m inference.Model, cfg config, b int) batch {
	r := batch{Batch: b}
	feeds, err := randomFeeds(m.Inputs(), b, cfg.dynamic, cfg.seed)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	once := func() (time.Duration, error) {
		start := time.Now()
		_, err := m.Run(ctx, feeds)
		return time.Since(start), err
	}
	first, err := once()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.FirstMS = ms(first)
	for range cfg.warmup {
		if _, err := once(); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	times := make([]float64, 0, cfg.runs)
	for range cfg.runs {
		d, err := once()
		if err != nil {
			r.Error = err.Error()
			return r
		}
		times = append(times, ms(d))
	}
	if len(times) == 0 {
		return r
	}
	slices.Sort(times)
	r.Runs = len(times)
	r.P50MS, r.P90MS, r.MinMS = percentile(times, 50), percentile(times, 90), times[0]
	if r.P50MS > 0 {
		r.ItemsPerSec = float64(b) * 1000 / r.P50MS
	}
	return r
}

// percentile is the nearest-rank p-th percentile of sorted: the smallest
// value with at least p% of the values at or below it.
func percentile(sorted []float64, p int) float64 {
	i := (p*len(sorted)+99)/100 - 1
	return sorted[max(i, 0)]
}

// randomFeeds makes an input for each of the model's inputs: axis 0 of
// size batch, other dynamic dimensions of size dynamic; floats uniform in
// [-1, 1), integers 0 or 1 (token ids, attention masks: check.RandomInput),
// bools and bytes uniform. The generator is
// seeded by seed and batch, so a batch size always gets the same inputs.
func randomFeeds(inputs []inference.TensorInfo, batch, dynamic int, seed uint64) (map[string]inference.Tensor, error) {
	r := rand.New(rand.NewPCG(seed, uint64(batch)))
	feeds := make(map[string]inference.Tensor, len(inputs))
	for _, in := range inputs {
		if len(in.Shape) == 0 {
			return nil, fmt.Errorf("input %q is a scalar or has no declared shape, so it has no batch axis", in.Name)
		}
		shape := slices.Clone(in.Shape)
		for i, d := range shape {
			if d == inference.Dynamic {
				shape[i] = dynamic
			}
		}
		shape[0] = batch
		t, err := check.RandomInput(r, in.Name, in.DType, shape)
		if err != nil {
			return nil, err
		}
		feeds[in.Name] = t
	}
	return feeds, nil
}

// printReport writes the report as a person reads it.
func printReport(w io.Writer, rep report) {
	fmt.Fprintf(w, "model   %s\n", rep.Model)
	fmt.Fprintf(w, "device  %s: %s, precision %s\n", rep.Device, rep.DeviceName, rep.Precision)
	fmt.Fprintf(w, "open    %.1f ms (resolving the device; for cuda: context, cuBLAS, kernel modules)\n", rep.OpenMS)
	if rep.LoadMS > 0 {
		fmt.Fprintf(w, "load    %.1f ms (read, decode, compile, weights)\n", rep.LoadMS)
	}
	if len(rep.HostNodes) > 0 {
		fmt.Fprintf(w, "host    %d node(s) run on the host: %s\n", len(rep.HostNodes), strings.Join(rep.HostNodes, ", "))
		for _, why := range rep.HostWhy {
			fmt.Fprintf(w, "        %s\n", why)
		}
	} else if rep.Device == string(inference.CUDA) {
		fmt.Fprintf(w, "host    no node runs on the host\n")
	}
	if rep.Compared != "" {
		fmt.Fprintf(w, "compare %s\n", rep.Compared)
	}
	if k := rep.Work; k != nil {
		fmt.Fprintf(w, "work    a steady batch of %d: %d launches, %d GEMMs, copies %d host→device, %d device→host, %d device→device, %d syncs; %.1f MiB of device memory besides the weights\n",
			k.Batch, k.Launches, k.Gemms, k.CopiesHtoD, k.CopiesDtoH, k.CopiesDtoD, k.Syncs, float64(k.DeviceBytes)/(1<<20))
		fmt.Fprintf(w, "        %d call(s) to the device queued it (%d CUDA graph launch(es))\n", k.Calls, k.GraphLaunches)
		names := slices.Sorted(maps.Keys(k.Kernels))
		slices.SortStableFunc(names, func(a, b string) int { return k.Kernels[b] - k.Kernels[a] })
		var by []string
		for _, name := range names {
			by = append(by, fmt.Sprintf("%s %d", name, k.Kernels[name]))
		}
		fmt.Fprintf(w, "        launches by kernel: %s\n", strings.Join(by, ", "))
	}
	if len(rep.Batches) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "batch\truns\tfirst ms\tp50 ms\tp90 ms\tmin ms\titems/s\t")
	for _, b := range rep.Batches {
		if b.Error != "" {
			fmt.Fprintf(tw, "%d\t\t\t\t\t\t\tERROR: %s\n", b.Batch, b.Error)
			continue
		}
		if b.Runs == 0 {
			fmt.Fprintf(tw, "%d\t0\t%.2f\t-\t-\t-\t-\t\n", b.Batch, b.FirstMS)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f\t\n", b.Batch, b.Runs, b.FirstMS, b.P50MS, b.P90MS, b.MinMS, b.ItemsPerSec)
	}
	tw.Flush()
	if rep.Dump != "" {
		fmt.Fprintf(w, "\ndump    %s\n", filepath.Join(rep.Dump, dumpIndex))
	}
}

// positiveInts parses a comma-separated list of positive integers.
func positiveInts(s string) ([]int, error) {
	var v []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		v = append(v, n)
	}
	return v, nil
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

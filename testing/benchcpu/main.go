// Command benchcpu times beamml's CPU backend against ONNX Runtime (CPU,
// through onnxruntime-node) on the same models, inputs, batch sizes and
// thread counts, and prints a markdown table: per cell beamml's and ORT's
// median time, their ratio, beamml's GFLOP/s and allocations per Run, and
// the largest difference between the two runtimes' outputs; then per
// thread count and batch size the geometric mean and the maximum of the
// ratios. The tabular models (tree ensembles, a manifest entry with
// "rows") are timed at their rows per run instead of the batch sizes and
// get a second table, without GFLOP/s, where a classifier's labels are
// compared by how many differ; they are not in the summary, whose
// geometric means stay those of the neural models at each batch size.
// make bench-cpu runs it after exporting the models
// (scripts/bench-cpu.sh), which writes the manifest it reads
// (DIR/models.json) and installs onnxruntime-node in DIR/node_modules.
//
//	go run ./testing/benchcpu --dir out/bench-cpu --threads 1,2 --batches 1,8 --models bert,gpt
//
// Threads t means runtime.GOMAXPROCS(t) for beamml (its parallel loops
// read GOMAXPROCS) and intraOpNumThreads t for ORT. Each cell is timed by
// ORT (scripts/ort_bench.js, kept running under node) and then by beamml,
// so that both see the same load on the machine. A model that beamml
// cannot load or run gets an error row; the other rows are unaffected.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
)

// minRuns is the fewest timed runs of a cell, however slow it is.
const minRuns = 3

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchcpu: ")
	dir := flag.String("dir", "out/bench-cpu", "folder with models.json, the models and node_modules/onnxruntime-node")
	threadList := flag.String("threads", "1,2", "thread counts, comma-separated")
	batchList := flag.String("batches", "1,8", "batch sizes, comma-separated")
	modelList := flag.String("models", "", "models to time, comma-separated (default: all of models.json)")
	budget := flag.Duration("time", 1500*time.Millisecond, "time per cell and runtime: runs go on until it is spent (at least 3)")
	script := flag.String("ort-script", "scripts/ort_bench.js", "the onnxruntime-node timing script")
	rounds := flag.Int("rounds", 1, "times each cell is timed, ORT and beamml in turn; ms is the median over the rounds (odd values avoid averaging two)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (beamml's loads and runs; ORT runs in another) to this file")
	flag.IntVar(&nodesTop, "nodes", 0, "after timing each cell, print (to stderr) beamml's time per operator and its slowest `n` nodes over 20 profiled runs (cpu.Model.Profile)")
	flag.Parse()

	if *rounds < 1 {
		log.Fatalf("--rounds %d: want at least 1", *rounds)
	}
	threads, err := positiveInts(*threadList)
	if err != nil {
		log.Fatalf("--threads: %v", err)
	}
	batches, err := positiveInts(*batchList)
	if err != nil {
		log.Fatalf("--batches: %v", err)
	}
	manifestPath := filepath.Join(*dir, "models.json")
	m, err := readManifest(manifestPath)
	if err != nil {
		log.Fatal(err)
	}
	models, err := m.selected(*modelList)
	if err != nil {
		log.Fatalf("--models: %v", err)
	}

	loadBefore := loadAverage()
	start := time.Now()
	ort, err := startORT(*script, filepath.Join(*dir, "node_modules"), manifestPath, filepath.Join(*dir, "ort-out"), *budget)
	if err != nil {
		log.Fatalf("onnxruntime-node: %v", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatalf("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatalf("--cpuprofile: %v", err)
		}
		defer f.Close()
	}
	var cells []cell
	for _, spec := range models {
		cells = append(cells, benchModel(context.Background(), *dir, spec, threads, spec.batches(batches), ort, *budget, *rounds)...)
	}
	pprof.StopCPUProfile() // a no-op without --cpuprofile
	if err := ort.close(); err != nil {
		log.Printf("onnxruntime-node: %v", err)
	}
	log.Printf("timed in %.0f s", time.Since(start).Seconds())
	neural := slices.DeleteFunc(slices.Clone(cells), func(c cell) bool { return c.tabular })
	tabular := slices.DeleteFunc(cells, func(c cell) bool { return !c.tabular })
	byThreads := func(a, b cell) int { return slices.Index(threads, a.threads) - slices.Index(threads, b.threads) }
	slices.SortStableFunc(neural, func(a, b cell) int {
		return cmp.Or(byThreads(a, b), slices.Index(batches, a.batch)-slices.Index(batches, b.batch))
	})
	slices.SortStableFunc(tabular, byThreads)

	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	fmt.Printf("beamml CPU backend vs ONNX Runtime %s (onnxruntime-node, CPU execution provider, graph optimization level all, inter-op threads 1)\n\n", ort.version)
	fmt.Printf("Machine: %s, %d logical CPUs, %s/%s, %s; load average (1 min) %s before, %s after.\n\n",
		cmp.Or(cpuModel(strings.NewReader(string(cpuinfo))), "unknown CPU"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH,
		runtime.Version(), loadBefore, loadAverage())
	roundsNote := ""
	if *rounds > 1 {
		roundsNote = fmt.Sprintf(", then the median of %d such medians, ORT and beamml timed in turn", *rounds)
	}
	fmt.Printf("ms: median wall time of one Run after %d warm-up runs (at least %d runs, more until %v)%s. "+
		"ratio: beamml ms / ORT ms. GFLOP/s: beamml's, counting %s. "+
		"allocs/Run and KiB/Run: Go heap allocations (runtime.MemStats Mallocs, TotalAlloc) over the timed runs of the first round, per run; "+
		"beyond outputs: allocs/Run less %d for the result map and %d per output tensor (its buffer and the pool's record of it). "+
		"max |Δ|: largest absolute difference between each output from beamml and from ORT at the first warm-up run "+
		"(named when a model has several; for an int64 output, how many elements differ).\n\n", warmups, minRuns, *budget, roundsNote, countedOps, resultAllocs, outputAllocs)
	if len(neural) > 0 {
		writeTable(os.Stdout, neural)
		fmt.Println()
		writeSummary(os.Stdout, summarize(neural, threads, batches))
	}
	if len(tabular) > 0 {
		if len(neural) > 0 {
			fmt.Println()
		}
		fmt.Printf("Tabular models (tree ensembles): each Run takes the rows of its manifest entry at once, instead of the batch sizes above; " +
			"ns/row: beamml ms over rows; outputs vs ORT as max |Δ| above. Not in the summary.\n\n")
		writeTabularTable(os.Stdout, tabular)
	}
}

// benchModel loads the model of spec and times it at every thread count and
// batch size, each cell right after ORT times it, rounds times in turn; an
// error is kept in the cells it affects.
func benchModel(ctx context.Context, dir string, spec modelSpec, threads, batches []int, ort *ortServer, budget time.Duration, rounds int) []cell {
	var cells []cell
	for _, t := range threads {
		for _, b := range batches {
			cells = append(cells, cell{cellKey: cellKey{spec.Name, b, t}, tabular: spec.Rows > 0})
		}
	}
	h, loadErr := inference.NewCache(0).Acquire(ctx, onnx.Model(filepath.Join(dir, spec.File)).WithDevice(inference.CPU))
	flopsAt := map[int]int64{}
	if loadErr != nil {
		loadErr = fmt.Errorf("load: %v", loadErr)
		log.Printf("%s: %v", spec.Name, loadErr)
	} else {
		defer h.Release()
	}
	if loadErr == nil && spec.Rows == 0 { // a tree ensemble's comparisons are no FLOPs
		for _, b := range batches {
			n, err := countFLOPs(ctx, spec, h.Model(), b)
			if err != nil {
				log.Printf("%s: FLOPs at batch %d: %v", spec.Name, b, err)
			}
			flopsAt[b] = n
		}
	}

	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	for i := range cells {
		c := &cells[i]
		var err error
		if c.ort, err = ort.time(c.cellKey); err != nil {
			c.ort.Error = err.Error()
		}
		if loadErr != nil {
			c.err = loadErr
			continue
		}
		c.flops = flopsAt[c.batch]
		runtime.GOMAXPROCS(c.threads)
		c.beamml, c.diff, c.err = benchCell(ctx, spec, h.Model(), c.batch, c.ort, budget)
		c.outputs = len(h.Model().Outputs())
		if c.err != nil {
			log.Printf("%s batch %d, %d threads: %v", spec.Name, c.batch, c.threads, c.err)
			continue
		}
		// Further rounds time both again, in turn, so that a slow spell
		// of the machine falls on one round of each, not on one runtime.
		var ortMs []float64
		if c.ort.Error == "" {
			ortMs = append(ortMs, c.ort.Ms)
		}
		beammlMs := []float64{c.beamml.ms}
		for range rounds - 1 {
			o, err := ort.time(c.cellKey)
			if err == nil && o.Error == "" {
				ortMs = append(ortMs, o.Ms)
			}
			if m, err := timeCell(ctx, spec, h.Model(), c.batch, budget); err == nil {
				beammlMs = append(beammlMs, m.ms)
			}
		}
		if len(ortMs) > 0 {
			c.ort.Ms = median(ortMs)
		}
		c.beamml.ms = median(beammlMs)
		log.Printf("%s batch %d, %d threads: %s ms (ORT %s ms), max |Δ| %s", spec.Name, c.batch, c.threads,
			formatMs(c.beamml.ms), formatMs(c.ort.Ms), c.diff)
	}
	return cells
}

// benchCell runs the model once at the batch size, compares the output
// with ORT's, then times it.
func benchCell(ctx context.Context, spec modelSpec, model inference.Model, batch int, ort ortCell, budget time.Duration) (measurement, string, error) {
	feeds, err := spec.feeds(batch)
	if err != nil {
		return measurement{}, "", err
	}
	out, err := model.Run(ctx, feeds)
	if err != nil {
		return measurement{}, "", fmt.Errorf("run: %v", err)
	}
	diff := formatDiffs(compareOutputs(out, ort.Outputs))
	run := func() error {
		_, err := model.Run(ctx, feeds)
		return err
	}
	for range warmups - 1 {
		if err := run(); err != nil {
			return measurement{}, "", fmt.Errorf("run: %v", err)
		}
	}
	m, err := measure(run, minRuns, budget)
	if err != nil {
		return measurement{}, "", fmt.Errorf("run: %v", err)
	}
	if nodesTop > 0 {
		if err := printProfile(ctx, spec.Name, batch, model, feeds, nodesTop); err != nil {
			return measurement{}, "", fmt.Errorf("profile: %v", err)
		}
	}
	return m, diff, nil
}

// nodesTop is --nodes: how many of the slowest nodes printProfile lists.
var nodesTop int

// profiledRuns is the runs printProfile times each node over.
const profiledRuns = 20

// printProfile logs beamml's time per run by operator, most first, and
// its top slowest nodes (cpu.Model.Profile over profiledRuns runs).
func printProfile(ctx context.Context, name string, batch int, model inference.Model, feeds map[string]inference.Tensor, top int) error {
	m, ok := model.(*cpu.Model)
	if !ok {
		return fmt.Errorf("the model is a %T, not a *cpu.Model", model)
	}
	nodes, err := m.Profile(ctx, feeds, profiledRuns)
	if err != nil {
		return err
	}
	perRun := func(d time.Duration) float64 { return d.Seconds() * 1e3 / profiledRuns }
	var total time.Duration
	byOp := map[string]time.Duration{}
	count := map[string]int{}
	for _, n := range nodes {
		total += n.Time
		byOp[n.Op] += n.Time
		count[n.Op]++
	}
	ops := slices.Collect(maps.Keys(byOp))
	slices.SortFunc(ops, func(a, b string) int { return cmp.Compare(byOp[b], byOp[a]) })
	var b strings.Builder
	fmt.Fprintf(&b, "%s batch %d, %d threads: %.3f ms per run in nodes\n", name, batch, runtime.GOMAXPROCS(0), perRun(total))
	for _, op := range ops {
		fmt.Fprintf(&b, "  %-24s %4d nodes %8.3f ms %5.1f%%\n", op, count[op], perRun(byOp[op]), 100*byOp[op].Seconds()/total.Seconds())
	}
	slices.SortStableFunc(nodes, func(a, b cpu.NodeTime) int { return cmp.Compare(b.Time, a.Time) })
	for _, n := range nodes[:min(top, len(nodes))] {
		fmt.Fprintf(&b, "  node %-40s %-20s %8.3f ms\n", n.Node, n.Op, perRun(n.Time))
	}
	log.Print(b.String())
	return nil
}

// warmups is the runs before the timed ones: the first plans every node
// and computes the values the input shapes determine, the second takes
// its buffers in the order later runs will (limit.Pool learns it from the
// run before), so that the timed runs are the steady state.
const warmups = 3

// timeCell times the model at the batch size again, after warmups runs.
func timeCell(ctx context.Context, spec modelSpec, model inference.Model, batch int, budget time.Duration) (measurement, error) {
	feeds, err := spec.feeds(batch)
	if err != nil {
		return measurement{}, err
	}
	run := func() error {
		_, err := model.Run(ctx, feeds)
		return err
	}
	for range warmups {
		if err := run(); err != nil {
			return measurement{}, err
		}
	}
	return measure(run, minRuns, budget)
}

// countFLOPs returns flops of one Run of the model at batch size b, from
// the shapes graph.InferShapes reads off the CPU backend's reference run.
func countFLOPs(ctx context.Context, spec modelSpec, model inference.Model, b int) (int64, error) {
	m, ok := model.(*cpu.Model)
	if !ok {
		return 0, fmt.Errorf("the model is a %T, not a *cpu.Model", model)
	}
	feeds, err := spec.feeds(b)
	if err != nil {
		return 0, err
	}
	shapes, err := graph.InferShapes(ctx, m.Graph(), m.RunObserved, feeds)
	if err != nil {
		return 0, err
	}
	return flops(m.Graph(), shapesAt(m.Graph(), shapes, b))
}

// selected returns the models named in list (comma-separated, in the
// manifest's order), or all of them when list is empty.
func (m manifest) selected(list string) ([]modelSpec, error) {
	if list == "" {
		return m.Models, nil
	}
	want := strings.Split(list, ",")
	var out []modelSpec
	for _, spec := range m.Models {
		if slices.Contains(want, spec.Name) {
			out = append(out, spec)
		}
	}
	for _, name := range want {
		if !slices.ContainsFunc(m.Models, func(s modelSpec) bool { return s.Name == name }) {
			var known []string
			for _, s := range m.Models {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("no model %q; the manifest has %s", name, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// positiveInts parses a comma-separated list of distinct positive integers.
func positiveInts(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case err != nil || n <= 0:
			return nil, fmt.Errorf("%q is not a positive integer", s)
		case slices.Contains(out, n):
			return nil, fmt.Errorf("%d is listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadAverage is the 1-minute load average of /proc/loadavg, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// Command streaming is beamml's streaming demo: an unbounded source ticks
// every --interval for --duration, standing in for Pub/Sub; each tick
// becomes --per_tick handwritten digits (examples/classify's held-out
// digits, in turn), stamped with the tick's time, in fixed windows of
// --window. RunInference classifies them with examples/classify's ONNX
// model, batching across bundles (MaxBatchDuration), and each window's
// predictions are written to a file of their own when the window closes.
// Run it from the repository root:
//
//	go run ./examples/streaming                  # prism, in-process
//	go run ./examples/streaming --duration=10s --window=2s --max_batch_duration=250ms
//
// It writes <output>/window-<start>-<end>.txt for each window that had
// ticks (start and end in UTC, 20060102T150405.000Z), one line per record,
// "time,tick,record,digit,predicted,probability", in time order, and
// prints the files and RunInference's batch sizes.
//
// MaxBatchDuration keeps its batches in keyed state with processing-time
// timers: the demo runs on prism (the default) and refuses the Go direct
// runner, which has neither.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	model            = flag.String("model", "examples/classify/digits.onnx", "The ONNX model (local path, or gs:// on Dataflow).")
	digitsFile       = flag.String("digits", "examples/classify/testdata/digits.csv", "The digits the ticks cycle through: examples/classify's CSV.")
	output           = flag.String("output", "out/streaming", "Folder (or gs:// prefix) for one file per window.")
	interval         = flag.Duration("interval", 100*time.Millisecond, "Time between two ticks of the source.")
	duration         = flag.Duration("duration", 5*time.Second, "How long the source ticks; the pipeline ends when it stops.")
	perTick          = flag.Int("per_tick", 4, "Records each tick makes.")
	windowSize       = flag.Duration("window", time.Second, "Size of the fixed windows.")
	maxBatchSize     = flag.Int("max_batch_size", 32, "RunInference's MaxBatchSize: a batch runs when it holds this many records.")
	maxBatchDuration = flag.Duration("max_batch_duration", 500*time.Millisecond, "RunInference's MaxBatchDuration: a batch runs at the latest this long after its first record came.")
	batchShards      = flag.Int("batch_shards", 2, "RunInference's BatchShards: keys the batching spreads records over, each batched on its own.")
)

// Config is the demo pipeline's settings, one per flag, and the time of
// the first tick.
type Config struct {
	Model, Digits, Output string
	Start                 time.Time // the first tick; whole milliseconds
	Duration, Interval    time.Duration
	PerTick               int
	Window                time.Duration
	MaxBatchSize          int
	MaxBatchDuration      time.Duration
	BatchShards           int
}

// timeLayout is the records' times; windowLayout is the windows' bounds
// in the files' names, without the colons some filesystems refuse.
const (
	timeLayout   = "2006-01-02T15:04:05.000Z"
	windowLayout = "20060102T150405.000Z"
)

func init() {
	register.DoFn2x0[int64, func(string, inference.Example)](&tickRecords{})
	register.Emitter2[string, inference.Example]()
	register.Function3x2(formatResult)
	register.DoFn4x1[context.Context, beam.Window, int, func(*string) bool, error](&writeWindow{})
	register.Iter1[string]()
}

// Build adds the demo to s. The source is periodic.Sequence, the transform
// periodic.Impulse runs, used directly because it keeps each tick's
// number: tick i is at c.Start + i·c.Interval, and there are
// c.Duration/c.Interval of them.
func Build(s beam.Scope, c Config) {
	ticks := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(c.Start, c.Start.Add(c.Duration), c.Interval)))
	records := beam.ParDo(s, &tickRecords{Digits: c.Digits, PerTick: c.PerTick}, ticks)
	windowed := beam.WindowInto(s, window.NewFixedWindows(c.Window), records)
	results := runinference.RunInferenceKeyed(s, onnx.Model(c.Model), windowed,
		runinference.MaxBatchSize(c.MaxBatchSize),
		runinference.MaxBatchDuration(c.MaxBatchDuration),
		runinference.BatchShards(c.BatchShards))
	lines := beam.ParDo(s, formatResult, results)
	// One key, so that each window's lines arrive together, once, when the
	// watermark passes the window's end.
	beam.ParDo0(s, &writeWindow{Output: c.Output}, beam.GroupByKey(s, beam.AddFixedKey(s, lines)))
}

// tickRecords turns tick i into PerTick records: record n is the digit of
// row (i·PerTick + n) mod rows of the Digits CSV, keyed "i,n,id" (the
// row's id). The records keep the tick's timestamp.
type tickRecords struct {
	Digits  string // examples/classify's CSV (examples/digits), read at Setup
	PerTick int

	ids      []string
	examples []inference.Example
}

func (f *tickRecords) Setup(ctx context.Context) error {
	fs, err := filesystem.New(ctx, f.Digits)
	if err != nil {
		return err
	}
	defer fs.Close()
	data, err := filesystem.Read(ctx, fs, f.Digits)
	if err != nil {
		return fmt.Errorf("digits %s: %w", f.Digits, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		id, ex, _, err := digits.Parse(line)
		if errors.Is(err, digits.ErrSkip) {
			continue
		}
		if err != nil {
			return fmt.Errorf("digits %s: %w", f.Digits, err)
		}
		f.ids, f.examples = append(f.ids, id), append(f.examples, ex)
	}
	if len(f.ids) == 0 {
		return fmt.Errorf("digits %s: no records", f.Digits)
	}
	return nil
}

func (f *tickRecords) ProcessElement(tick int64, emit func(string, inference.Example)) {
	for n := range f.PerTick {
		row := (int(tick)*f.PerTick + n) % len(f.ids)
		emit(fmt.Sprintf("%d,%d,%s", tick, n, f.ids[row]), f.examples[row])
	}
}

// formatResult writes "time,tick,record,digit,predicted,probability": the
// record's time, its key, the class with the largest logit and its softmax
// probability.
func formatResult(ts beam.EventTime, key string, r runinference.PredictionResult) (string, error) {
	logits, err := r.Output()
	if err != nil {
		return "", err
	}
	probs, err := inference.Softmax(logits)
	if err != nil {
		return "", err
	}
	top, err := inference.TopK(probs, 1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s,%s,%d,%.4f", ts.ToTime().UTC().Format(timeLayout), key, top[0][0].Class, top[0][0].Score), nil
}

// windowFile is the file of the window [start, end) under output.
func windowFile(output string, w window.IntervalWindow) string {
	return strings.TrimSuffix(output, "/") + "/window-" + w.Start.ToTime().UTC().Format(windowLayout) +
		"-" + w.End.ToTime().UTC().Format(windowLayout) + ".txt"
}

// writeWindow writes a window's lines under a header to its windowFile,
// sorted, so in time order (a line starts with its time). The file
// appears whole: it is written under a temporary name beside it, then
// renamed (on gs:// the upload is atomic by itself and the rename is a
// copy). A retried bundle writes the same lines again: the window's one
// pane holds the same records.
type writeWindow struct {
	Output string // folder or gs:// prefix
}

func (f *writeWindow) ProcessElement(ctx context.Context, w beam.Window, _ int, lines func(*string) bool) error {
	iw, ok := w.(window.IntervalWindow)
	if !ok {
		return fmt.Errorf("writeWindow: window %v, want a fixed window", w)
	}
	var all []string
	var l string
	for lines(&l) {
		all = append(all, l)
	}
	slices.Sort(all)
	name := windowFile(f.Output, iw)
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	tmp := fmt.Sprintf("%s.tmp-%016x", name, rand.Uint64())
	data := "time,tick,record,digit,predicted,probability\n" + strings.Join(all, "\n") + "\n"
	if err := filesystem.Write(ctx, fs, tmp, []byte(data)); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := filesystem.Rename(ctx, fs, tmp, name); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, name, err)
	}
	return nil
}

// windowFiles lists the window files under output.
func windowFiles(ctx context.Context, output string) ([]string, error) {
	glob := strings.TrimSuffix(output, "/") + "/window-*.txt"
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	slices.Sort(files)
	return files, err
}

func main() {
	flag.Parse()
	beam.Init()
	// Prism logs every step at INFO. SetupLogging routes the log package
	// through the same handler at "warn": failures go through exit,
	// which writes to stderr itself.
	beamlog.SetupLogging("warn", "text")
	ctx := context.Background()
	runner := *runners.Runner // Beam's --runner flag
	switch runner {
	case "", "prism":
		runner = "prism"
		// Prism (v2.77) splits slow bundles of stateful stages and then
		// runs two bundles of one key on copies of its state, losing
		// buffered records: MaxBatchDuration's doc says so. Turn its
		// splitting off.
		if !slices.Contains(strings.Split(*jobopts.Experiments, ","), "prism_disable_sdf_split") {
			*jobopts.Experiments = strings.Trim(*jobopts.Experiments+",prism_disable_sdf_split", ",")
		}
	case "direct":
		exit("runner direct", errors.New("the Go direct runner has no state or timers, which MaxBatchDuration needs; use prism (the default)"))
	}
	// A run writes the windows it saw: clear the last run's.
	old, err := windowFiles(ctx, *output)
	if err != nil {
		exit("output folder", err)
	}
	for _, name := range old {
		if err := removeFile(ctx, name); err != nil {
			exit("output folder", err)
		}
	}

	p, s := beam.NewPipelineWithRoot()
	Build(s, Config{
		Model: *model, Digits: *digitsFile, Output: *output,
		Start:    time.Now().Truncate(time.Millisecond),
		Duration: *duration, Interval: *interval, PerTick: *perTick, Window: *windowSize,
		MaxBatchSize: *maxBatchSize, MaxBatchDuration: *maxBatchDuration, BatchShards: *batchShards,
	})
	pr, err := beam.Run(ctx, runner, p)
	if err != nil {
		exit("pipeline failed", err)
	}
	files, err := windowFiles(ctx, *output)
	if err != nil {
		exit("output folder", err)
	}
	fmt.Fprintf(os.Stdout, "%d ticks every %v for %v, %d records each, in %v windows: %d window files in %s\n",
		int(*duration / *interval), *interval, *duration, *perTick, *windowSize, len(files), *output)
	for _, f := range files {
		fmt.Fprintln(os.Stdout, " ", f)
	}
	fmt.Fprintf(os.Stdout, "%s (MaxBatchSize %d, MaxBatchDuration %v, BatchShards %d)\n",
		runinference.MetricsSummary(pr), *maxBatchSize, *maxBatchDuration, *batchShards)
}

// removeFile removes a file through Beam's filesystems.
func removeFile(ctx context.Context, name string) error {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	rm, ok := fs.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("remove %s: the filesystem cannot remove files", name)
	}
	return rm.Remove(ctx, name)
}

// exit says why the program stops, in one line on stderr, and exits with
// status 1. It does not use log.Fatal: beamlog's SetupLogging routes the
// log package through its handler at the level it is given, so a
// log.Fatal under "warn" would exit with nothing printed.
func exit(what string, err error) {
	fmt.Fprintf(os.Stderr, "streaming: %s: %s\n", what, runinference.JobErrorCause(err))
	os.Exit(1)
}

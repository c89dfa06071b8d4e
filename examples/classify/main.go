// Command classify is beamml's demo: a Beam pipeline that reads handwritten
// digits from a CSV file with textio, classifies them with RunInference
// running an ONNX model on the CPU, and writes one prediction per record
// plus a one-line summary.
//
// The model is a two-layer perceptron trained with PyTorch on
// scikit-learn's digits and exported with torch.onnx.export
// (train_digits.py). Run it from the repository root:
//
//	go run ./examples/classify                 # prism, in-process
//	go run ./examples/classify --runner=direct
//
// It writes out/classify/predictions.csv (id, predicted digit, label,
// PyTorch's prediction) and prints the accuracy, the agreement with
// PyTorch, and RunInference's metrics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	input  = flag.String("input", "examples/classify/testdata/digits.csv", "CSV of records: id, 64 pixels, label, PyTorch's prediction, PyTorch's 10 logits.")
	model  = flag.String("model", "examples/classify/digits.onnx", "The ONNX model (local path, or gs:// on Dataflow).")
	output = flag.String("output", "out/classify", "Folder for predictions.csv, failures.txt and summary.txt.")
	debug  = flag.Bool("debug", false, "Keep the runner's INFO logs.")
)

// Tolerance of our logits against PyTorch's, per element: the float32
// standard of the project (|ours - torch| <= atol + rtol·|torch|).
const (
	rtol = 1e-4
	atol = 1e-5
)

func init() {
	register.Function3x0(parseRecord)
	register.Emitter1[string]()
	register.Emitter2[string, inference.Example]()
	register.Function2x1(formatPrediction)
	register.Function2x1(scoreOne)
	register.Function2x1(addScores)
	register.Function1x1(formatSummary)
	register.Function2x1(formatFailure)
}

// Build adds the demo to s: records from input, predictions of the ONNX
// model at modelURI into out/predictions.csv, records that did not parse or
// failed inference into out/failures.txt, and the summary line into
// out/summary.txt.
func Build(s beam.Scope, modelURI, input, out string) {
	records, rejects := beam.ParDo2(s, parseRecord, textio.Read(s, input))
	preds, failures := runinference.RunInferenceKeyedWithFailures(s, onnx.Model(modelURI), records, runinference.MaxBatchSize(64))

	textio.Write(s, filepath.Join(out, "predictions.csv"), beam.ParDo(s, formatPrediction, preds))
	textio.Write(s, filepath.Join(out, "failures.txt"), beam.Flatten(s, rejects, beam.ParDo(s, formatFailure, failures)))
	summary := beam.ParDo(s, formatSummary, beam.Combine(s, addScores, beam.ParDo(s, scoreOne, preds)))
	textio.Write(s, filepath.Join(out, "summary.txt"), summary)
}

// parseRecord turns "id,p0..p63,label,torch_prediction,logit0..logit9" into
// the example {pixels: [p0..p63]} keyed by "id,label,torch_prediction,
// logit0..logit9". The header and blank lines are skipped; a line that does
// not parse goes to reject with the reason, so no record is lost silently.
func parseRecord(line string, emit func(string, inference.Example), reject func(string)) {
	id, ex, rest, err := digits.Parse(line)
	switch {
	case errors.Is(err, digits.ErrSkip):
	case err != nil:
		reject(err.Error())
	case len(rest) != 2+10:
		reject(fmt.Sprintf("record %s: %d fields after the pixels, want 12 (label, PyTorch's prediction, 10 logits)", id, len(rest)))
	default:
		emit(id+","+strings.Join(rest, ","), ex)
	}
}

func logits(r runinference.PredictionResult) []float32 {
	l, err := inference.Data[float32](r.Outputs.Get("logits"))
	if err != nil {
		return nil
	}
	return l
}

// predicted is the digit whose logit is largest (inference.ArgMax), -1
// without logits.
func predicted(r runinference.PredictionResult) int {
	label, err := inference.ArgMax(r.Outputs.Get("logits"))
	if err != nil || len(label) != 1 {
		return -1
	}
	return label[0]
}

// formatPrediction writes "id,predicted,label,torch_prediction".
func formatPrediction(key string, r runinference.PredictionResult) string {
	f := strings.Split(key, ",")
	return fmt.Sprintf("%s,%d,%s,%s", f[0], predicted(r), f[1], f[2])
}

// score counts correct predictions and agreement with PyTorch.
type score struct {
	Total, Correct, SameClass, WithinTolerance int
	MaxDiff                                    float64
}

func scoreOne(key string, r runinference.PredictionResult) score {
	f := strings.Split(key, ",")
	ours := logits(r)
	pred := strconv.Itoa(predicted(r))
	s := score{Total: 1}
	if pred == f[1] {
		s.Correct = 1
	}
	if pred == f[2] {
		s.SameClass = 1
	}
	within := len(ours) == len(f)-3
	for i, v := range f[3:] {
		torch, err := strconv.ParseFloat(v, 64)
		if err != nil || i >= len(ours) {
			within = false
			continue
		}
		d := math.Abs(float64(ours[i]) - torch)
		s.MaxDiff = max(s.MaxDiff, d)
		if d > atol+rtol*math.Abs(torch) {
			within = false
		}
	}
	if within {
		s.WithinTolerance = 1
	}
	return s
}

func addScores(a, b score) score {
	return score{a.Total + b.Total, a.Correct + b.Correct, a.SameClass + b.SameClass,
		a.WithinTolerance + b.WithinTolerance, max(a.MaxDiff, b.MaxDiff)}
}

func formatSummary(s score) string {
	return fmt.Sprintf("classified %d digits: accuracy %.4f (%d/%d), same digit as PyTorch on %d/%d, logits within rtol %g/atol %g of PyTorch's on %d/%d (max difference %.2g)",
		s.Total, float64(s.Correct)/float64(max(s.Total, 1)), s.Correct, s.Total, s.SameClass, s.Total,
		rtol, atol, s.WithinTolerance, s.Total, s.MaxDiff)
}

func formatFailure(key string, f runinference.Failure) string {
	id, _, _ := strings.Cut(key, ",")
	return "record " + id + ": " + f.String()
}

func main() {
	flag.Parse()
	beam.Init()
	if !*debug {
		// Prism logs every job step at INFO; the demo prints one line.
		// SetupLogging routes the log package through the same handler at
		// "warn", so a log.Fatal would exit without a word: failures go
		// through exit, which writes to stderr itself.
		beamlog.SetupLogging("warn", "text")
	}
	if err := os.MkdirAll(*output, 0o755); err != nil {
		exit("output folder", err)
	}
	for _, name := range []string{"predictions.csv", "failures.txt", "summary.txt"} {
		// A run writes only the files it has lines for: clear the last run's.
		if err := os.Remove(filepath.Join(*output, name)); err != nil && !os.IsNotExist(err) {
			exit("output folder", err)
		}
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, *model, *input, *output)
	runner := *runners.Runner // Beam's --runner flag
	if runner == "" {
		runner = "prism"
	}
	pr, err := beam.Run(context.Background(), runner, p)
	if err != nil {
		exit("pipeline failed", err)
	}
	summary, err := os.ReadFile(filepath.Join(*output, "summary.txt"))
	if err != nil {
		exit("no summary", fmt.Errorf("every record failed; see %s", filepath.Join(*output, "failures.txt")))
	}
	fmt.Printf("%s\n%s; predictions in %s\n", strings.TrimSpace(string(summary)), runinference.MetricsSummary(pr),
		filepath.Join(*output, "predictions.csv"))
}

// exit says why the program stops, in one line on stderr, and exits with
// status 1. It does not use log.Fatal: beamlog's SetupLogging routes the
// log package through its handler at the level it is given, so a
// log.Fatal under "warn" would exit with nothing printed.
func exit(what string, err error) {
	fmt.Fprintf(os.Stderr, "classify: %s: %s\n", what, runinference.JobErrorCause(err))
	os.Exit(1)
}

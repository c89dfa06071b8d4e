// Command tabular scores customer rows with a classical model: a
// gradient-boosted churn classifier trained in scikit-learn on string and
// numeric columns and exported to ONNX as skl2onnx writes it (one input
// per column, OneHotEncoder, Imputer, TreeEnsembleClassifier, ZipMap;
// scripts/export_tabular_demo.py). Run it from the repository root:
//
//	go run ./examples/tabular                 # prism, in-process
//	go run ./examples/tabular --runner=direct
//
// It reads examples/tabular/testdata/customers.csv, keyed by id, and
// writes out/tabular/predictions.csv (id,label,probability: the predicted
// label and the model's probability of it), failures.txt (rows that do not
// parse, and rows the model fails on) and summary.txt, which compares every
// prediction with the one scikit-learn made for the same row.
//
// The columns follow the model's own rules: a plan or country it never saw
// is all zeros in the one-hot encoding (handle_unknown="ignore"), an empty
// number is missing (NaN) and takes the training median (SimpleImputer).
// A row with the wrong number of fields or a number that does not parse
// goes to failures, naming the row and the field.
package main

import (
	"context"
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
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	input  = flag.String("input", "examples/tabular/testdata/customers.csv", "CSV of customers: id,plan,country,age,monthly_spend,tenure_months[,sklearn_label,sklearn_probability].")
	model  = flag.String("model", "examples/tabular/churn.onnx", "The ONNX model (local path, or gs:// on Dataflow).")
	output = flag.String("output", "out/tabular", "Folder for predictions.csv, failures.txt and summary.txt.")
	debug  = flag.Bool("debug", false, "Keep the runner's INFO logs.")
)

// How close our probability of churn must be to scikit-learn's: the
// project's float32 standard.
const (
	rtol = 1e-4
	atol = 1e-5
)

// The model's inputs, one per column, as skl2onnx names them.
var (
	stringColumns  = []string{"plan", "country"}
	numericColumns = []string{"age", "monthly_spend", "tenure_months"}
)

func init() {
	register.Function3x0(parseCustomer)
	register.Emitter1[string]()
	register.Emitter2[string, inference.Example]()
	register.DoFn3x1[string, runinference.PredictionResult, func(prediction), error](&labelFn{})
	register.Emitter1[prediction]()
	register.Function1x1(formatPrediction)
	register.Function1x1(scoreOne)
	register.Function2x1(addScores)
	register.Function1x1(formatSummary)
	register.Function2x1(formatFailure)
}

// Build adds the pipeline to s: customers from input, scored by the model
// at modelURI, predictions into out/predictions.csv, rows that did not
// parse or failed inference into out/failures.txt, the comparison with
// scikit-learn into out/summary.txt.
func Build(s beam.Scope, modelURI, input, out string) {
	rows, rejects := beam.ParDo2(s, parseCustomer, textio.Read(s, input))
	results, failures := runinference.RunInferenceKeyedWithFailures(s, onnx.Model(modelURI), rows, runinference.MaxBatchSize(256))
	preds := beam.ParDo(s, &labelFn{Model: modelURI}, results)

	textio.Write(s, filepath.Join(out, "predictions.csv"), beam.ParDo(s, formatPrediction, preds))
	textio.Write(s, filepath.Join(out, "failures.txt"), beam.Flatten(s, rejects, beam.ParDo(s, formatFailure, failures)))
	summary := beam.ParDo(s, formatSummary, beam.Combine(s, addScores, beam.ParDo(s, scoreOne, preds)))
	textio.Write(s, filepath.Join(out, "summary.txt"), summary)
}

// parseCustomer turns "id,plan,country,age,monthly_spend,tenure_months"
// and scikit-learn's label and probability of churn, when the file has
// them, into the example of the model's inputs keyed by
// "id,sklearn_label,sklearn_probability". The header is skipped; a line
// that does not parse goes to reject, naming the row and the field.
func parseCustomer(line string, emit func(string, inference.Example), reject func(string)) {
	f := strings.Split(strings.TrimSpace(line), ",")
	switch {
	case line == "" || f[0] == "id":
		return
	case len(f) != 6 && len(f) != 8:
		reject(fmt.Sprintf("row %s: %d fields, want 6 (id,plan,country,age,monthly_spend,tenure_months) or 8 (and scikit-learn's label and probability)", f[0], len(f)))
		return
	}
	ex := inference.Example{}
	for i, name := range stringColumns {
		ex[name] = inference.Row(f[1+i])
	}
	for i, name := range numericColumns {
		v, err := number(f[3+i])
		if err != nil {
			reject(fmt.Sprintf("row %s: %s %q is not a number", f[0], name, f[3+i]))
			return
		}
		ex[name] = inference.Row(v)
	}
	key := f[0] + ",,"
	if len(f) == 8 {
		key = strings.Join([]string{f[0], f[6], f[7]}, ",")
	}
	emit(key, ex)
}

// number parses a CSV number: empty is missing, NaN, which the model
// imputes.
func number(s string) (float32, error) {
	if s == "" {
		return float32(math.NaN()), nil
	}
	v, err := strconv.ParseFloat(s, 32)
	return float32(v), err
}

// prediction is one row's result: the model's label and probability of
// it, its probability of churn, and scikit-learn's for the same row.
type prediction struct {
	ID, Label                  string
	Probability, Churn         float32
	SklearnLabel, SklearnChurn string
}

// labelFn reads each result's label and its probability by class label:
// the class labels of the model's ZipMap output, read once in Setup.
type labelFn struct {
	Model  string
	labels []string
}

func (f *labelFn) Setup(ctx context.Context) error {
	var err error
	f.labels, err = runinference.OutputLabels(ctx, onnx.Model(f.Model), "output_probability")
	return err
}

func (f *labelFn) ProcessElement(key string, r runinference.PredictionResult, emit func(prediction)) error {
	label, err := runinference.OutputData[string](r, "output_label")
	if err != nil {
		return err
	}
	p, err := runinference.ScoresByLabel(r, "output_probability", f.labels)
	if err != nil {
		return err
	}
	k := strings.Split(key, ",")
	emit(prediction{ID: k[0], Label: label[0], Probability: p[label[0]], Churn: p["churn"], SklearnLabel: k[1], SklearnChurn: k[2]})
	return nil
}

// formatPrediction writes "id,label,probability".
func formatPrediction(p prediction) string {
	return fmt.Sprintf("%s,%s,%.6f", p.ID, p.Label, p.Probability)
}

// score counts the rows and how many agree with scikit-learn.
type score struct {
	Total, Compared, SameLabel, WithinTolerance int
	MaxDiff                                     float64
}

func scoreOne(p prediction) score {
	s := score{Total: 1}
	theirs, err := strconv.ParseFloat(p.SklearnChurn, 64)
	if p.SklearnLabel == "" || err != nil {
		return s
	}
	s.Compared = 1
	if p.Label == p.SklearnLabel {
		s.SameLabel = 1
	}
	d := math.Abs(float64(p.Churn) - theirs)
	s.MaxDiff = d
	if d <= atol+rtol*math.Abs(theirs) {
		s.WithinTolerance = 1
	}
	return s
}

func addScores(a, b score) score {
	return score{a.Total + b.Total, a.Compared + b.Compared, a.SameLabel + b.SameLabel,
		a.WithinTolerance + b.WithinTolerance, max(a.MaxDiff, b.MaxDiff)}
}

func formatSummary(s score) string {
	return fmt.Sprintf("scored %d customers: same label as scikit-learn on %d/%d, probability of churn within rtol %g/atol %g of scikit-learn's on %d/%d (max difference %.2g)",
		s.Total, s.SameLabel, s.Compared, rtol, atol, s.WithinTolerance, s.Compared, s.MaxDiff)
}

func formatFailure(key string, f runinference.Failure) string {
	id, _, _ := strings.Cut(key, ",")
	return "row " + id + ": " + f.String()
}

func main() {
	flag.Parse()
	beam.Init()
	if !*debug {
		beamlog.SetupLogging("warn", "text") // prism logs every job step at INFO
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
		exit("no summary", fmt.Errorf("every row failed; see %s", filepath.Join(*output, "failures.txt")))
	}
	fmt.Printf("%s\n%s; predictions in %s, failures in %s\n", strings.TrimSpace(string(summary)), runinference.MetricsSummary(pr),
		filepath.Join(*output, "predictions.csv"), filepath.Join(*output, "failures.txt"))
}

// exit says why the program stops, in one line on stderr, and exits with
// status 1 (not log.Fatal: under beamlog's "warn" it would print nothing).
func exit(what string, err error) {
	fmt.Fprintf(os.Stderr, "tabular: %s: %s\n", what, runinference.JobErrorCause(err))
	os.Exit(1)
}

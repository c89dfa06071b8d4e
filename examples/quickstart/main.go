// Command quickstart is the README's quick start as a program: it reads
// rows "id,v0,v1,…" from a CSV file, scores each with an ONNX classifier
// through RunInferenceKeyedWithFailures, and writes "id,label,probability"
// for each row it scored and "id: kind: message" for each it could not,
// so that every row ends up in one file or the other. Run it from the
// repository root on the demo's digits model:
//
//	go run ./examples/quickstart --model examples/classify/digits.onnx --input_name pixels \
//		--input examples/quickstart/testdata/rows.csv --output out/quickstart
package main

import (
	"context"
	"flag"
	"fmt"
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
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	model     = flag.String("model", "examples/classify/digits.onnx", "The ONNX classifier: a local path, or gs:// on Dataflow.")
	inputName = flag.String("input_name", "pixels", "The model's input name (go run ./cmd/beamml-inspect MODEL lists them).")
	input     = flag.String("input", "examples/quickstart/testdata/rows.csv", "CSV rows: id, then the model's input values.")
	output    = flag.String("output", "out/quickstart", "Folder for labels.csv and failures.txt.")
)

// Functions a pipeline runs on the workers are registered by name: the
// worker binary finds them so.
func init() {
	register.DoFn2x1[string, func(string, inference.Example), error](&parseRow{})
	register.Emitter2[string, inference.Example]()
	register.Function2x2(formatLabel)
	register.Function2x1(formatFailure)
}

// Build is the pipeline, as the README's quick start shows it.
func Build(s beam.Scope, modelURI, inputName, input, out string) {
	lines := textio.Read(s, input)
	rows := beam.ParDo(s, &parseRow{Input: inputName}, lines)
	// rows: PCollection<KV<string, inference.Example>>, each example keyed by its row's id.
	spec := onnx.Model(modelURI)
	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, rows,
		runinference.MaxBatchSize(64), runinference.Device(inference.Auto))
	// results:  PCollection<KV<string, runinference.PredictionResult>>
	// failures: PCollection<KV<string, runinference.Failure>>, nothing lost
	textio.Write(s, filepath.Join(out, "labels.csv"), beam.ParDo(s, formatLabel, results))
	textio.Write(s, filepath.Join(out, "failures.txt"), beam.ParDo(s, formatFailure, failures))
}

// parseRow turns "id,v0,v1,…" into the model's example, keyed by id: one
// row of float32 values under the model's input name. The header is
// skipped; a value that is not a number fails the bundle (a pipeline that
// must keep such rows sends them to an output of their own, as
// examples/classify does).
type parseRow struct {
	Input string // the model's input name
}

func (f *parseRow) ProcessElement(line string, emit func(string, inference.Example)) error {
	id, rest, _ := strings.Cut(strings.TrimSpace(line), ",")
	if id == "" || id == "id" {
		return nil
	}
	var values []float32
	for _, f := range strings.Split(rest, ",") {
		v, err := strconv.ParseFloat(f, 32)
		if err != nil {
			return fmt.Errorf("row %s: %v", id, err)
		}
		values = append(values, float32(v))
	}
	emit(id, inference.Example{f.Input: inference.Row(values...)})
	return nil
}

// formatLabel writes "id,label,probability": the class with the largest
// score of the model's one output, and its softmax probability.
func formatLabel(id string, r runinference.PredictionResult) (string, error) {
	scores, err := r.Output()
	if err != nil {
		return "", err
	}
	probs, err := inference.Softmax(scores)
	if err != nil {
		return "", err
	}
	top, err := inference.TopK(probs, 1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s,%d,%.4f", id, top[0][0].Class, top[0][0].Score), nil
}

// formatFailure writes "id: kind: message"; f.Example holds the row.
func formatFailure(id string, f runinference.Failure) string {
	return fmt.Sprintf("%s: %s: %s", id, f.Kind, f.Err)
}

func main() {
	flag.Parse()
	beam.Init()
	// Prism logs every step at INFO. SetupLogging routes the log package
	// through the same handler at "warn": failures go through exit,
	// which writes to stderr itself.
	beamlog.SetupLogging("warn", "text")
	p, s := beam.NewPipelineWithRoot()
	Build(s, *model, *inputName, *input, *output)
	runner := *runners.Runner
	if runner == "" {
		runner = "prism"
	}
	if _, err := beam.Run(context.Background(), runner, p); err != nil {
		exit("pipeline failed", err)
	}
	fmt.Fprintf(os.Stdout, "labels in %s, failures in %s\n", filepath.Join(*output, "labels.csv"), filepath.Join(*output, "failures.txt"))
}

// exit says why the program stops, in one line on stderr, and exits with
// status 1. It does not use log.Fatal: beamlog's SetupLogging routes the
// log package through its handler at the level it is given, so a
// log.Fatal under "warn" would exit with nothing printed.
func exit(what string, err error) {
	fmt.Fprintf(os.Stderr, "quickstart: %s: %s\n", what, runinference.JobErrorCause(err))
	os.Exit(1)
}

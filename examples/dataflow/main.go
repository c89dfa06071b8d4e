// Command dataflow is the launcher of a GPU RunInference job on Google
// Cloud Dataflow: it classifies the digits of examples/classify with the
// ONNX model and writes one line per record ("id,digit"). It runs on prism
// by default, so the same program is tested locally first; with
// --runner=dataflow it checks the GPU options (beam/dataflowgpu) before
// anything is submitted and renders them to Dataflow's flags.
//
//	go run ./examples/dataflow                                    # prism, CPU
//	go run ./examples/dataflow --runner=dataflow \
//	    --project=PROJECT --region=REGION --staging_location=gs://BUCKET/staging \
//	    --input=gs://BUCKET/digits.csv --model=gs://BUCKET/digits.onnx --output=gs://BUCKET/out/predictions \
//	    --gpu_type=nvidia-l4 --gpu_machine_type=g2-standard-8 --gpu_mps \
//	    --gpu_container_image=REGION-docker.pkg.dev/PROJECT/REPO/beamml-gpu:v1 \
//	    --gpu_worker_binary=./worker                              # make worker
//
// Add --right_fit to give the GPU to the RunInference steps only (the
// dataflowgpu runner; Dataflow's right fitting), and --dry_run to print the
// job instead of submitting it.
//
// The worker binary is this program built with CGO_ENABLED=1 -tags cuda
// (make worker, or the container's /opt/beamml/worker): it registers the
// GPU backend, so Device(Auto) runs the model on the worker's GPU.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/beamml/beamml/beam/dataflowgpu"
	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	input    = flag.String("input", "examples/classify/testdata/digits.csv", "CSV of records: id, 64 pixels, then anything.")
	model    = flag.String("model", "examples/classify/digits.onnx", "The ONNX model: a local path, or gs:// on Dataflow.")
	output   = flag.String("output", "out/dataflow/predictions.csv", "Where the predictions go (textio): a local path, or gs:// on Dataflow.")
	rightFit = flag.Bool("right_fit", false, "On Dataflow, give the GPU to the RunInference steps only (right fitting).")
	gpu      = dataflowgpu.RegisterFlags(flag.CommandLine)
)

func init() {
	register.Function3x0(parseRecord)
	register.Emitter1[string]()
	register.Emitter2[string, inference.Example]()
	register.Function2x1(formatPrediction)
	register.Function2x1(formatFailure)
}

// parseRecord turns "id,p0..p63,…" into {pixels: [p0..p63]} keyed by id;
// the header and blank lines are skipped, and a bad line goes to reject.
func parseRecord(line string, emit func(string, inference.Example), reject func(string)) {
	id, ex, _, err := digits.Parse(line)
	switch {
	case errors.Is(err, digits.ErrSkip):
	case err != nil:
		reject(err.Error())
	default:
		emit(id, ex)
	}
}

// formatPrediction writes "id,digit" (the largest logit).
func formatPrediction(id string, r runinference.PredictionResult) string {
	label, err := inference.ArgMax(r.Outputs.Get("logits"))
	if err != nil || len(label) != 1 {
		return fmt.Sprintf("%s,error: no logits", id)
	}
	return fmt.Sprintf("%s,%d", id, label[0])
}

// formatFailure writes "id: stage: error".
func formatFailure(id string, f runinference.Failure) string {
	return fmt.Sprintf("%s: %s: %s", id, f.Stage, f.Err)
}

// Build adds the pipeline to s.
func Build(s beam.Scope, modelURI, in, out string) {
	records, rejects := beam.ParDo2(s, parseRecord, textio.Read(s, in))
	preds, failures := runinference.RunInferenceKeyedWithFailures(s, onnx.Model(modelURI), records,
		runinference.Device(inference.Auto), runinference.MaxBatchSize(64))
	textio.Write(s, out, beam.ParDo(s, formatPrediction, preds))
	textio.Write(s, out+".failures", beam.Flatten(s, rejects,
		beam.ParDo(s, formatFailure, failures)))
}

// configure picks the runner and, on Dataflow, sets the GPU flags from the
// --gpu_* options, failing before submission when they are invalid.
func configure() (string, error) {
	runner := *runners.Runner
	if runner == "" {
		runner = "prism"
	}
	onDataflow := runner == "dataflow" || runner == "DataflowRunner" || runner == dataflowgpu.RunnerName
	switch {
	case gpu.Accelerator == "":
		if *rightFit {
			return "", fmt.Errorf("--right_fit needs the GPU: set --gpu_type and the other --gpu_* flags")
		}
	case !onDataflow:
		log.Printf("dataflow: --gpu_* options apply on Dataflow only; running on %s", runner)
	case *rightFit:
		if err := gpu.ApplyRightFit(); err != nil {
			return "", err
		}
		runner = dataflowgpu.RunnerName
	default:
		if err := gpu.Apply(); err != nil {
			return "", err
		}
	}
	return runner, nil
}

func main() {
	flag.Parse()
	runner, err := configure()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dataflow: %v\n", err)
		os.Exit(2)
	}
	beam.Init()
	if runner == "prism" || runner == "direct" {
		// The local runners log every step at INFO. SetupLogging routes the
		// log package through the same handler at "warn": a failure goes
		// through exit, which writes to stderr itself.
		beamlog.SetupLogging("warn", "text")
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, *model, *input, *output)
	if _, err := beam.Run(context.Background(), runner, p); err != nil {
		exit("pipeline failed", err)
	}
	if !strings.Contains(flag.Lookup("dry_run").Value.String(), "true") {
		fmt.Printf("predictions in %s\n", *output)
	}
}

// exit says why the program stops, in one line on stderr, and exits with
// status 1. It does not use log.Fatal: beamlog's SetupLogging routes the
// log package through its handler at the level it is given, so a
// log.Fatal under "warn" would exit with nothing printed.
func exit(what string, err error) {
	fmt.Fprintf(os.Stderr, "dataflow: %s: %s\n", what, runinference.JobErrorCause(err))
	os.Exit(1)
}

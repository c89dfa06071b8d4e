// Command pipeline is the program of the end-to-end worker-path test
// (testing/e2e): it classifies handwritten digits with RunInference and the
// ONNX model examples/classify/digits.onnx, and records which process did
// the work. Like a Dataflow job, it is built twice: as the launcher, which
// submits the job, and with CGO_ENABLED=0 as the worker binary, which
// Beam's boot binary fetches from the runner and runs.
//
//	pipeline --runner=universal --endpoint=localhost:PORT \
//		--environment_type=PROCESS --environment_config='{"command":"/path/to/boot"}' \
//		--worker_binary=/path/to/worker \
//		--input=digits.csv --model=digits.onnx --output=DIR
//
// Without --runner it runs on prism in-process (go run ./testing/e2e/pipeline
// from the repository root). It writes two files into DIR:
//
//   - predictions.csv: "id,predicted,label,torch_prediction,model_instance",
//     one line per record;
//   - workers.txt: one JSON object per worker process that ran inference
//     (workerReport): its pid, executable, the sha256 of the executable,
//     the build marker set with -ldflags -X main.build=…, its CGO_ENABLED
//     build setting, how many predictions it made, and the process-wide
//     model cache's loads and hits.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/examples/digits"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

var (
	input  = flag.String("input", "examples/classify/testdata/digits.csv", "CSV of records: id, 64 pixels, label, PyTorch's prediction, PyTorch's 10 logits.")
	model  = flag.String("model", "examples/classify/digits.onnx", "The ONNX model.")
	output = flag.String("output", "out/e2e", "Folder for predictions.csv and workers.txt.")
)

// build tells the builds of this program apart: the test links a different
// value into the launcher and into the worker with -ldflags -X main.build=….
var build = "unset"

func init() {
	register.Function3x0(parseRecord)
	register.Emitter2[string, inference.Example]()
	register.Function2x1(formatPrediction)
	register.Function3x2(reportWorker)
	register.Function2x1(mergeReports)
	register.Function2x2(formatReport)
}

// Build adds the pipeline to s: the records of input, classified by the
// ONNX model at modelURI (records with even ids by one RunInference, odd
// ones by another), into out/predictions.csv, and one workerReport per
// worker process into out/workers.txt.
func Build(s beam.Scope, modelURI, input, out string) {
	// Two RunInference transforms of one model: their DoFns are set up
	// separately, and must share one load per worker process.
	even, odd := beam.ParDo2(s, parseRecord, textio.Read(s, input))
	spec := onnx.Model(modelURI)
	preds := beam.Flatten(s, runinference.RunInferenceKeyed(s, spec, even), runinference.RunInferenceKeyed(s, spec, odd))
	textio.Write(s, filepath.Join(out, "predictions.csv"), beam.ParDo(s, formatPrediction, preds))
	reports := beam.CombinePerKey(s, mergeReports, beam.ParDo(s, reportWorker, preds))
	textio.Write(s, filepath.Join(out, "workers.txt"), beam.ParDo(s, formatReport, reports))
}

// parseRecord turns "id,p0..p63,label,torch_prediction,logit0..logit9"
// into {pixels: [p0..p63]} keyed by "id,label,torch_prediction", emitted to
// even or odd by the id's parity. The header is skipped; a record that does
// not parse is dropped, and the test, which counts predictions, notices.
func parseRecord(line string, even, odd func(string, inference.Example)) {
	id, ex, rest, err := digits.Parse(line)
	if err != nil || len(rest) != 2+10 {
		return
	}
	emit := even
	if n, err := strconv.Atoi(id); err == nil && n%2 == 1 {
		emit = odd
	}
	emit(strings.Join([]string{id, rest[0], rest[1]}, ","), ex)
}

// formatPrediction writes "id,predicted,label,torch_prediction,model_instance".
func formatPrediction(key string, r runinference.PredictionResult) string {
	best := -1
	if label, err := inference.ArgMax(r.Outputs.Get("logits")); err == nil && len(label) == 1 {
		best = label[0]
	}
	id, rest, _ := strings.Cut(key, ",")
	return fmt.Sprintf("%s,%d,%s,%s", id, best, rest, r.ModelID.Instance)
}

// workerReport is what one worker process did. Identity fields are the
// process's; Predictions add up, Loads and Hits are the largest values of
// the process-wide model cache's counters seen.
type workerReport struct {
	PID            int
	Exe            string
	SHA256         string
	Build          string
	CGO            string // the CGO_ENABLED build setting
	Predictions    int64
	Loads, Hits    int64
	ModelInstances []string
}

var (
	selfOnce sync.Once
	self     workerReport
)

// identify fills self once per process, and logs it: prism re-logs worker
// logs as "[SDK] …", so the test finds the line in prism's output too.
func identify(ctx context.Context) workerReport {
	selfOnce.Do(func() {
		self = workerReport{PID: os.Getpid(), Build: build}
		self.Exe, _ = os.Executable()
		if f, err := os.Open(self.Exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				self.SHA256 = hex.EncodeToString(h.Sum(nil))
			}
			f.Close()
		}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "CGO_ENABLED" {
					self.CGO = s.Value
				}
			}
		}
		beamlog.Infof(ctx, "beamml e2e worker: pid=%d build=%s cgo=%s exe=%s sha256=%s", self.PID, self.Build, self.CGO, self.Exe, self.SHA256)
	})
	return self
}

// reportWorker keys each prediction by the process that handles it, with
// the cache's counters as they stand.
func reportWorker(ctx context.Context, _ string, r runinference.PredictionResult) (string, workerReport) {
	rep := identify(ctx)
	st := inference.Shared().Stats()
	rep.Predictions, rep.Loads, rep.Hits = 1, st.Loads, st.Hits
	rep.ModelInstances = []string{r.ModelID.Instance}
	return fmt.Sprintf("%d %s", rep.PID, rep.Exe), rep
}

func mergeReports(a, b workerReport) workerReport {
	a.Predictions += b.Predictions
	a.Loads, a.Hits = max(a.Loads, b.Loads), max(a.Hits, b.Hits)
	for _, id := range b.ModelInstances {
		if !slices.Contains(a.ModelInstances, id) {
			a.ModelInstances = append(a.ModelInstances, id)
		}
	}
	return a
}

func formatReport(_ string, r workerReport) (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

func main() {
	flag.Parse()
	beam.Init() // a worker (--worker=true, as boot runs it) serves the runner here and exits
	log.Printf("pipeline launcher: pid=%d build=%s", os.Getpid(), build)
	if err := os.MkdirAll(*output, 0o755); err != nil {
		log.Fatalf("pipeline: %v", err)
	}
	p, s := beam.NewPipelineWithRoot()
	Build(s, *model, *input, *output)
	runner := *runners.Runner
	if runner == "" {
		runner = "prism"
	}
	if _, err := beam.Run(context.Background(), runner, p); err != nil {
		log.Fatalf("pipeline: %v", err)
	}
}

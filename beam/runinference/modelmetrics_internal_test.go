package runinference

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
)

// metricsFor names a model's metrics as Beam Python's RunInference does:
// "<model id>_<metric>", in Namespace, one set per id, each counting what
// its method reports and nothing else.
func TestModelMetricsNames(t *testing.T) {
	const id = "gs://bucket/models/resnet50.onnx"
	m := metricsFor(id)
	if metricsFor(id) != m {
		t.Error("metricsFor built a second set for the same id")
	}
	if metricsFor(id+"2") == m {
		t.Error("metricsFor gave another id's metrics")
	}

	ctx := bundleContext()
	m.loaded(ctx, 1500*time.Millisecond+999*time.Microsecond, 24)
	m.batchFailed(ctx)
	m.ran(ctx, 250*time.Microsecond)
	m.ran(ctx, 750*time.Microsecond)
	m.inferred(ctx, 3)
	m.inferred(ctx, 5)

	var got []string
	q := metrics.ResultsExtractor(ctx).AllMetrics()
	for _, c := range q.Counters() {
		got = append(got, fmt.Sprintf("%s %s counter %d", c.Namespace(), c.Name(), c.Result()))
	}
	for _, d := range q.Distributions() {
		v := d.Result()
		got = append(got, fmt.Sprintf("%s %s distribution count %d sum %d min %d max %d", d.Namespace(), d.Name(), v.Count, v.Sum, v.Min, v.Max))
	}
	for _, g := range q.Gauges() {
		got = append(got, fmt.Sprintf("%s %s gauge %d", g.Namespace(), g.Name(), g.Result().Value))
	}
	sort.Strings(got)
	want := []string{
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_failed_batches_counter counter 1",
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_inference_batch_latency_micro_secs distribution count 2 sum 1000 min 250 max 750",
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_inference_request_batch_size distribution count 2 sum 8 min 3 max 5",
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_load_model_latency_milli_secs distribution count 1 sum 1500 min 1500 max 1500",
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_model_byte_size distribution count 1 sum 24 min 24 max 24",
		"BeamML_RunInference gs://bucket/models/resnet50.onnx_num_inferences counter 8",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The package doc is the one list of the metrics (issue 31): every metric
// the package declares, counters, distributions and gauges, unlabelled and
// per model, is named in it, or in GPUNamespace's doc for the GPU's.
func TestPackageDocListsEveryMetric(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var doc string
	declared := map[string]string{} // metric → file
	metric := regexp.MustCompile(`(?:beam\.New(?:Counter|Distribution|Gauge)\((?:Namespace|GPUNamespace), |modelMetricName\(id, |newGPUMetric\(\w+, )"([a-z_]+)"`)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Doc != nil && strings.Contains(g.Doc.Text(), "GPUNamespace is") {
				doc += g.Doc.Text()
			}
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metric.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = name
		}
	}
	if len(declared) < 12 {
		t.Fatalf("found %d metrics in the package's sources, want at least 12: is the pattern right? %v", len(declared), declared)
	}
	for m, file := range declared {
		if !strings.Contains(doc, m) {
			t.Errorf("metric %s (%s) is not named in the package doc", m, file)
		}
	}
}

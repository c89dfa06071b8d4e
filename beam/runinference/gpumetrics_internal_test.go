package runinference

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/gpuinfo"
)

func init() { register.DoFn2x0[context.Context, int](&gpuProbeFn{}) }

// gpuProbeFn calls reportGPU from each of its bundle methods, where a
// RunInference DoFn would.
type gpuProbeFn struct{}

func (*gpuProbeFn) StartBundle(ctx context.Context)           { reportGPU(ctx) }
func (*gpuProbeFn) ProcessElement(ctx context.Context, _ int) { reportGPU(ctx) }
func (*gpuProbeFn) FinishBundle(ctx context.Context)          { reportGPU(ctx) }

// fakeGPUs is a gpuSampler that counts its samples; an NVML fake one level
// up (gpuinfo's tests fake NVML itself).
type fakeGPUs struct {
	usage   []gpuinfo.Usage
	err     error
	samples atomic.Int64
}

func (f *fakeGPUs) Sample() ([]gpuinfo.Usage, error) {
	f.samples.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return f.usage, nil
}

// twoGPUs: the first with everything known, the second without
// utilisation and without this process.
func twoGPUs() *fakeGPUs {
	return &fakeGPUs{usage: []gpuinfo.Usage{
		{Index: 0, UUID: "GPU-a", MemoryUsed: 6 << 30, MemoryFree: 10 << 30, MemoryTotal: 16 << 30, Utilization: 42, ProcessMemory: 3 << 30},
		{Index: 1, UUID: "GPU-b", MemoryUsed: 1 << 30, MemoryFree: 23 << 30, MemoryTotal: 24 << 30, Utilization: -1, ProcessMemory: -1},
	}}
}

// useGPUReporter makes r the process's reporter for the test.
func useGPUReporter(t *testing.T, r *gpuReporter) {
	old := processGPU
	processGPU = r
	t.Cleanup(func() { processGPU = old })
}

// wantGPUMetrics are the BeamML_GPU metrics of one sample of twoGPUs, as
// "name=value" for gauges and "name=count/sum" for distributions.
func wantGPUMetrics(samples int) []string {
	var want []string
	for _, m := range []struct {
		name  string
		value int64
	}{
		{"gpu0_device_memory_used_bytes", 6 << 30},
		{"gpu0_device_memory_free_bytes", 10 << 30},
		{"gpu0_device_utilization_percent", 42},
		{"gpu0_process_device_memory_bytes", 3 << 30},
		{"gpu1_device_memory_used_bytes", 1 << 30},
		{"gpu1_device_memory_free_bytes", 23 << 30},
	} {
		want = append(want, fmt.Sprintf("%s=%d", m.name, m.value), fmt.Sprintf("%s_samples=%d/%d", m.name, samples, int64(samples)*m.value))
	}
	sort.Strings(want)
	return want
}

// gpuMetrics lists the BeamML_GPU metrics of q as wantGPUMetrics does,
// failing on a counter (there are none) or on a metric reported by more
// than one step.
func gpuMetrics(t *testing.T, q metrics.QueryResults) []string {
	t.Helper()
	var got []string
	seen := map[string]bool{}
	add := func(name, s string) {
		if seen[name] {
			t.Errorf("metric %s reported by more than one step", name)
		}
		seen[name] = true
		got = append(got, s)
	}
	for _, g := range q.Gauges() {
		if g.Namespace() == GPUNamespace {
			add(g.Name(), fmt.Sprintf("%s=%d", g.Name(), g.Result().Value))
		}
	}
	for _, d := range q.Distributions() {
		if d.Namespace() == GPUNamespace {
			add(d.Name(), fmt.Sprintf("%s=%d/%d", d.Name(), d.Result().Count, d.Result().Sum))
		}
	}
	for _, c := range q.Counters() {
		if c.Namespace() == GPUNamespace {
			t.Errorf("counter %s in %s, want none", c.Name(), GPUNamespace)
		}
	}
	sort.Strings(got)
	return got
}

// In a pipeline (on prism, or the direct runner with -runner=direct), a DoFn that calls reportGPU from every bundle method reports
// one sample of the fake devices as BeamML_GPU gauges and distributions,
// however many calls it makes within the interval.
func TestGPUMetricsInPipeline(t *testing.T) {
	gpus := twoGPUs()
	var opens atomic.Int64
	useGPUReporter(t, newGPUReporter(func() (gpuSampler, error) { opens.Add(1); return gpus, nil }, time.Hour, time.Now))

	p, s := beam.NewPipelineWithRoot()
	in := make([]int, 50)
	beam.ParDo0(s, &gpuProbeFn{}, beam.CreateList(s, in))
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := gpus.samples.Load(); n != 1 {
		t.Errorf("%d samples for 50 elements within the interval, want 1", n)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("NVML opened %d times, want 1", n)
	}
	got := gpuMetrics(t, pr.Metrics().AllMetrics())
	if want := wantGPUMetrics(1); !equalStrings(got, want) {
		t.Errorf("metrics:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// bundleContext is a context with a metrics store, as a bundle method's is.
func bundleContext() context.Context {
	return metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), "step")
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = time.Unix(1_700_000_000, 0).Add(d)
}

// reportGPU samples at most once per interval, over all callers at once.
func TestGPUReportRateBound(t *testing.T) {
	gpus := twoGPUs()
	clock := &fakeClock{}
	r := newGPUReporter(func() (gpuSampler, error) { return gpus, nil }, 10*time.Second, clock.Now)
	ctx := bundleContext()
	for _, step := range []struct {
		at   time.Duration
		want int64 // samples so far
	}{
		{0, 1},
		{time.Second, 1},
		{10*time.Second - time.Nanosecond, 1},
		{10 * time.Second, 2},
		{15 * time.Second, 2},
		{20 * time.Second, 3},
		{20 * time.Second, 3},
	} {
		clock.set(step.at)
		r.report(ctx)
		if n := gpus.samples.Load(); n != step.want {
			t.Fatalf("at %v: %d samples, want %d", step.at, n, step.want)
		}
	}

	clock.set(time.Minute)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { r.report(ctx) })
	}
	wg.Wait()
	if n := gpus.samples.Load(); n != 4 {
		t.Errorf("16 concurrent calls when due took %d samples, want 1", n-3)
	}
	if got, want := gpuMetrics(t, metrics.ResultsExtractor(ctx).AllMetrics()), wantGPUMetrics(4); !equalStrings(got, want) {
		t.Errorf("metrics:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// allLogs keeps every line logged through Beam's log package.
type allLogs struct {
	mu    sync.Mutex
	lines []string
}

func (l *allLogs) Log(_ context.Context, sev log.Severity, _ int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	level := map[log.Severity]string{log.SevInfo: "INFO", log.SevWarn: "WARN", log.SevError: "ERROR"}[sev]
	l.lines = append(l.lines, level+": "+msg)
}

// Where NVML does not answer, the first due call logs why and no call
// after it tries again or reports anything; a sample that fails is logged
// once while it keeps failing the same way, and reports nothing.
func TestGPUReportWithoutNVML(t *testing.T) {
	logs := &allLogs{}
	log.SetLogger(logs)
	defer log.SetLogger(&log.Structural{}) // the package's default: no pipeline has run yet in this binary
	clock := &fakeClock{}
	ctx := bundleContext()

	noDevice := fmt.Errorf("gpuinfo: this binary has no NVML: it is reached through cgo, in binaries built with the cuda tag: %w", inference.ErrNoDevice)
	var opens atomic.Int64
	r := newGPUReporter(func() (gpuSampler, error) { opens.Add(1); return nil, noDevice }, 10*time.Second, clock.Now)
	for i := range 5 {
		clock.set(time.Duration(i) * time.Hour)
		r.report(ctx)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("NVML opened %d times, want 1", n)
	}
	if want := "INFO: beamml: RunInference: no BeamML_GPU metrics in this worker process: " + noDevice.Error(); len(logs.lines) != 1 || logs.lines[0] != want {
		t.Errorf("logs %q, want one line %q", logs.lines, want)
	}

	logs.lines = nil
	lost := &fakeGPUs{err: errors.New("gpuinfo: nvmlDeviceGetMemoryInfo(0): GPU is lost")}
	r = newGPUReporter(func() (gpuSampler, error) { return lost, nil }, 10*time.Second, clock.Now)
	for i := range 3 {
		clock.set(time.Duration(i) * time.Minute)
		r.report(ctx)
	}
	if n := lost.samples.Load(); n != 3 {
		t.Errorf("%d samples of a failing device in 3 intervals, want 3 (each interval tries again)", n)
	}
	if len(logs.lines) != 1 || !strings.HasPrefix(logs.lines[0], "WARN: ") || !strings.Contains(logs.lines[0], "GPU is lost") {
		t.Errorf("logs %q, want one warning with the error", logs.lines)
	}
	if got := gpuMetrics(t, metrics.ResultsExtractor(ctx).AllMetrics()); len(got) != 0 {
		t.Errorf("metrics %q without a sample, want none", got)
	}
}

// With this machine's NVML, a report either samples every GPU (where one
// answers) or logs why there is none; openNVML's failure is a nil sampler,
// not a nil *gpuinfo.Sampler in an interface.
func TestGPUReportWithNVML(t *testing.T) {
	s, err := openNVML()
	if err != nil {
		if s != nil {
			t.Errorf("openNVML = %#v, %v; want no sampler with the error", s, err)
		}
		if !errors.Is(err, inference.ErrNoDevice) {
			t.Errorf("openNVML: %v, want an error wrapping ErrNoDevice", err)
		}
	}
	logs := &allLogs{}
	log.SetLogger(logs)
	defer log.SetLogger(&log.Structural{})
	ctx := bundleContext()
	newGPUReporter(openNVML, time.Hour, time.Now).report(ctx)
	got := gpuMetrics(t, metrics.ResultsExtractor(ctx).AllMetrics())
	t.Logf("logs %q, metrics %q", logs.lines, got)
	if err != nil {
		if len(got) != 0 || len(logs.lines) != 1 || !strings.Contains(logs.lines[0], err.Error()) {
			t.Errorf("without NVML: logs %q and metrics %q, want one line saying why and no metric", logs.lines, got)
		}
		return
	}
	if len(got) == 0 || !strings.HasPrefix(got[0], "gpu0_device_memory_free_bytes=") {
		t.Errorf("metrics %q, want gpu0's first", got)
	}
}

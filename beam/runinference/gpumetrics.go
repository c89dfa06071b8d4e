package runinference

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/beamml/beamml/inference/gpuinfo"
)

// GPUNamespace is the Beam metrics namespace of the GPU metrics that
// RunInference reports where NVML answers (a worker built with cgo, on a
// machine with an NVIDIA driver), whatever backend runs the model.
//
// A worker process samples NVML at most once per gpuSampleInterval (10 s),
// from whichever RunInference bundle is running when a sample is due, and
// reports, for each GPU NVML sees, by NVML's index N (which ignores
// CUDA_VISIBLE_DEVICES), a gauge with the latest sample and a distribution
// of the samples (the gauge's name with the suffix "_samples"):
//
//	gpuN_device_memory_used_bytes    device memory in use, by all processes
//	gpuN_device_memory_free_bytes    device memory free
//	gpuN_device_utilization_percent  percentage of time a kernel ran (nvmlDeviceGetUtilizationRates)
//	gpuN_process_device_memory_bytes this worker process's device memory
//
// A quantity NVML does not give is not reported: utilisation on a MIG
// instance, and this process's memory where it has no CUDA context on the
// device or runs in a container whose PID namespace hides it from NVML
// (see gpuinfo.Usage). The device index is part of the name, even with one
// GPU, so that a dashboard reads the same on every machine type. The
// metrics belong to the RunInference step whose bundle took the sample:
// with several such steps in a process, take the latest gauge over steps
// and merge the distributions.
const GPUNamespace = "BeamML_GPU"

// gpuSampleInterval is the least time between two samples of NVML in one
// process.
const gpuSampleInterval = 10 * time.Second

// gpuSampler is what a gpuReporter samples: gpuinfo's Sampler, or a fake.
type gpuSampler interface {
	Sample() ([]gpuinfo.Usage, error)
}

func openNVML() (gpuSampler, error) {
	s, err := gpuinfo.NewSampler()
	if err != nil {
		return nil, err // not a nil *Sampler in a non-nil interface
	}
	return s, nil
}

// processGPU is the process's one reporter: one NVML sampler and one rate
// bound for every DoFn instance. Tests replace it.
var processGPU = newGPUReporter(openNVML, gpuSampleInterval, time.Now)

// reportGPU reports a sample of the GPUs into ctx, the context of a bundle
// method, when one is due in this process: at most once per
// gpuSampleInterval over all callers. When none is due it costs a clock
// read and an atomic load. Where NVML does not answer, the first call logs
// why, once, and every call after does nothing.
func reportGPU(ctx context.Context) { processGPU.report(ctx) }

// gpuReporter samples a gpuSampler at a bounded rate and reports the
// samples as BeamML_GPU metrics.
type gpuReporter struct {
	open     func() (gpuSampler, error) // called once, at the first due sample
	interval time.Duration
	now      func() time.Time

	// due is the time (Unix nanoseconds) before which no sample is taken;
	// the caller that moves it on takes the sample. It is MaxInt64 once
	// open has failed.
	due atomic.Int64

	mu      sync.Mutex // guards the rest: one sample at a time
	opened  bool
	sampler gpuSampler
	lastErr string           // the last sampling error logged, so that a recurring one is logged once
	devices []*deviceMetrics // by NVML index
}

func newGPUReporter(open func() (gpuSampler, error), interval time.Duration, now func() time.Time) *gpuReporter {
	return &gpuReporter{open: open, interval: interval, now: now}
}

func (g *gpuReporter) report(ctx context.Context) {
	now := g.now().UnixNano()
	due := g.due.Load()
	if now < due || !g.due.CompareAndSwap(due, now+int64(g.interval)) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.opened {
		g.opened = true
		s, err := g.open()
		if err != nil {
			g.due.Store(math.MaxInt64)
			log.Infof(ctx, "beamml: RunInference: no %s metrics in this worker process: %v", GPUNamespace, err)
			return
		}
		g.sampler = s
	}
	usage, err := g.sampler.Sample()
	if err != nil {
		if msg := err.Error(); msg != g.lastErr {
			g.lastErr = msg
			log.Warnf(ctx, "beamml: RunInference: %s metrics: sampling the GPUs failed (next try in %v): %v", GPUNamespace, g.interval, err)
		}
		return
	}
	g.lastErr = ""
	for _, u := range usage {
		g.device(u.Index).report(ctx, u)
	}
}

// device returns the metrics of the device with NVML index i.
func (g *gpuReporter) device(i int) *deviceMetrics {
	for len(g.devices) <= i {
		g.devices = append(g.devices, newDeviceMetrics(len(g.devices)))
	}
	return g.devices[i]
}

// deviceMetrics are one GPU's gauges and distributions.
type deviceMetrics struct {
	memoryUsed, memoryFree, utilization, processMemory gpuMetric
}

// gpuMetric is one quantity of one GPU: its latest sample and all samples.
type gpuMetric struct {
	latest  beam.Gauge
	samples beam.Distribution
}

func newGPUMetric(device int, quantity string) gpuMetric {
	name := fmt.Sprintf("gpu%d_%s", device, quantity)
	return gpuMetric{latest: beam.NewGauge(GPUNamespace, name), samples: beam.NewDistribution(GPUNamespace, name+"_samples")}
}

func (m gpuMetric) report(ctx context.Context, v int64) {
	m.latest.Set(ctx, v)
	m.samples.Update(ctx, v)
}

func newDeviceMetrics(device int) *deviceMetrics {
	return &deviceMetrics{
		memoryUsed:    newGPUMetric(device, "device_memory_used_bytes"),
		memoryFree:    newGPUMetric(device, "device_memory_free_bytes"),
		utilization:   newGPUMetric(device, "device_utilization_percent"),
		processMemory: newGPUMetric(device, "process_device_memory_bytes"),
	}
}

func (d *deviceMetrics) report(ctx context.Context, u gpuinfo.Usage) {
	d.memoryUsed.report(ctx, u.MemoryUsed)
	d.memoryFree.report(ctx, u.MemoryFree)
	if u.Utilization >= 0 {
		d.utilization.report(ctx, int64(u.Utilization))
	}
	if u.ProcessMemory >= 0 {
		d.processMemory.report(ctx, u.ProcessMemory)
	}
}

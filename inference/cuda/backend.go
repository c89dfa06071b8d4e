// Package cuda is the GPU backend: an executor that runs a compiled graph
// on a Device through the CUDA kernels of internal/kernels and
// cuBLAS. The package itself is pure Go and builds without cgo; the
// devices live elsewhere: the real one in inference/cuda/cu (build tag
// cuda, gorgonia.org/cu), the simulated one in internal/sim.
//
// A model is compiled once per process: its weights are uploaded once and
// shared by every concurrent Run. Each Run takes a workspace (one device
// arena laid out by the graph's memory plan, a stream, pinned staging
// buffers), copies each input up once, queues the graph's kernels on the
// stream, copies each output down once and synchronises. Workspaces are
// reused, so a steady stream of batches allocates nothing; how many run at
// once is bounded by device memory.
//
// Who it is for: a pipeline calls nothing here. Its GPU worker imports
// inference/cuda/cu, which registers this backend, and Device(CUDA) or
// Auto selects it; Model's Stats, HostNodes and Fallback say where a
// loaded model runs. Writers of a Device (a real one, or a simulated one
// for tests) implement the Device interface and wrap it with NewBackend.
package cuda

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/internal/kernels"
)

// Backend runs models on the CUDA devices of the machine, opened on first
// use. With one device a compiled model is a *Model; with several it is a
// *Replicas, a *Model per device.
type Backend struct {
	open func() ([]Device, error)

	mu     sync.Mutex
	opened bool
	devs   []Device
	err    error
	funcs  map[funcKey]Function

	failed atomic.Pointer[error] // a device's sticky error, once one was seen (see fail)
}

// funcKey names a kernel on one of the backend's devices.
type funcKey struct {
	dev  int
	name string
}

// NewBackend returns a backend on the device open returns. Register it
// with inference.RegisterBackend (inference/cuda/cu does, in a binary
// built with the cuda tag).
func NewBackend(open func() (Device, error)) *Backend {
	return NewMultiBackend(func() ([]Device, error) {
		d, err := open()
		if err != nil {
			return nil, err
		}
		return []Device{d}, nil
	})
}

// NewMultiBackend returns a backend on every device open returns (at least
// one): each model compiled on it gets a replica per device, and batches
// spread over them (Replicas).
func NewMultiBackend(open func() ([]Device, error)) *Backend {
	return &Backend{open: open, funcs: map[funcKey]Function{}}
}

// Device is inference.CUDA.
func (b *Backend) Device() inference.Device { return inference.CUDA }

// Available opens the devices, if not yet open, and reports whether they
// answered.
func (b *Backend) Available() error {
	_, err := b.Devices()
	return err
}

// Open returns the first device, opening every device and loading the
// kernel modules on each the first time.
func (b *Backend) Open() (Device, error) {
	devs, err := b.Devices()
	if err != nil {
		return nil, err
	}
	return devs[0], nil
}

// Devices returns the backend's devices, opening them and loading the
// kernel modules on each the first time. If one fails, every device opened
// is closed and the backend is unavailable.
func (b *Backend) Devices() ([]Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened {
		return b.devs, b.err
	}
	b.opened = true
	devs, err := b.open()
	if err == nil && len(devs) == 0 {
		err = fmt.Errorf("no device: %w", inference.ErrNoDevice)
	}
	if err != nil {
		b.err = fmt.Errorf("cuda: %w", err)
		return nil, b.err
	}
	for _, dev := range devs {
		for _, m := range kernels.Modules() {
			if err := dev.LoadModule(m); err != nil {
				for _, d := range devs {
					d.Close()
				}
				b.err = fmt.Errorf("cuda: load kernel module %s on %s: %w", m.Name, dev.Name(), err)
				return nil, b.err
			}
		}
	}
	b.devs = devs
	return devs, nil
}

// fail records err, when it wraps inference.ErrDeviceFailed, as the
// device's failure: the context is lost, so every later Run of every model
// on the device and every Compile fail with it at once, instead of queuing
// work that cannot run. The first failure is logged. It returns err.
func (b *Backend) fail(err error) error {
	if !errors.Is(err, inference.ErrDeviceFailed) {
		return err
	}
	if b.failed.CompareAndSwap(nil, &err) {
		slog.Error("beamml: a GPU failed; nothing more can run on the backend's devices in this process", "err", err)
	}
	return err
}

// Failed returns the device's sticky error (wrapping
// inference.ErrDeviceFailed) once a Run has met one, and nil before.
func (b *Backend) Failed() error {
	if p := b.failed.Load(); p != nil {
		return fmt.Errorf("cuda: the device failed earlier in this process: %w", *p)
	}
	return nil
}

// function returns kernel name on device dev (an index into Devices).
func (b *Backend) function(dev int, name string) (Function, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := funcKey{dev, name}
	if f, ok := b.funcs[key]; ok {
		return f, nil
	}
	f, err := b.devs[dev].Function(name)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	b.funcs[key] = f
	return f, nil
}

// Compile compiles g for the devices: the CPU backend's check (a node
// without a device kernel runs on the host with the CPU's), the graph
// passes (graphPasses), then the weights' upload to each device. Plans for
// each input shape are built on first use. The model is a *Model on one
// device, a *Replicas on several.
func (b *Backend) Compile(g *graph.Graph) (inference.Model, error) {
	return b.CompileWith(g, graph.Options{})
}

// CompileWith is Compile in the precision o asks for: inference.FP32;
// inference.TF32, every float32 GEMM (Gemm.Precision) on tensor cores with
// TF32 inputs; or inference.FP16, where the graph passes end with
// passes.StoreInFloat16 (Passes): every node the device runs in
// float16 (registerHalf) stores its float32 values in float16, weights
// included, and the GEMMs that stay float32 take float16 inputs. Kernels
// accumulate in float32 in every mode, and the model's outputs keep their
// declared types.
func (b *Backend) CompileWith(g *graph.Graph, o graph.Options) (inference.Model, error) {
	precision, err := inference.ParsePrecision(string(o.Precision))
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	devs, err := b.Devices()
	if err != nil {
		return nil, err
	}
	if err := b.Failed(); err != nil {
		return nil, err
	}
	if err := g.EnsureSorted(); err != nil {
		return nil, err
	}
	if err := cpu.Check(g); err != nil {
		return nil, err
	}
	if err := passes.Optimize(g, Passes(precision)...); err != nil {
		return nil, err
	}
	why := ""
	if stringValue(g) != "" { // strings at the model's edges stay on the host (edges.go)
		m, reason, err := splitEdges(g, func(g *graph.Graph) (inference.Model, error) { return b.place(g, precision, devs, "") })
		switch {
		case err != nil:
			return nil, err
		case m != nil:
			return m, nil
		}
		why = reason
	}
	return b.place(g, precision, devs, why)
}

// place makes g a model on devs: one, or a replica on each. stringsWhy
// says why the strings g holds are not at its edges, where it holds any.
func (b *Backend) place(g *graph.Graph, precision inference.Precision, devs []Device, stringsWhy string) (inference.Model, error) {
	if len(devs) == 1 {
		return newModel(b, 0, devs[0], g, precision, stringsWhy)
	}
	var models []*Model
	for i, dev := range devs {
		m, err := newModel(b, i, dev, g, precision, stringsWhy)
		if err != nil {
			newReplicas(models).Close()
			return nil, fmt.Errorf("cuda: replica on %s: %w", dev.Name(), err)
		}
		models = append(models, m)
	}
	return newReplicas(models), nil
}

// graphPasses returns the graph passes Compile runs: constant folding
// with the CPU's reference kernels, then the rewrites whose result the
// device runs: dead nodes removed, BatchNormalization folded (plain
// ONNX), LayerNormalization, Gelu and HardSwish recognised (lower_norm.go
// and lower_elementwise.go have kernels for them), scaled dot-product
// attention recognised as Attention (lower_attention.go), and every
// epilogue of Conv, Gemm and MatMul, which their lowerings apply in one
// launch after the GEMM (epilogue.go).
func graphPasses() []passes.Pass {
	return []passes.Pass{
		passes.FoldConstants(cpu.RunNode),
		passes.IndexClassLabels(),
		passes.EliminateDeadNodes(),
		passes.FoldBatchNorm(),
		passes.RecognizeLayerNorm(),
		passes.RecognizeGelu(),
		passes.RecognizeHardSwish(),
		passes.RecognizeAttention(),
		passes.FuseEpilogues(passes.AllEpilogues),
	}
}

// Passes returns the graph passes CompileWith runs in precision p:
// graphPasses, then, in FP16, StoreInFloat16 over the nodes whose
// lowerings take float16 (halfLowerings). The CPU backend's run of a graph
// they rewrote is the meaning of the mode: the reference a test compares
// the device's FP16 outputs with.
func Passes(p inference.Precision) []passes.Pass {
	ps := graphPasses()
	if p == inference.FP16 {
		ps = append(ps, passes.StoreInFloat16(func(n *graph.Node) bool { return n.Domain == "" && halfLowerings[n.OpType] }))
	}
	return ps
}

// Reference returns the compiler whose outputs are the meaning of
// precision p on this backend, for tests to compare the device's with:
// the CPU backend's run of the graph Passes(p) rewrites. (In FP32 and TF32
// that is the plain graph's run; TF32's rounding of GEMM inputs is the
// device's, with tolerances the tests state.)
func Reference(p inference.Precision) graph.Compiler { return reference{p} }

type reference struct{ p inference.Precision }

func (reference) Device() inference.Device { return inference.CPU }
func (reference) Available() error         { return nil }

func (r reference) Compile(g *graph.Graph) (inference.Model, error) {
	if err := passes.Optimize(g, Passes(r.p)...); err != nil {
		return nil, err
	}
	return cpu.Backend{}.Compile(g)
}

var _ graph.OptionsCompiler = (*Backend)(nil)

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

// Backend runs models on one CUDA device, opened on first use.
type Backend struct {
	open func() (Device, error)

	mu     sync.Mutex
	opened bool
	dev    Device
	err    error
	funcs  map[string]Function

	failed atomic.Pointer[error] // the device's sticky error, once one was seen (see fail)
}

// NewBackend returns a backend on the device open returns. Register it
// with inference.RegisterBackend (inference/cuda/cu does, in a binary
// built with the cuda tag).
func NewBackend(open func() (Device, error)) *Backend {
	return &Backend{open: open, funcs: map[string]Function{}}
}

// Device is inference.CUDA.
func (b *Backend) Device() inference.Device { return inference.CUDA }

// Available opens the device, if not yet open, and reports whether it
// answered.
func (b *Backend) Available() error {
	_, err := b.Open()
	return err
}

// Open returns the device, opening it and loading the kernel modules the
// first time.
func (b *Backend) Open() (Device, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened {
		return b.dev, b.err
	}
	b.opened = true
	dev, err := b.open()
	if err != nil {
		b.err = fmt.Errorf("cuda: %w", err)
		return nil, b.err
	}
	for _, m := range kernels.Modules() {
		if err := dev.LoadModule(m); err != nil {
			dev.Close()
			b.err = fmt.Errorf("cuda: load kernel module %s on %s: %w", m.Name, dev.Name(), err)
			return nil, b.err
		}
	}
	b.dev = dev
	return dev, nil
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
		name := "the CUDA device"
		b.mu.Lock()
		if b.dev != nil {
			name = b.dev.Name()
		}
		b.mu.Unlock()
		slog.Error("beamml: the GPU failed; nothing more can run on it in this process",
			"device", name, "err", err)
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

func (b *Backend) function(name string) (Function, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.funcs[name]; ok {
		return f, nil
	}
	f, err := b.dev.Function(name)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	b.funcs[name] = f
	return f, nil
}

// Compile compiles g for the device: the CPU backend's check (a node
// without a device kernel runs on the host with the CPU's), the graph
// passes (graphPasses), then the weights' upload. Plans for each input
// shape are built on first use.
func (b *Backend) Compile(g *graph.Graph) (inference.Model, error) {
	dev, err := b.Open()
	if err != nil {
		return nil, err
	}
	if err := b.Failed(); err != nil {
		return nil, err
	}
	if err := cpu.Check(g); err != nil {
		return nil, err
	}
	if err := passes.Optimize(g, graphPasses()...); err != nil {
		return nil, err
	}
	return newModel(b, dev, g)
}

// graphPasses returns the graph passes Compile runs: constant folding
// with the CPU's reference kernels, then the rewrites whose result the
// device runs: dead nodes removed, BatchNormalization folded (plain
// ONNX), LayerNormalization and Gelu recognised (lower_norm.go and
// lower_elementwise.go have kernels for them), and the one epilogue the
// Conv lowering honours, the clamp of a Relu or a Clip. Attention
// recognition and the other epilogues are the CPU's: here their nodes
// would run on the host.
func graphPasses() []passes.Pass {
	return []passes.Pass{
		passes.FoldConstants(cpu.RunNode),
		passes.EliminateDeadNodes(),
		passes.FoldBatchNorm(),
		passes.RecognizeLayerNorm(),
		passes.RecognizeGelu(),
		passes.FuseEpilogues(passes.Epilogues{Ops: []string{"Conv"}, Activations: []string{"Relu", "Clip"}}),
	}
}

var _ graph.Compiler = (*Backend)(nil)

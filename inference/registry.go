package inference

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
)

// Backend is a place where models run: the CPU, or a CUDA device. Backends
// register under their device name from their package's init function; a
// Loader receives the one the Spec's device resolves to and compiles the
// model for it.
//
// The compile contract. A backend that runs ONNX models (every backend of
// this module) also implements graph.Compiler, whose method
//
//	Compile(g *graph.Graph) (Model, error)
//
// the onnx loader calls with the decoded, validated graph. Compile owns g:
// it runs the graph passes its kernels rely on (graph/passes: constant
// folding, fusions), fails with an *UnsupportedOpError (wrapping
// ErrUnsupportedOp) for an operator it cannot run, before anything runs,
// and returns a Model safe for concurrent Runs. The interface lives in
// package graph because this package cannot name the graph type; a
// Backend that lacks it fails the load with ErrNoDevice.
type Backend interface {
	// Device is the name the backend registers under.
	Device() Device
	// Available returns nil when the backend can run models on this machine
	// now, or an error wrapping ErrNoDevice that says why not.
	Available() error
}

// Loader loads a model of one format onto a backend. It must fail with an
// error wrapping ErrBadModel for a malformed model and ErrUnsupportedOp for
// one the backend cannot run, naming what and where.
type Loader func(ctx context.Context, spec Spec, backend Backend) (Model, error)

// The registries, written by init functions and read at load time.
var registry struct {
	sync.RWMutex
	loaders  map[string]Loader
	backends map[Device]Backend
}

// RegisterLoader makes a model format available under name. It panics if
// name is empty, the loader is nil, or the name is registered twice, as
// database/sql.Register does.
func RegisterLoader(format string, l Loader) {
	registry.Lock()
	defer registry.Unlock()
	if format == "" || l == nil {
		panic("inference: RegisterLoader needs a format name and a loader")
	}
	if _, dup := registry.loaders[format]; dup {
		panic(fmt.Sprintf("inference: RegisterLoader called twice for format %q", format))
	}
	if registry.loaders == nil {
		registry.loaders = map[string]Loader{}
	}
	registry.loaders[format] = l
}

// RegisterBackend makes a backend available under its Device name. It
// panics on nil, on Auto, and on a second registration of a name.
func RegisterBackend(b Backend) {
	registry.Lock()
	defer registry.Unlock()
	if b == nil || b.Device() == "" || b.Device() == Auto {
		panic("inference: RegisterBackend needs a backend with a concrete device name")
	}
	if _, dup := registry.backends[b.Device()]; dup {
		panic(fmt.Sprintf("inference: RegisterBackend called twice for device %q", b.Device()))
	}
	if registry.backends == nil {
		registry.backends = map[Device]Backend{}
	}
	registry.backends[b.Device()] = b
}

// Formats returns the registered model formats, sorted.
func Formats() []string {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.loaders))
}

// Devices returns the registered device names, sorted.
func Devices() []Device {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Sorted(maps.Keys(registry.backends))
}

func loaderFor(format string) (Loader, error) {
	registry.RLock()
	defer registry.RUnlock()
	l, ok := registry.loaders[format]
	if !ok {
		return nil, fmt.Errorf("inference: no loader for format %q (registered: %q); import the format's package: %w",
			format, slices.Sorted(maps.Keys(registry.loaders)), ErrBadModel)
	}
	return l, nil
}

// ResolveDevice returns the backend for d. Auto resolves to CUDA when a CUDA
// backend is registered and available, and to CPU otherwise, and says which
// once per process in the log (slog's default logger), at warning level
// when it fell back with an NVIDIA driver present, with the reason: a GPU
// worker that silently runs on the CPU is 50–100 times slower and looks
// healthy. With RequireGPUEnv set to "1", that fallback fails with
// ErrNoDevice instead. A named device that is not registered or not
// available fails with ErrNoDevice.
func ResolveDevice(d Device) (Backend, error) {
	if d == "" {
		d = Auto
	}
	registry.RLock()
	cuda, haveCUDA := registry.backends[CUDA]
	named, haveNamed := registry.backends[d]
	registered := slices.Sorted(maps.Keys(registry.backends))
	registry.RUnlock()

	if d == Auto {
		var avail error
		if haveCUDA {
			avail = cuda.Available()
		}
		driver := nvidiaDriverPresent()
		pick, why, err := chooseAuto(haveCUDA, avail, os.Getenv(RequireGPUEnv) == "1", driver)
		autoLog.Do(func() { logAuto(slog.Default(), pick, why, err, driver) })
		switch {
		case err != nil:
			return nil, err
		case pick == CUDA:
			return cuda, nil
		}
		return ResolveDevice(CPU)
	}
	if !haveNamed {
		hint := ""
		if d == CUDA {
			hint = " (build the worker with CGO_ENABLED=1 -tags cuda)"
		}
		return nil, fmt.Errorf("inference: device %q is not registered in this binary%s; registered: %q: %w",
			d, hint, registered, ErrNoDevice)
	}
	if err := named.Available(); err != nil {
		return nil, fmt.Errorf("inference: device %q: %w", d, err)
	}
	return named, nil
}

// RequireGPUEnv names the environment variable that, set to "1", turns
// Device(Auto)'s fallback to the CPU into an error on a machine with an
// NVIDIA driver: for GPU workers, where the fallback is a fault (cuBLAS
// not on the loader path, PTX the driver rejects, MPS refusing). Without a
// driver (a laptop, a CPU worker) Auto still picks the CPU.
const RequireGPUEnv = "BEAMML_REQUIRE_GPU"

// chooseAuto is Auto's choice: CUDA when its backend is registered and
// available (avail nil), else the CPU with the reason, or an error when
// requireGPU is set and an NVIDIA driver is present.
func chooseAuto(haveCUDA bool, avail error, requireGPU, driver bool) (Device, string, error) {
	if haveCUDA && avail == nil {
		return CUDA, "", nil
	}
	why := "this binary has no CUDA backend (a worker built without CGO_ENABLED=1 -tags cuda)"
	if haveCUDA {
		why = avail.Error()
	}
	if requireGPU && driver {
		return "", why, fmt.Errorf("inference: device auto: %s=1 and an NVIDIA driver is present, but the GPU cannot be used: %s: %w", RequireGPUEnv, why, ErrNoDevice)
	}
	return CPU, why, nil
}

// autoLog makes ResolveDevice say Auto's choice once per process.
var autoLog sync.Once

// logAuto writes Auto's choice to l: at info level for the GPU, or the CPU
// on a machine without an NVIDIA driver; at warning level for a fallback
// where a driver is present; at error level for a refusal.
func logAuto(l *slog.Logger, pick Device, why string, err error, driver bool) {
	switch {
	case err != nil:
		l.Error("beamml: device auto: " + err.Error())
	case pick == CUDA:
		l.Info("beamml: device auto chose cuda")
	case driver:
		l.Warn("beamml: device auto fell back to the cpu on a machine with an NVIDIA driver", "why", why, "require_gpu", RequireGPUEnv+"=1 makes this an error")
	default:
		l.Info("beamml: device auto chose the cpu", "why", why)
	}
}

// nvidiaDriverPresent reports whether an NVIDIA kernel driver is loaded
// (it answers in /proc), without cgo or the driver's library.
func nvidiaDriverPresent() bool {
	_, err := os.Stat("/proc/driver/nvidia/version")
	return err == nil
}

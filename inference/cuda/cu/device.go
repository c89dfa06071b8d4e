//go:build cuda

package cu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/cuda/cu/internal/cublas"
	_ "github.com/beamml/beamml/inference/cuda/cu/internal/cuinit" // must init before gorgonia.org/cu: see the package doc
	"github.com/beamml/beamml/internal/kernels"
	gocu "gorgonia.org/cu"
)

func init() {
	inference.RegisterBackend(cuda.NewMultiBackend(OpenAll))
}

// OpenAll opens every device the driver sees, in ordinal order
// (CUDA_VISIBLE_DEVICES chooses and orders them): the backend this package
// registers runs a replica of each model on each (cuda.Replicas). If one
// fails to open, the devices opened are closed and the error says which
// failed; it wraps inference.ErrNoDevice.
func OpenAll() ([]cuda.Device, error) {
	n, err := gocu.NumDevices()
	if err != nil {
		return nil, noDevice(driverErr("cuDeviceGetCount", err))
	}
	if n == 0 {
		return nil, fmt.Errorf("cu: the driver sees no device: %w", inference.ErrNoDevice)
	}
	devs := make([]cuda.Device, 0, n)
	for i := range n {
		d, err := Open(i)
		if err != nil {
			for _, o := range devs {
				o.Close()
			}
			return nil, fmt.Errorf("cu: %d device(s): %w", n, err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// Device is one CUDA device with its primary context. It is safe for
// concurrent use: see the package doc for how calls find their context.
type Device struct {
	ordinal int
	dev     gocu.Device
	ctx     gocu.CUContext
	name    string

	// mu is held for reading by every call and for writing by Close, so
	// that no call runs on a released context.
	mu     sync.RWMutex
	closed bool

	blasLib  *cublas.Lib
	blasMu   sync.Mutex     // held by products on the legacy default stream
	blas     *cublas.Handle // for those products; each stream has its own
	blasInfo string         // see BLAS

	memMu   sync.Mutex
	allocs  map[cuda.Ptr]int64 // live device allocations, by address
	host    map[uintptr]int64  // live pinned host buffers, by address
	modules []gocu.Module      // loaded, unloaded by Close
	funcs   map[string]*kernel // kernels of the loaded modules
}

// kernel is the Function of a loaded module.
type kernel struct {
	name string
	fn   gocu.Function
}

// stream is the Stream of a Device, with the cuBLAS handle of its
// products (see streamBLAS).
type stream struct {
	s    gocu.Stream
	mu   sync.Mutex     // held by a product: cuBLAS handles are not for concurrent use
	blas *cublas.Handle // nil until the stream's first product
	tf32 bool           // blas's math mode is CUBLAS_TF32_TENSOR_OP_MATH (useTF32)
}

// Open opens device ordinal (as CUDA_VISIBLE_DEVICES numbers them): it
// retains the device's primary context and creates a cuBLAS handle. Every
// error wraps inference.ErrNoDevice. Close releases what Open took.
func Open(ordinal int) (*Device, error) {
	n, err := gocu.NumDevices()
	if err != nil {
		return nil, noDevice(driverErr("cuDeviceGetCount", err))
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cu: open device %d: the driver sees %d device(s): %w", ordinal, n, inference.ErrNoDevice)
	}
	dev, err := gocu.GetDevice(ordinal)
	if err != nil {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDeviceGet(%d)", ordinal), err))
	}
	name, err := dev.Name()
	if err != nil {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDeviceGetName(device %d)", ordinal), err))
	}
	major, err := dev.Attribute(gocu.ComputeCapabilityMajor)
	if err != nil {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDeviceGetAttribute(device %d, compute capability)", ordinal), err))
	}
	minor, err := dev.Attribute(gocu.ComputeCapabilityMinor)
	if err != nil {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDeviceGetAttribute(device %d, compute capability)", ordinal), err))
	}
	// A thread waiting for the device (cuStreamSynchronize, once per batch)
	// blocks on the driver rather than spinning: spinning burns a core for
	// the whole batch, which on a 4–8 vCPU worker starves the other bundles
	// and reads as load to CPU-based autoscaling. The flag must be set
	// before the primary context is active; when another library in the
	// process activated it first, an older driver refuses with
	// CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE and that library's flags stand.
	if err := dev.SetPrimaryCtxFlags(gocu.SchedBlockingSync); err != nil && !errors.Is(err, gocu.PrimaryContextActive) {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDevicePrimaryCtxSetFlags(device %d, %s, CU_CTX_SCHED_BLOCKING_SYNC)", ordinal, name), err))
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, noDevice(driverErr(fmt.Sprintf("cuDevicePrimaryCtxRetain(device %d, %s)", ordinal, name), err))
	}
	d := &Device{
		ordinal: ordinal,
		dev:     dev,
		ctx:     ctx,
		name:    fmt.Sprintf("%s (sm_%d%d)", name, major, minor),
		allocs:  map[cuda.Ptr]int64{},
		host:    map[uintptr]int64{},
		funcs:   map[string]*kernel{},
	}
	err = d.bind("open", func() error {
		var err error
		d.blasLib, d.blas, d.blasInfo, err = newBLAS()
		return err
	})
	if err != nil {
		dev.ReleasePrimaryCtx()
		return nil, noDevice(err)
	}
	return d, nil
}

// bind runs f on a locked OS thread with the device's context current.
func (d *Device) bind(call string, f func() error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("cu: %s on %s: the device is closed", call, d.name)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := gocu.SetCurrentContext(d.ctx); err != nil {
		return driverErr(fmt.Sprintf("cuCtxSetCurrent(%s) for %s", d.name, call), err)
	}
	return f()
}

// Name is the device's name and architecture: "NVIDIA L4 (sm_89)".
func (d *Device) Name() string { return d.name }

// Alloc allocates device memory (cuMemAlloc), aligned to 256 bytes or more.
func (d *Device) Alloc(n int64) (cuda.Ptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cu: alloc of %d bytes", n)
	}
	var p gocu.DevicePtr
	err := d.bind("cuMemAlloc", func() error {
		var err error
		p, err = gocu.MemAlloc(n)
		return driverErr(fmt.Sprintf("cuMemAlloc(%d bytes)", n), err)
	})
	if err != nil {
		return 0, d.annotateAlloc(err)
	}
	d.memMu.Lock()
	d.allocs[cuda.Ptr(p)] = n
	d.memMu.Unlock()
	return cuda.Ptr(p), nil
}

// annotateAlloc adds the device's free memory to an out-of-memory error.
func (d *Device) annotateAlloc(err error) error {
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, inference.ErrOutOfMemory) {
		return err
	}
	if info, ierr := d.MemInfo(); ierr == nil {
		e.Detail += fmt.Sprintf(" (%d of %d bytes free on %s)", info.Free, info.Total, d.name)
	}
	return e
}

// Free releases an allocation (cuMemFree).
func (d *Device) Free(p cuda.Ptr) error {
	d.memMu.Lock()
	_, ok := d.allocs[p]
	delete(d.allocs, p)
	d.memMu.Unlock()
	if !ok {
		return fmt.Errorf("cu: free of %#x, which is not an allocation of %s", uint64(p), d.name)
	}
	return d.bind("cuMemFree", func() error {
		return driverErr(fmt.Sprintf("cuMemFree(%#x)", uint64(p)), gocu.MemFree(gocu.DevicePtr(p)))
	})
}

// AllocHost allocates page-locked host memory (cuMemHostAlloc), which the
// async copies read and write without a staging copy.
func (d *Device) AllocHost(n int64) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cu: host alloc of %d bytes", n)
	}
	var b []byte
	err := d.bind("cuMemHostAlloc", func() error {
		var err error
		b, err = allocHost(n)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.memMu.Lock()
	d.host[uintptr(unsafe.Pointer(&b[0]))] = n
	d.memMu.Unlock()
	return b, nil
}

// FreeHost releases a buffer from AllocHost.
func (d *Device) FreeHost(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("cu: free of an empty host buffer")
	}
	key := uintptr(unsafe.Pointer(&b[0]))
	d.memMu.Lock()
	_, ok := d.host[key]
	delete(d.host, key)
	d.memMu.Unlock()
	if !ok {
		return fmt.Errorf("cu: host free of %#x, which is not a buffer from AllocHost", key)
	}
	return d.bind("cuMemFreeHost", func() error { return freeHost(b) })
}

// CopyHtoD copies host memory to the device and returns once the data is
// there (see the package doc).
func (d *Device) CopyHtoD(dst cuda.Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.bind("cuMemcpyHtoD", func() error {
		call := fmt.Sprintf("cuMemcpyHtoD(%#x, %d bytes)", uint64(dst), len(src))
		if err := gocu.MemcpyHtoD(gocu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src))); err != nil {
			return driverErr(call, err)
		}
		return driverErr(call+": cuStreamSynchronize(legacy stream)", gocu.NoStream.Synchronize())
	})
}

// CopyDtoH copies device memory to the host; it returns once the data is
// there.
func (d *Device) CopyDtoH(dst []byte, src cuda.Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.bind("cuMemcpyDtoH", func() error {
		return driverErr(fmt.Sprintf("cuMemcpyDtoH(%#x, %d bytes)", uint64(src), len(dst)),
			gocu.MemcpyDtoH(unsafe.Pointer(&dst[0]), gocu.DevicePtr(src), int64(len(dst))))
	})
}

// CopyHtoDAsync queues a copy to the device on s. src should come from
// AllocHost; it must stay untouched until s is synchronised.
func (d *Device) CopyHtoDAsync(dst cuda.Ptr, src []byte, s cuda.Stream) error {
	if len(src) == 0 {
		return nil
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuMemcpyHtoDAsync", func() error {
		return driverErr(fmt.Sprintf("cuMemcpyHtoDAsync(%#x, %d bytes)", uint64(dst), len(src)),
			gocu.MemcpyHtoDAsync(gocu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src)), cs))
	})
}

// CopyDtoHAsync queues a copy to the host on s. dst should come from
// AllocHost; it holds the data once s is synchronised.
func (d *Device) CopyDtoHAsync(dst []byte, src cuda.Ptr, s cuda.Stream) error {
	if len(dst) == 0 {
		return nil
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuMemcpyDtoHAsync", func() error {
		return driverErr(fmt.Sprintf("cuMemcpyDtoHAsync(%#x, %d bytes)", uint64(src), len(dst)),
			gocu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), gocu.DevicePtr(src), int64(len(dst)), cs))
	})
}

// CopyDtoDAsync queues a device-to-device copy on s.
func (d *Device) CopyDtoDAsync(dst, src cuda.Ptr, n int64, s cuda.Stream) error {
	if n == 0 {
		return nil
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuMemcpyDtoDAsync", func() error {
		return driverErr(fmt.Sprintf("cuMemcpyDtoDAsync(%#x, %#x, %d bytes)", uint64(dst), uint64(src), n),
			gocu.MemcpyDtoDAsync(gocu.DevicePtr(dst), gocu.DevicePtr(src), n, cs))
	})
}

// LoadModule loads m's fatbin (cuModuleLoadData): the driver takes the
// SASS for the device where the fatbin has it, and otherwise compiles the
// newest PTX the device can run (or takes it from its cache); then looks
// up the module's kernels. A module the driver rejects fails with the JIT
// compiler's log for its compute_60 PTX.
func (d *Device) LoadModule(m kernels.Module) error {
	return d.bind("cuModuleLoadData", func() error {
		// gorgonia.org/cu copies the image, NULs and all, into C memory
		// (malloc's alignment is all a fatbin needs).
		mod, err := gocu.LoadData(string(m.Fatbin))
		if err != nil {
			err := driverErr(fmt.Sprintf("cuModuleLoadData(module %s, %d bytes of fatbin)", m.Name, len(m.Fatbin)), err)
			if e, ok := err.(*Error); ok {
				if log := jitLog(m.PTX); log != "" {
					e.Detail += "; JIT log of its compute_60 PTX: " + log
				}
			}
			return err
		}
		fns := map[string]*kernel{}
		for _, name := range m.Entries {
			fn, err := mod.Function(name)
			if err != nil {
				mod.Unload()
				return driverErr(fmt.Sprintf("cuModuleGetFunction(module %s, %s)", m.Name, name), err)
			}
			fns[name] = &kernel{name: name, fn: fn}
		}
		d.memMu.Lock()
		defer d.memMu.Unlock()
		d.modules = append(d.modules, mod)
		for name, k := range fns {
			d.funcs[name] = k
		}
		return nil
	})
}

// Function returns a kernel of the loaded modules.
func (d *Device) Function(name string) (cuda.Function, error) {
	d.memMu.Lock()
	defer d.memMu.Unlock()
	k, ok := d.funcs[name]
	if !ok {
		return nil, fmt.Errorf("cu: no kernel %q in the modules loaded on %s", name, d.name)
	}
	return k, nil
}

// Launch queues a kernel on s (cuLaunchKernel). Each argument is passed
// as 8 bytes (docs/design.md, rule 8); no dynamic shared memory.
func (d *Device) Launch(f cuda.Function, grid, block cuda.Dim3, s cuda.Stream, args []uint64) error {
	k, ok := f.(*kernel)
	if !ok {
		return fmt.Errorf("cu: launch of %v, which is not a kernel of this package", f)
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	return d.bind("cuLaunchKernel", func() error {
		err := k.fn.Launch(int(grid.X), int(grid.Y), int(grid.Z), int(block.X), int(block.Y), int(block.Z), 0, cs, params)
		if err != nil {
			return driverErr(fmt.Sprintf("cuLaunchKernel(%s, grid %d×%d×%d, block %d×%d×%d, %d args)",
				k.name, grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, len(args)), err)
		}
		return nil
	})
}

// Gemm queues a product on s through cuBLAS (cublasSgemm_v2, or
// cublasSgemmStridedBatched when g.Batch > 1; in FP16, or with float16
// matrices, cublasGemmEx or cublasGemmStridedBatchedEx), with the
// column-major semantics of cuda.Gemm.
func (d *Device) Gemm(s cuda.Stream, g cuda.Gemm) error {
	if err := checkGemm(g); err != nil {
		return err
	}
	if g.M == 0 || g.N == 0 {
		return nil
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cublasSgemm", func() error {
		st, ok := s.(*stream)
		if !ok { // the legacy default stream: the device's handle
			d.blasMu.Lock()
			defer d.blasMu.Unlock()
			if err := d.blas.SetStream(nil); err != nil {
				return blasErr("", err)
			}
			if err := d.blas.SetTF32(useTF32(g)); err != nil {
				return blasErr("", err)
			}
			return gemm(d.blas, cs, g)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		h, err := d.streamBLAS(st)
		if err != nil {
			return err
		}
		if tf32 := useTF32(g); st.tf32 != tf32 {
			if err := h.SetTF32(tf32); err != nil {
				return blasErr("", err)
			}
			st.tf32 = tf32
		}
		return gemm(h, cs, g)
	})
}

// NewStream creates a non-blocking stream (see the package doc).
func (d *Device) NewStream() (cuda.Stream, error) {
	var s gocu.Stream
	err := d.bind("cuStreamCreate", func() error {
		var err error
		s, err = gocu.MakeStream(gocu.NonBlocking)
		return driverErr("cuStreamCreate(CU_STREAM_NON_BLOCKING)", err)
	})
	if err != nil {
		return nil, err
	}
	return &stream{s: s}, nil
}

// stream returns the driver stream of s; nil is the legacy default stream.
func (d *Device) stream(s cuda.Stream) (gocu.Stream, error) {
	switch s := s.(type) {
	case nil:
		return gocu.NoStream, nil
	case *stream:
		if s.s == (gocu.Stream{}) {
			return gocu.NoStream, fmt.Errorf("cu: use of a destroyed stream")
		}
		return s.s, nil
	}
	return gocu.NoStream, fmt.Errorf("cu: stream %v (%T) is not a stream of this package", s, s)
}

// Sync waits for the work queued on s (cuStreamSynchronize). A kernel
// fault surfaces here.
func (d *Device) Sync(s cuda.Stream) error {
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuStreamSynchronize", func() error {
		return driverErr("cuStreamSynchronize", cs.Synchronize())
	})
}

// DestroyStream releases s once its work is done (cuStreamDestroy), and
// its cuBLAS handle.
func (d *Device) DestroyStream(s cuda.Stream) error {
	st, ok := s.(*stream)
	if !ok || st.s == (gocu.Stream{}) {
		return fmt.Errorf("cu: destroy of stream %v (%T), which is not a live stream of this package", s, s)
	}
	return d.bind("cuStreamDestroy", func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		err := destroyBLAS(st.blas)
		st.blas = nil
		return errors.Join(err, driverErr("cuStreamDestroy", st.s.Destroy()))
	})
}

// BeginCapture starts capturing the work queued on s into a CUDA graph
// (cuStreamBeginCapture, relaxed mode): cuda.Grapher.
func (d *Device) BeginCapture(s cuda.Stream) error {
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuStreamBeginCapture", func() error { return beginCapture(cs) })
}

// EndCapture ends the capture of s and instantiates its graph.
func (d *Device) EndCapture(s cuda.Stream) (cuda.Graph, error) {
	cs, err := d.stream(s)
	if err != nil {
		return nil, err
	}
	var g *graph
	err = d.bind("cuStreamEndCapture", func() error {
		var err error
		g, err = endCapture(cs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// LaunchGraph replays g on s (cuGraphLaunch).
func (d *Device) LaunchGraph(g cuda.Graph, s cuda.Stream) error {
	gr, ok := g.(*graph)
	if !ok {
		return fmt.Errorf("cu: launch of graph %v, which is not a graph of this package", g)
	}
	cs, err := d.stream(s)
	if err != nil {
		return err
	}
	return d.bind("cuGraphLaunch", func() error { return launchGraph(gr, cs) })
}

// DestroyGraph releases g (cuGraphExecDestroy).
func (d *Device) DestroyGraph(g cuda.Graph) error {
	gr, ok := g.(*graph)
	if !ok {
		return fmt.Errorf("cu: destroy of graph %v, which is not a graph of this package", g)
	}
	return d.bind("cuGraphExecDestroy", func() error { return destroyGraph(gr) })
}

// MemInfo reports the device's free and total memory (cuMemGetInfo). Free
// counts what other processes (MPS clients included) hold as used.
func (d *Device) MemInfo() (cuda.MemInfo, error) {
	var info cuda.MemInfo
	err := d.bind("cuMemGetInfo", func() error {
		free, total, err := gocu.MemInfo()
		info = cuda.MemInfo{Free: free, Total: total}
		return driverErr("cuMemGetInfo", err)
	})
	return info, err
}

// Close waits for the device's work, destroys the cuBLAS handle, unloads
// the modules and releases the primary context. Like the simulated device
// it fails when allocations are still live; they are freed with the context
// when no other Device holds it.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errs []error
	if err := gocu.SetCurrentContext(d.ctx); err != nil {
		errs = append(errs, driverErr("cuCtxSetCurrent", err))
	} else {
		errs = append(errs, driverErr("cuCtxSynchronize", gocu.Synchronize()))
		errs = append(errs, destroyBLAS(d.blas))
		d.memMu.Lock()
		for _, m := range d.modules {
			errs = append(errs, driverErr("cuModuleUnload", m.Unload()))
		}
		d.modules, d.funcs = nil, nil
		d.memMu.Unlock()
		errs = append(errs, driverErr("cuCtxSetCurrent(NULL)", gocu.SetCurrentContext(gocu.CUContext{})))
	}
	errs = append(errs, driverErr(fmt.Sprintf("cuDevicePrimaryCtxRelease(device %d)", d.ordinal), d.dev.ReleasePrimaryCtx()))
	d.memMu.Lock()
	if len(d.allocs) > 0 || len(d.host) > 0 {
		errs = append(errs, fmt.Errorf("cu: %s closed with %d device allocations and %d host buffers not freed",
			d.name, len(d.allocs), len(d.host)))
	}
	d.memMu.Unlock()
	return errors.Join(errs...)
}

var (
	_ cuda.Device  = (*Device)(nil)
	_ cuda.Grapher = (*Device)(nil)
)

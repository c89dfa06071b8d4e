// Package sim is a simulated CUDA device: device memory is host memory,
// kernels run through a Runner (the host-emulated kernels of
// internal/kernels/emu), GEMMs run in Go with cuBLAS's column-major
// semantics, and every allocation, copy, launch and GEMM is counted. The
// executor of inference/cuda runs on it unchanged, which is how the GPU
// path is tested on machines without a GPU (docs/design.md, rule 6).
//
// Each allocation is followed by guard bytes; Free and Check report a
// kernel that wrote past the end of its buffer.
package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/kernels"
)

// Runner runs a kernel launch; emu.Runner is one.
type Runner interface {
	Launch(name string, grid, block [3]uint32, args []uint64) error
}

// Options configure a Device.
type Options struct {
	// Name is what Name returns ("sim" when empty): tests that simulate
	// several GPUs tell them apart by it.
	Name string
	// Memory is the device memory in bytes (16 GiB when 0). An allocation
	// beyond it fails with inference.ErrOutOfMemory, as on a GPU.
	Memory int64
	// Runner runs the kernels. Without one, Launch fails.
	Runner Runner
	// FailAlloc, when set, is asked before each allocation; an error it
	// returns fails the allocation (tests inject out-of-memory with it).
	FailAlloc func(bytes int64) error
}

// Stats counts what the device was asked to do.
type Stats struct {
	Allocs, Frees         int   // device allocations and frees
	HostAllocs, HostFrees int   // pinned host buffers
	AllocatedBytes        int64 // device bytes allocated now
	PeakBytes             int64
	CopiesHtoD            int // host→device copies, sync and async
	CopiesDtoH            int
	CopiesDtoD            int
	BytesHtoD, BytesDtoH  int64
	Launches              int // kernels run, queued one by one or replayed in a graph
	Gemms                 int // products, likewise
	Streams               int // streams created
	Syncs                 int
	// Calls counts the calls that queue work on a stream, what a real
	// driver is asked for: launches, products and async copies made one
	// by one, and graph launches (a replayed graph is one call, whatever
	// it holds; work captured into a graph is no call).
	Calls         int
	Graphs        int // graphs captured
	GraphLaunches int // graph replays
}

// Device is a simulated GPU. It is safe for concurrent use.
type Device struct {
	opts Options

	mu      sync.Mutex
	allocs  map[cuda.Ptr]*alloc
	bases   []cuda.Ptr // sorted
	funcs   map[string]bool
	stats   Stats
	nstream int
	closed  bool

	armed *Fault // the fault the next matching launch raises (InjectFault)
	fault *Fault // the sticky fault, once raised
}

// Fault is a sticky device error, as a real GPU reports after a kernel
// reads an illegal address or a launch fails: every later call on the
// device fails with it. It wraps inference.ErrDeviceFailed.
type Fault struct {
	Status string // the CUDA status it stands for: "CUDA_ERROR_ILLEGAL_ADDRESS"
	Kernel string // the launch that raised it
}

func (f *Fault) Error() string {
	return fmt.Sprintf("sim: %s in a launch of %s (injected): the context is lost", f.Status, f.Kernel)
}

// Unwrap returns inference.ErrDeviceFailed.
func (f *Fault) Unwrap() error { return inference.ErrDeviceFailed }

// InjectFault arms a sticky fault with the given status (empty: the
// status of an illegal address): the next launch of kernel (of any kernel
// when kernel is "") raises it. As on a GPU the launch itself returns
// nil, since launches are queued; the fault surfaces at the next call,
// usually the stream's Sync, and every call after it fails with it too:
// allocations, copies, launches, products, syncs and new streams. Free,
// FreeHost, DestroyStream and Close keep working, so that tests release
// what they hold.
func (d *Device) InjectFault(kernel, status string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = &Fault{Status: cmp.Or(status, "CUDA_ERROR_ILLEGAL_ADDRESS"), Kernel: kernel}
}

// failed returns the sticky fault, if one was raised.
func (d *Device) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault != nil {
		return d.fault
	}
	return nil
}

type alloc struct {
	mem  []byte // the whole backing array: data, then guard
	size int64
}

const (
	align = 256
	guard = 64
	fill  = 0xA5
)

// New returns a simulated device.
func New(opts Options) *Device {
	if opts.Memory == 0 {
		opts.Memory = 16 << 30
	}
	return &Device{opts: opts, allocs: map[cuda.Ptr]*alloc{}, funcs: map[string]bool{}}
}

// Name is Options.Name, or "sim".
func (d *Device) Name() string { return cmp.Or(d.opts.Name, "sim") }

// Stats returns the counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Alloc allocates device memory.
func (d *Device) Alloc(bytes int64) (cuda.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("sim: alloc of %d bytes", bytes)
	}
	if err := d.failed(); err != nil {
		return 0, err
	}
	if d.opts.FailAlloc != nil {
		if err := d.opts.FailAlloc(bytes); err != nil {
			return 0, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stats.AllocatedBytes+bytes > d.opts.Memory {
		return 0, fmt.Errorf("sim: alloc of %d bytes with %d of %d in use: %w",
			bytes, d.stats.AllocatedBytes, d.opts.Memory, inference.ErrOutOfMemory)
	}
	raw := make([]byte, bytes+align+guard)
	for i := range raw { // device memory starts as garbage, not zeros: NaN for floats
		raw[i] = 0xFF
	}
	off := int64(0)
	if r := uintptr(unsafe.Pointer(&raw[0])) % align; r != 0 {
		off = int64(align - r)
	}
	mem := raw[off : off+bytes+guard]
	for i := bytes; i < bytes+guard; i++ {
		mem[i] = fill
	}
	p := cuda.Ptr(uintptr(unsafe.Pointer(&mem[0])))
	d.allocs[p] = &alloc{mem: mem, size: bytes}
	i, _ := slices.BinarySearch(d.bases, p)
	d.bases = slices.Insert(d.bases, i, p)
	d.stats.Allocs++
	d.stats.AllocatedBytes += bytes
	d.stats.PeakBytes = max(d.stats.PeakBytes, d.stats.AllocatedBytes)
	return p, nil
}

// Free releases an allocation, failing if a kernel wrote past its end.
func (d *Device) Free(p cuda.Ptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.allocs[p]
	if !ok {
		return fmt.Errorf("sim: free of %#x, which is not an allocation", p)
	}
	delete(d.allocs, p)
	i, _ := slices.BinarySearch(d.bases, p)
	d.bases = slices.Delete(d.bases, i, i+1)
	d.stats.Frees++
	d.stats.AllocatedBytes -= a.size
	return a.check(p)
}

func (a *alloc) check(p cuda.Ptr) error {
	for i := a.size; i < a.size+guard; i++ {
		if a.mem[i] != fill {
			return fmt.Errorf("sim: a kernel wrote past the end of the %d-byte buffer at %#x (byte %d)", a.size, p, i)
		}
	}
	return nil
}

// Check verifies the guard bytes of every live allocation.
func (d *Device) Check() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for p, a := range d.allocs {
		errs = append(errs, a.check(p))
	}
	return errors.Join(errs...)
}

// Live returns the number of allocations not yet freed.
func (d *Device) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.allocs)
}

// bytes returns the device memory [p, p+n), which must lie in one allocation.
func (d *Device) bytes(p cuda.Ptr, n int64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] > p }) - 1
	if i < 0 {
		return nil, fmt.Errorf("sim: address %#x is not in device memory", p)
	}
	base := d.bases[i]
	a := d.allocs[base]
	off := int64(p - base)
	if off+n > a.size {
		return nil, fmt.Errorf("sim: [%#x, +%d) runs past the end of the %d-byte allocation at %#x", p, n, a.size, base)
	}
	return a.mem[off : off+n], nil
}

// AllocHost allocates host memory (the simulation of pinned memory).
func (d *Device) AllocHost(bytes int64) ([]byte, error) {
	d.mu.Lock()
	d.stats.HostAllocs++
	d.mu.Unlock()
	return make([]byte, bytes), nil
}

// FreeHost releases host memory from AllocHost.
func (d *Device) FreeHost(b []byte) error {
	d.mu.Lock()
	d.stats.HostFrees++
	d.mu.Unlock()
	return nil
}

func (d *Device) count(f func(s *Stats)) {
	d.mu.Lock()
	f(&d.stats)
	d.mu.Unlock()
}

// CopyHtoD copies host memory to the device.
func (d *Device) CopyHtoD(dst cuda.Ptr, src []byte) error {
	if err := d.failed(); err != nil {
		return err
	}
	b, err := d.bytes(dst, int64(len(src)))
	if err != nil {
		return fmt.Errorf("copy to device: %w", err)
	}
	copy(b, src)
	d.count(func(s *Stats) { s.CopiesHtoD++; s.BytesHtoD += int64(len(src)) })
	return nil
}

// CopyDtoH copies device memory to the host.
func (d *Device) CopyDtoH(dst []byte, src cuda.Ptr) error {
	if err := d.failed(); err != nil {
		return err
	}
	b, err := d.bytes(src, int64(len(dst)))
	if err != nil {
		return fmt.Errorf("copy from device: %w", err)
	}
	copy(dst, b)
	d.count(func(s *Stats) { s.CopiesDtoH++; s.BytesDtoH += int64(len(dst)) })
	return nil
}

// CopyHtoDAsync copies at once: the simulated streams are synchronous. On
// a stream being captured it is recorded instead: src is read when the
// graph is replayed.
func (d *Device) CopyHtoDAsync(dst cuda.Ptr, src []byte, s cuda.Stream) error {
	if d.record(s, func() error { return d.CopyHtoD(dst, src) }) {
		return nil
	}
	d.count(func(s *Stats) { s.Calls++ })
	return d.CopyHtoD(dst, src)
}

// CopyDtoHAsync copies at once, or is recorded on a stream being captured.
func (d *Device) CopyDtoHAsync(dst []byte, src cuda.Ptr, s cuda.Stream) error {
	if d.record(s, func() error { return d.CopyDtoH(dst, src) }) {
		return nil
	}
	d.count(func(s *Stats) { s.Calls++ })
	return d.CopyDtoH(dst, src)
}

// CopyDtoDAsync copies device memory, or is recorded on a stream being
// captured.
func (d *Device) CopyDtoDAsync(dst, src cuda.Ptr, n int64, s cuda.Stream) error {
	if d.record(s, func() error { return d.copyDtoD(dst, src, n) }) {
		return nil
	}
	d.count(func(s *Stats) { s.Calls++ })
	return d.copyDtoD(dst, src, n)
}

func (d *Device) copyDtoD(dst, src cuda.Ptr, n int64) error {
	if err := d.failed(); err != nil {
		return err
	}
	from, err := d.bytes(src, n)
	if err != nil {
		return fmt.Errorf("device copy: %w", err)
	}
	to, err := d.bytes(dst, n)
	if err != nil {
		return fmt.Errorf("device copy: %w", err)
	}
	copy(to, from)
	d.count(func(s *Stats) { s.CopiesDtoD++ })
	return nil
}

// LoadModule records the module's kernels.
func (d *Device) LoadModule(m kernels.Module) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range m.Entries {
		d.funcs[e] = true
	}
	return nil
}

// Function returns the kernel's name, which Launch passes to the Runner.
func (d *Device) Function(name string) (cuda.Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.funcs[name] {
		return nil, fmt.Errorf("sim: no kernel %q in the loaded modules", name)
	}
	return name, nil
}

// Launch runs the kernel through the Runner.
func (d *Device) Launch(f cuda.Function, grid, block cuda.Dim3, s cuda.Stream, args []uint64) error {
	name, ok := f.(string)
	if !ok {
		return fmt.Errorf("sim: launch of %v, which is not a sim function", f)
	}
	if d.opts.Runner == nil {
		return fmt.Errorf("sim: launch of %s: the device has no kernel runner", name)
	}
	args = slices.Clone(args) // the caller reuses its slice; a recorded launch keeps these
	if d.record(s, func() error { return d.launch(name, grid, block, args) }) {
		return nil
	}
	d.count(func(s *Stats) { s.Calls++ })
	return d.launch(name, grid, block, args)
}

func (d *Device) launch(name string, grid, block cuda.Dim3, args []uint64) error {
	if err := d.failed(); err != nil {
		return err
	}
	d.mu.Lock()
	if f := d.armed; f != nil && (f.Kernel == "" || f.Kernel == name) {
		d.armed, d.fault = nil, &Fault{Status: f.Status, Kernel: name}
		d.stats.Launches++
		d.mu.Unlock()
		return nil // queued; the fault surfaces at the next call
	}
	d.mu.Unlock()
	d.count(func(s *Stats) { s.Launches++ })
	return d.opts.Runner.Launch(name, [3]uint32{grid.X, grid.Y, grid.Z}, [3]uint32{block.X, block.Y, block.Z}, args)
}

// Gemm runs the product in Go, with cuBLAS's column-major layout, or
// records it on a stream being captured.
func (d *Device) Gemm(s cuda.Stream, g cuda.Gemm) error {
	if _, _, _, _, err := g.Shapes(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if d.record(s, func() error { return d.gemm(g) }) {
		return nil
	}
	d.count(func(s *Stats) { s.Calls++ })
	return d.gemm(g)
}

func (d *Device) gemm(g cuda.Gemm) error {
	aRows, aCols, bRows, bCols, _ := g.Shapes()
	if err := d.failed(); err != nil {
		return err
	}
	in, out := g.InBytes(), g.OutBytes()
	for b := range g.Batch {
		a, err := d.matrix(g.A+cuda.Ptr(in*int64(b)*g.StrideA), g.InType, g.LDA, aRows, aCols)
		if err != nil {
			return fmt.Errorf("sim: gemm A: %w", err)
		}
		bm, err := d.matrix(g.B+cuda.Ptr(in*int64(b)*g.StrideB), g.InType, g.LDB, bRows, bCols)
		if err != nil {
			return fmt.Errorf("sim: gemm B: %w", err)
		}
		cp := g.C + cuda.Ptr(out*int64(b)*g.StrideC)
		c, err := d.matrix(cp, g.OutType, g.LDC, g.M, g.N)
		if err != nil {
			return fmt.Errorf("sim: gemm C: %w", err)
		}
		switch g.Precision {
		case inference.TF32:
			a, bm = toTF32(a), toTF32(bm)
		case inference.FP16:
			a, bm = toHalfPrecision(a), toHalfPrecision(bm)
		}
		gemm(g, a, bm, c)
		if g.OutType == inference.Float16 {
			d.storeHalves(cp, g.LDC, g.M, g.N, c)
		}
	}
	d.count(func(s *Stats) { s.Gemms++ })
	return nil
}

// matrix returns the column-major rows×cols matrix at p with leading
// dimension ld and element type t as float32: the device's own memory for
// float32, a copy widened from float16 (exactly) for float16.
func (d *Device) matrix(p cuda.Ptr, t inference.DType, ld, rows, cols int) ([]float32, error) {
	if t != inference.Float16 {
		return d.floats(p, ld, rows, cols)
	}
	h, err := d.halves(p, ld, rows, cols)
	if err != nil {
		return nil, err
	}
	f := make([]float32, len(h))
	for i, v := range h {
		f[i] = v.Float32()
	}
	return f, nil
}

// halves is floats for a float16 matrix.
func (d *Device) halves(p cuda.Ptr, ld, rows, cols int) ([]inference.Half, error) {
	if rows == 0 || cols == 0 {
		return nil, nil
	}
	n := int64(ld)*int64(cols-1) + int64(rows)
	b, err := d.bytes(p, 2*n)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*inference.Half)(unsafe.Pointer(&b[0])), n), nil
}

// storeHalves writes the rows×cols float32 matrix c (as matrix read it)
// into the float16 matrix at p, each element rounded to nearest even: a
// float16 C, which cuBLAS rounds once from its float32 accumulator.
func (d *Device) storeHalves(p cuda.Ptr, ld, rows, cols int, c []float32) {
	h, _ := d.halves(p, ld, rows, cols) // matrix read it
	for j := range cols {
		for i := range rows {
			h[i+j*ld] = inference.HalfFromFloat32(c[i+j*ld])
		}
	}
}

// floats returns the column-major rows×cols matrix at p with leading
// dimension ld as a float32 slice.
func (d *Device) floats(p cuda.Ptr, ld, rows, cols int) ([]float32, error) {
	if rows == 0 || cols == 0 {
		return nil, nil
	}
	n := int64(ld)*int64(cols-1) + int64(rows)
	b, err := d.bytes(p, 4*n)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), nil
}

// toTF32 returns a copy of v rounded to TensorFloat-32, as tensor cores
// read a TF32 product's inputs: float32's sign and exponent, the top 10
// bits of its mantissa, rounded to nearest with ties away from zero (PTX's
// cvt.rna.tf32.f32). NaN and the infinities stay as they are.
func toTF32(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, f := range v {
		bits := math.Float32bits(f)
		if bits&0x7f800000 != 0x7f800000 { // finite
			bits = (bits + 0x1000) &^ 0x1fff
		}
		out[i] = math.Float32frombits(bits)
	}
	return out
}

// toHalfPrecision returns a copy of v with each value rounded to float16
// (roundToHalf), as tensor cores read an FP16 product's float32 inputs.
func toHalfPrecision(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = roundToHalf(f)
	}
	return out
}

// roundToHalf is the float16 nearest f, as a float32 (PTX's
// cvt.rn.f16.f32 then back): ties to even, ±Inf from ±65520 on (the
// midpoint above the largest half, 65504), subnormal halves (multiples of
// 2^-24) below 2^-14, ±0 at or below 2^-25. NaN stays NaN, ±Inf and ±0
// keep their sign: inference.HalfFromFloat32's rounding.
func roundToHalf(f float32) float32 { return inference.HalfFromFloat32(f).Float32() }

func gemm(g cuda.Gemm, a, b, c []float32) {
	opA := func(i, p int) float32 {
		if g.TransA {
			return a[p+i*g.LDA]
		}
		return a[i+p*g.LDA]
	}
	col := make([]float32, g.M)
	for j := range g.N {
		clear(col)
		for p := range g.K {
			var bv float32
			if g.TransB {
				bv = b[j+p*g.LDB]
			} else {
				bv = b[p+j*g.LDB]
			}
			if bv == 0 {
				continue
			}
			if !g.TransA { // column p of A is contiguous
				ap := a[p*g.LDA : p*g.LDA+g.M]
				for i, av := range ap {
					col[i] += av * bv
				}
				continue
			}
			for i := range g.M {
				col[i] += opA(i, p) * bv
			}
		}
		cj := c[j*g.LDC : j*g.LDC+g.M]
		for i := range cj {
			if g.Beta == 0 { // cuBLAS does not read C when beta is 0
				cj[i] = g.Alpha * col[i]
			} else {
				cj[i] = g.Alpha*col[i] + g.Beta*cj[i]
			}
		}
	}
}

type stream struct {
	id      int
	capture *graph // the graph being captured, if any
}

// graph is a captured sequence of work, replayed in order by LaunchGraph.
type graph struct{ ops []func() error }

// record adds op to the graph s is capturing, and reports whether it did.
func (d *Device) record(s cuda.Stream, op func() error) bool {
	st, ok := s.(*stream)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if st.capture == nil {
		return false
	}
	st.capture.ops = append(st.capture.ops, op)
	return true
}

// BeginCapture starts capturing the work queued on s into a graph: it is
// recorded, not run, until EndCapture (cuda.Grapher).
func (d *Device) BeginCapture(s cuda.Stream) error {
	st, ok := s.(*stream)
	if !ok {
		return fmt.Errorf("sim: capture on %v, which is not a sim stream", s)
	}
	if err := d.failed(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if st.capture != nil {
		return fmt.Errorf("sim: stream %d is already being captured", st.id)
	}
	st.capture = &graph{}
	return nil
}

// EndCapture ends the capture on s and returns the graph.
func (d *Device) EndCapture(s cuda.Stream) (cuda.Graph, error) {
	st, ok := s.(*stream)
	if !ok {
		return nil, fmt.Errorf("sim: end of a capture on %v, which is not a sim stream", s)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g := st.capture
	if g == nil {
		return nil, fmt.Errorf("sim: stream %d is not being captured", st.id)
	}
	st.capture = nil
	d.stats.Graphs++
	return g, nil
}

// LaunchGraph replays g on s: one call, running every op it recorded.
func (d *Device) LaunchGraph(g cuda.Graph, s cuda.Stream) error {
	gr, ok := g.(*graph)
	if !ok {
		return fmt.Errorf("sim: launch of graph %v, which is not a sim graph", g)
	}
	if err := d.failed(); err != nil {
		return err
	}
	d.count(func(s *Stats) { s.Calls++; s.GraphLaunches++ })
	for _, op := range gr.ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// DestroyGraph releases g.
func (d *Device) DestroyGraph(g cuda.Graph) error {
	if _, ok := g.(*graph); !ok {
		return fmt.Errorf("sim: destroy of graph %v, which is not a sim graph", g)
	}
	return nil
}

// NewStream returns a stream; simulated streams run work at once.
func (d *Device) NewStream() (cuda.Stream, error) {
	if err := d.failed(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nstream++
	d.stats.Streams++
	return &stream{id: d.nstream}, nil
}

// Sync waits for s: there is nothing to wait for, but a fault raised by
// an earlier launch (InjectFault) surfaces here.
func (d *Device) Sync(s cuda.Stream) error {
	if st, ok := s.(*stream); ok {
		d.mu.Lock()
		capturing := st.capture != nil
		d.mu.Unlock()
		if capturing { // as CUDA refuses it (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
			return fmt.Errorf("sim: sync of stream %d while it is being captured", st.id)
		}
	}
	d.count(func(s *Stats) { s.Syncs++ })
	return d.failed()
}

// DestroyStream releases s.
func (d *Device) DestroyStream(s cuda.Stream) error { return nil }

// MemInfo reports the simulated memory.
func (d *Device) MemInfo() (cuda.MemInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return cuda.MemInfo{Free: d.opts.Memory - d.stats.AllocatedBytes, Total: d.opts.Memory}, nil
}

// Close fails if allocations are still live or a guard was overwritten.
func (d *Device) Close() error {
	d.mu.Lock()
	live := len(d.allocs)
	d.closed = true
	d.mu.Unlock()
	if err := d.Check(); err != nil {
		return err
	}
	if live > 0 {
		return fmt.Errorf("sim: closed with %d allocations not freed", live)
	}
	return nil
}

var (
	_ cuda.Device  = (*Device)(nil)
	_ cuda.Grapher = (*Device)(nil)
)

//go:build cuda

// These tests need a GPU: the test binary links gorgonia.org/cu, so on a
// machine whose driver does not answer cuInit it exits with status 2
// before any test runs (see the package doc). Build them anywhere with
//
//	go test -tags cuda -c -o /dev/null ./inference/cuda/cu/
package cu_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/cuda/cu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/sim"
	gocu "gorgonia.org/cu"
)

// suites is ONNX's backend test data, in the repository; BEAMML_CONFORMANCE_DIR
// names another copy, for a test binary run outside the checkout.
var suites = cmp.Or(os.Getenv("BEAMML_CONFORMANCE_DIR"), filepath.Join("..", "..", "..", "testing", "conformance", "testdata"))

func open(t testing.TB) *cu.Device {
	t.Helper()
	d, err := cu.Open(0)
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

func newBackend(t testing.TB) *cuda.Backend {
	t.Helper()
	b := cuda.NewBackend(func() (cuda.Device, error) { return open(t), nil })
	if err := b.Available(); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegistered(t *testing.T) {
	b, err := inference.ResolveDevice(inference.CUDA)
	if err != nil {
		t.Fatalf("ResolveDevice(cuda): %v", err)
	}
	if auto, err := inference.ResolveDevice(inference.Auto); err != nil || auto != b {
		t.Errorf("ResolveDevice(auto) = %v, %v; want the CUDA backend", auto, err)
	}
}

// Open loads cuBLAS at run time and says which: "cuBLAS 12.4.2
// (libcublas.so.12)", or the file's path where $BEAMML_CUBLAS names one.
func TestBLAS(t *testing.T) {
	d := open(t)
	if got := d.BLAS(); !regexp.MustCompile(`^cuBLAS 1[1-9]\.\d+\.\d+ \((\S*/)?libcublas\.so[.0-9]*\)$`).MatchString(got) {
		t.Errorf("BLAS() = %q", got)
	}
	t.Logf("%s: %s", d.Name(), d.BLAS())
}

func TestOpenBadOrdinal(t *testing.T) {
	_, err := cu.Open(1 << 20)
	if !errors.Is(err, inference.ErrNoDevice) {
		t.Fatalf("Open(1<<20): %v, want ErrNoDevice", err)
	}
}

// Open asks for blocking synchronisation on the primary context, so that a
// thread waiting for a batch sleeps instead of spinning a core.
func TestPrimaryContextBlocksOnSync(t *testing.T) {
	open(t)
	dev, err := gocu.GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	flags, active, err := dev.PrimaryCtxState()
	if err != nil {
		t.Fatal(err)
	}
	if active == 0 || flags&gocu.SchedMask != gocu.SchedBlockingSync {
		t.Errorf("primary context: active %d, flags %#x; want active with CU_CTX_SCHED_BLOCKING_SYNC (%#x)", active, flags, gocu.SchedBlockingSync)
	}
}

func TestCopies(t *testing.T) {
	d := open(t)
	t.Log(d.Name())
	const n = 1<<20 + 13
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	a, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(a)
	if a%256 != 0 {
		t.Errorf("Alloc returned %#x, not 256-byte aligned", a)
	}
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(b)
	if err := d.CopyHtoD(a, src); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if err := d.CopyDtoDAsync(b, a, n, s); err != nil {
		t.Fatal(err)
	}
	pinned, err := d.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.FreeHost(pinned)
	if err := d.CopyDtoHAsync(pinned, b, s); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pinned, src) {
		t.Error("device-to-device and async copies lost data")
	}
	clear(pinned)
	if err := d.CopyHtoDAsync(a, pinned, s); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(s); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := d.CopyDtoH(got, a); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(got, func(b byte) bool { return b != 0 }) {
		t.Error("async host-to-device copy of zeros left other bytes")
	}
}

func TestErrors(t *testing.T) {
	d := open(t)
	info, err := d.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if info.Total <= 0 || info.Free <= 0 || info.Free > info.Total {
		t.Errorf("MemInfo: %+v", info)
	}
	if p, err := d.Alloc(2 * info.Total); !errors.Is(err, inference.ErrOutOfMemory) {
		t.Errorf("Alloc(2×total): %v, want ErrOutOfMemory", err)
		if err == nil {
			d.Free(p)
		}
	} else {
		t.Log(err)
	}
	if err := d.Free(12345); err == nil {
		t.Error("Free of a stray address succeeded")
	}
	if _, err := d.Function("no_such_kernel"); err == nil {
		t.Error("Function of an unknown kernel succeeded")
	}
	if err := d.Gemm(nil, cuda.Gemm{M: 2, N: 2, K: 2, LDA: 1, LDB: 2, LDC: 2, Batch: 1}); err == nil {
		t.Error("Gemm with lda < M succeeded")
	}
}

// TestGemmMatchesSim runs the same products on the GPU (cuBLAS) and on the
// simulated device, whose Gemm is the reference for cuda.Gemm's
// column-major semantics.
func TestGemmMatchesSim(t *testing.T) {
	d := open(t)
	ref := sim.New(sim.Options{})
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	rs, _ := ref.NewStream()
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		transA, transB bool
		m, n, k, batch int
		alpha, beta    float32
	}{
		{false, false, 3, 5, 7, 1, 1, 0},
		{true, false, 17, 9, 33, 1, 1, 0},
		{false, true, 64, 31, 16, 1, 0.5, 1},
		{true, true, 8, 8, 8, 4, 1, 0},
		{false, false, 129, 65, 257, 3, 2, 0.25},
		{false, false, 1, 1, 0, 1, 1, 1},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			rowsA, colsA := tc.m, tc.k
			if tc.transA {
				rowsA, colsA = tc.k, tc.m
			}
			rowsB, colsB := tc.k, tc.n
			if tc.transB {
				rowsB, colsB = tc.n, tc.k
			}
			lda, ldb, ldc := max(1, rowsA)+1, max(1, rowsB)+2, tc.m+3
			sa, sb, sc := lda*colsA+5, ldb*colsB+7, ldc*tc.n+1
			g := cuda.Gemm{TransA: tc.transA, TransB: tc.transB, M: tc.m, N: tc.n, K: tc.k,
				Alpha: tc.alpha, Beta: tc.beta, LDA: lda, StrideA: int64(sa), LDB: ldb, StrideB: int64(sb),
				LDC: ldc, StrideC: int64(sc), Batch: tc.batch}
			inputs := [3][]float32{}
			for i, n := range []int{sa * tc.batch, sb * tc.batch, sc * tc.batch} {
				inputs[i] = make([]float32, max(n, 1))
				for j := range inputs[i] {
					inputs[i][j] = 2*r.Float32() - 1
				}
			}
			run := func(dev cuda.Device, st cuda.Stream) []float32 {
				var ptrs [3]cuda.Ptr
				for i, v := range inputs {
					p, err := dev.Alloc(int64(4 * len(v)))
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Free(p)
					if err := dev.CopyHtoD(p, floatBytes(v)); err != nil {
						t.Fatal(err)
					}
					ptrs[i] = p
				}
				g.A, g.B, g.C = ptrs[0], ptrs[1], ptrs[2]
				if err := dev.Gemm(st, g); err != nil {
					t.Fatal(err)
				}
				if err := dev.Sync(st); err != nil {
					t.Fatal(err)
				}
				out := make([]byte, 4*len(inputs[2]))
				if err := dev.CopyDtoH(out, ptrs[2]); err != nil {
					t.Fatal(err)
				}
				return bytesFloat(out)
			}
			got, want := run(d, s), run(ref, rs)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-4*float64(tc.k+1) {
					t.Fatalf("element %d: cuBLAS %g, sim %g", i, got[i], want[i])
				}
			}
		})
	}
}

// A kernel that writes to an illegal address (issue 14, item 4) makes a
// sticky error: Sync fails with an error wrapping
// inference.ErrDeviceFailed that names CUDA_ERROR_ILLEGAL_ADDRESS, and so
// does every later call. The fault kills the context for the rest of the
// process, so the test runs in a child process (this test binary again).
func TestIllegalAddressIsDeviceFailure(t *testing.T) {
	if os.Getenv("BEAMML_TEST_ILLEGAL_ADDRESS") != "child" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIllegalAddressIsDeviceFailure$", "-test.v")
		cmd.Env = append(os.Environ(), "BEAMML_TEST_ILLEGAL_ADDRESS=child")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	d, err := cu.Open(0) // not closed: the context it holds is lost, and the process ends
	if err != nil {
		t.Fatal(err)
	}
	dev, err := cuda.NewBackend(func() (cuda.Device, error) { return d, nil }).Open() // loads the kernels
	if err != nil {
		t.Fatal(err)
	}
	fill, err := dev.Function("shape_fill")
	if err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	// shape_fill(y, width, n, bits) at a page the process never mapped.
	if err := dev.Launch(fill, cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 32, Y: 1, Z: 1}, s, []uint64{0x1000, 4, 32, 0}); err != nil {
		t.Fatalf("launch: %v (a launch is queued: the fault should surface at Sync)", err)
	}
	err = dev.Sync(s)
	if !errors.Is(err, inference.ErrDeviceFailed) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("Sync after the fault: %v, want CUDA_ERROR_ILLEGAL_ADDRESS wrapping ErrDeviceFailed", err)
	}
	t.Logf("Sync: %v", err)
	if _, err := dev.Alloc(1 << 20); !errors.Is(err, inference.ErrDeviceFailed) {
		t.Errorf("Alloc after the fault: %v, want the sticky error", err)
	}
}

// The registered backend opens every device the driver sees, and a model
// compiled on more than one is replicated on each (issue 14, item 6).
func TestOpenAll(t *testing.T) {
	n, err := gocu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	devs, err := cu.OpenAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != n {
		t.Errorf("OpenAll opened %d devices, the driver sees %d", len(devs), n)
	}
	b := cuda.NewMultiBackend(func() ([]cuda.Device, error) { return devs, nil })
	m, err := b.Compile(mlp(t))
	if err != nil {
		t.Fatal(err)
	}
	r, replicated := m.(*cuda.Replicas)
	if replicated != (n > 1) || (replicated && len(r.Models()) != n) {
		t.Errorf("a model on %d device(s) compiled to a %T", n, m)
	}
	for i, d := range devs {
		t.Logf("device %d: %s", i, d.Name())
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	for _, d := range devs {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

// onesProduct returns C[0] of Alpha·A·B for n×n matrices A of x and B of
// ones on one stream of d, in each precision asked for in turn: n·x·Alpha
// when the inputs reach the product unrounded. Asking for float32 again
// after another precision shows the stream's handle goes back.
func onesProduct(t *testing.T, d *cu.Device, n int, x, alpha float32, precisions ...inference.Precision) []float32 {
	a, b := make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = x, 1
	}
	alloc := func(v []float32) cuda.Ptr { return upload(t, d, v) }
	pa, pb, pc := alloc(a), alloc(b), alloc(make([]float32, n*n))
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	var got []float32
	for _, p := range precisions {
		g := cuda.Gemm{M: n, N: n, K: n, Alpha: alpha, A: pa, LDA: n, B: pb, LDB: n, C: pc, LDC: n, Batch: 1, Precision: p}
		if err := d.Gemm(s, g); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(s); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 4*n*n)
		if err := d.CopyDtoH(out, pc); err != nil {
			t.Fatal(err)
		}
		got = append(got, bytesFloat(out)[0])
	}
	return got
}

// smMajor is the compute capability's major of d ("… sm_86" → 8), 0 when
// its name does not say.
func smMajor(d *cu.Device) int {
	var major int
	if _, err := fmt.Sscanf(d.Name()[strings.LastIndex(d.Name(), "sm_")+3:], "%1d", &major); err != nil {
		return 0
	}
	return major
}

// TF32 reaches cuBLAS (issue 15, item 1): a 256-deep product of 1 + 2^-12
// by 1 is 256·(1 + 2^-12) in float32 and 256 on tensor cores, which round
// the inputs to TF32's 10-bit mantissa; GPUs before sm_80 have none and
// compute in float32 either way.
func TestTF32Gemm(t *testing.T) {
	d := open(t)
	const n = 256
	x := float32(1 + math.Pow(2, -12))
	got := onesProduct(t, d, n, x, 1, inference.FP32, inference.TF32, inference.FP32)
	fp32, tf32, again := got[0], got[1], got[2]
	t.Logf("%s: float32 %.7g, TF32 %.7g", d.Name(), fp32, tf32)
	if want := float32(n) * x; math.Abs(float64(fp32-want)) > 1e-4 || fp32 != again {
		t.Errorf("float32 product %.7g then %.7g, want %.7g both times (the handle's math mode must go back)", fp32, again, want)
	}
	if smMajor(d) >= 8 && tf32 != n {
		t.Errorf("TF32 product on %s is %.7g, want %d: cuBLAS did not round the inputs to TF32", d.Name(), tf32, n)
	}
}

// FP16 reaches cuBLAS (issue 15, item 1): 256-deep products of x by 1 on
// tensor cores with float32 matrices and CUBLAS_COMPUTE_32F_FAST_16F,
// which permits cuBLAS to round the inputs to half and does not require
// it: cuBLAS 13.1 on an H200 rounds them to TF32. For x = 1 + 2^-12 half
// and TF32 both hold 1: 256 against float32's 256·(1 + 2^-12), so the
// mode reached cuBLAS. For x = 2^-20·(1 + 2^-10), scaled back by
// Alpha = 2^20, TF32 holds x but half, whose subnormals step by 2^-24,
// holds 2^-20: 256 in half, 256·(1 + 2^-10) in TF32 and float32; either
// is right, and the test says which cuBLAS chose. GPUs before sm_70 have
// no tensor cores and compute in float32.
func TestFP16Gemm(t *testing.T) {
	d := open(t)
	const n = 256
	for _, c := range []struct {
		x, alpha         float32
		fp32, tf32, fp16 float32
	}{
		{float32(1 + math.Pow(2, -12)), 1, n * float32(1+math.Pow(2, -12)), n, n},
		{float32(math.Pow(2, -20) * (1 + math.Pow(2, -10))), 1 << 20, n * float32(1+math.Pow(2, -10)), n * float32(1+math.Pow(2, -10)), n},
	} {
		got := onesProduct(t, d, n, c.x, c.alpha, inference.FP32, inference.FP16, inference.TF32, inference.FP32)
		fp32, fp16, tf32, again := got[0], got[1], got[2], got[3]
		t.Logf("%s: x = %g: float32 %.7g, FP16 %.7g, TF32 %.7g", d.Name(), c.x, fp32, fp16, tf32)
		if fp32 != c.fp32 || again != c.fp32 {
			t.Errorf("x = %g: float32 product %.7g then %.7g, want %.7g both times", c.x, fp32, again, c.fp32)
		}
		if smMajor(d) >= 7 {
			switch {
			case fp16 == c.fp16:
				t.Logf("x = %g: cuBLAS rounded FAST_16F's inputs to half", c.x)
			case smMajor(d) >= 8 && fp16 == c.tf32 && c.tf32 != c.fp32:
				t.Logf("x = %g: cuBLAS rounded FAST_16F's inputs to TF32", c.x)
			case smMajor(d) >= 8 && fp16 == c.tf32:
				t.Logf("x = %g: cuBLAS kept FAST_16F's inputs as TF32 holds them (not as half)", c.x)
			default:
				t.Errorf("x = %g: FP16 product on %s is %.7g, want %.7g (inputs in half) or, from sm_80, %.7g (in TF32): cuBLAS did not round the inputs", c.x, d.Name(), fp16, c.fp16, c.tf32)
			}
		}
		if smMajor(d) >= 8 && tf32 != c.tf32 {
			t.Errorf("x = %g: TF32 product after FP16 on %s is %.7g, want %.7g", c.x, d.Name(), tf32, c.tf32)
		}
	}
}

// Concurrent streams multiply on handles of their own (issue 14, item 8):
// each stream's first product creates its handle, no two streams share
// one, and products queued from many goroutines at once are right. The
// legacy default stream keeps the device's handle.
func TestGemmHandlePerStream(t *testing.T) {
	d := open(t)
	const streams, rounds, n = 4, 16, 48
	a, b := make([]float32, n*n), make([]float32, n*n)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range a {
		a[i], b[i] = 2*r.Float32()-1, 2*r.Float32()-1
	}
	want := make([]float32, n*n) // column-major C = A·B
	for j := range n {
		for i := range n {
			var s float64
			for k := range n {
				s += float64(a[k*n+i]) * float64(b[j*n+k])
			}
			want[j*n+i] = float32(s)
		}
	}
	alloc := func(v []float32) cuda.Ptr { return upload(t, d, v) }
	pa, pb := alloc(a), alloc(b)
	handles := make([]uintptr, streams)
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		pc := alloc(make([]float32, n*n))
		s, err := d.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := d.DestroyStream(s); err != nil {
				t.Error(err)
			}
		})
		if _, ok := cu.StreamBLAS(s); ok {
			t.Fatalf("stream %d has a cuBLAS handle before its first product", i)
		}
		wg.Go(func() {
			g := cuda.Gemm{M: n, N: n, K: n, Alpha: 1, A: pa, LDA: n, B: pb, LDB: n, C: pc, LDC: n, Batch: 1}
			for range rounds {
				if err := d.Gemm(s, g); err != nil {
					errs <- err
					return
				}
			}
			if err := d.Sync(s); err != nil {
				errs <- err
				return
			}
			out := make([]byte, 4*n*n)
			if err := d.CopyDtoH(out, pc); err != nil {
				errs <- err
				return
			}
			for j, v := range bytesFloat(out) {
				if math.Abs(float64(v-want[j])) > 1e-4*(1+math.Abs(float64(want[j]))) {
					errs <- fmt.Errorf("stream %d: element %d is %g, want %g", i, j, v, want[j])
					return
				}
			}
			handles[i], _ = cu.StreamBLAS(s)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[uintptr]int{}
	for i, h := range handles {
		if h == 0 {
			t.Errorf("stream %d has no cuBLAS handle after its products", i)
		} else if j, dup := seen[h]; dup {
			t.Errorf("streams %d and %d share cuBLAS handle %#x", j, i, h)
		}
		seen[h] = i
	}
	pc := alloc(make([]float32, n*n))
	if err := d.Gemm(nil, cuda.Gemm{M: n, N: n, K: n, Alpha: 1, A: pa, LDA: n, B: pb, LDB: n, C: pc, LDC: n, Batch: 1}); err != nil {
		t.Fatalf("product on the legacy default stream: %v", err)
	}
	if err := d.Sync(nil); err != nil {
		t.Fatal(err)
	}
}

// upload copies v to new device memory, freed when the test ends.
func upload(t *testing.T, d *cu.Device, v []float32) cuda.Ptr {
	t.Helper()
	p, err := d.Alloc(int64(4 * len(v)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free(p) })
	if err := d.CopyHtoD(p, floatBytes(v)); err != nil {
		t.Fatal(err)
	}
	return p
}

func floatBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func bytesFloat(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestOpsMatchCPU runs every check case on the GPU and compares with the
// CPU backend, as the container's selfcheck does.
func TestOpsMatchCPU(t *testing.T) {
	b := newBackend(t)
	for _, c := range check.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			if err := check.Run(context.Background(), b, c); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestConcurrentRuns runs one model from many goroutines at once: each
// call finds the context on whatever thread it lands on, and the runs'
// streams and cuBLAS calls do not mix. Every workspace captures a CUDA
// graph per batch size on its second run of it and replays it after, on
// whatever OS thread the goroutine is on (relaxed capture), so the results
// check the graphs too.
func TestConcurrentRuns(t *testing.T) {
	b := newBackend(t)
	want, err := cpu.Backend{}.Compile(mlp(t))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	m, err := b.Compile(mlp(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				feeds := map[string]inference.Tensor{"x": check.Rand(uint64(100*w+i), -1, 1, 1+(w+i)%9, 64)}
				ctx := context.Background()
				got, err := m.Run(ctx, feeds)
				if err != nil {
					t.Error(err)
					return
				}
				exp, err := want.Run(ctx, feeds)
				if err != nil {
					t.Error(err)
					return
				}
				if err := check.Compare(got["y"], exp["y"], 1e-4, 1e-5); err != nil {
					t.Errorf("worker %d run %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// mlp is y = Relu(x·w + bias), x of shape [batch, 64].
func mlp(t *testing.T) *graph.Graph {
	t.Helper()
	g := &graph.Graph{Name: "mlp", Opsets: map[string]int64{"": 17}, Initializers: map[string]inference.Tensor{
		"w": check.Rand(1, -1, 1, 64, 32), "bias": check.Rand(2, -1, 1, 32),
	}}
	g.Inputs = []graph.Value{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, 64}}}
	g.Outputs = []graph.Value{{Name: "y"}}
	g.Nodes = []*graph.Node{
		{Name: "mm", OpType: "MatMul", Inputs: []string{"x", "w"}, Outputs: []string{"h"}},
		{Name: "add", OpType: "Add", Inputs: []string{"h", "bias"}, Outputs: []string{"a"}},
		{Name: "relu", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"y"}},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestConformance runs ONNX's backend tests on the GPU and on the CPU: every
// test that passes on the CPU must pass on the GPU.
func TestConformance(t *testing.T) {
	if _, err := os.Stat(suites); err != nil {
		t.Fatalf("conformance data not found at %s (set BEAMML_CONFORMANCE_DIR): %v", suites, err)
	}
	gpu := newBackend(t)
	var dirs []string
	filepath.WalkDir(suites, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "model.onnx" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatalf("no model.onnx under %s", suites)
	}
	var cpuPass, gpuPass int
	for _, dir := range dirs {
		name, _ := filepath.Rel(suites, dir)
		cpuErr := conformanceTest(dir, cpu.Backend{})
		if cpuErr != nil {
			continue
		}
		cpuPass++
		if err := conformanceTest(dir, gpu); err != nil {
			t.Errorf("%s: passes on the CPU, not on the GPU: %v", name, err)
			continue
		}
		gpuPass++
	}
	t.Logf("%d of %d tests pass on the CPU; %d of those pass on the GPU", cpuPass, len(dirs), gpuPass)
}

// conformanceTest runs one test folder on b, as testing/conformance does:
// each test_data_set_N's inputs, outputs compared with rtol 1e-3, atol 1e-4.
func conformanceTest(dir string, b graph.Compiler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return err
	}
	g, err := onnx.Decode(data, dir)
	if err != nil {
		return err
	}
	inputs, outputs := slices.Clone(g.Inputs), slices.Clone(g.Outputs)
	m, err := b.Compile(g)
	if err != nil {
		return err
	}
	defer m.Close()
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return fmt.Errorf("no test_data_set_N folder")
	}
	for _, set := range sets {
		feeds := map[string]inference.Tensor{}
		for k, in := range inputs {
			t, err := readTensor(filepath.Join(set, fmt.Sprintf("input_%d.pb", k)))
			if err != nil {
				return err
			}
			feeds[in.Name] = t
		}
		got, err := m.Run(context.Background(), feeds)
		if err != nil {
			return err
		}
		for k, o := range outputs {
			want, err := readTensor(filepath.Join(set, fmt.Sprintf("output_%d.pb", k)))
			if err != nil {
				return err
			}
			if err := check.Compare(got[o.Name], want, 1e-3, 1e-4); err != nil {
				return fmt.Errorf("%s output %q: %w", filepath.Base(set), o.Name, err)
			}
		}
	}
	return nil
}

func readTensor(path string) (inference.Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return inference.Tensor{}, err
	}
	_, t, err := onnx.ReadTensor(b)
	return t, err
}

//go:build cgo && cuda

package gpuinfo

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/beamml/beamml/inference"
)

// fakeGPU is what a fake NVML reports for one device. A zero Return is
// nvml.SUCCESS.
type fakeGPU struct {
	mem              nvml.Memory
	memErr           nvml.Return
	util             uint32
	utilErr          nvml.Return
	procs, mpsProcs  []nvml.ProcessInfo
	procsErr, mpsErr nvml.Return
}

// fakeNVML is an NVML with gpus, on go-nvml's generated mock: a method the
// fake does not set panics when called, and every device query fails the
// test if it comes before Init or after Shutdown.
func fakeNVML(t *testing.T, gpus ...fakeGPU) *mock.Interface {
	started := false
	check := func(call string) {
		if !started {
			t.Errorf("%s called while NVML is not started", call)
		}
	}
	lib := &mock.Interface{
		InitFunc:     func() nvml.Return { started = true; return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { started = false; return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) {
			check("nvmlDeviceGetCount")
			return len(gpus), nvml.SUCCESS
		},
	}
	lib.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		check("nvmlDeviceGetHandleByIndex")
		if i < 0 || i >= len(gpus) {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		g := gpus[i]
		return &mock.Device{
			GetUUIDFunc: func() (string, nvml.Return) {
				check("nvmlDeviceGetUUID")
				return "GPU-fake-" + string(rune('a'+i)), nvml.SUCCESS
			},
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				check("nvmlDeviceGetMemoryInfo")
				return g.mem, g.memErr
			},
			GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
				check("nvmlDeviceGetUtilizationRates")
				return nvml.Utilization{Gpu: g.util, Memory: g.util / 2}, g.utilErr
			},
			GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
				check("nvmlDeviceGetComputeRunningProcesses")
				return g.procs, g.procsErr
			},
			GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
				check("nvmlDeviceGetMPSComputeRunningProcesses")
				return g.mpsProcs, g.mpsErr
			},
		}, nvml.SUCCESS
	}
	return lib
}

const (
	gib     = 1 << 30
	mib     = 1 << 20
	ourPID  = 4242
	someone = 999
)

func memory(total, free uint64) nvml.Memory {
	return nvml.Memory{Total: total, Free: free, Used: total - free}
}

// The sampler reports each device's memory and utilisation, and finds this
// process's device memory among the compute processes or the MPS clients,
// leaving -1 for what NVML does not give.
func TestSamplerReadsEachDevice(t *testing.T) {
	lib := fakeNVML(t,
		fakeGPU{ // ours among other compute processes
			mem: memory(16*gib, 10*gib), util: 42,
			procs: []nvml.ProcessInfo{{Pid: someone, UsedGpuMemory: 1 * gib}, {Pid: ourPID, UsedGpuMemory: 3 * gib}},
		},
		fakeGPU{ // a MIG-like device without utilisation; ours among the MPS clients
			mem: memory(24*gib, 20*gib), utilErr: nvml.ERROR_NOT_SUPPORTED,
			procsErr: nvml.ERROR_NOT_SUPPORTED, mpsProcs: []nvml.ProcessInfo{{Pid: ourPID, UsedGpuMemory: 512 * mib}},
		},
		fakeGPU{ // another process only: ours is not on this device, or its pid is namespaced
			mem: memory(8*gib, 7*gib), util: 100,
			procs: []nvml.ProcessInfo{{Pid: someone, UsedGpuMemory: 1 * gib}},
		},
		fakeGPU{ // ours listed, but NVML withholds the amount
			mem: memory(8*gib, 8*gib), util: 0,
			procs: []nvml.ProcessInfo{{Pid: ourPID, UsedGpuMemory: notAvailable}},
		},
	)
	s, err := newSampler(lib, ourPID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{
		{Index: 0, UUID: "GPU-fake-a", MemoryUsed: 6 * gib, MemoryFree: 10 * gib, MemoryTotal: 16 * gib, Utilization: 42, ProcessMemory: 3 * gib},
		{Index: 1, UUID: "GPU-fake-b", MemoryUsed: 4 * gib, MemoryFree: 20 * gib, MemoryTotal: 24 * gib, Utilization: -1, ProcessMemory: 512 * mib},
		{Index: 2, UUID: "GPU-fake-c", MemoryUsed: 1 * gib, MemoryFree: 7 * gib, MemoryTotal: 8 * gib, Utilization: 100, ProcessMemory: -1},
		{Index: 3, UUID: "GPU-fake-d", MemoryUsed: 0, MemoryFree: 8 * gib, MemoryTotal: 8 * gib, Utilization: 0, ProcessMemory: -1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Sample:\n%v\nwant\n%v", got, want)
	}
	if got := got[0].String(); got != "GPU 0 (GPU-fake-a): memory 6144 MiB used, 10240 MiB free of 16384 MiB, utilization 42%, this process 3072 MiB" {
		t.Errorf("String: %s", got)
	}
	if got := got[2].String(); !strings.HasSuffix(got, "utilization 100%, this process unknown") {
		t.Errorf("String: %s", got)
	}

	// NVML stays started between samples, and Close shuts it down once.
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	if n := len(lib.InitCalls()); n != 1 {
		t.Errorf("%d nvmlInit calls for two samples, want 1", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(lib.ShutdownCalls()); n != 1 {
		t.Errorf("%d nvmlShutdown calls after two Closes, want 1", n)
	}
	counts := len(lib.DeviceGetCountCalls())
	if _, err := s.Sample(); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("Sample after Close: %v, want an error", err)
	}
	if n := len(lib.DeviceGetCountCalls()); n != counts {
		t.Errorf("Sample after Close called NVML")
	}
}

// A device that does not answer its memory query fails the sample with the
// device and the query named.
func TestSamplerNVMLError(t *testing.T) {
	lib := fakeNVML(t,
		fakeGPU{mem: memory(16*gib, 10*gib), util: 42},
		fakeGPU{memErr: nvml.ERROR_GPU_IS_LOST},
	)
	s, err := newSampler(lib, ourPID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	usage, err := s.Sample()
	if err == nil || usage != nil {
		t.Fatalf("Sample = %v, %v; want an error", usage, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "nvmlDeviceGetMemoryInfo(1)") ||
		!(strings.Contains(msg, "ERROR_GPU_IS_LOST") || strings.Contains(msg, "GPU is lost")) {
		t.Errorf("Sample: %v, want the query, the device and NVML's answer", err)
	}
}

// Where NVML does not start, NewSampler says why, wrapping ErrNoDevice,
// and calls nothing else (the fake panics on any other call).
func TestSamplerWithoutNVML(t *testing.T) {
	for _, tc := range []struct {
		name string
		lib  nvml.Interface
		why  string
	}{
		{"no driver", &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}, "kernel driver is not loaded"},
		{"no library", nvml.New(nvml.WithLibraryPath(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))), "libnvidia-ml.so.1 is not installed"},
	} {
		s, err := newSampler(tc.lib, ourPID)
		if s != nil || !errors.Is(err, inference.ErrNoDevice) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: newSampler = %v, %v; want ErrNoDevice saying %q", tc.name, s, err, tc.why)
		}
	}
}

// NewSampler runs on every machine: with a GPU it samples it, and without
// one it fails with ErrNoDevice.
func TestNewSampler(t *testing.T) {
	s, err := NewSampler()
	if err != nil {
		if !errors.Is(err, inference.ErrNoDevice) {
			t.Fatalf("NewSampler: %v, want an error wrapping ErrNoDevice", err)
		}
		t.Logf("no GPU: %v", err)
		return
	}
	defer s.Close()
	usage, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range usage {
		t.Log(u)
		if u.Index != i || !strings.HasPrefix(u.UUID, "GPU-") || u.MemoryTotal <= 0 || u.MemoryFree > u.MemoryTotal ||
			u.MemoryUsed > u.MemoryTotal || u.Utilization > 100 {
			t.Errorf("device %d: %+v", i, u)
		}
	}
}

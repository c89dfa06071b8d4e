//go:build cgo && cuda

package gpuinfo

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sampler reads the usage of every GPU, keeping NVML initialised between
// samples: a sample costs a few NVML queries per device, not a load of the
// library. It is safe for concurrent use.
type Sampler struct {
	mu     sync.Mutex
	lib    nvml.Interface // initialised until Close
	pid    int            // the process whose device memory Usage.ProcessMemory is
	closed bool
}

// NewSampler starts NVML for a Sampler of this process. Without the NVIDIA
// library, without a loaded driver, or without permission it fails with an
// error that says which, wrapping inference.ErrNoDevice.
func NewSampler() (*Sampler, error) { return newSampler(nvml.New(), os.Getpid()) }

func newSampler(lib nvml.Interface, pid int) (*Sampler, error) {
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, initErr(r)
	}
	return &Sampler{lib: lib, pid: pid}, nil
}

// Sample reads every GPU's usage now, in NVML's index order. A device that
// does not answer its memory query fails the sample, naming the device and
// the query (a GPU that fell off the bus answers "GPU is lost").
func (s *Sampler) Sample() ([]Usage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// The library may be unloaded: a call now would kill the process
		// (docs/design.md, rule 11).
		return nil, errors.New("gpuinfo: Sample after Close")
	}
	return sample(s.lib, s.pid)
}

// Close shuts NVML down. Calls after the first do nothing.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if r := s.lib.Shutdown(); r != nvml.SUCCESS {
		return nvmlErr("nvmlShutdown", r)
	}
	return nil
}

// sample reads lib, which Init has started, for process pid.
func sample(lib nvml.Interface, pid int) ([]Usage, error) {
	n, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetCount", r)
	}
	usage := make([]Usage, 0, n)
	for i := range n {
		h, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		u := Usage{Index: i, Utilization: -1, ProcessMemory: -1}
		if u.UUID, r = h.GetUUID(); r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetUUID(%d)", i), r)
		}
		mem, r := h.GetMemoryInfo()
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetMemoryInfo(%d)", i), r)
		}
		u.MemoryUsed, u.MemoryFree, u.MemoryTotal = int64(mem.Used), int64(mem.Free), int64(mem.Total)
		if rates, r := h.GetUtilizationRates(); r == nvml.SUCCESS {
			u.Utilization = int(rates.Gpu)
		}
		u.ProcessMemory = processMemory(h, pid)
		usage = append(usage, u)
	}
	return usage, nil
}

// notAvailable is NVML_VALUE_NOT_AVAILABLE in an unsigned field.
const notAvailable = ^uint64(0)

// processMemory finds pid among h's compute processes, then among its MPS
// clients, and returns its device memory, or -1.
func processMemory(h nvml.Device, pid int) int64 {
	for _, list := range []func() ([]nvml.ProcessInfo, nvml.Return){h.GetComputeRunningProcesses, h.GetMPSComputeRunningProcesses} {
		procs, r := list()
		if r != nvml.SUCCESS {
			continue
		}
		for _, p := range procs {
			if int(p.Pid) == pid {
				if p.UsedGpuMemory == notAvailable {
					return -1
				}
				return int64(p.UsedGpuMemory)
			}
		}
	}
	return -1
}

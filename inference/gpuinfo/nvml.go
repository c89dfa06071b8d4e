//go:build cgo && cuda

package gpuinfo

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/beamml/beamml/inference"
)

// Devices lists the GPUs NVML sees. Without the NVIDIA library, without a
// loaded driver, or with no GPU, it fails with an error that says which,
// wrapping inference.ErrNoDevice.
func Devices() ([]Device, error) { return devices(nvml.New()) }

// devices reads lib. Nothing is called before Init succeeds: a call into
// the library that did not load kills the process (docs/design.md, rule 11).
func devices(lib nvml.Interface) ([]Device, error) {
	if r := lib.Init(); r != nvml.SUCCESS {
		return nil, initErr(r)
	}
	defer lib.Shutdown()
	driver, r := lib.SystemGetDriverVersion()
	if r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlSystemGetDriverVersion", r)
	}
	cudaVersion := "unknown"
	if v, r := lib.SystemGetCudaDriverVersion(); r == nvml.SUCCESS {
		cudaVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	n, r := lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		return nil, nvmlErr("nvmlDeviceGetCount", r)
	}
	if n == 0 {
		return nil, fmt.Errorf("gpuinfo: NVML (driver %s) sees no GPU: %w", driver, inference.ErrNoDevice)
	}
	devs := make([]Device, 0, n)
	for i := range n {
		h, r := lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetHandleByIndex(%d)", i), r)
		}
		d := Device{Index: i, DriverVersion: driver, CUDAVersion: cudaVersion}
		if d.Name, r = h.GetName(); r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetName(%d)", i), r)
		}
		if d.UUID, r = h.GetUUID(); r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetUUID(%d)", i), r)
		}
		if d.Major, d.Minor, r = h.GetCudaComputeCapability(); r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetCudaComputeCapability(%d)", i), r)
		}
		mem, r := h.GetMemoryInfo()
		if r != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("nvmlDeviceGetMemoryInfo(%d)", i), r)
		}
		d.MemoryTotal, d.MemoryFree = int64(mem.Total), int64(mem.Free)
		d.ComputeMode = "unknown"
		if m, r := h.GetComputeMode(); r == nvml.SUCCESS {
			d.ComputeMode = computeMode(m)
		}
		d.MPS, d.MPSDetail = mps(lib, h)
		devs = append(devs, d)
	}
	return devs, nil
}

func initErr(r nvml.Return) error {
	why := "NVML did not start"
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		why = "the NVIDIA management library libnvidia-ml.so.1 is not installed (no NVIDIA driver on this machine, or not mounted into the container)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		why = "the NVIDIA kernel driver is not loaded (no GPU on this machine, or the driver is not running)"
	case nvml.ERROR_NO_PERMISSION:
		why = "no permission to open the GPU device files (/dev/nvidia*)"
	}
	return fmt.Errorf("gpuinfo: %s: nvmlInit: %v: %w", why, r, inference.ErrNoDevice)
}

func nvmlErr(call string, r nvml.Return) error {
	return fmt.Errorf("gpuinfo: %s: %v", call, r)
}

func computeMode(m nvml.ComputeMode) ComputeMode {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return Default
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return ExclusiveThread
	case nvml.COMPUTEMODE_PROHIBITED:
		return Prohibited
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return ExclusiveProcess
	}
	return ComputeMode(fmt.Sprintf("mode %d", m))
}

// mpsServer is the process name of the MPS server.
const mpsServer = "nvidia-cuda-mps-server"

// mps decides whether an MPS server serves h (see the package doc).
func mps(lib nvml.Interface, h nvml.Device) (bool, string) {
	var notes []string
	clients, r := h.GetMPSComputeRunningProcesses()
	switch {
	case r == nvml.SUCCESS && len(clients) > 0:
		return true, fmt.Sprintf("%d MPS client process(es)", len(clients))
	case r != nvml.SUCCESS:
		notes = append(notes, fmt.Sprintf("MPS clients: %v", r))
	}
	procs, r := h.GetComputeRunningProcesses()
	if r != nvml.SUCCESS {
		return false, strings.Join(append(notes, fmt.Sprintf("compute processes: %v", r)), "; ")
	}
	for _, p := range procs {
		name, r := lib.SystemGetProcessName(int(p.Pid))
		if r == nvml.SUCCESS && filepath.Base(name) == mpsServer {
			return true, fmt.Sprintf("%s (pid %d) among the compute processes", mpsServer, p.Pid)
		}
	}
	return false, strings.Join(append(notes, fmt.Sprintf("no %s among %d compute process(es)", mpsServer, len(procs))), "; ")
}

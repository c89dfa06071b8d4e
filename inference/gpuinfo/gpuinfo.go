// Package gpuinfo describes the NVIDIA GPUs of this machine as the driver's
// management library (NVML, libnvidia-ml.so.1) sees them: name, UUID,
// compute capability, memory, compute mode, driver and CUDA versions, and
// whether an MPS server serves the device; and, through a Sampler, how much
// of each is in use (Usage: memory, utilisation, this process's memory).
// It runs no CUDA code, so it answers where the CUDA backend cannot start,
// and says why.
//
// Who it is for: tools and operators that report what GPUs a worker sees
// (container/selfcheck prints it), and RunInference's BeamML_GPU metrics,
// which sample Usage; a pipeline needs nothing from it to run on a GPU.
//
// NVML is reached through github.com/NVIDIA/go-nvml, which needs cgo but no
// NVIDIA library at build time: it loads libnvidia-ml.so.1 at run time
// (docs/design.md, rule 2). It is compiled only into binaries built with
// cgo and the cuda tag, the GPU worker's build, so that a CPU pipeline's
// build has no GPU code (and none of go-nvml's cgo warnings); elsewhere
// Devices and NewSampler fail saying so. Every error that means "no GPU
// here" wraps inference.ErrNoDevice.
//
// # MPS
//
// Device.MPS is true when NVML shows an MPS server on the device: either
// nvmlDeviceGetMPSComputeRunningProcesses lists MPS client processes
// (Volta and later), or one of the device's compute processes
// (nvmlDeviceGetComputeRunningProcesses) is named nvidia-cuda-mps-server
// (nvmlSystemGetProcessName). The MPS control daemon starts a server only
// when its first client connects, so on a machine set up for MPS where no
// CUDA process has run yet, MPS is false; MPSControl tells whether a control
// daemon is listening. In a container with its own PID namespace NVML's
// host process ids may have no name; the client list still answers.
package gpuinfo

import (
	"fmt"
	"os"
	"path/filepath"
)

// Device is one GPU, as NVML reports it.
type Device struct {
	Index int    // NVML's index (PCI bus order; CUDA's default order may differ)
	Name  string // "NVIDIA L4"
	UUID  string // "GPU-5c0d…"
	// Major and Minor are the compute capability: 8 and 9 for sm_89.
	Major, Minor int
	// MemoryTotal and MemoryFree are in bytes.
	MemoryTotal, MemoryFree int64
	ComputeMode             ComputeMode
	// DriverVersion is the kernel driver's version: "535.183.01".
	// CUDAVersion is the newest CUDA the driver supports: "12.2".
	DriverVersion, CUDAVersion string
	// MPS reports whether an MPS server serves the device, and MPSDetail
	// how that was decided (see the package doc).
	MPS       bool
	MPSDetail string
}

func (d Device) String() string {
	mps := "no MPS server"
	if d.MPS {
		mps = "MPS: " + d.MPSDetail
	}
	return fmt.Sprintf("GPU %d: %s (sm_%d%d), %s, memory %d MiB free of %d MiB, compute mode %s, driver %s (CUDA %s), %s",
		d.Index, d.Name, d.Major, d.Minor, d.UUID, d.MemoryFree>>20, d.MemoryTotal>>20, d.ComputeMode, d.DriverVersion, d.CUDAVersion, mps)
}

// ComputeMode says which processes may create contexts on a device.
type ComputeMode string

// NVML's compute modes. Under MPS the device is usually in
// ExclusiveProcess mode: the MPS server is the one process, and its
// clients share it.
const (
	Default          ComputeMode = "default"           // any number of processes
	ExclusiveThread  ComputeMode = "exclusive-thread"  // deprecated by NVIDIA
	Prohibited       ComputeMode = "prohibited"        // no process: the CUDA backend cannot run
	ExclusiveProcess ComputeMode = "exclusive-process" // one process (or one MPS server)
)

// MPSControl reports whether an MPS control daemon listens on this machine:
// its pipe directory ($CUDA_MPS_PIPE_DIRECTORY, /tmp/nvidia-mps by default)
// holds a "control" pipe. CUDA clients of such a machine connect through
// MPS, and the daemon starts a server for them.
func MPSControl() (dir string, ok bool) {
	dir = os.Getenv("CUDA_MPS_PIPE_DIRECTORY")
	if dir == "" {
		dir = "/tmp/nvidia-mps"
	}
	_, err := os.Stat(filepath.Join(dir, "control"))
	return dir, err == nil
}

package gpuinfo

import "fmt"

// Usage is how much of one GPU is in use at the moment of a sample, as NVML
// reports it. A field NVML cannot give is -1.
type Usage struct {
	Index int    // NVML's index, as in Device
	UUID  string // "GPU-5c0d…"
	// MemoryUsed, MemoryFree and MemoryTotal are the device's memory in
	// bytes, over all processes (nvmlDeviceGetMemoryInfo).
	MemoryUsed, MemoryFree, MemoryTotal int64
	// Utilization is the percentage of the last sample period (1/6 s to
	// 1 s, by device) in which one or more kernels ran
	// (nvmlDeviceGetUtilizationRates), or -1 where the device does not
	// report it (a MIG instance, for one).
	Utilization int
	// ProcessMemory is the device memory of the sampling process in bytes:
	// the entry for its process id among the device's compute processes
	// (nvmlDeviceGetComputeRunningProcesses) or MPS clients
	// (nvmlDeviceGetMPSComputeRunningProcesses). It is -1 when neither list
	// holds the process or NVML withholds the amount: the process has no
	// CUDA context on the device, or it runs in a container with its own
	// PID namespace, where NVML's host process ids differ from os.Getpid.
	ProcessMemory int64
}

func (u Usage) String() string {
	process := "unknown"
	if u.ProcessMemory >= 0 {
		process = fmt.Sprintf("%d MiB", u.ProcessMemory>>20)
	}
	utilization := "unknown"
	if u.Utilization >= 0 {
		utilization = fmt.Sprintf("%d%%", u.Utilization)
	}
	return fmt.Sprintf("GPU %d (%s): memory %d MiB used, %d MiB free of %d MiB, utilization %s, this process %s",
		u.Index, u.UUID, u.MemoryUsed>>20, u.MemoryFree>>20, u.MemoryTotal>>20, utilization, process)
}

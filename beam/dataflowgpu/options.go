package dataflowgpu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// ErrInvalidOptions is the error every failed [Options.Validate] wraps, ahead
// of the list of problems.
var ErrInvalidOptions = errors.New("dataflowgpu: invalid Dataflow GPU options")

// minDiskSizeGB is the smallest worker boot disk Validate accepts. A CUDA
// container image is several GB, more than fits beside the OS on Dataflow's
// default boot disk for batch jobs with Dataflow Shuffle (25 GB); the Dataflow
// GPU guide, https://cloud.google.com/dataflow/docs/gpu/use-gpus, asks for a
// larger disk through --disk_size_gb. The figure 50 is this project's rule:
// the guide's text could not be retrieved through the search tool here to
// confirm the number it gives.
const minDiskSizeGB = 50

// acceleratorHintURN is the URN of Beam's accelerator resource hint
// (sdks/go/pkg/beam/options/resource/hint.go); jobopts.GetPipelineResourceHints
// accepts it, and the short name "accelerator", in --resource_hints.
const acceleratorHintURN = "beam:resources:accelerator:v1"

// Options describes the GPU workers of one Dataflow Runner v2 job.
// The zero value is not valid: Accelerator, Count, MachineType, DiskSizeGB,
// ContainerImage and WorkerBinary must all be set. The NVIDIA driver is
// always installed (install-nvidia-driver); see the package documentation.
type Options struct {
	// Accelerator is the GPU type attached to each worker.
	Accelerator Accelerator
	// Count is the number of GPUs per worker, at least 1. On G2, A2 and A3
	// machine types it must equal the count the machine type carries.
	Count int
	// MPS turns on NVIDIA Multi-Process Service (use_nvidia_mps), so that the
	// worker's SDK processes share the GPU's CUDA contexts. Dataflow allows it
	// only with Count 1.
	MPS bool
	// MachineType is the Compute Engine machine type of each worker, e.g.
	// "n1-standard-8", "custom-8-53248", "g2-standard-8", "a2-highgpu-1g".
	MachineType string
	// DiskSizeGB is the worker boot disk size, at least 50.
	DiskSizeGB int
	// ContainerImage is the custom SDK container with the CUDA runtime
	// (--sdk_container_image).
	ContainerImage string
	// WorkerBinary is the path of the pipeline program built with
	// CGO_ENABLED=1 -tags cuda, which Dataflow runs inside ContainerImage
	// (--worker_binary). Apply reads it and refuses a binary that cannot
	// start in Container (see [Options.CheckWorker]).
	WorkerBinary string
	// Container describes what ContainerImage provides to the worker
	// binary; nil means [Image], container/Dockerfile's.
	Container *Container
}

// CheckWorker reads WorkerBinary and reports why it cannot run on the GPU
// workers ([Worker.Check]): another platform than linux/amd64, another
// program or Beam version than the running launcher, a newer glibc than
// the container's, or a shared library the container lacks, such as
// CUDA 11's libcublas.so.11 in a CUDA 12 image.
func (o Options) CheckWorker() (*Worker, error) {
	w, err := ReadWorker(o.WorkerBinary)
	if err != nil {
		return nil, fmt.Errorf("dataflowgpu: %w", err)
	}
	c := Image
	if o.Container != nil {
		c = *o.Container
	}
	return w, w.Check(c, launcherInfo())
}

// checkWorker is CheckWorker for Apply and ApplyRightFit: a worker without
// the GPU backend is logged, since the job would pay for GPUs it does not
// use.
func (o Options) checkWorker() error {
	w, err := o.CheckWorker()
	if err != nil {
		return err
	}
	if !w.CUDA() {
		log.Warnf(context.Background(), "dataflowgpu: worker binary %s was built without cgo and the cuda tag (tags %q): "+
			"its models run on the CPU of the GPU workers; build it with make worker", w.Path, w.Tags)
	}
	return nil
}

// Validate reports every problem with o in one error that wraps
// [ErrInvalidOptions] and then each problem, one a line. The rules:
//
//   - Accelerator is one of [Accelerators].
//   - Count >= 1.
//   - T4, P4, P100 and V100 attach to N1 machine types (n1-standard-N,
//     n1-highmem-N, n1-highcpu-N, custom-N-M); Count is 1, 2 or 4 (V100 also
//     8), and the machine's vCPUs and memory stay within the limits
//     Compute Engine sets for that count (T4: 48 vCPUs and 312 GB up to
//     2 GPUs, 96 and 624 GB with 4).
//   - L4 runs only on G2, A100 on A2 Standard (a2-highgpu-*, a2-megagpu-16g),
//     A100_80GB on A2 Ultra (a2-ultragpu-*), H100 on A3 High and A3 Edge
//     (a3-highgpu-*, a3-edgegpu-8g); these machine types carry a fixed number
//     of GPUs and Count must match it.
//   - MPS only with Count 1.
//   - DiskSizeGB >= 50.
//   - ContainerImage and WorkerBinary are not empty.
func (o Options) Validate() error {
	var problems []error
	if o.Accelerator == "" {
		problems = append(problems, fmt.Errorf("no GPU type given; valid types: %s", acceleratorList()))
	} else if !o.Accelerator.known() {
		problems = append(problems, fmt.Errorf("unknown GPU type %q; valid types: %s", o.Accelerator, acceleratorList()))
	}
	if o.Count < 1 {
		problems = append(problems, fmt.Errorf("GPU count %d: must be at least 1", o.Count))
	}
	if o.Accelerator.known() && o.Count >= 1 {
		problems = append(problems, checkMachine(o.Accelerator, o.Count, o.MachineType)...)
	}
	if o.MPS && o.Count > 1 {
		problems = append(problems, fmt.Errorf("NVIDIA MPS runs only on workers with 1 GPU, not %d (Dataflow rule)", o.Count))
	}
	if o.DiskSizeGB < minDiskSizeGB {
		problems = append(problems, fmt.Errorf("boot disk of %d GB: GPU workers need at least %d GB for the CUDA container image", o.DiskSizeGB, minDiskSizeGB))
	}
	if strings.TrimSpace(o.ContainerImage) == "" {
		problems = append(problems, errors.New("no container image given: GPU workers run a custom SDK container with the CUDA runtime (--sdk_container_image)"))
	}
	if strings.TrimSpace(o.WorkerBinary) == "" {
		problems = append(problems, errors.New("no worker binary given: GPU workers run the pipeline built with CGO_ENABLED=1 -tags cuda (--worker_binary)"))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w:\n%w", ErrInvalidOptions, errors.Join(problems...))
}

// ServiceOption returns the worker_accelerator entry of
// --dataflow_service_options:
//
//	worker_accelerator=type:<Accelerator>;count:<Count>;install-nvidia-driver[;use_nvidia_mps]
//
// It does not validate o.
func (o Options) ServiceOption() string {
	s := "worker_accelerator=" + o.acceleratorSpec()
	if o.MPS {
		s += ";use_nvidia_mps"
	}
	return s
}

// AcceleratorHint returns the value of Beam's accelerator resource hint
// (URN beam:resources:accelerator:v1) in the format Dataflow reads:
//
//	type:<Accelerator>;count:<Count>;install-nvidia-driver
//
// MPS is a worker VM setting and travels only in [Options.ServiceOption].
// It does not validate o.
func (o Options) AcceleratorHint() string { return o.acceleratorSpec() }

func (o Options) acceleratorSpec() string {
	return "type:" + string(o.Accelerator) + ";count:" + strconv.Itoa(o.Count) + ";install-nvidia-driver"
}

// beamFlag is one Beam flag and the value o gives it.
type beamFlag struct{ Name, Value string }

// beamFlags is the one list of flags that Flags renders and Apply sets.
func (o Options) beamFlags() []beamFlag {
	return []beamFlag{
		{"dataflow_service_options", o.ServiceOption()},
		{"worker_machine_type", o.MachineType},
		{"disk_size_gb", strconv.Itoa(o.DiskSizeGB)},
		{"sdk_container_image", o.ContainerImage},
		{"worker_binary", o.WorkerBinary},
		{"experiments", "use_runner_v2"},
		{"resource_hints", acceleratorHintURN + "=" + o.AcceleratorHint()},
	}
}

// Flags validates o and returns the Beam Go Dataflow runner flags for it, in
// this order:
//
//	--dataflow_service_options=worker_accelerator=type:T;count:N;install-nvidia-driver[;use_nvidia_mps]
//	--worker_machine_type=M
//	--disk_size_gb=D
//	--sdk_container_image=I
//	--worker_binary=B
//	--experiments=use_runner_v2
//	--resource_hints=beam:resources:accelerator:v1=type:T;count:N;install-nvidia-driver
//
// Each element is one argument; pass them to exec.Command as they are (no
// shell quoting is needed or wanted).
func (o Options) Flags() ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fvs := o.beamFlags()
	flags := make([]string, len(fvs))
	for i, f := range fvs {
		flags[i] = "--" + f.Name + "=" + f.Value
	}
	return flags, nil
}

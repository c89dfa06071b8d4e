package dataflowgpu_test

import (
	"flag"
	"fmt"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

// One L4 per worker, shared between the worker's SDK processes through MPS.
func ExampleOptions_Flags() {
	gpu := dataflowgpu.Options{
		Accelerator:    dataflowgpu.L4,
		Count:          1,
		MPS:            true,
		MachineType:    "g2-standard-8",
		DiskSizeGB:     100,
		ContainerImage: "us-docker.pkg.dev/my-project/beamml/gpu:v1",
		WorkerBinary:   "./bin/classify-cuda",
	}
	flags, err := gpu.Flags()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range flags {
		fmt.Println(f)
	}
	// Output:
	// --dataflow_service_options=worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps
	// --worker_machine_type=g2-standard-8
	// --disk_size_gb=100
	// --sdk_container_image=us-docker.pkg.dev/my-project/beamml/gpu:v1
	// --worker_binary=./bin/classify-cuda
	// --experiments=use_runner_v2
	// --resource_hints=beam:resources:accelerator:v1=type:nvidia-l4;count:1;install-nvidia-driver
}

// Validate names every problem, and the valid choices.
func ExampleOptions_Validate() {
	gpu := dataflowgpu.Options{
		Accelerator:    dataflowgpu.T4,
		Count:          3,
		MachineType:    "n1-standard-8",
		DiskSizeGB:     30,
		ContainerImage: "us-docker.pkg.dev/my-project/beamml/gpu:v1",
	}
	fmt.Println(gpu.Validate())
	// Output:
	// dataflowgpu: invalid Dataflow GPU options:
	// 3 GPUs of nvidia-tesla-t4 on an N1 machine: valid GPU counts are 1, 2, 4
	// boot disk of 30 GB: GPU workers need at least 50 GB for the CUDA container image
	// no worker binary given: GPU workers run the pipeline built with CGO_ENABLED=1 -tags cuda (--worker_binary)
}

// A launcher takes the GPU options as flags of its own. It passes
// flag.CommandLine and, after flag.Parse, calls gpu.Apply().
func ExampleRegisterFlags() {
	fs := flag.NewFlagSet("classify", flag.ExitOnError)
	gpu := dataflowgpu.RegisterFlags(fs)
	fs.Parse([]string{
		"--gpu_type=nvidia-tesla-t4", "--gpu_count=2", "--gpu_machine_type=n1-standard-16",
		"--gpu_container_image=us-docker.pkg.dev/my-project/beamml/gpu:v1",
		"--gpu_worker_binary=./bin/classify-cuda",
	})
	fmt.Println(gpu.ServiceOption())
	fmt.Println(gpu.Validate())
	// Output:
	// worker_accelerator=type:nvidia-tesla-t4;count:2;install-nvidia-driver
	// <nil>
}

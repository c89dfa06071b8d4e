// Package dataflowgpu describes the GPU workers of a Dataflow Runner v2 job,
// checks the description against Compute Engine's GPU machine-type rules before
// anything is submitted, and renders it as the flags the Beam Go Dataflow
// runner reads. It is for the launcher of a pipeline that runs
// RunInference on Dataflow GPUs (examples/dataflow is one).
//
// An [Options] value names the GPU type, the GPUs per worker, the machine type,
// NVIDIA MPS, the boot disk, the custom container and the CUDA worker binary.
// [Options.Validate] reports every problem at once; [Options.Flags] renders
//
//	--dataflow_service_options=worker_accelerator=type:T;count:N;install-nvidia-driver[;use_nvidia_mps]
//	--worker_machine_type=M
//	--disk_size_gb=D
//	--sdk_container_image=I
//	--worker_binary=B
//	--experiments=use_runner_v2
//	--resource_hints=beam:resources:accelerator:v1=type:T;count:N;install-nvidia-driver
//
// and [Options.Apply] sets the same flags on the process's flag set, so a
// launcher calls it after flag.Parse and before beamx.Run:
//
//	gpu := dataflowgpu.RegisterFlags(flag.CommandLine)
//	flag.Parse()
//	beam.Init()
//	if gpu.Accelerator != "" {
//		if err := gpu.Apply(); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// The NVIDIA driver is always installed (install-nvidia-driver): Dataflow's
// Container-Optimized OS workers carry no driver, and a container cannot bring
// the kernel module, so there is no option to leave it out.
//
// The worker binary is the same pipeline program built a second time with
// CGO_ENABLED=1 -tags cuda (docs/design.md, rule 3); the launcher itself is
// a plain build and never loads CUDA. Apply and ApplyRightFit read the
// worker binary first ([ReadWorker], [Worker.Check]) and refuse one that
// Dataflow's GPU workers could not start or that is not the launcher's
// program: the platform, the main package and Beam version, the glibc
// version and shared libraries against the container ([Image] describes
// container/Dockerfile's). A job with such a worker would otherwise fail
// only after its workers booted, with nothing but the loader's message in
// the worker logs.
//
// Importing this package registers the Beam Dataflow runner's flags and the
// jobopts flags on flag.CommandLine, as importing the runner does.
package dataflowgpu

package dataflowgpu_test

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

const (
	testImage  = "us-docker.pkg.dev/p/beamml/gpu:1"
	testWorker = "/tmp/worker-cuda"
)

// gpuOptions returns valid-looking options with the given GPU shape.
func gpuOptions(a dataflowgpu.Accelerator, count int, machineType string) dataflowgpu.Options {
	return dataflowgpu.Options{
		Accelerator:    a,
		Count:          count,
		MachineType:    machineType,
		DiskSizeGB:     50,
		ContainerImage: testImage,
		WorkerBinary:   testWorker,
	}
}

func withMPS(o dataflowgpu.Options) dataflowgpu.Options { o.MPS = true; return o }

func TestFlagsEveryAccelerator(t *testing.T) {
	tests := []struct {
		name string
		opts dataflowgpu.Options
		want []string
	}{
		{"T4 on n1-standard-8 with MPS", withMPS(gpuOptions(dataflowgpu.T4, 1, "n1-standard-8")), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-t4;count:1;install-nvidia-driver;use_nvidia_mps",
			"--worker_machine_type=n1-standard-8",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-tesla-t4;count:1;install-nvidia-driver",
		}},
		{"2 P4 on n1-highmem-16", gpuOptions(dataflowgpu.P4, 2, "n1-highmem-16"), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-p4;count:2;install-nvidia-driver",
			"--worker_machine_type=n1-highmem-16",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-tesla-p4;count:2;install-nvidia-driver",
		}},
		// 16 vCPUs and 104 GB: exactly the limit for 1 P100.
		{"P100 on custom-16-106496", gpuOptions(dataflowgpu.P100, 1, "custom-16-106496"), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-p100;count:1;install-nvidia-driver",
			"--worker_machine_type=custom-16-106496",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-tesla-p100;count:1;install-nvidia-driver",
		}},
		{"8 V100 on n1-standard-96", gpuOptions(dataflowgpu.V100, 8, "n1-standard-96"), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-v100;count:8;install-nvidia-driver",
			"--worker_machine_type=n1-standard-96",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-tesla-v100;count:8;install-nvidia-driver",
		}},
		{"2 A100 on a2-highgpu-2g", gpuOptions(dataflowgpu.A100, 2, "a2-highgpu-2g"), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-tesla-a100;count:2;install-nvidia-driver",
			"--worker_machine_type=a2-highgpu-2g",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-tesla-a100;count:2;install-nvidia-driver",
		}},
		{"A100 80GB on a2-ultragpu-1g with MPS", withMPS(gpuOptions(dataflowgpu.A100_80GB, 1, "a2-ultragpu-1g")), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-a100-80gb;count:1;install-nvidia-driver;use_nvidia_mps",
			"--worker_machine_type=a2-ultragpu-1g",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-a100-80gb;count:1;install-nvidia-driver",
		}},
		{"2 L4 on g2-standard-24", gpuOptions(dataflowgpu.L4, 2, "g2-standard-24"), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-l4;count:2;install-nvidia-driver",
			"--worker_machine_type=g2-standard-24",
			"--disk_size_gb=50",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-l4;count:2;install-nvidia-driver",
		}},
		{"8 H100 on a3-edgegpu-8g, 200 GB disk", func() dataflowgpu.Options {
			o := gpuOptions(dataflowgpu.H100, 8, "a3-edgegpu-8g")
			o.DiskSizeGB = 200
			return o
		}(), []string{
			"--dataflow_service_options=worker_accelerator=type:nvidia-h100-80gb;count:8;install-nvidia-driver",
			"--worker_machine_type=a3-edgegpu-8g",
			"--disk_size_gb=200",
			"--sdk_container_image=" + testImage,
			"--worker_binary=" + testWorker,
			"--experiments=use_runner_v2",
			"--resource_hints=beam:resources:accelerator:v1=type:nvidia-h100-80gb;count:8;install-nvidia-driver",
		}},
	}
	covered := map[dataflowgpu.Accelerator]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.opts.Flags()
			if err != nil {
				t.Fatalf("Flags() error:\n%v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Flags() =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
		covered[tt.opts.Accelerator] = true
	}
	for _, a := range dataflowgpu.Accelerators() {
		if !covered[a] {
			t.Errorf("no valid Flags case for %s", a)
		}
	}
}

// TestValidateAccepts covers machine shapes at the edges of the tables.
func TestValidateAccepts(t *testing.T) {
	for _, o := range []dataflowgpu.Options{
		gpuOptions(dataflowgpu.T4, 1, "n1-standard-1"),
		gpuOptions(dataflowgpu.T4, 2, "n1-highcpu-32"),
		gpuOptions(dataflowgpu.T4, 4, "n1-highmem-96"),    // 96 vCPUs, 624 GB: the 4-GPU ceiling
		gpuOptions(dataflowgpu.T4, 1, "custom-48-319488"), // 48 vCPUs, 312 GB
		gpuOptions(dataflowgpu.V100, 1, "custom-12-79872-ext"),
		gpuOptions(dataflowgpu.P4, 4, "n1-standard-64"),
		gpuOptions(dataflowgpu.L4, 1, "g2-standard-4"),
		gpuOptions(dataflowgpu.L4, 1, "g2-standard-32"),
		gpuOptions(dataflowgpu.L4, 4, "g2-standard-48"),
		gpuOptions(dataflowgpu.L4, 8, "g2-standard-96"),
		gpuOptions(dataflowgpu.A100, 16, "a2-megagpu-16g"),
		gpuOptions(dataflowgpu.A100_80GB, 8, "a2-ultragpu-8g"),
		gpuOptions(dataflowgpu.H100, 1, "a3-highgpu-1g"),
		gpuOptions(dataflowgpu.H100, 8, "a3-highgpu-8g"),
	} {
		if err := o.Validate(); err != nil {
			t.Errorf("%d %s on %s: Validate() error:\n%v", o.Count, o.Accelerator, o.MachineType, err)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	tests := []struct {
		name string
		opts dataflowgpu.Options
		want []string // substrings of the error message
	}{
		{"3 T4 on N1", gpuOptions(dataflowgpu.T4, 3, "n1-standard-8"),
			[]string{"3 GPUs of nvidia-tesla-t4 on an N1 machine: valid GPU counts are 1, 2, 4"}},
		{"8 P100 on N1", gpuOptions(dataflowgpu.P100, 8, "n1-standard-8"),
			[]string{"valid GPU counts are 1, 2, 4"}},
		{"16 V100 on N1", gpuOptions(dataflowgpu.V100, 16, "n1-standard-8"),
			[]string{"valid GPU counts are 1, 2, 4, 8"}},
		{"MPS with 2 GPUs", withMPS(gpuOptions(dataflowgpu.T4, 2, "n1-standard-8")),
			[]string{"MPS runs only on workers with 1 GPU, not 2"}},
		{"L4 on N1", gpuOptions(dataflowgpu.L4, 1, "n1-standard-8"),
			[]string{"nvidia-l4 runs only on G2 machine types: g2-standard-4 (1 GPU), g2-standard-8 (1 GPU), " +
				"g2-standard-12 (1 GPU), g2-standard-16 (1 GPU), g2-standard-24 (2 GPUs), g2-standard-32 (1 GPU), " +
				"g2-standard-48 (4 GPUs), g2-standard-96 (8 GPUs); not \"n1-standard-8\""}},
		{"30 GB disk", func() dataflowgpu.Options {
			o := gpuOptions(dataflowgpu.T4, 1, "n1-standard-8")
			o.DiskSizeGB = 30
			return o
		}(), []string{"boot disk of 30 GB", "at least 50 GB"}},
		{"no container image", func() dataflowgpu.Options {
			o := gpuOptions(dataflowgpu.T4, 1, "n1-standard-8")
			o.ContainerImage = ""
			return o
		}(), []string{"no container image given", "--sdk_container_image"}},
		{"no worker binary", func() dataflowgpu.Options {
			o := gpuOptions(dataflowgpu.T4, 1, "n1-standard-8")
			o.WorkerBinary = " "
			return o
		}(), []string{"no worker binary given", "-tags cuda", "--worker_binary"}},
		{"unknown accelerator", gpuOptions("nvidia-tesla-k80", 1, "n1-standard-8"),
			[]string{`unknown GPU type "nvidia-tesla-k80"; valid types: nvidia-tesla-t4, nvidia-tesla-p4, ` +
				"nvidia-tesla-p100, nvidia-tesla-v100, nvidia-tesla-a100, nvidia-a100-80gb, nvidia-l4, nvidia-h100-80gb"}},
		{"96 vCPUs with 1 T4", gpuOptions(dataflowgpu.T4, 1, "n1-standard-96"),
			[]string{"n1-standard-96 has 96 vCPUs, more than the 48 allowed with 1 GPU of nvidia-tesla-t4", "1: 48, 2: 48, 4: 96"}},
		{"24 vCPUs with 1 V100", gpuOptions(dataflowgpu.V100, 1, "n1-highcpu-24"),
			[]string{`unknown N1 machine type "n1-highcpu-24"; n1-highcpu sizes are 2, 4, 8, 16, 32, 64, 96`}},
		{"memory over the limit", gpuOptions(dataflowgpu.V100, 1, "custom-12-102400"),
			[]string{"custom-12-102400 has 100 GB of memory, more than the 78 GB allowed with 1 GPU of nvidia-tesla-v100"}},
		{"vCPUs and memory over the limit", gpuOptions(dataflowgpu.V100, 1, "n1-highmem-64"),
			[]string{"n1-highmem-64 has 64 vCPUs, more than the 12 allowed", "n1-highmem-64 has 416 GB of memory, more than the 78 GB allowed"}},
		{"A2 count mismatch", gpuOptions(dataflowgpu.A100, 2, "a2-highgpu-4g"),
			[]string{"a2-highgpu-4g carries 4 GPUs of nvidia-tesla-a100, not 2: set the GPU count to 4"}},
		{"A3 count mismatch", gpuOptions(dataflowgpu.H100, 1, "a3-highgpu-8g"),
			[]string{"a3-highgpu-8g carries 8 GPUs of nvidia-h100-80gb, not 1: set the GPU count to 8"}},
		{"G2 count mismatch", gpuOptions(dataflowgpu.L4, 1, "g2-standard-48"),
			[]string{"g2-standard-48 carries 4 GPUs of nvidia-l4, not 1: set the GPU count to 4"}},
		{"A100 80GB on an A2 Standard type", gpuOptions(dataflowgpu.A100_80GB, 1, "a2-highgpu-1g"),
			[]string{"nvidia-a100-80gb runs only on A2 Ultra machine types: a2-ultragpu-1g (1 GPU), a2-ultragpu-2g (2 GPUs), " +
				`a2-ultragpu-4g (4 GPUs), a2-ultragpu-8g (8 GPUs); "a2-highgpu-1g" carries nvidia-tesla-a100`}},
		{"H100 on A3 Mega", gpuOptions(dataflowgpu.H100, 8, "a3-megagpu-8g"),
			[]string{`"a3-megagpu-8g" carries nvidia-h100-mega-80gb`, "a3-highgpu-8g (8 GPUs), a3-edgegpu-8g (8 GPUs)"}},
		{"T4 on G2", gpuOptions(dataflowgpu.T4, 1, "g2-standard-4"),
			[]string{`nvidia-tesla-t4 attaches to N1 machine types (n1-standard-N, n1-highmem-N, n1-highcpu-N or custom-N-M (N vCPUs, M MB)), not "g2-standard-4"`}},
		{"malformed custom type", gpuOptions(dataflowgpu.T4, 1, "custom-8"),
			[]string{`machine type "custom-8": want custom-N-M`}},
		{"no machine type for L4", gpuOptions(dataflowgpu.L4, 1, ""),
			[]string{"no machine type given; nvidia-l4 runs on G2 machine types: g2-standard-4 (1 GPU)"}},
		{"no machine type for T4", gpuOptions(dataflowgpu.T4, 1, ""),
			[]string{"no machine type given; nvidia-tesla-t4 attaches to N1 machine types"}},
		{"zero GPUs", gpuOptions(dataflowgpu.T4, 0, "n1-standard-8"),
			[]string{"GPU count 0: must be at least 1"}},
		{"zero value: every problem at once", dataflowgpu.Options{},
			[]string{"no GPU type given; valid types: nvidia-tesla-t4,", "GPU count 0", "boot disk of 0 GB",
				"no container image given", "no worker binary given"}},
		{"several problems at once", func() dataflowgpu.Options {
			o := gpuOptions(dataflowgpu.T4, 3, "n1-standard-8")
			o.DiskSizeGB = 30
			o.ContainerImage = ""
			return o
		}(), []string{"valid GPU counts are 1, 2, 4\n", "at least 50 GB", "no container image given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			if !errors.Is(err, dataflowgpu.ErrInvalidOptions) {
				t.Errorf("errors.Is(err, ErrInvalidOptions) = false for %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if flags, ferr := tt.opts.Flags(); ferr == nil || flags != nil {
				t.Errorf("Flags() = %q, %v; want nil and the Validate error", flags, ferr)
			}
		})
	}
}

// TestValidateListsEachProblemOnce checks that each problem is one line under
// the ErrInvalidOptions header.
func TestValidateListsEachProblemOnce(t *testing.T) {
	o := withMPS(gpuOptions(dataflowgpu.T4, 2, "n1-standard-96"))
	o.DiskSizeGB = 10
	o.WorkerBinary = ""
	lines := strings.Split(o.Validate().Error(), "\n")
	want := []string{
		"dataflowgpu: invalid Dataflow GPU options:",
		"n1-standard-96 has 96 vCPUs, more than the 48 allowed with 2 GPUs of nvidia-tesla-t4 (vCPU limit by GPU count: 1: 48, 2: 48, 4: 96)",
		"n1-standard-96 has 360 GB of memory, more than the 312 GB allowed with 2 GPUs of nvidia-tesla-t4 (memory limit by GPU count: 1: 312, 2: 312, 4: 624)",
		"NVIDIA MPS runs only on workers with 1 GPU, not 2 (Dataflow rule)",
		"boot disk of 10 GB: GPU workers need at least 50 GB for the CUDA container image",
		"no worker binary given: GPU workers run the pipeline built with CGO_ENABLED=1 -tags cuda (--worker_binary)",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("Validate() lines =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestServiceOptionAndHint(t *testing.T) {
	o := withMPS(gpuOptions(dataflowgpu.L4, 1, "g2-standard-8"))
	if got, want := o.ServiceOption(), "worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps"; got != want {
		t.Errorf("ServiceOption() = %q, want %q", got, want)
	}
	if got, want := o.AcceleratorHint(), "type:nvidia-l4;count:1;install-nvidia-driver"; got != want {
		t.Errorf("AcceleratorHint() = %q, want %q", got, want)
	}
}

func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("launcher", flag.ContinueOnError)
	o := dataflowgpu.RegisterFlags(fs)
	if want := (dataflowgpu.Options{Count: 1, DiskSizeGB: 50}); *o != want {
		t.Errorf("defaults = %+v, want %+v", *o, want)
	}
	err := fs.Parse([]string{
		"--gpu_type=nvidia-l4", "--gpu_count=2", "--gpu_mps=false", "--gpu_machine_type=g2-standard-24",
		"--gpu_disk_size_gb=100", "--gpu_container_image=" + testImage, "--gpu_worker_binary=" + testWorker,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := gpuOptions(dataflowgpu.L4, 2, "g2-standard-24")
	want.DiskSizeGB = 100
	if *o != want {
		t.Errorf("parsed = %+v, want %+v", *o, want)
	}
	// The flags must not shadow Beam's: importing dataflowgpu registers the
	// Dataflow runner's and jobopts' flags on flag.CommandLine.
	fs.VisitAll(func(f *flag.Flag) {
		if flag.CommandLine.Lookup(f.Name) != nil {
			t.Errorf("--%s is also a flag of flag.CommandLine", f.Name)
		}
	})
}

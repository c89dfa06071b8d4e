package dataflowgpu_test

import (
	"flag"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

// appliedFlags are the flag.CommandLine flags Apply sets.
var appliedFlags = []string{
	"dataflow_service_options", "worker_machine_type", "disk_size_gb",
	"sdk_container_image", "worker_binary", "experiments",
}

// keepCommandLine restores the flags Apply sets when t ends, so that other
// tests in this binary (the dataflowgpu runner reads the same flags) see
// them as they were.
func keepCommandLine(t *testing.T) {
	t.Helper()
	saved := map[string]string{}
	for _, name := range appliedFlags {
		saved[name] = flag.Lookup(name).Value.String()
	}
	hints := jobopts.ResourceHints
	t.Cleanup(func() {
		for name, v := range saved {
			if err := flag.Set(name, v); err != nil {
				t.Errorf("restoring --%s: %v", name, err)
			}
		}
		jobopts.ResourceHints = hints
	})
}

func checkCommandLine(t *testing.T, want map[string]string, wantHint string) {
	t.Helper()
	for name, w := range want {
		if got := flag.Lookup(name).Value.String(); got != w {
			t.Errorf("--%s = %q, want %q", name, got, w)
		}
	}
	got := string(jobopts.GetPipelineResourceHints().Payloads()["beam:resources:accelerator:v1"])
	if got != wantHint {
		t.Errorf("jobopts.GetPipelineResourceHints() accelerator = %q, want %q", got, wantHint)
	}
}

func TestApply(t *testing.T) {
	keepCommandLine(t)
	// What a user may already have given on the command line.
	for name, v := range map[string]string{
		"experiments":              "enable_stackdriver_agent_metrics",
		"dataflow_service_options": "enable_hot_key_logging,worker_accelerator=type:nvidia-tesla-t4;count:1",
		"worker_machine_type":      "n1-standard-4",
	} {
		if err := flag.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}

	worker := plainWorker(t)
	l4 := withMPS(gpuOptions(dataflowgpu.L4, 1, "g2-standard-8"))
	l4.WorkerBinary = worker
	if err := l4.Apply(); err != nil {
		t.Fatalf("Apply() error:\n%v", err)
	}
	want := map[string]string{
		"dataflow_service_options": "enable_hot_key_logging,worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps",
		"worker_machine_type":      "g2-standard-8",
		"disk_size_gb":             "50",
		"sdk_container_image":      testImage,
		"worker_binary":            worker,
		"experiments":              "enable_stackdriver_agent_metrics,use_runner_v2",
	}
	checkCommandLine(t, want, "type:nvidia-l4;count:1;install-nvidia-driver")
	if *jobopts.WorkerBinary != worker {
		t.Errorf("jobopts.WorkerBinary = %q, want %q", *jobopts.WorkerBinary, worker)
	}

	// A second Apply replaces the accelerator and does not repeat use_runner_v2.
	a100 := gpuOptions(dataflowgpu.A100, 4, "a2-highgpu-4g")
	a100.WorkerBinary = worker
	if err := a100.Apply(); err != nil {
		t.Fatalf("Apply() error:\n%v", err)
	}
	want["dataflow_service_options"] = "enable_hot_key_logging,worker_accelerator=type:nvidia-tesla-a100;count:4;install-nvidia-driver"
	want["worker_machine_type"] = "a2-highgpu-4g"
	checkCommandLine(t, want, "type:nvidia-tesla-a100;count:4;install-nvidia-driver")

	// Invalid options set nothing.
	bad := gpuOptions(dataflowgpu.L4, 1, "n1-standard-8")
	if err := bad.Apply(); err == nil {
		t.Fatal("Apply() of an L4 on n1-standard-8 = nil, want an error")
	}
	checkCommandLine(t, want, "type:nvidia-tesla-a100;count:4;install-nvidia-driver")
}

// TestFlagsParse passes Flags' output to flag.CommandLine as a launcher's
// arguments, and checks that the Dataflow runner's flags and jobopts read
// them back.
func TestFlagsParse(t *testing.T) {
	keepCommandLine(t)
	o := gpuOptions(dataflowgpu.T4, 2, "n1-standard-16")
	args, err := o.Flags()
	if err != nil {
		t.Fatal(err)
	}
	if err := flag.CommandLine.Parse(args); err != nil {
		t.Fatal(err)
	}
	checkCommandLine(t, map[string]string{
		"dataflow_service_options": "worker_accelerator=type:nvidia-tesla-t4;count:2;install-nvidia-driver",
		"worker_machine_type":      "n1-standard-16",
		"disk_size_gb":             "50",
		"sdk_container_image":      testImage,
		"worker_binary":            testWorker,
		"experiments":              "use_runner_v2",
	}, "type:nvidia-tesla-t4;count:2;install-nvidia-driver")
	if got := jobopts.GetExperiments(); len(got) != 1 || got[0] != "use_runner_v2" {
		t.Errorf("jobopts.GetExperiments() = %q, want [use_runner_v2]", got)
	}
}

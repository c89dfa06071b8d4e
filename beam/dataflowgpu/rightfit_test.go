package dataflowgpu_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"

	"github.com/beamml/beamml/beam/dataflowgpu"
	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func rowSum(r runinference.PredictionResult) float32 {
	d, _ := inference.Data[float32](r.Outputs.Get("y"))
	return d[0]
}

func init() { beam.RegisterFunction(rowSum) }

// marshal translates a pipeline with one RunInference between other steps
// as the Dataflow runner does.
func marshal(t *testing.T) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	x, _ := inference.New([]int{2}, []float32{1, 2})
	in := beam.Create(s, inference.Example{"x": x})
	results := runinference.RunInference(s, stub.Echo(2), in)
	beam.ParDo(s, rowSum, results)
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	env, err := graphx.CreateEnvironment(context.Background(), "beam:env:docker:v1", func(context.Context) string { return "gcr.io/p/beamml-gpu:1" })
	if err != nil {
		t.Fatal(err)
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: env})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// Only RunInference's steps move to an environment with the accelerator
// hint; the source and the step after it stay on the default one, which
// has no hint.
func TestRightFit(t *testing.T) {
	p := marshal(t)
	const hint = "type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8"
	moved, err := dataflowgpu.RightFit(p, hint)
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) == 0 {
		t.Fatal("no transform moved")
	}
	envs := p.GetComponents().GetEnvironments()
	for _, tr := range p.GetComponents().GetTransforms() {
		if len(tr.GetSubtransforms()) > 0 || tr.GetEnvironmentId() == "" {
			continue
		}
		hints := envs[tr.GetEnvironmentId()].GetResourceHints()
		got := string(hints["beam:resources:accelerator:v1"])
		inRI := strings.Contains(tr.GetUniqueName(), "runinference.RunInference/")
		switch {
		case inRI && got != hint:
			t.Errorf("%s: environment %s has accelerator hint %q, want %q", tr.GetUniqueName(), tr.GetEnvironmentId(), got, hint)
		case !inRI && got != "":
			t.Errorf("%s (not RunInference): environment %s has accelerator hint %q", tr.GetUniqueName(), tr.GetEnvironmentId(), got)
		}
	}
	t.Logf("moved to the GPU environment: %q", moved)
	if img := envs["go-accelerator"].GetPayload(); string(img) != string(envs["go"].GetPayload()) {
		t.Error("the GPU environment does not run the default environment's container")
	}
}

func TestRightFitWithoutRunInference(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, 1)
	edges, _, _ := p.Build()
	model, err := graphx.Marshal(edges, &graphx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dataflowgpu.RightFit(model, "type:nvidia-l4;count:1"); err == nil || !strings.Contains(err.Error(), "no RunInference") {
		t.Errorf("err = %v, want one saying there is no RunInference", err)
	}
}

func TestRightFitFlags(t *testing.T) {
	o := dataflowgpu.Options{Accelerator: dataflowgpu.L4, Count: 1, MachineType: "g2-standard-8", DiskSizeGB: 50,
		ContainerImage: "us-docker.pkg.dev/p/r/beamml-gpu:v1", WorkerBinary: "./worker"}
	got, err := o.RightFitFlags()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--runner=dataflowgpu",
		"--beamml_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8",
		"--disk_size_gb=50",
		"--sdk_container_image=us-docker.pkg.dev/p/r/beamml-gpu:v1",
		"--beamml_gpu_worker_binary=./worker",
		"--experiments=use_runner_v2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("flags\n%q\nwant\n%q", got, want)
	}
	o.MPS = true
	if _, err := o.RightFitFlags(); err == nil || !strings.Contains(err.Error(), "worker_accelerator") {
		t.Errorf("MPS with right fitting: err = %v, want a refusal naming worker_accelerator", err)
	}
	o.MPS, o.Count = false, 2 // g2-standard-8 carries one L4
	if _, err := o.RightFitFlags(); err == nil {
		t.Error("2 L4 on g2-standard-8: no error")
	}
}

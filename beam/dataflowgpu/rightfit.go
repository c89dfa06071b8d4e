package dataflowgpu

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/resource"
	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/beam/runinference"
)

// RightFit gives the RunInference transforms of a pipeline proto an
// environment of their own that carries the accelerator resource hint
// (beam:resources:accelerator:v1 = hint, e.g.
// "type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8"),
// so Dataflow's right fitting runs only those steps on GPU workers and the
// rest of the pipeline on the default pool.
//
// The Beam Go SDK has only pipeline-level hints (apache/beam#23893): its
// Scope.WithContext environment extractors are not applied by v2.77.0's
// pipeline translation. RightFit does the same thing on the translated
// proto: it finds the composite transforms runinference annotates
// (runinference.Annotation), copies the environment of each leaf transform
// under them, adds the hint to the copy, and points the leaf at it. It
// returns the unique names of the transforms it moved, and fails when the
// pipeline has no RunInference.
func RightFit(p *pipepb.Pipeline, hint string) ([]string, error) {
	if hint == "" {
		return nil, fmt.Errorf("dataflowgpu: right fitting needs an accelerator hint")
	}
	h := resource.Accelerator(hint)
	comps := p.GetComponents()
	var roots []string
	for id, t := range comps.GetTransforms() {
		if _, ok := t.GetAnnotations()[runinference.Annotation]; ok {
			roots = append(roots, id)
		}
	}
	if len(roots) == 0 {
		return nil, fmt.Errorf("dataflowgpu: the pipeline has no RunInference transform (annotation %s) to give the accelerator", runinference.Annotation)
	}
	slices.Sort(roots)
	var moved []string
	seen := map[string]bool{}
	var walk func(id string) error
	walk = func(id string) error {
		if seen[id] {
			return nil
		}
		seen[id] = true
		t := comps.GetTransforms()[id]
		if t == nil {
			return fmt.Errorf("dataflowgpu: transform %q is named as a subtransform but not defined", id)
		}
		for _, sub := range t.GetSubtransforms() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		env := t.GetEnvironmentId()
		if env == "" {
			return nil // runner-executed primitives (GroupByKey, Flatten, …)
		}
		gpu := env + "-accelerator"
		if _, ok := comps.Environments[gpu]; !ok {
			base, ok := comps.GetEnvironments()[env]
			if !ok {
				return fmt.Errorf("dataflowgpu: transform %q names environment %q, which is not defined", t.GetUniqueName(), env)
			}
			e := proto.Clone(base).(*pipepb.Environment)
			if e.ResourceHints == nil {
				e.ResourceHints = map[string][]byte{}
			}
			e.ResourceHints[h.URN()] = h.Payload()
			comps.Environments[gpu] = e
		}
		t.EnvironmentId = gpu
		if len(t.GetSubtransforms()) == 0 {
			moved = append(moved, t.GetUniqueName())
		}
		return nil
	}
	for _, id := range roots {
		if err := walk(id); err != nil {
			return nil, err
		}
	}
	slices.Sort(moved)
	return moved, nil
}

// RightFitHint is the accelerator hint right fitting gives the RunInference
// steps: the GPU, its count, the driver, and the GPU worker's machine type
// ("type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8").
func (o Options) RightFitHint() string {
	return o.AcceleratorHint() + ";machine_type:" + o.MachineType
}

// RightFitFlags validates o for right fitting and returns the flags of a
// job where only RunInference runs on GPU workers (--runner=dataflowgpu):
//
//	--runner=dataflowgpu
//	--beamml_accelerator=type:T;count:N;install-nvidia-driver;machine_type:M
//	--disk_size_gb=D
//	--sdk_container_image=I
//	--beamml_gpu_worker_binary=B
//	--experiments=use_runner_v2
//
// WorkerBinary (the cuda-built worker) runs the RunInference steps only:
// it cannot start on a worker without a GPU (gorgonia.org/cu exits at
// init: docs/design.md, rule 1), so the other steps run Beam's usual worker,
// --worker_binary built without the cuda tag or the launcher itself.
//
// There is no worker_accelerator service option (Dataflow does not allow
// it with right fitting) and no pipeline-level accelerator hint; the other
// steps run on the job's default machine type (--worker_machine_type, or
// Dataflow's default). MPS is a worker_accelerator option, so it is refused
// here.
func (o Options) RightFitFlags() ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MPS {
		return nil, fmt.Errorf("%w: MPS (use_nvidia_mps) is an option of the worker_accelerator service option, which right fitting cannot use", ErrInvalidOptions)
	}
	return []string{
		"--runner=" + RunnerName,
		"--beamml_accelerator=" + o.RightFitHint(),
		"--disk_size_gb=" + fmt.Sprint(o.DiskSizeGB),
		"--sdk_container_image=" + o.ContainerImage,
		"--beamml_gpu_worker_binary=" + o.WorkerBinary,
		"--experiments=use_runner_v2",
	}, nil
}

// ApplyRightFit checks the worker binary ([Options.CheckWorker]) and sets
// the flags of RightFitFlags on flag.CommandLine (after flag.Parse, before
// beamx.Run).
func (o Options) ApplyRightFit() error {
	flags, err := o.RightFitFlags()
	if err != nil {
		return err
	}
	if err := o.checkWorker(); err != nil {
		return err
	}
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if name == "experiments" {
			value = mergeList(flag.CommandLine.Lookup(name).Value.String(), value, func(e string) bool { return e == value })
		}
		if err := flag.CommandLine.Set(name, value); err != nil {
			return fmt.Errorf("dataflowgpu: setting --%s=%s: %w", name, value, err)
		}
	}
	return nil
}

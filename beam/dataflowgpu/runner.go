package dataflowgpu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/pipelinex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/protox"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow" // its flags, which this runner reads
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/gcsx"
	df "google.golang.org/api/dataflow/v1b3"
	"google.golang.org/protobuf/proto"
)

// RunnerName is the name the right-fitting Dataflow runner registers
// under: --runner=dataflowgpu.
const RunnerName = "dataflowgpu"

// rightFitHint is the accelerator hint the runner gives RunInference.
var rightFitHint = flag.String("beamml_accelerator", "",
	"Right fitting on Dataflow (--runner=dataflowgpu): the accelerator resource hint for the RunInference steps only, "+
		`e.g. "type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8"`)

// gpuWorker is the worker binary of the RunInference steps.
var gpuWorker = flag.String("beamml_gpu_worker_binary", "",
	"Right fitting on Dataflow (--runner=dataflowgpu): the worker binary of the RunInference steps, built with "+
		"CGO_ENABLED=1 -tags cuda (make worker). The other steps run --worker_binary, or the launcher itself: "+
		"a cuda-built binary cannot start on a worker without a GPU.")

func init() {
	beam.RegisterRunner(RunnerName, Execute)
}

// DryRun holds what a dry run would submit.
type DryRun struct {
	Pipeline *pipepb.Pipeline
	Job      *df.Job
	Moved    []string // the transforms RightFit gave the accelerator
}

// lastDryRun is the latest dry run of this process, for tests and tools.
var lastDryRun atomic.Pointer[DryRun]

// LastDryRun returns the latest --dry_run of the dataflowgpu runner in this
// process, or nil.
func LastDryRun() *DryRun { return lastDryRun.Load() }

// Execute runs p on Dataflow as the Beam Go SDK's dataflow runner does
// (same flags, same job), after right fitting: the RunInference steps get
// their own environment with the --beamml_accelerator hint (RightFit),
// and nothing else gets a GPU. The Go SDK's runner cannot do this itself:
// it translates the pipeline and submits it in one function, with
// pipeline-level hints only (apache/beam#23893). This runner repeats that
// function (runners/dataflow.Execute of v2.77.0) with the RightFit step in
// between, reading the dataflow runner's flags by name.
//
// With --dry_run it logs the pipeline proto and the job, as the dataflow
// runner does, and keeps them for LastDryRun.
func Execute(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
	if *rightFitHint == "" {
		return nil, errors.New("dataflowgpu runner: --beamml_accelerator is required (the RunInference steps' accelerator hint)")
	}
	if *gpuWorker == "" {
		return nil, errors.New("dataflowgpu runner: --beamml_gpu_worker_binary is required (the RunInference steps' worker, built with -tags cuda)")
	}
	if *gpuWorker == *jobopts.WorkerBinary {
		return nil, errors.New("dataflowgpu runner: --worker_binary is the GPU worker: the steps without a GPU need a binary built without the cuda tag (or no --worker_binary, and the launcher is used)")
	}
	if hs := jobopts.GetPipelineResourceHints().Payloads(); hs["beam:resources:accelerator:v1"] != nil {
		return nil, errors.New("dataflowgpu runner: --resource_hints sets an accelerator for the whole pipeline; right fitting gives it to RunInference only (drop it)")
	}
	if strings.Contains(flagValue("dataflow_service_options"), "worker_accelerator") {
		return nil, errors.New("dataflowgpu runner: remove the worker_accelerator service option: Dataflow does not allow it with right fitting")
	}
	edges, nodes, err := p.Build()
	if err != nil {
		return nil, err
	}
	streaming := !graph.Bounded(nodes)
	beam.PipelineOptions.LoadOptionsFromFlags(nil)
	opts, err := jobOptions(ctx, streaming)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("go-%v-%v", atomic.AddInt32(&unique, 1), time.Now().UnixNano())
	staging := flagValue("staging_location")
	modelURL := gcsx.Join(staging, id, "model")
	workerURL := gcsx.Join(staging, id, "worker") // the last segment must be "worker"
	xlangURL := gcsx.Join(staging, id, "xlang")
	if opts.ArtifactURLs, err = dataflowlib.ResolveXLangArtifacts(ctx, edges, opts.Project, xlangURL); err != nil {
		return nil, fmt.Errorf("resolving cross-language artifacts: %w", err)
	}
	environment, err := graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), func(context.Context) string { return opts.ContainerImage })
	if err != nil {
		return nil, fmt.Errorf("creating environment for model pipeline: %w", err)
	}
	model, err := graphx.Marshal(edges, &graphx.Options{Environment: environment, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, fmt.Errorf("generating model pipeline: %w", err)
	}
	if err := pipelinex.ApplySdkImageOverrides(model, jobopts.GetSdkImageOverrides()); err != nil {
		return nil, fmt.Errorf("applying container image overrides: %w", err)
	}
	moved, err := RightFit(model, *rightFitHint)
	if err != nil {
		return nil, err
	}
	log.Infof(ctx, "dataflowgpu: right fitting: %d steps run on %s workers: %s", len(moved), *rightFitHint, strings.Join(moved, ", "))
	gpuURL := gcsx.Join(staging, id, "gpu-worker")
	dry := flagValue("dry_run") == "true"
	hash, err := stageGPUWorker(ctx, opts.Project, gpuURL, *gpuWorker, dry)
	if err != nil {
		return nil, err
	}
	if err := setGPUWorker(model, gpuURL, hash); err != nil {
		return nil, err
	}
	if dry {
		log.Info(ctx, "Dry-run: not submitting job!")
		log.Info(ctx, model.String())
		hash := sha256.Sum256(protox.MustEncode(model))
		job, err := dataflowlib.Translate(ctx, model, opts, workerURL, modelURL, hex.EncodeToString(hash[:]))
		if err != nil {
			return nil, err
		}
		dataflowlib.PrintJob(ctx, job)
		lastDryRun.Store(&DryRun{Pipeline: model, Job: job, Moved: moved})
		return nil, nil
	}
	return dataflowlib.Execute(ctx, model, opts, workerURL, modelURL, flagValue("dataflow_endpoint"), *jobopts.Async)
}

var unique int32

// stageGPUWorker uploads the GPU worker binary to url (not on a dry run)
// and returns its SHA-256.
func stageGPUWorker(ctx context.Context, project, url, path string, dry bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("dataflowgpu runner: GPU worker binary: %w", err)
	}
	sum := sha256.Sum256(data)
	if dry {
		return hex.EncodeToString(sum[:]), nil
	}
	bucket, object, err := gcsx.ParseObject(url)
	if err != nil {
		return "", fmt.Errorf("dataflowgpu runner: staging location %s: %w", url, err)
	}
	client, err := gcsx.NewClient(ctx, storage.ScopeReadWrite)
	if err != nil {
		return "", fmt.Errorf("dataflowgpu runner: staging the GPU worker: %w", err)
	}
	defer client.Close()
	if _, err := gcsx.Upload(ctx, client, project, bucket, object, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("dataflowgpu runner: staging the GPU worker to %s: %w", url, err)
	}
	log.Infof(ctx, "dataflowgpu: staged the GPU worker binary: %s", url)
	return hex.EncodeToString(sum[:]), nil
}

// setGPUWorker points the Go worker dependency of every environment that
// carries an accelerator hint at the staged GPU worker. The Dataflow
// runner sets the default environment's own (graphx.UpdateDefaultEnvWorkerType).
func setGPUWorker(p *pipepb.Pipeline, url, hash string) error {
	payload, err := proto.Marshal(&pipepb.ArtifactUrlPayload{Url: url, Sha256: hash})
	if err != nil {
		return err
	}
	for id, env := range p.GetComponents().GetEnvironments() {
		if env.GetResourceHints()["beam:resources:accelerator:v1"] == nil {
			continue
		}
		n := 0
		for _, dep := range env.GetDependencies() {
			if dep.GetRoleUrn() == graphx.URNArtifactGoWorkerRole {
				dep.TypeUrn, dep.TypePayload = graphx.URNArtifactURLType, payload
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("dataflowgpu runner: environment %q has no Go worker dependency to point at the GPU worker", id)
		}
	}
	return nil
}

func flagValue(name string) string {
	f := flag.Lookup(name)
	if f == nil {
		panic("dataflowgpu: flag --" + name + " is not registered; the Beam dataflow runner package defines it")
	}
	return f.Value.String()
}

func flagInt(name string) (int64, error) {
	v := flagValue(name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("--%s=%q: %w", name, v, err)
	}
	return n, nil
}

// jobOptions is the dataflow runner's getJobOptions (v2.77.0) on the same
// flags, less its GCS soft-delete warning and profiling hook.
func jobOptions(ctx context.Context, streaming bool) (*dataflowlib.JobOptions, error) {
	project := gcpopts.GetProjectFromFlagOrEnvironment(ctx)
	if project == "" {
		return nil, errors.New("no Google Cloud project specified. Use --project=<project>")
	}
	region := gcpopts.GetRegion(ctx)
	if region == "" {
		return nil, errors.New("no Google Cloud region specified. Use --region=<region>")
	}
	staging := flagValue("staging_location")
	if staging == "" {
		return nil, errors.New("no GCS staging location specified. Use --staging_location=gs://<bucket>/<path>")
	}
	var labels map[string]string
	if l := flagValue("labels"); l != "" {
		if err := json.Unmarshal([]byte(l), &labels); err != nil {
			return nil, fmt.Errorf("reading --labels as JSON: %w", err)
		}
	}
	hooks.SerializeHooksToOptions()
	experiments := jobopts.GetExperiments()
	for _, want := range []string{"beam_fn_api", "use_runner_v2", "use_unified_worker", "use_portable_job_submission"} {
		if !slicesContainsSub(experiments, want) {
			experiments = append(experiments, want)
		}
	}
	if streaming {
		experiments = append(experiments, "enable_streaming_engine", "enable_windmill_service")
	}
	var service []string
	if s := flagValue("dataflow_service_options"); s != "" {
		service = strings.Split(s, ",")
	}
	machine := flagValue("worker_machine_type")
	if machine == "" {
		machine = flagValue("machine_type")
	}
	image := flagValue("sdk_container_image")
	if image == "" {
		image = flagValue("worker_harness_container_image")
	}
	if image == "" {
		return nil, errors.New("no container image: use --sdk_container_image (the CUDA container, container/Dockerfile)")
	}
	opts := &dataflowlib.JobOptions{
		Name:                   jobopts.GetJobName(),
		Streaming:              streaming,
		Experiments:            experiments,
		DataflowServiceOptions: service,
		Options:                beam.PipelineOptions.Export(),
		Project:                project,
		Region:                 region,
		Zone:                   flagValue("zone"),
		KmsKey:                 flagValue("dataflow_kms_key"),
		Network:                flagValue("network"),
		Subnetwork:             flagValue("subnetwork"),
		NoUsePublicIPs:         flagValue("no_use_public_ips") == "true",
		DiskType:               flagValue("disk_type"),
		Algorithm:              flagValue("autoscaling_algorithm"),
		FlexRSGoal:             flagValue("flexrs_goal"),
		MachineType:            machine,
		Labels:                 labels,
		ServiceAccountEmail:    flagValue("service_account_email"),
		TempLocation:           flagValue("temp_location"),
		TemplateLocation:       flagValue("template_location"),
		Worker:                 *jobopts.WorkerBinary,
		WorkerRegion:           flagValue("worker_region"),
		WorkerZone:             flagValue("worker_zone"),
		TeardownPolicy:         flagValue("teardown_policy"),
		ContainerImage:         image,
		Update:                 flagValue("update") == "true",
	}
	var err error
	for name, dst := range map[string]*int64{
		"num_workers": &opts.NumWorkers, "max_num_workers": &opts.MaxNumWorkers,
		"number_of_worker_harness_threads": &opts.WorkerHarnessThreads, "disk_size_gb": &opts.DiskSizeGb,
		"disk_provisioned_iops": &opts.DiskProvisionedIops, "disk_provisioned_throughput_mibps": &opts.DiskProvisionedThroughputMibps,
	} {
		if *dst, err = flagInt(name); err != nil {
			return nil, err
		}
	}
	if opts.TempLocation == "" {
		opts.TempLocation = gcsx.Join(staging, "tmp")
	}
	return opts, nil
}

func slicesContainsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

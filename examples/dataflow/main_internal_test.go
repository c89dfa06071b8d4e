package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// The launcher's pipeline runs on prism (the default) and predicts every
// record.
func TestPipeline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "predictions.csv")
	p, s := beam.NewPipelineWithRoot()
	Build(s, "../classify/digits.onnx", "../classify/testdata/digits.csv", out)
	ptest.RunAndValidate(t, p)
	files := []string{out} // textio.Write writes one file
	lines := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += len(strings.Fields(string(b)))
	}
	if lines != 360 {
		t.Errorf("%d predictions in %v, want 360", lines, files)
	}
}

// launcher builds this program.
func launcher(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "launcher")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// worker builds this program as the GPU workers run it, for linux/amd64,
// but with CGO_ENABLED=0: the cuda build needs the CUDA toolkit (make
// worker), and the launcher's checks take this one with a warning.
func worker(t *testing.T, launcher string) string {
	t.Helper()
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		return launcher
	}
	bin := filepath.Join(t.TempDir(), "worker")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// dataflowFlags are a fake project's: a dry run contacts nothing.
func dataflowFlags(worker string) []string {
	return []string{"--runner=dataflow", "--dry_run", "--project=fake-project", "--region=us-central1",
		"--staging_location=gs://fake-bucket/staging", "--gpu_type=nvidia-l4", "--gpu_machine_type=g2-standard-8",
		"--gpu_container_image=us-docker.pkg.dev/fake/repo/beamml-gpu:v1", "--gpu_worker_binary=" + worker}
}

func run(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// hint matches the accelerator hint of an environment in the logged
// pipeline proto (protobuf's text format varies its spacing on purpose).
func hint(value string) *regexp.Regexp {
	return regexp.MustCompile(`resource_hints:\s*\{\s*key:\s*\\"beam:resources:accelerator:v1\\"\s*value:\s*\\"` + regexp.QuoteMeta(value) + `\\"`)
}

// A dry run on Dataflow prints a job whose pipeline proto carries the
// accelerator hint and whose options carry the worker_accelerator service
// option; with --right_fit only RunInference's environment has the hint,
// with the GPU machine type, and there is no worker_accelerator.
func TestDataflowDryRun(t *testing.T) {
	bin := launcher(t)
	w := worker(t, bin)
	t.Run("whole pipeline", func(t *testing.T) {
		out, err := run(t, bin, append(dataflowFlags(w), "--gpu_mps")...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !hint("type:nvidia-l4;count:1;install-nvidia-driver").MatchString(out) {
			t.Errorf("the pipeline proto has no accelerator hint:\n%.3000s", out)
		}
		if !strings.Contains(out, `worker_accelerator=type:nvidia-l4;count:1;install-nvidia-driver;use_nvidia_mps`) {
			t.Errorf("the job has no worker_accelerator service option")
		}
		if !strings.Contains(out, "g2-standard-8") || !strings.Contains(out, "us-docker.pkg.dev/fake/repo/beamml-gpu:v1") {
			t.Errorf("the job lacks the machine type or the container image")
		}
		// The worker binary was read before submission: this one has no
		// GPU backend, which is said, not refused.
		if !strings.Contains(out, "built without cgo and the cuda tag") {
			t.Errorf("no warning that the worker binary lacks the GPU backend:\n%.3000s", out)
		}
		multiCore(t, out, 1)
	})
	t.Run("right fitting", func(t *testing.T) {
		out, err := run(t, bin, append(dataflowFlags(w), "--right_fit", "--worker_machine_type=n1-standard-2")...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if n := len(hint("type:nvidia-l4;count:1;install-nvidia-driver;machine_type:g2-standard-8").FindAllString(out, -1)); n != 1 {
			t.Errorf("%d environments with the GPU hint, want 1", n)
		}
		if strings.Contains(out, "worker_accelerator") {
			t.Error("right fitting must not set the worker_accelerator service option")
		}
		// The GPU environment runs the cuda worker, staged beside the job;
		// the others run Beam's usual worker.
		if !regexp.MustCompile(`gs://fake-bucket/staging/go-[0-9]+-[0-9]+/gpu-worker`).MatchString(out) {
			t.Error("the GPU environment's worker is not the staged GPU worker binary")
		}
		gpuSteps := regexp.MustCompile(`unique_name:\s*\\"([^\\"]*)\\"[^{}]*(?:\{[^{}]*\}[^{}]*)*environment_id:\s*\\"go-accelerator\\"`).FindAllStringSubmatch(out, -1)
		if len(gpuSteps) == 0 {
			t.Fatal("no step runs in the GPU environment")
		}
		for _, m := range gpuSteps {
			if !strings.HasPrefix(m[1], "runinference.") {
				t.Errorf("step %q runs on the GPU workers; only RunInference should", m[1])
			}
		}
		t.Logf("steps on the GPU workers: %v", gpuSteps[0][1])
		multiCore(t, out, 2)
	})
	t.Run("invalid options fail before submission", func(t *testing.T) {
		args := append(dataflowFlags(w), "--gpu_type=nvidia-tesla-t4", "--gpu_count=3", "--gpu_machine_type=n1-standard-8")
		out, err := run(t, bin, args...)
		if code := exitCode(err); code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, out)
		}
		if !strings.Contains(out, "1, 2") || strings.Contains(out, "Dry-run") {
			t.Errorf("want an error listing the valid counts and no job:\n%s", out)
		}
	})
}

// A worker binary of another program, or for another platform, is refused
// before anything is submitted, with and without right fitting.
func TestDataflowDryRunRefusesWorker(t *testing.T) {
	bin := launcher(t)
	other := filepath.Join(t.TempDir(), "classify")
	cmd := exec.Command("go", "build", "-o", other, "../classify")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	text := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(text, []byte("not a program"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, worker, want string }{
		{"another program", other, "it is the program github.com/beamml/beamml/examples/classify, and the launcher is github.com/beamml/beamml/examples/dataflow"},
		{"not an executable", text, "is not a Linux executable"},
	} {
		for _, extra := range [][]string{nil, {"--right_fit", "--worker_machine_type=n1-standard-2"}} {
			out, err := run(t, bin, append(dataflowFlags(c.worker), extra...)...)
			if code := exitCode(err); code != 2 {
				t.Errorf("%s %q: exit %d, want 2:\n%s", c.name, extra, code, out)
			}
			if !strings.Contains(out, c.want) || strings.Contains(out, "Dry-run") {
				t.Errorf("%s %q: want an error saying %q and no job:\n%s", c.name, extra, c.want, out)
			}
		}
	}
}

// multiCore checks that the job asks Dataflow for one multi-core SDK
// container per worker in each of its environments (the Go SDK's
// capability): one process per GPU worker, so one copy of the weights.
func multiCore(t *testing.T, out string, envs int) {
	t.Helper()
	at := strings.LastIndex(out, "sdkHarnessContainerImages")
	if at < 0 {
		t.Fatal("the dry run printed no job with SDK container images")
	}
	job := out[at:]
	if n := strings.Count(job, `\"environmentId\"`); n != envs {
		t.Errorf("%d SDK container images in the job, want %d", n, envs)
	}
	if n := strings.Count(job, "beam:protocol:multi_core_bundle_processing:v1"); n != envs {
		t.Errorf("%d of %d SDK container images declare multi-core bundle processing", n, envs)
	}
	if strings.Contains(job, `useSingleCorePerContainer\": true`) {
		t.Error("the job asks for a single-core SDK container")
	}
}

func exitCode(err error) int {
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

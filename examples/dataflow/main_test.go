package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// dataflowFlags are a fake project's: a dry run contacts nothing.
func dataflowFlags(t *testing.T) []string {
	worker := filepath.Join(t.TempDir(), "worker")
	if err := os.WriteFile(worker, []byte("stand-in for make worker"), 0o755); err != nil {
		t.Fatal(err)
	}
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
	t.Run("whole pipeline", func(t *testing.T) {
		out, err := run(t, bin, append(dataflowFlags(t), "--gpu_mps")...)
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
	})
	t.Run("right fitting", func(t *testing.T) {
		out, err := run(t, bin, append(dataflowFlags(t), "--right_fit", "--worker_machine_type=n1-standard-2")...)
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
	})
	t.Run("invalid options fail before submission", func(t *testing.T) {
		args := append(dataflowFlags(t), "--gpu_type=nvidia-tesla-t4", "--gpu_count=3", "--gpu_machine_type=n1-standard-8")
		out, err := run(t, bin, args...)
		if code := exitCode(err); code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, out)
		}
		if !strings.Contains(out, "1, 2") || strings.Contains(out, "Dry-run") {
			t.Errorf("want an error listing the valid counts and no job:\n%s", out)
		}
	})
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

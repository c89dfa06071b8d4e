package gpurun

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a device call brings back (/work/.library/device: at most 8 files,
// 16 MiB each, two folders down, named in letters, digits, '.', '_', '-').
const (
	maxFilesBack = 8
	maxFileBack  = 16 << 20
)

var nameBack = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// payload is the bundle's payload as scripts/gpu-bundle.sh builds it: each
// binary, and the package folder a test binary runs in.
var payload = []struct{ bin, pkg string }{
	{"beamml-bench", ""},
	{"selfcheck", ""},
	{"conformance", ""},
	{"classify.test", "examples/classify"},
	{"cu.test", "inference/cuda/cu"},
	{"cublas.test", "inference/cuda/cu/internal/cublas"},
	{"curesult.test", "inference/cuda/cu/internal/curesult"},
}

// machine describes the fake device.
type machine struct {
	gpu    string // FAKE_GPU: yes, none or broken
	cublas string // where cuBLAS is: "wheel13" (a CUDA 13 wheel's nvidia/cu13/lib), "cache11" (the loader's cache), "" (nowhere)
	hang   string // FAKE_HANG
	fail   string // FAKE_FAIL
}

// device is a checkout with a bundle in out/gpu, on a fake machine.
type device struct {
	root, repo, bundle string
	env                []string
	calls              string // FAKE_LOG
}

func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "tar", "xz", "gzip", "timeout", "sha256sum", "awk", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("BEAMML_REQUIRE_TOOLS") == "1" {
				t.Fatalf("the fake device needs %s on PATH", tool)
			}
			t.Skipf("NOT RUN: the fake device needs %s on PATH (.ci/run sets BEAMML_REQUIRE_TOOLS=1, which makes this a failure)", tool)
		}
	}
}

func writeFile(t *testing.T, path string, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(data), mode)
}

func newDevice(t *testing.T, m machine) *device {
	t.Helper()
	requireTools(t)
	fake, err := filepath.Abs("testdata/fake")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	d := &device{root: root, repo: filepath.Join(root, "repo"), calls: filepath.Join(root, "calls.log")}
	d.bundle = filepath.Join(d.repo, "out", "gpu")

	// The checkout's files that gpu-run.sh and the binaries read.
	sources := map[string]string{
		"testing/conformance/testdata/node/test_add/model.onnx":  "add",
		"testing/conformance/testdata/node/test_relu/model.onnx": "relu",
		"internal/kernels/ptx/nn.ptx":                            "// nn",
		"examples/classify/digits.onnx":                          "digits",
		"examples/classify/testdata/digits.csv":                  "0,1,2",
	}
	for _, py := range []string{"bench_models.py", "runtools.py"} {
		data, err := os.ReadFile(filepath.Join("../../scripts/gpu", py))
		if err != nil {
			t.Fatal(err)
		}
		sources["scripts/gpu/"+py] = string(data)
	}
	var sums []string
	for path, data := range sources {
		writeFile(t, filepath.Join(d.repo, path), data, 0o644)
		sums = append(sums, fmt.Sprintf("%x  %s", sha256.Sum256([]byte(data)), path))
	}
	sort.Strings(sums)
	for _, p := range payload {
		if p.pkg != "" {
			if err := os.MkdirAll(filepath.Join(d.repo, p.pkg), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The bundle.
	copyFile(t, "../../scripts/gpu-run.sh", filepath.Join(d.bundle, "gpu-run.sh"), 0o755)
	writeFile(t, filepath.Join(d.bundle, "MANIFEST.txt"), "beamml GPU bundle\ncommit:   fake123\n", 0o644)
	writeFile(t, filepath.Join(d.bundle, "sources.sha256"), strings.Join(sums, "\n")+"\n", 0o644)
	pay := filepath.Join(root, "payload")
	var tsv strings.Builder
	for _, p := range payload {
		copyFile(t, filepath.Join(fake, "binary"), filepath.Join(pay, "bin", p.bin), 0o755)
		if p.pkg != "" {
			fmt.Fprintf(&tsv, "%s\t%s\n", p.bin, p.pkg)
		}
	}
	writeFile(t, filepath.Join(pay, "tests.tsv"), tsv.String(), 0o644)
	if out, err := exec.Command("tar", "-C", pay, "-cJf", filepath.Join(d.bundle, "payload.tar.xz"), ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}

	// The machine: the driver's libraries in a folder the loader's cache
	// does not list, cuBLAS where m says.
	driver := filepath.Join(root, "driver")
	writeFile(t, filepath.Join(driver, "libcuda.so.1"), "", 0o644)
	writeFile(t, filepath.Join(driver, "libnvidia-ml.so.1"), "", 0o644)
	cache := "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"
	wheel := filepath.Join(root, "site", "nvidia", "cu13", "lib")
	switch m.cublas {
	case "wheel13":
		writeFile(t, filepath.Join(wheel, "libcublas.so.13"), "", 0o644)
		writeFile(t, filepath.Join(wheel, "libcublasLt.so.13"), "", 0o644)
	case "cache11":
		lib := filepath.Join(root, "usr", "lib", "libcublas.so.11")
		writeFile(t, lib, "", 0o644)
		cache += "\tlibcublas.so.11 (libc6,x86-64) => " + lib + "\n"
	}
	writeFile(t, filepath.Join(root, "ld.so.cache"), cache, 0o644)
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "LD_LIBRARY_PATH", name == "DEADLINE", name == "OUT", name == "REPO", name == "PYTHON",
			name == "MODELS_DIR", name == "TMPDIR", name == "KEEP", name == "BENCH_MODELS", name == "UNIT_CONFORMANCE",
			name == "PATH", strings.HasPrefix(name, "BEAMML_"), strings.HasPrefix(name, "GPU_"),
			strings.HasPrefix(name, "FAKE_"), strings.HasPrefix(name, "SANITIZE_"):
			continue
		}
		d.env = append(d.env, kv)
	}
	gpu := m.gpu
	if gpu == "" {
		gpu = "yes"
	}
	d.env = append(d.env,
		"PATH="+filepath.Join(fake, "tools")+":"+os.Getenv("PATH"),
		"FAKE_DIR="+fake,
		"FAKE_GPU="+gpu,
		"FAKE_HANG="+m.hang,
		"FAKE_FAIL="+m.fail,
		"FAKE_LOG="+d.calls,
		"FAKE_LDCACHE="+filepath.Join(root, "ld.so.cache"),
		"FAKE_PYLIBDIRS="+wheel+" "+filepath.Join(root, "site", "torch", "lib"),
		"GPU_LIB_DIRS="+driver+" "+filepath.Join(root, "cuda", "lib64"),
		"GPU_TOOL_DIRS="+filepath.Join(root, "no-toolkit"),
		"PYTHON="+filepath.Join(fake, "python"),
		"TMPDIR="+filepath.Join(root, "tmp"),
	)
	return d
}

// run is one call of gpu-run.sh.
type run struct {
	rc      int
	took    time.Duration
	out     string            // $OUT
	summary string            // $OUT/summary.txt
	results map[string]string // results.tgz: path → content
	stderr  string
}

// call runs gpu-run.sh STAGES with OUT=out (a new folder) and the extra
// environment, in its own process group, killed with the group after
// limit; then checks $OUT against what a device call brings back.
func (d *device) call(t *testing.T, out string, limit time.Duration, extra []string, stages ...string) *run {
	t.Helper()
	begun := time.Now()
	cmd, stderr := d.start(t, out, extra, stages...)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("gpu-run.sh %v ran over %v; stderr:\n%s", stages, limit, stderr)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything it left behind
	r := &run{out: out, stderr: stderr.String(), took: time.Since(begun)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.rc = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.read(t)
	return r
}

func (d *device) start(t *testing.T, out string, extra []string, stages ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(d.bundle, "gpu-run.sh")}, stages...)...)
	cmd.Dir = d.repo
	cmd.Env = append(append(append([]string{}, d.env...), extra...), "OUT="+out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &stderr
}

// read takes summary.txt and results.tgz from $OUT, after checking that
// $OUT holds them alone and within what a device call brings back.
func (r *run) read(t *testing.T) {
	t.Helper()
	var files []string
	err := filepath.WalkDir(r.out, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.out, path)
		if rel == "." {
			return nil
		}
		if !nameBack.MatchString(e.Name()) {
			t.Errorf("$OUT/%s: a name a device call does not bring back", rel)
		}
		if e.IsDir() {
			if strings.Count(rel, string(filepath.Separator)) >= 2 {
				t.Errorf("$OUT/%s: deeper than two folders", rel)
			}
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxFileBack {
			t.Errorf("$OUT/%s: %d bytes, over %d", rel, info.Size(), maxFileBack)
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) > maxFilesBack || strings.Join(files, " ") != "results.tgz summary.txt" {
		t.Errorf("$OUT holds %q: want results.tgz and summary.txt alone (at most %d files come back)", files, maxFilesBack)
	}
	summary, err := os.ReadFile(filepath.Join(r.out, "summary.txt"))
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, r.stderr)
	}
	r.summary = string(summary)
	r.results = readTgz(t, filepath.Join(r.out, "results.tgz"))
	if r.results["results/summary.txt"] != r.summary {
		t.Errorf("results.tgz's summary.txt differs from $OUT/summary.txt")
	}
}

func readTgz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string]string{}
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, "./")] = string(data)
		}
	}
}

// stage is the status gpu-run.sh's summary gives the stage: the rest of
// its line.
func (r *run) stage(stage string) string {
	for _, line := range strings.Split(r.summary, "\n") {
		if rest, ok := strings.CutPrefix(line, stage+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "(no line)"
}

func (r *run) header(name string) string {
	for _, line := range strings.Split(r.summary, "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return "(no line)"
}

func (r *run) wantRC(t *testing.T, rc int) {
	t.Helper()
	if r.rc != rc {
		t.Errorf("gpu-run.sh exited %d, want %d; summary:\n%s\nstderr:\n%s", r.rc, rc, r.summary, r.stderr)
	}
}

func (r *run) wantStage(t *testing.T, stage string, prefix string, contains ...string) {
	t.Helper()
	got := r.stage(stage)
	if !strings.HasPrefix(got, prefix) {
		t.Errorf("%s: %q, want %q first", stage, got, prefix)
	}
	for _, c := range contains {
		if !strings.Contains(got, c) {
			t.Errorf("%s: %q does not say %q", stage, got, c)
		}
	}
}

// callLines are the fake device's calls whose line starts with prefix,
// but for the env stage's --version questions.
func (d *device) callLines(t *testing.T, prefix string) []string {
	t.Helper()
	data, err := os.ReadFile(d.calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, prefix) && !strings.HasSuffix(l, " --version") {
			lines = append(lines, l)
		}
	}
	return lines
}

var callA = []string{"env", "load", "unit", "selfcheck", "conformance", "classify", "bench"}

// The plan of docs/gpu/README.md: call A runs the stages up to bench,
// call B ncu and sanitize on the same machine, each within its deadline,
// each bringing back summary.txt and results.tgz alone. cuBLAS is found in
// a CUDA 13 wheel's folder and the driver's libraries in theirs, through
// LD_LIBRARY_PATH; the models exported in call A, outside the bundle, serve
// call B.
func TestTwoCalls(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{cublas: "wheel13"})

	a := d.call(t, filepath.Join(d.root, "outA"), 60*time.Second, []string{"DEADLINE=60"}, callA...)
	t.Logf("call A's summary.txt:\n%s", a.summary)
	a.wantRC(t, 0)
	for _, s := range callA {
		a.wantStage(t, s, "PASS")
	}
	wheel := filepath.Join(d.root, "site", "nvidia", "cu13", "lib")
	if got, want := a.header("cuBLAS"), filepath.Join(wheel, "libcublas.so.13")+" (LD_LIBRARY_PATH)"; got != want {
		t.Errorf("cuBLAS: %q, want %q", got, want)
	}
	if got := a.header("driver"); !strings.Contains(got, filepath.Join(d.root, "driver", "libcuda.so.1")) || !strings.Contains(got, "libnvidia-ml.so.1") {
		t.Errorf("driver: %q, want libcuda and NVML from the driver's folder", got)
	}
	if got := a.header("GPU"); !strings.HasPrefix(got, "NVIDIA Fake H200, 9.0") {
		t.Errorf("GPU: %q", got)
	}
	env := a.results["results/env.txt"]
	for _, want := range []string{"cuBLAS:   " + filepath.Join(wheel, "libcublas.so.13"), "LD_LIBRARY_PATH=" + wheel + ":" + filepath.Join(d.root, "driver")} {
		if !strings.Contains(env, want) {
			t.Errorf("env.txt does not record %q:\n%s", want, env)
		}
	}
	// Every test binary ran: none read tests.tsv as its stdin.
	for _, p := range payload[4:] {
		if !strings.Contains(a.stage("unit"), p.bin+": PASS") {
			t.Errorf("unit: %q: want %s run and passed", a.stage("unit"), p.bin)
		}
		if lines := d.callLines(t, p.bin+" "); len(lines) != 1 || !strings.Contains(lines[0], "-test.timeout=") {
			t.Errorf("%s ran as %q: want once, with -test.timeout", p.bin, lines)
		}
	}
	for _, want := range []string{"| model | batch | beamml | beamml tf32 | beamml fp16 | torch fp32 | torch tf32 | torch fp16 |", "| resnet50 | 8 | 8.50 | 8.50 | 8.50 | 8.25 | 8.25 | 8.25 |", "| bert | 32 |",
		"- bert: beamml tf32 vs torch fp32 at batch 8: max |Δ| 1e-05, 1e-06 of the output's largest |x| (10)"} {
		if !strings.Contains(a.summary, want) {
			t.Errorf("the summary's benchmark table lacks %q:\n%s", want, a.summary)
		}
	}
	exports := d.callLines(t, "python "+filepath.Join(d.repo, "scripts/gpu/bench_models.py")+" export ")
	if len(exports) != 1 || !strings.HasSuffix(exports[0], " resnet50 bert") || strings.Contains(exports[0], d.bundle) ||
		!strings.Contains(exports[0], filepath.Join(d.root, "tmp", "beamml-gpu-models-")) {
		t.Errorf("exports %q: want one of both models, into $TMPDIR/beamml-gpu-models-*, outside the bundle", exports)
	}

	b := d.call(t, filepath.Join(d.root, "outB"), 40*time.Second, []string{"DEADLINE=40"}, "ncu", "sanitize")
	t.Logf("call B's summary.txt:\n%s", b.summary)
	b.wantRC(t, 0)
	b.wantStage(t, "ncu", "PASS")
	b.wantStage(t, "sanitize", "PASS", "sanitize-memcheck: PASS")
	if got := d.callLines(t, "python "+filepath.Join(d.repo, "scripts/gpu/bench_models.py")+" export "); len(got) != 1 {
		t.Errorf("exports after call B: %q, want call A's alone: call B uses its models", got)
	}
	if got := d.callLines(t, "ncu "); len(got) != 1 || !strings.Contains(got[0], "--clock-control none") || !strings.Contains(got[0], "resnet50.onnx") {
		t.Errorf("ncu ran as %q: want once, on resnet50.onnx, with --clock-control none", got)
	}
	if got := d.callLines(t, "compute-sanitizer "); len(got) != 1 || !strings.Contains(got[0], "--tool memcheck") {
		t.Errorf("compute-sanitizer ran as %q: want memcheck alone (SANITIZE_TOOLS' default)", got)
	}
	// ncu's durations carry thousands separators: 1,234,567 + 765,433 ns of
	// the conv kernel, 2,000 of relu.
	for _, want := range []string{"resnet50.onnx at batch 8: 2.00 ms of kernels in 3 launches", "    2.000 ms  99.9%  x2     conv2d_implicit_gemm", "    0.002 ms   0.1%  x1     relu_f32"} {
		if !strings.Contains(b.summary, want) {
			t.Errorf("the summary's kernel times lack %q:\n%s", want, b.summary)
		}
	}
}

// A stage that hangs is cut off at the deadline, the stages before it keep
// their results, the later ones are NOT RUN: out of time, and the call
// ends within its deadline. nvidia-smi hangs too (but for -L): it costs
// one bounded wait, not one per call.
func TestHangIsCutOffAtTheDeadline(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{cublas: "wheel13", hang: "conformance nvidia-smi-query"})
	const deadline = 45
	r := d.call(t, filepath.Join(d.root, "out"), (deadline+15)*time.Second, []string{fmt.Sprintf("DEADLINE=%d", deadline)}, callA...)
	t.Logf("summary.txt:\n%s", r.summary)
	r.wantRC(t, 1)
	if r.took > deadline*time.Second {
		t.Errorf("the call took %v, over its DEADLINE of %ds", r.took, deadline)
	}
	for _, s := range []string{"env", "load", "unit", "selfcheck"} {
		r.wantStage(t, s, "PASS")
	}
	r.wantStage(t, "conformance", "TIMEOUT after ", "(the deadline) in conformance-cuda", "conformance-cpu: not started, out of time")
	r.wantStage(t, "classify", "NOT RUN: out of time")
	r.wantStage(t, "bench", "NOT RUN: out of time")
	if !strings.Contains(r.results["results/cu.test.log"], "--- PASS: TestOpen") {
		t.Errorf("results.tgz lost the unit stage's log: %q", r.results["results/cu.test.log"])
	}
	if n := len(d.callLines(t, "nvidia-smi --query-gpu")); n != 1 {
		t.Errorf("nvidia-smi --query-gpu asked %d times: after one hang, no more", n)
	}
}

// A call killed from outside (the device's own time limit) still leaves
// summary.txt and results.tgz as they were when the hanging stage began:
// the stages before it, and which one ran.
func TestKilledFromOutsideKeepsResults(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{cublas: "wheel13", hang: "selfcheck"})
	out := filepath.Join(d.root, "out")
	cmd, stderr := d.start(t, out, []string{"DEADLINE=300"}, callA...)
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		summary, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
		if regexp.MustCompile(`(?m)^selfcheck +RUNNING$`).Match(summary) {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("selfcheck never shown RUNNING; summary:\n%s\nstderr:\n%s", summary, stderr)
		}
	}
	time.Sleep(time.Second)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	r := &run{out: out}
	r.read(t)
	for _, s := range []string{"env", "load", "unit"} {
		r.wantStage(t, s, "PASS")
	}
	r.wantStage(t, "selfcheck", "RUNNING")
	r.wantStage(t, "conformance", "PENDING")
	if !strings.Contains(r.results["results/cu.test.log"], "--- PASS: TestOpen") {
		t.Errorf("results.tgz lost the unit stage's log")
	}
}

// No cuBLAS anywhere: the env stage fails naming what was searched, the
// GPU stages do not run, and the status is not 0.
func TestMissingCuBLAS(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{})
	r := d.call(t, filepath.Join(d.root, "out"), 60*time.Second, nil, "env", "load", "unit")
	r.wantRC(t, 1)
	wheel := filepath.Join(d.root, "site", "nvidia", "cu13", "lib")
	if got := r.header("cuBLAS"); !strings.HasPrefix(got, "NOT FOUND: no libcublas.so.12, .13 or .11 in LD_LIBRARY_PATH, the loader's cache,") || !strings.Contains(got, wheel) {
		t.Errorf("cuBLAS: %q, want NOT FOUND naming the folders searched, the wheels' among them", got)
	}
	if got := r.header("GPU"); !strings.HasPrefix(got, "UNUSABLE: nvidia-smi lists GPU 0: NVIDIA Fake H200, but no cuBLAS") {
		t.Errorf("GPU: %q", got)
	}
	r.wantStage(t, "env", "FAIL (no cuBLAS: ")
	r.wantStage(t, "load", "NOT RUN: the GPU cannot be used")
	r.wantStage(t, "unit", "NOT RUN: the GPU cannot be used")
}

// A GPU that nvidia-smi lists but cuInit refuses: status 1, and the
// probe's error in the summary.
func TestUnusableGPU(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{gpu: "broken", cublas: "cache11"})
	r := d.call(t, filepath.Join(d.root, "out"), 60*time.Second, nil, "env", "load", "conformance", "classify")
	r.wantRC(t, 1)
	if got := r.header("GPU"); !strings.HasPrefix(got, "UNUSABLE: nvidia-smi lists GPU 0: NVIDIA Fake H200, but ") ||
		!strings.Contains(got, "beamml: cuInit failed: CUDA_ERROR_SYSTEM_NOT_READY (802)") {
		t.Errorf("GPU: %q, want UNUSABLE with the probe's error", got)
	}
	if got, want := r.header("cuBLAS"), filepath.Join(d.root, "usr", "lib", "libcublas.so.11")+" (the loader's cache)"; got != want {
		t.Errorf("cuBLAS: %q, want %q", got, want)
	}
	r.wantStage(t, "env", "PASS")
	for _, s := range []string{"load", "conformance", "classify"} {
		r.wantStage(t, s, "NOT RUN: the GPU cannot be used")
	}
}

// No GPU at all: every stage but env NOT RUN: no GPU, status 3 (what CI
// requires of the real bundle on its own machine).
func TestNoGPU(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{gpu: "none", cublas: "cache11"})
	r := d.call(t, filepath.Join(d.root, "out"), 60*time.Second, nil)
	r.wantRC(t, 3)
	if got := r.header("GPU"); !strings.HasPrefix(got, "none: nvidia-smi lists no GPU (NVIDIA-SMI has failed") ||
		!strings.Contains(got, "beamml: cuInit failed: CUDA_ERROR_NO_DEVICE (100)") {
		t.Errorf("GPU: %q", got)
	}
	r.wantStage(t, "env", "PASS")
	for _, s := range []string{"load", "unit", "selfcheck", "conformance", "classify", "bench", "sanitize", "ncu"} {
		r.wantStage(t, s, "NOT RUN: no GPU")
	}
}

// A failing subtest, printed indented as go test prints it, is caught in
// the stage's failures file, and the other test binaries still run.
func TestSubtestFailure(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{cublas: "wheel13", fail: "cu.test"})
	r := d.call(t, filepath.Join(d.root, "out"), 60*time.Second, nil, "unit")
	r.wantRC(t, 1)
	r.wantStage(t, "unit", "FAIL (1) in cu.test", "cublas.test: PASS", "curesult.test: PASS")
	if got := r.results["results/cu.test.failures.txt"]; !strings.Contains(got, "    --- FAIL: TestOpsMatchCPU/nn/conv (0.01s)\n--- FAIL: TestOpsMatchCPU (0.02s)\nFAIL") {
		t.Errorf("cu.test.failures.txt:\n%s\nwant the subtest's indented --- FAIL line and its parent's", got)
	}
}

// Usage errors exit 2 before anything runs.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	d := newDevice(t, machine{cublas: "wheel13"})
	for _, c := range []struct {
		name   string
		extra  []string
		stages []string
		want   string
	}{
		{"unknown stage", nil, []string{"env", "benchmark"}, "gpu-run.sh: no stage benchmark"},
		{"bad deadline", []string{"DEADLINE=9m"}, []string{"env"}, "gpu-run.sh: DEADLINE=9m: want whole seconds"},
		{"short deadline", []string{"DEADLINE=20"}, []string{"env"}, "gpu-run.sh: DEADLINE=20: want whole seconds, at least 25"},
		{"no checkout", []string{"REPO=" + d.root}, []string{"env"}, "is not the beamml checkout the bundle was built in"},
	} {
		out := filepath.Join(d.root, "out-"+strings.ReplaceAll(c.name, " ", "-"))
		cmd, stderr := d.start(t, out, c.extra, c.stages...)
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: %v, stderr:\n%s\nwant status 2 and %q", c.name, err, stderr, c.want)
		}
	}
}

// send-size.sh counts what a device call sends: tracked files (not those
// deleted from the work tree), untracked files git does not ignore, the
// ignored files under each carried path and under shared/; it fails over
// its limit.
func TestSendSize(t *testing.T) {
	t.Parallel()
	requireTools(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: ", err)
	}
	dir := t.TempDir()
	sizes := map[string]int{}
	write := func(name string, n int) {
		writeFile(t, filepath.Join(dir, name), strings.Repeat("x", n), 0o644)
		sizes[name] = n
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	copyFile(t, "../../scripts/gpu/send-size.sh", filepath.Join(dir, "scripts/gpu/send-size.sh"), 0o755)
	script, _ := os.Stat(filepath.Join(dir, "scripts/gpu/send-size.sh"))
	writeFile(t, filepath.Join(dir, ".gitignore"), "/out/\n/junk\n/shared/\n", 0o644)
	gitignore, _ := os.Stat(filepath.Join(dir, ".gitignore"))
	write("model.onnx", 1000)
	write("gone.bin", 700)
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "t")
	if err := os.Remove(filepath.Join(dir, "gone.bin")); err != nil {
		t.Fatal(err)
	}
	write("notes.txt", 2000)              // untracked, not ignored: sent
	write("out/gpu/payload.tar.xz", 3000) // carried
	write("out/other/big", 9000)          // ignored, not carried
	write("junk", 5000)                   // ignored
	write("shared/data", 400)             // ignored, but shared/ travels
	tracked := int(script.Size()+gitignore.Size()) + sizes["model.onnx"]
	total := tracked + 2000 + 3000 + 400

	sendSize := func(args ...string) (string, int) {
		cmd := exec.Command("bash", append([]string{filepath.Join(dir, "scripts/gpu/send-size.sh")}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, rc := sendSize("out/gpu")
	for _, want := range []string{
		fmt.Sprintf("%12d  carried: out/gpu\n", 3000),
		fmt.Sprintf("%12d  carried: shared\n", 400),
		fmt.Sprintf("%12d  tracked\n", tracked),
		fmt.Sprintf("%12d  untracked, not ignored\n", 2000),
		fmt.Sprintf("%12d  in all", total),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("send-size.sh out/gpu:\n%s\nwant %q", out, want)
		}
	}
	if rc != 0 {
		t.Errorf("send-size.sh out/gpu: status %d", rc)
	}
	if out, rc := sendSize("--limit", fmt.Sprint(total), "out/gpu"); rc != 0 {
		t.Errorf("at its limit: status %d, want 0:\n%s", rc, out)
	}
	out, rc = sendSize("--limit", fmt.Sprint(total-1), "out/gpu")
	if want := fmt.Sprintf("a device call would send %d bytes, over the limit of %d", total, total-1); rc != 1 || !strings.Contains(out, want) {
		t.Errorf("over its limit: status %d, output:\n%s\nwant 1 and %q", rc, out, want)
	}
	if out, rc := sendSize("out/none"); rc != 2 || !strings.Contains(out, "no out/none to carry") {
		t.Errorf("carrying a missing path: status %d:\n%s", rc, out)
	}
}

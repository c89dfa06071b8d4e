package dataflowgpu_test

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

// goBuild builds ./testdata/<dir> into out for goos/goarch, with cgo on or
// off and the given tags.
func goBuild(t *testing.T, out, dir, goos, goarch string, cgo bool, tags string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, "-tags", tags, "./testdata/"+dir)
	enabled := "0"
	if cgo {
		enabled = "1"
	}
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED="+enabled)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
}

// build is goBuild into a temporary file of t.
func build(t *testing.T, dir, goos, goarch string, cgo bool, tags string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), dir+"-"+goos+"-"+goarch)
	goBuild(t, out, dir, goos, goarch, cgo, tags)
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workerDir != "" {
		os.RemoveAll(workerDir)
	}
	os.Exit(code)
}

var (
	workerOnce sync.Once
	workerPath string
	workerDir  string
)

// plainWorker is testdata/worker built as Beam builds workers: linux/amd64,
// CGO_ENABLED=0. It is built once per test binary.
func plainWorker(t *testing.T) string {
	t.Helper()
	workerOnce.Do(func() {
		var err error
		if workerDir, err = os.MkdirTemp("", "dataflowgpu-worker"); err != nil {
			t.Fatal(err)
		}
		workerPath = filepath.Join(workerDir, "worker")
		goBuild(t, workerPath, "worker", "linux", "amd64", false, "")
	})
	if _, err := os.Stat(workerPath); err != nil {
		t.Fatal(err)
	}
	return workerPath
}

// beamVersion is go.mod's Beam version (a test binary's build
// information lists no dependencies).
func beamVersion(t *testing.T) string {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github.com/apache/beam/sdks/v2 (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod does not require Beam")
	}
	return string(m[1])
}

// ReadWorker reads a CGO_ENABLED=0 build's settings: no GPU backend, no
// shared libraries, and the Beam version of go.mod.
func TestReadWorkerPlain(t *testing.T) {
	w, err := dataflowgpu.ReadWorker(plainWorker(t))
	if err != nil {
		t.Fatal(err)
	}
	if w.GOOS != "linux" || w.GOARCH != "amd64" || w.CGO || w.CUDA() {
		t.Errorf("GOOS %q GOARCH %q CGO %t CUDA %t, want linux amd64 false false", w.GOOS, w.GOARCH, w.CGO, w.CUDA())
	}
	if w.Package != "github.com/beamml/beamml/beam/dataflowgpu/testdata/worker" {
		t.Errorf("Package = %q", w.Package)
	}
	if want := beamVersion(t); w.Beam != want {
		t.Errorf("Beam = %q, want %q", w.Beam, want)
	}
	if len(w.Needed) != 0 || w.GLIBC != "" {
		t.Errorf("a static binary needs %q and glibc %q", w.Needed, w.GLIBC)
	}
	if err := w.Check(dataflowgpu.Image, nil); err != nil {
		t.Error(err)
	}
}

// Built with cgo and the cuda tag, the stand-in links libm and libc: the
// reader sees the GPU build, its libraries and the glibc it needs.
func TestReadWorkerCgo(t *testing.T) {
	cc, _ := exec.Command("go", "env", "CC").Output()
	if _, err := exec.LookPath(strings.TrimSpace(string(cc))); err != nil {
		t.Skipf("no C compiler (%s) for a cgo build: %v", strings.TrimSpace(string(cc)), err)
	}
	w, err := dataflowgpu.ReadWorker(build(t, "worker", "linux", "amd64", true, "cuda"))
	if err != nil {
		t.Fatal(err)
	}
	if !w.CUDA() || !strings.Contains(strings.Join(w.Needed, " "), "libm.so.6") || w.GLIBC == "" {
		t.Errorf("CUDA %t, needed %q, glibc %q: want true, libm.so.6 and a version", w.CUDA(), w.Needed, w.GLIBC)
	}
	t.Logf("needs %q, glibc %s", w.Needed, w.GLIBC)
	if err := w.Check(dataflowgpu.Image, nil); err != nil {
		t.Error(err)
	}
}

// Binaries that cannot run on a Dataflow worker fail with what they are.
func TestReadWorkerRefuses(t *testing.T) {
	for _, c := range []struct{ goos, goarch, want string }{
		{"darwin", "arm64", "is not a Linux executable"},
		{"linux", "arm64", "EM_AARCH64"},
		{"linux", "386", "ELFCLASS32"},
	} {
		_, err := dataflowgpu.ReadWorker(build(t, "tiny", c.goos, c.goarch, false, ""))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "GOOS=linux GOARCH=amd64") {
			t.Errorf("%s/%s: err = %v, want one saying %q and how to build for linux/amd64", c.goos, c.goarch, err, c.want)
		}
	}
	script := filepath.Join(t.TempDir(), "worker.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := dataflowgpu.ReadWorker(script); err == nil || !strings.Contains(err.Error(), "not a Linux executable") {
		t.Errorf("a shell script: err = %v", err)
	}
	if _, err := dataflowgpu.ReadWorker(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing file: err = %v", err)
	}
}

// Check against container/Dockerfile's image: each problem is reported,
// with what to do.
func TestWorkerCheck(t *testing.T) {
	ok := dataflowgpu.Worker{Path: "w", GOOS: "linux", GOARCH: "amd64", CGO: true, Tags: []string{"cuda"},
		Package: "example.com/pipeline", Beam: "v2.77.0", GLIBC: "2.34", Needed: []string{"libcuda.so.1", "libc.so.6"}}
	launcher := &debug.BuildInfo{Path: "example.com/pipeline",
		Deps: []*debug.Module{{Path: "github.com/apache/beam/sdks/v2", Version: "v2.77.0"}}}
	for _, c := range []struct {
		name   string
		change func(*dataflowgpu.Worker)
		want   []string // empty: no error
	}{
		{"valid", func(*dataflowgpu.Worker) {}, nil},
		{"glibc of the image", func(w *dataflowgpu.Worker) { w.GLIBC = "2.35" }, nil},
		{"CUDA 12 cuBLAS", func(w *dataflowgpu.Worker) { w.Needed = append(w.Needed, "libcublas.so.12", "libcublasLt.so.12") }, nil},
		{"C++ runtime", func(w *dataflowgpu.Worker) { w.Needed = append(w.Needed, "libstdc++.so.6") }, nil},
		{"CUDA 11 cuBLAS", func(w *dataflowgpu.Worker) { w.Needed = append(w.Needed, "libcublas.so.11") },
			[]string{"links libcublas.so.11 (CUDA 11)", "CUDA 12's libraries", "container/README.md"}},
		{"a library the image lacks", func(w *dataflowgpu.Worker) { w.Needed = append(w.Needed, "libz.so.1") },
			[]string{"links libz.so.1, which container/Dockerfile's image"}},
		{"newer glibc", func(w *dataflowgpu.Worker) { w.GLIBC = "2.38" },
			[]string{"needs glibc 2.38", "has glibc 2.35"}},
		{"windows", func(w *dataflowgpu.Worker) { w.GOOS = "windows" }, []string{"built for windows/amd64"}},
		{"another program", func(w *dataflowgpu.Worker) { w.Package = "github.com/beamml/beamml/examples/dataflow" },
			[]string{"it is the program github.com/beamml/beamml/examples/dataflow, and the launcher is example.com/pipeline",
				"make worker WORKER_PKG=example.com/pipeline"}},
		{"built from a file list", func(w *dataflowgpu.Worker) { w.Package = "command-line-arguments" }, nil},
		{"another Beam", func(w *dataflowgpu.Worker) { w.Beam = "v2.60.0" },
			[]string{"built with Beam v2.60.0, and the launcher with Beam v2.77.0"}},
		{"all at once", func(w *dataflowgpu.Worker) { w.GLIBC, w.Needed = "2.39", []string{"libcublas.so.11"} },
			[]string{"needs glibc 2.39", "libcublas.so.11"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := ok
			w.Needed = append([]string(nil), ok.Needed...)
			c.change(&w)
			err := w.Check(dataflowgpu.Image, launcher)
			if len(c.want) == 0 {
				if err != nil {
					t.Errorf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check = nil, want an error saying %q", c.want)
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
			if !strings.HasPrefix(err.Error(), "dataflowgpu: worker binary w cannot run on the GPU workers") {
				t.Errorf("error does not name the binary first:\n%v", err)
			}
		})
	}
}

// Apply refuses a worker binary the GPU workers cannot start, and sets
// nothing.
func TestApplyChecksWorker(t *testing.T) {
	keepCommandLine(t)
	o := gpuOptions(dataflowgpu.L4, 1, "g2-standard-8")
	o.WorkerBinary = build(t, "tiny", "linux", "arm64", false, "")
	before := flagValues()
	if err := o.Apply(); err == nil || !strings.Contains(err.Error(), "EM_AARCH64") {
		t.Errorf("Apply with an arm64 worker: err = %v", err)
	}
	if err := o.ApplyRightFit(); err == nil || !strings.Contains(err.Error(), "EM_AARCH64") {
		t.Errorf("ApplyRightFit with an arm64 worker: err = %v", err)
	}
	if after := flagValues(); after != before {
		t.Errorf("a refused Apply changed the flags:\n%s\nto\n%s", before, after)
	}
}

func flagValues() string {
	var b strings.Builder
	for _, name := range appliedFlags {
		b.WriteString(name + "=" + flag.Lookup(name).Value.String() + "\n")
	}
	return b.String()
}

package dataflowgpu

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// beamModule is the Beam Go SDK's module path.
const beamModule = "github.com/apache/beam/sdks/v2"

// Container is what a GPU worker binary may rely on in the SDK container:
// the C library's version and the shared libraries the loader finds there.
type Container struct {
	// Name says which image this describes, in error messages.
	Name string
	// GLIBC is the image's glibc version, e.g. "2.35".
	GLIBC string
	// CUDAMajor is the major version of the CUDA libraries in the image.
	CUDAMajor int
	// Libraries are the sonames the image provides besides CUDAMajor's
	// CUDA libraries (lib{cu,nv,npp}*.so.<CUDAMajor>): glibc's, the C++
	// runtime's and the driver's, which Dataflow mounts.
	Libraries []string
}

// Image is the image container/Dockerfile builds: nvidia/cuda 12.4.1 on
// Ubuntu 22.04 (glibc 2.35). container/dockerfile_test.go keeps the two in
// step.
var Image = Container{
	Name:      "container/Dockerfile's image (CUDA 12, Ubuntu 22.04)",
	GLIBC:     "2.35",
	CUDAMajor: 12,
	Libraries: []string{
		"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libresolv.so.2",
		"ld-linux-x86-64.so.2", "libstdc++.so.6", "libgcc_s.so.1",
		"libcuda.so.1", "libnvidia-ml.so.1", // the driver's, mounted under /usr/local/nvidia/lib64
	},
}

// Worker is what the launcher reads from a worker binary before a job is
// submitted: the Go build settings and the ELF file's needs.
type Worker struct {
	Path         string
	GOOS, GOARCH string
	CGO          bool
	Tags         []string // the -tags it was built with
	Package      string   // its main package's import path
	Beam         string   // the Beam Go SDK version it was built with
	GoVersion    string
	GLIBC        string   // the newest GLIBC_ symbol version it needs; "" when it needs none
	Needed       []string // the shared libraries it links (DT_NEEDED)
}

// CUDA reports whether the binary has the GPU backend: built with cgo and
// the cuda tag (docs/design.md, rule 3).
func (w *Worker) CUDA() bool { return w.CGO && slices.Contains(w.Tags, "cuda") }

// ReadWorker reads the build settings and the dynamic section of the worker
// binary at path.
func ReadWorker(path string) (*Worker, error) {
	w := &Worker{Path: path}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("worker binary: %w", err)
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		return nil, fmt.Errorf("worker binary %s is not a Linux executable (%v): Dataflow workers run linux/amd64 programs; build it with GOOS=linux GOARCH=amd64 (make worker)", path, err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("worker binary %s is a %v %v executable: Dataflow workers run linux/amd64 (x86-64) programs; build it with GOOS=linux GOARCH=amd64", path, f.Class, f.Machine)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("worker binary %s: no Go build information (%v): the worker must be the pipeline program itself, built a second time (docs/design.md, rule 3)", path, err)
	}
	w.Package, w.GoVersion = bi.Path, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			w.GOOS = s.Value
		case "GOARCH":
			w.GOARCH = s.Value
		case "CGO_ENABLED":
			w.CGO = s.Value == "1"
		case "-tags":
			w.Tags = strings.Split(s.Value, ",")
		}
	}
	w.Beam = moduleVersion(bi, beamModule)
	if w.Needed, err = f.ImportedLibraries(); err != nil {
		return nil, fmt.Errorf("worker binary %s: reading its shared libraries: %w", path, err)
	}
	syms, err := f.ImportedSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("worker binary %s: reading its imported symbols: %w", path, err)
	}
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && versionLess(w.GLIBC, v) {
			w.GLIBC = v
		}
	}
	return w, nil
}

// Check reports every reason w cannot run on c's GPU workers for the
// launcher described by launcher (nil skips the comparisons with it): a
// platform other than linux/amd64, another program or Beam version than the
// launcher's, a newer glibc than c's, or a shared library c lacks. A worker
// without the GPU backend is not an error: it runs its models on the CPU of
// the GPU workers; see [Worker.CUDA].
func (w *Worker) Check(c Container, launcher *debug.BuildInfo) error {
	var problems []error
	if w.GOOS != "linux" || w.GOARCH != "amd64" {
		problems = append(problems, fmt.Errorf("built for %s/%s; Dataflow workers run linux/amd64", w.GOOS, w.GOARCH))
	}
	if launcher != nil {
		// A program built from a file list ("go build main.go") has no
		// package path to compare.
		const files = "command-line-arguments"
		if w.Package != launcher.Path && w.Package != files && launcher.Path != files {
			problems = append(problems, fmt.Errorf("it is the program %s, and the launcher is %s: the worker must be the launcher's program, built with CGO_ENABLED=1 -tags cuda (make worker WORKER_PKG=%s), or its steps will not find their functions",
				w.Package, launcher.Path, launcher.Path))
		}
		if lv := moduleVersion(launcher, beamModule); w.Beam != lv {
			problems = append(problems, fmt.Errorf("built with Beam %s, and the launcher with Beam %s", orNone(w.Beam), orNone(lv)))
		}
	}
	if w.GLIBC != "" && versionLess(c.GLIBC, w.GLIBC) {
		problems = append(problems, fmt.Errorf("needs glibc %s, and %s has glibc %s: build it on a system with glibc %s or older, or in the image (container/README.md)",
			w.GLIBC, c.Name, c.GLIBC, c.GLIBC))
	}
	for _, lib := range w.Needed {
		if slices.Contains(c.Libraries, lib) {
			continue
		}
		if m := cudaLib.FindStringSubmatch(lib); m != nil {
			if m[2] == strconv.Itoa(c.CUDAMajor) {
				continue
			}
			problems = append(problems, fmt.Errorf("links %s (CUDA %s), and %s has CUDA %d's libraries: the loader will not start it; rebuild it against CUDA %d, or in the image (container/README.md)",
				lib, m[2], c.Name, c.CUDAMajor, c.CUDAMajor))
			continue
		}
		problems = append(problems, fmt.Errorf("links %s, which %s does not have", lib, c.Name))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("dataflowgpu: worker binary %s cannot run on the GPU workers:\n%w", w.Path, errors.Join(problems...))
}

// cudaLib matches the soname of a CUDA toolkit library and its major.
var cudaLib = regexp.MustCompile(`^lib(cu|nv|npp)[a-zA-Z0-9_]*\.so\.([0-9]+)$`)

// launcherInfo is the build information of the running program, the
// launcher, or nil inside a go test binary, which is not the program its
// jobs' workers are built from.
func launcherInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok || strings.HasSuffix(bi.Path, ".test") {
		return nil
	}
	return bi
}

func moduleVersion(bi *debug.BuildInfo, path string) string {
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// versionLess compares dotted decimal versions; "" is the least.
func versionLess(a, b string) bool {
	if a == "" || b == "" {
		return a == "" && b != ""
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

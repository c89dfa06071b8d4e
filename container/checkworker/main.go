// Command checkworker reads a GPU worker binary and says whether it can run
// in container/Dockerfile's image on Dataflow's GPU workers: built for
// linux/amd64 with cgo and the cuda tag, needing no newer glibc than the
// image's and no shared library the image lacks (such as CUDA 11's
// libcublas.so.11 in the CUDA 12 image). make worker runs it on what it
// builds.
//
//	go run ./container/checkworker [--package IMPORTPATH] out/worker
//
// With --package it also checks that the binary is that program (the
// launcher's). It prints what it read and exits 0 when the binary can run,
// 1 when it cannot (with every reason), 2 on a usage error. The launcher
// runs the same checks before a job is submitted (dataflowgpu.Options.Apply).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/beamml/beamml/beam/dataflowgpu"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pkg := fs.String("package", "", "the import path the binary must have been built from (the launcher's main package)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: checkworker [--package IMPORTPATH] WORKER_BINARY")
		return 2
	}
	w, err := dataflowgpu.ReadWorker(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "checkworker:", err)
		return 1
	}
	glibc := w.GLIBC
	if glibc == "" {
		glibc = "none (static)"
	}
	fmt.Fprintf(stdout, "%s: %s, %s/%s, cgo %t, tags %q, Beam %s, %s\n  shared libraries: %s\n  glibc: %s (the image has %s)\n",
		w.Path, w.Package, w.GOOS, w.GOARCH, w.CGO, w.Tags, w.Beam, w.GoVersion,
		strings.Join(w.Needed, " "), glibc, dataflowgpu.Image.GLIBC)
	var launcher *debug.BuildInfo
	if *pkg != "" {
		// Only the package path and the Beam version are compared.
		launcher = &debug.BuildInfo{Path: *pkg, Deps: []*debug.Module{{Path: "github.com/apache/beam/sdks/v2", Version: w.Beam}}}
	}
	failed := false
	if err := w.Check(dataflowgpu.Image, launcher); err != nil {
		fmt.Fprintln(stderr, err)
		failed = true
	}
	if !w.CUDA() {
		fmt.Fprintf(stderr, "checkworker: %s has no GPU backend: build it with CGO_ENABLED=1 -tags cuda (make worker)\n", w.Path)
		failed = true
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "%s can run in %s\n", w.Path, dataflowgpu.Image.Name)
	return 0
}

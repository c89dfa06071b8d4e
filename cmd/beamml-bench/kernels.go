package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// moduleLoad is the time the driver took to load one kernel module's
// fatbin: it takes the machine code for the device's architecture where the
// fatbin has it (sm_75 to sm_90), and otherwise JIT-compiles its PTX,
// unless its compute cache (~/.nv/ComputeCache) holds the result.
type moduleLoad struct {
	Name        string
	FatbinBytes int
	Took        time.Duration
}

// loadKernelModules opens the GPU and loads every kernel module into it,
// timing each; it returns the device's name and the time Open took (the
// primary context and the cuBLAS handle). Set in binaries built with the
// cuda tag (cuda.go); nil otherwise.
var loadKernelModules func() (device string, open time.Duration, loads []moduleLoad, err error)

// printKernelLoads is -load-kernels: it prints one line per module and
// the total, and returns the exit status.
func printKernelLoads(stdout, stderr io.Writer) int {
	if loadKernelModules == nil {
		fmt.Fprintln(stderr, "beamml-bench: -load-kernels: this binary has no CUDA backend; build it with CGO_ENABLED=1 go build -tags cuda")
		return exitUsage
	}
	device, open, loads, err := loadKernelModules()
	if err != nil {
		fmt.Fprintf(stderr, "beamml-bench: -load-kernels: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "device  %s\nopen    %.1f ms (primary context, cuBLAS handle)\n\n", device, ms(open))
	tw := tabwriter.NewWriter(stdout, 0, 0, 3, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "module\tfatbin bytes\tload ms\t")
	var total time.Duration
	for _, l := range loads {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", l.Name, l.FatbinBytes, ms(l.Took))
		total += l.Took
	}
	fmt.Fprintf(tw, "all\t\t%.1f\t\n", ms(total))
	tw.Flush()
	return exitOK
}

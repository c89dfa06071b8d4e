// Command beamml-inspect prints what an ONNX model file declares and what
// beamml's backends can run of it: the inputs and outputs with their
// element types and shapes (symbolic dimensions by name, unknown ones as
// ?), the opsets, the operators and how many nodes use each, and for the
// CPU and CUDA backends the operators they cannot run or run on the host.
// It is for pipeline authors, who need a model's input and output names
// and types to write the code on either side of RunInference:
//
//	go run github.com/beamml/beamml/cmd/beamml-inspect model.onnx [more.onnx ...]
//
// It needs no GPU and builds without cgo: the CUDA backend's table of
// device kernels is pure Go. It reads local files (a path or file://);
// a model with external data needs them beside it, as when it is loaded.
//
// Exit status: 0 when every model was described, 1 when one could not be
// read or decoded (its cause on one line of stderr; the others are still
// described), 2 for a usage error.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/beamml/beamml/inference/onnx"

	// The CUDA backend's lowerings, so that the report says which
	// operators have device kernels. Linking the package registers no
	// backend (inference/cuda/cu does) and needs no GPU.
	_ "github.com/beamml/beamml/inference/cuda"
)

const usage = "usage: beamml-inspect model.onnx [more.onnx ...]\n" +
	"Prints each ONNX model's inputs, outputs, opsets, operators and what beamml's backends can run of it.\n"

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// run describes each model named in args on stdout and returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	status := 0
	for i, uri := range args {
		d, err := onnx.Describe(ctx, uri)
		if err != nil {
			fmt.Fprintf(stderr, "beamml-inspect: %v\n", oneLine(err))
			status = 1
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := d.Format(stdout); err != nil {
			fmt.Fprintf(stderr, "beamml-inspect: %v\n", err)
			return 1
		}
	}
	return status
}

// oneLine keeps a cause on one line of stderr, whatever a nested error
// (a protobuf parser's) put in it.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

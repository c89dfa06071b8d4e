// Package cpu is the pure-Go backend: a kernel for every operator the
// runtime implements, and the device every binary has, including workers
// that Beam builds with CGO_ENABLED=0. The ONNX rules the kernels follow
// (attribute defaults per opset, axes, broadcasting, output shapes) are
// inference/internal/opsem's, which the GPU backend plans with too; the
// arithmetic here is the reference the GPU's results are held to.
//
// A pipeline author imports it only for its side effect, which registers
// the backend under inference.CPU (beam/runinference and inference/onnx
// already do):
//
//	import _ "github.com/beamml/beamml/inference/cpu"
//
// Everything then runs through inference.Acquire, or
// runinference.RunInference in a pipeline, when the Spec's device is
// inference.CPU, or inference.Auto and no GPU answers.
//
// A backend writer uses the rest to run on the host what the device cannot:
// Check tells whether the CPU runs a whole graph, RunNode runs one node with
// its reference kernel (constant folding, a node without a device kernel),
// IsControlFlow names the operators that are not single nodes, and NewModel
// runs a graph, or the host's part of one, as it is.
package cpu

import "github.com/beamml/beamml/inference"

// Backend runs models on the host's cores. The zero Backend is the one
// registered under inference.CPU.
type Backend struct {
	// Unoptimized compiles with constant folding only, without the
	// optimising graph passes (BatchNormalization folding, fusions, the
	// recognition of LayerNormalization, Gelu and Attention): the graph
	// runs node by node as the model wrote it. Tests compare the two.
	Unoptimized bool
}

// Device returns inference.CPU.
func (Backend) Device() inference.Device { return inference.CPU }

// Available always returns nil: the host is always there.
func (Backend) Available() error { return nil }

func init() { inference.RegisterBackend(Backend{}) }

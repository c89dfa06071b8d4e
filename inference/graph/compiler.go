package graph

import "github.com/beamml/beamml/inference"

// Compiler is a Backend that runs Graphs: the onnx loader hands it the
// decoded graph (the compile contract, stated at inference.Backend).
// Compile owns g: it runs the graph passes the backend relies on
// (passes.Optimize), and fails with an error wrapping
// inference.ErrUnsupportedOp (an *inference.UnsupportedOpError) for an
// operator the backend lacks, before anything runs.
type Compiler interface {
	inference.Backend
	Compile(g *Graph) (inference.Model, error)
}

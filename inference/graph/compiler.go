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

// Options are the settings of a compile that the model's Spec chooses.
type Options struct {
	// Precision is the arithmetic of float32 products (inference.FP32 when
	// empty).
	Precision inference.Precision
}

// OptionsCompiler is a Compiler that honours Options. The onnx loader
// compiles with CompileWith where the backend has it, and fails a spec
// that asks for other than the defaults of a backend that lacks it.
type OptionsCompiler interface {
	Compiler
	CompileWith(g *Graph, o Options) (inference.Model, error)
}

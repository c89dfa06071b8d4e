package onnx

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/beamml/beamml/inference"
	_ "github.com/beamml/beamml/inference/cpu" // ONNX models run on the CPU in every binary
	"github.com/beamml/beamml/inference/graph"
)

// Format is the format name of ONNX model files.
const Format = "onnx"

func init() { inference.RegisterLoader(Format, load) }

// Model returns the Spec of the ONNX model file at uri: a local path, a
// file:// URI, or any scheme with a registered opener (gs:// in a Beam
// pipeline). External data files are read only for local models, from the
// model's folder.
func Model(uri string) inference.Spec {
	return inference.Spec{URI: uri, Format: Format}
}

// Load reads, decodes and compiles the model of spec for backend: the
// Loader registered for Format.
func load(ctx context.Context, spec inference.Spec, backend inference.Backend) (inference.Model, error) {
	data, dir, err := read(ctx, spec.URI)
	if err != nil {
		return nil, err
	}
	g, err := Decode(data, dir)
	if err != nil {
		return nil, err
	}
	c, ok := backend.(graph.Compiler)
	if !ok {
		return nil, fmt.Errorf("onnx: backend %q does not run ONNX graphs: %w", backend.Device(), inference.ErrNoDevice)
	}
	precision, err := spec.Precision()
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if oc, ok := c.(graph.OptionsCompiler); ok {
		return oc.CompileWith(g, graph.Options{Precision: precision})
	}
	if precision != inference.FP32 {
		return nil, fmt.Errorf("onnx: backend %q has no precision %s: %w", backend.Device(), precision, inference.ErrUnsupportedOp)
	}
	return c.Compile(g)
}

// read reads the model file at uri and returns it with the folder its
// external data is read from: the model's own for a local file, none ("")
// for a remote one.
func read(ctx context.Context, uri string) (data []byte, dir string, err error) {
	data, err = inference.ReadURI(ctx, uri)
	if err != nil {
		return nil, "", fmt.Errorf("onnx: read %s: %v: %w", uri, err, inference.ErrBadModel)
	}
	if path, local := inference.LocalPath(uri); local {
		dir = filepath.Dir(path)
	}
	return data, dir, nil
}

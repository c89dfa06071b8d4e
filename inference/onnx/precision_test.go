package onnx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
)

// recorder is a backend that compiles with the CPU's and records the
// options the loader gave it; plain hides CompileWith.
type recorder struct {
	cpu.Backend
	got *graph.Options
}

func (r recorder) Device() inference.Device { return "precision-recorder" }

func (r recorder) CompileWith(g *graph.Graph, o graph.Options) (inference.Model, error) {
	*r.got = o
	return r.Backend.Compile(g)
}

type plain struct{ c cpu.Backend }

func (plain) Device() inference.Device                          { return "precision-plain" }
func (p plain) Available() error                                { return p.c.Available() }
func (p plain) Compile(g *graph.Graph) (inference.Model, error) { return p.c.Compile(g) }

var recorded graph.Options

func init() {
	inference.RegisterBackend(recorder{got: &recorded})
	inference.RegisterBackend(plain{})
}

// The spec's precision option reaches the backend's CompileWith; a backend
// without CompileWith loads only FP32; an option that names no precision
// fails the load with ErrBadModel.
func TestLoadPassesPrecision(t *testing.T) {
	ctx := context.Background()
	spec := onnx.Model("../../examples/classify/digits.onnx")
	h, err := inference.Acquire(ctx, spec.WithDevice("precision-recorder").WithPrecision(inference.TF32))
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	if recorded.Precision != inference.TF32 {
		t.Errorf("the backend compiled in %q, want tf32", recorded.Precision)
	}
	if _, err := inference.Acquire(ctx, spec.WithDevice("precision-plain").WithPrecision(inference.TF32)); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("tf32 on a backend without CompileWith: %v, want ErrUnsupportedOp", err)
	}
	h, err = inference.Acquire(ctx, spec.WithDevice("precision-plain").WithPrecision(inference.FP32))
	if err != nil {
		t.Fatalf("fp32 on a backend without CompileWith: %v", err)
	}
	h.Release()
	if _, err := inference.Acquire(ctx, spec.WithDevice("precision-recorder").WithPrecision("int8")); !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("precision int8: %v, want ErrBadModel", err)
	}
}

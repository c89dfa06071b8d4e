package runinference

import (
	"testing"

	"github.com/beamml/beamml/inference"
)

// Precision sets the spec's precision option, over the spec's own; without
// it the spec keeps its own.
func TestPrecisionOptionSetsSpec(t *testing.T) {
	spec := inference.Spec{URI: "m.onnx", Format: "onnx"}
	got, _ := newConfig(spec.WithPrecision(inference.FP32), []Option{Precision(inference.TF32)})
	if p, err := got.Precision(); p != inference.TF32 || err != nil {
		t.Errorf("Precision(tf32) over a spec in fp32: %q, %v", p, err)
	}
	got, _ = newConfig(spec.WithPrecision(inference.TF32), nil)
	if p, _ := got.Precision(); p != inference.TF32 {
		t.Errorf("the spec's own tf32 became %q", p)
	}
	got, _ = newConfig(spec, nil)
	if _, set := got.Options[inference.PrecisionOption]; set {
		t.Errorf("a spec without a precision got one: %v", got.Options)
	}
}

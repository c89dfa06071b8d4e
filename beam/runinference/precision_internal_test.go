package runinference

import (
	"testing"

	"github.com/beamml/beamml/inference"
)

// Precision sets the spec's precision option, over the spec's own; without
// it the spec keeps its own.
func TestPrecisionOptionSetsSpec(t *testing.T) {
	spec := inference.Spec{URI: "m.onnx", Format: "onnx"}
	for _, want := range []inference.Precision{inference.TF32, inference.FP16} {
		got, _ := newConfig(spec.WithPrecision(inference.FP32), []Option{Precision(want)})
		if p, err := got.Precision(); p != want || err != nil {
			t.Errorf("Precision(%s) over a spec in fp32: %q, %v", want, p, err)
		}
	}
	got, _ := newConfig(spec.WithPrecision(inference.TF32), nil)
	if p, _ := got.Precision(); p != inference.TF32 {
		t.Errorf("the spec's own tf32 became %q", p)
	}
	got, _ = newConfig(spec, nil)
	if _, set := got.Options[inference.PrecisionOption]; set {
		t.Errorf("a spec without a precision got one: %v", got.Options)
	}
}

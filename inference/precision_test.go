package inference_test

import (
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
)

// A spec's precision option: empty is FP32, the three names parse, any
// other fails naming the option and wrapping ErrBadModel; WithPrecision
// sets it without touching the spec it copies.
func TestSpecPrecision(t *testing.T) {
	s := inference.Spec{URI: "m.onnx", Format: "onnx", Options: map[string]string{"memory_budget": "1GiB"}}
	if p, err := s.Precision(); p != inference.FP32 || err != nil {
		t.Errorf("no option: %q, %v; want fp32", p, err)
	}
	for _, p := range []inference.Precision{inference.FP32, inference.TF32, inference.FP16} {
		got, err := s.WithPrecision(p).Precision()
		if got != p || err != nil {
			t.Errorf("WithPrecision(%q).Precision() = %q, %v", p, got, err)
		}
	}
	if _, ok := s.Options[inference.PrecisionOption]; ok {
		t.Error("WithPrecision changed the spec it copied")
	}
	if s.WithPrecision(inference.TF32).Key() == s.Key() {
		t.Error("a spec in TF32 shares the cache key of the FP32 one")
	}
	bad := s.WithPrecision("int8")
	if _, err := bad.Precision(); !errors.Is(err, inference.ErrBadModel) {
		t.Errorf("precision int8: %v, want ErrBadModel", err)
	}
}

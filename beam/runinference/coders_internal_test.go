package runinference

import (
	"testing"

	"github.com/beamml/beamml/inference"
)

// BenchmarkCoders encodes and decodes, as a runner does between stages, an
// Example of two floats and the PredictionResult an echo model makes of
// it.
func BenchmarkCoders(b *testing.B) {
	ex := example(1, 2)
	r := PredictionResult{Example: ex, Outputs: inference.OutputsOf(map[string]inference.Tensor{"y": ex["x"]}),
		ModelID: inference.ModelID{URI: "stub://echo/2", Instance: "0f8fad5b-d9cb-469f-a165-70867728950e"}}
	b.Run("example", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, _ := encodeExample(ex)
			if _, err := decodeExample(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prediction", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, _ := encodePrediction(r)
			if _, err := decodePrediction(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodePrediction(b *testing.B) {
	ex := example(1, 2)
	r := PredictionResult{Example: ex, Outputs: inference.OutputsOf(map[string]inference.Tensor{"y": ex["x"]}),
		ModelID: inference.ModelID{URI: "stub://echo/2", Instance: "0f8fad5b-d9cb-469f-a165-70867728950e"}}
	b.ReportAllocs()
	for b.Loop() {
		encodePrediction(r)
	}
}

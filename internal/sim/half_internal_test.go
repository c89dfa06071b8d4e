package sim

import (
	"math"
	"testing"
)

// The FP16 GEMM's rounding at its edges: overflow, underflow (float32
// subnormals included), signed zeros, the infinities and NaN. Every bit
// pattern and every tie are inference's tests (half_test.go).
func TestRoundToHalfEdges(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct{ f, want float32 }{
		{65504, 65504},
		{65519.996, 65504},
		{65520, inf},
		{1e10, inf},
		{-1e10, -inf},
		{math.MaxFloat32, inf},
		{inf, inf},
		{-inf, -inf},
		{1 + 1.0/2048, 1},            // a tie below: the even half is 1
		{1 + 3.0/2048, 1 + 2.0/1024}, // a tie above: the even half is 1 + 2^-9
		{0x1p-25, 0},                 // the tie between 0 and 2^-24
		{0x1.000002p-25, 0x1p-24},
		{0x1.8p-24, 0x1p-23}, // a tie between subnormals 1 and 2 (·2^-24): 2
		{0x1p-30, 0},
		{math.SmallestNonzeroFloat32, 0},
		{-math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))},
		{float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))},
	} {
		if got := roundToHalf(c.f); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("roundToHalf(%g) = %g, want %g", c.f, got, c.want)
		}
	}
	nan := math.Float32frombits(0x7fc00001)
	if got := roundToHalf(nan); !math.IsNaN(float64(got)) {
		t.Errorf("roundToHalf(NaN) = %g", got)
	}
	if got := roundToHalf(math.Float32frombits(0x7f800001)); !math.IsNaN(float64(got)) { // payload below half's
		t.Errorf("roundToHalf of a NaN with only low payload bits = %g", got)
	}
}

package sim

import (
	"math"
	"testing"
)

// Every one of the 65536 halves survives the trip through float32: the
// finite ones and the infinities bit for bit, the NaNs as NaNs of the same
// sign and payload (quieted: cvt.rn.f16.f32 returns a quiet NaN).
func TestHalfRoundTrip(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := halfToFloat32(h)
		back := float32ToHalf(f)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 { // NaN
			if !math.IsNaN(float64(f)) || back != h|0x200 {
				t.Errorf("NaN %#04x: float32 %#08x, back %#04x, want %#04x", h, math.Float32bits(f), back, h|0x200)
			}
			continue
		}
		if back != h {
			t.Errorf("%#04x (%g): back %#04x", h, f, back)
		}
		if r := roundToHalf(f); math.Float32bits(r) != math.Float32bits(f) {
			t.Errorf("roundToHalf(%g) = %g, want it unchanged", f, r)
		}
	}
}

// Between two adjacent positive halves, float32s round to the nearer, and
// the midpoint to the one with the even last bit: across every binade,
// the subnormals, the step from the largest subnormal to the smallest
// normal, from 0 to 2^-24, and from 65504 to Inf (the next half up would
// be 65536, so 65520 is the midpoint and rounds to Inf).
func TestHalfRoundsToNearestEven(t *testing.T) {
	for h := uint16(0); h < 0x7c00; h++ {
		lo, hi := halfToFloat32(h), halfToFloat32(h+1)
		if h+1 == 0x7c00 {
			hi = 65536 // where the next binade would start
		}
		mid := float32((float64(lo) + float64(hi)) / 2) // exact: 24 bits hold it
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		for _, c := range []struct {
			f    float32
			want uint16
		}{
			{mid, even},
			{math.Nextafter32(mid, 0), h},
			{math.Nextafter32(mid, float32(math.Inf(1))), h + 1},
		} {
			if got := float32ToHalf(c.f); got != c.want {
				t.Errorf("between %#04x and %#04x: %.10g → %#04x, want %#04x", h, h+1, c.f, got, c.want)
			}
			if got := float32ToHalf(-c.f); got != c.want|0x8000 {
				t.Errorf("between -%#04x and -%#04x: %.10g → %#04x, want %#04x", h, h+1, -c.f, got, c.want|0x8000)
			}
		}
	}
}

// The values the tests above do not reach: overflow, underflow (float32
// subnormals included), signed zeros, the infinities and NaN.
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

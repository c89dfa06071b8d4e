package inference_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

// halfValue is the value of the half-precision bits h, worked out from
// the IEEE 754 binary16 layout with math.Ldexp in float64: the reference
// Float32 is checked against. NaNs give NaN.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(frac, -24)
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// Float32 is exact for all 65536 bit patterns, and HalfFromFloat32 takes
// each result back to the bits it came from, NaNs (signalling ones among
// them) included.
func TestHalfRoundTripsEveryBitPattern(t *testing.T) {
	for b := range 1 << 16 {
		h := inference.Half(b)
		f := h.Float32()
		want := halfValue(uint16(b))
		switch {
		case math.IsNaN(want):
			bits := math.Float32bits(f)
			if !math.IsNaN(float64(f)) || bits>>31 != uint32(b>>15) || bits&0x7fffff != uint32(b&0x3ff)<<13 {
				t.Errorf("Half(%#04x).Float32() = %#08x, want the NaN of its sign and payload", b, bits)
			}
		case float64(f) != want || math.Signbit(float64(f)) != (b&0x8000 != 0):
			t.Errorf("Half(%#04x).Float32() = %g, want %g", b, f, want)
		}
		if back := inference.HalfFromFloat32(f); back != h {
			t.Errorf("HalfFromFloat32(Half(%#04x).Float32() = %g) = %#04x", b, f, uint16(back))
		}
	}
}

// nearestHalf is the reference rounding: the finite Half nearest to f by
// a binary search of all of them in float64, ties to the even bit
// pattern, and ±Inf from 65520 (the midpoint between 65504 and 2¹⁶) on.
func nearestHalf(positive []float64, f float32) uint16 {
	v := float64(f)
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	if v >= 65520 {
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(positive, v) // positive[i-1] < v <= positive[i]
	if i == len(positive) {
		return sign | uint16(i-1)
	}
	if positive[i] == v || i == 0 {
		return sign | uint16(i)
	}
	below, above := v-positive[i-1], positive[i]-v
	switch {
	case below < above:
		return sign | uint16(i-1)
	case above < below:
		return sign | uint16(i)
	case i%2 == 0:
		return sign | uint16(i)
	}
	return sign | uint16(i-1)
}

// HalfFromFloat32 rounds to nearest, ties to even, over the whole range:
// every midpoint between two adjacent Halves and the float32s either side
// of it, a sweep of float32s from below the least subnormal to beyond the
// largest Half, and random bit patterns, against nearestHalf.
func TestHalfFromFloat32RoundsToNearestEven(t *testing.T) {
	positive := make([]float64, 0x7c00)
	for b := range positive {
		positive[b] = halfValue(uint16(b))
	}
	check := func(f float32) {
		t.Helper()
		if math.IsNaN(float64(f)) {
			return
		}
		if got, want := inference.HalfFromFloat32(f), nearestHalf(positive, f); uint16(got) != want {
			t.Fatalf("HalfFromFloat32(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), uint16(got), want)
		}
	}
	for b := 1; b < len(positive); b++ {
		mid := float32((positive[b-1] + positive[b]) / 2) // exact: float32 has 13 more fraction bits
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(f)
			check(-f)
		}
	}
	for _, f := range []float32{0, 65504, 65519.996, 65520, 65536, 1e30, float32(math.Inf(1)), math.SmallestNonzeroFloat32, 0x1p-25, 0x1p-26} {
		check(f)
		check(-f)
	}
	for b := math.Float32bits(0x1p-27); b <= math.Float32bits(70000); b += 97 {
		check(math.Float32frombits(b))
		check(-math.Float32frombits(b))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(math.Float32frombits(r.Uint32()))
	}
}

// Ties go to the even neighbour at the edges of each range: among the
// normals, at the largest Half (where the even neighbour is Inf), between
// zero and the least subnormal, and between the subnormals and the normals.
func TestHalfFromFloat32Ties(t *testing.T) {
	for _, tt := range []struct {
		f    float32
		want uint16
	}{
		{1 + 0x1p-11, 0x3c00},                      // between 1 (0x3c00) and 1+2⁻¹⁰ (0x3c01)
		{1 + 3*0x1p-11, 0x3c02},                    // between 0x3c01 and 0x3c02
		{math.Nextafter32(1+0x1p-11, 2), 0x3c01},   // above the tie
		{2049, 0x6800},                             // between 2048 and 2050
		{2051, 0x6802},                             // between 2050 and 2052
		{65520, 0x7c00},                            // between 65504 (0x7bff) and 2¹⁶, Inf's bits
		{math.Nextafter32(65520, 0), 0x7bff},       // just below: 65504
		{0x1p-25, 0x0000},                          // between 0 and 2⁻²⁴ (0x0001)
		{math.Nextafter32(0x1p-25, 1), 0x0001},     // just above
		{3 * 0x1p-25, 0x0002},                      // between 0x0001 and 0x0002
		{0x1p-14 - 0x1p-25, 0x0400},                // between the largest subnormal and the least normal
		{-(1 + 0x1p-11), 0xbc00},                   // the sign does not change the rounding
		{-65520, 0xfc00},                           // -Inf
		{float32(math.Copysign(0, -1)), 0x8000},    // -0
		{math.Float32frombits(0x7fc00000), 0x7e00}, // the quiet NaN
		{math.Float32frombits(0xffc00000), 0xfe00}, // with its sign
		{math.Float32frombits(0x7f800001), 0x7e00}, // a payload below Half's: a quiet NaN
		{math.Float32frombits(0x7f802000), 0x7c01}, // a signalling NaN whose payload Half holds
		{math.Float32frombits(0x7fffe000), 0x7fff}, // every payload bit
		{float32(math.Inf(-1)), 0xfc00},            // -Inf
		{1e-10, 0x0000},                            // far below the least subnormal
		{math.Float32frombits(0x00000001), 0x0000}, // a float32 subnormal
		{0.1, 0x2e66},                              // 0.0999755859375
		{0.333333343, 0x3555},                      // 0.333251953125
		{65504, 0x7bff},                            // the largest Half
		{-0x1p-24, 0x8001},                         // the least subnormal, negative
		{math.Float32frombits(0x387fc000), 0x03ff}, // the largest subnormal
		{math.Float32frombits(0x387fe000), 0x0400}, // the tie above it
		{math.Float32frombits(0x477ff000), 0x7c00}, // 65520 written as bits
		{math.Float32frombits(0x477fefff), 0x7bff}, // below it
		{math.Float32frombits(0x33000001), 0x0001}, // 2⁻²⁵ and a bit
		{math.Float32frombits(0x33000000), 0x0000}, // 2⁻²⁵
		{math.Float32frombits(0x3f801000), 0x3c00}, // 1 + 2⁻¹¹, as bits
		{math.Float32frombits(0x3f803000), 0x3c02}, // 1 + 3·2⁻¹¹, as bits
		{math.Float32frombits(0x3f802fff), 0x3c01}, // below that tie
		{math.Float32frombits(0x3f800fff), 0x3c00}, // below the first
		{math.Float32frombits(0x3f801001), 0x3c01}, // above the first
		{math.Float32frombits(0x3f7ff000), 0x3c00}, // between 1-2⁻¹¹ (0x3bff) and 1: to 1, even
		{math.Float32frombits(0x3f7fefff), 0x3bff}, // below
		{math.Float32frombits(0x3f7fe000), 0x3bff}, // 1-2⁻¹¹ exactly
		{math.Float32frombits(0xc77ff000), 0xfc00}, // -65520
		{math.Float32frombits(0x7f7fffff), 0x7c00}, // the largest float32
		{math.Float32frombits(0x00800000), 0x0000}, // the least normal float32
		{math.Float32frombits(0x38800000), 0x0400}, // 2⁻¹⁴
		{math.Float32frombits(0x38000000), 0x0200}, // 2⁻¹⁵, a subnormal Half
		{math.Float32frombits(0x37800000), 0x0100}, // 2⁻¹⁶
		{math.Float32frombits(0x33800000), 0x0001}, // 2⁻²⁴
		{math.Float32frombits(0x33c00000), 0x0002}, // 1.5·2⁻²⁴: between 1 and 2, to 2
		{math.Float32frombits(0x34200000), 0x0002}, // 2.5·2⁻²⁴: between 2 and 3, to 2
		{math.Float32frombits(0x34600000), 0x0004}, // 3.5·2⁻²⁴: between 3 and 4, to 4
		{math.Float32frombits(0x34600001), 0x0004}, // above
		{math.Float32frombits(0x345fffff), 0x0003}, // below
		{math.Float32frombits(0x3a7fe000), 0x13ff}, // 2⁻¹¹·(1+1023/1024) exactly
		{math.Float32frombits(0x3a7ff000), 0x1400}, // the tie above it carries into the exponent
		{math.Float32frombits(0x477fe000), 0x7bff}, // 65504 as bits
		{math.Float32frombits(0x477fe001), 0x7bff}, // above 65504
		{math.Float32frombits(0x47800000), 0x7c00}, // 2¹⁶
	} {
		if got := inference.HalfFromFloat32(tt.f); uint16(got) != tt.want {
			t.Errorf("HalfFromFloat32(%g = %#08x) = %#04x, want %#04x", tt.f, math.Float32bits(tt.f), uint16(got), tt.want)
		}
	}
}

func TestHalfString(t *testing.T) {
	for _, tt := range []struct {
		h    inference.Half
		want string
	}{
		{0x3c00, "1"}, {0xbc00, "-1"}, {0x2e66, "0.1"}, {0x7bff, "65500"}, {0x0001, "6e-08"},
		{0x7c00, "+Inf"}, {0xfc00, "-Inf"}, {0x7e00, "NaN"}, {0x8000, "-0"}, {0x3555, "0.3333"},
	} {
		if got := tt.h.String(); got != tt.want {
			t.Errorf("Half(%#04x).String() = %q, want %q", uint16(tt.h), got, tt.want)
		}
	}
}

// A float16 model's inputs are made with HalfFromFloat32, and its outputs
// read with Float32.
func ExampleHalf() {
	x, _ := inference.New([]int{3}, []inference.Half{
		inference.HalfFromFloat32(0.1), inference.HalfFromFloat32(2049), inference.HalfFromFloat32(1e5),
	})
	h, _ := inference.Data[inference.Half](x)
	fmt.Println(x, h)
	fmt.Println(h[0].Float32(), uint16(h[0]))
	// Output:
	// float16[3] [0.1 2048 +Inf]
	// 0.099975586 11878
}

package inference

import (
	"math"
	"strconv"
)

// Half is an IEEE 754 binary16 ("half precision") number, held as its 16
// bits: 1 sign bit, 5 exponent bits (bias 15) and 10 fraction bits. It is
// the element type of a Float16 tensor, the type of ONNX's FLOAT16.
//
// A Half is not a Go number: convert with Float32, which is exact, and
// HalfFromFloat32, which rounds. Half(0x3c00) is 1, Half(0x7c00) is +Inf.
type Half uint16

// HalfFromFloat32 returns the Half nearest to f, ties to the one whose last
// fraction bit is 0 (round to nearest even, IEEE 754's default), as
// hardware conversions (x86's VCVTPS2PH, CUDA's __float2half_rn) do:
//   - |f| ≥ 65520 (the midpoint between the largest Half, 65504, and
//     2¹⁶) and ±Inf give ±Inf;
//   - values below the smallest normal Half (2⁻¹⁴) round to the
//     subnormals, multiples of 2⁻²⁴; |f| ≤ 2⁻²⁵ gives a zero of f's sign;
//   - a NaN stays a NaN with f's sign and the top 10 bits of its
//     payload, the quiet bit among them; one whose top 10 bits are all 0
//     becomes a quiet NaN (0x7e00 with the sign). So every Half h has
//     HalfFromFloat32(h.Float32()) == h, NaNs included.
func HalfFromFloat32(f float32) Half {
	b := math.Float32bits(f)
	sign := uint32(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff {
		if frac == 0 {
			return Half(sign | 0x7c00)
		}
		payload := frac >> 13
		if payload == 0 {
			payload = 0x200
		}
		return Half(sign | 0x7c00 | payload)
	}
	// e is the Half's biased exponent; the float32's significand, with its
	// implicit bit, is m·2^(exp-150).
	e := exp - 127 + 15
	if e >= 0x1f {
		return Half(sign | 0x7c00)
	}
	m := frac
	if exp != 0 {
		m |= 0x800000
	}
	// A normal Half keeps the top 11 of the 24 bits; a subnormal one
	// (e ≤ 0) 1-e bits fewer. Past 24 bits the value is below 2⁻²⁵, which
	// rounds to zero.
	shift := 13
	if e <= 0 {
		shift = 14 - e
		if shift > 24 {
			return Half(sign)
		}
	}
	q := m >> shift
	rest, half := m&(1<<shift-1), uint32(1)<<(shift-1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	if e <= 0 {
		// q ≤ 0x400: a subnormal, or the least normal when rounding
		// carried into the exponent.
		return Half(sign | q)
	}
	// q is the significand with its implicit bit (0x400 ≤ q ≤ 0x800), which
	// adds one to the exponent field: a carry out of the fraction on
	// rounding up makes the next exponent, and past the largest exponent
	// the bits of +Inf.
	bits := uint32(e-1)<<10 + q
	if bits >= 0x7c00 {
		return Half(sign | 0x7c00)
	}
	return Half(sign | bits)
}

// Float32 returns h's value as a float32, exactly: every Half is a
// float32. A NaN keeps its sign and payload (shifted to the top of
// float32's).
func (h Half) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case 0:
		// Zero, or a subnormal: frac·2⁻²⁴, a normal float32.
		return math.Float32frombits(sign | math.Float32bits(float32(frac)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// String formats h's value as the shortest decimal (at most 5 significant
// digits) that HalfFromFloat32 takes back to h, as numpy prints a float16
// and strconv.FormatFloat(v, 'g', -1, 64) writes it: "0.1" for the Half
// nearest 0.1 (0.0999755859375), "65500" for the largest (65504), "+Inf",
// "NaN".
func (h Half) String() string {
	v := float64(h.Float32())
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for digits := 1; ; digits++ {
		back, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', digits-1, 64), 64)
		if HalfFromFloat32(float32(back)) == h || digits >= 5 {
			return strconv.FormatFloat(back, 'g', -1, 64)
		}
	}
}

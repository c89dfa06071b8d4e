package inference

import (
	"math"
	"strconv"
)

// BF16 is a bfloat16 ("brain floating point") number, held as its 16
// bits: the top half of a float32, with its sign, its 8 exponent bits and
// the top 7 of its fraction bits. It is the element type of a BFloat16
// tensor, the type of ONNX's BFLOAT16.
//
// A BF16 is not a Go number: convert with Float32, which is exact, and
// BF16FromFloat32, which rounds. BF16(0x3f80) is 1, BF16(0x7f80) is +Inf.
type BF16 uint16

// BF16FromFloat32 returns the BF16 nearest to f, ties to the one whose
// last fraction bit is 0 (round to nearest even), as ONNX's Cast with
// saturate and torch's conversion do. A NaN stays a NaN with f's sign and
// the top 7 bits of its payload, made quiet.
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if f != f {
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 returns h as a float32, exactly.
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// String formats h as the shortest decimal that reads back as the same
// float32.
func (h BF16) String() string {
	return strconv.FormatFloat(float64(h.Float32()), 'g', -1, 32)
}

package opsem

import "math"

// The rules compute sizes, counts and offsets from operand and attribute
// values, which a model may set to anything an int64 or a float holds. The
// arithmetic here is exact or fails: an overflow is an error of the rule
// that met it, never a wrapped result.

// maxDim is the largest dimension a rule makes from operand or attribute
// values (Range's count, Pad's and Tile's sizes, Resize's output, OneHot's
// depth, the dimensions of a shape operand): 2³¹−1, the bound the model
// decoder puts on declared dimensions.
const maxDim = math.MaxInt32

// checked computes with int64s and notes an overflow: once an operation's
// exact result lies outside int64 (or, for toInt, outside int), overflow is
// set and the results from then on mean nothing.
type checked struct{ overflow bool }

func (c *checked) add(a, b int64) int64 {
	s := a + b
	if (s < a) != (b < 0) {
		c.overflow = true
	}
	return s
}

func (c *checked) sub(a, b int64) int64 {
	d := a - b
	if (d > a) != (b < 0) {
		c.overflow = true
	}
	return d
}

func (c *checked) mul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64 {
		c.overflow = true
	}
	return p
}

// toInt converts v to an int, which on a 32-bit platform holds less.
func (c *checked) toInt(v int64) int {
	if int64(int(v)) != v {
		c.overflow = true
	}
	return int(v)
}

// truncInt64 is f truncated toward zero, as Go's int64(f), when that lies
// in int64's range; ok is false for NaN, ±Inf and values outside it, whose
// conversion Go leaves to the platform.
func truncInt64(f float64) (v int64, ok bool) {
	if !(f >= -0x1p63 && f < 0x1p63) {
		return 0, false
	}
	return int64(f), true
}

// magnitude is |v| as a uint64, which holds it for every int64, −2⁶³
// included.
func magnitude(v int64) uint64 {
	if v < 0 {
		return -uint64(v)
	}
	return uint64(v)
}

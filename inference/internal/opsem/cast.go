package opsem

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/beamml/beamml/inference"
)

// Cast's conversions between strings and numbers, as the ONNX spec gives
// them: a string reads as a number in plain or scientific notation
// ("3.14", "1e-5", "1E8"), "INF", "+INF", "-INF" and "NaN" in any case
// are the special values, and one with a fraction ("100.5") cast to an
// integer type is truncated (100), as the spec's example does; any other
// string is an error naming it (the spec leaves it undefined). A number
// becomes its plain decimal: integers in full, floats as the shortest
// decimal that reads back as the same value of their width ("0.1" for a
// float32 0.1; in exponent form from 1e21 up and below 1e-4, "1e-05"),
// and the special values as "INF", "-INF" and "NaN"; a bool is "1" or
// "0".

// ParseFloat returns the number s spells, for a cast from strings to a
// floating-point type.
func ParseFloat(s string) (float64, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "INF", "+INF":
		return math.Inf(1), nil
	case "-INF":
		return math.Inf(-1), nil
	case "NAN":
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil && !isRange(err) {
		return 0, fmt.Errorf("string %q is not a number: %w", s, inference.ErrType)
	}
	return v, nil // out of range: ±Inf or 0, as ParseFloat rounds
}

// ParseInt returns the integer s spells, for a cast from strings to an
// integer type: a fraction is truncated toward zero.
func ParseInt(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, nil
	}
	if v, err := strconv.ParseUint(t, 10, 64); err == nil {
		return int64(v), nil // above MaxInt64: the uint64's bits
	}
	f, err := ParseFloat(s)
	if err != nil {
		return 0, err
	}
	if f != f || math.IsInf(f, 0) {
		return 0, fmt.Errorf("string %q is not an integer: %w", s, inference.ErrType)
	}
	return int64(f), nil
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// FormatFloat returns v, a float of bits 32 or 64, as a cast to strings
// writes it.
func FormatFloat(v float64, bits int) string {
	switch {
	case v != v:
		return "NaN"
	case math.IsInf(v, 1):
		return "INF"
	case math.IsInf(v, -1):
		return "-INF"
	}
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e21) {
		return strconv.FormatFloat(v, 'e', -1, bits)
	}
	return strconv.FormatFloat(v, 'f', -1, bits)
}

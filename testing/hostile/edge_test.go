package hostile_test

import (
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
)

// TestEdgeOperands: Range and Pad operands at the edges of their types
// fail the node with an error. A float Range with an Inf or NaN operand,
// or a zero step, has no element count: inference.ErrShape. Range over
// the whole of int64 and pads of ±2⁶³ have counts int64 cannot hold
// (where wrapping arithmetic gives 0, or a negative size, that is the
// bug): ErrShape or ErrResourceExhausted, and never an empty tensor.
func TestEdgeOperands(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	floatRange := single(op("range", "Range", names("start", "limit", "delta")), f32,
		vals(info("start", f32), info("limit", f32), info("delta", f32)))
	for _, c := range []struct {
		name                string
		start, limit, delta float32
	}{
		{"Range_limit_Inf", 0, inf, 1},
		{"Range_start_-Inf", -inf, 0, 1},
		{"Range_start_NaN", nan, 10, 1},
		{"Range_limit_NaN", 0, nan, 1},
		{"Range_delta_NaN", 0, 10, nan},
		{"Range_delta_0", 0, 10, 0},
	} {
		isolate(t, c.name, func(t *testing.T) {
			out, err := run(t, std, floatRange, feeds{"start": scalar(c.start), "limit": scalar(c.limit), "delta": scalar(c.delta)})
			wantFailed(t, out, err)
			wantShapeError(t, err, "range")
		})
	}

	intRange := single(op("range", "Range", names("start", "limit", "delta")), i64,
		vals(info("start", i64), info("limit", i64), info("delta", i64)))
	isolate(t, "Range_int64_delta_0", func(t *testing.T) {
		out, err := run(t, std, intRange, feeds{"start": scalar[int64](0), "limit": scalar[int64](10), "delta": scalar[int64](0)})
		wantFailed(t, out, err)
		wantShapeError(t, err, "range")
	})
	// 2⁶⁴ − 1 elements; limit − start wraps to −1.
	isolate(t, "Range_int64_MinInt64_MaxInt64", func(t *testing.T) {
		out, err := run(t, std, intRange, feeds{"start": scalar[int64](math.MinInt64), "limit": scalar[int64](math.MaxInt64), "delta": scalar[int64](1)})
		wantFailed(t, out, err)
		wantRefused(t, err, std, "range")
	})

	pad := single(op("pad", "Pad", names("x", "pads")), f32, vals(info("x", f32, -1, -1), info("pads", i64, 4)))
	for _, c := range []struct {
		name string
		pads inference.Tensor
	}{
		// −MinInt64 is MinInt64 again: a crop of 2⁶³ that wrapping turns into none.
		{"Pad_MinInt64", vec(math.MinInt64, 0, 0, 0)},
		{"Pad_MinInt64_both_ends", vec(0, math.MinInt64, 0, math.MinInt64)},
		// 2 + (2⁶³ − 1) wraps negative.
		{"Pad_MaxInt64", vec(0, math.MaxInt64, 0, 0)},
	} {
		isolate(t, c.name, func(t *testing.T) {
			out, err := run(t, std, pad, feeds{"x": ones(2, 2), "pads": c.pads})
			wantFailed(t, out, err)
			wantRefused(t, err, std, "pad")
		})
	}
}

// wantShapeError fails t unless err wraps inference.ErrShape (and is no
// recovered panic) and names the node.
func wantShapeError(t *testing.T, err error, node string) {
	t.Helper()
	if !errors.Is(err, inference.ErrShape) || errors.Is(err, inference.ErrPanic) {
		t.Fatalf("error %v, want one wrapping inference.ErrShape", err)
	}
	wantNamed(t, err, node)
}

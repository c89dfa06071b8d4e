package hostile_test

import (
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// TestMemoryBombs: a request for about 10¹² elements fails the node with
// an *inference.ResourceError over the run's 64 MiB budget, before
// anything is allocated; a request whose size overflows int64 fails so
// too, or with inference.ErrShape. Neither panics (makeslice: len out of
// range) nor allocates.
func TestMemoryBombs(t *testing.T) {
	shape := info("n", i64, 2) // a shape operand
	count := info("n", i64)    // a scalar operand
	const max32 = math.MaxInt32
	// Each model's node "bomb" sizes its output by the int64 input n: huge
	// asks for about 10¹² elements, overflow for more than int64 counts
	// (bytes or elements).
	bombs := []struct {
		op             string
		model          *onnxpb.ModelProto
		huge, overflow inference.Tensor
	}{
		{"Expand", single(op("bomb", "Expand", names("data", "n")), f32, vals(shape), floatInit("data", dims(1), 1)),
			vec(1e6, 1e6), vec(max32, max32)},
		{"ConstantOfShape", single(op("bomb", "ConstantOfShape", names("n"), tensorAttr("value", floatInit("", dims(1), 1))), f32, vals(shape)),
			vec(1e6, 1e6), vec(max32, max32)},
		{"Tile", single(op("bomb", "Tile", names("x", "n")), f32, vals(shape), floatInit("x", dims(1, 1), 1)),
			vec(1e6, 1e6), vec(max32, max32)},
		{"Resize", single(op("bomb", "Resize", names("x", "", "", "n")), f32, vals(shape), floatInit("x", dims(1, 1), 1)),
			vec(1e6, 1e6), vec(max32, max32)},
		// 1,000 indices of depth 10⁹: no operand is large, the output is.
		{"OneHot", single(op("bomb", "OneHot", names("indices", "n", "values")), f32, vals(count),
			iota64("indices", 1000), floatInit("values", dims(2), 0, 1)),
			scalar[int64](1e9), scalar[int64](math.MaxInt64)},
		{"Range", single(op("bomb", "Range", names("start", "n", "delta")), i64, vals(count),
			int64Init("start", nil, 0), int64Init("delta", nil, 1)),
			scalar[int64](math.MaxInt32), scalar[int64](math.MaxInt64)}, // counts above 2³¹−1 are ErrShape
	}
	for _, b := range bombs {
		isolate(t, b.op+"_1e12", func(t *testing.T) {
			out, err := run(t, std, b.model, feeds{"n": b.huge})
			wantFailed(t, out, err)
			wantExhausted(t, err, std, "bomb")
		})
		isolate(t, b.op+"_overflow", func(t *testing.T) {
			out, err := run(t, std, b.model, feeds{"n": b.overflow})
			wantFailed(t, out, err)
			wantRefused(t, err, std, "bomb")
		})
	}

	// The output is legal but needs 40 GB: a[N,1]·b[1,N], N = 100,000.
	isolate(t, "MatMul_outer_product", func(t *testing.T) {
		const n = 100_000
		m := single(op("bomb", "MatMul", names("a", "b")), f32, vals(info("a", f32, -1, -1), info("b", f32, -1, -1)))
		out, err := run(t, std, m, feeds{"a": ones(n, 1), "b": ones(1, n)})
		wantFailed(t, out, err)
		wantExhausted(t, err, std, "bomb")
	})
}

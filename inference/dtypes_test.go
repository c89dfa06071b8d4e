package inference_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

// Every DType maps to its ONNX TensorProto.DataType number and back.
func TestDTypeONNXNumbers(t *testing.T) {
	want := map[inference.DType]int64{inference.Float32: 1, inference.Uint8: 2, inference.Int8: 3, inference.Uint16: 4,
		inference.Int16: 5, inference.Int32: 6, inference.Int64: 7, inference.String: 8, inference.Bool: 9, inference.Float16: 10,
		inference.Float64: 11, inference.Uint32: 12, inference.Uint64: 13, inference.BFloat16: 16}
	if len(want) != len(allDTypes) {
		t.Fatalf("the test names %d types, there are %d", len(want), len(allDTypes))
	}
	for d, code := range want {
		if got := inference.DTypeToONNX(d); got != code {
			t.Errorf("DTypeToONNX(%v) = %d, want %d", d, got, code)
		}
		if got, ok := inference.DTypeFromONNX(code); !ok || got != d {
			t.Errorf("DTypeFromONNX(%d) = %v, %v, want %v", code, got, ok, d)
		}
	}
	for _, code := range []int64{0, 14, 15, 17, 21, 22, 99} {
		if d, ok := inference.DTypeFromONNX(code); ok {
			t.Errorf("DTypeFromONNX(%d) = %v, want none", code, d)
		}
	}
	if got := inference.DTypeToONNX(0); got != 0 {
		t.Errorf("DTypeToONNX(0) = %d, want 0", got)
	}
}

// A string tensor encodes each string as its length and bytes, and the
// decoder refuses lengths and counts the bytes do not hold
// (TestTensorUnmarshalHugeShapeDoesNotAllocate checks, for every type,
// that it does so before it allocates for them).
func TestTensorEncodingStrings(t *testing.T) {
	x := mustNew(t, []int{3}, []string{"a", "", "né"})
	got := marshal(t, x)
	want := []byte{byte(inference.String), 1, 3, 1, 'a', 0, 3, 'n', 0xc3, 0xa9}
	if !bytes.Equal(got, want) {
		t.Errorf("encoding %x, want %x", got, want)
	}
	if x.ByteSize() != 3*16+4 {
		t.Errorf("ByteSize = %d, want the headers and 4 bytes", x.ByteSize())
	}
	for name, b := range map[string][]byte{
		"a billion strings in 3 bytes": {byte(inference.String), 1, 0x80, 0x94, 0xeb, 0xdc, 0x03, 0, 0, 0},
		"length past the end":          {byte(inference.String), 1, 1, 5, 'a'},
		"missing string":               {byte(inference.String), 1, 2, 1, 'a'},
	} {
		var got inference.Tensor
		if err := got.UnmarshalBinary(b); !errors.Is(err, inference.ErrShape) {
			t.Errorf("%s: %v, want ErrShape", name, err)
		}
	}
}

// FromLittleEndian reads every type of fixed size as AppendBinary writes
// it, and refuses strings and a byte count that is not the shape's.
func TestFromLittleEndian(t *testing.T) {
	for _, d := range allDTypes {
		if d == inference.String {
			continue
		}
		x := sample(t, d, []int{2, 3}, 5)
		enc := marshal(t, x)
		raw := enc[len(enc)-int(x.ByteSize()):]
		got, err := inference.FromLittleEndian(d, []int{2, 3}, raw)
		if err != nil || !inference.Equal(got, x) {
			t.Errorf("%v: FromLittleEndian = %v, %v, want %v", d, got, err, x)
		}
		if _, err := inference.FromLittleEndian(d, []int{2, 3}, raw[1:]); !errors.Is(err, inference.ErrShape) {
			t.Errorf("%v: one byte short: %v, want ErrShape", d, err)
		}
	}
	if _, err := inference.FromLittleEndian(inference.String, []int{1}, []byte{1}); !errors.Is(err, inference.ErrType) {
		t.Errorf("strings: %v, want ErrType", err)
	}
	b, err := inference.FromLittleEndian(inference.Bool, []int{3}, []byte{0, 2, 1})
	if got, _ := inference.Data[bool](b); err != nil || !slices.Equal(got, []bool{false, true, true}) {
		t.Errorf("bools from 0, 2, 1 = %v, %v", got, err)
	}
}

// Equal compares float64s bit for bit, as it does float32s.
func TestEqualFloat64(t *testing.T) {
	nan := math.NaN()
	a := mustNew(t, []int{2}, []float64{nan, 0})
	if !inference.Equal(a, mustNew(t, []int{2}, []float64{nan, 0})) {
		t.Error("NaN does not equal itself")
	}
	if inference.Equal(a, mustNew(t, []int{2}, []float64{nan, math.Copysign(0, -1)})) {
		t.Error("0 equals -0")
	}
}

// BF16FromFloat32 rounds to nearest, ties to even, and every BF16 but the
// signalling NaNs reads back as itself.
func TestBF16(t *testing.T) {
	for h := range 1 << 16 {
		b := inference.BF16(h)
		f := b.Float32()
		if f != f {
			if g := inference.BF16FromFloat32(f); g.Float32() == g.Float32() || g&0x8000 != b&0x8000 {
				t.Fatalf("NaN %#04x became %#04x", h, g)
			}
			continue
		}
		if g := inference.BF16FromFloat32(f); g != b {
			t.Fatalf("%#04x (%v) read back as %#04x", h, f, g)
		}
	}
	for _, tc := range []struct {
		f    float32
		want float32
	}{
		{1 + 1.0/256, 1},                       // a tie: to the even 1
		{1 + 3.0/256, 1 + 4.0/256},             // a tie: to the even 1+2⁻⁶
		{1 + 1.0/256 + 1.0/65536, 1 + 1.0/128}, // above the tie
		{math.MaxFloat32, float32(math.Inf(1))},
		{-3.5, -3.5},
	} {
		if got := inference.BF16FromFloat32(tc.f).Float32(); got != tc.want {
			t.Errorf("BF16FromFloat32(%v) = %v, want %v", tc.f, got, tc.want)
		}
	}
	if s := inference.BF16FromFloat32(0.1).String(); s != "0.100097656" {
		t.Errorf("String of bfloat16 0.1 = %q", s)
	}
}

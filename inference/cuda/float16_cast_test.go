//go:build cgo

package cuda_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/kernels"
	"github.com/beamml/beamml/internal/sim"
)

// castOnDevice runs cast_convert on the simulated device: the n elements
// of x, of the kernels' type code from, to type code to, of size bytes
// each. It returns the converted bytes.
func castOnDevice(t *testing.T, dev *sim.Device, x []byte, n int, from, to int64, size int) []byte {
	t.Helper()
	f, err := dev.Function(kernels.CastConvert)
	if err != nil {
		t.Fatal(err)
	}
	in, err := dev.Alloc(int64(max(len(x), 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	out, err := dev.Alloc(int64(max(n*size, 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(out)
	if err := dev.CopyHtoD(in, x); err != nil {
		t.Fatal(err)
	}
	s, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer dev.DestroyStream(s)
	if err := dev.Launch(f, cuda.Dim3{X: 64, Y: 1, Z: 1}, cuda.Dim3{X: 256, Y: 1, Z: 1}, s,
		[]uint64{uint64(out), uint64(in), uint64(n), uint64(from), uint64(to)}); err != nil {
		t.Fatal(err)
	}
	if err := dev.Sync(s); err != nil {
		t.Fatal(err)
	}
	y := make([]byte, n*size)
	if err := dev.CopyDtoH(y, out); err != nil {
		t.Fatal(err)
	}
	return y
}

// bytesOf returns the bytes of a tensor's elements, little-endian.
func bytesOf(t *testing.T, x inference.Tensor) []byte {
	t.Helper()
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b[len(b)-int(x.ByteSize()):]
}

// The device's float16 conversions (common.cuh's half_to_float and
// float_to_half, compiled for the host by the emulator as they are for
// the GPU) give the bits of the host's (inference.Half): all 65536 float16
// values to float32; float32 to float16 at every midpoint between two
// float16 values and either side of it, and on random bit patterns; and
// float16 to and from every other element type as the CPU backend's Cast.
func TestCastKernelFloat16(t *testing.T) {
	b, dev := newSim(t, 0)
	if _, err := b.Open(); err != nil {
		t.Fatal(err)
	}
	every := make([]inference.Half, 1<<16)
	for i := range every {
		every[i] = inference.Half(i)
	}
	halfBytes := unsafe.Slice((*byte)(unsafe.Pointer(&every[0])), 2*len(every))

	got := castOnDevice(t, dev, halfBytes, len(every), kernels.T_F16, kernels.T_F32, 4)
	for i, h := range every {
		if g, w := binary.LittleEndian.Uint32(got[4*i:]), math.Float32bits(h.Float32()); g != w {
			t.Fatalf("float16 %#04x to float32: device %#08x, host %#08x", uint16(h), g, w)
		}
	}

	var fs []float32
	for i := 1; i < 0x7c00; i++ {
		mid := (float64(inference.Half(i-1).Float32()) + float64(inference.Half(i).Float32())) / 2
		for _, f := range []float32{float32(mid), math.Nextafter32(float32(mid), 0), math.Nextafter32(float32(mid), 1e9)} {
			fs = append(fs, f, -f)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 16 {
		fs = append(fs, math.Float32frombits(r.Uint32()))
	}
	fs = append(fs, 65520, 1e30, float32(math.Inf(1)), float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffbfe000))
	got = castOnDevice(t, dev, unsafe.Slice((*byte)(unsafe.Pointer(&fs[0])), 4*len(fs)), len(fs), kernels.T_F32, kernels.T_F16, 2)
	for i, f := range fs {
		if g, w := binary.LittleEndian.Uint16(got[2*i:]), uint16(inference.HalfFromFloat32(f)); g != w {
			t.Fatalf("float32 %g (%#08x) to float16: device %#04x, host %#04x", f, math.Float32bits(f), g, w)
		}
	}

	codes := map[inference.DType]int64{inference.Int64: kernels.T_I64, inference.Int32: kernels.T_I32,
		inference.Uint8: kernels.T_U8, inference.Bool: kernels.T_BOOL}
	onnx := map[inference.DType]int64{inference.Int64: 7, inference.Int32: 6, inference.Uint8: 2, inference.Bool: 9, inference.Float16: 10}
	halves, _ := inference.New([]int{len(every)}, every)
	others := map[inference.DType]inference.Tensor{
		inference.Int64: tensorOf(t, []int64{0, 1, -1, 2049, 2051, 65504, 65519, 65520, -70000, 1 << 24, 1<<24 + 1, math.MaxInt64, math.MinInt64}),
		inference.Int32: tensorOf(t, []int32{0, 1, -1, 4097, 4099, -65520, 65536, math.MaxInt32, math.MinInt32}),
		inference.Uint8: tensorOf(t, []uint8{0, 1, 127, 128, 255}),
		inference.Bool:  tensorOf(t, []bool{true, false}),
	}
	for dt, code := range codes {
		cast := func(x inference.Tensor, to inference.DType) inference.Tensor {
			n := &graph.Node{Name: "cast", OpType: "Cast", Inputs: []string{"x"}, Outputs: []string{"y"},
				Attrs: map[string]graph.Attr{"to": {Type: graph.AttrInt, Int: onnx[to]}}}
			y, err := cpu.RunNode(nil, n, 17, []inference.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			return y[0]
		}
		want := cast(halves, dt)
		if got := castOnDevice(t, dev, halfBytes, len(every), kernels.T_F16, code, dt.Size()); !slices.Equal(got, bytesOf(t, want)) {
			t.Errorf("float16 to %v: the device's differ from the CPU's", dt)
		}
		x := others[dt]
		want = cast(x, inference.Float16)
		if got := castOnDevice(t, dev, bytesOf(t, x), x.Len(), code, kernels.T_F16, 2); !slices.Equal(got, bytesOf(t, want)) {
			t.Errorf("%v to float16: device %x, CPU %x", dt, got, bytesOf(t, want))
		}
	}
}

func tensorOf[T inference.Element](t *testing.T, v []T) inference.Tensor {
	t.Helper()
	x, err := inference.New([]int{len(v)}, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

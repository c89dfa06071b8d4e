package cpu

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// compileRun compiles g with the CPU backend and runs it on feeds.
func compileRun(t *testing.T, g *graph.Graph, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	t.Helper()
	m, err := Backend{}.Compile(g)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Run(context.Background(), feeds)
}

// typed gives g's inputs the types of feeds, as a model declares them.
func typed(g *graph.Graph, feeds map[string]inference.Tensor) *graph.Graph {
	for i, v := range g.Inputs {
		g.Inputs[i].DType = feeds[v.Name].DType()
	}
	return g
}

// Operators that only move elements move those of every type, the values
// unchanged: strings, float64s, the narrow integers and bfloat16s through
// Concat, Transpose, Gather, Slice, Pad (whose zero is each type's own:
// "" for strings) and Where.
func TestMovementOfEveryType(t *testing.T) {
	for _, d := range inference.DTypes() {
		t.Run(d.String(), func(t *testing.T) {
			a, b := sampleOf(t, d, 0), sampleOf(t, d, 6)
			ea, eb := elementsOf(a), elementsOf(b)

			out := run1(t, oneNode(t, "Concat", 13, map[string]graph.Attr{"axis": attrInt(0)}, "a", "b"), map[string]inference.Tensor{"a": a, "b": b})
			checkElements(t, "Concat", out, []int{4, 3}, slices.Concat(ea, eb))

			out = run1(t, oneNode(t, "Transpose", 13, nil, "a"), map[string]inference.Tensor{"a": a})
			checkElements(t, "Transpose", out, []int{3, 2}, []any{ea[0], ea[3], ea[1], ea[4], ea[2], ea[5]})

			idx := tensorOf(t, []int{3}, int64(1), 0, 1)
			out = run1(t, oneNode(t, "Gather", 13, nil, "a", "i"), map[string]inference.Tensor{"a": a, "i": idx})
			checkElements(t, "Gather", out, []int{3, 3}, slices.Concat(ea[3:], ea[:3], ea[3:]))

			pads := tensorOf(t, []int{4}, int64(0), 1, 0, 0)
			out = run1(t, oneNode(t, "Pad", 13, nil, "a", "p"), map[string]inference.Tensor{"a": a, "p": pads})
			z := zeroOf(d)
			checkElements(t, "Pad", out, []int{2, 4}, []any{z, ea[0], ea[1], ea[2], z, ea[3], ea[4], ea[5]})

			cond := tensorOf(t, []int{3}, true, false, true)
			out = run1(t, oneNode(t, "Where", 16, nil, "c", "a", "b"), map[string]inference.Tensor{"c": cond, "a": a, "b": b})
			checkElements(t, "Where", out, []int{2, 3}, []any{ea[0], eb[1], ea[2], ea[3], eb[4], ea[5]})
		})
	}
}

// A node whose kernel does not compute an element type fails at load,
// with ErrUnsupportedType naming the node, the value and the type: Add
// of strings, MatMul of int8s.
func TestUnsupportedTypeFailsAtCompile(t *testing.T) {
	for _, tc := range []struct {
		op   string
		d    inference.DType
		want string
	}{
		{"Add", inference.String, `input "a" of element type STRING (8)`},
		{"MatMul", inference.Int8, `input "a" of element type INT8 (3)`},
	} {
		a := sampleOf(t, tc.d, 0)
		g := typed(oneNode(t, tc.op, 13, nil, "a", "b"), map[string]inference.Tensor{"a": a, "b": a})
		_, err := Backend{}.Compile(g)
		if !errors.Is(err, inference.ErrUnsupportedType) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.op) {
			t.Errorf("%s of %v: %v, want ErrUnsupportedType saying %s", tc.op, tc.d, err, tc.want)
		}
	}
}

// Cast converts between every pair of types: small whole numbers keep
// their value (true for nonzero, "12" as a string).
func TestCastEveryPair(t *testing.T) {
	values := []int{0, 1, 12, 100}
	for _, from := range inference.DTypes() {
		for _, to := range inference.DTypes() {
			x := valuesOf(t, from, values)
			g := typed(oneNode(t, "Cast", 19, map[string]graph.Attr{"to": attrInt(inference.DTypeToONNX(to))}, "x"), map[string]inference.Tensor{"x": x})
			out, err := compileRun(t, g, map[string]inference.Tensor{"x": x})
			if err != nil {
				t.Errorf("Cast %v to %v: %v", from, to, err)
				continue
			}
			want := valuesOf(t, to, values)
			if from == inference.Bool {
				want = valuesOf(t, to, []int{0, 1, 1, 1})
			}
			if !inference.Equal(out["y"], want) {
				t.Errorf("Cast %v %v to %v = %v, want %v", from, elementsOf(x), to, elementsOf(out["y"]), elementsOf(want))
			}
		}
	}
}

// Cast's edges: truncation and wrapping as C's conversions, one rounding
// from float64 to float16 (through float32 to odd), and strings as the
// ONNX spec reads and writes them.
func TestCastEdges(t *testing.T) {
	cast := func(x inference.Tensor, to inference.DType) (inference.Tensor, error) {
		g := typed(oneNode(t, "Cast", 19, map[string]graph.Attr{"to": attrInt(inference.DTypeToONNX(to))}, "x"), map[string]inference.Tensor{"x": x})
		out, err := compileRun(t, g, map[string]inference.Tensor{"x": x})
		return out["y"], err
	}
	check := func(x inference.Tensor, to inference.DType, want inference.Tensor) {
		t.Helper()
		got, err := cast(x, to)
		if err != nil || !inference.Equal(got, want) {
			t.Errorf("Cast %v %v to %v = %v, %v, want %v", x, elementsOf(x), to, elementsOf(got), err, elementsOf(want))
		}
	}
	check(tensorOf(t, []int{3}, int64(300), -1, -129), inference.Int8, tensorOf(t, []int{3}, int8(44), -1, 127))
	check(tensorOf(t, []int{2}, int32(-1), 65536), inference.Uint16, tensorOf(t, []int{2}, uint16(65535), 0))
	check(tensorOf(t, []int{2}, 2.9, -2.9), inference.Int32, tensorOf(t, []int{2}, int32(2), -2))
	check(tensorOf(t, []int{2}, 1e19, 3.5), inference.Uint64, tensorOf(t, []int{2}, uint64(10000000000000000000), 3))
	check(tensorOf(t, []int{1}, uint64(math.MaxUint64)), inference.Float64, tensorOf(t, []int{1}, float64(1<<64)))
	// 1 + 2⁻¹¹ is halfway between two float16s; the 2⁻⁴⁰ above it, which
	// float32 loses, decides it upward.
	check(tensorOf(t, []int{1}, 1+math.Pow(2, -11)+math.Pow(2, -40)), inference.Float16, tensorOf(t, []int{1}, inference.HalfFromFloat32(1+1.0/1024)))
	check(tensorOf(t, []int{1}, float32(1+1.0/256)), inference.BFloat16, tensorOf(t, []int{1}, inference.BF16(0x3f80)))

	check(tensorOf(t, []int{5}, "3.5", " -INF", "nan", "1e3", "+inf"), inference.Float32,
		tensorOf(t, []int{5}, float32(3.5), float32(math.Inf(-1)), float32(math.NaN()), 1000, float32(math.Inf(1))))
	check(tensorOf(t, []int{3}, "100.5", "-7", "18446744073709551615"), inference.Int64, tensorOf(t, []int{3}, int64(100), -7, -1))
	check(tensorOf(t, []int{4}, float32(0.1), 1e-5, float32(math.Inf(-1)), 1234567), inference.String, tensorOf(t, []int{4}, "0.1", "1e-05", "-INF", "1234567"))
	check(tensorOf(t, []int{2}, 0.1, math.NaN()), inference.String, tensorOf(t, []int{2}, "0.1", "NaN"))
	check(tensorOf(t, []int{2}, int8(-5), 7), inference.String, tensorOf(t, []int{2}, "-5", "7"))
	check(tensorOf(t, []int{1}, uint64(math.MaxUint64)), inference.String, tensorOf(t, []int{1}, "18446744073709551615"))
	check(tensorOf(t, []int{2}, true, false), inference.String, tensorOf(t, []int{2}, "1", "0"))

	if _, err := cast(tensorOf(t, []int{2}, "1", "one"), inference.Float32); !errors.Is(err, inference.ErrType) || !strings.Contains(err.Error(), `"one"`) {
		t.Errorf("Cast of \"one\" to float32: %v, want ErrType naming it", err)
	}
}

func run1(t *testing.T, g *graph.Graph, feeds map[string]inference.Tensor) inference.Tensor {
	t.Helper()
	out, err := compileRun(t, typed(g, feeds), feeds)
	if err != nil {
		t.Fatalf("%s: %v", g.Nodes[0].OpType, err)
	}
	return out["y"]
}

// sampleOf is a [2 3] tensor of d, its values distinct from seed on.
func sampleOf(t *testing.T, d inference.DType, seed int) inference.Tensor {
	t.Helper()
	v := make([]int, 6)
	for i := range v {
		v[i] = seed + i + 1
	}
	x := valuesOf(t, d, v)
	if d == inference.Bool {
		x = tensorOf(t, []int{6}, seed%2 == 0, true, false, seed%2 == 1, false, true)
	}
	x, err := reshaped(x, []int{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// valuesOf is the tensor of d holding the whole numbers v (nonzero as true,
// decimal strings).
func valuesOf(t *testing.T, d inference.DType, v []int) inference.Tensor {
	t.Helper()
	n := []int{len(v)}
	switch d {
	case inference.Float32:
		return tensorOf(t, n, each(v, func(x int) float32 { return float32(x) })...)
	case inference.Float64:
		return tensorOf(t, n, each(v, func(x int) float64 { return float64(x) })...)
	case inference.Int64:
		return tensorOf(t, n, each(v, func(x int) int64 { return int64(x) })...)
	case inference.Int32:
		return tensorOf(t, n, each(v, func(x int) int32 { return int32(x) })...)
	case inference.Int16:
		return tensorOf(t, n, each(v, func(x int) int16 { return int16(x) })...)
	case inference.Int8:
		return tensorOf(t, n, each(v, func(x int) int8 { return int8(x) })...)
	case inference.Uint64:
		return tensorOf(t, n, each(v, func(x int) uint64 { return uint64(x) })...)
	case inference.Uint32:
		return tensorOf(t, n, each(v, func(x int) uint32 { return uint32(x) })...)
	case inference.Uint16:
		return tensorOf(t, n, each(v, func(x int) uint16 { return uint16(x) })...)
	case inference.Uint8:
		return tensorOf(t, n, each(v, func(x int) uint8 { return uint8(x) })...)
	case inference.Bool:
		return tensorOf(t, n, each(v, func(x int) bool { return x != 0 })...)
	case inference.Float16:
		return tensorOf(t, n, each(v, func(x int) inference.Half { return inference.HalfFromFloat32(float32(x)) })...)
	case inference.BFloat16:
		return tensorOf(t, n, each(v, func(x int) inference.BF16 { return inference.BF16FromFloat32(float32(x)) })...)
	case inference.String:
		return tensorOf(t, n, each(v, strconv.Itoa)...)
	}
	t.Fatalf("no values of %v", d)
	return inference.Tensor{}
}

func each[T any](v []int, f func(int) T) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

// dataAny is x's elements as the []T of its type.
func dataAny(x inference.Tensor) any {
	switch x.DType() {
	case inference.Float32:
		return dataOf[float32](x)
	case inference.Float64:
		return dataOf[float64](x)
	case inference.Int64:
		return dataOf[int64](x)
	case inference.Int32:
		return dataOf[int32](x)
	case inference.Int16:
		return dataOf[int16](x)
	case inference.Int8:
		return dataOf[int8](x)
	case inference.Uint64:
		return dataOf[uint64](x)
	case inference.Uint32:
		return dataOf[uint32](x)
	case inference.Uint16:
		return dataOf[uint16](x)
	case inference.Uint8:
		return dataOf[uint8](x)
	case inference.Bool:
		return dataOf[bool](x)
	case inference.Float16:
		return dataOf[inference.Half](x)
	case inference.BFloat16:
		return dataOf[inference.BF16](x)
	case inference.String:
		return dataOf[string](x)
	}
	return []any{}
}

// elementsOf is x's elements, each in an interface.
func elementsOf(x inference.Tensor) []any {
	v := reflect.ValueOf(dataAny(x))
	out := make([]any, v.Len())
	for i := range out {
		out[i] = v.Index(i).Interface()
	}
	return out
}

// zeroOf is the zero value of d's element type.
func zeroOf(d inference.DType) any {
	z, _ := inference.Zeros(d, []int{1})
	return elementsOf(z)[0]
}

// reshaped is x with the given shape.
func reshaped(x inference.Tensor, shape []int) (inference.Tensor, error) {
	if x.DType() == inference.String {
		return inference.New(shape, dataOf[string](x))
	}
	return inference.FromLittleEndian(x.DType(), shape, x.Bytes())
}

func checkElements(t *testing.T, what string, got inference.Tensor, shape []int, want []any) {
	t.Helper()
	if g := elementsOf(got); !slices.Equal(got.Shape(), shape) || !reflect.DeepEqual(g, want) {
		t.Errorf("%s: got %v %v, want %v %v", what, got, g, shape, want)
	}
}

// A node whose output depends only on shapes runs once per input shape,
// and later runs reuse a copy of its output: of every element type.
func TestStaticOutputOfEveryType(t *testing.T) {
	g := sorted(t, &graph.Graph{Name: "g", Opsets: map[string]int64{"": 19},
		Inputs:  []graph.Value{{Name: "x", DType: inference.Float32}},
		Outputs: []graph.Value{{Name: "y"}},
		Nodes: []*graph.Node{
			{Name: "s", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}},
			{Name: "c", OpType: "Cast", Inputs: []string{"s"}, Outputs: []string{"c"}, Attrs: map[string]graph.Attr{"to": attrInt(inference.DTypeToONNX(inference.Uint16))}},
			{Name: "y", OpType: "Concat", Inputs: []string{"c", "c"}, Outputs: []string{"y"}, Attrs: map[string]graph.Attr{"axis": attrInt(0)}},
		}})
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for range 3 {
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, []int{2, 300}, make([]float32, 600)...)})
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, out["y"], []int{4}, uint16(2), 300, 2, 300)
	}
}

// The run's pool knows the buffers of values of every type: a float64
// value a kernel made carried (Expand) stays live while a later node
// (Concat) takes a buffer of its size.
func TestPooledValuesOfEveryType(t *testing.T) {
	g := sorted(t, &graph.Graph{Name: "g", Opsets: map[string]int64{"": 19},
		Inputs:       []graph.Value{{Name: "x", DType: inference.Float64}, {Name: "i", DType: inference.Int64}},
		Outputs:      []graph.Value{{Name: "y"}, {Name: "k"}},
		Initializers: map[string]inference.Tensor{"shape": tensorOf(t, []int{2}, int64(2), 4)},
		Nodes: []*graph.Node{
			{Name: "e", OpType: "Expand", Inputs: []string{"x", "shape"}, Outputs: []string{"e"}},
			{Name: "k", OpType: "Concat", Inputs: []string{"i", "i"}, Outputs: []string{"k"}, Attrs: map[string]graph.Attr{"axis": attrInt(0)}},
			{Name: "y", OpType: "Transpose", Inputs: []string{"e"}, Outputs: []string{"y"}},
		}})
	m, err := Backend{}.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for range 3 {
		out, err := m.Run(context.Background(), map[string]inference.Tensor{
			"x": tensorOf(t, []int{4}, 0.5, 1, 1.5, 2),
			"i": tensorOf(t, []int{4}, int64(-1), -2, -3, -4),
		})
		if err != nil {
			t.Fatal(err)
		}
		checkExact(t, out["y"], []int{4, 2}, 0.5, 0.5, 1, 1, 1.5, 1.5, 2, 2)
	}
}

// EyeLike makes its identity in the type its dtype names, float64 and the
// narrow integers among them.
func TestEyeLikeOfEveryNumber(t *testing.T) {
	x := tensorOf(t, []int{2, 3}, float32(0), 0, 0, 0, 0, 0)
	for _, d := range []inference.DType{inference.Float64, inference.Int8, inference.Uint64, inference.BFloat16} {
		g := typed(oneNode(t, "EyeLike", 13, map[string]graph.Attr{"dtype": attrInt(inference.DTypeToONNX(d)), "k": attrInt(1)}, "x"),
			map[string]inference.Tensor{"x": x})
		out, err := compileRun(t, g, map[string]inference.Tensor{"x": x})
		if err != nil {
			t.Fatalf("EyeLike to %v: %v", d, err)
		}
		want := valuesOf(t, d, []int{0, 1, 0, 0, 0, 1})
		if got := out["y"]; got.DType() != d || !slices.Equal(elementsOf(got), elementsOf(want)) || !slices.Equal(got.Shape(), []int{2, 3}) {
			t.Errorf("EyeLike to %v = %v %v, want [2 3] %v", d, got, elementsOf(got), elementsOf(want))
		}
	}
}

// A scatter that adds is arithmetic, not movement: on a type whose
// kernel does not add it is refused at load, not carried through as bits.
func TestScatterWithReductionIsNotMovement(t *testing.T) {
	data := tensorOf(t, []int{3}, 1.5, 2.5, 3.5)
	idx := tensorOf(t, []int{1}, int64(1))
	upd := tensorOf(t, []int{1}, 0.25)
	feeds := map[string]inference.Tensor{"d": data, "i": idx, "u": upd}
	g := typed(oneNode(t, "ScatterElements", 18, map[string]graph.Attr{"reduction": attrString("add")}, "d", "i", "u"), feeds)
	out, err := compileRun(t, g, feeds)
	switch {
	case err == nil:
		checkElements(t, "ScatterElements add of float64", out["y"], []int{3}, []any{1.5, 2.75, 3.5})
	case !errors.Is(err, inference.ErrUnsupportedType):
		t.Errorf("ScatterElements add of float64: %v, want a sum or ErrUnsupportedType at load", err)
	}
}

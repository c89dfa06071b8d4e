// Package check compares the CUDA backend with the CPU backend, one
// operator at a time: each Case is a one-node graph on small random
// inputs, compiled on both backends and run on both, and the outputs are
// compared element by element. The executor tests run the cases on the
// simulated device (host-emulated kernels); the container's selfcheck
// command runs them on the GPU.
package check

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
)

// Input is one input of a Case's node.
type Input struct {
	T inference.Tensor
	// Const makes the input an initializer: known on the host when the
	// plan is built (Reshape's shape, Clip's bounds, …).
	Const bool
	// Absent leaves an optional input out ("" in the node's inputs).
	Absent bool
}

// Case is one operator on one set of inputs.
type Case struct {
	Name    string // unique: "Add/broadcast-row"
	Op      string
	Attrs   map[string]graph.Attr
	Inputs  []Input
	Outputs int   // number of node outputs (1 when 0)
	Opset   int64 // 17 when 0
	// RTol and ATol are the float32 tolerances (1e-4 and 1e-5 when 0).
	// A case that needs more says why in Why.
	RTol, ATol float64
	Why        string
}

var cases []Case

// Add registers cases; the cases_*.go files call it from init.
func Add(cs ...Case) { cases = append(cases, cs...) }

// Cases returns every case, by name.
func Cases() []Case {
	out := slices.Clone(cases)
	slices.SortFunc(out, func(a, b Case) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Graph builds the case's one-node graph.
func (c Case) Graph() (*graph.Graph, map[string]inference.Tensor, error) {
	opset := c.Opset
	if opset == 0 {
		opset = 17
	}
	g := &graph.Graph{Name: c.Name, Opsets: map[string]int64{"": opset}, Initializers: map[string]inference.Tensor{}}
	n := &graph.Node{Name: "node", OpType: c.Op, Attrs: c.Attrs}
	feeds := map[string]inference.Tensor{}
	for i, in := range c.Inputs {
		name := fmt.Sprintf("in%d", i)
		switch {
		case in.Absent:
			name = ""
		case in.Const:
			g.Initializers[name] = in.T
		default:
			g.Inputs = append(g.Inputs, graph.Value{Name: name, DType: in.T.DType(), Shape: in.T.Shape()})
			feeds[name] = in.T
		}
		n.Inputs = append(n.Inputs, name)
	}
	for i := range max(c.Outputs, 1) {
		name := fmt.Sprintf("out%d", i)
		n.Outputs = append(n.Outputs, name)
		g.Outputs = append(g.Outputs, graph.Value{Name: name})
	}
	g.Nodes = []*graph.Node{n}
	if err := g.Sort(nil); err != nil {
		return nil, nil, err
	}
	return g, feeds, nil
}

// Run compiles and runs c on the CPU backend and on b, and compares the
// outputs. It returns an error describing the first mismatch.
func Run(ctx context.Context, b graph.Compiler, c Case) error {
	return RunAgainst(ctx, cpu.Backend{}, b, c)
}

// RunAgainst is Run with ref's outputs for the reference: a compiler that
// gives c another meaning than the CPU backend's (a precision mode's).
func RunAgainst(ctx context.Context, ref, b graph.Compiler, c Case) error {
	want, err := runOn(ctx, ref, c)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Name, ref.Device(), err)
	}
	got, err := runOn(ctx, b, c)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Name, b.Device(), err)
	}
	rtol, atol := c.RTol, c.ATol
	if rtol == 0 {
		rtol = 1e-4
	}
	if atol == 0 {
		atol = 1e-5
	}
	for name, w := range want {
		if err := Compare(got[name], w, rtol, atol); err != nil {
			return fmt.Errorf("%s: output %s: %w", c.Name, name, err)
		}
	}
	return nil
}

func runOn(ctx context.Context, b graph.Compiler, c Case) (map[string]inference.Tensor, error) {
	g, feeds, err := c.Graph() // each backend gets its own graph: Compile rewrites it
	if err != nil {
		return nil, err
	}
	m, err := b.Compile(g)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Run(ctx, feeds)
}

// Compare checks got against want: same type and shape, floats (float32
// and float16) within |got-want| <= atol + rtol·|want| (NaN matching NaN,
// infinities equal), everything else exactly.
func Compare(got, want inference.Tensor, rtol, atol float64) error {
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	g, w := Float32s(got), Float32s(want)
	if w == nil && want.Len() > 0 {
		if !inference.Equal(got, want) {
			return fmt.Errorf("got %v, want %v (exact)%s", got, want, firstDifference(got, want))
		}
		return nil
	}
	for i := range w {
		a, b := float64(g[i]), float64(w[i])
		switch {
		case math.IsNaN(a) && math.IsNaN(b), a == b:
			continue
		case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) || math.Abs(a-b) > atol+rtol*math.Abs(b):
			return fmt.Errorf("element %d: got %g, want %g (rtol %g, atol %g)", i, a, b, rtol, atol)
		}
	}
	return nil
}

// NaNs is the number of NaN elements of t (0 when t does not hold
// floats). Compare counts NaN equal to NaN, so an output of nothing but
// NaN matches whatever computes NaN: a comparison of model outputs should
// refuse a reference that holds any.
func NaNs(t inference.Tensor) int {
	n := 0
	for _, v := range Float32s(t) {
		if v != v {
			n++
		}
	}
	return n
}

// firstDifference says where two tensors of one type and shape first
// differ (", element i: got g, want w"), or "" where they do not.
func firstDifference(got, want inference.Tensor) string {
	switch want.DType() {
	case inference.Int64:
		return differ[int64](got, want)
	case inference.Int32:
		return differ[int32](got, want)
	case inference.Bool:
		return differ[bool](got, want)
	case inference.Uint8:
		return differ[uint8](got, want)
	}
	return ""
}

func differ[T int64 | int32 | bool | uint8](got, want inference.Tensor) string {
	g, _ := inference.Data[T](got)
	w, _ := inference.Data[T](want)
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf(", element %d: got %v, want %v", i, g[i], w[i])
		}
	}
	return ""
}

// Float32s returns the values of a float32 or float16 tensor as float32
// (float16 exactly), and nil for other element types.
func Float32s(t inference.Tensor) []float32 {
	switch t.DType() {
	case inference.Float32:
		v, _ := inference.Data[float32](t)
		return v
	case inference.Float16:
		h, _ := inference.Data[inference.Half](t)
		v := make([]float32, len(h))
		for i, x := range h {
			v[i] = x.Float32()
		}
		return v
	}
	return nil
}

// Rand returns a float32 tensor of the given shape with values uniform in
// [lo, hi), from a generator seeded by seed.
func Rand(seed uint64, lo, hi float32, shape ...int) inference.Tensor {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float32()
	}
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// RandomInput returns a tensor of a model input's element type and the
// given shape, from r: floats (float32, float64, float16) uniform in [-1, 1),
// integers 0 or 1 (valid token ids, indices into any table, and the values
// of an attention mask or token types: a mask of 2 or 3 turns Hugging
// Face's additive mask (1 − m)·min into +inf, and every output into NaN),
// bools and bytes uniform. The self-check and beamml-bench feed models with it.
// Other element types fail, naming the input.
func RandomInput(r *rand.Rand, name string, dtype inference.DType, shape []int) (inference.Tensor, error) {
	n, err := inference.NumElements(shape)
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("input %q: %w", name, err)
	}
	var t inference.Tensor
	switch dtype {
	case inference.Float32:
		t, err = inference.New(shape, fill(n, func() float32 { return 2*r.Float32() - 1 }))
	case inference.Float64:
		t, err = inference.New(shape, fill(n, func() float64 { return 2*r.Float64() - 1 }))
	case inference.Int64:
		t, err = inference.New(shape, fill(n, func() int64 { return r.Int64N(2) }))
	case inference.Int32:
		t, err = inference.New(shape, fill(n, func() int32 { return r.Int32N(2) }))
	case inference.Bool:
		t, err = inference.New(shape, fill(n, func() bool { return r.IntN(2) == 1 }))
	case inference.Uint8:
		t, err = inference.New(shape, fill(n, func() uint8 { return uint8(r.UintN(256)) }))
	case inference.Float16:
		t, err = inference.New(shape, fill(n, func() inference.Half { return inference.HalfFromFloat32(2*r.Float32() - 1) }))
	default:
		return inference.Tensor{}, fmt.Errorf("input %q has element type %v, for which no random input is made", name, dtype)
	}
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("input %q: %w", name, err)
	}
	return t, nil
}

func fill[T inference.Element](n int, f func() T) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = f()
	}
	return v
}

// Ints returns an int64 tensor.
func Ints(shape []int, v ...int64) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// Floats returns a float32 tensor.
func Floats(shape []int, v ...float32) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// AInt, AInts, AFloat, AFloats and AStr make attributes.
func AInt(v int64) graph.Attr         { return graph.Attr{Type: graph.AttrInt, Int: v} }
func AInts(v ...int64) graph.Attr     { return graph.Attr{Type: graph.AttrInts, Ints: v} }
func AFloat(v float32) graph.Attr     { return graph.Attr{Type: graph.AttrFloat, Float: v} }
func AFloats(v ...float32) graph.Attr { return graph.Attr{Type: graph.AttrFloats, Floats: v} }
func AStr(v string) graph.Attr        { return graph.Attr{Type: graph.AttrString, String: v} }

// ToFloat16 returns a float32 tensor with each value rounded to the
// nearest float16 (inference.HalfFromFloat32), and a tensor of another type
// as it is.
func ToFloat16(t inference.Tensor) inference.Tensor {
	if t.DType() != inference.Float32 {
		return t
	}
	f, _ := inference.Data[float32](t)
	v := make([]inference.Half, len(f))
	for i, x := range f {
		v[i] = inference.HalfFromFloat32(x)
	}
	h, err := inference.New(t.Shape(), v)
	if err != nil {
		panic(err) // the shape is t's
	}
	return h
}

// Float16 returns c with every float32 input made float16 (each value
// rounded to the nearest float16), which both backends then compute as a
// float16 model (in float32, rounding each float16 output once), and
// whether c had a float32 input. Its tolerances are float16's: rtol and
// atol 2e-3, two float16 ulps of values of order 1, which a float32 sum
// in another order can move a rounding by (the CPU and the device add in
// different orders); a case whose float32 tolerances are wider keeps
// them.
func (c Case) Float16() (Case, bool) {
	h := c
	h.Name = c.Name + "/float16"
	h.Inputs = slices.Clone(c.Inputs)
	some := false
	for i, in := range h.Inputs {
		if in.Absent || in.T.DType() != inference.Float32 {
			continue
		}
		h.Inputs[i].T = ToFloat16(in.T)
		some = true
	}
	h.RTol, h.ATol = max(c.RTol, 2e-3), max(c.ATol, 2e-3)
	return h, some
}

// RoundedToFloat16 returns a compiler whose models are b's with every
// float32 feed and every float32 output rounded to the nearest float16
// value (kept float32): the answer of a model that computes exactly in
// float32 but takes and gives float16. Where it is farther from b's own
// answer than a tolerance, the problem itself is beyond float16 at that
// tolerance (ill-conditioned at float16's precision, or out of its range),
// whatever a model does between its inputs and outputs.
func RoundedToFloat16(b graph.Compiler) graph.Compiler { return rounded{b} }

type rounded struct{ graph.Compiler }

func (r rounded) Compile(g *graph.Graph) (inference.Model, error) {
	m, err := r.Compiler.Compile(g)
	if err != nil {
		return nil, err
	}
	return roundedModel{m}, nil
}

type roundedModel struct{ inference.Model }

func (m roundedModel) Run(ctx context.Context, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	outs, err := m.Model.Run(ctx, roundFloat32s(feeds))
	if err != nil {
		return nil, err
	}
	return roundFloat32s(outs), nil
}

// roundFloat32s returns ts with each float32 tensor's values rounded to
// the nearest float16 values.
func roundFloat32s(ts map[string]inference.Tensor) map[string]inference.Tensor {
	r := make(map[string]inference.Tensor, len(ts))
	for name, t := range ts {
		r[name] = t
		if t.DType() == inference.Float32 {
			h, err := inference.New(t.Shape(), Float32s(ToFloat16(t)))
			if err != nil {
				panic(err) // the shape is t's
			}
			r[name] = h
		}
	}
	return r
}

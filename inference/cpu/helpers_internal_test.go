package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Helpers shared by the kernel tests. Float results are held to
// |got − want| ≤ 1e-5 + 1e-4·|want| (rtol 1e-4, atol 1e-5) unless a test
// says otherwise; integer and copied values are compared exactly.

// testNode builds a node named "n" of op at opset with attrs (nil for none)
// and the given number of outputs, named y0, y1, ….
func testNode(op string, opset int64, attrs map[string]graph.Attr, outputs int) opsem.Node {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	outs := make([]string, outputs)
	for i := range outs {
		outs[i] = "y" + strconv.Itoa(i)
	}
	return opsem.Node{Node: &graph.Node{Name: "n", OpType: op, Attrs: attrs, Outputs: outs}, Opset: opset}
}

func attrInt(v int64) graph.Attr         { return graph.Attr{Type: graph.AttrInt, Int: v} }
func attrInts(v ...int64) graph.Attr     { return graph.Attr{Type: graph.AttrInts, Ints: v} }
func attrFloat(v float32) graph.Attr     { return graph.Attr{Type: graph.AttrFloat, Float: v} }
func attrFloats(v ...float32) graph.Attr { return graph.Attr{Type: graph.AttrFloats, Floats: v} }
func attrString(v string) graph.Attr     { return graph.Attr{Type: graph.AttrString, String: v} }
func attrStrings(v ...string) graph.Attr { return graph.Attr{Type: graph.AttrStrings, Strings: v} }

// tensorOf builds a tensor of shape holding data, failing the test if they
// do not fit.
func tensorOf[T inference.Element](t *testing.T, shape []int, data ...T) inference.Tensor {
	t.Helper()
	x, err := inference.New(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// runKernel runs the registered kernel of n's op on in, failing the test on
// an error.
func runKernel(t *testing.T, n opsem.Node, in ...inference.Tensor) []inference.Tensor {
	t.Helper()
	out, err := kernels[n.OpType](n, in)
	if err != nil {
		t.Fatalf("%s-%d: %v", n.OpType, n.Opset, err)
	}
	return out
}

// near reports whether |got − want| ≤ atol + rtol·|want|. NaN is near NaN
// only, and an infinity near itself only.
func near(got, want float32, rtol, atol float64) bool {
	g, w := float64(got), float64(want)
	switch {
	case g == w:
		return true
	case math.IsNaN(w):
		return math.IsNaN(g)
	case math.IsInf(w, 0):
		return false
	}
	return math.Abs(g-w) <= atol+rtol*math.Abs(w)
}

// checkFloats asserts got is a float32 tensor of shape whose values are
// near want at rtol 1e-4, atol 1e-5.
func checkFloats(t *testing.T, got inference.Tensor, shape []int, want ...float32) {
	t.Helper()
	g, err := floats(got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape(), shape) || len(g) != len(want) {
		t.Fatalf("got %v %v, want %v %v", got.Shape(), g, shape, want)
	}
	for i := range want {
		if !near(g[i], want[i], 1e-4, 1e-5) {
			t.Errorf("element %d is %g, want %g", i, g[i], want[i])
		}
	}
}

// checkExact asserts got is a tensor of T of shape holding exactly want.
func checkExact[T inference.Element](t *testing.T, got inference.Tensor, shape []int, want ...T) {
	t.Helper()
	d, err := inference.Data[T](got)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Shape(), shape) || !slices.Equal(d, want) {
		t.Errorf("got %v %v, want %v %v", got.Shape(), d, shape, want)
	}
}

func i64s(t *testing.T, v ...int64) inference.Tensor { return tensorOf(t, []int{len(v)}, v...) }

// randTensor returns a float32 tensor of shape with values uniform in [-1, 1).
func randTensor(t *testing.T, r *rand.Rand, shape ...int) inference.Tensor {
	t.Helper()
	n, _ := inference.NumElements(shape)
	return tensorOf(t, shape, nnRandom(r, n)...)
}

func floatsOf(t *testing.T, x inference.Tensor) []float32 {
	t.Helper()
	d, err := floats(x)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// sorted gives g's nodes without attributes an empty map and sorts g,
// failing the test on a graph that cannot run.
func sorted(t *testing.T, g *graph.Graph) *graph.Graph {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Attrs == nil {
			n.Attrs = map[string]graph.Attr{}
		}
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

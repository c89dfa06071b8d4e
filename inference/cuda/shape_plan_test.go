//go:build cgo

package cuda_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
)

// Data movement cases a one-node check.Case cannot express: Range and
// ConstantOfShape run on the device only when their operands come from
// shape arithmetic at plan time (initializers alone are folded when the
// model compiles) and their output exceeds what the plan computes on the
// host; indexed operators with indices computed on the device, and
// scatters whose indices repeat, run on the device too (errword_test.go
// checks that an index out of range is reported).

type shapePlanCase struct {
	name   string
	nodes  []*graph.Node
	inits  map[string]inference.Tensor
	feeds  map[string]inference.Tensor
	onHost []string // operator types that must run on the host
}

func shapeNode(op string, in []string, out string, attrs map[string]graph.Attr) *graph.Node {
	return &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
}

func tensorAttr(t inference.Tensor) map[string]graph.Attr {
	return map[string]graph.Attr{"value": {Type: graph.AttrTensor, Tensor: t}}
}

func castTo(code int64) map[string]graph.Attr {
	return map[string]graph.Attr{"to": {Type: graph.AttrInt, Int: code}}
}

func scalar[T inference.Element](v T) inference.Tensor {
	t, err := inference.New([]int{}, []T{v})
	if err != nil {
		panic(err)
	}
	return t
}

func TestShapeOpsPlannedOnDevice(t *testing.T) {
	big := map[string]inference.Tensor{"x": check.Rand(1, -1, 1, 120, 200)}
	long := map[string]inference.Tensor{"x": check.Rand(2, -1, 1, 60000)}
	for _, c := range []shapePlanCase{
		{name: "ConstantOfShape/float32", feeds: big, nodes: []*graph.Node{
			shapeNode("Shape", []string{"x"}, "s", nil),
			shapeNode("ConstantOfShape", []string{"s"}, "y", tensorAttr(check.Floats([]int{1}, 2.5))),
		}},
		{name: "ConstantOfShape/int64", feeds: big, nodes: []*graph.Node{
			shapeNode("Shape", []string{"x"}, "s", nil),
			shapeNode("ConstantOfShape", []string{"s"}, "y", tensorAttr(check.Ints([]int{1}, -7))),
		}},
		{name: "ConstantOfShape/bool", feeds: map[string]inference.Tensor{"x": check.Rand(3, -1, 1, 300, 300)}, nodes: []*graph.Node{
			shapeNode("Shape", []string{"x"}, "s", nil),
			shapeNode("ConstantOfShape", []string{"s"}, "y", tensorAttr(check.RandOf(inference.Bool, 4, 1))),
		}},
		{name: "Range/int64", feeds: long, inits: map[string]inference.Tensor{"start": scalar[int64](-5), "delta": scalar[int64](3)},
			nodes: []*graph.Node{
				shapeNode("Shape", []string{"x"}, "limit", nil),
				shapeNode("Range", []string{"start", "limit", "delta"}, "y", nil),
			}},
		{name: "Range/float32", feeds: long, inits: map[string]inference.Tensor{"start": scalar[float32](0.5), "delta": scalar[float32](0.75)},
			nodes: []*graph.Node{
				shapeNode("Shape", []string{"x"}, "s", nil),
				shapeNode("Cast", []string{"s"}, "limit", castTo(1)),
				shapeNode("Range", []string{"start", "limit", "delta"}, "y", nil),
			}},
		{name: "Range/int32-down", feeds: long, inits: map[string]inference.Tensor{"start": scalar[int32](200000), "delta": scalar[int32](-3)},
			nodes: []*graph.Node{
				shapeNode("Shape", []string{"x"}, "s", nil),
				shapeNode("Cast", []string{"s"}, "limit", castTo(6)),
				shapeNode("Range", []string{"start", "limit", "delta"}, "y", nil),
			}},
		{name: "Gather/device-indices",
			feeds: map[string]inference.Tensor{"x": check.Rand(5, -1, 1, 4, 3), "i": check.Ints([]int{2}, 3, -4)},
			nodes: []*graph.Node{shapeNode("Gather", []string{"x", "i"}, "y", nil)}},
		{name: "GatherElements/device-indices",
			feeds: map[string]inference.Tensor{"x": check.Rand(6, -1, 1, 4, 3), "i": check.Ints([]int{1, 3}, 3, -4, 0)},
			nodes: []*graph.Node{shapeNode("GatherElements", []string{"x", "i"}, "y", nil)}},
		{name: "ScatterND/repeated-index",
			feeds: map[string]inference.Tensor{"x": check.Rand(7, -1, 1, 4, 3), "u": check.Rand(8, -1, 1, 2, 3)},
			inits: map[string]inference.Tensor{"i": check.Ints([]int{2, 1}, 1, -3)},
			nodes: []*graph.Node{shapeNode("ScatterND", []string{"x", "i", "u"}, "y", nil)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			build := func() *graph.Graph {
				g := &graph.Graph{Name: c.name, Opsets: map[string]int64{"": 17}, Initializers: map[string]inference.Tensor{},
					Nodes: c.nodes, Outputs: []graph.Value{{Name: "y"}}}
				for name, v := range c.inits {
					g.Initializers[name] = v
				}
				for _, name := range slices.Sorted(maps.Keys(c.feeds)) {
					g.Inputs = append(g.Inputs, graph.Value{Name: name, DType: c.feeds[name].DType(), Shape: c.feeds[name].Shape()})
				}
				if err := g.Sort(nil); err != nil {
					t.Fatal(err)
				}
				return g
			}
			ctx := context.Background()
			cm, err := cpu.Backend{}.Compile(build())
			if err != nil {
				t.Fatal(err)
			}
			want, err := cm.Run(ctx, c.feeds)
			if err != nil {
				t.Fatal(err)
			}
			b, dev := newSim(t, 0)
			m, err := b.Compile(build())
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Run(ctx, c.feeds)
			if err != nil {
				t.Fatal(err)
			}
			if err := check.Compare(got["y"], want["y"], 1e-6, 0); err != nil {
				t.Error(err)
			}
			if host := m.(*cuda.Model).HostNodes(); !slices.Equal(host, c.onHost) {
				t.Errorf("operators on the host: %q, want %q (%q)", host, c.onHost, m.(*cuda.Model).Stats().HostNodes)
			}
			if err := m.Close(); err != nil {
				t.Error(err)
			}
			if err := dev.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

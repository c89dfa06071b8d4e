package cpu

import (
	"context"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// A loop's body, and an If inside it, read by name what their schedules
// lay out: the body's own initializer, a value the outer graph computed,
// an outer initializer no node of the outer graph reads, the body's own
// values from inside the If. Three runs with different feeds, through one
// frame, each get their own results.
func TestScheduleScopes(t *testing.T) {
	branch := &graph.Graph{Name: "then", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{},
		Outputs: []graph.Value{{Name: "b"}},
		Nodes: []*graph.Node{ // b = acc + far: a body value and an outer initializer
			{Name: "b", OpType: "Add", Inputs: []string{"acc", "far"}, Outputs: []string{"b"}},
		}}
	body := &graph.Graph{Name: "body", Opsets: map[string]int64{"": 13},
		Initializers: map[string]inference.Tensor{"one": tensorOf(t, []int{}, float32(1))},
		Inputs:       []graph.Value{{Name: "i"}, {Name: "c"}, {Name: "v"}},
		Outputs:      []graph.Value{{Name: "c2"}, {Name: "v2"}},
		Nodes: []*graph.Node{ // v2 = (v + doubled + one) + far
			{Name: "keep", OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{Name: "acc", OpType: "Sum", Inputs: []string{"v", "doubled", "one"}, Outputs: []string{"acc"}},
			{Name: "if", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"v2"},
				Attrs: map[string]graph.Attr{"then_branch": {Type: graph.AttrGraph, Graph: branch}, "else_branch": {Type: graph.AttrGraph, Graph: branch}}},
		}}
	g := &graph.Graph{Name: "g", Opsets: map[string]int64{"": 13},
		Initializers: map[string]inference.Tensor{"far": tensorOf(t, []int{}, float32(100)), "m": tensorOf(t, []int{}, int64(3))},
		Inputs:       []graph.Value{{Name: "x"}, {Name: "v0"}},
		Outputs:      []graph.Value{{Name: "y"}, {Name: "doubled"}},
		Nodes: []*graph.Node{
			{Name: "double", OpType: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"doubled"}},
			{Name: "loop", OpType: "Loop", Inputs: []string{"m", "", "v0"}, Outputs: []string{"y"},
				Attrs: map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}}},
		}}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	m := NewModel(g)
	for _, x := range []float32{1, 2, 5} {
		out, err := m.Run(context.Background(), map[string]inference.Tensor{"x": tensorOf(t, []int{}, x), "v0": tensorOf(t, []int{}, float32(0))})
		if err != nil {
			t.Fatal(err)
		}
		want := float32(0)
		for range 3 {
			want += 2*x + 1 + 100
		}
		y, _ := inference.Data[float32](out["y"])
		d, _ := inference.Data[float32](out["doubled"])
		if !slices.Equal(y, []float32{want}) || !slices.Equal(d, []float32{2 * x}) {
			t.Errorf("x = %v: y %v, doubled %v; want %v and %v", x, y, d, want, 2*x)
		}
	}
}

// A schedule gives each value one slot, leaves the empty names of
// optional inputs and outputs none, presets the initializers (an
// overridable one too, which a feed then replaces), and marks each input's
// last reader and whether a node computed it.
func TestScheduleLayout(t *testing.T) {
	g := &graph.Graph{Name: "g", Opsets: map[string]int64{"": 13},
		Initializers: map[string]inference.Tensor{"w": tensorOf(t, []int{}, float32(2)), "k": tensorOf(t, []int{}, float32(3))},
		Inputs:       []graph.Value{{Name: "x"}},
		Overridable:  []graph.Value{{Name: "k"}},
		Outputs:      []graph.Value{{Name: "z"}},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"y"}},
			{Name: "b", OpType: "Clip", Inputs: []string{"y", "", "k"}, Outputs: []string{"z"}},
		}}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	s := newSchedule(g, nil)
	slot := func(name string) int32 { return int32(slices.Index(s.names, name)) }
	if len(s.names) != 5 || slices.Contains(s.names, "") {
		t.Fatalf("slots %q, want one each for x, k, w, y and z", s.names)
	}
	if !slices.Equal(s.feeds, []int32{slot("x"), slot("k")}) || !slices.Equal(s.outputs, []int32{slot("z")}) {
		t.Errorf("feeds %v, outputs %v", s.feeds, s.outputs)
	}
	a, b := s.steps[0], s.steps[1]
	if !slices.Equal(a.in, []int32{slot("x"), slot("w")}) || !slices.Equal(b.in, []int32{slot("y"), noSlot, slot("k")}) {
		t.Errorf("inputs' slots %v and %v", a.in, b.in)
	}
	if !slices.Equal(b.lastRead, []bool{true, false, true}) || !slices.Equal(b.computed, []bool{true, false, false}) || !a.readLater[0] || !b.readLater[0] {
		t.Errorf("node b: last reads %v, computed %v", b.lastRead, b.computed)
	}
	var preset []string
	for _, p := range s.presets {
		preset = append(preset, s.names[p.slot])
	}
	if slices.Sort(preset); !slices.Equal(preset, []string{"k", "w"}) {
		t.Errorf("presets %q, want k and w", preset)
	}
	var v values
	v.start(s, map[string]inference.Tensor{"x": tensorOf(t, []int{}, float32(1)), "k": tensorOf(t, []int{}, float32(7))}, nil)
	if k, _ := inference.Data[float32](v.tensors[slot("k")]); k[0] != 7 || v.kinds[slot("y")] != noValue {
		t.Errorf("after start: k %v (want the feed, 7), y's kind %v", k, v.kinds[slot("y")])
	}
}

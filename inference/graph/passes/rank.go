package passes

import (
	"slices"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// rankOf returns the rank value has at every run, when the graph fixes it:
// a declared input, a constant, or a value computed from such by an
// operator whose output rank follows from its inputs' ranks and constant
// attributes, through the shape arithmetic exporters write (Shape, Gather,
// Unsqueeze, Concat, ConstantOfShape, Reshape to a computed shape, Expand).
// It is what a rewrite needs to know before it moves a value into an
// operator that broadcasts differently (an attention mask).
func (x *index) rankOf(value string) (int, bool) {
	return x.rankAt(value, 0)
}

// maxRankDepth bounds the walk back through producers: a mask's rank is
// settled within a dozen nodes of its constants and inputs.
const maxRankDepth = 24

func (x *index) rankAt(value string, depth int) (int, bool) {
	if value == "" || depth > maxRankDepth {
		return 0, false
	}
	if t, ok := x.constant(value); ok {
		return t.Rank(), true
	}
	for _, vs := range [][]graph.Value{x.g.Inputs, x.g.Overridable} {
		for _, in := range vs {
			if in.Name == value {
				return len(in.Shape), in.Shape != nil
			}
		}
	}
	p := x.producer[value]
	if p == nil || p.Domain != "" || len(p.Outputs) == 0 || p.Outputs[0] != value {
		return 0, false
	}
	in := func(i int) (int, bool) { return x.rankAt(p.Input(i), depth+1) }
	switch p.OpType {
	case "Identity", "Cast", "CastLike", "Not", "Neg", "Abs", "Sqrt", "Exp", "Log", "Relu", "Sigmoid", "Tanh",
		"Erf", "Softmax", "LogSoftmax", "Trilu", "Slice", "Floor", "Ceil", "Round", "Reciprocal", "IsNaN", "IsInf":
		return in(0)
	case "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
		"And", "Or", "Xor", "Where", "Max", "Min":
		most := 0
		for i := range p.Inputs {
			r, ok := in(i)
			if !ok {
				return 0, false
			}
			most = max(most, r)
		}
		return most, len(p.Inputs) > 0
	case "MatMul":
		a, okA := in(0)
		b, okB := in(1)
		return max(a, b), okA && okB && a >= 2 && b >= 2
	case "Shape":
		return 1, true
	case "NonZero":
		return 2, true
	case "Size":
		return 0, true
	case "Transpose":
		if perm := p.Ints("perm", nil); perm != nil {
			return len(perm), true
		}
		return in(0)
	case "Gather":
		data, okD := in(0)
		idx, okI := in(1)
		return data + idx - 1, okD && okI && data >= 1
	case "Unsqueeze", "Squeeze":
		r, ok := in(0)
		axes, given := x.axes(p, 13)
		if !ok || !given {
			return 0, false
		}
		if p.OpType == "Squeeze" {
			return r - len(axes), r >= len(axes)
		}
		return r + len(axes), true
	case "Concat":
		return in(0)
	case "ConstantOfShape", "Reshape", "Expand":
		shape := p.Input(0)
		if p.OpType != "ConstantOfShape" {
			shape = p.Input(1)
		}
		n, ok := x.lengthOf(shape, depth+1)
		if !ok || p.OpType != "Expand" {
			return n, ok
		}
		r, ok := in(0)
		return max(r, n), ok
	}
	return 0, false
}

// lengthOf returns the number of elements of value, a 1-D tensor of
// integers (a shape), when the graph fixes it.
func (x *index) lengthOf(value string, depth int) (int, bool) {
	if depth > maxRankDepth {
		return 0, false
	}
	if t, ok := x.constant(value); ok {
		return t.Len(), t.Rank() == 1
	}
	p := x.producer[value]
	if p == nil || p.Domain != "" || len(p.Outputs) != 1 {
		return 0, false
	}
	switch p.OpType {
	case "Identity", "Cast", "Abs", "Neg":
		return x.lengthOf(p.Input(0), depth+1)
	case "Shape":
		r, ok := x.rankAt(p.Input(0), depth+1)
		if !ok {
			return 0, false
		}
		start, end := clampAxis(p.Int("start", 0), r), r
		if p.Has("end") {
			end = clampAxis(p.Int("end", int64(r)), r)
		}
		return max(end-start, 0), true
	case "Concat":
		sum := 0
		for _, in := range p.Inputs {
			n, ok := x.lengthOf(in, depth+1)
			if !ok {
				return 0, false
			}
			sum += n
		}
		return sum, len(p.Inputs) > 0
	case "Unsqueeze": // a scalar made a 1-element vector
		r, ok := x.rankAt(p.Input(0), depth+1)
		axes, given := x.axes(p, 13)
		return 1, ok && given && r == 0 && slices.Equal(axes, []int64{0})
	case "Gather": // elements of a shape, by constant indices
		idx, ok := x.constant(p.Input(1))
		r, okR := x.rankAt(p.Input(0), depth+1)
		return idx.Len(), ok && okR && r == 1 && idx.Rank() == 1
	case "Add", "Sub", "Mul", "Div", "Max", "Min", "Where", "Equal":
		// Elementwise over shapes of one length, or a shape and scalars.
		n, found := 0, false
		for _, in := range p.Inputs {
			if r, ok := x.rankAt(in, depth+1); ok && r == 0 {
				continue
			}
			m, ok := x.lengthOf(in, depth+1)
			if !ok || (found && m != n && m != 1 && n != 1) {
				return 0, false
			}
			n, found = max(n, m), true
		}
		return n, found
	}
	return 0, false
}

// axes returns the constant axes of a Squeeze- or Unsqueeze-like node p:
// its attribute before opset since, its input 1 from then on.
func (x *index) axes(p *graph.Node, since int64) ([]int64, bool) {
	if x.g.Opset() < since {
		return p.Ints("axes", nil), p.Has("axes")
	}
	t, ok := x.constant(p.Input(1))
	if !ok {
		return nil, false
	}
	v, err := opsem.Int64s(t)
	return v, err == nil
}

// clampAxis is a Shape start or end, negative from the end, clamped to
// [0, r].
func clampAxis(a int64, r int) int {
	if a < 0 {
		a += int64(r)
	}
	return int(min(max(a, 0), int64(r)))
}

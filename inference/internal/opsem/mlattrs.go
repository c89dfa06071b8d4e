package opsem

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The attributes of the ai.onnx.ml operators other than the tree ensembles
// and ZipMap (ONNX's docs/Operators-ml), read and checked once per node:
// each operator's ...Of function returns what its kernel computes with, or
// an error wrapping inference.ErrBadModel that names the node and the
// attribute. The checks bound every size by the attributes' own lengths (a
// count an attribute declares must match the lists the file holds), so a
// small file cannot make a kernel allocate or loop much: what the inputs
// then ask for is sized through the run's budget.

// mlAttrs reads the attributes of an ai.onnx.ml node; the first attribute
// found malformed is kept in err, and later reads return zero values.
type mlAttrs struct {
	n   Node
	err error
}

// bad records that attribute name is malformed, unless an error is
// recorded already.
func (a *mlAttrs) bad(name, format string, args ...any) {
	if a.err == nil {
		a.err = mlBad(a.n, name, format, args...)
	}
}

// mlBad is the error of node n's attribute name, wrapping
// inference.ErrBadModel.
func mlBad(n Node, name, format string, args ...any) error {
	return fmt.Errorf("node %v: attribute %s: %s: %w", n.Node, name, fmt.Sprintf(format, args...), inference.ErrBadModel)
}

// attr returns attribute name when the node has it as one of kinds, and
// records an error when it has it as another kind.
func (a *mlAttrs) attr(name string, kinds ...graph.AttrType) (graph.Attr, bool) {
	v, ok := a.n.Attrs[name]
	if !ok {
		return v, false
	}
	for _, k := range kinds {
		if v.Type == k {
			return v, true
		}
	}
	a.bad(name, "is %s, want %s", attrTypeName(v.Type), attrTypeName(kinds[0]))
	return v, false
}

// attrTypeName is ONNX's name of an attribute type (AttributeProto's).
func attrTypeName(t graph.AttrType) string {
	names := []string{"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS", "TENSORS", "GRAPHS"}
	if int(t) >= 0 && int(t) < len(names) {
		return names[t]
	}
	return fmt.Sprintf("attribute type %d", int(t))
}

func (a *mlAttrs) has(name string) bool {
	_, ok := a.n.Attrs[name]
	return ok
}

// floats returns a list of floats (one float is a list of one), nil when
// the node lacks it.
func (a *mlAttrs) floats(name string) []float32 {
	v, ok := a.attr(name, graph.AttrFloats, graph.AttrFloat)
	switch {
	case !ok:
		return nil
	case v.Type == graph.AttrFloat:
		return []float32{v.Float}
	}
	return v.Floats
}

// ints returns a list of integers (one integer is a list of one), nil when
// the node lacks it.
func (a *mlAttrs) ints(name string) []int64 {
	v, ok := a.attr(name, graph.AttrInts, graph.AttrInt)
	switch {
	case !ok:
		return nil
	case v.Type == graph.AttrInt:
		return []int64{v.Int}
	}
	return v.Ints
}

// strings returns a list of strings (one string is a list of one), nil
// when the node lacks it.
func (a *mlAttrs) strings(name string) []string {
	v, ok := a.attr(name, graph.AttrStrings, graph.AttrString)
	switch {
	case !ok:
		return nil
	case v.Type == graph.AttrString:
		return []string{v.String}
	}
	return v.Strings
}

func (a *mlAttrs) int(name string, def int64) int64 {
	if v, ok := a.attr(name, graph.AttrInt); ok {
		return v.Int
	}
	return def
}

func (a *mlAttrs) float(name string, def float32) float32 {
	if v, ok := a.attr(name, graph.AttrFloat); ok {
		return v.Float
	}
	return def
}

func (a *mlAttrs) str(name, def string) string {
	if v, ok := a.attr(name, graph.AttrString); ok {
		return v.String
	}
	return def
}

// tensor returns a tensor attribute, ok false when the node lacks it.
func (a *mlAttrs) tensor(name string) (inference.Tensor, bool) {
	v, ok := a.attr(name, graph.AttrTensor)
	return v.Tensor, ok
}

// choice returns string attribute name (def when absent), which must be one
// of names: its index in names.
func (a *mlAttrs) choice(name, def string, names ...string) int {
	s := a.str(name, def)
	for i, c := range names {
		if s == c {
			return i
		}
	}
	a.bad(name, "%q, want one of %q", s, names)
	return 0
}

// classLabels reads classlabels_ints and classlabels_strings, of which a
// classifier has one: the labels as integers or as strings, and their
// count. Both given is an error; none gives 0 labels.
func (a *mlAttrs) classLabels() (ints []int64, strs []string, count int) {
	ints, strs = a.ints("classlabels_ints"), a.strings("classlabels_strings")
	if len(ints) > 0 && len(strs) > 0 {
		a.bad("classlabels_strings", "given with classlabels_ints; a classifier has one of them")
	}
	return ints, strs, max(len(ints), len(strs))
}

// product returns a·b, or -1 when it overflows int or either is negative.
func product(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	if a != 0 && b > math.MaxInt/a {
		return -1
	}
	return a * b
}

// Labels are a classifier's class labels: int64s, or strings when the node
// has classlabels_strings (its Y output is then a string tensor).
type Labels struct {
	Ints    []int64
	Strings []string
}

// Len is the number of labels.
func (l Labels) Len() int { return max(len(l.Ints), len(l.Strings)) }

// MLMatrix returns the rows and columns of x as the ai.onnx.ml models read
// it: [N, C] as N rows of C, [C] as one row; another rank is an error
// wrapping inference.ErrShape.
func MLMatrix(x inference.Tensor) (rows, cols int, err error) {
	switch x.Rank() {
	case 1:
		return 1, x.Dim(0), nil
	case 2:
		return x.Dim(0), x.Dim(1), nil
	}
	return 0, 0, fmt.Errorf("input %v, want shape [N, C] or [C]: %w", x, inference.ErrShape)
}

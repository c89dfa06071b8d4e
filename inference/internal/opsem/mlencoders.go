package opsem

import (
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
)

// The ai.onnx.ml encoders: OneHotEncoder, CategoryMapper and LabelEncoder
// (versions 1, 2 and 4), each with its lookup tables built once per node.

// OneHotEncoder is a OneHotEncoder node: the output has X's shape and one
// more axis of Categories columns, 1 at the category's column and 0
// elsewhere. Strings are looked up in Strings (cats_strings); numbers,
// truncated to integers, in Ints (cats_int64s). A category listed twice
// has its last column (as in ONNX Runtime). A value of no category gives
// a row of zeros when Zeros is set, and is an error otherwise.
type OneHotEncoder struct {
	Ints       map[int64]int
	Strings    map[string]int
	Categories int
	Zeros      bool
}

// OneHotEncoderOf reads and checks a OneHotEncoder node's attributes.
func OneHotEncoderOf(n Node) (*OneHotEncoder, error) {
	a := mlAttrs{n: n}
	ints, strs := a.ints("cats_int64s"), a.strings("cats_strings")
	e := &OneHotEncoder{Zeros: a.int("zeros", 1) != 0}
	switch {
	case a.err != nil:
		return nil, a.err
	case len(ints) > 0 && len(strs) > 0:
		return nil, mlBad(n, "cats_strings", "given with cats_int64s; a OneHotEncoder has one of them")
	case len(ints) > 0:
		e.Ints = make(map[int64]int, len(ints))
		for i, c := range ints {
			e.Ints[c] = i
		}
		e.Categories = len(ints)
	case len(strs) > 0:
		e.Strings = make(map[string]int, len(strs))
		for i, c := range strs {
			e.Strings[c] = i
		}
		e.Categories = len(strs)
	default:
		return nil, mlBad(n, "cats_int64s", "missing or empty, and so is cats_strings")
	}
	return e, nil
}

// CategoryMapper is a CategoryMapper node: a string input maps to int64s
// through ToInt (cats_strings[i] → cats_int64s[i]), DefaultInt where it
// is not found; an int64 input maps to strings through ToString,
// DefaultString where not found. A key listed twice maps as its last
// entry says (as in ONNX Runtime).
type CategoryMapper struct {
	ToInt         map[string]int64
	ToString      map[int64]string
	DefaultInt    int64
	DefaultString string
}

// CategoryMapperOf reads and checks a CategoryMapper node's attributes.
func CategoryMapperOf(n Node) (*CategoryMapper, error) {
	a := mlAttrs{n: n}
	ints, strs := a.ints("cats_int64s"), a.strings("cats_strings")
	m := &CategoryMapper{DefaultInt: a.int("default_int64", -1), DefaultString: a.str("default_string", "_Unused")}
	if a.err != nil {
		return nil, a.err
	}
	if len(ints) != len(strs) {
		return nil, mlBad(n, "cats_int64s", "%d values, cats_strings has %d", len(ints), len(strs))
	}
	m.ToInt = make(map[string]int64, len(strs))
	m.ToString = make(map[int64]string, len(ints))
	for i, s := range strs {
		m.ToInt[s] = ints[i]
		m.ToString[ints[i]] = s
	}
	return m, nil
}

// LabelEncoder is a LabelEncoder node.
//
// Version 1 (classes_strings) maps by the input's type: a string to its
// index in Classes (the last of equal ones, as in ONNX Runtime), or
// DefaultInt; an int64 i to Classes[i], or DefaultString when i is out of
// range.
//
// Versions 2 and 4 map keys (keys_strings, keys_int64s, keys_floats or,
// in version 4, keys_tensor) to the values at the same index (values_*
// or values_tensor), and every other input to Default: default_tensor,
// else the default_* attribute of the values' type (default_int64 for
// every integer type, default_float for both float types), else "_Unused",
// −1 or −0.0. The input's element type is the keys'. Float keys match by
// value (0 and −0 alike), and a NaN key matches every NaN. A key listed
// twice with different values is refused: the spec has the last one win
// and ONNX Runtime the first.
type LabelEncoder struct {
	Version1      bool
	Classes       []string
	ClassIndex    map[string]int
	DefaultInt    int64
	DefaultString string

	Keys    inference.DType // the type of the keys and of the input
	Values  inference.Tensor
	Default inference.Tensor // one element of Values' type

	strKeys   map[string]int
	intKeys   map[int64]int
	floatKeys map[float64]int
	nanKey    int // the index of the NaN key, or -1
}

// Lookup sets offs[i] to the index in Values of the key x holds at element
// i, or to -1 where it holds no key; x is of the keys' type.
func (e *LabelEncoder) Lookup(x inference.Tensor, offs []int) {
	switch d := elementsOf(x).(type) {
	case []string:
		for i, v := range d {
			k, ok := e.strKeys[v]
			offs[i] = found(k, ok)
		}
	case []int64:
		for i, v := range d {
			k, ok := e.intKeys[v]
			offs[i] = found(k, ok)
		}
	case []int32:
		for i, v := range d {
			k, ok := e.intKeys[int64(v)]
			offs[i] = found(k, ok)
		}
	case []int16:
		for i, v := range d {
			k, ok := e.intKeys[int64(v)]
			offs[i] = found(k, ok)
		}
	case []float32:
		for i, v := range d {
			offs[i] = e.floatIndex(float64(v))
		}
	case []float64:
		for i, v := range d {
			offs[i] = e.floatIndex(v)
		}
	}
}

// found is a map lookup's index, or -1 when the key was not found.
func found(i int, ok bool) int {
	if !ok {
		return -1
	}
	return i
}

func (e *LabelEncoder) floatIndex(v float64) int {
	if v != v {
		return e.nanKey
	}
	k, ok := e.floatKeys[v]
	return found(k, ok)
}

// labelEncoderTypes are the element types of LabelEncoder-4's keys and
// values.
var labelEncoderTypes = []inference.DType{inference.String, inference.Int64, inference.Float32, inference.Int32, inference.Int16, inference.Float64}

// LabelEncoderOf reads and checks a LabelEncoder node's attributes. Its
// attributes say its version: keys_* are versions 2 and 4, classes_strings
// version 1, and a node with neither is of its opset (the version of
// ai.onnx.ml the model imports; a caller that does not know it, as RunNode,
// may give another).
func LabelEncoderOf(n Node) (*LabelEncoder, error) {
	a := mlAttrs{n: n}
	hasKeys := a.has("keys_strings") || a.has("keys_int64s") || a.has("keys_floats") || a.has("keys_tensor")
	if !hasKeys && (n.Opset == 1 || a.has("classes_strings")) {
		e := &LabelEncoder{Version1: true, Classes: a.strings("classes_strings"),
			DefaultInt: a.int("default_int64", -1), DefaultString: a.str("default_string", "_Unused")}
		if a.err != nil {
			return nil, a.err
		}
		e.ClassIndex = make(map[string]int, len(e.Classes))
		for i, c := range e.Classes {
			e.ClassIndex[c] = i
		}
		return e, nil
	}
	keysAttr, keys := a.labelTensor("keys")
	valuesAttr, values := a.labelTensor("values")
	if a.err != nil {
		return nil, a.err
	}
	if keys.Len() != values.Len() {
		return nil, mlBad(n, valuesAttr, "%d values for %d keys (%s)", values.Len(), keys.Len(), keysAttr)
	}
	e := &LabelEncoder{Keys: keys.DType(), Values: values, nanKey: -1}
	if err := e.index(n, keysAttr, keys); err != nil {
		return nil, err
	}
	def, err := a.labelDefault(values.DType())
	if err != nil {
		return nil, err
	}
	e.Default = def
	return e, nil
}

// labelTensor reads the keys or the values of LabelEncoder-2 or 4 (what is
// "keys" or "values"), from its one attribute of the four: its name and its
// elements as a tensor.
func (a *mlAttrs) labelTensor(what string) (string, inference.Tensor) {
	var found []string
	var t inference.Tensor
	var err error
	if v := a.strings(what + "_strings"); a.has(what + "_strings") {
		found = append(found, what+"_strings")
		t, err = inference.New([]int{len(v)}, v)
	}
	if v := a.ints(what + "_int64s"); a.has(what + "_int64s") {
		found = append(found, what+"_int64s")
		t, err = inference.New([]int{len(v)}, v)
	}
	if v := a.floats(what + "_floats"); a.has(what + "_floats") {
		found = append(found, what+"_floats")
		t, err = inference.New([]int{len(v)}, v)
	}
	if v, ok := a.tensor(what + "_tensor"); ok {
		found = append(found, what+"_tensor")
		if !slices.Contains(labelEncoderTypes, v.DType()) {
			a.bad(what+"_tensor", "of element type %v, want string, int64, float32, int32, int16 or float64", v.DType())
		}
		t = v
	}
	switch {
	case a.err != nil:
	case err != nil:
		a.bad(found[len(found)-1], "%v", err)
	case len(found) == 0:
		a.bad(what+"_strings", "missing, and so are %s_int64s, %s_floats and %s_tensor", what, what, what)
	case len(found) > 1:
		a.bad(found[1], "given with %s; a LabelEncoder has one of them", found[0])
	}
	if len(found) == 0 {
		return what + "_*", t
	}
	return found[0], t
}

// elementsOf returns t's elements as a slice of their Go type, for the
// types a LabelEncoder maps.
func elementsOf(t inference.Tensor) any {
	switch t.DType() {
	case inference.String:
		d, _ := inference.Data[string](t)
		return d
	case inference.Int64:
		d, _ := inference.Data[int64](t)
		return d
	case inference.Int32:
		d, _ := inference.Data[int32](t)
		return d
	case inference.Int16:
		d, _ := inference.Data[int16](t)
		return d
	case inference.Float32:
		d, _ := inference.Data[float32](t)
		return d
	case inference.Float64:
		d, _ := inference.Data[float64](t)
		return d
	}
	return nil
}

// index builds the lookup table of keys, the tensor of attribute
// keysAttr, refusing a key listed twice with different values.
func (e *LabelEncoder) index(n Node, keysAttr string, keys inference.Tensor) error {
	seen := func(i, j int) error {
		if !sameElement(e.Values, i, j) {
			return mlBad(n, keysAttr, "key %d repeats key %d with another value", j, i)
		}
		return nil
	}
	switch d := elementsOf(keys).(type) {
	case []string:
		e.strKeys = make(map[string]int, len(d))
		for j, k := range d {
			if i, dup := e.strKeys[k]; dup {
				if err := seen(i, j); err != nil {
					return err
				}
			}
			e.strKeys[k] = j
		}
		return nil
	case []float32, []float64:
		e.floatKeys = make(map[float64]int, keys.Len())
		for j := range keys.Len() {
			k := floatElement(d, j)
			i, dup := e.floatKeys[k]
			if k != k {
				i, dup = e.nanKey, e.nanKey >= 0
			}
			if dup {
				if err := seen(i, j); err != nil {
					return err
				}
			}
			if k != k {
				e.nanKey = j
			} else {
				e.floatKeys[k] = j
			}
		}
		return nil
	}
	e.intKeys = make(map[int64]int, keys.Len())
	for j := range keys.Len() {
		k := intElement(elementsOf(keys), j)
		if i, dup := e.intKeys[k]; dup {
			if err := seen(i, j); err != nil {
				return err
			}
		}
		e.intKeys[k] = j
	}
	return nil
}

func floatElement(d any, i int) float64 {
	if f, ok := d.([]float32); ok {
		return float64(f[i])
	}
	return d.([]float64)[i]
}

func intElement(d any, i int) int64 {
	switch d := d.(type) {
	case []int64:
		return d[i]
	case []int32:
		return int64(d[i])
	case []int16:
		return int64(d[i])
	}
	return 0
}

// sameElement reports whether elements i and j of t are equal (bit for
// bit, so that NaN equals NaN).
func sameElement(t inference.Tensor, i, j int) bool {
	switch d := elementsOf(t).(type) {
	case []string:
		return d[i] == d[j]
	case []float32:
		return math.Float32bits(d[i]) == math.Float32bits(d[j])
	case []float64:
		return math.Float64bits(d[i]) == math.Float64bits(d[j])
	}
	return intElement(elementsOf(t), i) == intElement(elementsOf(t), j)
}

// labelDefault reads a LabelEncoder's default, of element type values.
func (a *mlAttrs) labelDefault(values inference.DType) (inference.Tensor, error) {
	n := a.n
	if t, ok := a.tensor("default_tensor"); ok {
		switch {
		case t.DType() != values:
			return t, mlBad(n, "default_tensor", "of element type %v, the values are %v", t.DType(), values)
		case t.Len() != 1:
			return t, mlBad(n, "default_tensor", "%d elements, want 1", t.Len())
		}
		return t, nil
	}
	if a.err != nil {
		return inference.Tensor{}, a.err
	}
	t, err := a.namedDefault(values)
	if a.err != nil {
		return t, a.err
	}
	return t, err
}

// namedDefault is labelDefault from the default_* attribute of the values'
// type.
func (a *mlAttrs) namedDefault(values inference.DType) (inference.Tensor, error) {
	one := []int{1}
	negZero := float32(math.Copysign(0, -1))
	switch values {
	case inference.String:
		return inference.New(one, []string{a.str("default_string", "_Unused")})
	case inference.Float32:
		return inference.New(one, []float32{a.float("default_float", negZero)})
	case inference.Float64:
		return inference.New(one, []float64{float64(a.float("default_float", negZero))})
	}
	v := a.int("default_int64", -1)
	switch values {
	case inference.Int64:
		return inference.New(one, []int64{v})
	case inference.Int32:
		if v == int64(int32(v)) {
			return inference.New(one, []int32{int32(v)})
		}
	case inference.Int16:
		if v == int64(int16(v)) {
			return inference.New(one, []int16{int16(v)})
		}
	}
	return inference.Tensor{}, mlBad(a.n, "default_int64", "%d, out of the range of the values' type %v", v, values)
}

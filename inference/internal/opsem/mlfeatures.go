package opsem

import (
	"math"
	"slices"
)

// The ai.onnx.ml operators that transform feature columns: Scaler,
// Normalizer, Binarizer, Imputer and FeatureVectorizer (ArrayFeatureExtractor
// has no attributes).

// Scaler is a Scaler node: y = (x − Offset[f])·Scale[f] for x in feature
// (last-axis column) f, or Offset[0] and Scale[0] for every feature when
// they hold one value each. A node without offset has offsets 0, one
// without scale scales 1.
type Scaler struct {
	Offset, Scale []float32 // of equal length, at least 1
}

// ScalerOf reads and checks a Scaler node's attributes.
func ScalerOf(n Node) (*Scaler, error) {
	a := mlAttrs{n: n}
	s := &Scaler{Offset: a.floats("offset"), Scale: a.floats("scale")}
	if a.err != nil {
		return nil, a.err
	}
	switch {
	case len(s.Offset) == 0 && len(s.Scale) == 0:
		return nil, mlBad(n, "scale", "missing, and so is offset")
	case len(s.Offset) == 0:
		s.Offset = make([]float32, len(s.Scale))
	case len(s.Scale) == 0:
		s.Scale = slices.Repeat([]float32{1}, len(s.Offset))
	case len(s.Offset) != len(s.Scale):
		return nil, mlBad(n, "scale", "%d values, offset has %d", len(s.Scale), len(s.Offset))
	}
	return s, nil
}

// The norms of Normalizer, in the order of normNames.
const (
	NormMax = iota
	NormL1
	NormL2
)

var normNames = []string{"MAX", "L1", "L2"}

// Normalizer is a Normalizer node: each row x of an [N, C] or [C] input is
// divided by a norm m, and kept as it is where m is 0. As ONNX Runtime
// computes them (normalizer.cc): MAX's m is the row's largest value (not
// its largest magnitude), L1's is Σ|x|, and L2 gives sign(x)·√(x²/Σx²).
type Normalizer struct {
	Norm int // NormMax, NormL1 or NormL2
}

// NormalizerOf reads and checks a Normalizer node's attributes.
func NormalizerOf(n Node) (*Normalizer, error) {
	a := mlAttrs{n: n}
	z := &Normalizer{Norm: a.choice("norm", "MAX", normNames...)}
	return z, a.err
}

// Binarizer is a Binarizer node: y is 1 where x > Threshold and 0
// elsewhere, in x's type; a NaN x is an error, as in ONNX Runtime. The
// default threshold is the spec's, 0 (ONNX Runtime's is 1).
type Binarizer struct {
	Threshold float32
}

// BinarizerOf reads and checks a Binarizer node's attributes.
func BinarizerOf(n Node) (*Binarizer, error) {
	a := mlAttrs{n: n}
	b := &Binarizer{Threshold: a.float("threshold", 0)}
	return b, a.err
}

// Imputer is an Imputer node: an x equal to the replaced value (any NaN
// when it is NaN) becomes the imputed value of its feature (last-axis
// column), or the one imputed value for all features. Floats serve float32
// and float64 inputs with ReplacedFloat, Ints int64 and int32 inputs with
// ReplacedInt; a node has one of them.
type Imputer struct {
	Floats        []float32
	Ints          []int64
	ReplacedFloat float32
	ReplacedInt   int64
}

// Values is the number of imputed values.
func (m *Imputer) Values() int { return max(len(m.Floats), len(m.Ints)) }

// ImputerOf reads and checks an Imputer node's attributes.
func ImputerOf(n Node) (*Imputer, error) {
	a := mlAttrs{n: n}
	m := &Imputer{Floats: a.floats("imputed_value_floats"), Ints: a.ints("imputed_value_int64s"),
		ReplacedFloat: a.float("replaced_value_float", 0), ReplacedInt: a.int("replaced_value_int64", 0)}
	if a.err != nil {
		return nil, a.err
	}
	switch {
	case len(m.Floats) > 0 && len(m.Ints) > 0:
		return nil, mlBad(n, "imputed_value_int64s", "given with imputed_value_floats; an Imputer has one of them")
	case len(m.Floats) == 0 && len(m.Ints) == 0:
		return nil, mlBad(n, "imputed_value_floats", "missing, and so is imputed_value_int64s")
	}
	return m, nil
}

// MaxFeatures is the most columns FeatureVectorizer's inputdimensions may
// add up to, 2³¹−1: a model that declares more is malformed, whatever its
// inputs.
const MaxFeatures = math.MaxInt32

// FeatureVectorizer is a FeatureVectorizer node: its output is [N, Total],
// input i filling Dims[i] columns after those of the inputs before it with
// its row's first Dims[i] values ([N, …] read as N rows, [C] as one), and
// zeros where it has fewer.
type FeatureVectorizer struct {
	Dims  []int
	Total int
}

// FeatureVectorizerOf reads and checks a FeatureVectorizer node's
// attributes: one dimension per input, none negative, at most MaxFeatures
// in all.
func FeatureVectorizerOf(n Node) (*FeatureVectorizer, error) {
	a := mlAttrs{n: n}
	dims := a.ints("inputdimensions")
	if a.err != nil {
		return nil, a.err
	}
	if len(dims) != len(n.Inputs) {
		return nil, mlBad(n, "inputdimensions", "%d values for %d inputs", len(dims), len(n.Inputs))
	}
	v := &FeatureVectorizer{Dims: make([]int, len(dims))}
	for i, d := range dims {
		if d < 0 || d > int64(MaxFeatures-v.Total) {
			return nil, mlBad(n, "inputdimensions", "element %d is %d: want 0 or more, and at most %d columns in all", i, d, MaxFeatures)
		}
		v.Dims[i] = int(d)
		v.Total += int(d)
	}
	return v, nil
}

package hostile_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// mlModel is a model of the one ai.onnx.ml node n (ai.onnx.ml 2), whose
// output y is of element type out; inputs are the graph inputs.
func mlModel(n *onnxpb.NodeProto, out onnxpb.TensorProto_DataType, inputs ...*onnxpb.ValueInfoProto) *onnxpb.ModelProto {
	n.Domain = "ai.onnx.ml"
	m := single(n, out, inputs)
	m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: "ai.onnx.ml", Version: 2})
	return m
}

func floatsAttr(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_FLOATS, Floats: v}
}

func stringsAttr(name string, v ...string) *onnxpb.AttributeProto {
	b := make([][]byte, len(v))
	for i, s := range v {
		b[i] = []byte(s)
	}
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_STRINGS, Strings: b}
}

// TestMLAttributesRefused: an ai.onnx.ml node whose attributes disagree
// (counts a tiny file declares, 10¹² support vectors or columns; lists of
// different lengths; a key mapped twice) fails at load with
// inference.ErrBadModel naming the node and the attribute, in bounded time
// and memory, without a panic.
func TestMLAttributesRefused(t *testing.T) {
	x := info("x", f32, -1, 2)
	s := info("x", onnxpb.TensorProto_STRING, -1)
	cases := []struct {
		name, attr string
		model      *onnxpb.ModelProto
	}{
		{"SVMClassifier_1e12_vectors", "vectors_per_class", mlModel(op("svm", "SVMClassifier", names("x"),
			intsAttr("vectors_per_class", 1e12, 1e12), floatsAttr("support_vectors", 1, 2), floatsAttr("coefficients", 1, 1),
			floatsAttr("rho", 0), intsAttr("classlabels_ints", 0, 1)), i64, x)},
		{"SVMRegressor_1e12_supports", "coefficients", mlModel(op("svm", "SVMRegressor", names("x"),
			intAttr("n_supports", 1e12), floatsAttr("support_vectors", 1, 2), floatsAttr("coefficients", 1), floatsAttr("rho", 0)), f32, x)},
		{"FeatureVectorizer_1e12_columns", "inputdimensions", mlModel(op("fv", "FeatureVectorizer", names("x"),
			intsAttr("inputdimensions", 1e12)), f32, x)},
		{"LinearClassifier_coefficients", "coefficients", mlModel(op("lc", "LinearClassifier", names("x"),
			floatsAttr("coefficients", 1, 2, 3), floatsAttr("intercepts", 0, 0), intsAttr("classlabels_ints", 0, 1)), i64, x)},
		{"LabelEncoder_lengths", "values_int64s", mlModel(op("le", "LabelEncoder", names("x"),
			stringsAttr("keys_strings", "a", "b", "c"), intsAttr("values_int64s", 1, 2)), i64, s)},
		{"LabelEncoder_key_twice", "keys_strings", mlModel(op("le", "LabelEncoder", names("x"),
			stringsAttr("keys_strings", "a", "a"), intsAttr("values_int64s", 1, 2)), i64, s)},
		{"CategoryMapper_lengths", "cats_int64s", mlModel(op("cm", "CategoryMapper", names("x"),
			stringsAttr("cats_strings", "a"), intsAttr("cats_int64s", 1, 2)), i64, s)},
	}
	for _, c := range cases {
		isolate(t, c.name, func(t *testing.T) {
			err := loadErr(t, write(t, c.model), std)
			if !errors.Is(err, inference.ErrBadModel) {
				t.Fatalf("load: %v, want an error wrapping inference.ErrBadModel", err)
			}
			node := c.model.Graph.Node[0].Name
			wantNamed(t, err, node)
			if !strings.Contains(err.Error(), "attribute "+c.attr) {
				t.Errorf("load: %v, want it to name attribute %s", err, c.attr)
			}
		})
	}
}

// TestMLOutputBomb: a FeatureVectorizer of 2³¹−1 columns is legal, and
// 1,000 rows ask for 8 TB: the node fails with a ResourceError before
// allocating.
func TestMLOutputBomb(t *testing.T) {
	isolate(t, "FeatureVectorizer_2e31_columns", func(t *testing.T) {
		m := mlModel(op("bomb", "FeatureVectorizer", names("x"), intsAttr("inputdimensions", math.MaxInt32)), f32, info("x", f32, -1, 1))
		out, err := run(t, std, m, feeds{"x": ones(1000, 1)})
		wantFailed(t, out, err)
		wantExhausted(t, err, std, "bomb")
	})
}

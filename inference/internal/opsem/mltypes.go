package opsem

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// mlOutputDTypes fills out, the element types of the outputs of n, an
// operator of ai.onnx.ml whose first input has type first, as ONNX's
// specification of that domain (docs/Operators-ml in onnx/onnx) gives
// them: the classifiers' labels are strings when the node has
// classlabels_strings and int64 otherwise, their scores float32; the
// regressors, Scaler, Normalizer, OneHotEncoder and
// FeatureVectorizer make float32; LabelEncoder and CategoryMapper make the
// type of the values they map to (LabelEncoder-1, which has none, makes
// int64 of strings and strings of int64); TreeEnsemble (ml 5) its input's;
// the rest (Binarizer, Imputer, ArrayFeatureExtractor) keep their input's.
// ZipMap's output is a sequence of maps, no tensor: 0.
func mlOutputDTypes(n Node, first inference.DType, out []inference.DType) []inference.DType {
	all := func(d inference.DType) []inference.DType {
		for i := range out {
			out[i] = d
		}
		return out
	}
	has := func(name string) bool { _, ok := n.Attrs[name]; return ok }
	switch n.OpType {
	case "TreeEnsembleClassifier", "LinearClassifier", "SVMClassifier":
		all(inference.Float32)
		if len(out) > 0 {
			out[0] = inference.Int64
			if has("classlabels_strings") {
				out[0] = inference.String
			}
		}
		return out
	case "TreeEnsembleRegressor", "LinearRegressor", "SVMRegressor", "Scaler", "Normalizer", "OneHotEncoder", "FeatureVectorizer":
		return all(inference.Float32)
	case "LabelEncoder":
		switch {
		case has("values_strings"):
			return all(inference.String)
		case has("values_int64s"):
			return all(inference.Int64)
		case has("values_floats"):
			return all(inference.Float32)
		case has("values_tensor") && n.Attrs["values_tensor"].Type == graph.AttrTensor:
			return all(n.Attrs["values_tensor"].Tensor.DType())
		}
		// LabelEncoder-1 (classes_strings): strings to int64s and back.
		if first == inference.String {
			return all(inference.Int64)
		}
		return all(inference.String)
	case "CategoryMapper":
		if first == inference.String {
			return all(inference.Int64)
		}
		return all(inference.String)
	case "ZipMap", "DictVectorizer":
		return all(0)
	}
	return all(first)
}

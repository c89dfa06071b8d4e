package cpu

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// The ai.onnx.ml operators of ops_ml.go, each run as a one-node model
// compiled by the CPU backend (so the attributes go through Check and
// prepare), on small inputs whose expected outputs are worked out by hand
// from ONNX's docs/Operators-ml and, where it is silent, ONNX Runtime's
// kernels. Floats are held to rtol 1e-4, atol 1e-5 unless a test says
// otherwise.

// mlGraph is a model of one node of ai.onnx.ml operator op at version
// version, reading inputs x0, x1, … and writing outputs y0, y1, ….
func mlGraph(op string, version int64, attrs map[string]graph.Attr, inputs, outputs int) *graph.Graph {
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	g := &graph.Graph{Name: "g", Opsets: map[string]int64{"": 15, MLDomain: version}, Initializers: map[string]inference.Tensor{}}
	n := &graph.Node{Name: "n", OpType: op, Domain: MLDomain, Attrs: attrs}
	for i := range inputs {
		n.Inputs = append(n.Inputs, "x"+strconv.Itoa(i))
		g.Inputs = append(g.Inputs, graph.Value{Name: n.Inputs[i]})
	}
	for i := range outputs {
		n.Outputs = append(n.Outputs, "y"+strconv.Itoa(i))
		g.Outputs = append(g.Outputs, graph.Value{Name: n.Outputs[i]})
	}
	g.Nodes = []*graph.Node{n}
	return g
}

// mlRunErr compiles mlGraph(op, version, attrs) with outputs outputs, runs
// it on in, and returns its outputs in order.
func mlRunErr(t *testing.T, op string, version int64, attrs map[string]graph.Attr, outputs int, in ...inference.Tensor) ([]inference.Tensor, error) {
	t.Helper()
	g := mlGraph(op, version, attrs, len(in), outputs)
	feeds := map[string]inference.Tensor{}
	for i, x := range in {
		feeds[g.Inputs[i].Name] = x
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	out, err := compileRun(t, typed(g, feeds), feeds)
	if err != nil {
		return nil, err
	}
	res := make([]inference.Tensor, outputs)
	for i := range res {
		res[i] = out["y"+strconv.Itoa(i)]
	}
	return res, nil
}

// mlRun is mlRunErr failing the test on an error.
func mlRun(t *testing.T, op string, version int64, attrs map[string]graph.Attr, outputs int, in ...inference.Tensor) []inference.Tensor {
	t.Helper()
	out, err := mlRunErr(t, op, version, attrs, outputs, in...)
	if err != nil {
		t.Fatalf("%s-%d: %v", op, version, err)
	}
	return out
}

// wantErr asserts err wraps target and mentions each of words.
func wantErr(t *testing.T, what string, err, target error, words ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one wrapping %v", what, err, target)
		return
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not mention %q", what, err, w)
		}
	}
}

func attrTensor(x inference.Tensor) graph.Attr { return graph.Attr{Type: graph.AttrTensor, Tensor: x} }

func f32s(t *testing.T, shape []int, v ...float32) inference.Tensor { return tensorOf(t, shape, v...) }

var ln3 = float32(math.Log(3))

// Each post_transform on a row of two scores, and on a row of one: a
// LinearRegressor of identity coefficients passes its input through.
//
//	LOGISTIC(0, ln 3)     = (1/2, 3/4)
//	SOFTMAX(0, ln 3)      = (1/4, 3/4)
//	SOFTMAX_ZERO(0, ln 3) = (0, 1): the zero score stays 0, out of the sum
//	PROBIT(1/2, Φ(1))     = (0, 1), to the 2·10⁻³ of Winitzki's erf⁻¹
//
// A row of one score is transformed by PROBIT only (ONNX Runtime's rule).
func TestMLPostTransforms(t *testing.T) {
	identity := attrFloats(1, 0, 0, 1)
	for _, tc := range []struct {
		post string
		x    []float32
		want []float32
		tol  float64
	}{
		{"NONE", []float32{0, ln3}, []float32{0, ln3}, 1e-5},
		{"LOGISTIC", []float32{0, ln3}, []float32{0.5, 0.75}, 1e-5},
		{"SOFTMAX", []float32{0, ln3}, []float32{0.25, 0.75}, 1e-5},
		{"SOFTMAX_ZERO", []float32{0, ln3}, []float32{0, 1}, 1e-5},
		{"SOFTMAX_ZERO", []float32{0, 0}, []float32{0, 0}, 1e-5},
		{"PROBIT", []float32{0.5, 0.8413447}, []float32{0, 1}, 2e-3},
	} {
		out := mlRun(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": identity, "targets": attrInt(2), "post_transform": attrString(tc.post)}, 1,
			f32s(t, []int{1, 2}, tc.x...))
		g := floatsOf(t, out[0])
		for i := range tc.want {
			if !near(g[i], tc.want[i], 0, tc.tol) {
				t.Errorf("%s%v: got %v, want %v", tc.post, tc.x, g, tc.want)
				break
			}
		}
	}
	for post, want := range map[string]float32{"NONE": 2, "LOGISTIC": 2, "SOFTMAX": 2, "SOFTMAX_ZERO": 2} {
		out := mlRun(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1), "post_transform": attrString(post)}, 1, f32s(t, []int{1, 1}, 2))
		checkFloats(t, out[0], []int{1, 1}, want)
	}
	out := mlRun(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1), "post_transform": attrString("PROBIT")}, 1, f32s(t, []int{1, 1}, 0.5))
	checkFloats(t, out[0], []int{1, 1}, 0)
	_, err := mlRunErr(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1), "post_transform": attrString("TANH")}, 1, f32s(t, []int{1, 1}, 0.5))
	wantErr(t, "post_transform TANH", err, inference.ErrBadModel, `"n"`, "post_transform", "TANH")
}

// LinearClassifier with three classes: scores x·Wᵀ + b, the label of the
// largest (the first of equal ones), every input type.
//
//	W = [[1 0] [0 1] [1 1]], b = (0, 0.5, −1)
//	x = (1, 2):  scores (1, 2.5, 2)  → class 1, label 20
//	x = (3, −1): scores (3, −0.5, 1) → class 0, label 10
//	x = (1, 1):  scores (1, 1.5, 1) … and x = (2, 1.5): (2, 2, 2.5) → class 2
func TestMLLinearClassifierMulticlass(t *testing.T) {
	attrs := map[string]graph.Attr{"coefficients": attrFloats(1, 0, 0, 1, 1, 1), "intercepts": attrFloats(0, 0.5, -1),
		"classlabels_ints": attrInts(10, 20, 30)}
	inputs := map[string]inference.Tensor{
		"float32": f32s(t, []int{3, 2}, 1, 2, 3, -1, 2, 1.5),
		"float64": tensorOf(t, []int{3, 2}, 1, 2, 3, -1, 2, 1.5),
		"int64":   tensorOf(t, []int{2, 2}, int64(1), 2, 3, -1),
		"int32":   tensorOf(t, []int{2, 2}, int32(1), 2, 3, -1),
	}
	for name, x := range inputs {
		out := mlRun(t, "LinearClassifier", 1, attrs, 2, x)
		rows := x.Dim(0)
		checkExact(t, out[0], []int{rows}, []int64{20, 10, 30}[:rows]...)
		checkFloats(t, out[1], []int{rows, 3}, []float32{1, 2.5, 2, 3, -0.5, 1, 2, 2, 2.5}[:3*rows]...)
		if t.Failed() {
			t.Fatalf("input %s", name)
		}
	}

	// Equal scores: the first class. [C] is one row.
	out := mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 1), "intercepts": attrFloats(0, 0),
		"classlabels_strings": attrStrings("a", "b")}, 2, f32s(t, []int{1}, 5))
	checkExact(t, out[0], []int{1}, "a")
	checkFloats(t, out[1], []int{1, 2}, 5, 5)

	// SOFTMAX after the label: scores (ln3/2, −ln3/2) → (3/4, 1/4).
	out = mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(-1, 1), "intercepts": attrFloats(0, 0),
		"classlabels_strings": attrStrings("a", "b"), "post_transform": attrString("SOFTMAX")}, 2, f32s(t, []int{1, 1}, -ln3/2))
	checkExact(t, out[0], []int{1}, "a")
	checkFloats(t, out[1], []int{1, 2}, 0.75, 0.25)
}

// LinearClassifier with one row of coefficients: the label is the second
// when the score s is above 0; with two labels Z is (1 − s, s), s
// untransformed whatever post_transform (ONNX Runtime's rule), without
// labels Z is s and the labels are 0 and 1.
//
//	w = (1, −1), b = 0.5: x = (1, 2) → s = −0.5; x = (2, 0) → s = 2.5
func TestMLLinearClassifierBinary(t *testing.T) {
	x := f32s(t, []int{2, 2}, 1, 2, 2, 0)
	for _, post := range []string{"NONE", "LOGISTIC", "SOFTMAX"} {
		out := mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, -1), "intercepts": attrFloats(0.5),
			"classlabels_ints": attrInts(7, 9), "post_transform": attrString(post)}, 2, x)
		checkExact(t, out[0], []int{2}, int64(7), 9)
		checkFloats(t, out[1], []int{2, 2}, 1.5, -0.5, -1.5, 2.5)

		out = mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, -1), "intercepts": attrFloats(0.5),
			"post_transform": attrString(post)}, 2, x)
		checkExact(t, out[0], []int{2}, int64(0), 1)
		checkFloats(t, out[1], []int{2, 1}, -0.5, 2.5)
	}
	out := mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, -1), "intercepts": attrFloats(0.5),
		"classlabels_strings": attrStrings("no", "yes")}, 2, x)
	checkExact(t, out[0], []int{2}, "no", "yes")

	_, err := mlRunErr(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, -1), "intercepts": attrFloats(0.5),
		"classlabels_ints": attrInts(7, 9), "post_transform": attrString("PROBIT")}, 2, x)
	wantErr(t, "binary PROBIT", err, inference.ErrUnsupportedOp, "PROBIT")
}

// LinearRegressor: one target per row of coefficients, plus its intercept.
//
//	W = [[1 2] [−1 0]], b = (0.5, 1): x = (3, 4) → (11.5, −2)
func TestMLLinearRegressor(t *testing.T) {
	out := mlRun(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2, -1, 0), "intercepts": attrFloats(0.5, 1),
		"targets": attrInt(2)}, 1, tensorOf(t, []int{2, 2}, 3.0, 4, 0, 0))
	checkFloats(t, out[0], []int{2, 2}, 11.5, -2, 0.5, 1)
	out = mlRun(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2)}, 1, tensorOf(t, []int{2}, int32(3), 4))
	checkFloats(t, out[0], []int{1, 1}, 11)
	_, err := mlRunErr(t, "LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2)}, 1, f32s(t, []int{1, 3}, 1, 2, 3))
	wantErr(t, "3 features for 2 coefficients", err, inference.ErrShape, "3 features")
}

// SVMRegressor: Σ_v coefficient_v·K(x, v) + ρ for each kernel, the linear
// model without support vectors, and one_class's ±1.
func TestMLSVMRegressor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]graph.Attr
		x     []float32
		want  float32
	}{
		// No support vectors: x·w + ρ = 1 + 2 + 0.5.
		{"linear", map[string]graph.Attr{"coefficients": attrFloats(1, 2), "rho": attrFloats(0.5)}, []float32{1, 1}, 3.5},
		// LINEAR: 2·((1,2)·(3,4)) + 1 = 23.
		{"LINEAR", map[string]graph.Attr{"kernel_type": attrString("LINEAR"), "n_supports": attrInt(1), "support_vectors": attrFloats(1, 2),
			"coefficients": attrFloats(2), "rho": attrFloats(1)}, []float32{3, 4}, 23},
		// RBF, γ = 0.5, x = 0: 1·e⁰ − 2·e^(−0.5) + 0.1.
		{"RBF", map[string]graph.Attr{"kernel_type": attrString("RBF"), "kernel_params": attrFloats(0.5, 0, 0), "n_supports": attrInt(2),
			"support_vectors": attrFloats(0, 0, 1, 0), "coefficients": attrFloats(1, -2), "rho": attrFloats(0.1)}, []float32{0, 0}, float32(1.1 - 2*math.Exp(-0.5))},
		// POLY, γ 1, c₀ 1, d 2: 0.5·((1,2)·(1,1) + 1)² = 8.
		{"POLY", map[string]graph.Attr{"kernel_type": attrString("POLY"), "kernel_params": attrFloats(1, 1, 2), "n_supports": attrInt(1),
			"support_vectors": attrFloats(1, 2), "coefficients": attrFloats(0.5), "rho": attrFloats(0)}, []float32{1, 1}, 8},
		// SIGMOID, γ 0.5, c₀ 0: tanh(0.5·2) = tanh 1.
		{"SIGMOID", map[string]graph.Attr{"kernel_type": attrString("SIGMOID"), "kernel_params": attrFloats(0.5, 0, 0), "n_supports": attrInt(1),
			"support_vectors": attrFloats(2, 0), "coefficients": attrFloats(1), "rho": attrFloats(0)}, []float32{1, 0}, float32(math.Tanh(1))},
		// one_class: 23 > 0 → 1.
		{"one_class", map[string]graph.Attr{"n_supports": attrInt(1), "support_vectors": attrFloats(1, 2), "one_class": attrInt(1),
			"coefficients": attrFloats(2), "rho": attrFloats(1)}, []float32{3, 4}, 1},
		{"one_class_negative", map[string]graph.Attr{"n_supports": attrInt(1), "support_vectors": attrFloats(1, 2), "one_class": attrInt(1),
			"coefficients": attrFloats(-2), "rho": attrFloats(1)}, []float32{3, 4}, -1},
	} {
		out := mlRun(t, "SVMRegressor", 1, tc.attrs, 1, f32s(t, []int{1, 2}, tc.x...))
		checkFloats(t, out[0], []int{1, 1}, tc.want)
		if t.Failed() {
			t.Fatal(tc.name)
		}
	}
}

// SVMClassifier with support vectors, one-vs-one. Three classes of one
// LINEAR support vector each, v0 = (1, 0), v1 = (0, 1), v2 = (1, 1);
// coefficients [[1 −1 1] [1 1 −1]], ρ = 0. Pair (i, j) sums
// coef[j−1][v] K(x, v) over class i's vectors and coef[i][v] K(x, v)
// over class j's:
//
//	x = (2, 1): K = (2, 1, 3); d01 = 2 − 1 = 1, d02 = 2 + 3 = 5,
//	            d12 = 1 − 3 = −2; votes (2, 0, 1) → "a"
//	x = (0, 3): K = (0, 3, 3); d01 = −3, d02 = 3, d12 = 0 (a vote for
//	            class 2); votes (1, 1, 1) → the first, "a"
//	x = (0, 1): K = (0, 1, 1); d01 = −1, d02 = 1, d12 = 0; votes (1, 1, 1)
//	x = (−1, 2): K = (−1, 2, 1); d01 = −3, d02 = 0, d12 = 1; votes (0, 2, 1) → "b"
//
// Z holds the decision values.
func TestMLSVMClassifierOneVsOne(t *testing.T) {
	attrs := map[string]graph.Attr{"kernel_type": attrString("LINEAR"), "vectors_per_class": attrInts(1, 1, 1),
		"support_vectors": attrFloats(1, 0, 0, 1, 1, 1), "coefficients": attrFloats(1, -1, 1, 1, 1, -1), "rho": attrFloats(0, 0, 0),
		"classlabels_strings": attrStrings("a", "b", "c")}
	out := mlRun(t, "SVMClassifier", 1, attrs, 2, f32s(t, []int{3, 2}, 2, 1, 0, 3, -1, 2))
	checkExact(t, out[0], []int{3}, "a", "a", "b")
	checkFloats(t, out[1], []int{3, 3}, 1, 5, -2, -3, 3, 0, -3, 0, 1)

	// LOGISTIC of each decision value.
	attrs["post_transform"] = attrString("LOGISTIC")
	out = mlRun(t, "SVMClassifier", 1, attrs, 2, f32s(t, []int{1, 2}, 2, 1))
	checkFloats(t, out[1], []int{1, 3}, float32(1/(1+math.Exp(-1))), float32(1/(1+math.Exp(-5))), float32(1/(1+math.Exp(2))))
}

// SVMClassifier with two classes: one decision value d, v0 = (1), v1 =
// (−1), coefficients (1, −1), ρ = −1: x = 2 → d = 2 + 2 − 1 = 3, a vote
// for class 0. Z is (−d, d) with NONE, (1 − d, d) otherwise (ONNX
// Runtime's rule); with prob_a = −1, prob_b = 0, Platt's
// 1/(1+e^(−d)) = 0.952574 for class 0 against 1, which the pairwise
// coupling of two classes keeps: (0.952574, 0.047426), to the 0.005/2
// at which libsvm's iteration stops.
func TestMLSVMClassifierBinary(t *testing.T) {
	attrs := func(post string) map[string]graph.Attr {
		return map[string]graph.Attr{"kernel_type": attrString("LINEAR"), "vectors_per_class": attrInts(1, 1), "support_vectors": attrFloats(1, -1),
			"coefficients": attrFloats(1, -1), "rho": attrFloats(-1), "classlabels_ints": attrInts(5, 6), "post_transform": attrString(post)}
	}
	x := f32s(t, []int{2, 1}, 2, -2)
	out := mlRun(t, "SVMClassifier", 1, attrs("NONE"), 2, x)
	checkExact(t, out[0], []int{2}, int64(5), 6) // x = −2: d = −2 − 2 − 1 = −5
	checkFloats(t, out[1], []int{2, 2}, -3, 3, 5, -5)
	out = mlRun(t, "SVMClassifier", 1, attrs("LOGISTIC"), 2, x)
	checkFloats(t, out[1], []int{2, 2}, -2, 3, 6, -5)

	_, err := mlRunErr(t, "SVMClassifier", 1, attrs("PROBIT"), 2, x)
	wantErr(t, "binary PROBIT", err, inference.ErrUnsupportedOp, "PROBIT")

	a := attrs("NONE")
	a["prob_a"], a["prob_b"] = attrFloats(-1), attrFloats(0)
	out = mlRun(t, "SVMClassifier", 1, a, 2, f32s(t, []int{1, 1}, 2))
	checkExact(t, out[0], []int{1}, int64(5))
	p := floatsOf(t, out[1])
	if len(p) != 2 || math.Abs(float64(p[0])-0.952574) > 2.5e-3 || math.Abs(float64(p[0]+p[1])-1) > 1e-6 {
		t.Errorf("probabilities %v, want (0.952574, 0.047426) within 2.5e-3, summing to 1", p)
	}
}

// SVMClassifier without support vectors: class c scores x·w_c + ρ₀; with
// two classes and no prob_a the label is the second when the top score is
// ≥ 0.5 with every coefficient ≥ 0, or > 0 with one negative (ONNX
// Runtime's rule), else the top score's.
func TestMLSVMClassifierLinear(t *testing.T) {
	positive := map[string]graph.Attr{"coefficients": attrFloats(1, 0, 0, 1), "rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}
	// (0.2, 0.3) → class 1; (0.6, 0.1) → top 0.6 ≥ 0.5 → 1; (0.3, 0.2) → 0.
	out := mlRun(t, "SVMClassifier", 1, positive, 2, f32s(t, []int{3, 2}, 0.2, 0.3, 0.6, 0.1, 0.3, 0.2))
	checkExact(t, out[0], []int{3}, int64(1), 1, 0)
	checkFloats(t, out[1], []int{3, 2}, 0.2, 0.3, 0.6, 0.1, 0.3, 0.2)
	// With a negative weight: (0.2, −0.1) → scores (0.2, 0.1), top 0.2 > 0 → 1;
	// (−0.2, 0.1) → (−0.2, −0.1), top −0.1 → its class, 1; (−0.2, −0.5) →
	// (−0.2, 0.5) → 1; (−0.3, 0.2) → (−0.3, −0.2) → 1; (−0.1, 0.5) → (−0.1, −0.5) → 0.
	mixed := map[string]graph.Attr{"coefficients": attrFloats(1, 0, 0, -1), "rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}
	out = mlRun(t, "SVMClassifier", 1, mixed, 2, f32s(t, []int{2, 2}, 0.2, -0.1, -0.1, 0.5))
	checkExact(t, out[0], []int{2}, int64(1), 0)
	// Three classes, ρ₀ = 1: (1, 2) → (2, 3, 4) → class 2.
	three := map[string]graph.Attr{"coefficients": attrFloats(1, 0, 0, 1, 1, 1), "rho": attrFloats(1), "classlabels_ints": attrInts(4, 5, 6)}
	out = mlRun(t, "SVMClassifier", 1, three, 2, f32s(t, []int{1, 2}, 1, 2))
	checkExact(t, out[0], []int{1}, int64(6))
	checkFloats(t, out[1], []int{1, 3}, 2, 3, 4)
}

// Scaler: (x − offset)·scale per feature, or one pair for all; float32 out
// of every input type.
func TestMLScaler(t *testing.T) {
	attrs := map[string]graph.Attr{"offset": attrFloats(1, 2), "scale": attrFloats(2, 0.5)}
	for _, x := range []inference.Tensor{f32s(t, []int{2, 2}, 3, 6, 1, 2), tensorOf(t, []int{2, 2}, 3.0, 6, 1, 2),
		tensorOf(t, []int{2, 2}, int64(3), 6, 1, 2), tensorOf(t, []int{2, 2}, int32(3), 6, 1, 2)} {
		out := mlRun(t, "Scaler", 1, attrs, 1, x)
		checkFloats(t, out[0], []int{2, 2}, 4, 2, 0, 0)
	}
	out := mlRun(t, "Scaler", 1, map[string]graph.Attr{"offset": attrFloats(1), "scale": attrFloats(3)}, 1, f32s(t, []int{3}, 1, 2, 3))
	checkFloats(t, out[0], []int{3}, 0, 3, 6)
	_, err := mlRunErr(t, "Scaler", 1, attrs, 1, f32s(t, []int{1, 3}, 1, 2, 3))
	wantErr(t, "2 scales, 3 features", err, inference.ErrShape, "3 features")
}

// Normalizer, row by row: MAX divides by the largest value (not
// magnitude, as ONNX Runtime does), L1 by Σ|x|, L2 gives sign(x)·√(x²/Σx²);
// a row whose norm is 0 is kept.
func TestMLNormalizer(t *testing.T) {
	for _, tc := range []struct {
		norm string
		x    inference.Tensor
		want []float32
	}{
		{"MAX", f32s(t, []int{2, 3}, 1, -4, 2, 0, 0, 0), []float32{0.5, -2, 1, 0, 0, 0}},
		{"L1", f32s(t, []int{2, 2}, 1, -3, 0, 0), []float32{0.25, -0.75, 0, 0}},
		{"L2", f32s(t, []int{2, 2}, 3, -4, 0, 0), []float32{0.6, -0.8, 0, 0}},
		{"L2", tensorOf(t, []int{2, 2}, int64(3), -4, 0, 0), []float32{0.6, -0.8, 0, 0}},
	} {
		out := mlRun(t, "Normalizer", 1, map[string]graph.Attr{"norm": attrString(tc.norm)}, 1, tc.x)
		checkFloats(t, out[0], tc.x.Shape(), tc.want...)
	}
	out := mlRun(t, "Normalizer", 1, nil, 1, f32s(t, []int{2}, 2, 4)) // MAX by default; [C]
	checkFloats(t, out[0], []int{2}, 0.5, 1)
	_, err := mlRunErr(t, "Normalizer", 1, map[string]graph.Attr{"norm": attrString("L3")}, 1, f32s(t, []int{2}, 2, 4))
	wantErr(t, "norm L3", err, inference.ErrBadModel, "norm", "L3")
}

// Binarizer: 1 where x > threshold, else 0 (NaN too), in x's type; the
// default threshold is 0.
func TestMLBinarizer(t *testing.T) {
	nan := float32(math.NaN())
	out := mlRun(t, "Binarizer", 1, map[string]graph.Attr{"threshold": attrFloat(0.5)}, 1, f32s(t, []int{4}, 0.5, 0.6, -1, nan))
	checkExact(t, out[0], []int{4}, float32(0), 1, 0, 0)
	out = mlRun(t, "Binarizer", 1, nil, 1, tensorOf(t, []int{3}, 0.0, 1e-300, -1))
	checkExact(t, out[0], []int{3}, 0.0, 1, 0)
	out = mlRun(t, "Binarizer", 1, map[string]graph.Attr{"threshold": attrFloat(1.5)}, 1, tensorOf(t, []int{3}, int64(1), 2, 3))
	checkExact(t, out[0], []int{3}, int64(0), 1, 1)
}

// Imputer: the replaced value (any NaN for NaN) becomes its feature's
// imputed value, or the one value.
func TestMLImputer(t *testing.T) {
	nan := float32(math.NaN())
	out := mlRun(t, "Imputer", 1, map[string]graph.Attr{"imputed_value_floats": attrFloats(10, 20), "replaced_value_float": attrFloat(nan)}, 1,
		f32s(t, []int{2, 2}, nan, 1, 2, float32(math.Inf(1))*0))
	checkExact(t, out[0], []int{2, 2}, float32(10), 1, 2, 20)
	out = mlRun(t, "Imputer", 1, map[string]graph.Attr{"imputed_value_floats": attrFloats(7)}, 1, tensorOf(t, []int{1, 3}, 0.0, 1, 0))
	checkExact(t, out[0], []int{1, 3}, 7.0, 1, 7)
	ints := map[string]graph.Attr{"imputed_value_int64s": attrInts(5), "replaced_value_int64": attrInt(-1)}
	out = mlRun(t, "Imputer", 1, ints, 1, tensorOf(t, []int{2}, int64(-1), 3))
	checkExact(t, out[0], []int{2}, int64(5), 3)
	out = mlRun(t, "Imputer", 1, ints, 1, tensorOf(t, []int{2}, int32(-1), 3))
	checkExact(t, out[0], []int{2}, int32(5), 3)

	_, err := mlRunErr(t, "Imputer", 1, ints, 1, f32s(t, []int{1}, 1))
	wantErr(t, "float input, int64 imputes", err, inference.ErrType, "imputed_value_int64s")
	_, err = mlRunErr(t, "Imputer", 1, map[string]graph.Attr{"imputed_value_floats": attrFloats(1, 2)}, 1, f32s(t, []int{1, 3}, 1, 2, 3))
	wantErr(t, "2 values, 3 features", err, inference.ErrShape, "3 features")
}

// ArrayFeatureExtractor: the indices along the last axis; [C] gives
// [1, K]; an index outside the axis is an error naming it.
func TestMLArrayFeatureExtractor(t *testing.T) {
	out := mlRun(t, "ArrayFeatureExtractor", 1, nil, 1, f32s(t, []int{2, 3}, 1, 2, 3, 4, 5, 6), i64s(t, 2, 0))
	checkExact(t, out[0], []int{2, 2}, float32(3), 1, 6, 4)
	out = mlRun(t, "ArrayFeatureExtractor", 1, nil, 1, tensorOf(t, []int{3}, "a", "b", "c"), i64s(t, 1))
	checkExact(t, out[0], []int{1, 1}, "b")
	out = mlRun(t, "ArrayFeatureExtractor", 1, nil, 1, tensorOf(t, []int{2, 1, 2}, 1.0, 2, 3, 4), i64s(t, 1, 1, 0))
	checkExact(t, out[0], []int{2, 1, 3}, 2.0, 2, 1, 4, 4, 3)
	for _, bad := range []int64{3, -1} {
		_, err := mlRunErr(t, "ArrayFeatureExtractor", 1, nil, 1, f32s(t, []int{2, 3}, 1, 2, 3, 4, 5, 6), i64s(t, 0, bad))
		wantErr(t, "index "+strconv.Itoa(int(bad)), err, inference.ErrIndexOutOfRange, "element 1 is "+strconv.Itoa(int(bad)))
	}
}

// FeatureVectorizer: each input's first inputdimensions[i] values of each
// row, zeros where it has fewer, as float32.
func TestMLFeatureVectorizer(t *testing.T) {
	out := mlRun(t, "FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(2, 3)}, 1,
		f32s(t, []int{2, 2}, 1, 2, 3, 4), tensorOf(t, []int{2, 1}, int64(5), 6))
	checkFloats(t, out[0], []int{2, 5}, 1, 2, 5, 0, 0, 3, 4, 6, 0, 0)
	out = mlRun(t, "FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(1, 1)}, 1,
		tensorOf(t, []int{2}, 1.0, 2), tensorOf(t, []int{1, 2}, int32(3), 4))
	checkFloats(t, out[0], []int{1, 2}, 1, 3)
	_, err := mlRunErr(t, "FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(1, 1)}, 1,
		f32s(t, []int{2, 1}, 1, 2), f32s(t, []int{3, 1}, 1, 2, 3))
	wantErr(t, "rows differ", err, inference.ErrShape, "3 rows")
}

// OneHotEncoder: a last axis of one column per category; an unknown value
// gives zeros with zeros=1 and an error with zeros=0; numbers are
// truncated to integers.
func TestMLOneHotEncoder(t *testing.T) {
	strs := map[string]graph.Attr{"cats_strings": attrStrings("a", "b", "c")}
	out := mlRun(t, "OneHotEncoder", 1, strs, 1, tensorOf(t, []int{2, 1}, "b", "z"))
	checkFloats(t, out[0], []int{2, 1, 3}, 0, 1, 0, 0, 0, 0)
	strs["zeros"] = attrInt(0)
	_, err := mlRunErr(t, "OneHotEncoder", 1, strs, 1, tensorOf(t, []int{2, 1}, "b", "z"))
	wantErr(t, "unknown z, zeros=0", err, inference.ErrIndexOutOfRange, "element 1 (z)")
	out = mlRun(t, "OneHotEncoder", 1, strs, 1, tensorOf(t, []int{2}, "c", "a"))
	checkFloats(t, out[0], []int{2, 3}, 0, 0, 1, 1, 0, 0)

	ints := map[string]graph.Attr{"cats_int64s": attrInts(3, 1)}
	out = mlRun(t, "OneHotEncoder", 1, ints, 1, f32s(t, []int{3}, 1.7, 3, 2))
	checkFloats(t, out[0], []int{3, 2}, 0, 1, 1, 0, 0, 0)
	out = mlRun(t, "OneHotEncoder", 1, ints, 1, tensorOf(t, []int{2}, int32(3), 1))
	checkFloats(t, out[0], []int{2, 2}, 1, 0, 0, 1)
	_, err = mlRunErr(t, "OneHotEncoder", 1, ints, 1, tensorOf(t, []int{1}, "a"))
	wantErr(t, "strings, int categories", err, inference.ErrType, "cats_int64s")
}

// CategoryMapper: strings to int64s and int64s to strings, through the
// same pairs, the defaults elsewhere.
func TestMLCategoryMapper(t *testing.T) {
	attrs := map[string]graph.Attr{"cats_strings": attrStrings("a", "b"), "cats_int64s": attrInts(5, 7)}
	out := mlRun(t, "CategoryMapper", 1, attrs, 1, tensorOf(t, []int{2}, "b", "x"))
	checkExact(t, out[0], []int{2}, int64(7), -1)
	out = mlRun(t, "CategoryMapper", 1, attrs, 1, tensorOf(t, []int{1, 2}, int64(5), 6))
	checkExact(t, out[0], []int{1, 2}, "a", "_Unused")
	attrs["default_int64"], attrs["default_string"] = attrInt(42), attrString("?")
	out = mlRun(t, "CategoryMapper", 1, attrs, 1, tensorOf(t, []int{2}, "b", "x"))
	checkExact(t, out[0], []int{2}, int64(7), 42)
	out = mlRun(t, "CategoryMapper", 1, attrs, 1, tensorOf(t, []int{2}, int64(5), 6))
	checkExact(t, out[0], []int{2}, "a", "?")
}

// LabelEncoder-1: a string to its index in classes_strings, an int64 to the
// class at that index; default_int64 and default_string elsewhere.
func TestMLLabelEncoder1(t *testing.T) {
	attrs := map[string]graph.Attr{"classes_strings": attrStrings("x", "y", "z")}
	out := mlRun(t, "LabelEncoder", 1, attrs, 1, tensorOf(t, []int{2}, "y", "q"))
	checkExact(t, out[0], []int{2}, int64(1), -1)
	out = mlRun(t, "LabelEncoder", 1, attrs, 1, tensorOf(t, []int{3}, int64(2), 5, -1))
	checkExact(t, out[0], []int{3}, "z", "_Unused", "_Unused")
	attrs["default_int64"], attrs["default_string"] = attrInt(9), attrString("none")
	out = mlRun(t, "LabelEncoder", 1, attrs, 1, tensorOf(t, []int{2}, "y", "q"))
	checkExact(t, out[0], []int{2}, int64(1), 9)
	out = mlRun(t, "LabelEncoder", 1, attrs, 1, tensorOf(t, []int{2}, int64(0), 3))
	checkExact(t, out[0], []int{2}, "x", "none")
}

// LabelEncoder-2: keys_* to values_*, default_* of the values' type
// elsewhere ("_Unused", −1, −0.0 when absent); float keys match by value,
// a NaN key every NaN.
func TestMLLabelEncoder2(t *testing.T) {
	out := mlRun(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_int64s": attrInts(3, 4), "values_strings": attrStrings("three", "four")}, 1,
		tensorOf(t, []int{3}, int64(4), 5, 3))
	checkExact(t, out[0], []int{3}, "four", "_Unused", "three")

	nanBits := math.Float32frombits(0x7fc00001) // another NaN than the key's
	out = mlRun(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_floats": attrFloats(float32(math.NaN()), 1.5, float32(math.Copysign(0, -1))),
		"values_floats": attrFloats(1, 2, 3)}, 1, f32s(t, []int{4}, nanBits, 1.5, 0, 2))
	got := floatsOf(t, out[0])
	if got[0] != 1 || got[1] != 2 || got[2] != 3 || got[3] != 0 || !math.Signbit(float64(got[3])) {
		t.Errorf("float keys: got %v, want [1 2 3 -0]", got)
	}
	out = mlRun(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a"), "values_floats": attrFloats(1), "default_float": attrFloat(0.5)}, 1,
		tensorOf(t, []int{2}, "a", "b"))
	checkExact(t, out[0], []int{2}, float32(1), 0.5)

	// A key listed twice: with the same value, fine; with another, refused.
	out = mlRun(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a", "a"), "values_int64s": attrInts(1, 1)}, 1, tensorOf(t, []int{1}, "a"))
	checkExact(t, out[0], []int{1}, int64(1))
	_, err := mlRunErr(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a", "b", "a"), "values_int64s": attrInts(1, 2, 3)}, 1, tensorOf(t, []int{1}, "a"))
	wantErr(t, "a twice", err, inference.ErrBadModel, "keys_strings", "key 2 repeats key 0")

	_, err = mlRunErr(t, "LabelEncoder", 2, map[string]graph.Attr{"keys_int64s": attrInts(3, 4), "values_strings": attrStrings("three", "four")}, 1,
		tensorOf(t, []int{1}, int32(3)))
	wantErr(t, "int32 input, int64 keys", err, inference.ErrType, "int64")
}

// LabelEncoder-4: keys_tensor and values_tensor of the types the spec
// adds, default_tensor, or the default_* of the values' type.
func TestMLLabelEncoder4(t *testing.T) {
	out := mlRun(t, "LabelEncoder", 4, map[string]graph.Attr{"keys_tensor": attrTensor(tensorOf(t, []int{2}, int32(1), 2)),
		"values_tensor": attrTensor(tensorOf(t, []int{2}, 0.5, 1.5)), "default_tensor": attrTensor(tensorOf(t, []int{1}, 9.0))}, 1,
		tensorOf(t, []int{2}, int32(2), 3))
	checkExact(t, out[0], []int{2}, 1.5, 9)
	out = mlRun(t, "LabelEncoder", 4, map[string]graph.Attr{"keys_tensor": attrTensor(tensorOf(t, []int{2}, 0.25, 0.75)),
		"values_tensor": attrTensor(tensorOf(t, []int{2}, int16(7), 8))}, 1, tensorOf(t, []int{3}, 0.75, 0.5, 0.25))
	checkExact(t, out[0], []int{3}, int16(8), -1, 7)
	out = mlRun(t, "LabelEncoder", 4, map[string]graph.Attr{"keys_strings": attrStrings("p", "q"),
		"values_tensor": attrTensor(tensorOf(t, []int{2}, "P", "Q")), "default_string": attrString("-")}, 1, tensorOf(t, []int{2, 1}, "q", "r"))
	checkExact(t, out[0], []int{2, 1}, "Q", "-")

	_, err := mlRunErr(t, "LabelEncoder", 4, map[string]graph.Attr{"keys_tensor": attrTensor(tensorOf(t, []int{2}, int32(1), 2)),
		"values_tensor": attrTensor(tensorOf(t, []int{2}, 0.5, 1.5)), "default_tensor": attrTensor(tensorOf(t, []int{1}, float32(9)))}, 1,
		tensorOf(t, []int{1}, int32(2)))
	wantErr(t, "float32 default for float64 values", err, inference.ErrBadModel, "default_tensor", "float32")
}

// Malformed attributes fail at load with ErrBadModel naming the node and
// the attribute; counts declared in the attributes cannot make the
// runtime allocate more than the attributes hold.
func TestMLHostileAttributes(t *testing.T) {
	x := f32s(t, []int{1, 2}, 1, 2)
	for _, tc := range []struct {
		op      string
		version int64
		attrs   map[string]graph.Attr
		in      []inference.Tensor
		attr    string
	}{
		{"LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2, 3), "intercepts": attrFloats(0, 0), "classlabels_ints": attrInts(0, 1)}, nil, "coefficients"},
		{"LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2, 3, 4), "intercepts": attrFloats(0, 0), "classlabels_ints": attrInts(0, 1, 2)}, nil, "classlabels_ints"},
		{"LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2), "intercepts": attrFloats(0), "classlabels_strings": attrStrings("a", "b", "c")}, nil, "classlabels_strings"},
		{"LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2), "intercepts": attrFloats(0), "classlabels_ints": attrInts(0, 1),
			"classlabels_strings": attrStrings("a", "b")}, nil, "classlabels_strings"},
		{"LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrInts(1, 2), "intercepts": attrFloats(0)}, nil, "coefficients"},
		{"LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2, 3), "targets": attrInt(2)}, nil, "coefficients"},
		{"LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2), "targets": attrInt(1e12)}, nil, "targets"},
		{"LinearRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 2), "intercepts": attrFloats(1, 2)}, nil, "intercepts"},
		{"SVMRegressor", 1, map[string]graph.Attr{"n_supports": attrInt(1e12), "support_vectors": attrFloats(1, 2), "coefficients": attrFloats(1), "rho": attrFloats(0)}, nil, "coefficients"},
		{"SVMRegressor", 1, map[string]graph.Attr{"n_supports": attrInt(2), "support_vectors": attrFloats(1, 2, 3), "coefficients": attrFloats(1, 1), "rho": attrFloats(0)}, nil, "support_vectors"},
		{"SVMRegressor", 1, map[string]graph.Attr{"n_supports": attrInt(-1), "coefficients": attrFloats(1), "rho": attrFloats(0)}, nil, "n_supports"},
		{"SVMRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1), "rho": attrFloats(0), "kernel_params": attrFloats(1, 2)}, nil, "kernel_params"},
		{"SVMRegressor", 1, map[string]graph.Attr{"coefficients": attrFloats(1), "rho": attrFloats(0), "kernel_type": attrString("CUBIC")}, nil, "kernel_type"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1e12, 1), "support_vectors": attrFloats(1, 2), "coefficients": attrFloats(1, 1),
			"rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}, nil, "vectors_per_class"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, -1), "support_vectors": attrFloats(1, 2), "coefficients": attrFloats(1, 1),
			"rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}, nil, "vectors_per_class"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 2), "support_vectors": attrFloats(1, 2, 3, 4), "coefficients": attrFloats(1, 1, 1),
			"rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}, nil, "support_vectors"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 1), "support_vectors": attrFloats(1, 2), "coefficients": attrFloats(1, 1, 1),
			"rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}, nil, "coefficients"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 1, 1), "support_vectors": attrFloats(1, 2, 3), "coefficients": attrFloats(1, 1, 1, 1, 1, 1),
			"rho": attrFloats(0, 0), "classlabels_ints": attrInts(0, 1, 2)}, nil, "rho"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 1, 1), "support_vectors": attrFloats(1, 2, 3), "coefficients": attrFloats(1, 1, 1, 1, 1, 1),
			"rho": attrFloats(0, 0, 0), "prob_a": attrFloats(1), "prob_b": attrFloats(1), "classlabels_ints": attrInts(0, 1, 2)}, nil, "prob_a"},
		{"SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 1), "support_vectors": attrFloats(1, 2), "coefficients": attrFloats(1, 1),
			"rho": attrFloats(0)}, nil, "classlabels_ints"},
		{"Scaler", 1, map[string]graph.Attr{"offset": attrFloats(1, 2), "scale": attrFloats(1)}, nil, "scale"},
		{"Scaler", 1, nil, nil, "scale"},
		{"Imputer", 1, map[string]graph.Attr{"imputed_value_floats": attrFloats(1), "imputed_value_int64s": attrInts(1)}, nil, "imputed_value_int64s"},
		{"Imputer", 1, nil, nil, "imputed_value_floats"},
		{"Binarizer", 1, map[string]graph.Attr{"threshold": attrString("half")}, nil, "threshold"},
		{"FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(1e12)}, []inference.Tensor{x}, "inputdimensions"},
		{"FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(math.MaxInt32, 1)}, []inference.Tensor{x, x}, "inputdimensions"},
		{"FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(-1)}, []inference.Tensor{x}, "inputdimensions"},
		{"FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(2, 2)}, []inference.Tensor{x}, "inputdimensions"},
		{"OneHotEncoder", 1, map[string]graph.Attr{"cats_int64s": attrInts(1), "cats_strings": attrStrings("a")}, nil, "cats_strings"},
		{"OneHotEncoder", 1, nil, nil, "cats_int64s"},
		{"CategoryMapper", 1, map[string]graph.Attr{"cats_int64s": attrInts(1, 2), "cats_strings": attrStrings("a")}, nil, "cats_int64s"},
		{"LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a", "b"), "values_int64s": attrInts(1)}, nil, "values_int64s"},
		{"LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a"), "keys_int64s": attrInts(1), "values_int64s": attrInts(1)}, nil, "keys_int64s"},
		{"LabelEncoder", 2, map[string]graph.Attr{"keys_strings": attrStrings("a")}, nil, "values_strings"},
		{"LabelEncoder", 4, map[string]graph.Attr{"keys_tensor": attrTensor(tensorOf(t, []int{1}, true)), "values_int64s": attrInts(1)}, nil, "keys_tensor"},
		{"LabelEncoder", 4, map[string]graph.Attr{"keys_strings": attrStrings("a"), "values_tensor": attrTensor(tensorOf(t, []int{1}, int16(1))),
			"default_int64": attrInt(1 << 20)}, nil, "default_int64"},
	} {
		in := tc.in
		if in == nil {
			in = []inference.Tensor{x}
		}
		_, err := mlRunErr(t, tc.op, tc.version, tc.attrs, 1, in...)
		wantErr(t, tc.op+" "+tc.attr, err, inference.ErrBadModel, `"n" (`+tc.op+`)`, "attribute "+tc.attr)
	}
}

// What the inputs ask for is sized through the run's budget: a
// FeatureVectorizer of 2³¹−1 columns, legal, fails a row under 64 MiB
// with a ResourceError, allocating nothing of it.
func TestMLOutputsWithinBudget(t *testing.T) {
	g := mlGraph("FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(math.MaxInt32)}, 1, 1)
	feeds := map[string]inference.Tensor{"x0": f32s(t, []int{1, 1}, 1)}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	_, err := runLimited(t, typed(g, feeds), 64<<20, feeds)
	var re *inference.ResourceError
	if !errors.As(err, &re) {
		t.Errorf("error %v, want an *inference.ResourceError", err)
	}
}

// RunNode, which another backend runs a node with, reads the attributes
// at run time (nothing was prepared), and the ai.onnx opset it is given
// does not make a LabelEncoder another version: its attributes say which.
func TestMLRunNode(t *testing.T) {
	n := &graph.Node{Name: "n", OpType: "LabelEncoder", Domain: MLDomain, Inputs: []string{"x"}, Outputs: []string{"y"},
		Attrs: map[string]graph.Attr{"classes_strings": attrStrings("x", "y")}}
	out, err := RunNode(nil, n, 15, []inference.Tensor{tensorOf(t, []int{2}, "y", "q")})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, out[0], []int{2}, int64(1), -1)
	n.Attrs = map[string]graph.Attr{"keys_strings": attrStrings("y"), "values_int64s": attrInts(7)}
	out, err = RunNode(nil, n, 1, []inference.Tensor{tensorOf(t, []int{2}, "y", "q")})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, out[0], []int{2}, int64(7), -1)
	n = &graph.Node{Name: "n", OpType: "Scaler", Domain: MLDomain, Inputs: []string{"x"}, Outputs: []string{"y"},
		Attrs: map[string]graph.Attr{"scale": attrFloats(1, 2), "offset": attrFloats(1)}}
	_, err = RunNode(nil, n, 15, []inference.Tensor{f32s(t, []int{2}, 1, 2)})
	wantErr(t, "RunNode Scaler", err, inference.ErrBadModel, "attribute scale")
}

// A batch of no rows gives outputs of no rows.
func TestMLEmptyBatch(t *testing.T) {
	x := f32s(t, []int{0, 2})
	out := mlRun(t, "LinearClassifier", 1, map[string]graph.Attr{"coefficients": attrFloats(1, 0, 0, 1, 1, 1), "intercepts": attrFloats(0, 0, 0),
		"classlabels_strings": attrStrings("a", "b", "c")}, 2, x)
	checkExact[string](t, out[0], []int{0})
	checkFloats(t, out[1], []int{0, 3})
	out = mlRun(t, "SVMClassifier", 1, map[string]graph.Attr{"vectors_per_class": attrInts(1, 1), "support_vectors": attrFloats(1, 0, 0, 1),
		"coefficients": attrFloats(1, -1), "rho": attrFloats(0), "classlabels_ints": attrInts(0, 1)}, 2, x)
	checkExact[int64](t, out[0], []int{0})
	checkFloats(t, out[1], []int{0, 2})
	out = mlRun(t, "FeatureVectorizer", 1, map[string]graph.Attr{"inputdimensions": attrInts(2)}, 1, x)
	checkFloats(t, out[0], []int{0, 2})
	out = mlRun(t, "ArrayFeatureExtractor", 1, nil, 1, x, i64s(t, 1))
	checkFloats(t, out[0], []int{0, 1})
	out = mlRun(t, "OneHotEncoder", 1, map[string]graph.Attr{"cats_int64s": attrInts(1, 2)}, 1, x)
	checkFloats(t, out[0], []int{0, 2, 2})
	out = mlRun(t, "Normalizer", 1, map[string]graph.Attr{"norm": attrString("L2")}, 1, x)
	checkFloats(t, out[0], []int{0, 2})
}

package opsem

import "math"

// The linear and support-vector models of ai.onnx.ml: LinearClassifier,
// LinearRegressor, SVMClassifier and SVMRegressor. Each reads X as
// MLMatrix does (N rows of F features; float32, float64, int64 or int32)
// and outputs float32 scores; the classifiers also a label per row.

// LinearClassifier is a LinearClassifier node: the score of class c for a
// row x is Intercepts[c] + Σ_f Coefficients[c·Features+f]·x[f].
//
// With two or more classes the label is the Labels entry of the largest
// score (ArgMax, before Post) and Z holds the scores after Post. With one
// class (one row of coefficients) the label is Labels[1] when the score s
// is above 0 and Labels[0] otherwise (0 and 1 when the node has no labels);
// with two labels Z is (1 − s, s), s untransformed unless Post is PROBIT,
// which is refused, and without labels Z is s (only PROBIT applies). That
// is ONNX Runtime's rule (batched_update_scores_inplace, add_second_class):
// skl2onnx writes a binary model as two classes, (−w, w), instead.
//
// intercepts gives the number of classes; a node without them has one
// class per label and intercepts of 0. multi_class changes nothing.
type LinearClassifier struct {
	Coefficients      []float32
	Intercepts        []float32
	Classes, Features int
	Labels            Labels
	// Binary: one class and two labels given; Z is then (1 − s, s).
	Binary bool
	Post   PostTransform
}

// ScoreWidth is the number of columns of Z.
func (c *LinearClassifier) ScoreWidth() int {
	if c.Binary {
		return 2
	}
	return c.Classes
}

// LinearClassifierOf reads and checks a LinearClassifier node's attributes.
func LinearClassifierOf(n Node) (*LinearClassifier, error) {
	a := mlAttrs{n: n}
	coef, icpt := a.floats("coefficients"), a.floats("intercepts")
	ints, strs, labels := a.classLabels()
	c := &LinearClassifier{Coefficients: coef, Intercepts: icpt, Labels: Labels{ints, strs}, Post: a.postTransform()}
	if a.err != nil {
		return nil, a.err
	}
	labelsAttr := "classlabels_ints"
	if len(strs) > 0 {
		labelsAttr = "classlabels_strings"
	}
	c.Classes = len(icpt)
	if c.Classes == 0 {
		c.Classes = labels
		c.Intercepts = make([]float32, labels)
	}
	switch {
	case len(coef) == 0:
		return nil, mlBad(n, "coefficients", "missing or empty")
	case c.Classes == 0:
		return nil, mlBad(n, "intercepts", "missing, and no class labels give the number of classes")
	case len(coef)%c.Classes != 0:
		return nil, mlBad(n, "coefficients", "%d of them for %d classes, not a multiple", len(coef), c.Classes)
	case c.Classes == 1 && labels != 0 && labels != 2:
		return nil, mlBad(n, labelsAttr, "%d labels for one row of coefficients, want 2 (or none)", labels)
	case c.Classes > 1 && labels != c.Classes:
		return nil, mlBad(n, labelsAttr, "%d labels for %d classes (intercepts)", labels, c.Classes)
	case c.Classes == 1 && labels == 2 && c.Post == PostProbit:
		return nil, n.Unsupported("post_transform PROBIT with one row of coefficients and two labels (ONNX Runtime leaves the second score unset)")
	}
	c.Binary = c.Classes == 1 && labels == 2
	if labels == 0 {
		c.Labels.Ints = []int64{0, 1}
	}
	c.Features = len(coef) / c.Classes
	return c, nil
}

// LinearRegressor is a LinearRegressor node: target t of a row x is
// Intercepts[t] (0 without intercepts) + Σ_f Coefficients[t·Features+f]·x[f],
// then Post over the row of Targets values.
type LinearRegressor struct {
	Coefficients      []float32
	Intercepts        []float32 // Targets of them, or nil
	Targets, Features int
	Post              PostTransform
}

// LinearRegressorOf reads and checks a LinearRegressor node's attributes.
func LinearRegressorOf(n Node) (*LinearRegressor, error) {
	a := mlAttrs{n: n}
	r := &LinearRegressor{Coefficients: a.floats("coefficients"), Intercepts: a.floats("intercepts"), Post: a.postTransform()}
	targets := a.int("targets", 1)
	if a.err != nil {
		return nil, a.err
	}
	switch {
	case len(r.Coefficients) == 0:
		return nil, mlBad(n, "coefficients", "missing or empty")
	case targets < 1 || targets > int64(len(r.Coefficients)):
		return nil, mlBad(n, "targets", "%d, want 1 to %d (the coefficients)", targets, len(r.Coefficients))
	case len(r.Coefficients)%int(targets) != 0:
		return nil, mlBad(n, "coefficients", "%d of them for %d targets, not a multiple", len(r.Coefficients), targets)
	case len(r.Intercepts) != 0 && len(r.Intercepts) != int(targets):
		return nil, mlBad(n, "intercepts", "%d of them for %d targets", len(r.Intercepts), targets)
	}
	r.Targets = int(targets)
	r.Features = len(r.Coefficients) / r.Targets
	return r, nil
}

// SVMKernel is the kernel of an SVM node, kernel_type with kernel_params
// (γ, c₀, d), each 0 when absent: LINEAR x·v, POLY (γ·x·v + c₀)^d, RBF
// e^(−γ·|x−v|²), SIGMOID tanh(γ·x·v + c₀).
type SVMKernel struct {
	Kind                 int // SVMLinear, SVMPoly, SVMRBF or SVMSigmoid
	Gamma, Coef0, Degree float64
}

// The kernel types, in the order of svmKernelNames.
const (
	SVMLinear = iota
	SVMPoly
	SVMRBF
	SVMSigmoid
)

var svmKernelNames = []string{"LINEAR", "POLY", "RBF", "SIGMOID"}

// svmKernel reads kernel_type and kernel_params.
func (a *mlAttrs) svmKernel() SVMKernel {
	k := SVMKernel{Kind: a.choice("kernel_type", "LINEAR", svmKernelNames...)}
	switch p := a.floats("kernel_params"); len(p) {
	case 0:
	case 3:
		k.Gamma, k.Coef0, k.Degree = float64(p[0]), float64(p[1]), float64(p[2])
	default:
		a.bad("kernel_params", "%d values, want 3 (gamma, coef0, degree)", len(p))
	}
	return k
}

// Value is the kernel's value for row x and vector v, of equal length.
func (k *SVMKernel) Value(x []float64, v []float32) float64 {
	if k.Kind == SVMRBF {
		sum := 0.0
		for i, xi := range x {
			d := xi - float64(v[i])
			sum += d * d
		}
		return math.Exp(-k.Gamma * sum)
	}
	dot := 0.0
	for i, xi := range x {
		dot += xi * float64(v[i])
	}
	switch k.Kind {
	case SVMPoly:
		return math.Pow(k.Gamma*dot+k.Coef0, k.Degree)
	case SVMSigmoid:
		return math.Tanh(k.Gamma*dot + k.Coef0)
	}
	return dot
}

// SVMRegressor is an SVMRegressor node. With support vectors (n_supports
// > 0) a row x scores Σ_v Coefficients[v]·K(x, SupportVectors[v]) + Rho;
// without, it is the linear model Σ_f Coefficients[f]·x[f] + Rho (kernel
// LINEAR whatever kernel_type says, as in ONNX Runtime). A one-class model
// outputs 1 for a score above 0 and −1 otherwise; Post then applies to the
// row of one score (PostTransform: only PROBIT changes it).
type SVMRegressor struct {
	SVMKernel
	Vectors        int
	SupportVectors []float32 // Vectors × Features
	Coefficients   []float32 // Vectors, or Features without support vectors
	Features       int
	Rho            float64
	OneClass       bool
	Post           PostTransform
}

// SVMRegressorOf reads and checks an SVMRegressor node's attributes.
func SVMRegressorOf(n Node) (*SVMRegressor, error) {
	a := mlAttrs{n: n}
	r := &SVMRegressor{SVMKernel: a.svmKernel(), SupportVectors: a.floats("support_vectors"), Coefficients: a.floats("coefficients"),
		OneClass: a.int("one_class", 0) != 0, Post: a.postTransform()}
	vectors, rho := a.int("n_supports", 0), a.floats("rho")
	if a.err != nil {
		return nil, a.err
	}
	switch {
	case len(r.Coefficients) == 0:
		return nil, mlBad(n, "coefficients", "missing or empty")
	case len(rho) != 1:
		return nil, mlBad(n, "rho", "%d values, want 1", len(rho))
	case vectors < 0:
		return nil, mlBad(n, "n_supports", "%d, negative", vectors)
	case vectors > 0 && vectors != int64(len(r.Coefficients)):
		return nil, mlBad(n, "coefficients", "%d of them for %d support vectors (n_supports)", len(r.Coefficients), vectors)
	case vectors > 0 && (len(r.SupportVectors) == 0 || len(r.SupportVectors)%int(vectors) != 0):
		return nil, mlBad(n, "support_vectors", "%d values for %d support vectors (n_supports), not a positive multiple", len(r.SupportVectors), vectors)
	}
	r.Rho = float64(rho[0])
	r.Vectors = int(vectors)
	if r.Vectors == 0 {
		r.Kind = SVMLinear
		r.Features = len(r.Coefficients)
	} else {
		r.Features = len(r.SupportVectors) / r.Vectors
	}
	return r, nil
}

// SVMClassifier is an SVMClassifier node, of Classes classes.
//
// With support vectors (vectors_per_class summing to Vectors > 0) it is
// libsvm's one-vs-one machine: for each pair of classes i < j, in the
// order (0,1), (0,2), …, (1,2), …, the decision value is
//
//	s = Σ_{v of class i} Coefficients[(j−1)·Vectors+v]·K(x, v)
//	  + Σ_{v of class j} Coefficients[i·Vectors+v]·K(x, v) + Rho[pair],
//
// a vote for i when s > 0 and for j otherwise; the label is the Labels
// entry of the class with the most votes (the first of equal ones). Z is,
// with ProbA and ProbB (Platt scaling), the class probabilities:
// SigmoidProbability(s, ProbA[pair], ProbB[pair]) clipped to
// [1e-7, 1−1e-7] for each pair, then MulticlassProbability; without them,
// the decision values, one per pair, or for two classes (−s, s) when Post
// is NONE and (1 − s, s) otherwise (ONNX Runtime's rule; PROBIT is
// refused). Post then applies to Z's row.
//
// Without support vectors it is linear: class c scores
// Σ_f Coefficients[c·Features+f]·x[f] + Rho[0], Z holds the scores after
// Post, and the label is the Labels entry of the largest score, except
// that with two classes and no ProbA the label is Labels[1] when that
// score is at least 0.5 and every coefficient is ≥ 0, or above 0 and some
// coefficient is negative (ONNX Runtime's rule).
type SVMClassifier struct {
	SVMKernel
	Labels          Labels
	Classes         int
	VectorsPerClass []int // nil without support vectors
	Starts          []int // the index of each class's first support vector
	Vectors         int
	SupportVectors  []float32 // Vectors × Features
	Coefficients    []float32
	Features        int
	Rho             []float32
	ProbA, ProbB    []float32 // one per pair, or nil
	AllPositive     bool      // every coefficient is ≥ 0
	Post            PostTransform
}

// Pairs is the number of pairs of classes, Classes·(Classes−1)/2.
func (c *SVMClassifier) Pairs() int { return c.Classes * (c.Classes - 1) / 2 }

// ScoreWidth is the number of columns of Z.
func (c *SVMClassifier) ScoreWidth() int {
	if c.Vectors > 0 && len(c.ProbA) == 0 {
		return max(c.Pairs(), 2)
	}
	return c.Classes
}

// SVMClassifierOf reads and checks an SVMClassifier node's attributes.
func SVMClassifierOf(n Node) (*SVMClassifier, error) {
	a := mlAttrs{n: n}
	ints, strs, classes := a.classLabels()
	c := &SVMClassifier{SVMKernel: a.svmKernel(), Labels: Labels{ints, strs}, Classes: classes,
		SupportVectors: a.floats("support_vectors"), Coefficients: a.floats("coefficients"), Rho: a.floats("rho"),
		ProbA: a.floats("prob_a"), ProbB: a.floats("prob_b"), Post: a.postTransform()}
	perClass := a.ints("vectors_per_class")
	if a.err != nil {
		return nil, a.err
	}
	switch {
	case classes == 0:
		return nil, mlBad(n, "classlabels_ints", "missing: a classifier needs classlabels_ints or classlabels_strings")
	case len(c.Coefficients) == 0:
		return nil, mlBad(n, "coefficients", "missing or empty")
	case len(c.ProbA) != len(c.ProbB):
		return nil, mlBad(n, "prob_b", "%d values, prob_a has %d", len(c.ProbB), len(c.ProbA))
	}
	for i, v := range perClass {
		if v < 0 || v > int64(len(c.SupportVectors)) {
			return nil, mlBad(n, "vectors_per_class", "element %d is %d, want 0 to %d (the support_vectors values)", i, v, len(c.SupportVectors))
		}
		c.Starts = append(c.Starts, c.Vectors)
		c.VectorsPerClass = append(c.VectorsPerClass, int(v))
		c.Vectors += int(v) // at most len(perClass)·len(support_vectors)
	}
	c.AllPositive = true
	for _, w := range c.Coefficients {
		c.AllPositive = c.AllPositive && w >= 0
	}
	if c.Vectors == 0 { // linear
		c.Kind, c.VectorsPerClass, c.Starts = SVMLinear, nil, nil
		switch {
		case len(c.Coefficients)%classes != 0:
			return nil, mlBad(n, "coefficients", "%d of them for %d classes, not a multiple", len(c.Coefficients), classes)
		case len(c.Rho) == 0:
			return nil, mlBad(n, "rho", "missing")
		}
		c.Features = len(c.Coefficients) / classes
		return c, nil
	}
	pairs := product(classes, classes-1) / 2
	switch {
	case classes < 2:
		return nil, mlBad(n, "classlabels_ints", "one class, want 2 or more for support vectors")
	case len(perClass) != classes:
		return nil, mlBad(n, "vectors_per_class", "%d counts for %d classes", len(perClass), classes)
	case len(c.SupportVectors)%c.Vectors != 0:
		return nil, mlBad(n, "support_vectors", "%d values for %d support vectors, not a multiple", len(c.SupportVectors), c.Vectors)
	case product(classes-1, c.Vectors) != len(c.Coefficients):
		return nil, mlBad(n, "coefficients", "%d of them, want %d (classes−1)·%d (support vectors)", len(c.Coefficients), classes-1, c.Vectors)
	case pairs != len(c.Rho):
		return nil, mlBad(n, "rho", "%d values, want %d, one per pair of classes", len(c.Rho), pairs)
	case len(c.ProbA) != 0 && len(c.ProbA) != pairs:
		return nil, mlBad(n, "prob_a", "%d values, want %d, one per pair of classes", len(c.ProbA), pairs)
	case classes == 2 && len(c.ProbA) == 0 && c.Post == PostProbit:
		return nil, n.Unsupported("post_transform PROBIT with two classes and no prob_a (ONNX Runtime leaves the second score unset)")
	}
	c.Features = len(c.SupportVectors) / c.Vectors
	return c, nil
}

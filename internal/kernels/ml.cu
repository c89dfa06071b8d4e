// The operators of ai.onnx.ml that run on the device: the tree ensembles,
// the linear models and the feature transforms. What they compute is
// opsem's (inference/internal/opsem: mltree.go, mlmodels.go,
// mlfeatures.go, mlscores.go), in float64 as the CPU backend computes it.
//
// The tree ensembles (TreeEnsembleRegressor, TreeEnsembleClassifier,
// TreeEnsemble), in the manner of RAPIDS' Forest Inference Library: the
// rows by blocks of trees. tree_walk_* gives each thread one row and one
// lane, a contiguous block of the ensemble's trees: it walks the row down each tree of its lane in turn and aggregates the
// leaves' weights into the lane's partial result. tree_finish then gives
// each thread a row: it folds the lanes' partial results in lane order
// and finishes the row (the aggregate, the base values, the classifier's
// binary rules and label, the post transform) straight into the outputs.
// Two launches an ensemble: the finish's float64 exp and log need 70
// registers (sm_80) where the walk needs 32, which a fused kernel would
// hold in every walking thread.
//
// The ensemble is compiled once per model (inference/cuda/treelayout.go)
// into one buffer of the model's weights: a tree_ensemble header, then
// its sections at the byte offsets the header gives. A tree's nodes are
// tree_node records, 16 bytes each, the two children of a node side by
// side (first at child, second at child + 1), so a step is one load: the
// comparison mode and the direction of a missing value are folded in at
// compile time (opsem.ThresholdTest) into "u <= thr takes the first
// child", u the feature or its negation, for the ordering modes; EQ, NEQ
// and MEMBER keep their test and a NaN's side. A leaf holding one weight
// holds it in the node; others point into the weights section.
#include "common.cuh"

// Node kinds (tree_node.info & 3). The feature index is info >> 4.
#define TREE_LE 0     // first child when u <= thr, u the feature (negated with TREE_NEG); NaN: second
#define TREE_EQ 1     // first child when x == thr, or x is NaN and TREE_NAN_FIRST
#define TREE_MEMBER 2 // first child when x is one of members[range[0], range[1]), or NaN and TREE_NAN_FIRST
#define TREE_LEAF 3   // child: the leaf's weights (TREE_ONE: the target of the node's one weight, v.d)
// Node flags.
#define TREE_NEG 4       // TREE_LE: compare the negated feature
#define TREE_NAN_FIRST 8 // TREE_EQ, TREE_MEMBER: a NaN takes the first child
#define TREE_ONE 4       // TREE_LEAF: one weight, in the node
#define TREE_FEATURE_SHIFT 4

// Ensemble flags (tree_ensemble.flags).
#define TREE_CLASSIFIER 1   // TreeEnsembleClassifier: FinishClassification's rules and a label
#define TREE_ONE_CLASS_ID 2 // opsem.TreeClassifier.OneClassID
#define TREE_POSITIVE 4     // opsem.TreeClassifier.PositiveWeights
#define TREE_TRACK 8        // which targets a row's leaves reach matters (MIN, MAX, classifiers): has is kept

// Aggregates (opsem.TreeAggregate).
#define TREE_AVERAGE 0
#define TREE_SUM 1
#define TREE_MIN 2
#define TREE_MAX 3

// Post transforms (opsem.PostTransform).
#define TREE_POST_NONE 0
#define TREE_POST_SOFTMAX 1
#define TREE_POST_LOGISTIC 2
#define TREE_POST_SOFTMAX_ZERO 3
#define TREE_POST_PROBIT 4

// The scores' element type (the y_type parameter).
#define TREE_Y_F32 0
#define TREE_Y_F64 1

// tree_ensemble is the compiled ensemble's header; the sections follow at
// byte offsets from it.
struct tree_ensemble {
	long long trees, targets, aggregate, transform, flags;
	long long nbase;      // base values: 0, or one per target (or one for a binary classifier)
	long long nodes;      // tree_node[]
	long long roots;      // int[trees]: each tree's root node
	long long weights;    // tree_weight[]: the weights of the leaves without TREE_ONE
	long long leaf_start; // int[]: leaf l's weights are weights[leaf_start[l] : leaf_start[l+1]]
	long long members;    // the member sets, in the compare type
	long long base;       // double[nbase]
	long long labels;     // long long[targets]: a classifier's int64 labels (0: none)
};

struct alignas(16) tree_node {
	union {
		float f;      // TREE_LE, TREE_EQ in float32
		double d;     // TREE_LE, TREE_EQ in float64; TREE_LEAF with TREE_ONE: the weight
		int range[2]; // TREE_MEMBER: the node's members
	} v;
	unsigned int info; // kind | flags | feature << TREE_FEATURE_SHIFT
	int child;         // the first child's node (the second is child + 1); a leaf's
};

struct tree_weight {
	double value;
	long long target;
};

DEVICE float node_threshold(const tree_node &n, float) { return n.v.f; }
DEVICE double node_threshold(const tree_node &n, double) { return n.v.d; }

// tree_fold folds weight w into a target's aggregate a (has: whether it
// holds one), as the CPU backend aggregates: sums in the order of the
// trees, MIN and MAX keeping the first of equal weights.
DEVICE void tree_fold(long long aggregate, double &a, bool &has, double w) {
	switch (aggregate) {
	case TREE_MIN:
		if (!has || w < a) a = w;
		break;
	case TREE_MAX:
		if (!has || w > a) a = w;
		break;
	default:
		a += w;
	}
	has = true;
}

// tree_leaf walks row xr down the tree from node k to its leaf.
template <class X, class T>
DEVICE tree_node tree_leaf(const tree_node *nodes, const T *members, const X *xr, int k) {
	tree_node nd = nodes[k];
	for (;;) {
		const unsigned int kind = nd.info & 3u;
		if (kind == TREE_LEAF) return nd;
		T u = (T)xr[nd.info >> TREE_FEATURE_SHIFT];
		bool first;
		if (kind == TREE_LE) {
			if (nd.info & TREE_NEG) u = -u;
			first = u <= node_threshold(nd, u);
		} else {
			first = (nd.info & TREE_NAN_FIRST) && u != u;
			if (kind == TREE_EQ) {
				first = first || u == node_threshold(nd, u);
			} else {
				for (int j = nd.v.range[0]; !first && j < nd.v.range[1]; j++) first = u == members[j];
			}
		}
		nd = nodes[nd.child + (first ? 0 : 1)];
	}
}

// ---- the row's finish: opsem's rules, in float64 ---------------------------------

// tree_probit is √2·erf⁻¹(2s−1), erf⁻¹ by Winitzki's approximation
// (a = 0.147), as opsem's probit: 4.3307467507998734 is 2/(π·a) rounded
// once, as Go's constant arithmetic gives it, and v·v is rounded before
// the subtraction (no fused multiply-add), as Go computes it.
DEVICE double tree_probit(double s) {
	const double x = 2 * s - 1;
	const double sgn = x < 0 ? -1.0 : 1.0;
	const double a = 0.147;
	const double l = log((1 - x) * (1 + x));
	const double v = 4.3307467507998734 + 0.5 * l;
	return 1.4142135623730951 * sgn * sqrt(-v + sqrt(__dmul_rn(v, v) - l / a));
}

// tree_transform applies post transform post to row p of k scores
// (opsem.PostTransform.Apply). The kernel calls it once: inlined, the
// float64 exp and log are most of the code.
DEVICE void tree_transform(long long post, double *p, long long k) {
	if (k == 1 && post != TREE_POST_PROBIT) return; // a row of one score: PROBIT alone applies
	switch (post) {
	case TREE_POST_LOGISTIC:
		for (long long j = 0; j < k; j++) {
			const double s = p[j], e = exp(s >= 0 ? -s : s);
			p[j] = s >= 0 ? 1 / (1 + e) : e / (1 + e); // 1/(1+e^−s) without overflow
		}
		break;
	case TREE_POST_SOFTMAX:
	case TREE_POST_SOFTMAX_ZERO: {
		double m = -1.7976931348623157e308; // the largest score that is not NaN
		for (long long j = 0; j < k; j++)
			if (p[j] > m) m = p[j];
		double sum = 0, scale = 0;
		if (post == TREE_POST_SOFTMAX_ZERO) scale = exp(-m);
		for (long long j = 0; j < k; j++) {
			const double s = p[j];
			if (post == TREE_POST_SOFTMAX || s > 1e-7 || s < -1e-7) {
				p[j] = exp(s - m);
				sum += p[j];
			} else {
				p[j] = s * scale;
			}
		}
		for (long long j = 0; j < k; j++) p[j] = (post == TREE_POST_SOFTMAX_ZERO && sum == 0) ? 0 : p[j] / sum;
		break;
	}
	case TREE_POST_PROBIT:
		for (long long j = 0; j < k; j++) p[j] = tree_probit(p[j]);
		break;
	}
}

// tree_finish_regression is opsem's FinishRegression on row p of k
// aggregates (has: which hold one, for MIN and MAX) but for the post
// transform, which applies to all k.
DEVICE void tree_finish_regression(const tree_ensemble *e, const double *base, double *p, const unsigned char *has,
                                   long long k) {
	for (long long j = 0; j < k; j++) {
		double v = p[j];
		if (e->aggregate == TREE_AVERAGE) {
			v /= (double)e->trees;
		} else if ((e->aggregate == TREE_MIN || e->aggregate == TREE_MAX) && !has[j]) {
			v = 0;
		}
		if (e->nbase > 0) v += base[j];
		p[j] = v;
	}
}

// tree_finish_classification is opsem's FinishClassification on row p of
// k class scores but for the post transform: it returns the index of the
// row's label, and sets *transformed to the number of scores (from p[0])
// the post transform then applies to: all k, or where a binary
// classifier's one score is expanded, 1 for PROBIT ([probit(s), 0]), 2
// for LOGISTIC ([σ(−s), σ(s)] is LOGISTIC of [−s, s]) and 0 otherwise.
DEVICE long long tree_finish_classification(const tree_ensemble *e, const double *base, double *p,
                                            const unsigned char *has, long long k, long long *transformed) {
	const long long nbase = e->nbase;
	*transformed = k;
	if (k > 2) {
		for (long long j = 0; j < nbase; j++) p[j] += base[j];
		long long best = -1;
		for (long long j = 0; j < k; j++)
			if ((has[j] || j < nbase) && (best < 0 || p[j] > p[best])) best = j;
		return best < 0 ? 0 : best;
	}
	enum { none, complement, sign };
	bool two = has[1];
	int expand = none;
	if (nbase == 2) {
		if (has[1]) {
			p[1] = base[1] + p[0];
			p[0] = -p[1];
		} else {
			p[0] += base[0];
			p[1] += base[1];
		}
		two = true;
	} else if (nbase == 1) {
		p[0] += base[0];
	} else {
		expand = sign;
	}
	const double pos = has[1] ? p[1] : has[0] ? p[0] : 0.0;
	long long label = 0;
	if ((e->flags & TREE_ONE_CLASS_ID) && (e->flags & TREE_POSITIVE)) {
		expand = complement;
		label = pos > 0.5;
	} else if (e->flags & TREE_ONE_CLASS_ID) {
		expand = sign;
		label = pos > 0;
	} else {
		label = pos > 0;
	}
	if (two) return label;
	const double s = p[0];
	*transformed = 0;
	if (e->transform == TREE_POST_PROBIT) {
		p[1] = 0;
		*transformed = 1;
	} else if (expand == complement) {
		p[0] = 1 - s;
		p[1] = s;
	} else if (expand == sign) {
		p[0] = -s;
		p[1] = s;
		if (e->transform == TREE_POST_LOGISTIC) *transformed = 2;
	} else {
		p[1] = 0;
	}
	return label;
}

// ---- the tree kernels ------------------------------------------------------------

// tree_walk runs ensemble e on x, [rows, feats] of X, comparing in T:
// thread (lane, row) walks the row down trees [trees·lane/lanes,
// trees·(lane+1)/lanes) in order, aggregating the weights of its leaves
// into partial[(lane·rows + row)·k …], k the targets (and which targets
// they reach into has, with TREE_TRACK): [lanes, rows, k] scratch. With
// one lane the sums run in the CPU backend's order exactly; with more,
// tree_finish adds each lane's sum in turn.
template <class X, class T>
DEVICE void tree_walk(const tree_ensemble *e, const X *x, long long rows, long long feats, long long lanes,
                      double *partial, unsigned char *has) {
	const char *at = (const char *)e;
	const tree_node *nodes = (const tree_node *)(at + e->nodes);
	const int *roots = (const int *)(at + e->roots);
	const tree_weight *weights = (const tree_weight *)(at + e->weights);
	const int *leaf_start = (const int *)(at + e->leaf_start);
	const T *members = (const T *)(at + e->members);
	const long long k = e->targets, trees = e->trees, aggregate = e->aggregate;
	const bool track = (e->flags & TREE_TRACK) != 0;
	GRID_STRIDE(i, rows * lanes) { // consecutive threads: consecutive rows of one lane, walking the same trees
		const long long lane = i / rows, row = i % rows;
		const int t0 = (int)(trees * lane / lanes), t1 = (int)(trees * (lane + 1) / lanes);
		const X *xr = x + row * feats;
		double *p = partial + i * k;
		unsigned char *h = track ? has + i * k : 0;
		if (k == 1) { // every weight is target 0's: aggregate in registers
			double a = 0;
			bool any = false;
			for (int t = t0; t < t1; t++) {
				const tree_node leaf = tree_leaf<X, T>(nodes, members, xr, roots[t]);
				if (leaf.info & TREE_ONE) {
					tree_fold(aggregate, a, any, leaf.v.d);
				} else {
					for (int j = leaf_start[leaf.child]; j < leaf_start[leaf.child + 1]; j++)
						tree_fold(aggregate, a, any, weights[j].value);
				}
			}
			p[0] = a;
			if (h) h[0] = any;
			continue;
		}
		for (long long c = 0; c < k; c++) p[c] = 0;
		if (h)
			for (long long c = 0; c < k; c++) h[c] = 0;
		for (int t = t0; t < t1; t++) {
			const tree_node leaf = tree_leaf<X, T>(nodes, members, xr, roots[t]);
			const bool one = (leaf.info & TREE_ONE) != 0;
			const int lo = one ? 0 : leaf_start[leaf.child], hi = one ? 1 : leaf_start[leaf.child + 1];
			for (int j = lo; j < hi; j++) {
				const long long target = one ? leaf.child : weights[j].target;
				const double w = one ? leaf.v.d : weights[j].value;
				if (h) {
					bool any = h[target];
					tree_fold(aggregate, p[target], any, w);
					h[target] = any;
				} else {
					p[target] += w;
				}
			}
		}
	}
}

// Entry points by input type and compare type: float32 rows compared in
// float32 (float thresholds) or float64 (double thresholds), float64 rows
// in float64.
KERNEL tree_walk_f32(const tree_ensemble *e, const float *x, long long rows, long long feats, long long lanes,
                     double *partial, unsigned char *has) {
	tree_walk<float, float>(e, x, rows, feats, lanes, partial, has);
}
KERNEL tree_walk_f32_f64(const tree_ensemble *e, const float *x, long long rows, long long feats, long long lanes,
                         double *partial, unsigned char *has) {
	tree_walk<float, double>(e, x, rows, feats, lanes, partial, has);
}
KERNEL tree_walk_f64(const tree_ensemble *e, const double *x, long long rows, long long feats, long long lanes,
                     double *partial, unsigned char *has) {
	tree_walk<double, double>(e, x, rows, feats, lanes, partial, has);
}

// tree_finish finishes each row of tree_walk's partial results: it folds
// lanes 1… into lane 0, in lane order, finishes the row and writes its k
// scores to y ([rows, k] of y_type; none when null) and its label to
// labels (when not null).
KERNEL tree_finish(const tree_ensemble *e, long long rows, long long lanes, double *partial, unsigned char *has,
                   void *y, long long y_type, long long *labels) {
	const char *at = (const char *)e;
	const double *base = (const double *)(at + e->base);
	const long long k = e->targets;
	GRID_STRIDE(row, rows) {
		double *p = partial + row * k;
		unsigned char *h = (e->flags & TREE_TRACK) ? has + row * k : 0;
		for (long long j = 1; j < lanes; j++) {
			const double *q = partial + (j * rows + row) * k;
			const unsigned char *hq = h ? has + (j * rows + row) * k : 0;
			for (long long c = 0; c < k; c++) {
				if (!h) {
					p[c] += q[c];
				} else if (hq[c]) {
					bool any = h[c];
					tree_fold(e->aggregate, p[c], any, q[c]);
					h[c] = any;
				}
			}
		}
		long long label = 0, transformed = k;
		if (e->flags & TREE_CLASSIFIER) {
			label = tree_finish_classification(e, base, p, h, k, &transformed);
		} else {
			tree_finish_regression(e, base, p, h, k);
		}
		tree_transform(e->transform, p, transformed);
		if (labels) labels[row] = ((const long long *)(at + e->labels))[label];
		if (y && y_type == TREE_Y_F64) {
			for (long long c = 0; c < k; c++) ((double *)y)[row * k + c] = p[c];
		} else if (y) {
			for (long long c = 0; c < k; c++) ((float *)y)[row * k + c] = (float)p[c];
		}
	}
}

// ---- the linear models -----------------------------------------------------------

// Linear model flags (the flags parameter).
#define LINEAR_CLASSIFIER 1 // LinearClassifier: a label per row
#define LINEAR_BINARY 2     // one row of coefficients and two labels: the scores are (1 − s, s), untransformed

// linear is LinearClassifier or LinearRegressor (opsem.LinearClassifier,
// opsem.LinearRegressor) on x, [rows, feats]: each thread scores a row,
// the k dot products with the rows of coef ([k, feats]) plus intercepts
// (none when null), summed in feature order in float64 as the CPU
// backend sums them, into p (scratch, [rows, width]); a classifier then
// takes its label (class k's is classes[k]): with one row of
// coefficients, the second class where s > 0, else the first highest
// score. The post transform follows (of a row of one score, PROBIT
// alone), and the width scores go to z as float32.
template <class X>
DEVICE void linear(const X *x, long long rows, long long feats, const float *coef, const float *intercepts, long long k,
                   long long post, long long flags, const long long *classes, double *p, long long width, float *z,
                   long long *labels) {
	GRID_STRIDE(row, rows) {
		const X *xr = x + row * feats;
		double *s = p + row * width;
		for (long long c = 0; c < k; c++) {
			const float *w = coef + c * feats;
			double d = 0;
			for (long long f = 0; f < feats; f++) d += __dmul_rn((double)xr[f], (double)w[f]);
			s[c] = intercepts ? (double)intercepts[c] + d : d;
		}
		long long label = 0, transformed = k;
		if ((flags & LINEAR_CLASSIFIER) && k == 1) {
			label = s[0] > 0;
			if (flags & LINEAR_BINARY) {
				const double v = s[0];
				s[0] = 1 - v;
				s[1] = v;
				transformed = 0;
			}
		} else if (flags & LINEAR_CLASSIFIER) {
			for (long long c = 1; c < k; c++)
				if (s[c] > s[label]) label = c;
		}
		tree_transform(post, s, transformed);
		if (labels) labels[row] = classes[label];
		if (z)
			for (long long c = 0; c < width; c++) z[row * width + c] = (float)s[c];
	}
}

// Entry points by the type of X (an integer X runs on the host).
KERNEL linear_f32(const float *x, long long rows, long long feats, const float *coef, const float *intercepts,
                 long long k, long long post, long long flags, const long long *classes, double *p, long long width,
                 float *z, long long *labels) {
	linear<float>(x, rows, feats, coef, intercepts, k, post, flags, classes, p, width, z, labels);
}
KERNEL linear_f64(const double *x, long long rows, long long feats, const float *coef, const float *intercepts,
                 long long k, long long post, long long flags, const long long *classes, double *p, long long width,
                 float *z, long long *labels) {
	linear<double>(x, rows, feats, coef, intercepts, k, post, flags, classes, p, width, z, labels);
}

// ---- the feature transforms ------------------------------------------------------

// Normalizer norms (opsem.NormMax, NormL1, NormL2).
#define NORM_MAX 0
#define NORM_L1 1
#define NORM_L2 2

// scaler is Scaler: y[i] = (x[i] − offset[j])·scale[j] in float64, as
// float32, j the element's feature (i mod feats) where there are several
// values, else 0.
template <class X>
DEVICE void scaler(const X *x, float *y, long long n, long long feats, const float *offset, const float *scale,
                   long long values) {
	GRID_STRIDE(i, n) {
		const long long j = values > 1 ? i % feats : 0;
		y[i] = (float)__dmul_rn((double)x[i] - (double)offset[j], (double)scale[j]);
	}
}

// normalizer is Normalizer on x, [rows, cols]: each thread divides a row
// by its norm m in float64 (MAX: the largest value, NaNs skipped, at
// least −FLT_MAX; L1: Σ|v|; L2: v as sign(v)·√(v²/Σv²)), leaving a row
// whose norm is 0 as it is.
template <class X>
DEVICE void normalizer(const X *x, float *y, long long rows, long long cols, long long norm) {
	GRID_STRIDE(row, rows) {
		const X *xr = x + row * cols;
		float *yr = y + row * cols;
		double m = norm == NORM_MAX ? -3.4028234663852886e38 : 0;
		for (long long j = 0; j < cols; j++) {
			const double v = (double)xr[j];
			if (norm == NORM_MAX) {
				if (v > m) m = v;
			} else if (norm == NORM_L1) {
				m += fabs(v);
			} else {
				m += __dmul_rn(v, v);
			}
		}
		for (long long j = 0; j < cols; j++) {
			const double v = (double)xr[j];
			if (m == 0) {
				yr[j] = (float)v;
			} else if (norm == NORM_L2) {
				yr[j] = (float)copysign(sqrt(__dmul_rn(v, v) / m), v);
			} else {
				yr[j] = (float)(v / m);
			}
		}
	}
}

// binarizer is Binarizer: 1 where x > threshold (compared in float64), 0
// elsewhere, NaN included, in x's type.
template <class T>
DEVICE void binarizer(const T *x, T *y, long long n, double threshold) {
	GRID_STRIDE(i, n) { y[i] = (double)x[i] > threshold ? (T)1 : (T)0; }
}

// imputer is Imputer: an element equal to *replaced (any NaN, when
// replaced_nan) becomes values[j], j its feature (i mod feats) where
// there are several values, else 0; the others are copied.
template <class T>
DEVICE void imputer(const T *x, T *y, long long n, long long feats, const T *values, long long nvalues,
                    const T *replaced, long long replaced_nan) {
	const T r = *replaced;
	GRID_STRIDE(i, n) {
		const T v = x[i];
		if (v != r && !(replaced_nan && v != v)) {
			y[i] = v;
		} else {
			y[i] = values[nvalues > 1 ? i % feats : 0];
		}
	}
}

// Entry points by the type of X.
KERNEL scaler_f32(const float *x, float *y, long long n, long long feats, const float *offset, const float *scale,
                 long long values) {
	scaler<float>(x, y, n, feats, offset, scale, values);
}
KERNEL normalizer_f32(const float *x, float *y, long long rows, long long cols, long long norm) {
	normalizer<float>(x, y, rows, cols, norm);
}
KERNEL binarizer_f32(const float *x, float *y, long long n, double threshold) { binarizer<float>(x, y, n, threshold); }
KERNEL imputer_f32(const float *x, float *y, long long n, long long feats, const float *values, long long nvalues,
                  const float *replaced, long long replaced_nan) {
	imputer<float>(x, y, n, feats, values, nvalues, replaced, replaced_nan);
}
KERNEL scaler_f64(const double *x, float *y, long long n, long long feats, const float *offset, const float *scale,
                 long long values) {
	scaler<double>(x, y, n, feats, offset, scale, values);
}
KERNEL normalizer_f64(const double *x, float *y, long long rows, long long cols, long long norm) {
	normalizer<double>(x, y, rows, cols, norm);
}
KERNEL binarizer_f64(const double *x, double *y, long long n, double threshold) { binarizer<double>(x, y, n, threshold); }
KERNEL imputer_f64(const double *x, double *y, long long n, long long feats, const double *values, long long nvalues,
                  const double *replaced, long long replaced_nan) {
	imputer<double>(x, y, n, feats, values, nvalues, replaced, replaced_nan);
}
KERNEL scaler_i64(const long long *x, float *y, long long n, long long feats, const float *offset, const float *scale,
                 long long values) {
	scaler<long long>(x, y, n, feats, offset, scale, values);
}
KERNEL normalizer_i64(const long long *x, float *y, long long rows, long long cols, long long norm) {
	normalizer<long long>(x, y, rows, cols, norm);
}
KERNEL binarizer_i64(const long long *x, long long *y, long long n, double threshold) { binarizer<long long>(x, y, n, threshold); }
KERNEL imputer_i64(const long long *x, long long *y, long long n, long long feats, const long long *values, long long nvalues,
                  const long long *replaced, long long replaced_nan) {
	imputer<long long>(x, y, n, feats, values, nvalues, replaced, replaced_nan);
}
KERNEL scaler_i32(const int *x, float *y, long long n, long long feats, const float *offset, const float *scale,
                 long long values) {
	scaler<int>(x, y, n, feats, offset, scale, values);
}
KERNEL normalizer_i32(const int *x, float *y, long long rows, long long cols, long long norm) {
	normalizer<int>(x, y, rows, cols, norm);
}
KERNEL binarizer_i32(const int *x, int *y, long long n, double threshold) { binarizer<int>(x, y, n, threshold); }
KERNEL imputer_i32(const int *x, int *y, long long n, long long feats, const int *values, long long nvalues,
                  const int *replaced, long long replaced_nan) {
	imputer<int>(x, y, n, feats, values, nvalues, replaced, replaced_nan);
}

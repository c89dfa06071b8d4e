package opsem

import "math"

// PostTransform is the post_transform attribute of the ai.onnx.ml
// classifiers and regressors: what is applied to a row of scores before it
// is output. The rules are ONNX Runtime's (ml_common.h,
// batched_update_scores_inplace), which exporters are checked against:
//
//   - a row of two or more scores: NONE keeps it; LOGISTIC maps each s to
//     1/(1+e^−s); SOFTMAX maps it to e^(s−m)/Σe^(s−m), m its largest
//     score; SOFTMAX_ZERO does so for the scores with |s| > 1e-7 and
//     multiplies the others by e^−m (a row whose scores are all that
//     small becomes zeros, where ONNX Runtime divides by zero); PROBIT
//     maps each s to √2·erf⁻¹(2s−1);
//   - a row of one score: PROBIT alone applies; the other transforms leave
//     it as it is.
//
// erf⁻¹ is Winitzki's approximation with a = 0.147, as ONNX Runtime and
// the ONNX reference implementation compute it (relative error under
// 2·10⁻³), not the exact inverse.
type PostTransform uint8

// The post transforms, in the order of their names in postTransformNames.
const (
	PostNone PostTransform = iota
	PostSoftmax
	PostLogistic
	PostSoftmaxZero
	PostProbit
)

var postTransformNames = []string{"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"}

func (p PostTransform) String() string { return postTransformNames[p] }

// postTransform reads attribute post_transform (NONE when absent).
func (a *mlAttrs) postTransform() PostTransform {
	return PostTransform(a.choice("post_transform", "NONE", postTransformNames...))
}

// Apply transforms row, one example's scores, in place.
func (p PostTransform) Apply(row []float64) {
	if len(row) == 1 {
		if p == PostProbit {
			row[0] = probit(row[0])
		}
		return
	}
	switch p {
	case PostLogistic:
		for i, s := range row {
			row[i] = logistic(s)
		}
	case PostSoftmax:
		m := largest(row)
		sum := 0.0
		for i, s := range row {
			row[i] = math.Exp(s - m)
			sum += row[i]
		}
		for i := range row {
			row[i] /= sum
		}
	case PostSoftmaxZero:
		m := largest(row)
		sum, scale := 0.0, math.Exp(-m)
		for i, s := range row {
			if s > 1e-7 || s < -1e-7 {
				row[i] = math.Exp(s - m)
				sum += row[i]
			} else {
				row[i] = s * scale
			}
		}
		for i := range row {
			if sum == 0 {
				row[i] = 0
			} else {
				row[i] /= sum
			}
		}
	case PostProbit:
		for i, s := range row {
			row[i] = probit(s)
		}
	}
}

// largest is the largest score of row that is not NaN (−MaxFloat64 when
// none is).
func largest(row []float64) float64 {
	m := -math.MaxFloat64
	for _, s := range row {
		if s > m {
			m = s
		}
	}
	return m
}

// logistic is 1/(1+e^−s), computed without overflow.
func logistic(s float64) float64 {
	if s >= 0 {
		return 1 / (1 + math.Exp(-s))
	}
	e := math.Exp(s)
	return e / (1 + e)
}

// probit is √2·erf⁻¹(2s−1), erf⁻¹ as PostTransform says.
func probit(s float64) float64 {
	x := 2*s - 1
	sgn := 1.0
	if x < 0 {
		sgn = -1
	}
	const a = 0.147
	l := math.Log((1 - x) * (1 + x))
	v := 2/(math.Pi*a) + 0.5*l
	return math.Sqrt2 * sgn * math.Sqrt(-v+math.Sqrt(v*v-l/a))
}

// SigmoidProbability is libsvm's Platt scaling of a one-vs-one decision
// value s with coefficients A and B: 1/(1+e^(A·s+B)), which ONNX Runtime
// writes 1 − logistic(A·s+B).
func SigmoidProbability(s, a, b float64) float64 { return 1 - logistic(s*a+b) }

// ArgMax returns the index of row's largest score, the first of equal ones
// (a NaN is never larger; a NaN first score stays chosen): the class of a
// row of scores, as ONNX Runtime picks it.
func ArgMax[T int64 | float64](row []T) int {
	best := 0
	for j := 1; j < len(row); j++ {
		if row[j] > row[best] {
			best = j
		}
	}
	return best
}

// MulticlassProbability turns the pairwise probabilities r (k×k, r[i·k+j]
// the probability of class i against class j) into one probability per
// class, into p: the fixed point of Wu, Lin and Weng's method 2
// (libsvm's multiclass_probability), at most max(100, k) iterations,
// stopping once every |(Qp)ᵢ − pᵀQp| < 0.005/k. q and qp are scratch of k·k
// and k.
func MulticlassProbability(k int, r, p, q, qp []float64) {
	for t := range k {
		p[t] = 1 / float64(k)
		q[t*k+t] = 0
		for j := range t {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = q[j*k+t]
		}
		for j := t + 1; j < k; j++ {
			q[t*k+t] += r[j*k+t] * r[j*k+t]
			q[t*k+j] = -r[j*k+t] * r[t*k+j]
		}
	}
	eps := 0.005 / float64(k)
	for range max(100, k) {
		pqp := 0.0
		for t := range k {
			qp[t] = 0
			for j := range k {
				qp[t] += q[t*k+j] * p[j]
			}
			pqp += p[t] * qp[t]
		}
		worst := 0.0
		for t := range k {
			worst = max(worst, math.Abs(qp[t]-pqp))
		}
		if worst < eps {
			return
		}
		for t := range k {
			diff := (-qp[t] + pqp) / q[t*k+t]
			p[t] += diff
			pqp = (pqp + diff*(diff*q[t*k+t]+2*qp[t])) / (1 + diff) / (1 + diff)
			for j := range k {
				qp[j] = (qp[j] + diff*q[t*k+j]) / (1 + diff)
				p[j] /= 1 + diff
			}
		}
	}
}

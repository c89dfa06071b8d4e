// Elementwise kernels: one entry point per family, the operator chosen by
// a code (U_* and B_* below, which inference/cuda/lower_elementwise.go reads
// from the generated codes_gen.go: kernels.U_RELU, …), so a new operator is
// a case here, not a new entry point.
#include "common.cuh"

// Unary operator codes.
#define U_RELU 0
#define U_SIGMOID 1
#define U_TANH 2
#define U_EXP 3
#define U_LOG 4
#define U_SQRT 5
#define U_NEG 6
#define U_ABS 7
#define U_RECIP 8
#define U_FLOOR 9
#define U_CEIL 10
#define U_ROUND 11
#define U_SIN 12
#define U_COS 13
#define U_ERF 14
#define U_SIGN 15
#define U_LEAKYRELU 16   // a: alpha
#define U_ELU 17         // a: alpha
#define U_SELU 18        // a: alpha, b: gamma
#define U_HARDSIGMOID 19 // a: alpha, b: beta
#define U_HARDSWISH 20
#define U_SOFTPLUS 21
#define U_SOFTSIGN 22
#define U_CLIP 23        // a: min, b: max
#define U_GELU 24        // exact (erf)
#define U_GELU_TANH 25
#define U_IDENTITY 26
#define U_TAN 27
#define U_ASIN 28
#define U_ACOS 29
#define U_ATAN 30
#define U_SINH 31
#define U_COSH 32
#define U_ASINH 33
#define U_ACOSH 34
#define U_ATANH 35
#define U_THRESHOLDEDRELU 36 // a: alpha
#define U_CELU 37            // a: alpha
#define U_MISH 38
#define U_SHRINK 39 // a: lambd, b: bias
#define U_SWISH 40  // a: alpha

DEVICE float round_half_even(float x) {
	float r = rintf(x);
	return r;
}

DEVICE float unary(long long op, float x, float a, float b) {
	switch (op) {
	case U_RELU: return x < 0.0f ? 0.0f : x;
	case U_SIGMOID: return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
	case U_TANH: return tanhf(x);
	case U_EXP: return expf(x);
	case U_LOG: return logf(x);
	case U_SQRT: return sqrtf(x);
	case U_NEG: return -x;
	case U_ABS: return fabsf(x);
	case U_RECIP: return 1.0f / x;
	case U_FLOOR: return floorf(x);
	case U_CEIL: return ceilf(x);
	case U_ROUND: return round_half_even(x);
	case U_SIN: return sinf(x);
	case U_COS: return cosf(x);
	case U_ERF: return erff(x);
	case U_SIGN: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x);
	case U_LEAKYRELU: return x < 0.0f ? a * x : x;
	case U_ELU: return x < 0.0f ? a * (expf(x) - 1.0f) : x;
	case U_SELU: return x <= 0.0f ? b * (a * expf(x) - a) : b * x;
	case U_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, a * x + b));
	case U_HARDSWISH: return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
	case U_SOFTPLUS: return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
	case U_SOFTSIGN: return x / (1.0f + fabsf(x));
	case U_CLIP: { // a > b gives b everywhere; NaN stays
		float v = x < a ? a : x;
		return v > b ? b : v;
	}
	case U_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
	case U_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
	case U_IDENTITY: return x;
	case U_TAN: return tanf(x);
	case U_ASIN: return asinf(x);
	case U_ACOS: return acosf(x);
	case U_ATAN: return atanf(x);
	case U_SINH: return sinhf(x);
	case U_COSH: return coshf(x);
	case U_ASINH: return asinhf(x);
	case U_ACOSH: return acoshf(x);
	case U_ATANH: return atanhf(x);
	case U_THRESHOLDEDRELU: return x > a ? x : 0.0f;
	case U_CELU: return fmaxf(0.0f, x) + fminf(0.0f, a * (expf(x / a) - 1.0f));
	case U_MISH: return x * tanhf(x > 20.0f ? x : log1pf(expf(x)));
	case U_SHRINK: return x < -a ? x + b : (x > a ? x - b : 0.0f);
	case U_SWISH: return x * (a * x >= 0.0f ? 1.0f / (1.0f + expf(-a * x)) : expf(a * x) / (1.0f + expf(a * x)));
	}
	return x;
}

// unary_f32 and unary_f16: y[i] = op(x[i]) for i < n; a and b are the
// operator's attributes (alpha, beta, bounds).
template <class S> DEVICE void unary_s(long long op, S *__restrict__ y, const S *__restrict__ x, long long n, double a,
                                       double b) {
	float fa = (float)a, fb = (float)b;
	GRID_STRIDE(i, n) { st(y, i, unary(op, ld(x, i), fa, fb)); }
}

KERNEL unary_f32(long long op, float *__restrict__ y, const float *__restrict__ x, long long n, double a,
                 double b) {
	unary_s(op, y, x, n, a, b);
}

KERNEL unary_f16(long long op, half_t *__restrict__ y, const half_t *__restrict__ x, long long n, double a,
                 double b) {
	unary_s(op, y, x, n, a, b);
}

// epilogue_f32 finishes a product y (a GEMM's output, [images][channels]
// [size] with the channels the bias indexes) in place with the epilogue
// the graph passes fused into its node (inference/graph/passes
// FuseEpilogues), in the CPU backend's order: v = y[i] + bias[(i / size) %
// channels] + residual[(i / rsize) % rcount] (bias and residual may be
// null; a residual of y's shape has rsize 1 and rcount total, one that
// broadcasts along y's outer and inner dimensions larger ones; the
// residual's producer may have deferred its own bias, res_bias, to this
// read, which a residual of y's shape takes), then the clamp to [lo, hi]
// when clamp is 1 (NaN stays NaN, as Relu and Clip keep it), then the
// activation act (a U_* code with attributes a and b; −1 for none), which
// gates, v·act(v), when gate is 1. A MatMul's bias, one per column, is
// size 1. epilogue_f16 is the same for a float16 product: y is the GEMM's
// float32 accumulator, bias, residual and res_bias are float16, and the
// result is rounded once into out. epilogue_rounded_f16 finishes, in
// place, a float16 product the GEMM already rounded into y (FP16 mode's
// pointwise epilogues, which the reader usually applies instead).
template <class S, class A>
DEVICE void epilogue_s(S *out, const A *y, const S *__restrict__ bias, const S *__restrict__ residual,
                       long long total, long long size, long long channels, long long clamp, double lo, double hi,
                       long long act, double a, double b, long long gate, const S *__restrict__ res_bias,
                       long long rsize, long long rcount) {
	float flo = (float)lo, fhi = (float)hi, fa = (float)a, fb = (float)b;
	GRID_STRIDE(i, total) {
		float v = ld(y, i);
		if (bias) v += ld(bias, (i / size) % channels);
		if (residual) {
			float r = ld(residual, (i / rsize) % rcount);
			v += res_bias ? r + ld(res_bias, (i / size) % channels) : r;
		}
		if (clamp) {
			if (v < flo) v = flo;
			if (v > fhi) v = fhi;
		}
		if (act >= 0) {
			float u = unary(act, v, fa, fb);
			v = gate ? v * u : u;
		}
		st(out, i, v);
	}
}

KERNEL epilogue_f32(float *y, const float *__restrict__ bias, const float *__restrict__ residual, long long total,
                    long long size, long long channels, long long clamp, double lo, double hi, long long act,
                    double a, double b, long long gate, const float *__restrict__ res_bias, long long rsize,
                    long long rcount) {
	epilogue_s(y, y, bias, residual, total, size, channels, clamp, lo, hi, act, a, b, gate, res_bias, rsize, rcount);
}

KERNEL epilogue_f16(half_t *__restrict__ out, const float *__restrict__ y, const half_t *__restrict__ bias,
                    const half_t *__restrict__ residual, long long total, long long size, long long channels,
                    long long clamp, double lo, double hi, long long act, double a, double b, long long gate,
                    const half_t *__restrict__ res_bias, long long rsize, long long rcount) {
	epilogue_s(out, y, bias, residual, total, size, channels, clamp, lo, hi, act, a, b, gate, res_bias, rsize, rcount);
}

KERNEL epilogue_rounded_f16(half_t *y, const half_t *__restrict__ bias, const half_t *__restrict__ residual,
                            long long total, long long size, long long channels, long long clamp, double lo,
                            double hi, long long act, double a, double b, long long gate,
                            const half_t *__restrict__ res_bias, long long rsize, long long rcount) {
	epilogue_s(y, y, bias, residual, total, size, channels, clamp, lo, hi, act, a, b, gate, res_bias, rsize, rcount);
}

// unary_clip_*: Clip with bounds in device memory, one element each; a
// bound that is absent (has_lo or has_hi 0) is not read and does not
// limit. A lower bound above the upper one gives the upper one.
template <class T> DEVICE void clip(T *y, const T *x, long long n, const T *lo, const T *hi, long long has_lo,
                                    long long has_hi) {
	T l = has_lo ? *lo : (T)0, h = has_hi ? *hi : (T)0;
	GRID_STRIDE(i, n) {
		T v = x[i];
		if (has_lo && v < l) v = l;
		if (has_hi && v > h) v = h;
		y[i] = v;
	}
}

KERNEL unary_clip_f32(float *__restrict__ y, const float *__restrict__ x, long long n, const float *lo,
                      const float *hi, long long has_lo, long long has_hi) {
	clip(y, x, n, lo, hi, has_lo, has_hi);
}

KERNEL unary_clip_i64(long long *__restrict__ y, const long long *__restrict__ x, long long n, const long long *lo,
                      const long long *hi, long long has_lo, long long has_hi) {
	clip(y, x, n, lo, hi, has_lo, has_hi);
}

KERNEL unary_clip_i32(int *__restrict__ y, const int *__restrict__ x, long long n, const int *lo, const int *hi,
                      long long has_lo, long long has_hi) {
	clip(y, x, n, lo, hi, has_lo, has_hi);
}

// Binary operator codes (binary_f32, binary_i64, binary_i32, variadic_*).
#define B_ADD 0
#define B_SUB 1
#define B_MUL 2
#define B_DIV 3   // integers: truncated; 0 for a divisor of 0 (divmod_* report it)
#define B_POW 4
#define B_MAX 5   // float: NaN propagates
#define B_MIN 6
#define B_PRELU 7 // x < 0 ? x * y : x
#define B_MOD 8   // remainder with the sign of x (C's fmod; ONNX Mod with fmod=1)
#define B_PYMOD 9 // remainder with the sign of y (Python's %; ONNX Mod with fmod=0)

DEVICE float binary(long long op, float a, float b) {
	switch (op) {
	case B_ADD: return a + b;
	case B_SUB: return a - b;
	case B_MUL: return a * b;
	case B_DIV: return a / b;
	case B_POW: return powf(a, b);
	case B_MAX: return (a != a || b != b) ? a + b : fmaxf(a, b);
	case B_MIN: return (a != a || b != b) ? a + b : fminf(a, b);
	case B_PRELU: return a < 0.0f ? a * b : a;
	case B_MOD: return fmodf(a, b);
	case B_PYMOD: {
		// fmod is exact; the correction is added in double, as the CPU
		// backend does, so the result rounds once.
		float r = fmodf(a, b);
		return (r != 0.0f && (r < 0.0f) != (b < 0.0f)) ? (float)((double)r + (double)b) : r;
	}
	}
	return a;
}

// bcast_offset is strided_offset with the common cases cheap: the
// lowerings merge dimensions, so operands of the output's shape, scalars
// and rows usually arrive with one or two dimensions that are not 1.
DEVICE long long bcast_offset(long long i, long long d0, long long d1, long long d2, long long d3, long long d4,
                              long long d5, long long s0, long long s1, long long s2, long long s3, long long s4,
                              long long s5) {
	if (d0 == 1 && d1 == 1 && d2 == 1 && d3 == 1 && d4 == 1) return i * s5;
	return strided_offset(i, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5);
}

#define BCAST_PARAMS                                                                                          \
	long long n, long long d0, long long d1, long long d2, long long d3, long long d4, long long d5, long long xs0, \
	    long long xs1, long long xs2, long long xs3, long long xs4, long long xs5, long long ys0, long long ys1,   \
	    long long ys2, long long ys3, long long ys4, long long ys5
#define X_OFFSET(i) bcast_offset(i, d0, d1, d2, d3, d4, d5, xs0, xs1, xs2, xs3, xs4, xs5)
#define Y_OFFSET(i) bcast_offset(i, d0, d1, d2, d3, d4, d5, ys0, ys1, ys2, ys3, ys4, ys5)

// binary_f32: z = op(x, y) with broadcasting. The output has dims d0..d5
// (padded with 1 on the left to MAXRANK) and n elements; x and y are read
// with strides xs0..xs5 and ys0..ys5 (0 along broadcast dimensions).
// binary_f16 is binary_f32 on float16 operands.
template <class S>
DEVICE void binary_s(long long op, S *__restrict__ z, const S *__restrict__ x, const S *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) { st(z, i, binary(op, ld(x, X_OFFSET(i)), ld(y, Y_OFFSET(i)))); }
}

KERNEL binary_f32(long long op, float *__restrict__ z, const float *__restrict__ x, const float *__restrict__ y,
                  BCAST_PARAMS) {
	binary_s(op, z, x, y, n, d0, d1, d2, d3, d4, d5, xs0, xs1, xs2, xs3, xs4, xs5, ys0, ys1, ys2, ys3, ys4, ys5);
}

KERNEL binary_f16(long long op, half_t *__restrict__ z, const half_t *__restrict__ x, const half_t *__restrict__ y,
                  BCAST_PARAMS) {
	binary_s(op, z, x, y, n, d0, d1, d2, d3, d4, d5, xs0, xs1, xs2, xs3, xs4, xs5, ys0, ys1, ys2, ys3, ys4, ys5);
}

// binary_same_f32 and binary_same_f16: z = op(x, y) for operands of the
// same shape.
template <class S>
DEVICE void binary_same_s(long long op, S *__restrict__ z, const S *__restrict__ x, const S *__restrict__ y, long long n) {
	GRID_STRIDE(i, n) { st(z, i, binary(op, ld(x, i), ld(y, i))); }
}

KERNEL binary_same_f32(long long op, float *__restrict__ z, const float *__restrict__ x,
                       const float *__restrict__ y, long long n) {
	binary_same_s(op, z, x, y, n);
}

KERNEL binary_same_f16(long long op, half_t *__restrict__ z, const half_t *__restrict__ x,
                       const half_t *__restrict__ y, long long n) {
	binary_same_s(op, z, x, y, n);
}

// Integer arithmetic wraps, as Go's does: it is done on the unsigned type
// U of the same width, where overflow is defined.
template <class T, class U> DEVICE T ineg(T a) { return (T)((U)0 - (U)a); }

// ipow is a^b exactly (wrapping); a negative b gives the truncated 1/a^|b|.
DEVICE long long ipow(long long a, long long b) {
	if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
	unsigned long long r = 1, x = (unsigned long long)a;
	for (; b > 0; b >>= 1) {
		if (b & 1) r *= x;
		x *= x;
	}
	return (long long)r;
}

template <class T, class U> DEVICE T ibinary(long long op, T a, T b) {
	switch (op) {
	case B_ADD: return (T)((U)a + (U)b);
	case B_SUB: return (T)((U)a - (U)b);
	case B_MUL: return (T)((U)a * (U)b);
	// x / -1 and x % -1 overflow for the least x (and trap on x86): Go
	// defines them as -x (wrapped) and 0.
	case B_DIV: return b == -1 ? ineg<T, U>(a) : (b == 0 ? (T)0 : a / b);
	case B_MAX: return a > b ? a : b;
	case B_MIN: return a < b ? a : b;
	case B_PRELU: return a < 0 ? (T)((U)a * (U)b) : a;
	case B_MOD: return (b == -1 || b == 0) ? (T)0 : a % b;
	case B_PYMOD: {
		T r = (b == -1 || b == 0) ? (T)0 : a % b;
		return (r != 0 && (r < 0) != (b < 0)) ? (T)((U)r + (U)b) : r;
	}
	}
	return a;
}

// binary_i64 and binary_i32: binary_f32 on integers (no B_POW: see
// binary_pow_mixed).
KERNEL binary_i64(long long op, long long *__restrict__ z, const long long *__restrict__ x,
                  const long long *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = ibinary<long long, unsigned long long>(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

KERNEL binary_i32(long long op, int *__restrict__ z, const int *__restrict__ x, const int *__restrict__ y,
                  BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = ibinary<int, unsigned int>(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

// divmod_i64 and divmod_i32: binary_i64 and binary_i32 for B_DIV, B_MOD
// and B_PYMOD with a divisor the host does not know: a divisor of 0 is
// reported on err as E_DIVZERO with the output element (report,
// common.cuh) and gives 0.
template <class T, class U> DEVICE T idivmod(long long op, T a, T b, long long i, long long *err, long long site) {
	if (b == 0) report(err, site, E_DIVZERO, i, 0);
	return ibinary<T, U>(op, a, b);
}

KERNEL divmod_i64(long long op, long long *__restrict__ z, const long long *__restrict__ x,
                  const long long *__restrict__ y, long long *err, long long site, BCAST_PARAMS) {
	GRID_STRIDE(i, n) {
		z[i] = idivmod<long long, unsigned long long>(op, x[X_OFFSET(i)], y[Y_OFFSET(i)], i, err, site);
	}
}

KERNEL divmod_i32(long long op, int *__restrict__ z, const int *__restrict__ x, const int *__restrict__ y,
                  long long *err, long long site, BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = idivmod<int, unsigned int>(op, x[X_OFFSET(i)], y[Y_OFFSET(i)], i, err, site); }
}

DEVICE double load_number(long long t, const void *p, long long i) {
	switch (t) {
	case T_F32: return (double)((const float *)p)[i];
	case T_I64: return (double)((const long long *)p)[i];
	case T_I32: return (double)((const int *)p)[i];
	}
	return (double)((const unsigned char *)p)[i];
}

DEVICE long long load_integer(long long t, const void *p, long long i) {
	switch (t) {
	case T_I64: return ((const long long *)p)[i];
	case T_I32: return (long long)((const int *)p)[i];
	}
	return (long long)((const unsigned char *)p)[i];
}

// pow_go is Go's math.Pow(x, y), the CPU backend's, for a finite x other
// than 0 and 1: for a whole y it multiplies out x's mantissa by repeated
// squaring, keeping the power of two aside, as Go does, so a power that
// double holds comes out exact and one it does not is rounded as Go
// rounds it; y = ±0.5 is a square root, as in Go. CUDA's pow errs by up
// to 2 ulps: 2^31 comes out 2147483647.9999998 (on an H200), which an
// int32 result would truncate to 2147483647, not Go's overflow to the
// least int32. The rest (NaN, infinities, 0, 1 and other fractional
// exponents) is pow's, whose special values are Go's; a fractional power
// may differ from Go's by an ulp.
DEVICE double pow_go(double x, double y) {
	double ay = fabs(y);
	if (!(fabs(x) <= 1.7976931348623157e308) || x == 0 || x == 1 || y == 0 || !(ay < 9223372036854775808.0)) {
		return pow(x, y);
	}
	if (ay == 0.5) return y > 0 ? sqrt(x) : 1 / sqrt(x);
	if (floor(ay) != ay) return pow(x, y);
	int xe0;
	double a1 = 1, x1 = frexp(x, &xe0);
	long long ae = 0, xe = xe0;
	for (long long i = (long long)ay; i != 0; i >>= 1) {
		if (xe < -4096 || 4096 < xe) { // overflows or underflows whatever is left: ldexp's
			ae += xe;
			break;
		}
		if (i & 1) {
			a1 *= x1;
			ae += xe;
		}
		x1 *= x1;
		xe <<= 1;
		if (x1 < .5) {
			x1 += x1;
			xe--;
		}
	}
	if (y < 0) {
		a1 = 1 / a1;
		ae = -ae;
	}
	// Beyond ±2200 every a1 (in [0.5, 1) in magnitude, or its inverse) is
	// ±Inf or 0 already; ldexp takes an int.
	return ldexp(a1, (int)(ae < -2200 ? -2200 : (ae > 2200 ? 2200 : ae)));
}

// binary_pow_mixed: Pow for every pair of types but float32^float32
// (binary_f32). The result has the base's type xt (float32, int64 or
// int32); the exponent has type yt. Two integers give the exact power
// (wrapping), anything else the double power as Go computes it (pow_go),
// truncated for an integer base as Go converts it (d2ll, d2i: NaN,
// infinities and powers out of range give the least value): the CPU
// backend's rules.
KERNEL binary_pow_mixed(long long xt, long long yt, void *__restrict__ z, const void *__restrict__ x,
                        const void *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) {
		long long xi = X_OFFSET(i), yi = Y_OFFSET(i);
		if (xt != T_F32 && yt != T_F32) {
			long long r = ipow(load_integer(xt, x, xi), load_integer(yt, y, yi));
			if (xt == T_I64) ((long long *)z)[i] = r;
			else ((int *)z)[i] = (int)r;
			continue;
		}
		double r = pow_go(load_number(xt, x, xi), load_number(yt, y, yi));
		switch (xt) {
		case T_F32: ((float *)z)[i] = (float)r; break;
		case T_I64: ((long long *)z)[i] = d2ll(r); break;
		default: ((int *)z)[i] = d2i(r); break;
		}
	}
}

// Integer unary codes of unary_i64 and unary_i32 are the U_* codes of
// the same operators.
template <class T, class U> DEVICE T iunary(long long op, T x, T a, T b) {
	switch (op) {
	case U_NEG: return ineg<T, U>(x);
	case U_ABS: return x < 0 ? ineg<T, U>(x) : x;
	case U_SIGN: return (T)((x > 0) - (x < 0));
	case U_RELU: return x < 0 ? (T)0 : x;
	case U_CLIP: {
		T v = x < a ? a : x;
		return v > b ? b : v;
	}
	}
	return x;
}

// unary_i64 and unary_i32: y[i] = op(x[i]); a and b are Clip's bounds.
KERNEL unary_i64(long long op, long long *__restrict__ y, const long long *__restrict__ x, long long n, long long a,
                 long long b) {
	GRID_STRIDE(i, n) { y[i] = iunary<long long, unsigned long long>(op, x[i], a, b); }
}

KERNEL unary_i32(long long op, int *__restrict__ y, const int *__restrict__ x, long long n, long long a,
                 long long b) {
	GRID_STRIDE(i, n) { y[i] = iunary<int, unsigned int>(op, x[i], (int)a, (int)b); }
}

// The variadic operators (Sum, Max, Min, Mean) fold one input per launch
// into the output z, which has n elements and dims d0..d5; y is read with
// strides ys0..ys5. The first launch (first=1) stores y broadcast; later
// ones z = op(z, y). div, when not 0, divides the result (Mean's last
// launch). z is read and written by the same thread only.
#define FOLD_PARAMS                                                                                              \
	long long n, long long d0, long long d1, long long d2, long long d3, long long d4, long long d5, long long ys0, \
	    long long ys1, long long ys2, long long ys3, long long ys4, long long ys5, long long first

// variadic_f16 is variadic_f32 on float16, for Max and Min (whose
// intermediate results are inputs' values: rounding each fold is exact);
// Sum and Mean round once, so they fold in float32 (lowerVariadic).
template <class S> DEVICE void variadic_s(long long op, S *z, const S *__restrict__ y, FOLD_PARAMS, double div) {
	float fdiv = (float)div;
	GRID_STRIDE(i, n) {
		float v = ld(y, Y_OFFSET(i));
		if (!first) v = binary(op, ld(z, i), v);
		if (div != 0.0) v = v / fdiv;
		st(z, i, v);
	}
}

KERNEL variadic_f32(long long op, float *z, const float *__restrict__ y, FOLD_PARAMS, double div) {
	variadic_s(op, z, y, n, d0, d1, d2, d3, d4, d5, ys0, ys1, ys2, ys3, ys4, ys5, first, div);
}

KERNEL variadic_f16(long long op, half_t *z, const half_t *__restrict__ y, FOLD_PARAMS, double div) {
	variadic_s(op, z, y, n, d0, d1, d2, d3, d4, d5, ys0, ys1, ys2, ys3, ys4, ys5, first, div);
}

KERNEL variadic_i64(long long op, long long *z, const long long *__restrict__ y, FOLD_PARAMS) {
	GRID_STRIDE(i, n) {
		long long v = y[Y_OFFSET(i)];
		z[i] = first ? v : ibinary<long long, unsigned long long>(op, z[i], v);
	}
}

KERNEL variadic_i32(long long op, int *z, const int *__restrict__ y, FOLD_PARAMS) {
	GRID_STRIDE(i, n) {
		int v = y[Y_OFFSET(i)];
		z[i] = first ? v : ibinary<int, unsigned int>(op, z[i], v);
	}
}

// Elementwise kernels: one entry point per family, the operator chosen by
// a code (the op* constants in inference/cuda/lower_elementwise.go), so a
// new operator is a case here, not a new entry point.
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
#define U_ISNAN 39 // output 0/1 as float; see unary_f32_bool
#define U_ISINF 40 // a: detect negative, b: detect positive

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
	case U_CLIP: return x < a ? a : (x > b ? b : x);
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
	}
	return x;
}

// unary_f32: y[i] = op(x[i]) for i < n; a and b are the operator's
// attributes (alpha, beta, bounds).
KERNEL unary_f32(long long op, float *__restrict__ y, const float *__restrict__ x, long long n, double a,
                 double b) {
	float fa = (float)a, fb = (float)b;
	GRID_STRIDE(i, n) { y[i] = unary(op, x[i], fa, fb); }
}

// Binary operator codes (float32 in, float32 out).
#define B_ADD 0
#define B_SUB 1
#define B_MUL 2
#define B_DIV 3
#define B_POW 4
#define B_MAX 5
#define B_MIN 6
#define B_PRELU 7 // x < 0 ? x * y : x
#define B_MOD 8   // fmod (ONNX Mod with fmod=1)
// Comparison codes (float32 in, bool out): binary_cmp_f32.
#define C_EQ 0
#define C_LT 1
#define C_LE 2
#define C_GT 3
#define C_GE 4

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
	}
	return a;
}

// binary_f32: z = op(x, y) with broadcasting. The output has dims d0..d5
// (padded with 1 on the left to MAXRANK) and n elements; x and y are read
// with strides xs0..xs5 and ys0..ys5 (0 along broadcast dimensions).
KERNEL binary_f32(long long op, float *__restrict__ z, const float *__restrict__ x, const float *__restrict__ y,
                  long long n, long long d0, long long d1, long long d2, long long d3, long long d4, long long d5,
                  long long xs0, long long xs1, long long xs2, long long xs3, long long xs4, long long xs5,
                  long long ys0, long long ys1, long long ys2, long long ys3, long long ys4, long long ys5) {
	GRID_STRIDE(i, n) {
		long long xi = strided_offset(i, d0, d1, d2, d3, d4, d5, xs0, xs1, xs2, xs3, xs4, xs5);
		long long yi = strided_offset(i, d0, d1, d2, d3, d4, d5, ys0, ys1, ys2, ys3, ys4, ys5);
		z[i] = binary(op, x[xi], y[yi]);
	}
}

// binary_same_f32: z = op(x, y) for operands of the same shape.
KERNEL binary_same_f32(long long op, float *__restrict__ z, const float *__restrict__ x,
                       const float *__restrict__ y, long long n) {
	GRID_STRIDE(i, n) { z[i] = binary(op, x[i], y[i]); }
}

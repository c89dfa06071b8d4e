// Comparisons and logic: kernels whose output is bool, one byte (0 or 1)
// per element. The operator is a code (C_* and L_* below, which
// inference/cuda/lower_logic.go reads from the generated codes_gen.go:
// kernels.C_EQ, …).
#include "common.cuh"

// Comparison codes of the cmp_* kernels.
#define C_EQ 0
#define C_LT 1
#define C_LE 2
#define C_GT 3
#define C_GE 4

// Logic codes of logic_binary.
#define L_AND 0
#define L_OR 1
#define L_XOR 2

// compare is false for every ordering with a NaN, and Equal(NaN, NaN) too.
template <class T> DEVICE unsigned char compare(long long op, T a, T b) {
	switch (op) {
	case C_EQ: return a == b;
	case C_LT: return a < b;
	case C_LE: return a <= b;
	case C_GT: return a > b;
	case C_GE: return a >= b;
	}
	return 0;
}

// bcast_offset is strided_offset, cheap when only the last dimension is
// not 1 (the lowerings merge dimensions, so same-shape operands and
// scalars arrive that way).
DEVICE long long bcast_offset(long long i, long long d0, long long d1, long long d2, long long d3, long long d4,
                              long long d5, long long s0, long long s1, long long s2, long long s3, long long s4,
                              long long s5) {
	if (d0 == 1 && d1 == 1 && d2 == 1 && d3 == 1 && d4 == 1) return i * s5;
	return strided_offset(i, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5);
}

// The broadcasting parameters of every binary kernel here, as in
// elementwise.cu's binary_f32: n output elements with dims d0..d5, x and y
// read with strides xs0..xs5 and ys0..ys5 (0 along broadcast dimensions).
#define BCAST_PARAMS                                                                                          \
	long long n, long long d0, long long d1, long long d2, long long d3, long long d4, long long d5, long long xs0, \
	    long long xs1, long long xs2, long long xs3, long long xs4, long long xs5, long long ys0, long long ys1,   \
	    long long ys2, long long ys3, long long ys4, long long ys5
#define X_OFFSET(i) bcast_offset(i, d0, d1, d2, d3, d4, d5, xs0, xs1, xs2, xs3, xs4, xs5)
#define Y_OFFSET(i) bcast_offset(i, d0, d1, d2, d3, d4, d5, ys0, ys1, ys2, ys3, ys4, ys5)

// cmp_f32, cmp_i64, cmp_i32 and cmp_u8 (uint8 and bool): z = op(x, y).
KERNEL cmp_f32(long long op, unsigned char *__restrict__ z, const float *__restrict__ x, const float *__restrict__ y,
               BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = compare(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

KERNEL cmp_i64(long long op, unsigned char *__restrict__ z, const long long *__restrict__ x,
               const long long *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = compare(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

KERNEL cmp_i32(long long op, unsigned char *__restrict__ z, const int *__restrict__ x, const int *__restrict__ y,
               BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = compare(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

KERNEL cmp_u8(long long op, unsigned char *__restrict__ z, const unsigned char *__restrict__ x,
              const unsigned char *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) { z[i] = compare(op, x[X_OFFSET(i)], y[Y_OFFSET(i)]); }
}

// logic_binary: And, Or and Xor of bools.
KERNEL logic_binary(long long op, unsigned char *__restrict__ z, const unsigned char *__restrict__ x,
                    const unsigned char *__restrict__ y, BCAST_PARAMS) {
	GRID_STRIDE(i, n) {
		bool a = x[X_OFFSET(i)] != 0, b = y[Y_OFFSET(i)] != 0;
		z[i] = op == L_AND ? (a && b) : (op == L_OR ? (a || b) : (a != b));
	}
}

// logic_not: y = !x for n bools.
KERNEL logic_not(unsigned char *__restrict__ y, const unsigned char *__restrict__ x, long long n) {
	GRID_STRIDE(i, n) { y[i] = x[i] == 0; }
}

// logic_isnan_f32: y = isnan(x).
KERNEL logic_isnan_f32(unsigned char *__restrict__ y, const float *__restrict__ x, long long n) {
	GRID_STRIDE(i, n) { y[i] = x[i] != x[i]; }
}

// logic_isinf_f32: y = x is +inf (when pos) or -inf (when neg).
KERNEL logic_isinf_f32(unsigned char *__restrict__ y, const float *__restrict__ x, long long n, long long neg,
                       long long pos) {
	GRID_STRIDE(i, n) {
		float v = x[i];
		y[i] = isinf(v) && (v > 0.0f ? pos != 0 : neg != 0);
	}
}

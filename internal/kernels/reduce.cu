// Reductions (ReduceX) and ArgMax/ArgMin. The lowering views the input as
// [outer, K, inner] with the K reduced elements of output element o at
// x[(o / inner)·K·inner + o % inner + k·inner]; reduced axes that are not
// contiguous are first gathered into that layout (reduce_gather_*). Small
// K: a thread per output element; large K: a block of BLOCK threads per
// output element, combining in a shared-memory tree. The kernels on float
// values have a float32 and a float16 form (NAME_f32, NAME_f16: common.cuh's
// storage types): both accumulate in float, and the float16 forms round
// each value they store once.
#include "common.cuh"

// Reduce operator codes (kernels.R_SUM, … in the generated codes_gen.go).
#define R_SUM 0
#define R_MEAN 1
#define R_MAX 2
#define R_MIN 3
#define R_PROD 4
#define R_L1 5
#define R_L2 6
#define R_LOGSUM 7
#define R_LOGSUMEXP 8
#define R_SUMSQUARE 9

#define F_INF __int_as_float(0x7f800000)

// max_nan and min_nan keep a NaN once taken, as the CPU backend does.
DEVICE float max_nan(float acc, float v) { return (v != v || v > acc) ? v : acc; }
DEVICE float min_nan(float acc, float v) { return (v != v || v < acc) ? v : acc; }

// The reduction of an empty set is r_init (finished): 0 for the sums, 1
// for Prod, -inf for Max and LogSum, +inf for Min, NaN for Mean.
DEVICE float r_init(long long op) {
	switch (op) {
	case R_MAX: return -F_INF;
	case R_MIN: return F_INF;
	case R_PROD: return 1.0f;
	}
	return 0.0f;
}

// r_fold folds element v into the accumulator.
DEVICE float r_fold(long long op, float acc, float v) {
	switch (op) {
	case R_MAX: return max_nan(acc, v);
	case R_MIN: return min_nan(acc, v);
	case R_PROD: return acc * v;
	case R_L1: return acc + fabsf(v);
	case R_L2:
	case R_SUMSQUARE: return acc + v * v;
	}
	return acc + v;
}

// r_combine combines two accumulators.
DEVICE float r_combine(long long op, float a, float b) {
	switch (op) {
	case R_MAX: return max_nan(a, b);
	case R_MIN: return min_nan(a, b);
	case R_PROD: return a * b;
	}
	return a + b;
}

DEVICE float r_finish(long long op, float acc, long long k) {
	switch (op) {
	case R_MEAN: return acc / (float)k;
	case R_L2: return sqrtf(acc);
	case R_LOGSUM: return logf(acc);
	}
	return acc;
}

// reduce_row reduces the k elements p[0], p[stride], … (one thread).
template <class S> DEVICE float reduce_row(long long op, const S *p, long long k, long long stride) {
	if (op == R_LOGSUMEXP) {
		float m = -F_INF;
		for (long long j = 0; j < k; j++) m = max_nan(m, ld(p, j * stride));
		if (isinf(m)) return m; // all -inf (or none): -inf; a +inf: +inf
		float s = 0.0f;
		for (long long j = 0; j < k; j++) s += expf(ld(p, j * stride) - m);
		return logf(s) + m;
	}
	float acc = r_init(op);
	for (long long j = 0; j < k; j++) acc = r_fold(op, acc, ld(p, j * stride));
	return r_finish(op, acc, k);
}

// reduce is reduce_f32 and reduce_f16 for the storage type S of x and y.
template <class S>
DEVICE void reduce(long long op, S *__restrict__ y, const S *__restrict__ x, long long outer, long long k,
                   long long inner) {
	GRID_STRIDE(o, outer * inner) { st(y, o, reduce_row(op, x + (o / inner) * k * inner + o % inner, k, inner)); }
}

// reduce_f32: y[o] = op over the K elements of output o, a thread each,
// accumulating in float. reduce_f16 is reduce_f32 on float16 x and y,
// rounding each y[o] once.
KERNEL reduce_f32(long long op, float *__restrict__ y, const float *__restrict__ x, long long outer, long long k,
                  long long inner) {
	reduce(op, y, x, outer, k, inner);
}

KERNEL reduce_f16(long long op, half_t *__restrict__ y, const half_t *__restrict__ x, long long outer, long long k,
                  long long inner) {
	reduce(op, y, x, outer, k, inner);
}

// block_combine combines every thread's v; all threads get the result.
DEVICE float block_combine(long long op, float v, float *part) {
	unsigned t = threadIdx.x;
	part[t] = v;
	__syncthreads();
	for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
		if (t < s) part[t] = r_combine(op, part[t], part[t + s]);
		__syncthreads();
	}
	float r = part[0];
	__syncthreads();
	return r;
}

// reduce_block is reduce_block_f32 and reduce_block_f16 for the storage
// type S of x and y.
template <class S>
DEVICE void reduce_block(float *part, long long op, S *__restrict__ y, const S *__restrict__ x, long long outer, long long k,
                         long long inner) {
	for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
		const S *p = x + (o / inner) * k * inner + o % inner;
		float r;
		if (op == R_LOGSUMEXP) {
			float m = -F_INF;
			for (long long j = threadIdx.x; j < k; j += BLOCK) m = max_nan(m, ld(p, j * inner));
			m = block_combine(R_MAX, m, part);
			if (isinf(m)) { // the same for every thread: the barriers below stay uniform
				r = m;
			} else {
				float s = 0.0f;
				for (long long j = threadIdx.x; j < k; j += BLOCK) s += expf(ld(p, j * inner) - m);
				r = logf(block_combine(R_SUM, s, part)) + m;
			}
		} else {
			float acc = r_init(op);
			for (long long j = threadIdx.x; j < k; j += BLOCK) acc = r_fold(op, acc, ld(p, j * inner));
			r = r_finish(op, block_combine(op, acc, part), k);
		}
		if (threadIdx.x == 0) st(y, o, r);
	}
}

// reduce_block_f32 and reduce_block_f16: reduce_f32 and reduce_f16 with a
// block of BLOCK threads per output element (blocks loop over the
// outputs).
SYNC_KERNEL reduce_block_f32(long long op, float *__restrict__ y, const float *__restrict__ x, long long outer,
                             long long k, long long inner) {
	__shared__ float part[BLOCK];
	reduce_block(part, op, y, x, outer, k, inner);
}

SYNC_KERNEL reduce_block_f16(long long op, half_t *__restrict__ y, const half_t *__restrict__ x, long long outer,
                             long long k, long long inner) {
	__shared__ float part[BLOCK];
	reduce_block(part, op, y, x, outer, k, inner);
}

// Integer reductions accumulate exactly in 64 bits, wrapping, and store
// the low bits (int32 wraps as the CPU backend's conversion does). Mean
// truncates toward zero; L2 truncates the double square root (d2ll: the
// least int64 for the NaN of a sum of squares that wrapped negative).
DEVICE long long load_int(long long t, const void *p, long long i) {
	return t == T_I64 ? ((const long long *)p)[i] : (long long)((const int *)p)[i];
}

DEVICE long long ri_init(long long op, long long t) {
	switch (op) {
	case R_MAX: return t == T_I64 ? (long long)(1ULL << 63) : -2147483647LL - 1;
	case R_MIN: return t == T_I64 ? (long long)((1ULL << 63) - 1) : 2147483647LL;
	case R_PROD: return 1;
	}
	return 0;
}

DEVICE long long ri_combine(long long op, long long a, long long b) {
	switch (op) {
	case R_MAX: return llmax(a, b);
	case R_MIN: return llmin(a, b);
	case R_PROD: return (long long)((unsigned long long)a * (unsigned long long)b);
	}
	return (long long)((unsigned long long)a + (unsigned long long)b);
}

DEVICE long long ri_fold(long long op, long long acc, long long v) {
	switch (op) {
	case R_L1: v = v < 0 ? (long long)(0ULL - (unsigned long long)v) : v; break;
	case R_L2:
	case R_SUMSQUARE: v = (long long)((unsigned long long)v * (unsigned long long)v); break;
	}
	return ri_combine(op, acc, v);
}

DEVICE void ri_store(long long op, long long t, void *y, long long o, long long acc, long long k) {
	switch (op) {
	case R_MEAN: acc /= k; break; // the lowering passes k > 0
	case R_L2: acc = d2ll(sqrt((double)acc)); break;
	}
	if (t == T_I64) ((long long *)y)[o] = acc;
	else ((int *)y)[o] = (int)acc;
}

// reduce_int: reduce_f32 for int64 or int32 elements (t), a thread per
// output. Sum, Mean, Max, Min, Prod, L1, L2 and SumSquare.
KERNEL reduce_int(long long op, long long t, void *__restrict__ y, const void *__restrict__ x, long long outer,
                  long long k, long long inner) {
	GRID_STRIDE(o, outer * inner) {
		long long base = (o / inner) * k * inner + o % inner, acc = ri_init(op, t);
		for (long long j = 0; j < k; j++) acc = ri_fold(op, acc, load_int(t, x, base + j * inner));
		ri_store(op, t, y, o, acc, k);
	}
}

// reduce_block_int: reduce_int with a block per output element.
SYNC_KERNEL reduce_block_int(long long op, long long t, void *__restrict__ y, const void *__restrict__ x,
                             long long outer, long long k, long long inner) {
	__shared__ long long part[BLOCK];
	unsigned tid = threadIdx.x;
	for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
		long long base = (o / inner) * k * inner + o % inner, acc = ri_init(op, t);
		for (long long j = tid; j < k; j += BLOCK) acc = ri_fold(op, acc, load_int(t, x, base + j * inner));
		part[tid] = acc;
		__syncthreads();
		for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
			if (tid < s) part[tid] = ri_combine(op, part[tid], part[tid + s]);
			__syncthreads();
		}
		if (tid == 0) ri_store(op, t, y, o, part[0], k);
		__syncthreads();
	}
}

// reduce_gather_b2, reduce_gather_b4 and reduce_gather_b8 copy the n
// elements (2, 4 or 8 bytes) of a strided view of x into y, row-major:
// y[i] = x[offset(i)] for the view's dims d0..d5 and element strides
// s0..s5. They bring the reduced axes of a reduction together, last.
template <class T>
DEVICE void reduce_gather(T *__restrict__ y, const T *__restrict__ x, long long n, long long d0, long long d1,
                          long long d2, long long d3, long long d4, long long d5, long long s0, long long s1,
                          long long s2, long long s3, long long s4, long long s5) {
	GRID_STRIDE(i, n) { y[i] = x[strided_offset(i, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5)]; }
}

KERNEL reduce_gather_b2(unsigned short *__restrict__ y, const unsigned short *__restrict__ x, long long n,
                        long long d0, long long d1, long long d2, long long d3, long long d4, long long d5,
                        long long s0, long long s1, long long s2, long long s3, long long s4, long long s5) {
	reduce_gather(y, x, n, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5);
}

KERNEL reduce_gather_b4(unsigned int *__restrict__ y, const unsigned int *__restrict__ x, long long n, long long d0,
                        long long d1, long long d2, long long d3, long long d4, long long d5, long long s0,
                        long long s1, long long s2, long long s3, long long s4, long long s5) {
	reduce_gather(y, x, n, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5);
}

KERNEL reduce_gather_b8(unsigned long long *__restrict__ y, const unsigned long long *__restrict__ x, long long n,
                        long long d0, long long d1, long long d2, long long d3, long long d4, long long d5,
                        long long s0, long long s1, long long s2, long long s3, long long s4, long long s5) {
	reduce_gather(y, x, n, d0, d1, d2, d3, d4, d5, s0, s1, s2, s3, s4, s5);
}

// arg_better reports whether candidate (v, i) beats (b, bi) for ArgMax
// (want_max) or ArgMin: the first NaN beats everything; otherwise the
// extreme value, ties going to the first index, or the last with last.
// bi < 0 is no candidate yet.
DEVICE bool arg_better(long long want_max, long long last, float v, long long i, float b, long long bi) {
	if (i < 0) return false;
	if (bi < 0) return true;
	if (b != b) return v != v && i < bi;
	if (v != v) return true;
	if (v == b) return last ? i > bi : i < bi;
	return want_max ? v > b : v < b;
}

// arg is arg_f32 and arg_f16 for the storage type S of x.
template <class S>
DEVICE void arg(long long want_max, long long last, long long *__restrict__ y, const S *__restrict__ x,
                long long outer, long long k, long long inner) {
	GRID_STRIDE(o, outer * inner) {
		const S *p = x + (o / inner) * k * inner + o % inner;
		float b = ld(p, 0);
		long long bi = 0;
		for (long long j = 1; j < k; j++) {
			float v = ld(p, j * inner);
			if (arg_better(want_max, last, v, j, b, bi)) b = v, bi = j;
		}
		y[o] = bi;
	}
}

// arg_f32: y[o] = the index along K of output o's extreme element
// (want_max: ArgMax, else ArgMin), a thread each. K > 0. arg_f16 is
// arg_f32 on a float16 x.
KERNEL arg_f32(long long want_max, long long last, long long *__restrict__ y, const float *__restrict__ x,
               long long outer, long long k, long long inner) {
	arg(want_max, last, y, x, outer, k, inner);
}

KERNEL arg_f16(long long want_max, long long last, long long *__restrict__ y, const half_t *__restrict__ x,
               long long outer, long long k, long long inner) {
	arg(want_max, last, y, x, outer, k, inner);
}

// arg_block is arg_block_f32 and arg_block_f16 for the storage type S of
// x.
template <class S>
DEVICE void arg_block(float *val, long long *idx, long long want_max, long long last, long long *__restrict__ y, const S *__restrict__ x,
                      long long outer, long long k, long long inner) {
	unsigned tid = threadIdx.x;
	for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
		const S *p = x + (o / inner) * k * inner + o % inner;
		float b = 0.0f;
		long long bi = -1;
		for (long long j = tid; j < k; j += BLOCK) {
			float v = ld(p, j * inner);
			if (arg_better(want_max, last, v, j, b, bi)) b = v, bi = j;
		}
		val[tid] = b;
		idx[tid] = bi;
		__syncthreads();
		for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
			if (tid < s && arg_better(want_max, last, val[tid + s], idx[tid + s], val[tid], idx[tid])) {
				val[tid] = val[tid + s];
				idx[tid] = idx[tid + s];
			}
			__syncthreads();
		}
		if (tid == 0) y[o] = idx[0];
		__syncthreads();
	}
}

// arg_block_f32 and arg_block_f16: arg_f32 and arg_f16 with a block per
// output element.
SYNC_KERNEL arg_block_f32(long long want_max, long long last, long long *__restrict__ y,
                          const float *__restrict__ x, long long outer, long long k, long long inner) {
	__shared__ float val[BLOCK];
	__shared__ long long idx[BLOCK];
	arg_block(val, idx, want_max, last, y, x, outer, k, inner);
}

SYNC_KERNEL arg_block_f16(long long want_max, long long last, long long *__restrict__ y,
                          const half_t *__restrict__ x, long long outer, long long k, long long inner) {
	__shared__ float val[BLOCK];
	__shared__ long long idx[BLOCK];
	arg_block(val, idx, want_max, last, y, x, outer, k, inner);
}

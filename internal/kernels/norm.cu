// Normalisation kernels: BatchNormalization (inference), the row
// normalisations (Instance, Group, Layer and RMS: a row is a contiguous
// block normalised by its own statistics), LpNormalization, LRN, and
// Softmax, LogSoftmax and Hardmax. Lowerings in inference/cuda/lower_norm.go
// and lower_softmax.go. Statistics accumulate in float, reduced in shared
// memory, a block per row.
#include "common.cuh"

// softmax's kinds (kernels.SOFTMAX, … in the generated codes_gen.go).
#define SOFTMAX 0
#define LOG_SOFTMAX 1
#define HARDMAX 2

#define NORM_INF __int_as_float(0x7f800000)

// norm_block_sum returns the sum of every thread's v to every thread of
// the block (blockDim.x == BLOCK).
DEVICE float norm_block_sum(float *buf, float v) {
	buf[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
		__syncthreads();
	}
	float r = buf[0];
	__syncthreads();
	return r;
}

// norm_block_max returns the largest of every thread's v, ignoring NaN
// unless every value is NaN.
DEVICE float norm_block_max(float *buf, float v) {
	buf[threadIdx.x] = v;
	__syncthreads();
	for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
		__syncthreads();
	}
	float r = buf[0];
	__syncthreads();
	return r;
}

// The kernels below are templates over the
// storage type S of their float operands (common.cuh's storage types), with
// entry points NAME_f32 and NAME_f16: the statistics accumulate in float
// either way, and each stored element is rounded once.

// norm_batch is BatchNormalization in inference mode: element i of x
// belongs to statistic c = (i / repeat) % params, and y = x·a + (B − mean·a)
// with a = scale / √(var + eps).
template <class S>
DEVICE void norm_batch(S *__restrict__ y, const S *__restrict__ x, const S *__restrict__ scale,
                       const S *__restrict__ bias, const S *__restrict__ mean, const S *__restrict__ var, long long n,
                       long long params, long long repeat, double eps) {
	float feps = (float)eps;
	GRID_STRIDE(i, n) {
		long long c = (i / repeat) % params;
		float a = ld(scale, c) / sqrtf(ld(var, c) + feps);
		st(y, i, ld(x, i) * a + (ld(bias, c) - ld(mean, c) * a));
	}
}

KERNEL norm_batch_f32(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ scale,
                      const float *__restrict__ bias, const float *__restrict__ mean, const float *__restrict__ var,
                      long long n, long long params, long long repeat, double eps) {
	norm_batch(y, x, scale, bias, mean, var, n, params, repeat, eps);
}

KERNEL norm_batch_f16(half_t *__restrict__ y, const half_t *__restrict__ x, const half_t *__restrict__ scale,
                      const half_t *__restrict__ bias, const half_t *__restrict__ mean, const half_t *__restrict__ var,
                      long long n, long long params, long long repeat, double eps) {
	norm_batch(y, x, scale, bias, mean, var, n, params, repeat, eps);
}

// norm_rows normalises each of rows rows of size elements of x:
// y = (x − μ)·inv·scale + bias with inv = 1/√(σ² + eps), or, with rms,
// μ = 0 and σ² = mean(x²). Element g (counting over the whole tensor)
// reads scale[(g / sdiv) % smod] and bias[(g / bdiv) % bmod]; bias may be
// null. mean and inv, when not null, receive each row's μ and inv, in
// float whatever S is (LayerNormalization's stash_type 1). A block per
// row; the variance takes a second pass over the row.
template <class S>
DEVICE void norm_rows(float *buf, S *__restrict__ y, const S *__restrict__ x, const S *__restrict__ scale,
                      const S *__restrict__ bias, float *__restrict__ mean, float *__restrict__ inv, long long rows,
                      long long size, double eps, long long rms, long long sdiv, long long smod, long long bdiv,
                      long long bmod) {
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const S *xr = x + r * size;
		float mu = 0.0f;
		if (!rms) {
			float s = 0.0f;
			for (long long k = threadIdx.x; k < size; k += BLOCK) s += ld(xr, k);
			mu = norm_block_sum(buf, s) / (float)size;
		}
		float q = 0.0f;
		for (long long k = threadIdx.x; k < size; k += BLOCK) {
			float d = ld(xr, k) - mu;
			q += d * d;
		}
		float is = 1.0f / sqrtf(norm_block_sum(buf, q) / (float)size + (float)eps);
		if (threadIdx.x == 0) {
			if (mean) mean[r] = mu;
			if (inv) inv[r] = is;
		}
		for (long long k = threadIdx.x; k < size; k += BLOCK) {
			long long g = r * size + k;
			float v = (ld(xr, k) - mu) * is * ld(scale, (g / sdiv) % smod);
			if (bias) v += ld(bias, (g / bdiv) % bmod);
			st(y, g, v);
		}
	}
}

SYNC_KERNEL norm_rows_f32(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ scale,
                          const float *__restrict__ bias, float *__restrict__ mean, float *__restrict__ inv,
                          long long rows, long long size, double eps, long long rms, long long sdiv, long long smod,
                          long long bdiv, long long bmod) {
	__shared__ float buf[BLOCK];
	norm_rows(buf, y, x, scale, bias, mean, inv, rows, size, eps, rms, sdiv, smod, bdiv, bmod);
}

SYNC_KERNEL norm_rows_f16(half_t *__restrict__ y, const half_t *__restrict__ x, const half_t *__restrict__ scale,
                          const half_t *__restrict__ bias, float *__restrict__ mean, float *__restrict__ inv,
                          long long rows, long long size, double eps, long long rms, long long sdiv, long long smod,
                          long long bdiv, long long bmod) {
	__shared__ float buf[BLOCK];
	norm_rows(buf, y, x, scale, bias, mean, inv, rows, size, eps, rms, sdiv, smod, bdiv, bmod);
}

// norm_lp is LpNormalization: y = x / ‖x‖_p over rows of size elements,
// inner apart (as softmax's), p 1 or 2; a row whose norm is 0 gives 0. A
// block per row.
template <class S>
DEVICE void norm_lp(float *buf, S *__restrict__ y, const S *__restrict__ x, long long outer, long long size, long long inner,
                    long long p) {
	long long rows = outer * inner;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		long long base = (r / inner) * size * inner + r % inner;
		const S *xr = x + base;
		S *yr = y + base;
		float s = 0.0f;
		for (long long k = threadIdx.x; k < size; k += BLOCK) {
			float v = ld(xr, k * inner);
			s += p == 1 ? fabsf(v) : v * v;
		}
		s = norm_block_sum(buf, s);
		if (p != 1) s = sqrtf(s);
		for (long long k = threadIdx.x; k < size; k += BLOCK) st(yr, k * inner, s == 0.0f ? 0.0f : ld(xr, k * inner) / s);
	}
}

SYNC_KERNEL norm_lp_f32(float *__restrict__ y, const float *__restrict__ x, long long outer, long long size,
                        long long inner, long long p) {
	__shared__ float buf[BLOCK];
	norm_lp(buf, y, x, outer, size, inner, p);
}

SYNC_KERNEL norm_lp_f16(half_t *__restrict__ y, const half_t *__restrict__ x, long long outer, long long size,
                        long long inner, long long p) {
	__shared__ float buf[BLOCK];
	norm_lp(buf, y, x, outer, size, inner, p);
}

// lrn is LRN across channels: y = x / (bias + alpha/size · Σ x²)^beta,
// the sum over channels c − lo … c + hi clipped to [0, channels). x is
// [images][channels][spatial]; n is its number of elements.
template <class S>
DEVICE void lrn(S *__restrict__ y, const S *__restrict__ x, long long n, long long channels, long long spatial,
                long long size, long long lo, long long hi, double alpha, double beta, double bias) {
	float a = (float)alpha / (float)size, b = (float)beta, k = (float)bias;
	GRID_STRIDE(i, n) {
		long long s = i % spatial, c = (i / spatial) % channels, img = i / (spatial * channels);
		const S *xp = x + img * channels * spatial + s;
		float sq = 0.0f;
		for (long long j = llmax(0, c - lo); j <= llmin(channels - 1, c + hi); j++) {
			float v = ld(xp, j * spatial);
			sq += v * v;
		}
		st(y, i, ld(x, i) / powf(k + a * sq, b));
	}
}

KERNEL lrn_f32(float *__restrict__ y, const float *__restrict__ x, long long n, long long channels,
               long long spatial, long long size, long long lo, long long hi, double alpha, double beta,
               double bias) {
	lrn(y, x, n, channels, spatial, size, lo, hi, alpha, beta, bias);
}

KERNEL lrn_f16(half_t *__restrict__ y, const half_t *__restrict__ x, long long n, long long channels,
               long long spatial, long long size, long long lo, long long hi, double alpha, double beta,
               double bias) {
	lrn(y, x, n, channels, spatial, size, lo, hi, alpha, beta, bias);
}

// softmax is Softmax, LogSoftmax and Hardmax over rows of size elements,
// inner apart: row r = o·inner + j starts at o·size·inner + j, for
// outer·inner rows. Softmax is exp(x − max)/Σ exp(x − max), LogSoftmax
// x − (max + log Σ exp(x − max)). Hardmax puts 1 at the first maximum
// (NaN never wins, but a NaN first element does, as a scan with v > best
// from element 0 finds) and 0 elsewhere. A block per row.
template <class S>
DEVICE void softmax(float *buf, long long *at, long long kind, S *__restrict__ y, const S *__restrict__ x, long long outer, long long size,
                    long long inner) {
	long long rows = outer * inner;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		long long base = (r / inner) * size * inner + r % inner;
		const S *xr = x + base;
		S *yr = y + base;
		if (kind == HARDMAX) {
			float best = -NORM_INF;
			long long bi = -1;
			for (long long k = threadIdx.x; k < size; k += BLOCK) {
				float v = ld(xr, k * inner);
				if (v == v && (bi < 0 || v > best)) best = v, bi = k;
			}
			buf[threadIdx.x] = best;
			at[threadIdx.x] = bi;
			__syncthreads();
			for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
				if (threadIdx.x < s) {
					float ov = buf[threadIdx.x + s];
					long long oi = at[threadIdx.x + s], mi = at[threadIdx.x];
					if (oi >= 0 && (mi < 0 || ov > buf[threadIdx.x] || (ov == buf[threadIdx.x] && oi < mi))) {
						buf[threadIdx.x] = ov;
						at[threadIdx.x] = oi;
					}
				}
				__syncthreads();
			}
			long long win = at[0];
			__syncthreads();
			if (size > 0) {
				float first = ld(xr, 0);
				if (first != first) win = 0;
			}
			for (long long k = threadIdx.x; k < size; k += BLOCK) st(yr, k * inner, k == win ? 1.0f : 0.0f);
			continue;
		}
		float m = -NORM_INF;
		for (long long k = threadIdx.x; k < size; k += BLOCK) m = fmaxf(m, ld(xr, k * inner));
		m = norm_block_max(buf, m);
		float s = 0.0f;
		for (long long k = threadIdx.x; k < size; k += BLOCK) s += expf(ld(xr, k * inner) - m);
		s = norm_block_sum(buf, s);
		if (kind == LOG_SOFTMAX) {
			float ls = m + logf(s);
			for (long long k = threadIdx.x; k < size; k += BLOCK) st(yr, k * inner, ld(xr, k * inner) - ls);
		} else {
			for (long long k = threadIdx.x; k < size; k += BLOCK) st(yr, k * inner, expf(ld(xr, k * inner) - m) / s);
		}
	}
}

SYNC_KERNEL softmax_f32(long long kind, float *__restrict__ y, const float *__restrict__ x, long long outer,
                        long long size, long long inner) {
	__shared__ float buf[BLOCK];
	__shared__ long long at[BLOCK];
	softmax(buf, at, kind, y, x, outer, size, inner);
}

SYNC_KERNEL softmax_f16(long long kind, half_t *__restrict__ y, const half_t *__restrict__ x, long long outer,
                        long long size, long long inner) {
	__shared__ float buf[BLOCK];
	__shared__ long long at[BLOCK];
	softmax(buf, at, kind, y, x, outer, size, inner);
}

// Attention mask kinds (attention_softmax_f32's mask_kind).
#define ATTN_MASK_NONE 0
#define ATTN_MASK_FLOAT 1 // added to the scores
#define ATTN_MASK_BOOL 2  // 0 where true, −inf where false

// attention_softmax_f32 turns Attention's scores s = scale·Q·Kᵀ into its
// weights in place, a block per row: rows = units·q_seq rows of total
// scores, unit u = b·heads + h. Each score x becomes softcap·tanh(x /
// softcap) when softcap > 0, then gets the bias: the mask's value
// mask[b·mb + h·mh + i·mi + j] for a column j < mask_len (−inf past it),
// and with causal −inf where j > i. Softmax follows over the row; a row
// whose bias is −inf everywhere gets zero weights (ONNX's Attention-23
// rule, where the decomposition would give NaN). attention_softmax_f16 is
// the same for float16 Attention: the scores stay float32, a float mask is
// float16, and the weights are rounded to float16 into w, which the
// product with V reads. Lowering in inference/cuda/lower_attention.go.
template <class S>
DEVICE void attention_softmax(float *buf, S *w, float *s, const void *mask, long long mask_kind, long long rows,
                              long long q_seq, long long heads, long long total, long long mask_len, long long mb,
                              long long mh, long long mi, long long causal, double softcap) {
	float cap = (float)softcap;
	const S *mf = (const S *)mask;
	const unsigned char *mbool = (const unsigned char *)mask;
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		long long i = r % q_seq, u = r / q_seq;
		long long b = u / heads, h = u % heads;
		long long at = b * mb + h * mh + i * mi;
		float *row = s + r * total;
		S *out = w + r * total;
		float m = -NORM_INF, open = 0.0f;
		for (long long j = threadIdx.x; j < total; j += BLOCK) {
			float x = row[j];
			if (cap > 0.0f) x = cap * tanhf(x / cap);
			float bias = 0.0f;
			if (mask_kind != ATTN_MASK_NONE) {
				if (j >= mask_len) bias = -NORM_INF;
				else if (mask_kind == ATTN_MASK_FLOAT) bias = ld(mf, at + j);
				else bias = mbool[at + j] ? 0.0f : -NORM_INF;
			}
			if (causal && j > i) bias = -NORM_INF;
			if (bias != -NORM_INF) open = 1.0f;
			x += bias;
			row[j] = x;
			m = fmaxf(m, x);
		}
		if (norm_block_max(buf, open) == 0.0f) {
			for (long long j = threadIdx.x; j < total; j += BLOCK) st(out, j, 0.0f);
			continue;
		}
		m = norm_block_max(buf, m);
		float sum = 0.0f;
		for (long long j = threadIdx.x; j < total; j += BLOCK) sum += expf(row[j] - m);
		sum = norm_block_sum(buf, sum);
		for (long long j = threadIdx.x; j < total; j += BLOCK) st(out, j, expf(row[j] - m) / sum);
	}
}

SYNC_KERNEL attention_softmax_f32(float *s, const void *__restrict__ mask, long long mask_kind, long long rows,
                                  long long q_seq, long long heads, long long total, long long mask_len, long long mb,
                                  long long mh, long long mi, long long causal, double softcap) {
	__shared__ float buf[BLOCK];
	attention_softmax(buf, s, s, mask, mask_kind, rows, q_seq, heads, total, mask_len, mb, mh, mi, causal, softcap);
}

SYNC_KERNEL attention_softmax_f16(half_t *__restrict__ w, float *__restrict__ s, const void *__restrict__ mask,
                                  long long mask_kind, long long rows, long long q_seq, long long heads,
                                  long long total, long long mask_len, long long mb, long long mh, long long mi,
                                  long long causal, double softcap) {
	__shared__ float buf[BLOCK];
	attention_softmax(buf, w, s, mask, mask_kind, rows, q_seq, heads, total, mask_len, mb, mh, mi, causal, softcap);
}

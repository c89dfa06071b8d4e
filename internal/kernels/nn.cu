// Neural-network kernels: the data movement around the GEMMs of Conv,
// ConvTranspose and Gemm (im2col, col2im, bias and fused clamp), a direct
// convolution for depthwise layers, and the pooling operators. Lowerings in
// inference/cuda/lower_conv.go, lower_linalg.go and lower_pool.go. Spatial
// geometry is always 3-D: a 1-D or 2-D window is padded on the left with
// dimensions of size 1 (kernel 1, stride 1, dilation 1, no padding). Images
// are NC[D]HW, row-major.
#include "common.cuh"

// Pool kinds (pool_f32's kind; kernels.POOL_MAX, … in the generated
// codes_gen.go).
#define POOL_MAX 0
#define POOL_AVG 1
#define POOL_LP 2
// Global pool kinds (pool_global_f32's kind).
#define GPOOL_AVG 0
#define GPOOL_MAX 1

#define NN_INF __int_as_float(0x7f800000)

// nn_clamp is the fused activation of a Conv (passes.FuseActivations, in
// inference/graph/passes): NaN stays NaN, as Relu and Clip keep it.
DEVICE float nn_clamp(float v, float lo, float hi) {
	if (v < lo) return lo;
	if (v > hi) return hi;
	return v;
}

// im2col_tap is element i of im2col's col: row (c, tz, ty, tx) and column
// (oz, oy, ox) read x at z = oz·sd − pd + tz·dd (likewise y and x), zero in
// the padding. U holds i and every index of col and x (unsigned), S the
// coordinates, which the padding makes negative (signed): 32-bit types
// where they fit (conv_im2col32_f32), whose divisions cost a fraction of
// 64-bit ones. A tap inside x is the producer's pointwise epilogue, which
// the lowering deferred to this gather: v + bias[c] (bias may be null;
// channels is x's), then the clamp to [lo, hi] when clamp is 1. T is the
// storage type of x and bias (float, or half_t for the _f16 forms, whose
// columns are float16 too: a tap is x's value, exactly).
template <class U, class S, class T>
DEVICE float im2col_tap(const T *__restrict__ x, U i, U id, U ih, U iw, U kd, U kh, U kw, U od, U oh, U ow,
                        S sd, S sh, S sw, S dd, S dh, S dw, S pd, S ph, S pw, const T *__restrict__ bias,
                        U channels, bool clamp, float lo, float hi) {
	U r = i;
	S ox = (S)(r % ow); r /= ow;
	S oy = (S)(r % oh); r /= oh;
	S oz = (S)(r % od); r /= od;
	S tx = (S)(r % kw); r /= kw;
	S ty = (S)(r % kh); r /= kh;
	S tz = (S)(r % kd); r /= kd;
	S z = oz * sd - pd + tz * dd, y = oy * sh - ph + ty * dh, xx = ox * sw - pw + tx * dw;
	if (z < 0 || z >= (S)id || y < 0 || y >= (S)ih || xx < 0 || xx >= (S)iw) return 0.0f;
	float v = ld(x, r * (id * ih * iw) + ((U)z * ih + (U)y) * iw + (U)xx);
	if (bias) v += ld(bias, r % channels);
	return clamp ? nn_clamp(v, lo, hi) : v;
}

// conv_im2col_f32 fills col, [images·channels][kd·kh·kw][od·oh·ow], with
// the taps of x, [images·channels][id·ih·iw] (im2col_tap, with the
// epilogue the producer of x deferred), in 64-bit index
// arithmetic. total is the number of elements of col.
#define IM2COL_PARAMS                                                                                           \
	long long total, long long id, long long ih, long long iw, long long kd, long long kh, long long kw,         \
	    long long od, long long oh, long long ow, long long sd, long long sh, long long sw, long long dd,        \
	    long long dh, long long dw, long long pd, long long ph, long long pw
#define IM2COL_ARGS total, id, ih, iw, kd, kh, kw, od, oh, ow, sd, sh, sw, dd, dh, dw, pd, ph, pw

template <class T>
DEVICE void im2col64(T *__restrict__ col, const T *__restrict__ x, IM2COL_PARAMS, const T *__restrict__ bias,
                     long long channels, long long clamp, double lo, double hi) {
	typedef unsigned long long U;
	float flo = (float)lo, fhi = (float)hi;
	GRID_STRIDE(i, total) {
		st(col, i,
		   im2col_tap<U, long long>(x, (U)i, (U)id, (U)ih, (U)iw, (U)kd, (U)kh, (U)kw, (U)od, (U)oh, (U)ow, sd, sh, sw,
		                            dd, dh, dw, pd, ph, pw, bias, (U)channels, clamp != 0, flo, fhi));
	}
}

KERNEL conv_im2col_f32(float *__restrict__ col, const float *__restrict__ x, IM2COL_PARAMS,
                       const float *__restrict__ bias, long long channels, long long clamp, double lo, double hi) {
	im2col64(col, x, IM2COL_ARGS, bias, channels, clamp, lo, hi);
}

// conv_im2col_f16 is conv_im2col_f32 on float16 x and columns.
KERNEL conv_im2col_f16(half_t *__restrict__ col, const half_t *__restrict__ x, IM2COL_PARAMS,
                       const half_t *__restrict__ bias, long long channels, long long clamp, double lo, double hi) {
	im2col64(col, x, IM2COL_ARGS, bias, channels, clamp, lo, hi);
}

// conv_im2col32_f32 is conv_im2col_f32 in 32-bit index arithmetic, for
// col and x of fewer than 2^31 elements, and coordinates within ±2^31
// (the lowering checks).
template <class T>
DEVICE void im2col32(T *__restrict__ col, const T *__restrict__ x, IM2COL_PARAMS, const T *__restrict__ bias,
                     long long channels, long long clamp, double lo, double hi) {
	typedef unsigned int U;
	unsigned int n = (unsigned int)total, step = blockDim.x * gridDim.x;
	float flo = (float)lo, fhi = (float)hi;
	for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
		st(col, i,
		   im2col_tap<U, int>(x, i, (U)id, (U)ih, (U)iw, (U)kd, (U)kh, (U)kw, (U)od, (U)oh, (U)ow, (int)sd, (int)sh,
		                      (int)sw, (int)dd, (int)dh, (int)dw, (int)pd, (int)ph, (int)pw, bias, (U)channels, clamp != 0,
		                      flo, fhi));
	}
}

KERNEL conv_im2col32_f32(float *__restrict__ col, const float *__restrict__ x, IM2COL_PARAMS,
                         const float *__restrict__ bias, long long channels, long long clamp, double lo, double hi) {
	im2col32(col, x, IM2COL_ARGS, bias, channels, clamp, lo, hi);
}

// conv_im2col32_f16 is conv_im2col32_f32 on float16 x and columns.
KERNEL conv_im2col32_f16(half_t *__restrict__ col, const half_t *__restrict__ x, IM2COL_PARAMS,
                         const half_t *__restrict__ bias, long long channels, long long clamp, double lo, double hi) {
	im2col32(col, x, IM2COL_ARGS, bias, channels, clamp, lo, hi);
}

// conv_direct_f32 is a convolution without GEMM, for layers whose products
// are too small to pay for one (depthwise: one input channel per group):
// y[n, m, o] = bias[m] + Σ_{c < cg, t} w[m, c, t] · x[n, g·cg + c, o·s − p
// + t·d] with g = m / mg, then the fused clamp when clamp is 1. bias may be
// null. total is the number of elements of y. Each tap read inside x is
// first the producer's pointwise epilogue, which the lowering deferred to
// this kernel: v + in_bias[channel] (in_bias may be null), then the clamp
// to [in_lo, in_hi] when in_clamp is 1.
// conv_direct_f16 is conv_direct_f32 on float16 x, w, bias, in_bias and
// y, accumulating in float32 and rounding y once.
template <class S, class O>
DEVICE void conv_direct(O *__restrict__ y, const S *__restrict__ x, const S *__restrict__ w,
                        const S *__restrict__ bias, long long total, long long channels, long long outChannels,
                        long long cg, long long mg, long long id, long long ih, long long iw, long long kd,
                        long long kh, long long kw, long long od, long long oh, long long ow, long long sd,
                        long long sh, long long sw, long long dd, long long dh, long long dw, long long pd,
                        long long ph, long long pw, long long clamp, double lo, double hi,
                        const S *__restrict__ in_bias, long long in_clamp, double in_lo, double in_hi) {
	long long isp = id * ih * iw, ksz = kd * kh * kw;
	float flo = (float)lo, fhi = (float)hi, ilo = (float)in_lo, ihi = (float)in_hi;
	bool prologue = in_bias != 0 || in_clamp;
	GRID_STRIDE(i, total) {
		long long r = i;
		long long ox = r % ow; r /= ow;
		long long oy = r % oh; r /= oh;
		long long oz = r % od; r /= od;
		long long m = r % outChannels, n = r / outChannels;
		long long g = m / mg;
		float acc = 0.0f;
		for (long long c = 0; c < cg; c++) {
			const S *xp = x + (n * channels + g * cg + c) * isp;
			const S *wp = w + (m * cg + c) * ksz;
			float ib = in_bias ? ld(in_bias, g * cg + c) : 0.0f;
			for (long long tz = 0; tz < kd; tz++) {
				long long z = oz * sd - pd + tz * dd;
				if (z < 0 || z >= id) continue;
				for (long long ty = 0; ty < kh; ty++) {
					long long yy = oy * sh - ph + ty * dh;
					if (yy < 0 || yy >= ih) continue;
					const S *xrow = xp + (z * ih + yy) * iw;
					const S *wrow = wp + (tz * kh + ty) * kw;
					for (long long tx = 0; tx < kw; tx++) {
						long long xx = ox * sw - pw + tx * dw;
						if (xx < 0 || xx >= iw) continue;
						float v = ld(xrow, xx);
						if (prologue) {
							v += ib;
							if (in_clamp) v = nn_clamp(v, ilo, ihi);
						}
						acc += ld(wrow, tx) * v;
					}
				}
			}
		}
		if (bias) acc += ld(bias, m);
		st(y, i, clamp ? nn_clamp(acc, flo, fhi) : acc);
	}
}

#define DIRECT_PARAMS                                                                                          \
	long long total, long long channels, long long outChannels, long long cg, long long mg, long long id,      \
	    long long ih, long long iw, long long kd, long long kh, long long kw, long long od, long long oh,       \
	    long long ow, long long sd, long long sh, long long sw, long long dd, long long dh, long long dw,       \
	    long long pd, long long ph, long long pw, long long clamp, double lo, double hi
#define DIRECT_ARGS                                                                                            \
	total, channels, outChannels, cg, mg, id, ih, iw, kd, kh, kw, od, oh, ow, sd, sh, sw, dd, dh, dw, pd, ph, pw, \
	    clamp, lo, hi

KERNEL conv_direct_f32(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ w,
                       const float *__restrict__ bias, DIRECT_PARAMS, const float *__restrict__ in_bias,
                       long long in_clamp, double in_lo, double in_hi) {
	conv_direct(y, x, w, bias, DIRECT_ARGS, in_bias, in_clamp, in_lo, in_hi);
}

KERNEL conv_direct_f16(half_t *__restrict__ y, const half_t *__restrict__ x, const half_t *__restrict__ w,
                       const half_t *__restrict__ bias, DIRECT_PARAMS, const half_t *__restrict__ in_bias,
                       long long in_clamp, double in_lo, double in_hi) {
	conv_direct(y, x, w, bias, DIRECT_ARGS, in_bias, in_clamp, in_lo, in_hi);
}

// conv_col2im_f32 is ConvTranspose's gather: y[n, m, o] = bias[m] + Σ_t
// col[n, m, t, i] over the taps t whose input position i, with
// i·s − p + t·d = o, lies inside the input (id, ih, iw). col is [images]
// [outChannels][kd·kh·kw][id·ih·iw], the GEMM's output; bias may be null.
// Gathering per output element needs no atomics.
KERNEL conv_col2im_f32(float *__restrict__ y, const float *__restrict__ col, const float *__restrict__ bias,
                       long long total, long long outChannels, long long id, long long ih, long long iw,
                       long long kd, long long kh, long long kw, long long od, long long oh, long long ow,
                       long long sd, long long sh, long long sw, long long dd, long long dh, long long dw,
                       long long pd, long long ph, long long pw) {
	long long isp = id * ih * iw, ksz = kd * kh * kw;
	GRID_STRIDE(i, total) {
		long long r = i;
		long long ox = r % ow; r /= ow;
		long long oy = r % oh; r /= oh;
		long long oz = r % od; r /= od;
		// r = n·outChannels + m
		const float *cp = col + r * ksz * isp;
		float acc = 0.0f;
		for (long long tz = 0; tz < kd; tz++) {
			long long z = oz + pd - tz * dd;
			if (z < 0 || z % sd != 0 || z / sd >= id) continue;
			z /= sd;
			for (long long ty = 0; ty < kh; ty++) {
				long long yy = oy + ph - ty * dh;
				if (yy < 0 || yy % sh != 0 || yy / sh >= ih) continue;
				yy /= sh;
				for (long long tx = 0; tx < kw; tx++) {
					long long xx = ox + pw - tx * dw;
					if (xx < 0 || xx % sw != 0 || xx / sw >= iw) continue;
					xx /= sw;
					acc += cp[((tz * kh + ty) * kw + tx) * isp + (z * ih + yy) * iw + xx];
				}
			}
		}
		if (bias) acc += bias[r % outChannels];
		y[i] = acc;
	}
}

// POOL_WINDOW declares the window geometry parameters of the pool
// kernels, input dims (id, ih, iw), output dims (od, oh, ow), kernel (kd,
// kh, kw), strides (sd, sh, sw), dilations (dd, dh, dw) and begin padding
// (pd, ph, pw); POOL_WINDOW_ARGS passes them on.
#define POOL_WINDOW                                                                                                   \
	long long id, long long ih, long long iw, long long od, long long oh, long long ow, long long kd, long long kh,   \
	    long long kw, long long sd, long long sh, long long sw, long long dd, long long dh, long long dw, long long pd, \
	    long long ph, long long pw
#define POOL_WINDOW_ARGS id, ih, iw, od, oh, ow, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw

// pool is pool_f32 and pool_f16 for the storage type S of x and y.
template <class S>
DEVICE void pool(long long kind, S *__restrict__ y, const S *__restrict__ x, long long total, POOL_WINDOW,
                 long long ed, long long eh, long long ew, long long includePad, double p) {
	long long isp = id * ih * iw;
	float fp = (float)p;
	GRID_STRIDE(i, total) {
		long long r = i;
		long long ox = r % ow; r /= ow;
		long long oy = r % oh; r /= oh;
		long long oz = r % od; r /= od;
		const S *xp = x + r * isp;
		float acc = kind == POOL_MAX ? -NN_INF : 0.0f;
		long long inside = 0;
		for (long long tz = 0; tz < kd; tz++) {
			long long z = oz * sd - pd + tz * dd;
			if (z < 0 || z >= id) continue;
			for (long long ty = 0; ty < kh; ty++) {
				long long yy = oy * sh - ph + ty * dh;
				if (yy < 0 || yy >= ih) continue;
				for (long long tx = 0; tx < kw; tx++) {
					long long xx = ox * sw - pw + tx * dw;
					if (xx < 0 || xx >= iw) continue;
					float v = ld(xp, (z * ih + yy) * iw + xx);
					inside++;
					if (kind == POOL_MAX) {
						if (v > acc) acc = v;
					} else if (kind == POOL_AVG) {
						acc += v;
					} else {
						acc += powf(fabsf(v), fp);
					}
				}
			}
		}
		if (kind == POOL_AVG) {
			long long count = inside;
			if (includePad) {
				long long cz = 0, cy = 0, cx = 0;
				for (long long t = 0; t < kd; t++) cz += oz * sd - pd + t * dd < id + ed;
				for (long long t = 0; t < kh; t++) cy += oy * sh - ph + t * dh < ih + eh;
				for (long long t = 0; t < kw; t++) cx += ox * sw - pw + t * dw < iw + ew;
				count = cz * cy * cx;
			}
			acc = acc / (float)count;
		} else if (kind == POOL_LP) {
			acc = powf(acc, 1.0f / fp);
		}
		st(y, i, acc);
	}
}

// pool_f32 is MaxPool, AveragePool and LpPool over planes of x: output
// position o's window reads z = o·s − pb + t·d for taps t < k in each
// dimension, skipping positions outside the input. Max ignores NaN (as
// v > best does); Avg divides by the taps inside the input or, with
// includePad, by those inside the padded extent [−pb, in + pe); Lp is
// (Σ|v|^p)^(1/p). total is the number of elements of y. pool_f16 is
// pool_f32 on float16 x and y, computing in float and rounding each y
// once.
KERNEL pool_f32(long long kind, float *__restrict__ y, const float *__restrict__ x, long long total, POOL_WINDOW,
                long long ed, long long eh, long long ew, long long includePad, double p) {
	pool(kind, y, x, total, POOL_WINDOW_ARGS, ed, eh, ew, includePad, p);
}

KERNEL pool_f16(long long kind, half_t *__restrict__ y, const half_t *__restrict__ x, long long total, POOL_WINDOW,
                long long ed, long long eh, long long ew, long long includePad, double p) {
	pool(kind, y, x, total, POOL_WINDOW_ARGS, ed, eh, ew, includePad, p);
}

// pool_max_index is pool_max_index_f32 and pool_max_index_f16 for the
// storage type S of x and y.
template <class S>
DEVICE void pool_max_index(S *__restrict__ y, long long *__restrict__ indices, const S *__restrict__ x,
                           long long total, POOL_WINDOW, long long colMajor) {
	long long isp = id * ih * iw;
	GRID_STRIDE(i, total) {
		long long r = i;
		long long ox = r % ow; r /= ow;
		long long oy = r % oh; r /= oh;
		long long oz = r % od; r /= od;
		const S *xp = x + r * isp;
		float best = -NN_INF;
		long long at = -1;
		for (long long tz = 0; tz < kd; tz++) {
			long long z = oz * sd - pd + tz * dd;
			if (z < 0 || z >= id) continue;
			for (long long ty = 0; ty < kh; ty++) {
				long long yy = oy * sh - ph + ty * dh;
				if (yy < 0 || yy >= ih) continue;
				for (long long tx = 0; tx < kw; tx++) {
					long long xx = ox * sw - pw + tx * dw;
					if (xx < 0 || xx >= iw) continue;
					float v = ld(xp, (z * ih + yy) * iw + xx);
					if (v > best || at < 0) {
						best = v;
						at = colMajor ? z + (yy + xx * ih) * id : (z * ih + yy) * iw + xx;
					}
				}
			}
		}
		st(y, i, best);
		indices[i] = at < 0 ? 0 : r * isp + at;
	}
}

// pool_max_index_f32 is MaxPool with its Indices output: y as pool_f32's
// POOL_MAX, and indices the flat position in x of the element chosen (the
// first tap inside the input, then each strictly greater one), counting
// each plane row-major or, with colMajor, column-major; 0 when no tap is
// inside. pool_max_index_f16 is pool_max_index_f32 on float16 x and y.
KERNEL pool_max_index_f32(float *__restrict__ y, long long *__restrict__ indices, const float *__restrict__ x,
                          long long total, POOL_WINDOW, long long colMajor) {
	pool_max_index(y, indices, x, total, POOL_WINDOW_ARGS, colMajor);
}

KERNEL pool_max_index_f16(half_t *__restrict__ y, long long *__restrict__ indices, const half_t *__restrict__ x,
                          long long total, POOL_WINDOW, long long colMajor) {
	pool_max_index(y, indices, x, total, POOL_WINDOW_ARGS, colMajor);
}

// pool_global is pool_global_f32 and pool_global_f16 for the storage type
// S of x and y.
template <class S>
DEVICE void pool_global(float *buf, long long kind, S *__restrict__ y, const S *__restrict__ x, long long planes,
                        long long size) {
	for (long long pl = blockIdx.x; pl < planes; pl += gridDim.x) {
		const S *xp = x + pl * size;
		float acc = kind == GPOOL_MAX ? -NN_INF : 0.0f;
		for (long long k = threadIdx.x; k < size; k += BLOCK) {
			float v = ld(xp, k);
			if (kind == GPOOL_MAX) {
				if (v != v || v > acc) acc = acc != acc ? acc : v;
			} else {
				acc += v;
			}
		}
		buf[threadIdx.x] = acc;
		__syncthreads();
		for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
			if (threadIdx.x < s) {
				float a = buf[threadIdx.x], b = buf[threadIdx.x + s];
				if (kind == GPOOL_MAX)
					buf[threadIdx.x] = a != a ? a : (b != b || b > a ? b : a);
				else
					buf[threadIdx.x] = a + b;
			}
			__syncthreads();
		}
		if (threadIdx.x == 0) st(y, pl, kind == GPOOL_MAX ? buf[0] : buf[0] / (float)size);
		__syncthreads();
	}
}

// pool_global_f32 reduces each of planes planes of size elements of x to
// one value of y: the mean (GPOOL_AVG) or the maximum, NaN winning
// (GPOOL_MAX, as Go's max does). A block per plane. pool_global_f16 is
// pool_global_f32 on float16 x and y, accumulating in float and rounding
// each y once.
SYNC_KERNEL pool_global_f32(long long kind, float *__restrict__ y, const float *__restrict__ x, long long planes,
                            long long size) {
	__shared__ float buf[BLOCK];
	pool_global(buf, kind, y, x, planes, size);
}

SYNC_KERNEL pool_global_f16(long long kind, half_t *__restrict__ y, const half_t *__restrict__ x, long long planes,
                            long long size) {
	__shared__ float buf[BLOCK];
	pool_global(buf, kind, y, x, planes, size);
}

// gemm_fill_f32 writes Gemm's C, broadcast, into y [m][n]: y[i, j] =
// c[i·rs + j·cs] (a stride is 0 along a broadcast dimension). gemm_fill_f16
// reads a float16 C into the float32 accumulator of a float16 product.
template <class S>
DEVICE void gemm_fill_s(float *__restrict__ y, const S *__restrict__ c, long long m, long long n, long long rs,
                        long long cs) {
	GRID_STRIDE(i, m * n) { y[i] = ld(c, (i / n) * rs + (i % n) * cs); }
}

KERNEL gemm_fill_f32(float *__restrict__ y, const float *__restrict__ c, long long m, long long n, long long rs,
                     long long cs) {
	gemm_fill_s(y, c, m, n, rs, cs);
}

KERNEL gemm_fill_f16(float *__restrict__ y, const half_t *__restrict__ c, long long m, long long n, long long rs,
                     long long cs) {
	gemm_fill_s(y, c, m, n, rs, cs);
}

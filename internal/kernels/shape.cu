// Data movement, selection and creation kernels: the lowerings of
// inference/cuda (lower_transpose.go, lower_slice.go, lower_view.go,
// lower_gather.go, lower_generator.go, lower_image.go and, for Where and Cast,
// lower_elementwise.go) launch them, reading the codes below from the
// generated internal/kernels/codes_gen.go (kernels.PAD_CONSTANT, …). The
// kernels that move elements take their width w in bytes (1: bool and uint8;
// 2: float16; 4: float32 and int32; 8: int64), so one entry point serves every element
// type; the element is moved as raw bits.
#include "common.cuh"

// RANK6(p) declares the six parameters p0..p5 of a rank-padded shape or
// strides, ARR6(p) gathers them into an array (outermost first).
#define RANK6(p) long long p##0, long long p##1, long long p##2, long long p##3, long long p##4, long long p##5
#define ARR6(p) {p##0, p##1, p##2, p##3, p##4, p##5}

typedef unsigned long long u64;

DEVICE u64 load_elem(const void *x, long long j, long long w) {
	switch (w) {
	case 8: return ((const u64 *)x)[j];
	case 4: return ((const unsigned int *)x)[j];
	case 2: return ((const unsigned short *)x)[j];
	}
	return ((const unsigned char *)x)[j];
}

DEVICE void store_elem(void *y, long long i, u64 v, long long w) {
	switch (w) {
	case 8: ((u64 *)y)[i] = v; return;
	case 4: ((unsigned int *)y)[i] = (unsigned int)v; return;
	case 2: ((unsigned short *)y)[i] = (unsigned short)v; return;
	}
	((unsigned char *)y)[i] = (unsigned char)v;
}

// Index types of the index operands.
#define IDX_I64 0
#define IDX_I32 1
#define IDX_F32 2 // OneHot's indices: truncated toward zero (d2ll)

DEVICE long long load_index(const void *idx, long long j, long long type) {
	switch (type) {
	case IDX_I32: return ((const int *)idx)[j];
	case IDX_F32: return d2ll(((const float *)idx)[j]);
	}
	return ((const long long *)idx)[j];
}

// mul_rn is a product that the compiler may not fuse into a following add
// (nvcc contracts a*b+c into an fma by default, and so does the emulator):
// the Range and Resize kernels repeat the CPU backend's float64 arithmetic
// exactly.
DEVICE double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// ---- strided copies -----------------------------------------------------------

// shape_copy: y[yb + Σ_k c_k·ys_k] = x[xb + Σ_k c_k·xs_k] for every
// coordinate c of dims d (n elements; padded with 1 on the left to MAXRANK).
// Strides are in elements and may be 0 (broadcast) or negative (a slice
// with negative steps). Transpose, Expand, Slice, Split, Concat,
// DepthToSpace and SpaceToDepth are such copies.
KERNEL shape_copy(void *y, const void *x, long long w, long long n, long long yb, long long xb, RANK6(d), RANK6(ys),
                  RANK6(xs)) {
	const long long d[MAXRANK] = ARR6(d), ysa[MAXRANK] = ARR6(ys), xsa[MAXRANK] = ARR6(xs);
	GRID_STRIDE(i, n) {
		long long r = i, yo = yb, xo = xb;
		for (int k = MAXRANK - 1; k > 0; k--) {
			long long c = r % d[k];
			r /= d[k];
			yo += c * ysa[k];
			xo += c * xsa[k];
		}
		yo += r * ysa[0];
		xo += r * xsa[0];
		store_elem(y, yo, load_elem(x, xo, w), w);
	}
}

// Pad modes of shape_pad.
#define PAD_CONSTANT 0
#define PAD_EDGE 1
#define PAD_REFLECT 2
#define PAD_WRAP 3

// shape_pad: y has dims d (n elements). Along axis k, output coordinate c
// reads input coordinate c - p_k of an axis of length l_k and stride xs_k
// (the input starting at element xb); coordinates outside [0, l_k) take,
// by mode, the fill value (constant: *fp when fp is not null, else the low
// w bytes of fbits), the nearest border (edge), the mirror image without
// repeating the border (reflect, period 2(l-1)), or the periodic repeat
// (wrap, period l: Tile is a wrap with p = 0).
KERNEL shape_pad(void *y, const void *x, const void *fp, long long fbits, long long w, long long mode, long long n,
                 long long xb, RANK6(d), RANK6(l), RANK6(p), RANK6(xs)) {
	const long long d[MAXRANK] = ARR6(d), la[MAXRANK] = ARR6(l), pa[MAXRANK] = ARR6(p), xsa[MAXRANK] = ARR6(xs);
	u64 fill = fp ? load_elem(fp, 0, w) : (u64)fbits;
	GRID_STRIDE(i, n) {
		long long r = i, xo = xb;
		int outside = 0;
		for (int k = MAXRANK - 1; k >= 0; k--) {
			long long c = k > 0 ? r % d[k] : r;
			r /= d[k];
			long long j = c - pa[k], len = la[k];
			if (j < 0 || j >= len) {
				switch (mode) {
				case PAD_EDGE: j = llmin(llmax(j, 0), len - 1); break;
				case PAD_REFLECT:
					if (len == 1) {
						j = 0;
					} else {
						long long per = 2 * (len - 1);
						j = (j % per + per) % per;
						if (j >= len) j = per - j;
					}
					break;
				case PAD_WRAP: j = (j % len + len) % len; break;
				default: outside = 1;
				}
			}
			xo += j * xsa[k];
		}
		store_elem(y, i, outside ? fill : load_elem(x, xo, w), w);
	}
}

// shape_fill: y[i] = the low w bytes of bits, for i < n (ConstantOfShape,
// Dropout's mask).
KERNEL shape_fill(void *y, long long w, long long n, long long bits) {
	GRID_STRIDE(i, n) { store_elem(y, i, (u64)bits, w); }
}

// ---- Cast -----------------------------------------------------------------------

// cast_convert: y[i] = x[i] converted from type from to type to, as the CPU
// backend's Cast does: floats to integers through int64 (d2ll), integers
// narrow by wrapping, bool is x != 0 (NaN is true), true is 1; float16
// through float, exactly from it and rounding to nearest even to it
// (float_to_half).
KERNEL cast_convert(void *y, const void *x, long long n, long long from, long long to) {
	GRID_STRIDE(i, n) {
		float f = 0.0f;
		long long v = 0;
		switch (from) {
		case T_F32: f = ((const float *)x)[i]; break;
		case T_F16: f = half_to_float(((const unsigned short *)x)[i]); break;
		case T_I64: v = ((const long long *)x)[i]; break;
		case T_I32: v = ((const int *)x)[i]; break;
		default: v = ((const unsigned char *)x)[i]; break; // uint8, and bool as 0 or 1
		}
		const int isf = from == T_F32 || from == T_F16;
		switch (to) {
		case T_F32: ((float *)y)[i] = isf ? f : (float)v; break;
		case T_F16: ((unsigned short *)y)[i] = float_to_half(isf ? f : (float)v); break;
		case T_BOOL: ((unsigned char *)y)[i] = isf ? f != 0.0f : v != 0; break;
		default: {
			long long t = isf ? d2ll(f) : v;
			switch (to) {
			case T_I64: ((long long *)y)[i] = t; break;
			case T_I32: ((int *)y)[i] = (int)(unsigned int)(u64)t; break;
			default: ((unsigned char *)y)[i] = (unsigned char)(u64)t; break;
			}
		}
		}
	}
}

// ---- Where, Trilu, Range, OneHot ---------------------------------------------

// shape_where: y[i] = c ? t : f, with the bool condition c and the values t
// and f read with strides cs, ts and fs (0 along broadcast axes) along the
// output dims d (n elements).
KERNEL shape_where(void *y, const unsigned char *__restrict__ c, const void *t, const void *f, long long w, long long n,
                   RANK6(d), RANK6(cs), RANK6(ts), RANK6(fs)) {
	const long long d[MAXRANK] = ARR6(d), csa[MAXRANK] = ARR6(cs), tsa[MAXRANK] = ARR6(ts), fsa[MAXRANK] = ARR6(fs);
	GRID_STRIDE(i, n) {
		long long r = i, co = 0, to = 0, fo = 0;
		for (int k = MAXRANK - 1; k > 0; k--) {
			long long q = r % d[k];
			r /= d[k];
			co += q * csa[k];
			to += q * tsa[k];
			fo += q * fsa[k];
		}
		co += r * csa[0];
		to += r * tsa[0];
		fo += r * fsa[0];
		store_elem(y, i, c[co] ? load_elem(t, to, w) : load_elem(f, fo, w), w);
	}
}

// shape_trilu: y = x with the elements of each rows×cols matrix outside the
// kept triangle set to zero: upper keeps j - i >= k, lower j - i <= k. k is
// *kp (int64) when kp is not null.
KERNEL shape_trilu(void *y, const void *x, const long long *kp, long long k, long long w, long long n, long long rows,
                   long long cols, long long upper) {
	if (kp) k = *kp;
	GRID_STRIDE(i, n) {
		long long j = i % cols, r = i / cols % rows, diag = j - r;
		int keep = upper ? diag >= k : diag <= k;
		store_elem(y, i, keep ? load_elem(x, i, w) : 0, w);
	}
}

// shape_range: y[i] = start + i·delta for i < n: for float32 (type T_F32)
// in double from fstart and fdelta, rounded once; for int64 and int32 from
// istart and idelta, wrapping.
KERNEL shape_range(void *y, long long type, long long n, double fstart, double fdelta, long long istart,
                   long long idelta) {
	GRID_STRIDE(i, n) {
		switch (type) {
		case T_F32: ((float *)y)[i] = (float)(fstart + mul_rn((double)i, fdelta)); break;
		case T_I64: ((long long *)y)[i] = (long long)((u64)istart + (u64)i * (u64)idelta); break;
		default: ((int *)y)[i] = (int)(unsigned int)((u64)istart + (u64)i * (u64)idelta); break;
		}
	}
}

// shape_onehot: y is [outer, depth, inner] (n elements) and indices
// [outer, inner] of type itype; y is vals[1] where the index (plus depth
// when negative) equals the depth coordinate, vals[0] elsewhere (so an
// index outside [-depth, depth) gives an all-off row).
KERNEL shape_onehot(void *y, const void *idx, const void *vals, long long itype, long long w, long long n,
                    long long depth, long long inner) {
	u64 off = load_elem(vals, 0, w), on = load_elem(vals, 1, w);
	GRID_STRIDE(i, n) {
		long long k = i % inner, r = i / inner, dc = r % depth, o = r / depth;
		long long v = load_index(idx, o * inner + k, itype);
		if (v < 0) v += depth;
		store_elem(y, i, v == dc ? on : off, w);
	}
}

// ---- gathering and scattering ----------------------------------------------------
//
// An index lies in [-dim, dim), a negative one counting from the end. One
// outside is reported on err as E_INDEX with the index and the dimension
// (report, common.cuh): its output element is 0 and a scatter skips it.

// wrap_index returns index v into a dimension of dim in [0, dim), or -1
// (reported) when it lies outside [-dim, dim).
DEVICE long long wrap_index(long long v, long long dim, long long *err, long long site) {
	if (v < -dim || v >= dim) {
		report(err, site, E_INDEX, v, dim);
		return -1;
	}
	return v < 0 ? v + dim : v;
}

// gather_axis (Gather): x is [outer, dim, inner], y [outer, nidx, inner]
// (n elements) with y[o, j, k] = x[o, idx[j] (+ dim when negative), k].
KERNEL gather_axis(void *y, const void *x, const void *idx, long long itype, long long w, long long n,
                   long long inner, long long nidx, long long dim, long long *err, long long site) {
	GRID_STRIDE(i, n) {
		long long k = i % inner, r = i / inner, j = r % nidx, o = r / nidx;
		long long v = wrap_index(load_index(idx, j, itype), dim, err, site);
		store_elem(y, i, v >= 0 ? load_elem(x, (o * dim + v) * inner + k, w) : 0, w);
	}
}

// Modes of gather_elements and gather_nd. A scatter writes updates over a
// copy of the data; where two updates address the same place the last one
// (in the indices' order) wins, as on the CPU: GM_CLAIM records in win,
// for each place, the number of the last update addressing it (win filled
// with -1 first, atomicMax), and GM_WINNERS writes only those updates.
// GM_SCATTER writes every update: for indices the host knows to be
// distinct.
#define GM_GATHER 0  // y[i] = x[address of i]
#define GM_SCATTER 1 // y[address of i] = x[i]
#define GM_CLAIM 2   // win[place of i] = max(win[place of i], update number of i)
#define GM_WINNERS 3 // y[address of i] = x[i] where win[place of i] is i's update number
// The reductions: y[address of i] = y[address of i] op x[i], atomically.
// Each is order-free on its types (the lowering asks for no other), so the
// result is the CPU's in-order one: add and mul on int64 and int32
// (wrapping), max and min on those and on float32 (as Go's max and min: a
// NaN wins, +0 is above -0).
#define GM_ADD 4
#define GM_MUL 5
#define GM_MAX 6
#define GM_MIN 7

// fpick is Go's max (or min) of two float32s.
DEVICE float fpick(float a, float b, int mx) {
	if (a != a) return a;
	if (b != b) return b;
	if (a == b) return (signbit(a) != 0) == (mx != 0) ? b : a; // ±0
	return (a > b) == (mx != 0) ? a : b;
}

// combine is a op b (mode GM_ADD…GM_MIN) on elements of type etype, as bits.
DEVICE u64 combine(long long mode, long long etype, u64 a, u64 b) {
	if (etype == T_F32) {
		float r = fpick(__int_as_float((int)(unsigned int)a), __int_as_float((int)(unsigned int)b), mode == GM_MAX);
		return (unsigned int)__float_as_int(r);
	}
	long long x = etype == T_I64 ? (long long)a : (long long)(int)(unsigned int)a;
	long long y = etype == T_I64 ? (long long)b : (long long)(int)(unsigned int)b;
	switch (mode) {
	case GM_ADD: return a + b; // wrapping, in the low bits for int32
	case GM_MUL: return a * b;
	case GM_MAX: return (u64)(x > y ? x : y);
	}
	return (u64)(x < y ? x : y);
}

// reduce_elem does y[j] = y[j] op v atomically, by compare-and-swap on
// the element's 4 or 8 bytes.
DEVICE void reduce_elem(void *y, long long j, u64 v, long long w, long long mode, long long etype) {
	if (w == 8) {
		unsigned long long *p = (unsigned long long *)y + j, old = *p, seen;
		do {
			seen = old;
			u64 r = combine(mode, etype, seen, v);
			if (r == seen) break;
			old = atomicCAS(p, seen, r);
		} while (old != seen);
		return;
	}
	unsigned int *p = (unsigned int *)y + j, old = *p, seen;
	do {
		seen = old;
		unsigned int r = (unsigned int)combine(mode, etype, seen, v);
		if (r == seen) break;
		old = atomicCAS(p, seen, r);
	} while (old != seen);
}

// gather_elements (GatherElements, ScatterElements): for each element i of
// indices (dims d, n elements), the data element at its own coordinates
// but idx[i] (+ dim when negative) along the axis: data offset Σ c·s + v·as,
// where the strides s of data are 0 at the axis and as is the axis stride.
// Gathering, y[i] = x[offset]; scattering (y a copy of data, x the
// updates), y[offset] = x[i]. The update number of i is i, its place the
// offset (win has an int per data element).
KERNEL gather_elements(void *y, const void *x, const void *idx, long long itype, long long w, long long etype,
                       long long n, long long mode, int *win, long long *err, long long site, long long as, long long dim,
                       RANK6(d), RANK6(s)) {
	const long long da[MAXRANK] = ARR6(d), sa[MAXRANK] = ARR6(s);
	GRID_STRIDE(i, n) {
		long long r = i, off = 0;
		for (int k = MAXRANK - 1; k > 0; k--) {
			off += r % da[k] * sa[k];
			r /= da[k];
		}
		off += r * sa[0];
		long long v = wrap_index(load_index(idx, i, itype), dim, err, site);
		if (v < 0) {
			if (mode == GM_GATHER) store_elem(y, i, 0, w);
			continue;
		}
		off += v * as;
		switch (mode) {
		case GM_GATHER: store_elem(y, i, load_elem(x, off, w), w); break;
		case GM_CLAIM: atomicMax(win + off, (int)i); break;
		case GM_WINNERS:
			if (win[off] != (int)i) break;
			// fall through
		case GM_SCATTER: store_elem(y, off, load_elem(x, i, w), w); break;
		default: reduce_elem(y, off, load_elem(x, i, w), w, mode, etype);
		}
	}
}

// gather_nd (GatherND, ScatterND): indices are [count, m]; tuple p
// addresses the slice of inner elements of data at offset
// (p / perBatch)·batchSize + Σ_k idx[p, k]·st_k, with idx[p, k] + dims_k
// when negative. n = count·inner; element i is element i % inner of tuple
// i / inner's slice. Gathering, y[i] = x[slice element]; scattering (y a
// copy of data, x the updates), y[slice element] = x[i]. The update
// number is the tuple p, its place the slice (offset / inner: win has an
// int per slice); GM_CLAIM runs over the tuples alone (n = count).
KERNEL gather_nd(void *y, const void *x, const void *idx, long long itype, long long w, long long etype, long long n,
                 long long mode, int *win, long long *err, long long site, long long inner, long long m, long long perBatch,
                 long long batchSize, RANK6(dims), RANK6(st)) {
	const long long da[MAXRANK] = ARR6(dims), sa[MAXRANK] = ARR6(st);
	GRID_STRIDE(i, n) {
		long long p = mode == GM_CLAIM ? i : i / inner, t = mode == GM_CLAIM ? 0 : i % inner;
		long long off = perBatch > 0 ? p / perBatch * batchSize : 0;
		int bad = 0;
		for (long long k = 0; k < m && k < MAXRANK; k++) {
			long long v = wrap_index(load_index(idx, p * m + k, itype), da[k], err, site);
			bad |= v < 0;
			off += v * sa[k];
		}
		if (bad) {
			if (mode == GM_GATHER) store_elem(y, i, 0, w);
			continue;
		}
		switch (mode) {
		case GM_GATHER: store_elem(y, i, load_elem(x, off + t, w), w); break;
		case GM_CLAIM: atomicMax(win + off / inner, (int)p); break;
		case GM_WINNERS:
			if (win[off / inner] != (int)p) break;
			// fall through
		case GM_SCATTER: store_elem(y, off + t, load_elem(x, i, w), w); break;
		default: reduce_elem(y, off + t, load_elem(x, i, w), w, mode, etype);
		}
	}
}

// ---- Resize -------------------------------------------------------------------------

// Interpolation modes.
#define RS_NEAREST 0
#define RS_LINEAR 1
#define RS_CUBIC 2
// Coordinate transformations.
#define RC_HALF_PIXEL 0
#define RC_HALF_PIXEL_SYMMETRIC 1
#define RC_PYTORCH_HALF_PIXEL 2
#define RC_ALIGN_CORNERS 3
#define RC_ASYMMETRIC 4
#define RC_TF_HALF_PIXEL_FOR_NN 5
#define RC_TF_CROP_AND_RESIZE 6
// Nearest modes; legacy (Resize-10) floors when upsampling, ceils when
// downsampling.
#define RN_ROUND_PREFER_FLOOR 0
#define RN_ROUND_PREFER_CEIL 1
#define RN_FLOOR 2
#define RN_CEIL 3
#define RN_LEGACY 4

// resize_coord is imSourceCoord (inference/cpu/ops_image.go): the input
// coordinate of output position y; *inside is 0 where tf_crop_and_resize
// puts it outside the input.
DEVICE double resize_coord(long long coord, double y, long long inW, long long outW, double scale, double roi0,
                           double roi1, int *inside) {
	double outWf = mul_rn(scale, (double)inW);
	*inside = 1;
	switch (coord) {
	case RC_HALF_PIXEL_SYMMETRIC: {
		double adjustment = (double)outW / outWf;
		double offset = mul_rn((double)inW / 2, 1 - adjustment);
		return offset + (y + 0.5) / scale - 0.5;
	}
	case RC_PYTORCH_HALF_PIXEL: return outW > 1 ? (y + 0.5) / scale - 0.5 : 0;
	case RC_ALIGN_CORNERS: return outWf == 1 ? 0 : mul_rn(y, (double)(inW - 1)) / (outWf - 1);
	case RC_ASYMMETRIC: return y / scale;
	case RC_TF_HALF_PIXEL_FOR_NN: return (y + 0.5) / scale;
	case RC_TF_CROP_AND_RESIZE: {
		double v;
		if (outWf == 1) {
			v = mul_rn(roi1 - roi0, (double)(inW - 1)) / 2;
		} else {
			v = mul_rn(mul_rn(y, roi1 - roi0), (double)(inW - 1)) / (outWf - 1);
		}
		v += mul_rn(roi0, (double)(inW - 1));
		*inside = v >= 0 && v <= (double)(inW - 1);
		return v;
	}
	}
	return (y + 0.5) / scale - 0.5; // half_pixel
}

DEVICE double resize_kernel(long long mode, double a, double d) {
	d = fabs(d);
	if (mode == RS_LINEAR) return fmax(0.0, 1 - d);
	if (d <= 1) return mul_rn(mul_rn(mul_rn(a + 2, d) - (a + 3), d), d) + 1;
	if (d < 2) return mul_rn(mul_rn(mul_rn(a, d) - mul_rn(5, a), d) + mul_rn(8, a), d) - mul_rn(4, a);
	return 0;
}

// resize_weight is the weight of tap k (input base + start + k) at
// fractional position ratio, normalized by norm when it is not 0.
DEVICE double resize_weight(long long mode, double a, double s, long long start, long long k, double ratio,
                            double norm) {
	if (mode == RS_NEAREST) return 1;
	double wt = resize_kernel(mode, a, mul_rn(s, (double)(start + k) - ratio));
	return norm != 0 ? wt / norm : wt;
}

// resize_axis: y = x resized along one axis, x being [outer, inW, inner] and
// y [outer, outW, inner], each float (0) or double (1) as xd and yd say.
// Each output position is the weighted sum of the taps that imResizeTaps
// (inference/cpu/ops_image.go) computes, in the same float64 arithmetic:
// Resize runs one launch per resized axis, through double temporaries.
KERNEL resize_axis(void *y, const void *x, long long yd, long long xd, long long outer, long long inW, long long outW,
                   long long inner, long long mode, long long coord, long long nearest, long long antialias,
                   long long exclude, double cubicA, double scale, double roi0, double roi1, double extrap) {
	const long long n = outer * outW * inner;
	const double radius = mode == RS_CUBIC ? 2.0 : 1.0;
	const double s = antialias && mode != RS_NEAREST ? fmin(scale, 1.0) : 1.0;
	const long long start = d2ll(floor(-radius / s)) + 1;
	const long long width = mode == RS_NEAREST ? 1 : 2 - 2 * start;
	GRID_STRIDE(i, n) {
		long long k = i % inner, r = i / inner, yo = r % outW, o = r / outW;
		int inside;
		double xc = resize_coord(coord, (double)yo, inW, outW, scale, roi0, roi1, &inside);
		double acc = 0;
		if (!inside) {
			acc = extrap;
		} else {
			double fl = floor(xc), ratio = xc - fl;
			long long base = d2ll(fl);
			if (ratio == 0) {
				base--;
				ratio = 1;
			}
			long long first = base + start; // input position of tap 0
			if (mode == RS_NEAREST) {
				first = base + 1;
				if (ratio != 1) {
					int down;
					switch (nearest) {
					case RN_ROUND_PREFER_FLOOR: down = ratio <= 0.5; break;
					case RN_ROUND_PREFER_CEIL: down = ratio < 0.5; break;
					case RN_FLOOR: down = 1; break;
					case RN_CEIL: down = 0; break;
					default: down = scale >= 1; break;
					}
					if (down) first = base;
				}
			}
			// Antialiasing normalizes the weights by their sum; then
			// exclude_outside drops the taps outside the input and
			// normalizes what is left by its sum (not for nearest).
			double norm = 0, enorm = 0;
			if (antialias && mode != RS_NEAREST) {
				for (long long t = 0; t < width; t++) norm += resize_weight(mode, cubicA, s, start, t, ratio, 0);
			}
			if (exclude) {
				for (long long t = 0; t < width; t++) {
					long long j = first + t;
					if (j >= 0 && j < inW) enorm += resize_weight(mode, cubicA, s, start, t, ratio, norm);
				}
				if (mode == RS_NEAREST) enorm = 0;
			}
			long long row = o * inW;
			for (long long t = 0; t < width; t++) {
				long long j = first + t;
				double wt = resize_weight(mode, cubicA, s, start, t, ratio, norm);
				if (exclude) {
					if (j < 0 || j >= inW) {
						wt = 0;
					} else if (enorm != 0) {
						wt /= enorm;
					}
				}
				if (wt == 0) continue;
				j = llmin(llmax(j, 0), inW - 1);
				long long at = (row + j) * inner + k;
				double v = xd ? ((const double *)x)[at] : (double)((const float *)x)[at];
				acc += mul_rn(wt, v);
			}
		}
		if (yd) {
			((double *)y)[i] = acc;
		} else {
			((float *)y)[i] = (float)acc;
		}
	}
}

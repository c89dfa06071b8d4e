// common.cuh: what every kernel file includes. It compiles with nvcc (to PTX)
// and, through emu.h, with the host C++ compiler for the emulated kernel
// tests (internal/kernels/emu), so kernels use only this subset of
// CUDA C:
//
//   - KERNEL for an entry point without barriers, SYNC_KERNEL for one that
//     calls __syncthreads (the emulator runs those threads as coroutines);
//   - parameters are pointers, long long and double only: gorgonia.org/cu
//     copies every launch parameter as 8 bytes (docs/design.md, rule 8);
//   - __shared__ arrays of a fixed size (no extern dynamic shared memory),
//     no warp shuffles; of the atomics, atomicCAS on unsigned int and
//     unsigned long long, and atomicMax on int (the ones emu.h defines);
//   - grid-stride loops (GRID_STRIDE), so any grid covers any size.
#pragma once

#ifdef __CUDACC__
#define KERNEL extern "C" __global__ void
#define SYNC_KERNEL extern "C" __global__ void
#define DEVICE static __device__ __forceinline__
#else
#include "emu.h"
#endif

// Threads per block of the kernels that reduce in shared memory.
#define BLOCK 256

// GRID_STRIDE(i, n) loops i over [0, n) across the whole grid.
#define GRID_STRIDE(i, n)                                                          \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (long long)blockDim.x * gridDim.x)

// Element type codes, for kernels that take an operand's type as a
// parameter (cast_convert, binary_pow_mixed, reduce_int, shape_range).
// T_F16 is float16, held as its bits in an unsigned short (half_to_float).
#define T_F32 0
#define T_I64 1
#define T_I32 2
#define T_U8 3
#define T_BOOL 4
#define T_F16 5

// MAXRANK is the largest rank the strided kernels take as scalar
// parameters (shape and strides, padded with 1 and 0 on the left).
#define MAXRANK 6

// d2ll and d2i convert a double to int64 and int32 as Go does on amd64
// (CVTTSD2SQ, CVTTSD2SL), the CPU backend's int64(v) and int32(v): toward
// zero, and the type's least value for NaN, ±Inf and values out of its
// range (a float converts through double, exactly). Every float-to-integer
// conversion of the kernels goes through them: a bare one is undefined
// in C++ for those values, and the GPU's cvt.rzi saturates and gives 0
// for NaN, so neither would agree with the CPU backend.
DEVICE long long d2ll(double v) {
	if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return -9223372036854775807LL - 1;
	return (long long)v;
}

DEVICE int d2i(double v) {
	if (!(v > -2147483649.0 && v < 2147483648.0)) return -2147483647 - 1;
	return (int)v;
}

// half_to_float and float_to_half convert float16, an IEEE 754 binary16
// number held as its bits, to and from float with integer arithmetic, as
// inference.Half.Float32 and inference.HalfFromFloat32 do: exactly, and
// to the nearest float16, ties to even (±Inf from 65520 on; a NaN keeps
// its sign and the top 10 bits of its payload, and is quiet when those are
// all 0). Not cuda_fp16.h: the emulator compiles the kernels for the host
// without it, and these give the same bits on the host and on every GPU.
DEVICE float half_to_float(unsigned short h) {
	const unsigned int sign = (unsigned int)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
	if (exp == 0x1fu) return __int_as_float((int)(sign | 0x7f800000u | frac << 13));
	if (exp == 0) { // zero or a subnormal: frac·2⁻²⁴, a normal float
		return __int_as_float((int)(sign | (unsigned int)__float_as_int((float)frac * 5.9604644775390625e-8f)));
	}
	return __int_as_float((int)(sign | (exp + 112u) << 23 | frac << 13));
}

DEVICE unsigned short float_to_half(float f) {
	const unsigned int b = (unsigned int)__float_as_int(f);
	const unsigned int sign = (b >> 16) & 0x8000u, frac = b & 0x7fffffu;
	const int exp = (int)((b >> 23) & 0xffu);
	if (exp == 0xff) {
		const unsigned int payload = frac >> 13;
		return (unsigned short)(sign | 0x7c00u | (frac == 0 ? 0u : payload != 0 ? payload : 0x200u));
	}
	// e is the float16's biased exponent. A normal float16 keeps the top
	// 11 bits of the 24-bit significand m, a subnormal one (e <= 0) 1-e
	// fewer; past 24 bits the value is below 2⁻²⁵ and rounds to zero.
	const int e = exp - 112;
	if (e >= 0x1f) return (unsigned short)(sign | 0x7c00u);
	const unsigned int m = exp != 0 ? frac | 0x800000u : frac;
	int shift = 13;
	if (e <= 0) {
		shift = 14 - e;
		if (shift > 24) return (unsigned short)sign;
	}
	unsigned int q = m >> shift;
	const unsigned int rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
	if (rest > half || (rest == half && (q & 1u))) q++;
	if (e <= 0) return (unsigned short)(sign | q); // a subnormal, or the least normal on a carry
	// q holds the implicit bit, which adds one to the exponent field; a
	// carry on rounding up makes the next exponent, past the last one +Inf.
	const unsigned int bits = ((unsigned int)(e - 1) << 10) + q;
	return (unsigned short)(sign | (bits >= 0x7c00u ? 0x7c00u : bits));
}

// ---- storage types ----------------------------------------------------------------
//
// A kernel with a float16 form is a template over the storage type S of its
// float operands, float or half_t (a float16 held as its bits). It loads
// with ld, computes in float, and stores with st, which rounds to float16
// once (ties to even): what the CPU backend computes for a float16 model
// (inference/cpu's runKernel, passes.ComputeFloat16InFloat32). Its entry
// points are NAME_f32 and NAME_f16. On the GPU st and ld use the hardware
// conversions (cvt.rn.f16.f32, cvt.f32.f16: exact, and round to nearest
// even, as float_to_half does) for every value but NaN, whose bits the
// integer forms above define. A template's __shared__ arrays are declared
// in its entry points and passed in: nvcc names a static of a template
// function with a hash of the source file's path, so the PTX would differ
// between checkouts, and CI diffs it.
struct half_t {
	unsigned short bits;
};

DEVICE float ld(const float *p, long long i) { return p[i]; }
DEVICE void st(float *p, long long i, float v) { p[i] = v; }

#ifdef __CUDA_ARCH__
DEVICE float ld(const half_t *p, long long i) {
	const unsigned short h = p[i].bits;
	if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0) return half_to_float(h);
	float f;
	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}
DEVICE void st(half_t *p, long long i, float v) {
	unsigned short h;
	if (v != v) {
		h = float_to_half(v);
	} else {
		asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
	}
	p[i].bits = h;
}
#else
DEVICE float ld(const half_t *p, long long i) { return half_to_float(p[i].bits); }
DEVICE void st(half_t *p, long long i, float v) { p[i].bits = float_to_half(v); }
#endif

DEVICE long long llmin(long long a, long long b) { return a < b ? a : b; }
DEVICE long long llmax(long long a, long long b) { return a > b ? a : b; }

// Offset of output element i in a tensor with strides s0..s5, given the
// output dims d0..d5 (all padded to MAXRANK).
DEVICE long long strided_offset(long long i, long long d0, long long d1, long long d2, long long d3,
                                long long d4, long long d5, long long s0, long long s1, long long s2,
                                long long s3, long long s4, long long s5) {
	long long off = 0, q;
	q = i % d5; i /= d5; off += q * s5;
	q = i % d4; i /= d4; off += q * s4;
	q = i % d3; i /= d3; off += q * s3;
	q = i % d2; i /= d2; off += q * s2;
	q = i % d1; i /= d1; off += q * s1;
	off += i * s0;
	return off;
}

// ---- the error channel ------------------------------------------------------------
//
// A kernel that finds bad data (an index out of range, an integer divisor of
// 0), which the CPU backend reports as an error, records it in its
// workspace's error word and goes on with a defined result (0, or the write
// skipped), touching no memory outside its operands; the executor reads the
// word back with the outputs and returns the error, naming the node
// (inference/cuda/errword.go). Such a kernel takes err, the word (null when
// the lowering checked the data on the host: nothing can fail), and site,
// the failing node's number in its plan (from 1).
//
// The word is four long longs: the site of the run's first failure (0:
// none), its kind (E_*), the offending value and the bound it broke. The
// site is claimed with atomicCAS, so only the first failing thread writes
// the other three; a later kernel of the same run finds the word taken.
#define E_INDEX 1   // value: the index; bound: the dimension it indexes
#define E_DIVZERO 2 // value: the output element whose divisor is 0
#define E_RANGE 3   // value: a count outside [0, bound] (LSTM's sequence_lens)

DEVICE void report(long long *err, long long site, long long kind, long long value, long long bound) {
	if (!err || *(volatile long long *)err != 0) return;
	if (atomicCAS((unsigned long long *)err, 0ULL, (unsigned long long)site) == 0ULL) {
		err[1] = kind;
		err[2] = value;
		err[3] = bound;
	}
}

// emu.h maps the CUDA C subset of common.cuh onto host C++, so the kernels
// compile with the host compiler and run on the CPU, a thread at a time
// (internal/kernels/emu). Blocks run one after another; within a
// block the threads of a SYNC_KERNEL run as coroutines that switch at
// __syncthreads, so shared memory and barriers keep their meaning.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cstddef>
#include <utility>

// Contract a*b+c into an fma wherever the optimizer can, as nvcc does
// (g++ does so for C++ by default; emu/emu.go).
#if defined(__clang__)
#pragma clang fp contract(fast)
#endif

struct emu_dim3 {
	unsigned int x, y, z;
};
extern thread_local emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

void emu_syncthreads(void);

#define KERNEL extern "C" void
#define SYNC_KERNEL extern "C" void
#define DEVICE static inline
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __syncthreads() emu_syncthreads()

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// __dmul_rn is a product that is never fused into an fma, as on the GPU:
// the emulator is built with contraction (emu/emu.go), and the empty asm
// hides the product from it.
static inline double __dmul_rn(double a, double b) {
	double r = a * b;
#if defined(__x86_64__)
	__asm__("" : "+x"(r));
#elif defined(__aarch64__)
	__asm__("" : "+w"(r));
#else
	volatile double v = r;
	r = v;
#endif
	return r;
}
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

// Atomics. Blocks run one after another and a block's threads switch only
// at __syncthreads (launches are serialised too: emu.Runner), so a plain
// read-modify-write is atomic here.
static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long v) {
	unsigned long long old = *p;
	if (old == cmp) *p = v;
	return old;
}
static inline unsigned int atomicCAS(unsigned int *p, unsigned int cmp, unsigned int v) {
	unsigned int old = *p;
	if (old == cmp) *p = v;
	return old;
}
static inline int atomicMax(int *p, int v) {
	int old = *p;
	if (v > old) *p = v;
	return old;
}

// Launch parameters arrive as 8-byte words; emu_arg converts one to the
// kernel's parameter type.
template <class T> static inline T emu_arg(uint64_t v) { return (T)v; }
template <> inline double emu_arg<double>(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }

typedef void (*emu_entry)(const uint64_t *args);
int emu_register(const char *name, emu_entry fn, int nargs, int sync);

template <class F> struct emu_sig;
template <class... A> struct emu_sig<void (*)(A...)> {
	static const int nargs = sizeof...(A);
	template <void (*F)(A...), size_t... I> static void call_(const uint64_t *a, std::index_sequence<I...>) {
		F(emu_arg<A>(a[I])...);
	}
	template <void (*F)(A...)> static void call(const uint64_t *a) { call_<F>(a, std::index_sequence_for<A...>{}); }
};

// EMU_KERNEL registers a kernel by name with its parameter count and
// whether it synchronises; the generated emu/*_gen.cc files use it.
#define EMU_KERNEL(name, sync)                                                                      \
	static int emu_reg_##name = emu_register(#name, &emu_sig<decltype(&name)>::template call<&name>, \
	                                         emu_sig<decltype(&name)>::nargs, sync)

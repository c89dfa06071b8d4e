// The emulator's launch loop and kernel registry.
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <map>
#include <string>
#include <vector>

#include "../emu.h"
#include "emu_c.h"

thread_local emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {

struct kernel {
	emu_entry fn;
	int nargs;
	int sync;
};

std::map<std::string, kernel> &registry() {
	static std::map<std::string, kernel> r;
	return r;
}
std::vector<std::string> names;

// Coroutine state of the block being run by a SYNC_KERNEL launch.
const size_t stack_size = 64 << 10;
std::vector<char *> stacks;
std::vector<char> done;
int current = -1;
emu_entry call_fn;
const uint64_t *call_args;
const char *misuse;

#if defined(__x86_64__)
// A coroutine switch of our own: glibc's swapcontext makes a sigprocmask
// system call on every switch, which made barrier-heavy kernels (a block
// per softmax row) hundreds of times slower. emu_switch saves the
// callee-saved registers on the current stack, stores the stack pointer in
// *from, and resumes the coroutine whose stack pointer is to.
extern "C" void emu_switch(void **from, void *to);
asm(R"(
	.text
	.globl emu_switch
	.type emu_switch,@function
emu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size emu_switch, .-emu_switch
)");

void *main_sp;
std::vector<void *> thread_sp;

[[noreturn]] void thread_main() {
	call_fn(call_args);
	done[current] = 1;
	void *dead;
	emu_switch(&dead, main_sp);
	__builtin_unreachable();
}

// start prepares thread t's stack so that the first switch to it enters
// thread_main as if called (the stack 8 bytes off 16-byte alignment).
void start(unsigned t) {
	uintptr_t top = ((uintptr_t)stacks[t] + stack_size) & ~(uintptr_t)15;
	void **sp = (void **)top;
	*--sp = nullptr;               // thread_main's return address: never used
	*--sp = (void *)&thread_main;  // emu_switch returns here
	for (int i = 0; i < 6; i++) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
	thread_sp[t] = sp;
}

void resume(unsigned t) { emu_switch(&main_sp, thread_sp[t]); }
void yield_to_main() { emu_switch(&thread_sp[current], main_sp); }
#else
ucontext_t main_ctx;
std::vector<ucontext_t> thread_ctx;

void thread_main() {
	call_fn(call_args);
	done[current] = 1;
}

void start(unsigned t) {
	getcontext(&thread_ctx[t]);
	thread_ctx[t].uc_stack.ss_sp = stacks[t];
	thread_ctx[t].uc_stack.ss_size = stack_size;
	thread_ctx[t].uc_link = &main_ctx;
	makecontext(&thread_ctx[t], thread_main, 0);
}

void resume(unsigned t) { swapcontext(&main_ctx, &thread_ctx[t]); }
void yield_to_main() { swapcontext(&thread_ctx[current], &main_ctx); }
#endif

}  // namespace

int emu_register(const char *name, emu_entry fn, int nargs, int sync) {
	registry()[name] = kernel{fn, nargs, sync};
	return 0;
}

void emu_syncthreads(void) {
	if (current < 0) {
		misuse = "calls __syncthreads but is declared KERNEL, not SYNC_KERNEL";
		return;
	}
	yield_to_main();
}

extern "C" int emu_kernel_count(void) {
	if (names.empty())
		for (auto &kv : registry()) names.push_back(kv.first);
	return (int)names.size();
}

extern "C" const char *emu_kernel_name(int i) { return names[i].c_str(); }

extern "C" int emu_launch(const char *name, const unsigned *dims, const uint64_t *args, int nargs, char *err,
                          int errlen) {
	auto it = registry().find(name);
	if (it == registry().end()) {
		snprintf(err, errlen, "no kernel named %s", name);
		return 1;
	}
	const kernel &k = it->second;
	if (k.nargs != nargs) {
		snprintf(err, errlen, "kernel %s takes %d parameters, launched with %d", name, k.nargs, nargs);
		return 1;
	}
	gridDim = emu_dim3{dims[0], dims[1], dims[2]};
	blockDim = emu_dim3{dims[3], dims[4], dims[5]};
	unsigned threads = dims[3] * dims[4] * dims[5];
	if (threads == 0 || threads > 1024 || dims[0] * dims[1] * dims[2] == 0) {
		snprintf(err, errlen, "kernel %s: bad launch shape grid %ux%ux%u block %ux%ux%u", name, dims[0], dims[1],
		         dims[2], dims[3], dims[4], dims[5]);
		return 1;
	}
	misuse = nullptr;
	std::vector<emu_dim3> idx(threads);
	for (unsigned t = 0; t < threads; t++)
		idx[t] = emu_dim3{t % dims[3], (t / dims[3]) % dims[4], t / (dims[3] * dims[4])};
	if (k.sync) {
#if defined(__x86_64__)
		thread_sp.resize(threads);
#else
		thread_ctx.resize(threads);
#endif
		done.assign(threads, 0);
		while (stacks.size() < threads) stacks.push_back((char *)malloc(stack_size));
		call_fn = k.fn;
		call_args = args;
	}
	for (unsigned bz = 0; bz < dims[2]; bz++)
		for (unsigned by = 0; by < dims[1]; by++)
			for (unsigned bx = 0; bx < dims[0]; bx++) {
				blockIdx = emu_dim3{bx, by, bz};
				if (!k.sync) {
					current = -1;
					for (unsigned t = 0; t < threads; t++) {
						threadIdx = idx[t];
						k.fn(args);
					}
					continue;
				}
				for (unsigned t = 0; t < threads; t++) {
					done[t] = 0;
					start(t);
				}
				// Each pass runs every live thread to its next barrier or its
				// end; a pass ends with all of them at the same barrier.
				for (unsigned live = threads; live > 0;) {
					live = 0;
					for (unsigned t = 0; t < threads; t++) {
						if (done[t]) continue;
						current = (int)t;
						threadIdx = idx[t];
						resume(t);
						if (!done[t]) live++;
					}
				}
				current = -1;
			}
	if (misuse) {
		snprintf(err, errlen, "kernel %s %s", name, misuse);
		return 1;
	}
	return 0;
}

//go:build cudaemu

// emu.cc: a CPU emulator for the kernels of this directory, so that their
// exact source runs in the tests of machines without a GPU (build tag
// cudaemu). A launch runs the blocks one after another; the threads of a block
// are coroutines on the calling OS thread, switched at every __syncthreads().
// The order in which threads run between two barriers alternates between
// ascending and descending, so that a missing barrier (a read of shared state
// another thread has not yet written, or has already overwritten) shows up as
// a wrong result instead of passing by luck.
//
// Coroutines start through makecontext/setcontext and then switch with
// _setjmp/_longjmp, which, unlike swapcontext, make no signal-mask system
// call: a barrier costs two jumps per thread.
#undef _FORTIFY_SOURCE
#include <setjmp.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

#include "emu_api.h"
#include "emu.h"

emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
unsigned char *emu_dynamic_shared;

namespace {

typedef void (*entry)(const uint64_t *args);

struct fiber {
	ucontext_t ctx;
	jmp_buf jb;
	bool started; // running its loop in trampoline
	bool done;    // finished the current block
	std::vector<char> stack;
};

const size_t stackSize = 256 << 10;

jmp_buf sched;
std::vector<fiber> fibers;
int current;
entry running;
const uint64_t *runningArgs;

// yield saves the current thread and returns to the scheduler.
void yield()
{
	if (!_setjmp(fibers[current].jb))
		_longjmp(sched, 1);
}

// trampoline is every coroutine's body: run the kernel for one block, report
// done, wait to be resumed for the next block (of this or a later launch).
void trampoline()
{
	for (;;) {
		running(runningArgs);
		fibers[current].done = true;
		yield();
	}
}

// resume runs thread t until it yields.
void resume(unsigned t)
{
	fiber &f = fibers[t];
	current = (int)t;
	if (!_setjmp(sched)) {
		if (!f.started) {
			f.started = true;
			getcontext(&f.ctx);
			f.ctx.uc_stack.ss_sp = f.stack.data();
			f.ctx.uc_stack.ss_size = f.stack.size();
			f.ctx.uc_link = 0;
			makecontext(&f.ctx, trampoline, 0);
			setcontext(&f.ctx);
		}
		_longjmp(f.jb, 1);
	}
}

} // namespace

void __syncthreads() { yield(); }

extern "C" void emu_knn_dist(const uint64_t *a);
extern "C" void emu_knn_topk(const uint64_t *a);
extern "C" void emu_llc_code(const uint64_t *a);
extern "C" void emu_rounds_sample(const uint64_t *a);
extern "C" void emu_rounds_em(const uint64_t *a);

static entry lookup(const char *name)
{
	if (strcmp(name, "knn_dist") == 0)
		return emu_knn_dist;
	if (strcmp(name, "knn_topk") == 0)
		return emu_knn_topk;
	if (strcmp(name, "llc_code") == 0)
		return emu_llc_code;
	if (strcmp(name, "rounds_sample") == 0)
		return emu_rounds_sample;
	if (strcmp(name, "rounds_em") == 0)
		return emu_rounds_em;
	return 0;
}

extern "C" int relabel_emu_launch(const char *name, unsigned gx, unsigned gy, unsigned gz,
	unsigned bx, unsigned by, unsigned bz, size_t shmem, const uint64_t *args)
{
	entry fn = lookup(name);
	if (fn == 0)
		return 1;
	unsigned threads = bx * by * bz;
	if (threads == 0 || threads > 1024)
		return 2;
	gridDim = emu_dim3{gx, gy, gz};
	blockDim = emu_dim3{bx, by, bz};
	std::vector<unsigned char> dyn(shmem + 16);
	emu_dynamic_shared = dyn.data();
	running = fn;
	runningArgs = args;
	if (fibers.capacity() == 0)
		// Parked coroutines hold pointers into their fiber: never reallocate.
		fibers.reserve(1024);
	if (fibers.size() < threads)
		fibers.resize(threads);
	for (unsigned t = 0; t < threads; t++)
		if (fibers[t].stack.empty())
			fibers[t].stack.resize(stackSize);

	for (unsigned z = 0; z < gz; z++)
		for (unsigned y = 0; y < gy; y++)
			for (unsigned x = 0; x < gx; x++) {
				blockIdx = emu_dim3{x, y, z};
				for (unsigned t = 0; t < threads; t++)
					fibers[t].done = false;
				// Rounds: every live thread runs to its next barrier (or
				// its end), alternately in ascending and descending order.
				for (unsigned round = 0;; round++) {
					unsigned live = 0;
					for (unsigned i = 0; i < threads; i++) {
						unsigned t = round % 2 == 0 ? i : threads - 1 - i;
						if (fibers[t].done)
							continue;
						live++;
						threadIdx = emu_dim3{t % bx, (t / bx) % by, t / (bx * by)};
						resume(t);
					}
					if (live == 0)
						break;
				}
			}
	emu_dynamic_shared = 0;
	return 0;
}

extern "C" void *relabel_emu_alloc(size_t n) { return calloc(n > 0 ? n : 1, 1); }
extern "C" void relabel_emu_free(void *p) { free(p); }

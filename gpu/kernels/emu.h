// emu.h: the CUDA vocabulary the kernels use, for compiling them as host C++
// (-DRELABEL_EMU) into the CPU emulator of emu.cc. Only included through
// common.cuh; nvcc never sees it.
#ifndef RELABEL_EMU_H
#define RELABEL_EMU_H

#include <math.h>
#include <stdint.h>
#include <string.h>

struct emu_dim3 {
	unsigned x, y, z;
};

// The emulator runs one block at a time, its threads as coroutines on one OS
// thread, and sets threadIdx before resuming each.
extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
extern unsigned char *emu_dynamic_shared;
void __syncthreads();

#define KERNEL extern "C"
#define DEVICE static inline
#define LAUNCH_BOUNDS(n)
// Function-scope shared arrays become static locals: one instance, shared by
// the threads of the block being run.
#define __shared__ static
#define DYNAMIC_SHARED(name) unsigned char *name = emu_dynamic_shared

static inline float __int_as_float(int i)
{
	float f;
	memcpy(&f, &i, sizeof f);
	return f;
}

static inline double __longlong_as_double(long long i)
{
	double f;
	memcpy(&f, &i, sizeof f);
	return f;
}

#endif

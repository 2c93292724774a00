// common.cuh: the few definitions every kernel file shares, written so that the
// same sources compile with nvcc (to PTX, for the device) and with a host C++
// compiler under -DRELABEL_EMU (the CPU emulator of gpu/kernels/emu.cc, which
// runs the kernels' exact code in the tests of machines without a GPU).
//
// Rules the kernels follow so that the emulation is faithful:
//   - block-wide synchronisation only through __syncthreads(), reached by every
//     thread of a block the same number of times (no warp intrinsics, no
//     atomics): the emulator implements it as a barrier over real threads;
//   - static __shared__ arrays are declared at function scope (the emulator
//     makes them static locals, shared by the threads of the one block it runs
//     at a time) and dynamic shared memory through DYNAMIC_SHARED;
//   - every kernel parameter is 8 bytes wide (pointers, long long, double), so
//     that the host passes each as one uint64 slot.
#ifndef RELABEL_COMMON_CUH
#define RELABEL_COMMON_CUH

#ifdef RELABEL_EMU
#include "emu.h"
#else
#define KERNEL extern "C" __global__
#define DEVICE static __device__ __forceinline__
#define LAUNCH_BOUNDS(n) __launch_bounds__(n)
// DYNAMIC_SHARED(name) declares name as the block's dynamic shared memory,
// 16-byte aligned, as raw bytes.
#define DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#endif

typedef long long i64;

#define RELABEL_INF_F (__int_as_float(0x7f800000))

DEVICE int imin(int a, int b) { return a < b ? a : b; }
DEVICE int imax(int a, int b) { return a > b ? a : b; }

#endif

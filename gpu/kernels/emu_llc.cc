//go:build cudaemu

// emu_llc.cc compiles llc.cu for the emulator and unpacks launch arguments.
#include "emu_api.h"
#include "llc.cu"

#define P(T, i) ((T)(uintptr_t)a[i])
#define I(i) ((i64)a[i])
#define F(i) (emu_f64(a[i]))

static double emu_f64(uint64_t u)
{
	double f;
	memcpy(&f, &u, sizeof f);
	return f;
}

extern "C" void emu_llc_code(const uint64_t *a)
{
	llc_code(P(double *, 0), P(int *, 1), P(double *, 2), P(const float *, 3), P(const float *, 4),
		P(const float *, 5), P(const int *, 6), I(7), I(8), I(9), I(10), F(11), F(12), F(13), F(14), I(15));
}

//go:build cudaemu

// emu_rounds.cc compiles rounds.cu for the emulator and unpacks launch arguments.
#include "emu_api.h"
#include "rounds.cu"

#define P(T, i) ((T)(uintptr_t)a[i])
#define I(i) ((i64)a[i])
#define F(i) (emu_rounds_f64(a[i]))

static double emu_rounds_f64(uint64_t u)
{
	double f;
	memcpy(&f, &u, sizeof f);
	return f;
}

extern "C" void emu_rounds_sample(const uint64_t *a)
{
	rounds_sample(P(int *, 0), P(int *, 1), P(int *, 2), P(int *, 3), P(int *, 4),
		P(double *, 5), P(int *, 6),
		P(const int *, 7), P(const int *, 8), P(const float *, 9), P(const float *, 10),
		P(const int *, 11), P(const int *, 12), P(const float *, 13),
		P(const int *, 14), P(const int *, 15), P(const double *, 16), P(const u64 *, 17),
		P(const i64 *, 18),
		I(19), I(20), I(21), I(22), I(23), I(24), I(25));
}

extern "C" void emu_rounds_em(const uint64_t *a)
{
	rounds_em(P(int *, 0), P(int *, 1), P(float *, 2), P(float *, 3), P(int *, 4), P(int *, 5), P(float *, 6),
		P(double *, 7), P(const i64 *, 8), P(int *, 9), P(const i64 *, 10), P(const int *, 11),
		P(const int *, 12), P(const int *, 13), P(const int *, 14), P(const int *, 15), P(const int *, 16),
		P(const int *, 17), P(const int *, 18), P(const float *, 19), P(const float *, 20),
		P(const int *, 21), P(const int *, 22), P(const float *, 23),
		P(const int *, 24), P(const int *, 25), P(const double *, 26), P(const int *, 27),
		I(28), I(29), I(30), I(31), I(32), I(33), I(34),
		F(35), F(36), F(37), F(38), F(39), F(40), F(41));
}

//go:build cudaemu

// emu_knn.cc compiles knn.cu for the emulator and unpacks launch arguments.
#include "emu_api.h"
#include "knn.cu"

#define P(T, i) ((T)(uintptr_t)a[i])
#define I(i) ((i64)a[i])
#define F(i) (emu_f64(a[i]))

static double emu_f64(uint64_t u)
{
	double f;
	memcpy(&f, &u, sizeof f);
	return f;
}

extern "C" void emu_knn_dist(const uint64_t *a)
{
	knn_dist(P(float *, 0), P(const float *, 1), P(const float *, 2), P(const float *, 3),
		P(const float *, 4), P(const i64 *, 5), P(const i64 *, 6), I(7), I(8), I(9), I(10), F(11));
}

extern "C" void emu_knn_topk(const uint64_t *a)
{
	knn_topk(P(float *, 0), P(int *, 1), P(const float *, 2), I(3), I(4), I(5), I(6), I(7));
}

// knn.cu: exact batched k-nearest-neighbour search (METHOD.md step 1).
//
// A search of a block of queries against a tile of candidates is two launches:
//
//   knn_dist  the distance tile, D[i][j] = qterm[i] + bias[j] + alpha * q_i.p_j,
//             by a shared-memory tiled SGEMM (the 2*B*S*d flops of the search)
//             whose epilogue adds the norm terms, clamps at 0 and writes +Inf
//             for a candidate carrying the query's own id (self exclusion);
//   knn_topk  one block per query merges its row of D into the query's running
//             K best (kept on the device across candidate tiles), so only the
//             final B x K lists ever travel back to the host.
//
// The terms are the CPU kernel's (transforms/knn/cpu.go): for L2 qterm =
// ||q||^2, bias = ||p||^2, alpha = -2; for cosine the rows are normalised on the
// host, qterm = 1, bias = 0, alpha = -1. Ties are broken by the lower candidate
// index, as everywhere in relabel.
#include "common.cuh"

// Tile of knn_dist: BM queries x BN candidates per block of 16 x 16 threads,
// each thread owning a 4 x 4 sub-tile strided by 16 (rows ty+16m, columns
// tx+16n) so that shared-memory reads are broadcasts or consecutive words.
#define BM 64
#define BN 64
#define BK 16
#define DIST_THREADS 256

// knn_dist writes the rows x cols distance tile D (row stride cols) of queries
// q (rows x d, row-major) against candidates p[c0:c0+cols] (row-major, d
// columns). qids may be 0 (no exclusion); otherwise a candidate whose id equals
// its query's gets +Inf. Grid: (ceil(cols/BN), ceil(rows/BM)), block 256.
KERNEL void LAUNCH_BOUNDS(DIST_THREADS) knn_dist(
	float *D, const float *q, const float *p,
	const float *qterm, const float *bias,
	const i64 *qids, const i64 *ids,
	i64 rows, i64 cols, i64 d, i64 c0, double alpha)
{
	__shared__ float As[BK][BM + 1];
	__shared__ float Bs[BK][BN + 1];

	const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	const i64 row0 = (i64)blockIdx.y * BM, col0 = (i64)blockIdx.x * BN;
	float acc[4][4];
	for (int m = 0; m < 4; m++)
		for (int n = 0; n < 4; n++)
			acc[m][n] = 0.0f;

	for (i64 k0 = 0; k0 < d; k0 += BK) {
		// Each thread loads 4 elements of each tile; consecutive threads read
		// consecutive k, 16 floats of one row.
		for (int l = 0; l < 4; l++) {
			int e = threadIdx.x + l * DIST_THREADS;
			int r = e / BK, kk = e % BK;
			i64 gk = k0 + kk;
			i64 gr = row0 + r, gc = col0 + r;
			As[kk][r] = (gr < rows && gk < d) ? q[gr * d + gk] : 0.0f;
			Bs[kk][r] = (gc < cols && gk < d) ? p[(c0 + gc) * d + gk] : 0.0f;
		}
		__syncthreads();
		for (int kk = 0; kk < BK; kk++) {
			float a[4], b[4];
			for (int m = 0; m < 4; m++)
				a[m] = As[kk][ty + 16 * m];
			for (int n = 0; n < 4; n++)
				b[n] = Bs[kk][tx + 16 * n];
			for (int m = 0; m < 4; m++)
				for (int n = 0; n < 4; n++)
					acc[m][n] += a[m] * b[n];
		}
		__syncthreads();
	}

	const float al = (float)alpha;
	for (int m = 0; m < 4; m++) {
		i64 r = row0 + ty + 16 * m;
		if (r >= rows)
			continue;
		float qt = qterm[r];
		for (int n = 0; n < 4; n++) {
			i64 c = col0 + tx + 16 * n;
			if (c >= cols)
				continue;
			// The CPU's order: (qterm + bias) + alpha*(q.p); cancellation may
			// leave a near-duplicate just below 0, and no distance is negative.
			float v = (qt + bias[c0 + c]) + al * acc[m][n];
			v = v > 0.0f ? v : 0.0f;
			if (qids != 0 && ids[c0 + c] == qids[r])
				v = RELABEL_INF_F;
			D[r * cols + c] = v;
		}
	}
}

// Sort buffer of knn_topk: the first k slots hold the running best, the rest
// the next chunk of the distance row; one bitonic sort merges them.
#define TOPK_P 2048
#define TOPK_THREADS 256
#define NO_INDEX 0x7fffffff

// before reports whether (da, ia) ranks before (db, ib): nearer, or as near
// with the lower index.
DEVICE bool before(float da, int ia, float db, int ib)
{
	return da < db || (da == db && ia < ib);
}

// knn_topk merges row r of D (rows x cols, row stride cols; column j is
// candidate c0+j) into the sorted lists bestD/bestI (rows x k, k <= TOPK_P/2)
// of query r. first says the lists are still empty. An entry at +Inf is an
// excluded or missing candidate and gets index -1. Grid: rows, block 256.
KERNEL void LAUNCH_BOUNDS(TOPK_THREADS) knn_topk(
	float *bestD, int *bestI, const float *D,
	i64 rows, i64 cols, i64 k, i64 c0, i64 first)
{
	__shared__ float sk[TOPK_P];
	__shared__ int si[TOPK_P];
	__shared__ int improve;

	const i64 r = blockIdx.x;
	const int tid = threadIdx.x;
	const int kk = (int)k;
	for (int t = tid; t < kk; t += TOPK_THREADS) {
		if (first) {
			sk[t] = RELABEL_INF_F;
			si[t] = NO_INDEX;
		} else {
			sk[t] = bestD[r * k + t];
			int i = bestI[r * k + t];
			si[t] = i < 0 ? NO_INDEX : i;
		}
	}
	__syncthreads();

	const int chunk = TOPK_P - kk;
	const float *row = D + r * cols;
	for (i64 start = 0; start < cols; start += chunk) {
		// Only the first m slots are in use; a bitonic sort of the next
		// power of two >= m suffices (the rest would sort as +Inf anyway).
		const int m = kk + (int)(cols - start < chunk ? cols - start : chunk);
		int pn = 2;
		while (pn < m)
			pn <<= 1;
		// The current k-th distance: a chunk none of whose entries is nearer
		// cannot change the list (its indices are all higher), so it skips
		// the sort.
		const float kth = sk[kk - 1];
		if (tid == 0)
			improve = 0;
		__syncthreads();
		int mine = 0;
		for (int t = kk + tid; t < pn; t += TOPK_THREADS) {
			i64 j = start + (t - kk);
			float v = RELABEL_INF_F;
			if (t < m)
				v = row[j];
			sk[t] = v;
			si[t] = v == RELABEL_INF_F ? NO_INDEX : (int)(c0 + j);
			if (v < kth)
				mine = 1;
		}
		if (mine)
			improve = 1; // benign race: every writer writes 1
		__syncthreads();
		if (improve) {
			for (int size = 2; size <= pn; size <<= 1) {
				for (int stride = size >> 1; stride > 0; stride >>= 1) {
					for (int t = tid; t < pn / 2; t += TOPK_THREADS) {
						int a = 2 * t - (t & (stride - 1));
						int b = a + stride;
						bool up = (a & size) == 0;
						if (before(sk[b], si[b], sk[a], si[a]) == up) {
							float fd = sk[a];
							sk[a] = sk[b];
							sk[b] = fd;
							int fi = si[a];
							si[a] = si[b];
							si[b] = fi;
						}
					}
					__syncthreads();
				}
			}
		}
		__syncthreads();
	}

	for (int t = tid; t < kk; t += TOPK_THREADS) {
		bestD[r * k + t] = sk[t];
		bestI[r * k + t] = si[t] == NO_INDEX ? -1 : si[t];
	}
}

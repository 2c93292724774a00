// llc.cu: batched locality-constrained linear coding (METHOD.md step 2).
//
// One thread block codes one neighbourhood: the block's threads form the Gram
// matrix G (float64, from float32 differences that are exact in float64) and
// evaluate the KKT multipliers; thread 0 runs the same primal active-set
// method as the CPU solver (transforms/llc/simplex.go), keeping a Cholesky
// factor of G on the support that is updated, not refactored, when a
// neighbour enters or leaves. G and the factor live in shared memory when
// they fit (the host decides) and in a per-block global workspace otherwise.
//
//	G = C + Lambda diag(d^2) + Ridge trace(C + Lambda diag(d^2)) I,
//	C = (B - x)(B - x)^T,  d_j = exp(dist_j / Sigma),
//
// minimised as a^T G a over the simplex (llc.Params).
#include "common.cuh"

#define LLC_THREADS 128
// Columns of the neighbour differences staged in shared memory at a time.
#define LLC_TD 16

// Status codes of llc_code, one pair (code, neighbour) per neighbourhood.
#define LLC_OK 0
#define LLC_NONFINITE 1    // neighbour j or the query has a non-finite coordinate
#define LLC_NAN_DIST 2     // Dist of neighbour j is NaN
#define LLC_LOC_OVERFLOW 3 // Lambda exp(2 dist_j / Sigma) overflows
#define LLC_NO_CONVERGE 4  // MaxIter iterations were not enough
#define LLC_BAD_LEN 5      // Len outside [1, K]

// Phases thread 0 hands to the block in the active-set loop.
#define PH_DONE 0
#define PH_DROPPED 1
#define PH_KKT 2

DEVICE double dinf() { return __longlong_as_double(0x7ff0000000000000LL); }

// llc_drop removes position p from the support set (length s) and restores
// the lower-triangular factor l (stride n) by Givens rotations, as drop in
// simplex.go.
DEVICE void llc_drop(int *set, double *l, int s, int p, int n)
{
	for (int i = p; i < s - 1; i++)
		set[i] = set[i + 1];
	for (int i = p; i < s - 1; i++)
		for (int c = 0; c < i + 2; c++)
			l[i * n + c] = l[(i + 1) * n + c];
	for (int k = p; k < s - 1; k++) {
		double x = l[k * n + k], y = l[k * n + k + 1];
		double r = sqrt(x * x + y * y);
		double c = x / r, sn = y / r;
		l[k * n + k] = r;
		l[k * n + k + 1] = 0;
		for (int i = k + 1; i < s - 1; i++) {
			double u = l[i * n + k], v = l[i * n + k + 1];
			l[i * n + k] = c * u + sn * v;
			l[i * n + k + 1] = c * v - sn * u;
		}
	}
}

// llc_code codes neighbourhoods b0 .. b0+gridDim.x-1 of a batch: query x[b]
// (d floats), neighbours nb[b] (k x d floats), distances dist[b] (k floats,
// read only when lambda > 0) and valid counts len[b]. It writes the weights to
// dst[b*k:(b+1)*k] (padding 0) and (code, neighbour) to status[2b:2b+2].
// gl is the per-block G and factor workspace (2 k^2 doubles a block) when
// sharedGL is 0. Dynamic shared memory: llc_shared_bytes(k, sharedGL).
KERNEL void LAUNCH_BOUNDS(LLC_THREADS) llc_code(
	double *dst, int *status, double *gl,
	const float *x, const float *nb, const float *dist, const int *len,
	i64 b0, i64 k, i64 d, i64 sharedGL,
	double lambda, double sigma, double ridgeRel, double tolRel, i64 maxIter)
{
	DYNAMIC_SHARED(smem);
	const i64 b = b0 + blockIdx.x;
	const int tid = threadIdx.x;
	const int K = (int)k;
	const int n = len[b];

	// Shared layout, doubles first: Y chunk (K x LLC_TD), a, h, z, viol (K
	// each), then G and L (K*K each) when shared, then ints: set, in (K each).
	double *ys = (double *)smem;
	double *a = ys + K * LLC_TD;
	double *h = a + K;
	double *z = h + K;
	double *viol = z + K;
	double *g, *l;
	int *set;
	if (sharedGL) {
		g = viol + K;
		l = g + K * K;
		set = (int *)(l + K * K);
	} else {
		g = gl + (i64)blockIdx.x * 2 * K * K;
		l = g + K * K;
		set = (int *)(viol + K);
	}
	int *in = set + K;

	__shared__ int phase, added, ns, jw, failed, fcode, fj, done;
	__shared__ double nu, tolAbs;

	double *out = dst + b * k;
	if (n < 1 || n > K) { // the same for the whole block: a uniform exit
		if (tid == 0) {
			status[2 * b] = LLC_BAD_LEN;
			status[2 * b + 1] = n;
		}
		return;
	}

	// G = Y Y^T over the n valid neighbours, Y = nb - x, in float64. Each
	// (i <= j) entry is owned by one thread and accumulated in column order,
	// the CPU's summation order.
	for (int p = tid; p < n * n; p += LLC_THREADS)
		g[p] = 0;
	const float *xb = x + b * d;
	const float *nbb = nb + b * k * d;
	for (i64 t0 = 0; t0 < d; t0 += LLC_TD) {
		int w = (int)(d - t0 < LLC_TD ? d - t0 : LLC_TD);
		__syncthreads();
		for (int e = tid; e < n * LLC_TD; e += LLC_THREADS) {
			int j = e / LLC_TD, t = e % LLC_TD;
			ys[e] = t < w ? (double)nbb[j * d + t0 + t] - (double)xb[t0 + t] : 0.0;
		}
		__syncthreads();
		for (int p = tid; p < n * n; p += LLC_THREADS) {
			int i = p / n, j = p % n;
			if (i > j)
				continue;
			double s = g[p];
			for (int t = 0; t < w; t++)
				s += ys[i * LLC_TD + t] * ys[j * LLC_TD + t];
			g[p] = s;
		}
	}
	__syncthreads();
	for (int p = tid; p < n * n; p += LLC_THREADS) {
		int i = p / n, j = p % n;
		if (i > j)
			g[p] = g[j * n + i];
	}
	__syncthreads();

	// Diagonal: finiteness, locality adaptor, trace, ridge (thread 0, in the
	// CPU's order so that the first failing neighbour is the one reported).
	if (tid == 0) {
		failed = 0;
		done = 0;
		double trace = 0;
		for (int j = 0; j < n && !failed; j++) {
			double gjj = g[j * n + j];
			if (isnan(gjj) || isinf(gjj)) {
				failed = 1, fcode = LLC_NONFINITE, fj = j;
				break;
			}
			if (lambda > 0) {
				double dj = (double)dist[b * k + j];
				if (isnan(dj)) {
					failed = 1, fcode = LLC_NAN_DIST, fj = j;
					break;
				}
				double loc = lambda * exp(2 * dj / sigma);
				if (isinf(loc)) {
					failed = 1, fcode = LLC_LOC_OVERFLOW, fj = j;
					break;
				}
				gjj += loc;
				g[j * n + j] = gjj;
			}
			trace += gjj;
		}
		if (!failed && trace == 0) {
			// Every valid neighbour equals the query: uniform weights.
			for (int j = 0; j < n; j++)
				a[j] = 1.0 / n;
			done = 1;
		} else if (!failed) {
			double ridge = ridgeRel * trace, scale = 0;
			for (int j = 0; j < n; j++) {
				g[j * n + j] += ridge;
				scale = fmax(scale, g[j * n + j]);
			}
			tolAbs = tolRel * scale;
			nu = 1e-3 * ridge; // the pivot floor until the loop needs nu
			// Start at the best vertex.
			int j0 = 0;
			for (int j = 1; j < n; j++)
				if (g[j * n + j] < g[j0 * n + j0])
					j0 = j;
			for (int j = 0; j < n; j++) {
				a[j] = 0;
				in[j] = 0;
			}
			set[0] = j0;
			in[j0] = 1;
			a[j0] = 1;
			l[0] = sqrt(g[j0 * n + j0]);
			ns = 1;
			added = -1;
		}
	}
	__syncthreads();

	if (!failed && !done) {
		const double pivotFloor = nu;
		int it = 0;
		for (; it < (int)maxIter; it++) {
			// Everyone has read the previous iteration's phase and jw
			// before thread 0 writes the next ones.
			__syncthreads();
			if (tid == 0) {
				int s = ns;
				// z = G_SS^-1 1 by two triangular solves, h the intermediate.
				for (int i = 0; i < s; i++) {
					double v = 1.0;
					for (int c = 0; c < i; c++)
						v -= l[i * n + c] * h[c];
					h[i] = v / l[i * n + i];
				}
				for (int i = s - 1; i >= 0; i--) {
					double v = h[i];
					for (int c = i + 1; c < s; c++)
						v -= l[c * n + i] * z[c];
					z[i] = v / l[i * n + i];
				}
				double sum = 0;
				for (int i = 0; i < s; i++)
					sum += z[i];
				if (added >= 0 && z[s - 1] <= 0) {
					// The most violated neighbour got no weight: the
					// violation was at rounding level and a is optimal.
					in[added] = 0;
					ns = s - 1;
					phase = PH_DONE;
				} else {
					double alpha = 1.0;
					int block = -1;
					for (int i = 0; i < s; i++) {
						int j = set[i];
						double ci = z[i] / sum;
						if (ci <= 0) {
							double t = a[j] / (a[j] - ci);
							if (t < alpha)
								alpha = t, block = i;
						}
					}
					if (block >= 0) {
						for (int i = 0; i < s; i++) {
							int j = set[i];
							a[j] += alpha * (z[i] / sum - a[j]);
							if (a[j] < 0)
								a[j] = 0;
						}
						int jb = set[block];
						a[jb] = 0;
						in[jb] = 0;
						llc_drop(set, l, s, block, n);
						ns = s - 1;
						added = -1;
						phase = PH_DROPPED;
					} else {
						for (int i = 0; i < s; i++)
							a[set[i]] = z[i] / sum;
						added = -1;
						nu = 1 / sum;
						phase = PH_KKT;
					}
				}
			}
			__syncthreads();
			if (phase == PH_DONE)
				break;
			if (phase == PH_DROPPED)
				continue;

			// KKT multipliers (G a)_j - nu off the support, in parallel.
			const int s = ns;
			for (int j = tid; j < n; j += LLC_THREADS) {
				if (in[j]) {
					viol[j] = dinf();
					continue;
				}
				double v = 0;
				for (int i = 0; i < s; i++)
					v += g[j * n + set[i]] * a[set[i]];
				viol[j] = v - nu;
			}
			__syncthreads();
			if (tid == 0) {
				double worst = -tolAbs;
				int w = -1;
				for (int j = 0; j < n; j++)
					if (!in[j] && viol[j] < worst)
						worst = viol[j], w = j;
				jw = w;
				if (w >= 0) {
					// Append w to the factor: row s of l solves L r = G_S,w.
					double *lr = l + s * n;
					const double *gw = g + w * n;
					double ww = 0;
					for (int i = 0; i < s; i++) {
						double v = gw[set[i]];
						for (int c = 0; c < i; c++)
							v -= l[i * n + c] * lr[c];
						v /= l[i * n + i];
						lr[i] = v;
						ww += v * v;
					}
					double pivot = gw[w] - ww;
					if (!(pivot > pivotFloor))
						pivot = pivotFloor;
					lr[s] = sqrt(pivot);
					set[s] = w;
					in[w] = 1;
					ns = s + 1;
					added = w;
				}
			}
			__syncthreads();
			if (jw < 0)
				break;
		}
		if (tid == 0 && it == (int)maxIter) {
			failed = 1, fcode = LLC_NO_CONVERGE, fj = 0;
		}
	}
	__syncthreads();

	if (tid == 0) {
		if (failed) {
			status[2 * b] = fcode;
			status[2 * b + 1] = fj;
		} else {
			double sum = 0;
			for (int j = 0; j < n; j++)
				sum += a[j];
			for (int j = 0; j < n; j++)
				out[j] = a[j] / sum;
			for (int j = n; j < K; j++)
				out[j] = 0;
			status[2 * b] = LLC_OK;
			status[2 * b + 1] = 0;
		}
	}
}

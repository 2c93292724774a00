// rounds.cu: one relabelling round (METHOD.md steps 4-7) for a batch of
// items: rounds_sample draws each item's L count vectors from its mixture,
// rounds_em fits MAP-EM to them, blends with the item's state and truncates.
//
// One thread per item: an item's work is a short serial chain (a draw
// depends on the generator's last output, an EM step on the last step) and
// items are many and independent, so a batch of items fills the device the
// way a batch of neighbourhoods fills it for llc_code. The code is a port
// of transforms/mixture (sample.go, round.go, em.go, em_step.go,
// em_result.go, state.go), operation for operation and in the same order,
// not a re-derivation: the draws must be the CPU's bit for bit (Go's
// math/rand/v2 PCG-DXSM seeded through internal/splitmix, its Lemire
// bounded integers and its math.Pow by repeated squaring are reproduced
// below), and the EM is then the CPU's up to the device's exp and log on
// the underflow path. cuRAND's generators (Philox, XORWOW, MRG32k3a) do not
// produce Go's PCG stream, so they could not reproduce the CPU's draws;
// thrust and CUB give sorts and scans across threads, while each item here
// sorts a handful of categories on its own thread. The file is compiled
// with -fmad=false (ptx.sh): a fused multiply-add rounds once where Go
// rounds twice, and one different bit in a cumulative weight can move a
// draw.
#include "common.cuh"

#define ROUNDS_THREADS 64
// Bounds of the per-thread arrays: N trials per count vector and the
// explicit entries a stored row keeps (Params.MaxRowEntries); the host
// runs larger settings on the CPU.
#define ROUNDS_MAX_N 64
#define ROUNDS_MAX_ENTRIES 64

#define ROUNDS_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))

typedef unsigned long long u64;

DEVICE u64 mulhi64(u64 a, u64 b)
{
#ifdef RELABEL_EMU
	return (u64)(((unsigned __int128)a * b) >> 64);
#else
	return __umul64hi(a, b);
#endif
}

// splitmix64's finaliser (internal/splitmix.Mix64).
DEVICE u64 mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

// pcg is math/rand/v2's PCG: a 128-bit LCG with the DXSM output function.
struct pcg {
	u64 hi, lo;
};

DEVICE u64 pcg_next(pcg *s)
{
	const u64 mulHi = 2549297995355413924ULL, mulLo = 4865540595714422341ULL;
	const u64 incHi = 6364136223846793005ULL, incLo = 1442695040888963407ULL;
	u64 lo = s->lo * mulLo;
	u64 hi = mulhi64(s->lo, mulLo);
	hi += s->hi * mulLo + s->lo * mulHi;
	u64 lo2 = lo + incLo;
	u64 c = lo2 < lo ? 1 : 0;
	hi = hi + incHi + c;
	s->lo = lo2;
	s->hi = hi;
	const u64 cheapMul = 0xda942042e4dd58b5ULL;
	hi ^= hi >> 32;
	hi *= cheapMul;
	hi ^= hi >> 48;
	hi *= (lo2 | 1);
	return hi;
}

// pcg_uniform is Sampler.uniform: 53 random bits over 2^53.
DEVICE double pcg_uniform(pcg *s)
{
	return (double)(pcg_next(s) << 11 >> 11) / 9007199254740992.0;
}

// pcg_intn is Sampler.intN (rand.Rand.IntN's algorithm: Lemire's
// multiply-shift with rejection).
DEVICE u64 pcg_intn(pcg *s, u64 n)
{
	if ((n & (n - 1)) == 0)
		return pcg_next(s) & (n - 1);
	u64 x = pcg_next(s);
	u64 hi = mulhi64(x, n), lo = x * n;
	if (lo < n) {
		u64 thresh = (0 - n) % n;
		while (lo < thresh) {
			x = pcg_next(s);
			hi = mulhi64(x, n);
			lo = x * n;
		}
	}
	return hi;
}

// go_pow is Go's math.Pow(x, n) for x in (0, 1] and a whole n >= 1: Frexp,
// repeated squaring, Ldexp, so that the binomial tables are the CPU's.
DEVICE double go_pow(double x, i64 n)
{
	if (x == 1)
		return 1;
	if (n == 1)
		return x;
	double a1 = 1;
	int ae = 0;
	int xe;
	double x1 = frexp(x, &xe);
	for (i64 i = n; i != 0; i >>= 1) {
		if (xe < -(1 << 12) || (1 << 12) < xe) {
			ae += xe;
			break;
		}
		if (i & 1) {
			a1 *= x1;
			ae += xe;
		}
		x1 *= x1;
		xe <<= 1;
		if (x1 < .5) {
			x1 += x1;
			xe--;
		}
	}
	return ldexp(a1, ae);
}

// comp_from is Sampler.compFrom: the first component at or after j whose
// cumulative weight exceeds u (the last one if none does).
DEVICE int comp_from(const double *cum, int m, int j, double u)
{
	while (j < m - 1 && cum[j] <= u)
		j++;
	return j;
}

// sort_ints sorts a[0..n) ascending in place (insertion sort: n is an
// item's few draws or classes).
DEVICE void sort_ints(int *a, int n)
{
	for (int i = 1; i < n; i++) {
		int x = a[i], j = i;
		while (j > 0 && a[j - 1] > x) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = x;
	}
}

// binom_step is the binomial table's ratio pmf(d+1)/pmf(d), as build writes it.
DEVICE double binom_step(i64 n, int d, double q, double p)
{
	return (double)(n - d) / (double)(d + 1) * q / p;
}

// rounds_sample draws item t's count vectors (Sampler.SetMixture and
// Sample): its components are items compIdx[compOff[t]] ..
// compIdx[compOff[t+1]-1] of the packed states (itemOff ... rp, the
// layout of transforms/mixture.States), with weights compW. Vector v's
// distinct categories and counts go to cat/cnt from off[t*(L+1)+v]
// (relative to t*L*N), its multiplicity to w[t*L+v]; nvec[t] is the number
// of distinct vectors, -1 for an empty mixture. cum and centry are scratch
// from cumOff[t], one slot per class of the item's components.
KERNEL void LAUNCH_BOUNDS(ROUNDS_THREADS) rounds_sample(
	int *nvec, int *off, int *cat, int *cnt, int *w,
	double *cum, int *centry,
	const int *itemOff, const int *cls, const float *pi, const float *rem,
	const int *rowOff, const int *rcat, const float *rp,
	const int *compOff, const int *compIdx, const double *compW, const u64 *keys,
	const i64 *cumOff,
	i64 items, i64 L, i64 N, i64 C, i64 iid, i64 seed, i64 round)
{
	const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= items)
		return;
	const int j0 = compOff[t], j1 = compOff[t + 1];
	double *cm = cum + cumOff[t];
	int *ce = centry + cumOff[t];
	int m = 0;
	double tot = 0;
	for (int j = j0; j < j1; j++) {
		double wj = compW[j];
		if (wj <= 0)
			continue;
		const int x = compIdx[j];
		for (int e = itemOff[x]; e < itemOff[x + 1]; e++) {
			double pw = wj * (double)pi[e];
			if (pw <= 0)
				continue;
			tot += pw;
			cm[m] = tot;
			ce[m] = e;
			m++;
		}
	}
	if (tot <= 0) {
		nvec[t] = -1;
		return;
	}
	for (int i = 0; i < m; i++)
		cm[i] /= tot;

	pcg g;
	g.hi = (u64)seed;
	g.lo = mix64(keys[t] ^ mix64((u64)round + 0x9e3779b97f4a7c15ULL));

	int *voff = off + t * (L + 1);
	int *vcat = cat + t * L * N;
	int *vcnt = cnt + t * L * N;
	int *vw = w + t * L;
	int nv = 0;
	voff[0] = 0;

	double u0 = 0;
	if (!iid)
		u0 = pcg_uniform(&g);
	int j = 0;
	int draw[ROUNDS_MAX_N];
	int dc[ROUNDS_MAX_N + 1], dn[ROUNDS_MAX_N + 1];
	for (i64 v = 0; v < L; v++) {
		if (!iid) {
			j = comp_from(cm, m, j, ((double)v + u0) / (double)L);
		} else {
			double u = pcg_uniform(&g);
			// The guide table's start (buildGuide), then the search.
			int gi = (int)(u * (double)m);
			if (gi > m - 1)
				gi = m - 1;
			int gs = comp_from(cm, m, 0, (double)gi / (double)m);
			j = comp_from(cm, m, gs, u);
		}
		const int e = ce[j];
		const int r0 = rowOff[e], nent = rowOff[e + 1] - r0;
		const double rrem = (double)rem[e];
		// Sampler.build: the row's total and its largest entry.
		double rtot = 0, best = 0;
		int top = -1;
		for (int k = 0; k < nent; k++) {
			double pk = (double)rp[r0 + k];
			rtot += pk;
			if (pk > best) {
				top = k;
				best = pk;
			}
		}
		rtot += rrem;
		int split = -1; // component.top
		double bp = 0, bq = 0, pn = 0;
		if (top >= 0 && best >= 0.5 * rtot) {
			bp = best / rtot;
			bq = 1 - bp;
			pn = go_pow(bp, N);
			if (pn > 1e-280)
				split = top;
		}
		i64 miss = N;
		if (split >= 0) {
			double f = pn, c = pn;
			for (int d = 0; d < N; d++) {
				f *= binom_step(N, d, bq, bp);
				c += f;
			}
			double u = pcg_uniform(&g) * c;
			miss = 0;
			f = pn;
			c = pn;
			while (miss < N && c <= u) {
				f *= binom_step(N, (int)miss, bq, bp);
				c += f;
				miss++;
			}
		}
		int nd = 0;
		if (miss > 0) {
			double rt = 0;
			int restN = 0;
			for (int k = 0; k < nent; k++) {
				if (k == split)
					continue;
				rt += (double)rp[r0 + k];
				restN++;
			}
			rt += rrem;
			restN++;
			for (i64 tr = 0; tr < miss; tr++) {
				double u = pcg_uniform(&g) * rt;
				// pick: the first cumulative value above u, else the last.
				double c = 0;
				int idx = restN - 1, i = 0;
				for (int k = 0; k < nent; k++) {
					if (k == split)
						continue;
					c += (double)rp[r0 + k];
					if (u < c) {
						idx = i;
						break;
					}
					i++;
				}
				int ee = idx;
				if (split >= 0 && ee >= split)
					ee++;
				int x;
				if (ee < nent) {
					x = rcat[r0 + ee];
				} else if (nent >= C) {
					x = rcat[r0 + (int)pcg_intn(&g, (u64)nent)];
				} else {
					// uniformOutside: a category outside the row's.
					for (;;) {
						x = (int)pcg_intn(&g, (u64)C);
						bool in = false;
						for (int k = 0; k < nent; k++)
							if (rcat[r0 + k] == x) {
								in = true;
								break;
							}
						if (!in)
							break;
					}
				}
				draw[nd++] = x;
			}
		}
		// The vector: sorted distinct categories with counts, the split
		// entry's N - miss trials merged in (Sampler.vector).
		sort_ints(draw, nd);
		int len = 0;
		int topCat = (split >= 0 && N - miss > 0) ? rcat[r0 + split] : -1;
		int k = (int)(N - miss);
		for (int a = 0; a < nd;) {
			int x = draw[a], b = a + 1;
			while (b < nd && draw[b] == x)
				b++;
			int n = b - a;
			if (topCat >= 0 && topCat <= x) {
				if (topCat == x) {
					n += k;
				} else {
					dc[len] = topCat;
					dn[len++] = k;
				}
				topCat = -1;
			}
			dc[len] = x;
			dn[len++] = n;
			a = b;
		}
		if (topCat >= 0) {
			dc[len] = topCat;
			dn[len++] = k;
		}
		// Sampler.insert: merge with an identical earlier vector, else
		// append (distinct vectors in the order of their first draw).
		int found = -1;
		for (int d = 0; d < nv && found < 0; d++) {
			int lo = voff[d], hi = voff[d + 1];
			if (hi - lo != len)
				continue;
			bool same = true;
			for (int a = 0; a < len; a++)
				if (vcat[lo + a] != dc[a] || vcnt[lo + a] != dn[a]) {
					same = false;
					break;
				}
			if (same)
				found = d;
		}
		if (found >= 0) {
			vw[found]++;
			continue;
		}
		int lo = voff[nv];
		for (int a = 0; a < len; a++) {
			vcat[lo + a] = dc[a];
			vcnt[lo + a] = dn[a];
		}
		vw[nv] = 1;
		nv++;
		voff[nv] = lo + len;
	}
	nvec[t] = nv;
}

// lookup_obs is EM.lookup: the local index of category c, -1 if unobserved.
DEVICE int lookup_obs(const int *obs, int o, int c)
{
	for (int b = 0; b < o; b++)
		if (obs[b] == c)
			return b;
	return -1;
}

// before is entry.before: more probable, or as probable and a lower category.
DEVICE bool before(double p, int c, double q, int d) { return p > q || (p == q && c < d); }

// row_out streams one row's entries through State.Truncate's keepTop into
// an output slot of at most k entries.
struct row_out {
	double p[ROUNDS_MAX_ENTRIES];
	int c[ROUNDS_MAX_ENTRIES];
	int n, k, total;
	double rem;
};

DEVICE void row_begin(row_out *r, int k, int total, double rem)
{
	r->n = 0;
	r->k = k;
	r->total = total;
	r->rem = rem;
}

DEVICE void row_add(row_out *r, int c, double p)
{
	const int k = r->k;
	if (r->n < k) {
		r->p[r->n] = p;
		r->c[r->n] = c;
		r->n++;
		if (r->n == k && r->total > k) {
			// keepTop's insertion sort of the first k entries.
			for (int i = 1; i < k; i++) {
				double xp = r->p[i];
				int xc = r->c[i], j = i;
				while (j > 0 && before(xp, xc, r->p[j - 1], r->c[j - 1])) {
					r->p[j] = r->p[j - 1];
					r->c[j] = r->c[j - 1];
					j--;
				}
				r->p[j] = xp;
				r->c[j] = xc;
			}
		}
		return;
	}
	if (!before(p, c, r->p[k - 1], r->c[k - 1])) {
		r->rem += p;
		return;
	}
	r->rem += r->p[k - 1];
	int j = k - 1;
	while (j > 0 && before(p, c, r->p[j - 1], r->c[j - 1])) {
		r->p[j] = r->p[j - 1];
		r->c[j] = r->c[j - 1];
		j--;
	}
	r->p[j] = p;
	r->c[j] = c;
}

// row_store writes the row, quantised to float32 as packed states are.
DEVICE void row_store(const row_out *r, i64 slot, int *len, int *ocat, float *op, float *orem, i64 k)
{
	len[slot] = r->n;
	orem[slot] = (float)r->rem;
	for (int e = 0; e < r->n; e++) {
		ocat[slot * k + e] = r->c[e];
		op[slot * k + e] = (float)r->p[e];
	}
}

// rounds_em fits item t's drawn count vectors (EM: SetClasses, Observe,
// InitFrom, StepFast, then blendFit or Result, then Truncate) and writes
// its next state: outN[t] classes (-1: an empty mixture, the item keeps its
// state) at slots t*c0 ..., each with its pi, remainder and up to
// maxEntries entries. Its components are as in rounds_sample, its own
// state is item ownIdx[t] of the same packed states. ws and wi are the
// item's double and int scratch from wsOff[t] and wiOff[t]; mbOf[t] bounds
// its class set, min(C, L N) its observed categories.
KERNEL void LAUNCH_BOUNDS(ROUNDS_THREADS) rounds_em(
	int *outN, int *ocls, float *opi, float *orem, int *olen, int *ocat, float *op,
	double *ws, const i64 *wsOff, int *wi, const i64 *wiOff, const int *mbOf,
	const int *nvec, const int *off, const int *cat, const int *cnt, const int *w,
	const int *itemOff, const int *oCls, const float *oPi, const float *oRem,
	const int *oRowOff, const int *oCat, const float *oP,
	const int *compOff, const int *compIdx, const double *compW, const int *ownIdx,
	i64 items, i64 L, i64 N, i64 C, i64 c0, i64 maxEntries, i64 emIters,
	double emTol, double alpha, double beta, double gamma, double smooth,
	double minMass, double expNeg40)
{
	const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= items)
		return;
	const int nv = nvec[t];
	if (nv < 0) {
		outN[t] = -1;
		return;
	}
	const int mb = mbOf[t];
	const int ob = (int)(C < L * N ? C : L * N);
	const int oc0 = itemOff[ownIdx[t]], ocN = itemOff[ownIdx[t] + 1] - oc0; // own's classes

	double *mass = ws + wsOff[t];
	double *Pi = mass + mb, *Unseen = Pi + mb, *sumG = Unseen + mb, *sumN = sumG + mb;
	double *den = sumN + mb, *gam = den + mb, *candP = gam + mb;
	double *Rho = candP + mb + ocN, *num = Rho + (i64)ob * mb;
	int *classes = wi + wiOff[t];
	int *obs = classes + mb, *loc = obs + ob, *candC = loc + L * N, *candS = candC + mb + ocN, *candB = candS + mb + ocN;

	// classSet: every class a component puts mass on, less those under
	// minMass of the mixture (the heaviest stays), sorted.
	int m = 0;
	for (int j = compOff[t]; j < compOff[t + 1]; j++) {
		double wj = compW[j];
		const int xj = compIdx[j];
		for (int e = itemOff[xj]; e < itemOff[xj + 1]; e++) {
			int c = oCls[e], i = 0;
			while (i < m && classes[i] != c)
				i++;
			if (i == m) {
				classes[m] = c;
				mass[m] = 0;
				m++;
			}
			mass[i] += wj * (double)oPi[e];
		}
	}
	if (minMass > 0) {
		double tot = 0, heaviest = 0;
		for (int i = 0; i < m; i++) {
			tot += mass[i];
			heaviest = heaviest > mass[i] ? heaviest : mass[i];
		}
		double cut = minMass * tot;
		if (heaviest < cut)
			cut = heaviest;
		int n = 0;
		for (int i = 0; i < m; i++)
			if (mass[i] >= cut)
				classes[n++] = classes[i];
		m = n;
	}
	sort_ints(classes, m);

	// Observe: local category indices in order of first occurrence.
	const int *vcat = cat + t * L * N, *vcnt = cnt + t * L * N, *voff = off + t * (L + 1), *vw = w + t * L;
	int o = 0;
	const int entries = voff[nv];
	for (int e = 0; e < entries; e++) {
		int li = lookup_obs(obs, o, vcat[e]);
		if (li < 0) {
			li = o;
			obs[o++] = vcat[e];
		}
		loc[e] = li;
	}

	// InitFrom the item's own state (empty: the floor and default rows).
	const double fl = 1e-3 / (double)m;
	double z = 0;
	for (int a = 0; a < m; a++) {
		const int cl = classes[a];
		int k = -1;
		for (int x = 0; x < ocN; x++)
			if (oCls[oc0 + x] == cl) {
				k = oc0 + x;
				break;
			}
		double p = k >= 0 ? (double)oPi[k] : 0;
		if (p < fl)
			p = fl;
		Pi[a] = p;
		z += p;
		double un = 0;
		if (C - 1 > 0)
			un = smooth / (double)(C - 1);
		if (k >= 0) {
			const int r0 = oRowOff[k], nr = oRowOff[k + 1] - r0;
			un = C - nr > 0 ? (double)oRem[k] / (double)(C - nr) : 0;
			for (int b = 0; b < o; b++)
				Rho[b * m + a] = un;
			for (int x = 0; x < nr; x++) {
				int li = lookup_obs(obs, o, oCat[r0 + x]);
				if (li >= 0)
					Rho[li * m + a] = (double)oP[r0 + x];
			}
		} else {
			for (int b = 0; b < o; b++)
				Rho[b * m + a] = un;
			int li = lookup_obs(obs, o, cl);
			if (li >= 0)
				Rho[li * m + a] = 1 - smooth;
		}
		Unseen[a] = un;
	}
	for (int a = 0; a < m; a++)
		Pi[a] /= z;

	// EM steps (EM.step without the objective).
	bool converged = false;
	double piMoved = 0;
	const double a1 = alpha - 1, b1 = beta - 1;
	for (i64 it = 0; it < emIters; it++) {
		if (converged || (emTol > 0 && it > 0 && piMoved <= emTol))
			break;
		for (int a = 0; a < m; a++) {
			sumG[a] = 0;
			sumN[a] = 0;
		}
		for (int x = 0; x < o * m; x++)
			num[x] = 0;
		double wsum = 0;
		for (int v = 0; v < nv; v++) {
			const int lo = voff[v], hi = voff[v + 1];
			double mx = 0;
			for (int a = 0; a < m; a++) {
				double g = Pi[a];
				for (int e = lo; e < hi; e++) {
					double r = Rho[loc[e] * m + a], pw = r;
					for (int q = 2; q <= vcnt[e]; q++)
						pw = pw * r;
					g *= pw;
				}
				gam[a] = g;
				if (g > mx)
					mx = g;
			}
			if (mx < 1e-250) {
				// EM.logJoint: the joint in logs, relative to its largest.
				double lm = ROUNDS_NEG_INF;
				for (int a = 0; a < m; a++) {
					double g = log(Pi[a]);
					for (int e = lo; e < hi; e++)
						g += (double)vcnt[e] * log(Rho[loc[e] * m + a]);
					gam[a] = g;
					if (g > lm)
						lm = g;
				}
				for (int a = 0; a < m; a++)
					gam[a] = lm == ROUNDS_NEG_INF ? 0 : exp(gam[a] - lm);
				mx = 1;
			}
			const double cut = mx * expNeg40;
			double zz = 0;
			for (int a = 0; a < m; a++) {
				double g = gam[a];
				if (!(g >= cut))
					g = 0;
				gam[a] = g;
				zz += g;
			}
			const double wv = (double)vw[v];
			wsum += wv;
			const double trials = (double)N;
			for (int a = 0; a < m; a++) {
				// Kept classes are those at or above the cut, which is
				// positive (mx >= 1e-250): the others are +0 now.
				if (gam[a] == 0)
					continue;
				double g = wv * gam[a] / zz;
				gam[a] = g;
				sumG[a] += g;
				sumN[a] += g * trials;
			}
			for (int e = lo; e < hi; e++) {
				const double ce = (double)vcnt[e];
				double *row = num + loc[e] * m;
				for (int a = 0; a < m; a++)
					row[a] += gam[a] * ce;
			}
		}
		// M step.
		const double piDen = wsum + (double)m * a1;
		bool same = true, allPos = true;
		piMoved = 0;
		for (int a = 0; a < m; a++) {
			double p = (sumG[a] + a1) / piDen;
			same = same && p == Pi[a];
			double d = fabs(p - Pi[a]);
			if (d > piMoved)
				piMoved = d;
			Pi[a] = p;
			double dn = sumN[a] + (double)C * b1;
			den[a] = dn;
			double u = 1 / (double)C;
			if (dn > 0)
				u = b1 / dn;
			else
				allPos = false;
			same = same && Unseen[a] == u;
			Unseen[a] = u;
		}
		for (int b = 0; b < o; b++)
			for (int a = 0; a < m; a++) {
				double x = num[b * m + a], r;
				if (allPos)
					r = (x + b1) / den[a];
				else
					r = (x != 0 && den[a] > 0) ? (x + b1) / den[a] : Unseen[a];
				same = same && Rho[b * m + a] == r;
				Rho[b * m + a] = r;
			}
		converged = same;
	}

	// The next state's classes before truncation: blendFit's (the own
	// classes blended, then the fit's others) or Result's. candS is the
	// class's index in the own state (-1: none), candB in the fit (-1:
	// none).
	const bool blend = ocN > 0 && gamma != 0;
	int nc = 0;
	if (blend) {
		for (int x = 0; x < ocN; x++) {
			const int cl = oCls[oc0 + x];
			int b = -1;
			for (int a = 0; a < m; a++)
				if (classes[a] == cl) {
					b = a;
					break;
				}
			double pb = b >= 0 ? Pi[b] : 0;
			candC[nc] = cl;
			candP[nc] = gamma * (double)oPi[oc0 + x] + (1 - gamma) * pb;
			candS[nc] = x;
			candB[nc] = b;
			nc++;
		}
		for (int a = 0; a < m; a++) {
			bool inOwn = false;
			for (int x = 0; x < ocN; x++)
				if (oCls[oc0 + x] == classes[a]) {
					inOwn = true;
					break;
				}
			if (inOwn)
				continue;
			candC[nc] = classes[a];
			candP[nc] = (1 - gamma) * Pi[a];
			candS[nc] = -1;
			candB[nc] = a;
			nc++;
		}
	} else {
		for (int a = 0; a < m; a++) {
			candC[nc] = classes[a];
			candP[nc] = Pi[a];
			candS[nc] = -1;
			candB[nc] = a;
			nc++;
		}
	}
	// Truncate: most probable first (ties to the lower class), keep c0,
	// renormalise.
	for (int i = 1; i < nc; i++) {
		double xp = candP[i];
		int xc = candC[i], xs = candS[i], xb = candB[i], j = i;
		while (j > 0 && before(xp, xc, candP[j - 1], candC[j - 1])) {
			candP[j] = candP[j - 1];
			candC[j] = candC[j - 1];
			candS[j] = candS[j - 1];
			candB[j] = candB[j - 1];
			j--;
		}
		candP[j] = xp;
		candC[j] = xc;
		candS[j] = xs;
		candB[j] = xb;
	}
	if (nc > c0)
		nc = (int)c0;
	double zk = 0;
	for (int i = 0; i < nc; i++)
		zk += candP[i];
	if (zk > 0)
		for (int i = 0; i < nc; i++)
			candP[i] /= zk;

	row_out r;
	const int k = (int)maxEntries;
	for (int i = 0; i < nc; i++) {
		const i64 slot = t * c0 + i;
		ocls[slot] = candC[i];
		opi[slot] = (float)candP[i];
		const int s = candB[i];
		if (candS[i] < 0) {
			// EM.resultRow of fit class s.
			int n = 0;
			for (int b = 0; b < o; b++)
				if (num[b * m + s] != 0)
					n++;
			row_begin(&r, k, n, Unseen[s] * (double)(C - n));
			for (int b = 0; b < o; b++)
				if (num[b * m + s] != 0)
					row_add(&r, obs[b], Rho[b * m + s]);
			row_store(&r, slot, olen, ocat, op, orem, k);
			continue;
		}
		const int b = candB[i];
		const int ke = oc0 + candS[i];
		const int r0 = oRowOff[ke], na = oRowOff[ke + 1] - r0;
		if (b < 0) {
			// A class of the own state outside the fit: its row as it was.
			row_begin(&r, k, na, (double)oRem[ke]);
			for (int e = 0; e < na; e++)
				row_add(&r, oCat[r0 + e], (double)oP[r0 + e]);
			row_store(&r, slot, olen, ocat, op, orem, k);
			continue;
		}
		// EM.blendFitRow: the own row's entries, then the fit's others in
		// category order.
		int nb = 0, n = na;
		for (int j = 0; j < o; j++) {
			if (num[j * m + b] == 0)
				continue;
			nb++;
			bool in = false;
			for (int e = 0; e < na; e++)
				if (oCat[r0 + e] == obs[j]) {
					in = true;
					break;
				}
			if (!in)
				n++;
		}
		const double ua = C - na > 0 ? (double)oRem[ke] / (double)(C - na) : 0;
		double ub = 0;
		if (C - nb > 0)
			ub = Unseen[b] * (double)(C - nb) / (double)(C - nb);
		const int rest = (int)C - n;
		row_begin(&r, k, n, rest > 0 ? (double)rest * (gamma * ua + (1 - gamma) * ub) : 0);
		for (int e = 0; e < na; e++) {
			int j = lookup_obs(obs, o, oCat[r0 + e]);
			double pb = ub;
			if (j >= 0 && num[j * m + b] != 0)
				pb = Rho[j * m + b];
			row_add(&r, oCat[r0 + e], gamma * (double)oP[r0 + e] + (1 - gamma) * pb);
		}
		const double gu = gamma * ua, h = 1 - gamma;
		for (int j = 0; j < o; j++) {
			if (num[j * m + b] == 0)
				continue;
			bool in = false;
			for (int e = 0; e < na; e++)
				if (oCat[r0 + e] == obs[j]) {
					in = true;
					break;
				}
			if (!in)
				row_add(&r, obs[j], gu + h * Rho[j * m + b]);
		}
		row_store(&r, slot, olen, ocat, op, orem, k);
	}
	outN[t] = nc;
}

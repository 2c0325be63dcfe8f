/* Placement: exact comparison of GPU loads and the acceptance rule.
 *
 * A GPU's load is L = sum_i w_i / r_i over its slots. Fast path: L in long
 * double. Each quotient is correctly rounded (relative error <= u =
 * LDBL_EPSILON / 2, w_i converts exactly) and recursive summation of n
 * non-negative terms adds at most (n - 1) u (1 + u)^n of the sum (Higham,
 * Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.4), so
 * |fl(L) - L| <= (n + 1) * LDBL_EPSILON * fl(L) for n well below 1 / u.
 * When two loads differ by more than the sum of their error bounds the
 * order is decided; otherwise both are compared exactly: with every
 * w_i = m_i 2^k_i (m_i < 2^53), K the smallest k_i and P the product of
 * the distinct r_i of both GPUs, L * P * 2^-K = sum_i m_i 2^(k_i - K) P / r_i
 * is an integer, computed in base-2^32 big integers.
 */
#include "placement/exact.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One GPU's terms. */
struct gpu_terms {
	const double *w;
	const uint32_t *slot; /* the GPU's S slots */
	const uint32_t *r;
	uint32_t S;
};

static long double load_ld(const struct gpu_terms *t)
{
	long double l = 0;
	for (uint32_t s = 0; s < t->S; s++) {
		uint32_t e = t->slot[s];
		l += (long double)t->w[e] / (long double)t->r[e];
	}
	return l;
}

static long double err_ld(const struct gpu_terms *t, long double l)
{
	return (long double)(t->S + 2) * LDBL_EPSILON * l;
}

/* --- big integers: little-endian base-2^32 limbs, fixed length n --- */

static void big_mul_u32(uint32_t *a, size_t n, uint32_t d)
{
	uint64_t carry = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)a[i] * d + carry;
		a[i] = (uint32_t)v;
		carry = v >> 32;
	}
}

static void big_add(uint32_t *acc, const uint32_t *b, size_t n)
{
	uint64_t carry = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)acc[i] + b[i] + carry;
		acc[i] = (uint32_t)v;
		carry = v >> 32;
	}
}

static int big_cmp(const uint32_t *a, const uint32_t *b, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		if (a[i] != b[i]) {
			return a[i] < b[i] ? -1 : 1;
		}
	}
	return 0;
}

/* a = m * 2^shift. */
static void big_set_shifted(uint32_t *a, size_t n, uint64_t m, uint32_t shift)
{
	memset(a, 0, sizeof(*a) * n);
	size_t word = shift / 32;
	uint32_t bit = shift % 32;
	/* m < 2^53: spread over up to three limbs after the bit shift */
	uint64_t lo = m << bit;
	uint64_t hi = bit ? m >> (64 - bit) : 0;
	a[word] = (uint32_t)lo;
	a[word + 1] = (uint32_t)(lo >> 32);
	a[word + 2] = (uint32_t)hi;
}

/* w = m * 2^k with m an odd integer below 2^53 (w > 0 finite). */
static void split_double(double w, uint64_t *m, int *k)
{
	int ex;
	double f = frexp(w, &ex); /* w = f 2^ex, f in [0.5, 1) */
	uint64_t mm = (uint64_t)ldexp(f, 53);
	int kk = ex - 53;
	while (mm && !(mm & 1)) {
		mm >>= 1;
		kk++;
	}
	*m = mm;
	*k = kk;
}

struct exact_ctx {
	uint32_t dist[2 * MP_MAX_SLOTS_PER_GPU]; /* distinct denominators */
	uint32_t ndist;
	int kmin;
	int kmax;
};

static void scan_terms(struct exact_ctx *c, const struct gpu_terms *t)
{
	for (uint32_t s = 0; s < t->S; s++) {
		uint32_t e = t->slot[s];
		if (!(t->w[e] > 0)) {
			continue;
		}
		uint64_t m;
		int k;
		split_double(t->w[e], &m, &k);
		c->kmin = k < c->kmin ? k : c->kmin;
		c->kmax = k > c->kmax ? k : c->kmax;
		bool seen = false;
		for (uint32_t i = 0; i < c->ndist; i++) {
			seen = seen || c->dist[i] == t->r[e];
		}
		if (!seen) {
			c->dist[c->ndist++] = t->r[e];
		}
	}
}

/* acc = L * P * 2^-K (see the file comment); tmp scratch of n limbs. */
static void big_load(const struct exact_ctx *c, const struct gpu_terms *t, uint32_t *acc,
		     uint32_t *tmp, size_t n)
{
	memset(acc, 0, sizeof(*acc) * n);
	for (uint32_t s = 0; s < t->S; s++) {
		uint32_t e = t->slot[s];
		if (!(t->w[e] > 0)) {
			continue;
		}
		uint64_t m;
		int k;
		split_double(t->w[e], &m, &k);
		big_set_shifted(tmp, n, m, (uint32_t)(k - c->kmin));
		for (uint32_t i = 0; i < c->ndist; i++) {
			if (c->dist[i] != t->r[e]) {
				big_mul_u32(tmp, n, c->dist[i]);
			}
		}
		big_add(acc, tmp, n);
	}
}

static int cmp_exact(const struct gpu_terms *a, const struct gpu_terms *b)
{
	struct exact_ctx c = { .ndist = 0, .kmin = INT32_MAX, .kmax = INT32_MIN };
	scan_terms(&c, a);
	scan_terms(&c, b);
	if (c.ndist == 0) {
		return 0; /* both zero */
	}
	/* bits: 53 (m) + shift span + 32 per denominator + log2(2S) + slack */
	size_t bits = 53 + (size_t)(c.kmax - c.kmin) + 32 * (size_t)c.ndist + 32 + 64;
	size_t n = bits / 32 + 3;
	uint32_t *buf = calloc(3 * n, sizeof(*buf));
	if (!buf) {
		abort(); /* a few kB at most: out of memory here cannot be reported honestly */
	}
	big_load(&c, a, buf, buf + 2 * n, n);
	big_load(&c, b, buf + n, buf + 2 * n, n);
	int res = big_cmp(buf, buf + n, n);
	free(buf);
	return res;
}

static int cmp_terms(const struct gpu_terms *a, const struct gpu_terms *b)
{
	long double la = load_ld(a);
	long double lb = load_ld(b);
	long double err = err_ld(a, la) + err_ld(b, lb);
	if (la - lb > err) {
		return 1;
	}
	if (lb - la > err) {
		return -1;
	}
	return cmp_exact(a, b);
}

int pl_x_cmp_gpu(const struct pl_prob *prob, const uint32_t *slot_a, const uint32_t *r_a,
		 uint32_t ga, const uint32_t *slot_b, const uint32_t *r_b, uint32_t gb)
{
	struct gpu_terms a = { prob->w, slot_a + (size_t)ga * prob->S, r_a, prob->S };
	struct gpu_terms b = { prob->w, slot_b + (size_t)gb * prob->S, r_b, prob->S };
	return cmp_terms(&a, &b);
}

int pl_x_cmp_slots(const double *w_a, const uint32_t *slot_a, const uint32_t *r_a,
		   const double *w_b, const uint32_t *slot_b, const uint32_t *r_b, uint32_t S)
{
	struct gpu_terms a = { w_a, slot_a, r_a, S };
	struct gpu_terms b = { w_b, slot_b, r_b, S };
	return cmp_terms(&a, &b);
}

uint32_t pl_x_argmax(const struct pl_prob *prob, const uint32_t *slot, const uint32_t *r)
{
	uint32_t best = 0;
	for (uint32_t g = 1; g < prob->G; g++) {
		if (pl_x_cmp_gpu(prob, slot, r, g, slot, r, best) > 0) {
			best = g;
		}
	}
	return best;
}

int pl_x_cmp_max(const struct pl_prob *prob, const struct pl_sol *a, const struct pl_sol *b)
{
	uint32_t ga = pl_x_argmax(prob, a->slot, a->r);
	uint32_t gb = pl_x_argmax(prob, b->slot, b->r);
	return pl_x_cmp_gpu(prob, a->slot, a->r, ga, b->slot, b->r, gb);
}

bool pl_x_balanced(const struct pl_prob *prob, const struct pl_sol *sol)
{
	for (uint32_t g = 1; g < prob->G; g++) {
		if (pl_x_cmp_gpu(prob, sol->slot, sol->r, g, sol->slot, sol->r, 0) != 0) {
			return false;
		}
	}
	return true;
}

static double second_max(const double *load, uint32_t G)
{
	double m1 = -1;
	double m2 = -1;
	for (uint32_t g = 0; g < G; g++) {
		if (load[g] > m1) {
			m2 = m1;
			m1 = load[g];
		} else if (load[g] > m2) {
			m2 = load[g];
		}
	}
	return m2;
}

bool pl_x_accept(const struct pl_prob *prob, struct pl_sol *best, struct pl_sol *cand)
{
	pl_sol_eval(cand, prob);
	for (uint32_t e = 0; e < prob->E; e++) {
		if (cand->r[e] == 0) {
			return false;
		}
	}
	if (!pl_sol_no_dup(cand, prob)) {
		return false;
	}
	int c = pl_x_cmp_max(prob, cand, best);
	if (c > 0) {
		return false;
	}
	if (c == 0 && !(second_max(cand->load, prob->G)
			< second_max(best->load, prob->G) - prob->eps)) {
		return false;
	}
	pl_sol_copy(best, cand, prob);
	return true;
}

double pl_x_round_down(const struct pl_prob *prob, double b)
{
	if (!(b > 0)) {
		return 0;
	}
	return b * (1.0 - (double)(prob->E + prob->S + 8) * DBL_EPSILON);
}

bool pl_x_mantissas(const struct pl_prob *prob, int max_shift, pl_u128 *m, int *k)
{
	int kmin = INT32_MAX;
	for (uint32_t e = 0; e < prob->E; e++) {
		if (prob->w[e] > 0) {
			int ex;
			frexp(prob->w[e], &ex);
			kmin = ex - 53 < kmin ? ex - 53 : kmin;
		}
	}
	for (uint32_t e = 0; e < prob->E; e++) {
		m[e] = 0;
		if (!(prob->w[e] > 0)) {
			continue;
		}
		int ex;
		double f = frexp(prob->w[e], &ex); /* w = f 2^ex, f in [0.5, 1) */
		int shift = ex - 53 - kmin;
		if (shift > max_shift) {
			return false;
		}
		m[e] = (pl_u128)(uint64_t)ldexp(f, 53) << shift;
	}
	*k = kmin;
	return true;
}

pl_u128 pl_x_gcd(pl_u128 a, pl_u128 b)
{
	while (b) {
		pl_u128 t = a % b;
		a = b;
		b = t;
	}
	return a;
}

bool pl_x_scale(const struct pl_prob *prob, pl_u128 max_d, int max_shift, uint32_t *rmax,
		pl_u128 *d, pl_u128 *m, int *k)
{
	*rmax = prob->N - prob->E + 1 < prob->G ? prob->N - prob->E + 1 : prob->G;
	pl_u128 lcm = 1;
	for (uint32_t r = 2; r <= *rmax; r++) {
		uint64_t q = r / (uint64_t)pl_x_gcd(lcm % r, r);
		if (lcm > max_d / q) { /* lcm q > max_d */
			return false;
		}
		lcm *= q;
	}
	*d = lcm;
	return pl_x_mantissas(prob, max_shift, m, k);
}

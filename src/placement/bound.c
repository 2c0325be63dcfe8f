/* Placement: lower bounds on the busiest GPU's load, and the enumeration
 * of replica-count vectors whose bound is below an incumbent.
 *
 * Bounds (even split; see README "Bounds"):
 * - mean: the busiest GPU carries at least the average, sum(w) / G.
 * - largest item: some replica carries max_e w_e / r_e, minimised over r by
 *   greedy apportionment (give the next replica to the expert with the
 *   largest w_e / r_e, r_e <= G: Adams' divisor method, optimal for the
 *   min-max item).
 * - cardinality: with items sorted p_1 >= p_2 >= ... >= p_N and exactly S
 *   per GPU, the top m = (k-1)G + 1 items cannot all sit on different GPUs
 *   k-1 at a time, so some GPU holds k of them: it carries at least
 *   p_{m-k+1} + ... + p_m plus its S-k other items, at least the S-k
 *   smallest (pigeonhole; Dell'Amico and Martello's bounds for
 *   cardinality-constrained multiprocessor scheduling use the same idea).
 */
#include "placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Max-heap of experts by w_e / r_e, ties by lowest id. */
struct rheap {
	uint32_t *h;
	uint32_t n;
	const double *w;
	const uint32_t *r;
	double delta; /* divisor offset: priority w_e / (r_e + delta) */
};

static bool rheap_above(const struct rheap *hp, uint32_t a, uint32_t b)
{
	double ka = hp->w[a] / (hp->r[a] + hp->delta);
	double kb = hp->w[b] / (hp->r[b] + hp->delta);
	if (ka > kb) {
		return true;
	}
	if (ka < kb) {
		return false;
	}
	return a < b;
}

static void rheap_down(struct rheap *hp, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1;
		uint32_t best = i;
		if (l < hp->n && rheap_above(hp, hp->h[l], hp->h[best])) {
			best = l;
		}
		if (l + 1 < hp->n && rheap_above(hp, hp->h[l + 1], hp->h[best])) {
			best = l + 1;
		}
		if (best == i) {
			return;
		}
		uint32_t t = hp->h[i];
		hp->h[i] = hp->h[best];
		hp->h[best] = t;
		i = best;
	}
}

/* Give N - E extra replicas one at a time to the expert with the largest
 * w_e / r_e among those with r_e < cap (cap 0 = no cap). heap[E] scratch. */
static void apportion_fast(const double *w, uint32_t E, uint32_t N, uint32_t cap, double delta,
			   uint32_t *r);

static void apportion(const double *w, uint32_t E, uint32_t N, uint32_t cap, double delta,
		      uint32_t *r, uint32_t *heap, uint32_t *seq)
{
	if (!seq && N - E > 4 * (uint64_t)E) {
		apportion_fast(w, E, N, cap, delta, r);
		return;
	}
	struct rheap hp = { .h = heap, .n = 0, .w = w, .r = r, .delta = delta };
	for (uint32_t e = 0; e < E; e++) {
		r[e] = 1;
		if (cap == 0 || cap > 1) {
			hp.h[hp.n++] = e;
		}
	}
	for (uint32_t i = hp.n / 2; i-- > 0;) {
		rheap_down(&hp, i);
	}
	for (uint32_t k = E; k < N && hp.n > 0; k++) {
		uint32_t e = hp.h[0];
		r[e]++;
		if (seq) {
			seq[k - E] = e;
		}
		if (cap != 0 && r[e] >= cap) {
			hp.h[0] = hp.h[--hp.n];
		}
		rheap_down(&hp, 0);
	}
}

/* Expert e's candidates k = 1..K (the (k+1)-th replica, priority
 * w / (k + delta), the expression the heap compares) with priority above
 * lam, or at least lam when ge. */
static uint32_t count_above(double w, uint32_t K, double delta, double lam, bool ge)
{
	if (!(w > 0)) {
		return (ge ? 0 >= lam : 0 > lam) ? K : 0;
	}
	double x = lam > 0 ? w / lam - delta : (double)K;
	uint32_t k = x >= (double)K ? K : x < 1 ? 0 : (uint32_t)x;
	while (k < K) {
		double p = w / ((uint32_t)(k + 1) + delta);
		if (!(ge ? p >= lam : p > lam)) {
			break;
		}
		k++;
	}
	while (k > 0) {
		double p = w / (k + delta);
		if (ge ? p >= lam : p > lam) {
			break;
		}
		k--;
	}
	return k;
}

/* The same result as apportion() without seq, in O(E log) instead of
 * O((N - E) log E): the greedy hands out the M = N - E largest
 * priorities, ordered by (priority descending, expert ascending), so find
 * the M-th priority by bisection and count. */
static void apportion_fast(const double *w, uint32_t E, uint32_t N, uint32_t cap, double delta,
			   uint32_t *r)
{
	uint32_t M = N - E;
	uint64_t total = 0;
	double hi = 0;
	for (uint32_t e = 0; e < E; e++) {
		uint32_t K = cap == 0 ? M : cap - 1;
		total += K;
		double p = w[e] / (1u + delta);
		hi = p > hi ? p : hi;
	}
	if (total <= M) {
		for (uint32_t e = 0; e < E; e++) {
			r[e] = 1 + (cap == 0 ? M : cap - 1);
		}
		return;
	}
	/* count_ge(lo) >= M > count_ge(hi); hi above every priority */
	double lo = 0;
	hi = hi * 2 + 1;
	for (;;) {
		double mid = lo + (hi - lo) * 0.5;
		if (!(mid > lo && mid < hi)) {
			break;
		}
		uint64_t c = 0;
		for (uint32_t e = 0; e < E && c < M; e++) {
			c += count_above(w[e], cap == 0 ? M : cap - 1, delta, mid, true);
		}
		if (c >= M) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	/* lo is the M-th priority: all above it, then ties by expert id */
	uint64_t taken = 0;
	for (uint32_t e = 0; e < E; e++) {
		r[e] = 1 + count_above(w[e], cap == 0 ? M : cap - 1, delta, lo, false);
		taken += r[e] - 1;
	}
	for (uint32_t e = 0; e < E && taken < M; e++) {
		uint32_t K = cap == 0 ? M : cap - 1;
		uint32_t tie = count_above(w[e], K, delta, lo, true) - (r[e] - 1);
		uint32_t add = M - taken < tie ? (uint32_t)(M - taken) : tie;
		r[e] += add;
		taken += add;
	}
}

double pl_replicas_greedy(const struct pl_prob *prob, uint32_t *r)
{
	uint32_t *heap = malloc(sizeof(*heap) * prob->E);
	double top = 0;
	if (!heap) {
		/* Without scratch: the uncapped proportional bound is still valid. */
		for (uint32_t e = 0; e < prob->E; e++) {
			r[e] = 1;
		}
		return 0;
	}
	apportion(prob->w, prob->E, prob->N, prob->G, 0.0, r, heap, NULL);
	free(heap);
	for (uint32_t e = 0; e < prob->E; e++) {
		double s = prob->w[e] / r[e];
		if (s > top) {
			top = s;
		}
	}
	return top;
}

void pl_replicas_eplb(const struct pl_prob *prob, uint32_t *r, uint32_t *heap, uint32_t *seq)
{
	apportion(prob->w, prob->E, prob->N, 0, 0.0, r, heap, seq);
}
double pl_bound_global(const struct pl_prob *prob, uint32_t *r_scratch, double *size_scratch)
{
	double lb = prob->mean;
	double top = pl_replicas_greedy(prob, r_scratch);
	/* The GPU holding the largest item holds S-1 more; expert e has at most
	 * rmax = min(G, N-E+1) replicas, each >= w_e / rmax, so any S-1 items
	 * weigh at least the S-1 smallest of that multiset. */
	uint32_t rmax = prob->N - prob->E + 1;
	if (rmax > prob->G) {
		rmax = prob->G;
	}
	double small = 0;
	if (prob->S > 1) {
		/* r_scratch is free again: reuse it as an index array. */
		for (uint32_t e = 0; e < prob->E; e++) {
			size_scratch[e] = prob->w[e] / rmax;
		}
		pl_sort_desc(r_scratch, size_scratch, prob->E);
		uint32_t need = prob->S - 1;
		for (uint32_t i = prob->E; i-- > 0 && need > 0;) {
			uint32_t take = need < rmax ? need : rmax;
			small += take * size_scratch[r_scratch[i]];
			need -= take;
		}
	}
	if (top + small > lb) {
		lb = top + small;
	}
	return lb;
}

double pl_bound_for_r(const struct pl_prob *prob, const uint32_t *r, struct pl_work *work)
{
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t N = prob->N;
	double *p = work->size;
	for (uint32_t e = 0; e < E; e++) {
		work->key[e] = prob->w[e] / r[e];
	}
	pl_sort_desc(work->order, work->key, E);
	uint32_t n = 0;
	for (uint32_t i = 0; i < E; i++) {
		uint32_t e = work->order[i];
		for (uint32_t k = 0; k < r[e] && n < N; k++) {
			p[n++] = work->key[e];
		}
	}
	double lb = prob->mean;
	/* Suffix sums of the smallest items: tail(j) = p[N-j] + ... + p[N-1]. */
	for (uint32_t k = 1; k <= S; k++) {
		uint64_t m = (uint64_t)(k - 1) * G + 1;
		if (m > N) {
			break;
		}
		double v = 0;
		for (uint32_t i = (uint32_t)m - k; i < m; i++) {
			v += p[i];
		}
		for (uint32_t i = N - (S - k); i < N; i++) {
			v += p[i];
		}
		if (v > lb) {
			lb = v;
		}
	}
	return lb;
}

void pl_rset_free(struct pl_rset *set)
{
	if (!set) {
		return;
	}
	free(set->r);
	free(set->bound);
	memset(set, 0, sizeof(*set));
}

static bool rset_push(struct pl_rset *set, const uint32_t *r, uint32_t E, double bound)
{
	if (set->count == set->cap) {
		uint32_t cap = set->cap ? set->cap * 2 : 64;
		uint32_t *nr = realloc(set->r, sizeof(*nr) * (size_t)cap * E);
		if (!nr) {
			return false;
		}
		set->r = nr;
		double *nb = realloc(set->bound, sizeof(*nb) * cap);
		if (!nb) {
			return false;
		}
		set->bound = nb;
		set->cap = cap;
	}
	memcpy(set->r + (size_t)set->count * E, r, sizeof(*r) * E);
	set->bound[set->count++] = bound;
	return true;
}

/* The smallest r with w / r < cutoff (w / r strictly below). */
static uint32_t rmin_for(double w, double cutoff)
{
	if (w < cutoff) {
		return 1;
	}
	double q = floor(w / cutoff) + 1;
	if (q > 4294967295.0) {
		return UINT32_MAX;
	}
	uint32_t r = (uint32_t)q;
	while (r > 1 && w / (r - 1) < cutoff) {
		r--;
	}
	while (w / r >= cutoff && r < UINT32_MAX) {
		r++;
	}
	return r;
}

/* Count the vectors that hand out X extra replicas, at most range[i] to
 * free level i (saturating at max_leaves + 1), before walking them:
 * ways[x] = number of ways to hand out x extra replicas. PL_ENUM_DONE
 * when there are at most max_leaves, else PL_ENUM_TOO_MANY (or TIMEOUT,
 * NOMEM). */
static enum pl_enum_result count_vectors(const uint32_t *range, uint32_t F, uint32_t X,
					 uint64_t max_leaves, double deadline, struct pl_work *work)
{
	enum pl_enum_result res = PL_ENUM_DONE;
	uint64_t *ways = calloc((size_t)X + 1, sizeof(*ways));
	uint64_t *tmp = malloc(sizeof(*tmp) * ((size_t)X + 1));
	if (!ways || !tmp) {
		res = PL_ENUM_NOMEM;
		goto out;
	}
	ways[0] = 1;
	uint64_t lim = max_leaves + 1;
	for (uint32_t i = 0; i < F; i++) {
		if ((i & 63) == 63 && pl_timed_out(work, deadline)) {
			res = PL_ENUM_TIMEOUT;
			goto out;
		}
		/* new[x] = sum of old[x - range .. x]: a window over clamped
		 * values stays >= lim whenever the true sum is. */
		uint64_t run = 0;
		for (uint32_t x = 0; x <= X; x++) {
			run += ways[x];
			if (x >= range[i] + 1) {
				run -= ways[x - range[i] - 1];
			}
			tmp[x] = run > lim ? lim : run;
		}
		memcpy(ways, tmp, sizeof(*tmp) * ((size_t)X + 1));
		if (ways[X] > max_leaves) {
			break; /* ways[X] never decreases with more experts */
		}
	}
	if (ways[X] > max_leaves) {
		res = PL_ENUM_TOO_MANY;
	}
out:
	free(ways);
	free(tmp);
	return res;
}

enum pl_enum_result pl_enumerate(const struct pl_prob *prob, double cutoff, uint64_t max_leaves,
				 double deadline, struct pl_work *work, struct pl_rset *out)
{
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	enum pl_enum_result res = PL_ENUM_DONE;
	uint32_t *r = malloc(sizeof(*r) * E);
	uint32_t *fre = malloc(sizeof(*fre) * E);      /* free experts, sorted by w desc */
	uint32_t *range = malloc(sizeof(*range) * E);  /* extra replicas allowed per free level */
	uint32_t *cur = malloc(sizeof(*cur) * E);      /* extra chosen per level */
	uint64_t *suffix = malloc(sizeof(*suffix) * (E + 1));
	uint32_t *sorted = malloc(sizeof(*sorted) * E);
	if (!r || !fre || !range || !cur || !suffix || !sorted) {
		res = PL_ENUM_NOMEM;
		goto out;
	}
	if (pl_timed_out(work, deadline)) {
		res = PL_ENUM_TIMEOUT;
		goto out;
	}
	uint64_t base = 0;
	for (uint32_t e = 0; e < E; e++) {
		r[e] = rmin_for(prob->w[e], cutoff);
		if (r[e] > G) {
			goto out; /* this expert alone keeps every plan at >= cutoff */
		}
		base += r[e];
	}
	if (base > prob->N) {
		goto out;
	}
	uint32_t X = prob->N - (uint32_t)base;
	pl_sort_desc(sorted, prob->w, E);
	uint32_t F = 0;
	for (uint32_t i = 0; i < E; i++) {
		uint32_t e = sorted[i];
		uint32_t hi = G - r[e];
		if (hi > X) {
			hi = X;
		}
		if (hi > 0) {
			fre[F] = e;
			range[F] = hi;
			F++;
		}
	}
	suffix[F] = 0;
	for (uint32_t i = F; i-- > 0;) {
		suffix[i] = suffix[i + 1] + range[i];
	}
	if (suffix[0] < X) {
		goto out; /* caps leave no vector summing to N */
	}
	res = count_vectors(range, F, X, max_leaves, deadline, work);
	if (res != PL_ENUM_DONE) {
		goto out;
	}
	/* Depth-first walk: level i gives cur[i] extra replicas to fre[i]; the
	 * last level takes what is left. Equal-weight neighbours are
	 * interchangeable, so their extras are kept non-increasing. */
	if (F == 0) {
		double b = pl_bound_for_r(prob, r, work);
		if (b < cutoff && !rset_push(out, r, E, b)) {
			res = PL_ENUM_NOMEM;
		}
		goto out;
	}
	uint64_t leaves = 0;
	int64_t lvl = 0;
	uint32_t rem = X;
	/* cur[lvl] starts at its highest allowed value and counts down. */
	cur[0] = range[0] < rem ? range[0] : rem;
	for (;;) {
		uint32_t i = (uint32_t)lvl;
		uint64_t lo = rem > suffix[i + 1] ? rem - suffix[i + 1] : 0;
		bool ok = cur[i] != UINT32_MAX && cur[i] >= lo;
		if (ok && i > 0 && !(prob->w[fre[i]] < prob->w[fre[i - 1]] || prob->w[fre[i]] > prob->w[fre[i - 1]]) && range[i] == range[i - 1]
		    && cur[i] > cur[i - 1]) {
			/* symmetry: skip down to cur[i-1] */
			cur[i] = cur[i - 1];
			ok = cur[i] >= lo;
		}
		if (!ok) {
			/* exhausted this level: back up */
			if (lvl == 0) {
				break;
			}
			lvl--;
			i = (uint32_t)lvl;
			r[fre[i]] -= cur[i];
			rem += cur[i];
			cur[i] = cur[i] == 0 ? UINT32_MAX : cur[i] - 1;
			continue;
		}
		r[fre[i]] += cur[i];
		rem -= cur[i];
		if (i + 1 == F) {
			if (rem == 0) {
				double b = pl_bound_for_r(prob, r, work);
				if (b < cutoff && !rset_push(out, r, E, b)) {
					res = PL_ENUM_NOMEM;
					goto out;
				}
				if (++leaves % 256 == 0 && pl_timed_out(work, deadline)) {
					res = PL_ENUM_TIMEOUT;
					goto out;
				}
			}
			r[fre[i]] -= cur[i];
			rem += cur[i];
			cur[i] = cur[i] == 0 ? UINT32_MAX : cur[i] - 1;
			continue;
		}
		lvl++;
		i = (uint32_t)lvl;
		cur[i] = range[i] < rem ? range[i] : rem;
	}
out:
	free(r);
	free(fre);
	free(range);
	free(cur);
	free(suffix);
	free(sorted);
	return res;
}

/* Smallest r >= 1 with w / r <= cap (UINT32_MAX when none fits in 32 bits). */
static uint32_t rcap(double w, double cap)
{
	if (w <= cap) {
		return 1;
	}
	double q = ceil(w / cap);
	if (!(q < 4294967295.0)) {
		return UINT32_MAX;
	}
	uint32_t r = (uint32_t)q;
	while (r > 1 && w / (r - 1) <= cap) {
		r--;
	}
	while (w / r > cap) {
		r++;
	}
	return r;
}

/* Necessary conditions for a plan whose busiest GPU carries at most T:
 * every item <= T (r_e >= rmin_e <= G, sum rmin <= N), and for each k in
 * 2..S, at most (k-1) G items above T/k, the fewest achievable when the
 * spare N - sum rmin replicas go where they remove the most such items
 * (0/1 knapsack by dynamic programming). */
static bool threshold_ok(const struct pl_prob *prob, double T, uint32_t *rmin, uint64_t *best)
{
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	uint64_t base = 0;
	for (uint32_t e = 0; e < E; e++) {
		rmin[e] = rcap(prob->w[e], T);
		if (rmin[e] > G) {
			return false;
		}
		base += rmin[e];
	}
	if (base > prob->N) {
		return false;
	}
	uint32_t X = prob->N - (uint32_t)base;
	for (uint32_t k = 2; k <= prob->S; k++) {
		double cap = T / k;
		uint64_t count = 0;
		/* best[x] = most items removed with x spare replicas */
		memset(best, 0, sizeof(*best) * ((size_t)X + 1));
		for (uint32_t e = 0; e < E; e++) {
			if (prob->w[e] / rmin[e] <= cap) {
				continue;
			}
			count += rmin[e];
			uint32_t rk = rcap(prob->w[e], cap);
			if (rk > G || rk - rmin[e] > X) {
				continue;
			}
			uint32_t c = rk - rmin[e];
			for (uint32_t x = X + 1; x-- > c;) {
				uint64_t v = best[x - c] + rmin[e];
				if (v > best[x]) {
					best[x] = v;
				}
			}
		}
		uint64_t removed = best[X];
		if (count - removed > (uint64_t)(k - 1) * G) {
			return false;
		}
	}
	return true;
}

double pl_bound_threshold(const struct pl_prob *prob, double lo, double hi)
{
	uint32_t *rmin = malloc(sizeof(*rmin) * prob->E);
	uint64_t *best = malloc(sizeof(*best) * ((size_t)prob->N + 1));
	double bound = lo;
	if (rmin && best && !threshold_ok(prob, lo, rmin, best)) {
		/* lo fails, hi (an achieved max) passes: bisect; every failing T
		 * is a valid bound. */
		for (int it = 0; it < 60 && hi - lo > 1e-9 * hi; it++) {
			double mid = 0.5 * (lo + hi);
			if (threshold_ok(prob, mid, rmin, best)) {
				hi = mid;
			} else {
				lo = mid;
			}
		}
		bound = lo;
	}
	free(rmin);
	free(best);
	return bound;
}

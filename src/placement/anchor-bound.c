/* Placement: the anchor test, a lower bound for three or four slots per GPU
 * (S = 3, 4; issue 25, EP72 x 4) over every choice of replica counts.
 *
 * Question: is there a plan whose busiest GPU is <= T? Every slot holds a
 * replica (sum_e r_e = N = G S), a replica of e carries w_e / r_e.
 *
 * The argument, for one count vector r. Call an item (replica) an anchor
 * when it exceeds T/2: no GPU of such a plan holds two, so there are at
 * most G, each on its own GPU, with S - 1 other items ("partners") on that
 * GPU, none of them an anchor, summing to at most the slack T - a. For the
 * k largest anchors a_1 >= ... >= a_k the (S - 1) k partners are distinct
 * non-anchor items, so
 *     sum_{i <= k} (T - a_i)  >=  Small_{(S-1)k}(pool)            (1)
 * where pool is the multiset of non-anchor items and Small_j the sum of
 * its j smallest. Any r violating (1) for some k has no plan <= T.
 *
 * Over every r. Only experts whose items at their least count
 * lo_e = ceil(w_e / T) exceed T/2 ("anchor experts"; every expert with
 * lo_e >= 2 is one) change the anchors; their extra replicas are
 * enumerated, each up to the count where its items fall to T/2 or below.
 * Every other extra replica (q of them: the spare slots not enumerated)
 * only splits pool items: c replicas of w/c become c + 1 of w/(c + 1).
 * One such split lowers Small_j by at most a_j, the j-th smallest pool
 * item (proof: with Z the pool after shrinking the c items, by w/(c + 1)
 * in all, Small_j(new) = min(Small_j(Z), Small_{j-1}(Z) + w/(c + 1)) >=
 * Small_j - max(w/(c + 1), a_j), and the drop is 0 when w/(c + 1) > a_j),
 * and a_j never rises, so after q splits Small_j >= Small_j - q a_j. An
 * enumerated vector with its q free splits is refuted when (1) fails with
 * that bound for some k, when more than G anchors remain, or when fewer
 * than (S - 1) k pool items can exist. If every enumerated vector is
 * refuted, no plan has max <= T: T is a lower bound (valid for any S; it
 * ignores the rule that a GPU holds distinct experts, which only removes
 * plans). Items and anchors are classified at T (1 + 1e-9) and (1) is
 * compared with a relative slack of 1e-9, so rounding cannot refute a
 * vector that satisfies it.
 *
 * On DeepSeek-V3's shape at EP72 x 4 (Zipf 1.0) the test refutes 0.4%
 * below the plan after 65,780 vectors, and bisection reaches 95,329.9
 * against the plan's 95,539; the configuration LP reaches 95,465 in about
 * a hundred times the time. Work is counted (vectors times the anchor
 * experts and the steps of (1)), never timed.
 */
#include "placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack of the classifications and of (1) (top comment). */
#define PA_SLACK 1e-9
/* Least work a vector costs (its experts and one step of (1)); the
 * measured mean on EP72 x 4 is about 13. */
#define PA_LEAF_WORK 8

struct pa {
	const struct pl_prob *prob;
	double T, Tc;        /* threshold, classification threshold */
	uint32_t spare;      /* N - sum lo */
	uint32_t *lo;        /* [E] least counts */
	uint32_t *ax;        /* [nb] anchor experts, heaviest first */
	uint32_t *cap;       /* [nb] most extra replicas of each before its items leave the anchors */
	uint32_t nb;
	double *base;        /* [nbase] the other experts' items, ascending */
	uint32_t nbase;
	uint32_t *d;         /* [nb] extra replicas on the current path */
	uint32_t *idx;       /* [nb] anchor experts by item, scratch */
	double *val;         /* [nb] their items at the current counts, scratch */
	double *extra;       /* [N] pool items of anchor experts, ascending, scratch */
	uint64_t work, limit;
	bool stopped;
};

/* Least count whose items are <= Tc / 2 (they leave the anchors). */
static uint32_t leave_count(double w, double Tc, uint32_t N)
{
	return pl_p2_least_count(w, Tc / 2, N);
}

/* Sum of the j smallest of base + extra and the j-th smallest (j >= 1,
 * j <= nbase + nx), by merging from where the last call left (ib, ix:
 * items taken from each, *sum their total, *last the largest taken). */
static void take_smallest(const struct pa *p, const double *x, uint32_t nx, uint32_t j,
			  uint32_t *ib, uint32_t *ix, double *sum, double *last)
{
	while (*ib + *ix < j) {
		bool from_base = *ix >= nx || (*ib < p->nbase && p->base[*ib] <= x[*ix]);
		double v = from_base ? p->base[(*ib)++] : x[(*ix)++];
		*sum += v;
		*last = v;
	}
}

/* The enumerated vector (p->d) with its q free splits: refuted? */
static bool refuted(struct pa *p)
{
	const struct pl_prob *prob = p->prob;
	uint32_t S1 = prob->S - 1, used = 0, anchors = 0, nx = 0;
	for (uint32_t i = 0; i < p->nb; i++) {
		used += p->d[i];
		uint32_t e = p->ax[i], c = p->lo[e] + p->d[i];
		if (prob->w[e] / c > p->Tc / 2) {
			anchors += c;
		} else {
			for (uint32_t t = 0; t < c; t++) {
				p->extra[nx++] = prob->w[e] / c;
			}
		}
	}
	uint32_t q = p->spare - used;
	p->work += p->nb + nx;
	if (anchors > prob->G) {
		return true;
	}
	/* anchor experts by item, largest first (insertion: nb is small;
	 * p->val was set by enumerate) */
	uint32_t na = 0;
	for (uint32_t i = 0; i < p->nb; i++) {
		if (!(p->val[i] > p->Tc / 2)) {
			continue;
		}
		uint32_t k = na++;
		while (k > 0 && p->val[p->idx[k - 1]] < p->val[i]) {
			p->idx[k] = p->idx[k - 1];
			k--;
		}
		p->idx[k] = i;
	}
	/* pool items of anchor experts, ascending (insertion on few items) */
	for (uint32_t i = 1; i < nx; i++) {
		double v = p->extra[i];
		uint32_t k = i;
		while (k > 0 && p->extra[k - 1] > v) {
			p->extra[k] = p->extra[k - 1];
			k--;
		}
		p->extra[k] = v;
	}
	uint32_t ib = 0, ix = 0, k = 0;
	double slack = 0, small = 0, last = 0;
	for (uint32_t a = 0; a < na; a++) {
		uint32_t i = p->idx[a];
		uint32_t c = p->lo[p->ax[i]] + p->d[i];
		double item = p->val[i];
		for (uint32_t t = 0; t < c; t++) {
			k++;
			slack += p->T - item;
			uint64_t j = (uint64_t)S1 * k;
			p->work++;
			if (j > (uint64_t)p->nbase + nx + q) {
				return true;
			}
			if (j > (uint64_t)p->nbase + nx) {
				continue;
			}
			take_smallest(p, p->extra, nx, (uint32_t)j, &ib, &ix, &small, &last);
			double need = small - (double)q * last;
			if (slack + PA_SLACK * p->T * (double)k < need) {
				return true;
			}
		}
	}
	return false;
}

/* Depth first over the anchor experts' extra replicas; true when some
 * vector is not refuted (T may be feasible), or the budget ran out. */
static bool enumerate(struct pa *p, uint32_t i, uint32_t left)
{
	if (p->work >= p->limit) {
		p->stopped = true;
		return true;
	}
	if (i == p->nb) {
		return !refuted(p);
	}
	uint32_t top = p->cap[i] < left ? p->cap[i] : left;
	for (uint32_t d = 0; d <= top; d++) {
		p->d[i] = d;
		p->val[i] = p->prob->w[p->ax[i]] / (p->lo[p->ax[i]] + d);
		if (enumerate(p, i + 1, left - d)) {
			return true;
		}
	}
	p->d[i] = 0;
	return false;
}

/* Vectors enumerate() would visit (the anchor experts' extra replicas, each
 * at most its cap, at most spare in all), saturating at limit: a dynamic
 * programme over the experts and the extra replicas used. */
static double count_vectors(const struct pa *p, double limit)
{
	double *ways = calloc((size_t)p->spare + 1, sizeof(*ways));
	double *next = calloc((size_t)p->spare + 1, sizeof(*next));
	double total = limit;
	if (ways && next) {
		ways[0] = 1;
		for (uint32_t i = 0; i < p->nb; i++) {
			for (uint32_t u = 0; u <= p->spare; u++) {
				double v = 0;
				for (uint32_t d = 0; d <= p->cap[i] && d <= u; d++) {
					v += ways[u - d];
				}
				next[u] = v < limit ? v : limit;
			}
			memcpy(ways, next, sizeof(*ways) * ((size_t)p->spare + 1));
		}
		total = 0;
		for (uint32_t u = 0; u <= p->spare; u++) {
			total += ways[u];
		}
	}
	free(ways);
	free(next);
	return total < limit ? total : limit;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Anchor experts and the sorted items of the others. */
static void pa_setup(struct pa *p, const uint32_t *order)
{
	const struct pl_prob *prob = p->prob;
	for (uint32_t i = 0; i < prob->E; i++) {
		uint32_t e = order[i];
		double item = prob->w[e] / p->lo[e];
		if (item > p->Tc / 2) {
			uint32_t leave = leave_count(prob->w[e], p->Tc, prob->N);
			p->cap[p->nb] = leave - p->lo[e];
			p->ax[p->nb++] = e;
		} else {
			for (uint32_t t = 0; t < p->lo[e]; t++) {
				p->base[p->nbase++] = item;
			}
		}
	}
	qsort(p->base, p->nbase, sizeof(*p->base), cmp_double);
}

static void pa_free(struct pa *p)
{
	free(p->lo);
	free(p->ax);
	free(p->cap);
	free(p->base);
	free(p->val);
	free(p->d);
	free(p->idx);
	free(p->extra);
}

int pl_anchor_decide(const struct pl_prob *prob, double T, uint64_t *budget)
{
	if (prob->S < 2 || !(T > 0) || *budget == 0) {
		return PL_P2_UNKNOWN;
	}
	struct pa p = { .prob = prob, .T = T, .Tc = T * (1 + PA_SLACK), .limit = *budget };
	uint32_t E = prob->E, N = prob->N;
	p.lo = malloc(sizeof(*p.lo) * E);
	p.ax = malloc(sizeof(*p.ax) * E);
	p.cap = malloc(sizeof(*p.cap) * E);
	p.base = malloc(sizeof(*p.base) * N);
	p.val = malloc(sizeof(*p.val) * E);
	p.d = calloc(E, sizeof(*p.d));
	p.idx = malloc(sizeof(*p.idx) * E);
	p.extra = malloc(sizeof(*p.extra) * N);
	uint32_t *order = malloc(sizeof(*order) * E);
	int rc = PL_P2_UNKNOWN;
	if (!p.lo || !p.ax || !p.cap || !p.base || !p.val || !p.d || !p.idx || !p.extra
	    || !order) {
		rc = MP_ENOMEM;
		goto out;
	}
	if (!pl_p2_least_counts(prob, p.Tc, p.lo, &p.spare)) {
		rc = PL_P2_INFEASIBLE;
		goto out;
	}
	pl_sort_desc(order, prob->w, E);
	pa_setup(&p, order);
	/* at least PA_LEAF_WORK units a vector: more vectors than the budget
	 * pays for are not started */
	p.work += (uint64_t)p.nb * (p.spare + 1);
	double leaves = count_vectors(&p, 1e18);
	if (leaves * PA_LEAF_WORK > (double)(p.limit - (p.work < p.limit ? p.work : p.limit))) {
		goto out;
	}
	if (!enumerate(&p, 0, p.spare) && !p.stopped) {
		rc = PL_P2_INFEASIBLE;
	}
out:
	*budget -= p.work < *budget ? p.work : *budget;
	free(order);
	pa_free(&p);
	return rc;
}

/* Work per layer (units as counted above) times effort: EP72 x 4 at Zipf
 * 1.0 proves its goal in about 7e6 and each bisection step costs up to
 * that again. */
#define PA_WORK 4e7
/* Bisection steps after the goal. */
#define PA_STEPS 3

int pl_anchor_close(const struct pl_prob *prob, const struct pl_sol *best, double *lb,
		    double effort, struct pl_work *work, double deadline)
{
	if (prob->S < 3 || prob->S > 4 || prob->N <= prob->E || !(best->max > 0)) {
		return 0;
	}
	double units = floor(PA_WORK * effort);
	uint64_t budget = units < 1 ? 1 : units > 1e12 ? (uint64_t)1e12 : (uint64_t)units;
	double hi = best->max - prob->tol / 2;
	double goal = best->max * (1 - 0.8 * PL_GAP_GOAL);
	double T = *lb < goal ? goal : (*lb + hi) / 2;
	for (int step = 0; step <= PA_STEPS && budget > 0 && !pl_timed_out(work, deadline); step++) {
		if (!(T > *lb) || !(T < hi)) {
			break;
		}
		int d = pl_anchor_decide(prob, T, &budget);
		if (d < 0) {
			return d;
		}
		if (d == PL_P2_INFEASIBLE) {
			*lb = T;
		} else if (T <= goal) {
			break; /* not even the goal: bisection would not reach it */
		} else {
			hi = T;
		}
		T = (*lb + hi) / 2;
	}
	return 0;
}

/* Placement: exactly balanced plans by sequential exact fill (issue 17).
 *
 * A plan whose every GPU carries exactly the mean T = sum(w) / G is optimal.
 * The swap search (exact-balance.c) repairs a plan locally and stalls a few
 * tokens above the mean where exact plans exist but are far from the plan.
 * This search builds plans from scratch, for two replica-count vectors
 * (counts that divide the loads where a divisor allows it, then the plan's
 * own), and only where exactly balanced packings are expected to exist
 * (log10_expected, the first-moment estimate of tests/bench/perfect-count.py):
 *
 *   1. Replicas whose load is not a whole number of units (an expert's load
 *      w_e / r_e with r_e not dividing it) can only sit on a GPU at exactly
 *      T together with others whose fractions complete them: they are first
 *      grouped into bundles of two or three (other experts) whose loads sum
 *      to whole units, by a complete depth-first search; if none exists, no
 *      try can succeed and the counts are skipped.
 *   2. GPUs 0 .. G - L - 1 are filled one at a time: a bundle or the
 *      heaviest replica left, replicas of whole units picked at random among
 *      the 8 nearest to the average the GPU still needs, then the last
 *      c = min(3, S - 1) found exactly through hashes of the loads and of
 *      the pairs of loads left.
 *   3. The last L GPUs (L S <= 33 replicas) are split exactly by a complete
 *      meet-in-the-middle search: the GPU of the heaviest replica left takes
 *      S - 1 more whose load sums to T minus it, from the two halves' subset
 *      sums sorted by (size, sum); then the remaining L - 1 GPUs the same.
 *
 * A try that cannot fill a GPU starts over. No GPU holds one expert twice.
 * Randomness is a seeded generator and every subset, pair and scan is
 * counted work, so the result depends only on the input. Loads are the
 * scaled integers of pl_x_scale_counts (exact); the plan found goes through
 * pl_x_accept and counts only when pl_x_balanced.
 */
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most replicas split exactly by the last stage (halves of at most 16). */
#define FILL_TAIL_MAX 33u
/* Most slots per GPU (an expert list of one GPU fits the tail's masks). */
#define FILL_MAX_S 16u
/* Most replicas (the table of pairs has N^2 / 2 entries). */
#define FILL_MAX_N 512u
/* The search runs only where exactly balanced packings are expected to
 * exist (log10 of their expected number, log10_expected, at least this):
 * on the shipped traces those with 1e2.5 or more were found, those below
 * 1e-6 are out of reach of any search (README, Targets of issue 17). */
#define FILL_MIN_LOG10 0.0
/* Completion attempts per GPU before the try starts over. */
#define FILL_ATTEMPTS 32u
/* Replicas found exactly at the end of each GPU (hash lookups). */
#define FILL_COMPLETE 3u
/* Marks a bundled replica not yet on a GPU. */
#define FILL_HELD (UINT32_MAX - 1u)
/* Candidates the random picks choose among. */
#define FILL_NEAR 8u

struct half_sub {
	pl_u128 sum;
	uint32_t mask;
	uint32_t size;
};

struct fill {
	const struct pl_prob *prob;
	uint32_t N, G, S;
	pl_u128 *val;       /* [N] replica loads, scaled */
	uint32_t *ex;       /* [N] expert of each replica */
	uint32_t *order;    /* [N] replicas by load, heaviest first */
	uint32_t *grp;      /* [N] GPU of each replica, or UINT32_MAX */
	uint32_t *hhead;    /* [H] hash buckets of unused replicas by load */
	uint32_t *hnext;    /* [N] */
	uint32_t *pi, *pj;  /* [P] the pairs of replicas of two experts */
	uint32_t *phead;    /* [PH] hash buckets of pairs by load sum */
	uint32_t *pnext;    /* [P] */
	uint32_t pmask;
	uint8_t *frac;      /* [N] 1 for a replica whose load is not whole units */
	uint32_t *bund;     /* [3 G] bundles of fractional replicas */
	uint32_t *bsize;    /* [G] */
	uint32_t nb;
	uint32_t hmask;
	pl_u128 t;
	pl_u128 unit;       /* gcd of the loads of experts with one replica */
	uint64_t rng, work, max_work;
};

static uint64_t next_rand(struct fill *f)
{
	/* splitmix64 */
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t hash_u128(pl_u128 v)
{
	uint64_t h = (uint64_t)v ^ ((uint64_t)(v >> 64) * 0x9e3779b97f4a7c15ull);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ (h >> 29));
}

static uint32_t hash_val(const struct fill *f, pl_u128 v)
{
	return hash_u128(v) & f->hmask;
}

/* True when expert e is among the n experts of list[]. */
static bool has_expert(const struct fill *f, const uint32_t *list, uint32_t n, uint32_t e)
{
	for (uint32_t i = 0; i < n; i++) {
		if (f->ex[list[i]] == e) {
			return true;
		}
	}
	return false;
}

/* The hash of the replicas not yet on a GPU. */
static void hash_build(struct fill *f)
{
	memset(f->hhead, 0xff, sizeof(*f->hhead) * ((size_t)f->hmask + 1));
	for (uint32_t i = 0; i < f->N; i++) {
		if (f->grp[i] == UINT32_MAX) {
			uint32_t h = hash_val(f, f->val[i]);
			f->hnext[i] = f->hhead[h];
			f->hhead[h] = i;
		}
	}
	f->work += f->N;
}

/* An unused replica of load v, none of whose expert is in list[n] and not
 * a or b; UINT32_MAX when none. */
static uint32_t hash_find(const struct fill *f, pl_u128 v, const uint32_t *list, uint32_t n)
{
	for (uint32_t i = f->hhead[hash_val(f, v)]; i != UINT32_MAX; i = f->hnext[i]) {
		if (f->val[i] == v && f->grp[i] == UINT32_MAX && !has_expert(f, list, n, f->ex[i])) {
			return i;
		}
	}
	return UINT32_MAX;
}

/* The table of every pair of replicas of two experts, by load sum. */
static void pairs_build(struct fill *f)
{
	memset(f->phead, 0xff, sizeof(*f->phead) * ((size_t)f->pmask + 1));
	uint32_t np = 0;
	for (uint32_t i = 0; i < f->N; i++) {
		for (uint32_t j = i + 1; j < f->N; j++) {
			if (f->ex[i] == f->ex[j]) {
				continue;
			}
			uint32_t h = hash_u128(f->val[i] + f->val[j]) & f->pmask;
			f->pi[np] = i;
			f->pj[np] = j;
			f->pnext[np] = f->phead[h];
			f->phead[h] = np++;
		}
	}
	f->work += (uint64_t)f->N * f->N / 2;
}

/* Two unused replicas whose loads sum to v, of two experts not in
 * list[n], appended at list[n]; false when none. */
static bool pair_find(struct fill *f, pl_u128 v, uint32_t *list, uint32_t n)
{
	for (uint32_t k = f->phead[hash_u128(v) & f->pmask]; k != UINT32_MAX; k = f->pnext[k]) {
		uint32_t i = f->pi[k];
		uint32_t j = f->pj[k];
		f->work++;
		if (f->val[i] + f->val[j] == v && f->grp[i] == UINT32_MAX && f->grp[j] == UINT32_MAX &&
		    !has_expert(f, list, n, f->ex[i]) && !has_expert(f, list, n, f->ex[j])) {
			list[n] = i;
			list[n + 1] = j;
			return true;
		}
	}
	return false;
}

/* Complete list[n] (sum so far `have`) with c more unused replicas of
 * distinct experts summing exactly to t - have; true with them appended.
 * c = 1 and 2 are hash lookups; c >= 3 tries every replica left (from a
 * random start) before a lookup of c - 1. */
static bool complete(struct fill *f, uint32_t *list, uint32_t n, pl_u128 have, uint32_t c)
{
	if (have > f->t) {
		return false;
	}
	pl_u128 need = f->t - have;
	if (c == 0) {
		return need == 0;
	}
	if (c == 1) {
		uint32_t z = hash_find(f, need, list, n);
		list[n] = z;
		f->work++;
		return z != UINT32_MAX;
	}
	if (c == 2) {
		return pair_find(f, need, list, n);
	}
	uint32_t start = (uint32_t)(next_rand(f) % f->N);
	for (uint32_t k = 0; k < f->N && f->work < f->max_work; k++) {
		uint32_t a = (start + k) % f->N;
		f->work++;
		if (f->grp[a] != UINT32_MAX || f->val[a] > need || has_expert(f, list, n, f->ex[a])) {
			continue;
		}
		f->grp[a] = 0; /* taken while its partners are looked for */
		list[n] = a;
		bool ok = complete(f, list, n + 1, have + f->val[a], c - 1);
		f->grp[a] = UINT32_MAX;
		if (ok) {
			return true;
		}
	}
	return false;
}

/* True when replica i's load is not a whole number of units. */
static bool fractional(const struct fill *f, uint32_t i)
{
	return f->frac[i] != 0;
}

/* Pick one unused replica at random among the FILL_NEAR whose loads are
 * nearest to ideal, of an expert not in list[n]; UINT32_MAX when none. */
static uint32_t pick_near(struct fill *f, const uint32_t *list, uint32_t n, pl_u128 ideal)
{
	uint32_t best[FILL_NEAR] = { 0 };
	pl_u128 dist[FILL_NEAR] = { 0 };
	uint32_t nb = 0;
	for (uint32_t i = 0; i < f->N; i++) {
		if (f->grp[i] != UINT32_MAX || has_expert(f, list, n, f->ex[i]) ||
		    fractional(f, i)) {
			continue;
		}
		pl_u128 d = f->val[i] > ideal ? f->val[i] - ideal : ideal - f->val[i];
		uint32_t k = nb < FILL_NEAR ? nb++ : FILL_NEAR;
		if (k == FILL_NEAR && !(d < dist[FILL_NEAR - 1])) {
			continue;
		}
		if (k == FILL_NEAR) {
			k = FILL_NEAR - 1;
		}
		while (k > 0 && d < dist[k - 1]) {
			best[k] = best[k - 1];
			dist[k] = dist[k - 1];
			k--;
		}
		best[k] = i;
		dist[k] = d;
	}
	f->work += f->N;
	return nb ? best[next_rand(f) % nb] : UINT32_MAX;
}

/* Fill GPU g exactly: its seed[ns] (replicas marked FILL_HELD), then
 * replicas of a whole number of units picked near the average still
 * needed, then c found exactly; true when done. */
static bool fill_gpu(struct fill *f, uint32_t g, const uint32_t *seed, uint32_t ns)
{
	uint32_t c = f->S - ns < FILL_COMPLETE ? f->S - ns : FILL_COMPLETE;
	uint32_t list[FILL_MAX_S] = { 0 };
	for (uint32_t att = 0; att < FILL_ATTEMPTS && f->work < f->max_work; att++) {
		pl_u128 have = 0;
		for (uint32_t k = 0; k < ns; k++) {
			list[k] = seed[k];
			f->grp[seed[k]] = g;
			have += f->val[seed[k]];
		}
		uint32_t n = ns;
		while (n < f->S - c) {
			pl_u128 left = have < f->t ? f->t - have : 0;
			uint32_t p = pick_near(f, list, n, left / (f->S - n));
			if (p == UINT32_MAX) {
				break;
			}
			f->grp[p] = g;
			list[n++] = p;
			have += f->val[p];
		}
		if (n == f->S - c && complete(f, list, n, have, c)) {
			for (uint32_t k = 0; k < f->S; k++) {
				f->grp[list[k]] = g;
			}
			return true;
		}
		for (uint32_t k = ns; k < n; k++) {
			f->grp[list[k]] = UINT32_MAX;
		}
	}
	return false;
}

/* Bundle the free fractional replicas from o on in order (heaviest first),
 * depth-first over partner choices from a random start: each bundle is
 * the first free one and one or two partners of other experts with which
 * its load sums to whole units. True when all are bundled. */
static bool bundle_from(struct fill *f, uint32_t o, uint32_t max_b)
{
	while (o < f->N && (f->grp[f->order[o]] != UINT32_MAX || !fractional(f, f->order[o]))) {
		o++;
		f->work++;
	}
	if (o == f->N) {
		return true;
	}
	if (f->nb == max_b || f->work >= f->max_work) {
		return false;
	}
	uint32_t a = f->order[o];
	uint32_t *b = f->bund + 3 * f->nb;
	b[0] = a;
	f->grp[a] = FILL_HELD;
	uint32_t start = (uint32_t)(next_rand(f) % f->N);
	for (uint32_t k = 0; k < f->N; k++) {
		uint32_t i = (start + k) % f->N;
		f->work++;
		if (f->grp[i] != UINT32_MAX || !fractional(f, i) || f->ex[i] == f->ex[a]) {
			continue;
		}
		f->grp[i] = FILL_HELD;
		b[1] = i;
		f->bsize[f->nb++] = 2;
		if ((f->val[a] + f->val[i]) % f->unit == 0 && bundle_from(f, o + 1, max_b)) {
			return true;
		}
		f->nb--;
		for (uint32_t j = i + 1; f->S >= 3 && j < f->N && f->nb < max_b; j++) {
			f->work++;
			if (f->grp[j] != UINT32_MAX || !fractional(f, j) || f->ex[j] == f->ex[a] ||
			    f->ex[j] == f->ex[i] || (f->val[a] + f->val[i] + f->val[j]) % f->unit != 0) {
				continue;
			}
			f->grp[j] = FILL_HELD;
			b[0] = a;
			b[1] = i;
			b[2] = j;
			f->bsize[f->nb++] = 3;
			if (bundle_from(f, o + 1, max_b)) {
				return true;
			}
			f->nb--;
			f->grp[j] = UINT32_MAX;
		}
		f->grp[i] = UINT32_MAX;
	}
	f->grp[a] = UINT32_MAX;
	return false;
}

static int cmp_half(const void *pa, const void *pb)
{
	const struct half_sub *a = pa;
	const struct half_sub *b = pb;
	if (a->size != b->size) {
		return a->size < b->size ? -1 : 1;
	}
	if (a->sum != b->sum) {
		return a->sum < b->sum ? -1 : 1;
	}
	return a->mask < b->mask ? -1 : a->mask > b->mask;
}

/* Every subset of items[n] (n <= 16) of at most kmax replicas with
 * distinct experts, none of expert ex0, into out; returns the count. */
static uint32_t half_subsets(struct fill *f, const uint32_t *items, uint32_t n, uint32_t kmax,
			     uint32_t ex0, struct half_sub *out)
{
	uint32_t m = 0;
	for (uint32_t mask = 0; mask < (1u << n); mask++) {
		uint32_t size = (uint32_t)__builtin_popcount(mask);
		if (size > kmax) {
			continue;
		}
		uint32_t list[FILL_MAX_S];
		uint32_t k = 0;
		pl_u128 sum = 0;
		bool ok = true;
		for (uint32_t i = 0; i < n && ok; i++) {
			if (mask >> i & 1u) {
				uint32_t it = items[i];
				ok = f->ex[it] != ex0 && !has_expert(f, list, k, f->ex[it]);
				list[k++] = it;
				sum += f->val[it];
			}
		}
		if (ok) {
			out[m++] = (struct half_sub){ sum, mask, size };
		}
	}
	f->work += 1u << n;
	qsort(out, m, sizeof(*out), cmp_half);
	return m;
}

static uint32_t lower(const struct half_sub *s, uint32_t m, uint32_t size, pl_u128 sum)
{
	uint32_t lo = 0;
	uint32_t hi = m;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s[mid].size < size || (s[mid].size == size && s[mid].sum < sum)) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

static bool split_tail(struct fill *f, uint32_t *items, uint32_t n, uint32_t g);

/* Try the group {x} + the A subset ma + the B subset mb as GPU g, then the
 * rest of items[n]. */
static bool try_group(struct fill *f, uint32_t *items, uint32_t n, uint32_t ha, uint32_t ma,
		      uint32_t mb, uint32_t g)
{
	uint32_t grp[FILL_MAX_S] = { 0 };
	uint32_t rest[FILL_TAIL_MAX] = { 0 };
	uint32_t k = 0;
	uint32_t nr = 0;
	grp[k++] = items[0];
	for (uint32_t i = 1; i < n; i++) {
		uint32_t bit = i - 1 < ha ? ma >> (i - 1) & 1u : mb >> (i - 1 - ha) & 1u;
		if (bit) {
			if (has_expert(f, grp, k, f->ex[items[i]])) {
				return false;
			}
			grp[k++] = items[i];
		} else {
			rest[nr++] = items[i];
		}
	}
	if (!split_tail(f, rest, nr, g + 1)) {
		return false;
	}
	for (uint32_t i = 0; i < k; i++) {
		f->grp[grp[i]] = g;
	}
	return true;
}

/* Split items[n] (n = S times the GPUs g ..) into GPUs each at exactly t,
 * by a complete meet-in-the-middle search; items sorted heaviest first. */
static bool split_tail(struct fill *f, uint32_t *items, uint32_t n, uint32_t g)
{
	if (n < f->S || n > FILL_TAIL_MAX) {
		return false;
	}
	if (n == f->S) {
		pl_u128 sum = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (has_expert(f, items, i, f->ex[items[i]])) {
				return false;
			}
			sum += f->val[items[i]];
		}
		if (sum != f->t) {
			return false;
		}
		for (uint32_t i = 0; i < n; i++) {
			f->grp[items[i]] = g;
		}
		return true;
	}
	uint32_t x = items[0];
	if (f->val[x] > f->t) {
		return false;
	}
	pl_u128 need = f->t - f->val[x];
	uint32_t ha = (n - 1) / 2;
	uint32_t hb = n - 1 - ha;
	/* each depth has its own tables (deeper calls have fewer items) */
	struct half_sub *keep = malloc(sizeof(*keep) * ((size_t)1 << ha));
	struct half_sub *sb = malloc(sizeof(*sb) * ((size_t)1 << hb));
	bool found = false;
	if (keep && sb) {
		uint32_t na = half_subsets(f, items + 1, ha, f->S - 1, f->ex[x], keep);
		uint32_t nb = half_subsets(f, items + 1 + ha, hb, f->S - 1, f->ex[x], sb);
		for (uint32_t j = 0; j < nb && !found && f->work < f->max_work; j++) {
			if (sb[j].sum > need || sb[j].size > f->S - 1) {
				continue;
			}
			uint32_t size = f->S - 1 - sb[j].size;
			pl_u128 want = need - sb[j].sum;
			for (uint32_t i = lower(keep, na, size, want);
			     i < na && keep[i].size == size && keep[i].sum == want && !found; i++) {
				f->work++;
				found = try_group(f, items, n, ha, keep[i].mask, sb[j].mask, g);
			}
		}
	}
	free(keep);
	free(sb);
	return found;
}

/* One try from scratch: true when every GPU is exact. The first GPUs are
 * seeded with the bundles of fractional replicas, the others with the
 * heaviest replica left; the last tail_gpus are split exactly. */
static bool fill_try(struct fill *f, uint32_t tail_gpus)
{
	for (uint32_t i = 0; i < f->N; i++) {
		f->grp[i] = UINT32_MAX;
	}
	f->nb = 0;
	if (!bundle_from(f, 0, f->G - tail_gpus)) {
		return false;
	}
	for (uint32_t g = 0; g + tail_gpus < f->G; g++) {
		uint32_t seed[3] = { 0 };
		uint32_t ns = 0;
		if (g < f->nb) {
			ns = f->bsize[g];
			memcpy(seed, f->bund + 3 * g, sizeof(*seed) * ns);
		} else {
			for (uint32_t i = 0; i < f->N && ns == 0; i++) {
				seed[0] = f->order[i];
				ns = f->grp[seed[0]] == UINT32_MAX;
			}
		}
		if (ns == 0 || !fill_gpu(f, g, seed, ns)) {
			return false;
		}
	}
	uint32_t items[FILL_TAIL_MAX] = { 0 };
	uint32_t n = 0;
	for (uint32_t i = 0; i < f->N; i++) {
		if (f->grp[f->order[i]] == UINT32_MAX) {
			items[n++] = f->order[i];
		}
	}
	return n == tail_gpus * f->S && split_tail(f, items, n, f->G - tail_gpus);
}

/* order[]: the replicas by load, heaviest first, ties by index (insertion
 * sort: N is at most a few hundred where this runs; counted). */
static void sort_order(struct fill *f)
{
	for (uint32_t i = 0; i < f->N; i++) {
		uint32_t k = i;
		while (k > 0 && f->val[f->order[k - 1]] < f->val[i]) {
			f->order[k] = f->order[k - 1];
			k--;
		}
		f->order[k] = i;
	}
	f->work += (uint64_t)f->N * f->N / 2;
}

static void fill_free(struct fill *f)
{
	free(f->val);
	free(f->ex);
	free(f->order);
	free(f->grp);
	free(f->hhead);
	free(f->hnext);
	free(f->pi);
	free(f->pj);
	free(f->phead);
	free(f->pnext);
	free(f->bund);
	free(f->frac);
	free(f->bsize);
}

/* log10 of the expected number of exactly balanced packings of these
 * replicas (tests/bench/perfect-count.py, which gives the derivation and
 * its sources: the first-moment estimate of random number partitioning):
 * N! / (S!^G G! prod_e r_e!) packings times (d / (sqrt(2 pi) sigma_S))^(G-1),
 * d the gcd of the replica loads, sigma_S^2 = S var (N - S) / (N - 1). */
static double log10_expected(const struct fill *f)
{
	double mean = 0;
	pl_u128 d = 0;
	for (uint32_t i = 0; i < f->N; i++) {
		mean += (double)f->val[i];
		d = pl_x_gcd(d, f->val[i]);
	}
	mean /= f->N;
	double var = 0;
	double lp = lgamma(f->N + 1.0) - f->G * lgamma(f->S + 1.0) - lgamma(f->G + 1.0);
	for (uint32_t i = 0, run = 0; i < f->N; i++) {
		double x = (double)f->val[i] - mean;
		var += x * x / f->N;
		/* replicas of one expert are consecutive: divide by r_e! */
		run = i > 0 && f->ex[i] == f->ex[i - 1] ? run + 1 : 1;
		lp -= log((double)run);
	}
	double sig = sqrt(f->S * var * (f->N - f->S) / (f->N - 1.0));
	if (!(sig > 0) || d == 0) {
		return 0;
	}
	double per = log10((double)d / (sqrt(2 * M_PI) * sig));
	return lp / log(10.0) + (f->G - 1.0) * per;
}

/* The buffers of a search on N replicas; 0 or MP_ENOMEM. */
static int fill_alloc(struct fill *f, const struct pl_prob *prob)
{
	memset(f, 0, sizeof(*f));
	f->prob = prob;
	f->N = prob->N;
	f->G = prob->G;
	f->S = prob->S;
	size_t h = 1;
	while (h < 2 * (size_t)f->N) {
		h <<= 1;
	}
	f->hmask = (uint32_t)(h - 1);
	size_t np = (size_t)f->N * (f->N - 1) / 2 + 1;
	size_t ph = 1;
	while (ph < 2 * np) {
		ph <<= 1;
	}
	f->pmask = (uint32_t)(ph - 1);
	f->pi = calloc(np, sizeof(*f->pi));
	f->pj = calloc(np, sizeof(*f->pj));
	f->pnext = calloc(np, sizeof(*f->pnext));
	f->phead = calloc(ph, sizeof(*f->phead));
	f->bund = calloc(3 * (size_t)f->G, sizeof(*f->bund));
	f->frac = calloc(f->N, sizeof(*f->frac));
	f->bsize = calloc(f->G, sizeof(*f->bsize));
	f->val = calloc(f->N, sizeof(*f->val));
	f->ex = calloc(f->N, sizeof(*f->ex));
	f->order = calloc(f->N, sizeof(*f->order));
	f->grp = calloc(f->N, sizeof(*f->grp));
	f->hhead = calloc(h, sizeof(*f->hhead));
	f->hnext = calloc(f->N, sizeof(*f->hnext));
	bool ok = f->pi && f->pj && f->pnext && f->phead && f->bund && f->frac && f->bsize && f->val && f->ex &&
		  f->order && f->grp && f->hhead && f->hnext;
	return ok ? 0 : MP_ENOMEM;
}

/* The replicas of counts r as scaled integers (pl_x_scale_counts), the
 * unit of whole expert loads, the order and the hashes; 1 when the mean
 * is not a whole number of scaled units or a replica exceeds it (no
 * exact plan with these counts), 0, or MP_ENOMEM. */
static int fill_init(struct fill *f, const struct pl_prob *prob, const uint32_t *r)
{
	int rc = fill_alloc(f, prob);
	pl_u128 *item = rc == 0 ? calloc(prob->E, sizeof(*item)) : NULL;
	if (!item) {
		return MP_ENOMEM;
	}
	if (!pl_x_scale_counts(prob, r, item, &f->t)) {
		free(item);
		return 1;
	}
	uint32_t n = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		/* replicas carrying a whole number of these are "whole" */
		f->unit = pl_x_gcd(f->unit, item[e] * r[e]);
		for (uint32_t k = 0; k < r[e] && n < f->N; k++) {
			f->val[n] = item[e];
			f->ex[n] = e;
			f->grp[n++] = UINT32_MAX;
		}
	}
	free(item);
	if (f->unit == 0 || f->t % f->unit != 0) {
		f->unit = 0; /* fractional GPU sums: no bundles */
	}
	for (uint32_t i = 0; i < n; i++) {
		f->frac[i] = f->unit > 1 && f->val[i] % f->unit != 0;
	}
	f->rng = 0x6d6f65706c616eull ^ f->N;
	sort_order(f);
	if (n != f->N || f->val[f->order[0]] > f->t || log10_expected(f) < FILL_MIN_LOG10) {
		return 1;
	}
	hash_build(f);
	pairs_build(f);
	return 0;
}

static bool divides(double w, uint32_t r)
{
	return r == 1 || fmod(w, (double)r) == 0;
}

/* The expert whose count may move by dir (+1, -1) keeping it a divisor of
 * its load and its replica load at most the mean: up, the largest replica
 * load first; down, the smallest after the move; UINT32_MAX when none. */
static uint32_t count_step(const struct pl_prob *prob, const uint32_t *r, int dir)
{
	uint32_t pick = UINT32_MAX;
	double pick_v = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		uint32_t nr = dir > 0 ? r[e] + 1 : r[e] - 1;
		if (nr < 1 || nr > prob->G || !divides(prob->w[e], r[e]) || !divides(prob->w[e], nr) ||
		    prob->w[e] / nr > prob->mean) {
			continue;
		}
		double v = dir > 0 ? prob->w[e] / r[e] : -prob->w[e] / nr;
		if (pick == UINT32_MAX || v > pick_v) {
			pick = e;
			pick_v = v;
		}
	}
	return pick;
}

/* Counts out[E] summing to N near r whose replica loads are whole tokens
 * where a divisor allows it (a divisor of w_e up to G with w_e / r_e at
 * most the mean, nearest to r_e): fewer fractional replicas to bundle.
 * False when the total cannot be brought back to N or nothing changed. */
static bool fill_counts(const struct pl_prob *prob, const uint32_t *r, uint32_t *out)
{
	uint64_t sum = 0;
	bool changed = false;
	for (uint32_t e = 0; e < prob->E; e++) {
		out[e] = r[e];
		for (uint32_t d = 0; !divides(prob->w[e], r[e]) && d < prob->G; d++) {
			uint32_t lo = r[e] > d + 1 ? r[e] - d - 1 : 0;
			uint32_t hi = r[e] + d + 1;
			if (lo >= 1 && divides(prob->w[e], lo) && prob->w[e] / lo <= prob->mean) {
				out[e] = lo;
				break;
			}
			if (hi <= prob->G && divides(prob->w[e], hi)) {
				out[e] = hi;
				break;
			}
		}
		changed = changed || out[e] != r[e];
		sum += out[e];
	}
	while (sum != prob->N) {
		int dir = sum < prob->N ? 1 : -1;
		uint32_t e = count_step(prob, out, dir);
		if (e == UINT32_MAX) {
			return false;
		}
		out[e] = dir > 0 ? out[e] + 1 : out[e] - 1;
		sum = dir > 0 ? sum + 1 : sum - 1;
	}
	return changed;
}

/* One search with counts r within max_work; on success the plan is in
 * cand. */
static int fill_run(const struct pl_prob *prob, const uint32_t *r, uint64_t max_work,
		    struct pl_sol *cand, bool *found)
{
	struct fill f;
	int rc = fill_init(&f, prob, r);
	if (rc == 0) {
		f.max_work = max_work;
		uint32_t tail = FILL_TAIL_MAX / f.S < f.G ? FILL_TAIL_MAX / f.S : f.G;
		/* the bundling search is complete: when it fails once, the
		 * fractional replicas cannot be grouped into whole units and
		 * no try can succeed */
		f.nb = 0;
		bool bundles = bundle_from(&f, 0, f.G - tail);
		for (uint32_t i = 0; i < f.N; i++) {
			f.grp[i] = UINT32_MAX;
		}
		while (bundles && f.work < f.max_work && !*found) {
			*found = fill_try(&f, tail);
		}
	}
	uint32_t *at = *found ? calloc(f.G, sizeof(*at)) : NULL;
	if (*found && !at) {
		rc = MP_ENOMEM;
		*found = false;
	}
	for (uint32_t i = 0; *found && i < f.N; i++) {
		uint32_t g = f.grp[i];
		cand->slot[g * f.S + at[g]++] = f.ex[i];
	}
	free(at);
	fill_free(&f);
	return rc < 0 ? rc : 0;
}

int pl_fill_exact(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work, bool *found)
{
	*found = false;
	if (prob->S < 2 || prob->S > FILL_MAX_S || prob->G < 3 || prob->N > FILL_MAX_N ||
	    !(prob->sum > 0)) {
		return 0;
	}
	struct pl_sol cand;
	uint32_t *r = malloc(sizeof(*r) * prob->E);
	if (!r || pl_sol_alloc(&cand, prob) != 0) {
		free(r);
		return MP_ENOMEM;
	}
	/* half the work on counts with fewer fractional replicas, half on the
	 * plan's own, when they differ */
	bool other = fill_counts(prob, best->r, r);
	int rc = 0;
	if (other) {
		rc = fill_run(prob, r, max_work / 2, &cand, found);
	}
	if (rc == 0 && !*found) {
		rc = fill_run(prob, best->r, other ? max_work - max_work / 2 : max_work, &cand, found);
	}
	if (rc == 0 && *found) {
		*found = pl_x_accept(prob, best, &cand) && pl_x_balanced(prob, best);
	}
	free(r);
	pl_sol_free(&cand);
	return rc;
}

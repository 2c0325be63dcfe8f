/* Placement: a search for layers with few slots per GPU (S = 2, 3, 4;
 * issue 25), where DeepSeek-V3-style wide EP decodes (EP144 x 2, EP72 x 4).
 *
 * Fixed replica counts r. Each expert e has r_e items of size w_e / r_e
 * (even split); sorted, a_1 >= a_2 >= ... >= a_N (N = G S), ties by expert
 * id, so that one expert's items are consecutive.
 *
 * S = 2 (pairing). Pairing a_k with a_{N+1-k} (largest with smallest)
 * minimises the largest pair sum when the duplicate rule is ignored, and
 *     LB2(r) = max_k (a_k + a_{N+1-k}),  k = 1..G
 * is a lower bound on every plan with counts r. Argument: take k; the k
 * items a_1..a_k are each >= a_k. If two of them share a GPU it carries
 * >= 2 a_k >= a_k + a_{N+1-k}. Otherwise they sit on k distinct GPUs,
 * which have k other slots. The N + 1 - k items a_1..a_{N+1-k} (each >=
 * a_{N+1-k}) minus the k on those GPUs leave N + 1 - 2k, more than the
 * N - 2k slots of the other G - k GPUs, so one of them is the partner of
 * some a_i, i <= k: that GPU carries >= a_k + a_{N+1-k}. The pairing
 * achieves LB2(r), so it is the optimum for r when no pair holds one
 * expert twice. A pair (x, x) arises only where one expert's run of items
 * straddles the middle (positions G and G + 1); such pairs are broken by
 * the cheapest exchange (pl_repair_dups), after which the plan may exceed
 * LB2(r): it is then not claimed optimal for r. The test (test-fewslot.c)
 * pins LB2 and the pairing's optimum against an exhaustive enumeration
 * of pairings.
 *
 * S = 3: the G largest items one per GPU (a GPU holding two of the top
 * G + 1 items carries at least a_G + a_{G+1} + a_N, the cardinality bound of
 * bound.c), the other 2G items paired largest with smallest, and the
 * pairs, lightest first, given to the GPUs with the largest first item.
 * S = 4: all items paired largest with smallest, then the 2G pairs paired
 * the same way. For S = 3 and 4 these are constructions, not proofs; the
 * bound for fixed r stays bound.c's (pl_bound_for_r).
 *
 * Replica counts. From the incumbent's counts and from the greedy ones
 * (pl_replicas_greedy), a local search moves one replica from an expert x
 * (r_x >= 2) to an expert y on the busiest GPU or among the largest items,
 * keeping a move when the three busiest GPU loads of the construction
 * (for S = 2 the three largest pair sums, i.e. LB2 first) decrease
 * lexicographically; then kicks of two random moves from the best counts,
 * each followed by the local search, kept when better. Every construction
 * counts one unit of a budget; the random stream is seeded from the
 * layer's shape, so the result depends on the loads and options only.
 * The best counts are packed for real (duplicates repaired), improved by
 * pl_improve, and offered to pl_x_accept: this stage never makes a plan
 * worse and claims nothing about optimality (that stays with the bounds
 * and the exact stages). The pipeline (layer.c) runs the search on S = 2
 * layers beyond the packing MIP only (pl_fs_budget says why).
 */
#include "placement/exact.h"
#include "placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FS_KEY 3u

struct fs {
	const struct pl_prob *prob;
	uint32_t *r;     /* [E] counts being searched */
	uint32_t *ord;   /* [E] experts by w / r descending, ties by id */
	double *s;       /* [E] w / r */
	uint32_t *items; /* [N] expert of each item, sorted */
	uint32_t *slot;  /* [N] the construction */
	double *load;    /* [G] */
	double *ps;      /* [2G] pair sums */
	uint32_t *pidx;  /* [2G] pair order */
	uint64_t used;   /* constructions done */
	uint64_t budget;
	uint64_t rng;
};

static bool before(const struct fs *f, uint32_t a, uint32_t b)
{
	return f->s[a] > f->s[b] || (f->s[a] == f->s[b] && a < b);
}

/* Insertion sort of ord (nearly sorted after a move: O(E)). */
static void fs_resort(struct fs *f)
{
	uint32_t E = f->prob->E;
	for (uint32_t i = 1; i < E; i++) {
		uint32_t x = f->ord[i];
		uint32_t j = i;
		while (j > 0 && before(f, x, f->ord[j - 1])) {
			f->ord[j] = f->ord[j - 1];
			j--;
		}
		f->ord[j] = x;
	}
}

static void fs_set_r(struct fs *f, const uint32_t *r)
{
	const struct pl_prob *prob = f->prob;
	memcpy(f->r, r, sizeof(*r) * prob->E);
	for (uint32_t e = 0; e < prob->E; e++) {
		f->s[e] = prob->w[e] / r[e];
		f->ord[e] = e;
	}
	fs_resort(f);
}

static void fs_move(struct fs *f, uint32_t x, uint32_t y)
{
	f->r[x]--;
	f->r[y]++;
	f->s[x] = f->prob->w[x] / f->r[x];
	f->s[y] = f->prob->w[y] / f->r[y];
	fs_resort(f);
}

/* Pair sums ps[i] of items (a[i], a[n-1-i]) of the n items from a. */
static void pair_up(const struct fs *f, const uint32_t *a, uint32_t n, double *ps)
{
	for (uint32_t i = 0; i < n / 2; i++) {
		ps[i] = f->s[a[i]] + f->s[a[n - 1 - i]]; /* NOLINT(clang-analyzer-core.*): items[] holds sum r = N entries (fs_layout) */
	}
}

/* The construction of the top comment for the current counts into slot
 * and load. */
static void fs_layout(struct fs *f)
{
	const struct pl_prob *prob = f->prob;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t N = prob->N;
	uint32_t n = 0;
	for (uint32_t i = 0; i < prob->E; i++) {
		uint32_t e = f->ord[i];
		for (uint32_t k = 0; k < f->r[e]; k++) {
			f->items[n++] = e;
		}
	}
	const uint32_t *a = f->items;
	if (S == 2) {
		for (uint32_t k = 0; k < G; k++) {
			f->slot[2 * k] = a[k]; /* NOLINT(clang-analyzer-core.*): items[] holds sum r = N entries (fs_layout) */
			f->slot[2 * k + 1] = a[N - 1 - k];
		}
	} else if (S == 3) {
		pair_up(f, a + G, 2 * G, f->ps);
		for (uint32_t i = 0; i < G; i++) {
			f->pidx[i] = i;
		}
		pl_sort_idx(f->pidx, G, f->ps, true);
		for (uint32_t g = 0; g < G; g++) {
			uint32_t i = f->pidx[g];
			f->slot[3 * g] = a[g]; /* NOLINT(clang-analyzer-core.*): items[] holds sum r = N entries (fs_layout) */
			f->slot[3 * g + 1] = a[G + i];
			f->slot[3 * g + 2] = a[N - 1 - i];
		}
	} else {
		pair_up(f, a, N, f->ps);
		for (uint32_t i = 0; i < 2 * G; i++) {
			f->pidx[i] = i;
		}
		pl_sort_idx(f->pidx, 2 * G, f->ps, false);
		for (uint32_t g = 0; g < G; g++) {
			uint32_t p = f->pidx[g];
			uint32_t q = f->pidx[2 * G - 1 - g];
			f->slot[4 * g] = a[p];
			f->slot[4 * g + 1] = a[N - 1 - p];
			f->slot[4 * g + 2] = a[q];
			f->slot[4 * g + 3] = a[N - 1 - q];
		}
	}
	for (uint32_t g = 0; g < G; g++) {
		double l = 0;
		for (uint32_t k = 0; k < S; k++) {
			l += f->s[f->slot[g * S + k]];
		}
		f->load[g] = l;
	}
}

/* The FS_KEY largest GPU loads of the construction, descending (the
 * search's objective); counts one unit. */
static void fs_eval(struct fs *f, double *key)
{
	fs_layout(f);
	f->used++;
	for (uint32_t i = 0; i < FS_KEY; i++) {
		key[i] = -(double)INFINITY;
	}
	for (uint32_t g = 0; g < f->prob->G; g++) {
		double v = f->load[g];
		for (uint32_t i = 0; i < FS_KEY; i++) {
			if (v > key[i]) {
				for (uint32_t j = FS_KEY - 1; j > i; j--) {
					key[j] = key[j - 1];
				}
				key[i] = v;
				break;
			}
		}
	}
}

/* a below b lexicographically by more than eps. */
static bool key_less(const double *a, const double *b, double eps)
{
	for (uint32_t i = 0; i < FS_KEY; i++) {
		if (a[i] < b[i] - eps) {
			return true;
		}
		if (a[i] > b[i] + eps) {
			return false;
		}
	}
	return false;
}

/* The experts a move may give a replica to: those on the busiest GPU of
 * the current construction, then the largest items. Returns how many. */
static uint32_t targets(struct fs *f, uint32_t *y, uint32_t cap)
{
	const struct pl_prob *prob = f->prob;
	uint32_t gmax = 0;
	for (uint32_t g = 1; g < prob->G; g++) {
		if (f->load[g] > f->load[gmax]) {
			gmax = g;
		}
	}
	uint32_t n = 0;
	for (uint32_t k = 0; k < prob->S && n < cap; k++) {
		y[n++] = f->slot[gmax * prob->S + k];
	}
	for (uint32_t i = 0; i < prob->E && n < cap; i++) {
		uint32_t e = f->ord[i];
		bool seen = false;
		for (uint32_t j = 0; j < n; j++) {
			seen = seen || y[j] == e;
		}
		if (!seen) {
			y[n++] = e;
		}
	}
	return n;
}

#define FS_TARGETS 12u

/* First-improvement local search over single replica moves from the
 * current counts; key holds their value on entry and exit. */
static void fs_local(struct fs *f, double *key)
{
	const struct pl_prob *prob = f->prob;
	uint32_t y[FS_TARGETS];
	double k2[FS_KEY];
	bool improved = true;
	while (improved && f->used < f->budget) {
		improved = false;
		fs_layout(f);
		uint32_t ny = targets(f, y, FS_TARGETS);
		for (uint32_t j = 0; j < ny && !improved; j++) {
			if (f->r[y[j]] >= prob->G) {
				continue;
			}
			for (uint32_t x = 0; x < prob->E && f->used < f->budget; x++) {
				if (x == y[j] || f->r[x] < 2) {
					continue;
				}
				fs_move(f, x, y[j]);
				fs_eval(f, k2);
				if (key_less(k2, key, prob->eps)) {
					memcpy(key, k2, sizeof(k2));
					improved = true;
					break;
				}
				fs_move(f, y[j], x);
			}
		}
	}
}

static uint64_t fs_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Two random replica moves (from an expert with r >= 2 to one below G). */
static void fs_kick(struct fs *f)
{
	const struct pl_prob *prob = f->prob;
	for (int m = 0; m < 2; m++) {
		for (int tries = 0; tries < 16; tries++) {
			uint32_t x = (uint32_t)(fs_next(&f->rng) % prob->E);
			uint32_t y = f->ord[fs_next(&f->rng) % (prob->E < 4 * FS_TARGETS ? prob->E : 4 * FS_TARGETS)];
			if (x != y && f->r[x] >= 2 && f->r[y] < prob->G) {
				fs_move(f, x, y);
				break;
			}
		}
	}
}

/* Search from counts r0; the best counts and their key into best_r/best_key
 * when better. */
static void fs_from(struct fs *f, const uint32_t *r0, uint32_t *best_r, double *best_key)
{
	double key[FS_KEY];
	fs_set_r(f, r0);
	fs_eval(f, key);
	fs_local(f, key);
	if (key_less(key, best_key, f->prob->eps)) {
		memcpy(best_key, key, sizeof(key));
		memcpy(best_r, f->r, sizeof(*best_r) * f->prob->E);
	}
}

static void fs_free(struct fs *f)
{
	free(f->r);
	free(f->ord);
	free(f->s);
	free(f->items);
	free(f->slot);
	free(f->load);
	free(f->ps);
	free(f->pidx);
}

static int fs_alloc(struct fs *f, const struct pl_prob *prob)
{
	memset(f, 0, sizeof(*f));
	f->prob = prob;
	f->r = malloc(sizeof(*f->r) * prob->E);
	f->ord = malloc(sizeof(*f->ord) * prob->E);
	f->s = malloc(sizeof(*f->s) * prob->E);
	f->items = malloc(sizeof(*f->items) * prob->N);
	f->slot = malloc(sizeof(*f->slot) * prob->N);
	f->load = malloc(sizeof(*f->load) * prob->G);
	f->ps = malloc(sizeof(*f->ps) * 2 * prob->G);
	f->pidx = malloc(sizeof(*f->pidx) * 2 * prob->G);
	if (!f->r || !f->ord || !f->s || !f->items || !f->slot || !f->load || !f->ps || !f->pidx) {
		fs_free(f);
		return MP_ENOMEM;
	}
	return 0;
}

double pl_fs_pair_bound(const struct pl_prob *prob, const uint32_t *r)
{
	struct fs f;
	if (prob->S != 2 || fs_alloc(&f, prob) != 0) {
		return 0;
	}
	fs_set_r(&f, r);
	fs_layout(&f);
	double mx = 0;
	for (uint32_t g = 0; g < prob->G; g++) {
		mx = f.load[g] > mx ? f.load[g] : mx;
	}
	fs_free(&f);
	return mx;
}

bool pl_fs_pack(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol)
{
	struct fs f;
	if (prob->S < 2 || prob->S > 4 || fs_alloc(&f, prob) != 0) {
		return false;
	}
	fs_set_r(&f, r);
	fs_layout(&f);
	memcpy(sol->slot, f.slot, sizeof(*sol->slot) * prob->N);
	fs_free(&f);
	pl_sol_eval(sol, prob);
	if (!pl_sol_no_dup(sol, prob) && !pl_repair_dups(prob, sol)) {
		return false;
	}
	pl_sol_eval(sol, prob);
	return pl_sol_no_dup(sol, prob);
}

uint64_t pl_fs_budget(const struct pl_prob *prob, double effort)
{
	/* S = 2 only: with S = 3 and 4 the constructions, measured in the
	 * pipeline, made some layers worse (switch128 64 x 3: layer 2 247,796
	 * against 247,008 without, through the later stages' different
	 * trajectory) and four times slower, and EP72 x 4 no better; they
	 * stay available (pl_fs_pack) and tested, not called. */
	if (prob->S != 2 || prob->N <= prob->E) {
		return 0;
	}
	/* constructions: each costs O(N + E); 3e5 / E of them is about
	 * 5 ms per layer of 256 experts on the development machine */
	double v = floor(PL_FS_WORK / prob->E * effort);
	return v < 1 ? 1 : v > 1e12 ? (uint64_t)1e12 : (uint64_t)v;
}

int pl_fs_search(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work,
		 uint64_t budget, double deadline)
{
	if (budget == 0) {
		return 0;
	}
	struct fs f;
	if (fs_alloc(&f, prob) != 0) {
		return MP_ENOMEM;
	}
	f.budget = budget;
	f.rng = 0x6665772d736c6f74ull ^ ((uint64_t)prob->N << 32) ^ prob->E;
	uint32_t *best_r = malloc(sizeof(*best_r) * prob->E);
	uint32_t *r0 = malloc(sizeof(*r0) * prob->E);
	struct pl_sol cand = { 0 };
	int rc = 0;
	if (!best_r || !r0 || pl_sol_alloc(&cand, prob) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	double best_key[FS_KEY];
	for (uint32_t i = 0; i < FS_KEY; i++) {
		best_key[i] = (double)INFINITY;
	}
	fs_from(&f, best->r, best_r, best_key);
	pl_replicas_greedy(prob, r0);
	fs_from(&f, r0, best_r, best_key);
	while (f.used < f.budget && !pl_timed_out(work, deadline)) {
		double key[FS_KEY];
		fs_set_r(&f, best_r);
		fs_kick(&f);
		fs_eval(&f, key);
		fs_local(&f, key);
		if (key_less(key, best_key, prob->eps)) {
			memcpy(best_key, key, sizeof(key));
			memcpy(best_r, f.r, sizeof(*best_r) * prob->E);
		}
	}
	if (pl_fs_pack(prob, best_r, &cand)) {
		pl_improve(prob, &cand, work, deadline);
		pl_x_accept(prob, best, &cand);
	}
out:
	pl_sol_free(&cand);
	free(best_r);
	free(r0);
	fs_free(&f);
	return rc;
}

/* Placement: an exact branch and bound over replica counts and GPU
 * assignments (issue 17).
 *
 * Arithmetic: every load w_e = M_e 2^K exactly (M_e an integer, K the
 * smallest binary exponent of the loads), and with D = lcm(1 .. rmax),
 * rmax = min(G, N - E + 1) the most replicas an expert can have, every
 * replica load w_e / r_e is the integer M_e D / r_e in units of 2^K / D.
 * Loads are unsigned 128-bit integers; a layer whose total would not fit
 * in 124 bits is skipped. A plan strictly better than the incumbent UB has
 * a busiest GPU of at most UB - 1 units, which every test below uses.
 *
 * Search: experts heaviest first (ties by id); for each, its replica count
 * r (nearest to its share of the slots first), then which r GPUs get a
 * replica, chosen as counts per class of interchangeable GPUs (equal load
 * and equal slots used: identical GPUs make the plan's value independent of
 * which of them is taken). Experts of equal load get non-increasing counts
 * (relabelling them maps any plan to one that does).
 * Pruning at a node, all in exact integers:
 *   - every GPU stays at most UB - 1 (tested when a replica is placed);
 *   - capacity: the load still to place is at most the sum over GPUs with
 *     a free slot of (UB - 1 - load);
 *   - slots: a GPU with f free slots needs f distinct experts among those
 *     left, and gets at least the f smallest of their replicas w / rmax;
 *   - the replica counts still possible must fill the free slots exactly;
 *   - a memo of failed states: the depth plus the sorted multiset of
 *     (load, slots used) of the GPUs. A state whose subtree was searched
 *     has no completion below the UB of that time, and UB only decreases,
 *     so meeting it again prunes (full keys are stored and compared: no
 *     hash collision can prune wrongly).
 * Every completed plan goes through pl_x_accept (exact) and lowers UB. The
 * budget counts nodes: the result depends only on the input.
 */
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* Largest GPU count the search handles (its state is copied per depth). */
#define BB_MAX_G 128u
/* Memory for the memo of failed states. */
#define BB_MEMO_BYTES (24u << 20)

struct memo {
	size_t key_size;
	size_t cap;      /* entries that fit in the arena */
	size_t count;
	unsigned char *keys; /* [cap][key_size] */
	uint32_t *table;     /* open addressing, tsize slots, entry index + 1 (0 = empty) */
	uint64_t *hashes;    /* [cap] */
	size_t tsize;
};

struct bb {
	const struct pl_prob *prob;
	uint32_t E, G, S, N, rmax;
	uint32_t *ord;   /* [E] experts by load, heaviest first */
	u128 *wd;        /* [E] M_e D, indexed by depth (ord order) */
	u128 *rest;      /* [E + 1] load of depths d.. */
	u128 *tail;      /* [S + 1] sum of the k smallest wd / rmax */
	u128 ub;         /* incumbent's busiest GPU */
	u128 *load;      /* [E + 1][G] */
	uint32_t *used;  /* [E + 1][G] */
	uint32_t *sorted; /* [E + 1][G] GPU ids by (load, used) */
	uint32_t *rch;   /* [E] replica count chosen at each depth */
	uint32_t *chosen; /* [E][G] GPUs chosen at each depth */
	unsigned char *key; /* [key_size] scratch */
	struct memo memo;
	struct pl_sol *best;
	struct pl_sol cand;
	uint64_t nodes;
	uint64_t max_nodes;
	bool aborted;
	bool nomem;
};

/* --- scaling --- */

static bool mul_ok(u128 a, u128 b, u128 *out)
{
	if (a != 0 && b > ((u128)-1 >> 4) / a) {
		return false;
	}
	*out = a * b;
	return true;
}

/* wd[e] = M_e D for expert e (by id), *rmax the replica-count limit
 * (pl_x_scale: D <= 2^100, loads within 60 binary orders); false when it
 * does not fit. */
static bool scale_loads(const struct pl_prob *prob, uint32_t *rmax, u128 *wd)
{
	u128 d = 0;
	int k = 0;
	if (!pl_x_scale(prob, (u128)1 << 100, 60, rmax, &d, wd, &k)) {
		return false;
	}
	u128 total = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		if (!mul_ok(wd[e], d, &wd[e])) {
			return false;
		}
		total += wd[e];
		if (total > ((u128)1 << 124)) {
			return false;
		}
	}
	return true;
}

/* --- memo of failed states --- */

static uint64_t hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ p[i]) * 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static int memo_init(struct memo *m, size_t key_size)
{
	memset(m, 0, sizeof(*m));
	m->key_size = key_size;
	m->cap = BB_MEMO_BYTES / (key_size + 8 + 8);
	if (m->cap < 16) {
		m->cap = 16;
	}
	m->tsize = 1;
	while (m->tsize < 2 * m->cap) {
		m->tsize <<= 1;
	}
	/* the arena grows on demand; the table is sized for the cap */
	m->table = calloc(m->tsize, sizeof(*m->table));
	return m->table ? 0 : MP_ENOMEM;
}

static void memo_free(struct memo *m)
{
	free(m->keys);
	free(m->table);
	free(m->hashes);
	memset(m, 0, sizeof(*m));
}

static bool memo_find(const struct memo *m, const unsigned char *key, uint64_t h)
{
	for (size_t i = h & (m->tsize - 1);; i = (i + 1) & (m->tsize - 1)) {
		uint32_t v = m->table[i];
		if (v == 0) {
			return false;
		}
		if (m->hashes[v - 1] == h
		    && memcmp(m->keys + (size_t)(v - 1) * m->key_size, key, m->key_size) == 0) {
			return true;
		}
	}
}

static void memo_add(struct memo *m, const unsigned char *key, uint64_t h)
{
	if (m->count >= m->cap) {
		return;
	}
	if ((m->count & (m->count - 1)) == 0) { /* grow the arena at powers of two */
		size_t n = m->count ? 2 * m->count : 64;
		n = n > m->cap ? m->cap : n;
		unsigned char *k = realloc(m->keys, n * m->key_size);
		if (!k) {
			return;
		}
		m->keys = k;
		uint64_t *hh = realloc(m->hashes, n * sizeof(*hh));
		if (!hh) {
			return;
		}
		m->hashes = hh;
	}
	memcpy(m->keys + m->count * m->key_size, key, m->key_size);
	m->hashes[m->count] = h;
	size_t i = h & (m->tsize - 1);
	while (m->table[i] != 0) {
		i = (i + 1) & (m->tsize - 1);
	}
	m->table[i] = (uint32_t)(++m->count);
}

/* --- the search --- */

static void sort_gpus(struct bb *b, uint32_t d)
{
	const u128 *load = b->load + (size_t)d * b->G;
	const uint32_t *used = b->used + (size_t)d * b->G;
	uint32_t *s = b->sorted + (size_t)d * b->G;
	for (uint32_t g = 0; g < b->G; g++) {
		uint32_t j = g;
		while (j > 0 && (load[s[j - 1]] > load[g]
				 || (load[s[j - 1]] == load[g] && used[s[j - 1]] > used[g]))) {
			s[j] = s[j - 1];
			j--;
		}
		s[j] = g;
	}
}

/* The count cap of depth d (equal loads: non-increasing counts), part of
 * the state: completions depend on it. */
static uint32_t count_cap(const struct bb *b, uint32_t d)
{
	return d > 0 && b->wd[d] == b->wd[d - 1] ? b->rch[d - 1] : UINT32_MAX;
}

static size_t make_key(struct bb *b, uint32_t d)
{
	uint32_t cap = count_cap(b, d);
	const u128 *load = b->load + (size_t)d * b->G;
	const uint32_t *used = b->used + (size_t)d * b->G;
	const uint32_t *s = b->sorted + (size_t)d * b->G;
	unsigned char *p = b->key;
	memcpy(p, &d, sizeof(d));
	p += sizeof(d);
	memcpy(p, &cap, sizeof(cap));
	p += sizeof(cap);
	for (uint32_t i = 0; i < b->G; i++) {
		memcpy(p, &load[s[i]], sizeof(u128));
		p += sizeof(u128);
		memcpy(p, &used[s[i]], sizeof(uint32_t));
		p += sizeof(uint32_t);
	}
	return (size_t)(p - b->key);
}

/* False when no completion of the state at depth d can stay below ub. */
static bool node_feasible(const struct bb *b, uint32_t d)
{
	const u128 *load = b->load + (size_t)d * b->G;
	const uint32_t *used = b->used + (size_t)d * b->G;
	u128 lim = b->ub - 1;
	uint32_t rem_e = b->E - d;
	u128 cap = 0;
	uint64_t free_slots = 0;
	for (uint32_t g = 0; g < b->G; g++) {
		uint32_t f = b->S - used[g];
		if (load[g] > lim) {
			return false; /* ub dropped below this state */
		}
		if (f == 0) {
			continue;
		}
		if (f > rem_e || load[g] + b->tail[f] > lim) {
			return false;
		}
		cap += lim - load[g];
		free_slots += f;
	}
	if (b->rest[d] > cap) {
		return false;
	}
	return free_slots >= rem_e && free_slots <= (uint64_t)rem_e * b->rmax;
}

static void record_plan(struct bb *b)
{
	uint32_t cnt[BB_MAX_G];
	memset(cnt, 0, sizeof(cnt));
	for (uint32_t d = 0; d < b->E; d++) {
		for (uint32_t i = 0; i < b->rch[d]; i++) {
			uint32_t g = b->chosen[(size_t)d * b->G + i];
			b->cand.slot[(size_t)g * b->S + cnt[g]++] = b->ord[d];
		}
	}
	pl_x_accept(b->prob, b->best, &b->cand);
	const u128 *load = b->load + (size_t)b->E * b->G;
	u128 mx = 0;
	for (uint32_t g = 0; g < b->G; g++) {
		mx = load[g] > mx ? load[g] : mx;
	}
	b->ub = mx;
}

static void dfs(struct bb *b, uint32_t d);

/* Place the remaining `need` replicas of depth d (item size it) on GPUs
 * from position i of the sorted list, as counts per class. */
static void pick(struct bb *b, uint32_t d, u128 it, uint32_t i, uint32_t need, uint32_t k)
{
	if (b->aborted) {
		return;
	}
	if (need == 0) {
		dfs(b, d + 1);
		return;
	}
	const uint32_t *s = b->sorted + (size_t)d * b->G;
	const u128 *load = b->load + (size_t)d * b->G;
	const uint32_t *used = b->used + (size_t)d * b->G;
	while (i < b->G && used[s[i]] == b->S) {
		i++;
	}
	if (i >= b->G || load[s[i]] + it > b->ub - 1) {
		return; /* sorted by load: no later GPU fits either */
	}
	/* the class: consecutive GPUs with equal (load, used), skipping full ones */
	uint32_t members[BB_MAX_G];
	uint32_t c = 0;
	uint32_t j = i;
	for (; j < b->G; j++) {
		uint32_t g = s[j];
		if (used[g] == b->S) {
			continue;
		}
		if (load[g] != load[s[i]] || used[g] != used[s[i]]) {
			break;
		}
		members[c++] = g;
	}
	uint32_t take = c < need ? c : need;
	u128 *nload = b->load + (size_t)(d + 1) * b->G;
	uint32_t *nused = b->used + (size_t)(d + 1) * b->G;
	for (uint32_t t = take + 1; t-- > 0;) {
		for (uint32_t q = 0; q < t; q++) {
			/* members[0..c) are set: GPU s[i] is always a member */
			// cppcheck-suppress uninitvar
			uint32_t g = members[q];
			nload[g] += it;
			nused[g]++;
			b->chosen[(size_t)d * b->G + k + q] = g;
		}
		pick(b, d, it, j, need - t, k + t);
		for (uint32_t q = 0; q < t; q++) {
			nload[members[q]] -= it;
			nused[members[q]]--;
		}
		if (b->aborted) {
			return;
		}
	}
}

static void dfs(struct bb *b, uint32_t d)
{
	if (b->aborted) {
		return;
	}
	if (++b->nodes > b->max_nodes) {
		b->aborted = true;
		return;
	}
	if (d == b->E) {
		record_plan(b);
		return;
	}
	if (!node_feasible(b, d)) {
		return;
	}
	sort_gpus(b, d);
	size_t ks = make_key(b, d);
	uint64_t h = hash_bytes(b->key, ks);
	if (memo_find(&b->memo, b->key, h)) {
		return;
	}
	const u128 *load = b->load + (size_t)d * b->G;
	const uint32_t *used = b->used + (size_t)d * b->G;
	uint32_t rem_e = b->E - d;
	uint64_t free_slots = 0;
	uint32_t free_gpus = 0;
	u128 minload = (u128)-1;
	for (uint32_t g = 0; g < b->G; g++) {
		if (used[g] < b->S) {
			free_slots += b->S - used[g];
			free_gpus++;
			minload = load[g] < minload ? load[g] : minload;
		}
	}
	/* the experts after this one take between rem_e - 1 and (rem_e - 1) rmax slots */
	uint64_t later_max = (uint64_t)(rem_e - 1) * b->rmax;
	uint32_t rlo = free_slots > later_max ? (uint32_t)(free_slots - later_max) : 1;
	rlo = rlo ? rlo : 1; /* a count of 0 replicas is never tried */
	uint64_t hi = free_slots - (rem_e - 1);
	hi = hi < b->rmax ? hi : b->rmax;
	hi = hi < free_gpus ? hi : free_gpus;
	if (count_cap(b, d) < hi) {
		hi = count_cap(b, d); /* equal loads: non-increasing counts */
	}
	while (rlo <= hi && minload + b->wd[d] / rlo > b->ub - 1) {
		rlo++;
	}
	if (rlo > hi) {
		goto failed;
	}
	/* the count nearest this expert's share of the slots first */
	long double share = (long double)b->wd[d] * b->N / (long double)b->rest[0];
	uint32_t pref = share < rlo ? rlo : share > hi ? (uint32_t)hi : (uint32_t)(share + 0.5L);
	pref = pref < rlo ? rlo : pref > hi ? (uint32_t)hi : pref;
	for (uint32_t step = 0; step <= 2 * (hi - rlo) + 1; step++) {
		uint32_t r;
		if (step % 2 == 0) {
			if (pref + step / 2 > hi) {
				continue;
			}
			r = pref + step / 2;
		} else {
			if (pref < rlo + step / 2 + 1) {
				continue;
			}
			r = pref - step / 2 - 1;
		}
		u128 it = b->wd[d] / r;
		if (minload + it > b->ub - 1) {
			continue; /* ub may have dropped */
		}
		memcpy(b->load + (size_t)(d + 1) * b->G, load, sizeof(u128) * b->G);
		memcpy(b->used + (size_t)(d + 1) * b->G, used, sizeof(uint32_t) * b->G);
		b->rch[d] = r;
		pick(b, d, it, 0, r, 0);
		if (b->aborted) {
			return;
		}
	}
failed:
	/* recompute the key: the sorted list of depth d is unchanged, but the
	 * key scratch was overwritten by deeper nodes */
	ks = make_key(b, d);
	memo_add(&b->memo, b->key, hash_bytes(b->key, ks));
}

static u128 plan_max(const struct bb *b, const u128 *wd_by_id, const struct pl_sol *sol)
{
	u128 mx = 0;
	for (uint32_t g = 0; g < b->G; g++) {
		u128 l = 0;
		for (uint32_t s = 0; s < b->S; s++) {
			uint32_t e = sol->slot[(size_t)g * b->S + s];
			l += wd_by_id[e] / sol->r[e];
		}
		mx = l > mx ? l : mx;
	}
	return mx;
}

static void bb_free(struct bb *b)
{
	free(b->ord);
	free(b->wd);
	free(b->rest);
	free(b->tail);
	free(b->load);
	free(b->used);
	free(b->sorted);
	free(b->rch);
	free(b->chosen);
	free(b->key);
	memo_free(&b->memo);
	pl_sol_free(&b->cand);
}

static int bb_alloc(struct bb *b)
{
	size_t E = b->E;
	size_t G = b->G;
	b->ord = calloc(E, sizeof(*b->ord));
	b->wd = calloc(E, sizeof(*b->wd));
	b->rest = calloc(E + 1, sizeof(*b->rest));
	b->tail = calloc(b->S + 1, sizeof(*b->tail));
	b->load = calloc((E + 1) * G, sizeof(*b->load));
	b->used = calloc((E + 1) * G, sizeof(*b->used));
	b->sorted = calloc((E + 1) * G, sizeof(*b->sorted));
	b->rch = calloc(E, sizeof(*b->rch));
	b->chosen = calloc(E * G, sizeof(*b->chosen));
	size_t key_size = 2 * sizeof(uint32_t) + G * (sizeof(u128) + sizeof(uint32_t));
	b->key = calloc(key_size, 1);
	if (!b->ord || !b->wd || !b->rest || !b->tail || !b->load || !b->used || !b->sorted
	    || !b->rch || !b->chosen || !b->key || memo_init(&b->memo, key_size) != 0
	    || pl_sol_alloc(&b->cand, b->prob) != 0) {
		return MP_ENOMEM;
	}
	return 0;
}

enum pl_bb_result pl_bb_solve(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_nodes,
			      uint64_t *nodes_out)
{
	*nodes_out = 0;
	if (prob->G > BB_MAX_G || prob->S > prob->E) {
		return PL_BB_SKIPPED;
	}
	struct bb b = {.prob = prob, .E = prob->E, .G = prob->G, .S = prob->S, .N = prob->N,
		       .best = best, .max_nodes = max_nodes};
	enum pl_bb_result res = PL_BB_NOMEM;
	u128 *wd_id = calloc(prob->E, sizeof(*wd_id));
	if (!wd_id || bb_alloc(&b) != 0) {
		goto out;
	}
	if (!scale_loads(prob, &b.rmax, wd_id)) {
		res = PL_BB_SKIPPED;
		goto out;
	}
	double *key = malloc(sizeof(*key) * prob->E);
	if (!key) {
		goto out;
	}
	for (uint32_t e = 0; e < prob->E; e++) {
		b.ord[e] = e;
		key[e] = prob->w[e];
	}
	pl_sort_desc(b.ord, key, prob->E);
	free(key);
	/* pl_sort_desc orders by the double loads; the integers are the same
	 * values scaled, so the order is the same. */
	for (uint32_t d = 0; d < b.E; d++) {
		b.wd[d] = wd_id[b.ord[d]];
	}
	for (uint32_t d = b.E; d-- > 0;) {
		b.rest[d] = b.rest[d + 1] + b.wd[d];
	}
	for (uint32_t k = 1; k <= b.S; k++) {
		b.tail[k] = b.tail[k - 1] + b.wd[b.E - k] / b.rmax;
	}
	pl_sol_eval(best, prob);
	b.ub = plan_max(&b, wd_id, best);
	if (b.ub == 0) {
		res = PL_BB_PROVEN;
		goto out;
	}
	dfs(&b, 0);
	*nodes_out = b.nodes;
	res = b.aborted ? PL_BB_BUDGET : PL_BB_PROVEN;
out:
	free(wd_id);
	bb_free(&b);
	return res;
}

/* Placement: constructive heuristics and local search (even split).
 *
 * Seeds: (1) greedy replica counts (largest w_e / r_e first, r_e <= G)
 * packed largest-first onto the least-loaded GPU with room that does not
 * already hold the expert (LPT with a cardinality limit); (2) DeepSeek
 * EPLB's global policy, repaired when it put two replicas on one GPU, so
 * that the result is never worse than EPLB's. Each seed is improved by
 * pairwise swaps and replica moves; the best is kept.
 */
#include "placement/internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool gpu_holds(const struct pl_prob *prob, const uint32_t *slot, uint32_t g, uint32_t e)
{
	const uint32_t *s = slot + (size_t)g * prob->S;
	for (uint32_t i = 0; i < prob->S; i++) {
		if (s[i] == e) {
			return true;
		}
	}
	return false;
}

/* Min-heap of GPUs by (load, index), for the LPT packing. */
static bool gpu_before(const double *load, uint32_t a, uint32_t b)
{
	return load[a] < load[b] || (!(load[a] > load[b]) && a < b);
}

static void gheap_down(uint32_t *h, uint32_t n, const double *load, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1;
		uint32_t m = i;
		if (l < n && gpu_before(load, h[l], h[m])) {
			m = l;
		}
		if (l + 1 < n && gpu_before(load, h[l + 1], h[m])) {
			m = l + 1;
		}
		if (m == i) {
			return;
		}
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void gheap_push(uint32_t *h, uint32_t *n, const double *load, uint32_t g)
{
	uint32_t i = (*n)++;
	h[i] = g;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!gpu_before(load, h[i], h[p])) {
			break;
		}
		uint32_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static uint32_t gheap_pop(uint32_t *h, uint32_t *n, const double *load)
{
	uint32_t top = h[0];
	h[0] = h[--(*n)];
	gheap_down(h, *n, load, 0);
	return top;
}

bool pl_pack_lpt(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol,
		 struct pl_work *work)
{
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	bool dup = false;
	for (uint32_t e = 0; e < prob->E; e++) {
		work->key[e] = prob->w[e] / r[e];
	}
	pl_sort_desc(work->order, work->key, prob->E);
	/* GPUs with a free slot, lightest first (ties: lowest index); the
	 * ones that already hold the current expert are set aside while its
	 * replicas are placed (its replicas are placed one after another). */
	uint32_t *heap = work->gorder;
	uint32_t *aside = work->items;
	uint32_t n = 0;
	for (uint32_t g = 0; g < G; g++) {
		work->cnt[g] = 0;
		work->stamp[g] = UINT32_MAX;
		sol->load[g] = 0;
		heap[n++] = g;
	}
	for (uint32_t i = 0; i < prob->E; i++) {
		uint32_t e = work->order[i];
		double size = work->key[e];
		for (uint32_t k = 0; k < r[e]; k++) {
			uint32_t n_aside = 0;
			uint32_t best = UINT32_MAX;
			while (n > 0) {
				uint32_t g = gheap_pop(heap, &n, sol->load);
				if (work->stamp[g] != e) {
					best = g;
					break;
				}
				aside[n_aside++] = g;
			}
			if (best == UINT32_MAX) {
				/* every GPU with room holds e: the lightest takes it
				 * twice, for pl_repair_dups */
				best = aside[0];
				aside[0] = aside[--n_aside];
				dup = true;
			}
			sol->slot[best * S + work->cnt[best]++] = e;
			sol->load[best] += size;
			work->stamp[best] = e;
			for (uint32_t q = 0; q < n_aside; q++) {
				gheap_push(heap, &n, sol->load, aside[q]);
			}
			if (work->cnt[best] < S) {
				gheap_push(heap, &n, sol->load, best);
			}
		}
	}
	memcpy(sol->r, r, sizeof(*r) * prob->E);
	sol->max = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (sol->load[g] > sol->max) {
			sol->max = sol->load[g];
		}
	}
	if (dup) {
		return pl_repair_dups(prob, sol);
	}
	return true;
}

/* Balanced largest differencing (Karmarkar-Karp's differencing for
 * partitions with equal cardinality; Michiels, Korst, Aarts and van Leeuwen
 * 2003, "Performance ratios for the differencing method applied to the
 * balanced number partitioning problem"). Items sorted by size form S rows
 * of G; each row is a partial partition of G one-item groups. Repeatedly
 * the two partial partitions with the largest spread (max - min group sum)
 * are merged, the heaviest group of one joined with the lightest of the
 * other, until one partition of G groups of S items is left. A join that
 * would put an expert twice into a group takes the next lightest partner
 * instead. */
struct bl_part {
	uint32_t *grp;  /* [G] group ids (heads into the item lists) */
	double spread;
	bool alive;
};

static double bl_spread(const struct bl_part *pt, const double *gsum, uint32_t G)
{
	double lo = gsum[pt->grp[0]];
	double hi = lo;
	for (uint32_t i = 1; i < G; i++) {
		double v = gsum[pt->grp[i]];
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	return hi - lo;
}

bool pl_pack_bldm(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol,
		  struct pl_work *work)
{
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t N = prob->N;
	bool ok = false;
	/* group g (0..N-1) starts as item g; lists of items via next[] */
	/* calloc with at least one element: every entry is written before it
	 * is read, but clang's static analyser cannot follow the merges. */
	uint32_t *next = calloc(N ? N : 1, sizeof(*next));
	uint32_t *tail = calloc(N ? N : 1, sizeof(*tail));
	double *gsum = calloc(N ? N : 1, sizeof(*gsum));
	uint32_t *ids = calloc(N ? N : 1, sizeof(*ids));
	double *key = calloc(N ? N : 1, sizeof(*key));
	uint32_t *mark = calloc(prob->E ? prob->E : 1, sizeof(*mark));
	struct bl_part *parts = calloc(S ? S : 1, sizeof(*parts));
	if (!next || !tail || !gsum || !ids || !key || !mark || !parts) {
		goto out;
	}
	for (uint32_t e = 0; e < prob->E; e++) {
		work->key[e] = prob->w[e] / r[e];
		mark[e] = UINT32_MAX;
	}
	pl_sort_desc(work->order, work->key, prob->E);
	uint32_t n = 0;
	for (uint32_t i = 0; i < prob->E; i++) {
		uint32_t e = work->order[i];
		for (uint32_t k = 0; k < r[e] && n < N; k++) {
			work->items[n] = e;
			gsum[n] = work->key[e];
			next[n] = UINT32_MAX;
			tail[n] = n;
			n++;
		}
	}
	for (uint32_t k = 0; k < S; k++) {
		parts[k].grp = ids + (size_t)k * G;
		for (uint32_t i = 0; i < G; i++) {
			parts[k].grp[i] = k * G + i;
		}
		parts[k].spread = bl_spread(&parts[k], gsum, G);
		parts[k].alive = true;
	}
	uint32_t tag = 0;
	for (uint32_t left = S; left > 1; left--) {
		uint32_t a = UINT32_MAX;
		uint32_t b = UINT32_MAX;
		for (uint32_t k = 0; k < S; k++) {
			if (!parts[k].alive) {
				continue;
			}
			if (a == UINT32_MAX || parts[k].spread > parts[a].spread) {
				b = a;
				a = k;
			} else if (b == UINT32_MAX || parts[k].spread > parts[b].spread) {
				b = k;
			}
		}
		uint32_t *ga = parts[a].grp;
		uint32_t *gb = parts[b].grp;
		/* a's groups heaviest first, b's lightest first */
		for (uint32_t i = 0; i < G; i++) {
			key[ga[i]] = gsum[ga[i]];
			key[gb[i]] = gsum[gb[i]];
		}
		pl_sort_idx(ga, G, key, false);
		pl_sort_idx(gb, G, key, true);
		for (uint32_t i = 0; i < G; i++) {
			uint32_t x = ga[i];
			tag++;
			for (uint32_t it = x; it != UINT32_MAX; it = next[it]) {
				mark[work->items[it]] = tag;
			}
			/* first partner from position i on without a shared expert */
			uint32_t j = i;
			for (; j < G; j++) {
				bool clash = false;
				for (uint32_t it = gb[j]; it != UINT32_MAX && !clash; it = next[it]) {
					clash = mark[work->items[it]] == tag;
				}
				if (!clash) {
					break;
				}
			}
			if (j == G) {
				j = i; /* no clean partner: leave the duplicate to the repair */
			}
			uint32_t y = gb[j];
			gb[j] = gb[i];
			gb[i] = y;
			/* join y's list after x's */
			next[tail[x]] = y;
			tail[x] = tail[y];
			gsum[x] += gsum[y];
		}
		parts[b].alive = false;
		parts[a].spread = bl_spread(&parts[a], gsum, G);
	}
	uint32_t last = 0;
	while (!parts[last].alive) {
		last++;
	}
	for (uint32_t g = 0; g < G; g++) {
		uint32_t c = 0;
		for (uint32_t it = parts[last].grp[g]; it != UINT32_MAX; it = next[it]) {
			sol->slot[g * S + c++] = work->items[it];
		}
	}
	memcpy(sol->r, r, sizeof(*r) * prob->E);
	pl_sol_eval(sol, prob);
	ok = pl_sol_no_dup(sol, prob) || pl_repair_dups(prob, sol);
out:
	free(next);
	free(tail);
	free(gsum);
	free(ids);
	free(key);
	free(mark);
	free(parts);
	return ok;
}

void pl_eplb(const struct pl_prob *prob, uint32_t *slot, struct pl_work *work)
{
	uint32_t E = prob->E;
	uint32_t N = prob->N;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	/* replicate_experts: physical expert p < E is logical p; physical
	 * expert p >= E is the logical expert that had the highest load per
	 * replica when it was created (no cap on replicas). */
	uint32_t *phy = work->items;
	uint32_t *cnt = work->order; /* [E] final counts */
	pl_replicas_eplb(prob, cnt, work->list, phy + E);
	for (uint32_t e = 0; e < E; e++) {
		phy[e] = e;
	}
	/* balanced_packing: physical items by weight, heaviest first (stable
	 * by physical id), each to the lightest GPU with room (lowest id on
	 * ties). */
	double *size = work->size;
	for (uint32_t p = 0; p < N; p++) {
		size[p] = prob->w[phy[p]] / cnt[phy[p]];
	}
	uint32_t *order = work->list; /* [N] */
	pl_sort_desc(order, size, N);
	double *load = G ? calloc(G, sizeof(*load)) : NULL;
	if (!load) {
		/* no GPUs (never: callers check) or no memory for loads: fill
		 * the slots in order (still a map) */
		for (uint32_t i = 0; i < N; i++) {
			slot[i] = phy[order[i]];
		}
		return;
	}
	/* GPUs with room in a heap by (load, id): the lightest, lowest id on
	 * ties, as EPLB's scan picks. */
	uint32_t *heap = work->gorder;
	uint32_t n = 0;
	uint32_t *fill = work->cnt;
	for (uint32_t g = 0; g < G; g++) {
		fill[g] = 0;
		heap[n++] = g;
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t p = order[i];
		uint32_t best = gheap_pop(heap, &n, load);
		slot[best * S + fill[best]++] = phy[p];
		load[best] += size[p];
		if (fill[best] < S) {
			gheap_push(heap, &n, load, best);
		}
	}
	free(load);
}

bool pl_repair_dups(const struct pl_prob *prob, struct pl_sol *sol)
{
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	for (uint32_t g = 0; g < G; g++) {
		for (uint32_t i = 0; i < S; i++) {
			uint32_t e = sol->slot[g * S + i];
			bool is_dup = false;
			for (uint32_t j = 0; j < i; j++) {
				if (sol->slot[g * S + j] == e) {
					is_dup = true;
					break;
				}
			}
			if (!is_dup) {
				continue;
			}
			double pe = prob->w[e] / sol->r[e];
			uint32_t best_t = UINT32_MAX;
			double best_v = DBL_MAX;
			for (uint32_t h = 0; h < G; h++) {
				if (h == g || gpu_holds(prob, sol->slot, h, e)) {
					continue;
				}
				for (uint32_t t = 0; t < S; t++) {
					uint32_t f = sol->slot[h * S + t];
					if (gpu_holds(prob, sol->slot, g, f)) {
						continue;
					}
					double pf = prob->w[f] / sol->r[f];
					double lg = sol->load[g] - pe + pf;
					double lh = sol->load[h] - pf + pe;
					double v = lg > lh ? lg : lh;
					if (v < best_v) {
						best_v = v;
						best_t = h * S + t;
					}
				}
			}
			if (best_t == UINT32_MAX) {
				return false;
			}
			uint32_t h = best_t / S;
			uint32_t f = sol->slot[best_t];
			double pf = prob->w[f] / sol->r[f];
			sol->slot[best_t] = e;
			sol->slot[g * S + i] = f;
			sol->load[g] += pf - pe;
			sol->load[h] += pe - pf;
		}
	}
	sol->max = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (sol->load[g] > sol->max) {
			sol->max = sol->load[g];
		}
	}
	return true;
}

/* Best swap between GPU b and any GPU g lighter than b: an item a on b
 * trades places with a lighter item c on g. Accepted when the larger of
 * the two new loads is below b's load (so the sorted load vector only
 * improves). Returns true when a swap was applied. */
static bool swap_improve(const struct pl_prob *prob, struct pl_sol *sol, const double *size,
			 uint32_t b)
{
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	double tol = prob->eps;
	double lb = sol->load[b];
	double best_v = lb - tol;
	uint32_t best_a = UINT32_MAX;
	uint32_t best_c = UINT32_MAX;
	const uint32_t *sb = sol->slot + (size_t)b * S;
	for (uint32_t g = 0; g < G; g++) {
		double lg = sol->load[g];
		if (g == b || lg >= lb - tol || (lb + lg) * 0.5 >= best_v) {
			continue;
		}
		double diff = lb - lg;
		const uint32_t *sg = sol->slot + (size_t)g * S;
		for (uint32_t i = 0; i < S; i++) {
			uint32_t a = sb[i];
			double pa = size[a];
			for (uint32_t j = 0; j < S; j++) {
				uint32_t c = sg[j];
				double d = pa - size[c];
				if (c == a || d <= tol || d >= diff - tol) {
					continue;
				}
				double nb = lb - d;
				double ng = lg + d;
				double v = nb > ng ? nb : ng;
				if (v >= best_v) {
					continue;
				}
				if (gpu_holds(prob, sol->slot, g, a) || gpu_holds(prob, sol->slot, b, c)) {
					continue;
				}
				best_v = v;
				best_a = b * S + i;
				best_c = g * S + j;
			}
		}
	}
	if (best_a == UINT32_MAX) {
		return false;
	}
	uint32_t a = sol->slot[best_a];
	uint32_t c = sol->slot[best_c];
	double d = size[a] - size[c];
	sol->slot[best_a] = c;
	sol->slot[best_c] = a;
	sol->load[b] -= d;
	sol->load[best_c / S] += d;
	return true;
}

/* Pair re-split: the 2S items of GPUs b and g are divided again, S per
 * GPU, no expert twice on one GPU, so that the heavier side is as light as
 * possible (exhaustive with pruning; item 0 stays on side A, which breaks
 * the mirror symmetry). Applied when the heavier side ends below
 * max(L_b, L_g) - tol. */
struct pair_search {
	const double *p;     /* [2S] item sizes, descending */
	const uint32_t *ex;  /* [2S] experts */
	uint32_t n;          /* 2S */
	uint32_t S;
	double best;         /* best heavier side so far */
	uint64_t cur;
	uint64_t best_set;
	uint64_t nodes;
	uint64_t max_nodes;
};

static void pair_dfs(struct pair_search *ps, uint32_t i, uint32_t in_a, double sum_a, double sum_b)
{
	if (++ps->nodes > ps->max_nodes) {
		return;
	}
	if (sum_a >= ps->best || sum_b >= ps->best) {
		return;
	}
	uint32_t in_b = i - in_a;
	if (i == ps->n) {
		double v = sum_a > sum_b ? sum_a : sum_b;
		if (v < ps->best) {
			ps->best = v;
			ps->best_set = ps->cur;
		}
		return;
	}
	/* duplicates: the same expert may not go to the side that has it */
	bool a_ok = in_a < ps->S;
	bool b_ok = in_b < ps->S;
	for (uint32_t j = 0; j < i && (a_ok || b_ok); j++) {
		if (ps->ex[j] == ps->ex[i]) {
			if (ps->cur & (1ull << j)) {
				a_ok = false;
			} else {
				b_ok = false;
			}
		}
	}
	if (a_ok) {
		ps->cur |= 1ull << i;
		pair_dfs(ps, i + 1, in_a + 1, sum_a + ps->p[i], sum_b);
		ps->cur &= ~(1ull << i);
	}
	if (b_ok && i > 0) {
		pair_dfs(ps, i + 1, in_a, sum_a, sum_b + ps->p[i]);
	}
}

static bool pair_improve(const struct pl_prob *prob, struct pl_sol *sol, const double *size,
			 uint32_t b, struct pl_work *work)
{
	uint32_t S = prob->S;
	uint32_t G = prob->G;
	if (2 * S > 64) {
		return false;
	}
	double lb = sol->load[b];
	double best_v = lb - prob->eps;
	uint32_t best_g = UINT32_MAX;
	uint64_t best_set = 0;
	uint32_t ex[64];
	double p[64];
	uint32_t best_ex[64];
	/* partners lightest first (work->gorder, sorted by the caller): the
	 * heavier side is at least the pair's average, so the scan stops at
	 * the first partner that cannot help */
	uint64_t budget = 20000;
	for (uint32_t q = G; q-- > 0;) {
		uint32_t g = work->gorder[q];
		double lg = sol->load[g];
		if ((lb + lg) * 0.5 >= best_v) {
			break;
		}
		if (g == b) {
			continue;
		}
		if (budget == 0) {
			break;
		}
		/* items of both GPUs, sorted by size descending */
		uint32_t n = 0;
		for (uint32_t k = 0; k < S; k++) {
			ex[n++] = sol->slot[b * S + k];
			ex[n++] = sol->slot[g * S + k];
		}
		for (uint32_t k = 1; k < n; k++) {
			uint32_t e = ex[k];
			uint32_t m = k;
			while (m > 0 && (size[ex[m - 1]] < size[e]
					 || (!(size[ex[m - 1]] > size[e]) && ex[m - 1] > e))) {
				ex[m] = ex[m - 1];
				m--;
			}
			ex[m] = e;
		}
		for (uint32_t k = 0; k < n; k++) {
			p[k] = size[ex[k]];
		}
		struct pair_search ps = {
			.p = p, .ex = ex, .n = n, .S = S, .best = best_v,
			.max_nodes = budget < 4000 ? budget : 4000,
		};
		pair_dfs(&ps, 0, 0, 0, 0);
		work->ops += ps.nodes + n * n;
		budget -= ps.nodes < budget ? ps.nodes : budget;
		if (ps.best < best_v) {
			best_v = ps.best;
			best_g = g;
			best_set = ps.best_set;
			memcpy(best_ex, ex, sizeof(ex[0]) * n);
		}
	}
	if (best_g == UINT32_MAX) {
		return false;
	}
	uint32_t na = 0;
	uint32_t nb = 0;
	double la = 0;
	double lg = 0;
	for (uint32_t k = 0; k < 2 * S; k++) {
		uint32_t e = best_ex[k];
		if (best_set & (1ull << k)) {
			sol->slot[b * S + na++] = e;
			la += size[e];
		} else {
			sol->slot[best_g * S + nb++] = e;
			lg += size[e];
		}
	}
	sol->load[b] = la;
	sol->load[best_g] = lg;
	return true;
}

static void build_csr(const struct pl_prob *prob, const struct pl_sol *sol, struct pl_work *work)
{
	uint32_t E = prob->E;
	memset(work->head, 0, sizeof(*work->head) * ((size_t)E + 1));
	for (uint32_t p = 0; p < prob->N; p++) {
		work->head[sol->slot[p] + 1]++;
	}
	for (uint32_t e = 0; e < E; e++) {
		work->head[e + 1] += work->head[e];
	}
	/* Fill: order[e] = next position of e (order has E entries). */
	for (uint32_t e = 0; e < E; e++) {
		work->order[e] = work->head[e];
	}
	for (uint32_t p = 0; p < prob->N; p++) {
		work->list[work->order[sol->slot[p]]++] = p;
	}
}

/* Replica move: one replica of x (on GPU h) becomes a replica of y, an
 * expert on the busiest GPU b. x's other replicas grow by dx, y's shrink by
 * dy (b among them), h trades w_x/r_x for w_y/(r_y+1). Accepted when every
 * GPU whose load changes ends below b's old load. Returns true when a move
 * was applied. */
static bool rmove_improve(const struct pl_prob *prob, struct pl_sol *sol, double *size,
			  struct pl_work *work, uint32_t b)
{
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t E = prob->E;
	double tol = prob->eps;
	double M = sol->load[b];
	build_csr(prob, sol, work);
	work->ops += (uint64_t)S * prob->N + prob->N + E;
	for (uint32_t g = 0; g < G; g++) {
		work->stamp[g] = UINT32_MAX;
	}
	double best_v = M - tol;
	uint32_t best_slot = UINT32_MAX;
	uint32_t best_y = UINT32_MAX;
	for (uint32_t i = 0; i < S; i++) {
		uint32_t y = sol->slot[b * S + i];
		uint32_t ry = sol->r[y];
		if (ry >= G || prob->w[y] <= 0) {
			continue;
		}
		double ny = prob->w[y] / (ry + 1);
		double dy = size[y] - ny;
		if (dy <= tol) {
			continue;
		}
		for (uint32_t k = work->head[y]; k < work->head[y + 1]; k++) {
			work->stamp[work->list[k] / S] = y;
		}
		double nb = M - dy;
		for (uint32_t x = 0; x < E; x++) {
			uint32_t rx = sol->r[x];
			if (x == y || rx < 2) {
				continue;
			}
			double px = size[x];
			double dx = prob->w[x] / (rx - 1) - px;
			double t1 = -DBL_MAX;
			double t2 = -DBL_MAX;
			uint32_t t1g = UINT32_MAX;
			bool on_b = false;
			for (uint32_t k = work->head[x]; k < work->head[x + 1]; k++) {
				uint32_t g = work->list[k] / S;
				double v = sol->load[g] + dx - (work->stamp[g] == y ? dy : 0);
				if (g == b) {
					on_b = true;
				}
				if (v > t1) {
					t2 = t1;
					t1 = v;
					t1g = g;
				} else if (v > t2) {
					t2 = v;
				}
			}
			if (t2 >= best_v) {
				continue;
			}
			double base = on_b ? -DBL_MAX : nb;
			if (base >= best_v) {
				continue;
			}
			for (uint32_t k = work->head[x]; k < work->head[x + 1]; k++) {
				uint32_t h = work->list[k] / S;
				if (work->stamp[h] == y) {
					continue;
				}
				double hn = sol->load[h] - px + ny;
				double xm = h == t1g ? t2 : t1;
				double v = hn > xm ? hn : xm;
				if (base > v) {
					v = base;
				}
				if (v < best_v) {
					best_v = v;
					best_slot = work->list[k];
					best_y = y;
				}
			}
		}
		for (uint32_t k = work->head[y]; k < work->head[y + 1]; k++) {
			work->stamp[work->list[k] / S] = UINT32_MAX;
		}
	}
	if (best_slot == UINT32_MAX) {
		return false;
	}
	uint32_t x = sol->slot[best_slot];
	sol->slot[best_slot] = best_y;
	sol->r[x]--;
	sol->r[best_y]++;
	size[x] = prob->w[x] / sol->r[x];
	size[best_y] = prob->w[best_y] / sol->r[best_y];
	for (uint32_t g = 0; g < G; g++) {
		double l = 0;
		for (uint32_t s = 0; s < S; s++) {
			l += size[sol->slot[g * S + s]];
		}
		sol->load[g] = l;
	}
	return true;
}

static uint32_t argmax(const double *v, uint32_t n)
{
	uint32_t b = 0;
	for (uint32_t i = 1; i < n; i++) {
		if (v[i] > v[b]) {
			b = i;
		}
	}
	return b;
}

void pl_improve(const struct pl_prob *prob, struct pl_sol *sol, struct pl_work *work,
		double deadline)
{
	uint32_t G = prob->G;
	double *size = work->key; /* [E]: current item size per expert */
	for (uint32_t e = 0; e < prob->E; e++) {
		size[e] = prob->w[e] / sol->r[e];
	}
	/* Recompute loads exactly from the sizes (drift-free start). */
	for (uint32_t g = 0; g < G; g++) {
		double l = 0;
		for (uint32_t s = 0; s < prob->S; s++) {
			l += size[sol->slot[g * prob->S + s]];
		}
		sol->load[g] = l;
	}
	uint64_t iter = 0;
	uint64_t cap = 64ull * prob->N + 1000;
	while (iter++ < cap) {
		if (pl_timed_out(work, deadline)) {
			break;
		}
		uint32_t b = argmax(sol->load, G);
		double M = sol->load[b];
		bool moved = false;
		work->ops += (uint64_t)G * prob->S * prob->S + G;
		/* Every GPU tied at the max may be the one that can move. */
		for (uint32_t g = 0; g < G && !moved; g++) {
			if (sol->load[g] >= M - prob->eps) {
				moved = swap_improve(prob, sol, size, g);
			}
		}
		/* The loads do not change until a move: one order serves every
		 * tied GPU. Many tied GPUs (thousands) check the clock. */
		if (!moved && 2 * prob->S <= 64) {
			pl_sort_desc(work->gorder, sol->load, G);
		}
		for (uint32_t g = 0; g < G && !moved; g++) {
			if ((g & 255) == 255 && pl_timed_out(work, deadline)) {
				break;
			}
			if (sol->load[g] >= M - prob->eps) {
				moved = pair_improve(prob, sol, size, g, work);
			}
		}
		for (uint32_t g = 0; g < G && !moved; g++) {
			if (sol->load[g] >= M - prob->eps) {
				moved = rmove_improve(prob, sol, size, work, g);
			}
		}
		if (!moved) {
			break;
		}
	}
	/* Second busiest: improve the heaviest GPU below the max, if the max
	 * is held by one GPU only. */
	while (iter++ < cap) {
		if (pl_timed_out(work, deadline)) {
			break;
		}
		uint32_t b = argmax(sol->load, G);
		double M = sol->load[b];
		uint32_t b2 = UINT32_MAX;
		bool tie = false;
		for (uint32_t g = 0; g < G; g++) {
			if (g == b) {
				continue;
			}
			if (sol->load[g] >= M - prob->eps) {
				tie = true;
				break;
			}
			if (b2 == UINT32_MAX || sol->load[g] > sol->load[b2]) {
				b2 = g;
			}
		}
		if (tie || b2 == UINT32_MAX || !swap_improve(prob, sol, size, b2)) {
			break;
		}
	}
	sol->max = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (sol->load[g] > sol->max) {
			sol->max = sol->load[g];
		}
	}
}

/* SplitMix64 (Steele, Lea and Flood 2014): a per-layer stream, so that a
 * layer's result does not depend on threads or on other layers. */
static uint64_t mix_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(mix_next(state) % n);
}

/* One random change that keeps the plan valid: a swap of two items on
 * different GPUs, or (one time in four) a replica of x turned into one of
 * y. Returns false when the drawn change was not allowed. */
static bool kick(const struct pl_prob *prob, struct pl_sol *sol, uint64_t *rng)
{
	uint32_t N = prob->N;
	uint32_t S = prob->S;
	if (below(rng, 4) == 0) {
		uint32_t q = below(rng, N);
		uint32_t x = sol->slot[q];
		uint32_t y = below(rng, prob->E);
		if (sol->r[x] < 2 || x == y || sol->r[y] >= prob->G || gpu_holds(prob, sol->slot, q / S, y)) {
			return false;
		}
		sol->slot[q] = y;
		sol->r[x]--;
		sol->r[y]++;
		return true;
	}
	uint32_t a = below(rng, N);
	uint32_t b = below(rng, N);
	uint32_t ea = sol->slot[a];
	uint32_t eb = sol->slot[b];
	if (a / S == b / S || ea == eb || gpu_holds(prob, sol->slot, b / S, ea)
	    || gpu_holds(prob, sol->slot, a / S, eb)) {
		return false;
	}
	sol->slot[a] = eb;
	sol->slot[b] = ea;
	return true;
}

int pl_ils(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work, double lb,
	   uint64_t max_ops, double deadline)
{
	struct pl_sol cand = { 0 };
	if (pl_sol_alloc(&cand, prob) != 0) {
		return MP_ENOMEM;
	}
	uint64_t rng = 0x6d6f65706c616e31ull ^ ((uint64_t)prob->N << 32) ^ prob->E;
	uint64_t start = work->ops;
	for (uint32_t it = 0; work->ops - start < max_ops; it++) {
		work->ops += prob->N;
		if (best->max <= lb + prob->tol || ((it & 15) == 0 && pl_timed_out(work, deadline))) {
			break;
		}
		pl_sol_copy(&cand, best, prob);
		bool changed = false;
		for (uint32_t t = 0; t < 8 && !changed; t++) {
			changed = kick(prob, &cand, &rng);
		}
		if (!changed) {
			continue;
		}
		pl_sol_eval(&cand, prob);
		pl_improve(prob, &cand, work, deadline);
		/* sideways moves are accepted: they let the search drift along
		 * plateaus of equal max load */
		if (!pl_sol_better(best, &cand, prob, NULL)) {
			pl_sol_copy(best, &cand, prob);
		}
	}
	pl_sol_free(&cand);
	return 0;
}

static void consider(const struct pl_prob *prob, struct pl_sol *best, bool *have,
		     const struct pl_sol *cand)
{
	if (!*have || pl_sol_better(cand, best, prob, NULL)) {
		pl_sol_copy(best, cand, prob);
		*have = true;
	}
}

int pl_heuristic(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work,
		 double deadline)
{
	struct pl_sol cand = { 0 };
	uint32_t *r = malloc(sizeof(*r) * prob->E);
	bool have = false;
	int rc = 0;
	if (!r || pl_sol_alloc(&cand, prob) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	/* Seeds 1-2: Adams' replica counts (the smallest largest item),
	 * packed by LPT with a slot limit and by balanced differencing. */
	pl_replicas_greedy(prob, r);
	if (pl_pack_lpt(prob, r, &cand, work)) {
		pl_improve(prob, &cand, work, deadline);
		consider(prob, best, &have, &cand);
	}
	/* Past the deadline balanced differencing is skipped, but EPLB's seed
	 * (below) is still looked at, so that the plan is never worse than
	 * EPLB's. */
	if (!pl_timed_out(work, deadline) && pl_pack_bldm(prob, r, &cand, work)) {
		pl_improve(prob, &cand, work, deadline);
		consider(prob, best, &have, &cand);
	}
	/* Seed 3: EPLB's plan, usable when it gives no expert more replicas
	 * than GPUs (its replica counts are looked at first: they are cheap,
	 * the plan is not); its duplicates swapped away. */
	pl_replicas_eplb(prob, r, work->list, NULL);
	bool capped = true;
	for (uint32_t e = 0; e < prob->E; e++) {
		if (r[e] > prob->G) {
			capped = false;
		}
	}
	if (capped) {
		pl_eplb(prob, cand.slot, work);
		pl_sol_eval(&cand, prob);
	}
	/* (past the deadline only a duplicate-free EPLB plan, the one a
	 * comparison is fair with, is looked at: the repair can be slow) */
	bool usable = capped && (pl_timed_out(work, deadline) ? pl_sol_no_dup(&cand, prob)
					    : pl_repair_dups(prob, &cand));
	if (usable) {
		pl_improve(prob, &cand, work, deadline);
		consider(prob, best, &have, &cand);
	}
	if (!have) {
		rc = MP_ELIMIT;
	}
out:
	free(r);
	pl_sol_free(&cand);
	return rc;
}

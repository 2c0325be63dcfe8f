/* Placement: an exact search over GPU contents for layers with few experts
 * (issue 17).
 *
 * Every slot is filled and a GPU holds S distinct experts, so a plan is a
 * multiset of G contents (S-subsets of the E experts) in which expert e
 * appears r_e times, and its busiest GPU is its heaviest content. With few
 * experts there are few contents (C(E, S) <= XC_MAX_CONTENTS) and the
 * search goes over replica-count vectors, then over multisets of contents.
 *
 * Arithmetic: every load w_e = M_e 2^K exactly (K the smallest exponent of
 * the loads' lowest set bits), D = lcm(1 .. rmax) with rmax = min(G,
 * N - E + 1) the most replicas an expert can have, and a replica of e
 * carries the integer M_e D / r_e in units of 2^K / D (unsigned 128-bit;
 * a layer that does not fit is skipped). A plan strictly better than the
 * incumbent UB has every GPU at most T = UB - 1 units, and then every GPU
 * at least L = W - (G - 1) T, W the total (the other G - 1 GPUs carry at
 * most T each).
 *
 * Replica-count vectors, experts heaviest first (ties by id), each count
 * nearest the expert's share of the slots first, pruned on the counts
 * decided so far by necessary conditions:
 *   - slots: sum r_e = N, 1 <= r_e <= rmax;
 *   - a replica plus the S - 1 smallest replicas any other experts can
 *     have is at most T;
 *   - for k = 1 .. S, at most (k - 1) G replicas exceed T / k (a GPU with
 *     k of them would exceed T);
 *   - at least G replicas are at least L / S (each GPU's largest is),
 *     counting the most the undecided experts could add;
 * then, for a complete vector, the contents whose load lies in [L, T];
 * an expert in none of them rules the vector out.
 *
 * Packing one vector: a depth-first search that takes the expert with the
 * most replicas left (ties: the heavier) and places all of them at once,
 * as a multiset of the allowed contents that contain it and whose other
 * experts still have replicas left (an expert placed is never seen again,
 * so each multiset of contents is generated once). After each expert: no
 * expert has more replicas left than GPUs left (distinct GPUs), the load
 * left lies in [g L, g T] for the g GPUs left, and a memo of failed
 * remaining-count vectors prunes (full keys; per vector and threshold: UB
 * only decreases, so a failure stays a failure).
 *
 * A plan found goes through pl_x_accept and lowers UB; the vector is
 * searched again below it, and the enumeration goes on with the lower
 * threshold (vectors ruled out at a higher one stay ruled out). When the
 * enumeration completes, no plan is below UB: the incumbent is optimal.
 * Work is counted (vector nodes, contents looked at, search nodes), so
 * the result depends only on the input.
 */
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef pl_u128 u128;

/* Shapes the search takes: counts fit one byte in the memo keys, and a
 * vector's contents are listed one by one. */
#define XC_MAX_E 24u
#define XC_MAX_G 255u
#define XC_MAX_CONTENTS 4096u
/* Failed states remembered per vector (more are not stored). */
#define XC_MEMO_CAP (1u << 17)
/* Where the search runs (pl_xcfg_budget): at most XC_MAX_VECTORS
 * compositions of the N slots into E positive counts, C(N - 1, E - 1):
 * 6.3e7 for Mixtral's 8 experts on 16 x 3 slots, which it proves within
 * 1.4e8 steps (about 1 s on the 2-core development machine); on 32 x 3
 * slots (1.1e10) it did not finish in 3e8 steps. The budget, times
 * effort, in counted steps. */
#define XC_MAX_VECTORS 1e8
#define XC_WORK 3e8

struct xmemo {
	uint32_t cap, count, tsize, gen, key_size;
	uint32_t *tgen;  /* [tsize] generation of each table slot */
	uint32_t *tidx;  /* [tsize] entry index */
	uint64_t *hash;  /* [cap] */
	uint8_t *keys;   /* [cap][key_size] */
};

struct xc {
	const struct pl_prob *prob;
	uint32_t E, G, S, N, rmax;
	uint32_t *ord;     /* [E] expert id at each depth, heaviest first */
	u128 *wd;          /* [E] M_e D by depth */
	u128 W;            /* total load */
	u128 tail;         /* sum of the S - 1 smallest wd / rmax */
	u128 ub, T, L;     /* incumbent, threshold UB - 1, lower window */
	uint32_t *r;       /* [E] the vector, by depth */
	u128 *p;           /* [E] replica loads wd / r */
	uint32_t n_cont;
	uint32_t *cont;    /* [XC_MAX_CONTENTS][S] depths of each content */
	u128 *csum;        /* [XC_MAX_CONTENTS] */
	uint32_t *head;    /* [E + 1] CSR: depth -> contents containing it */
	uint32_t *inc;     /* [XC_MAX_CONTENTS * S] */
	u128 *sufmin, *sufmax; /* [XC_MAX_CONTENTS * S] least and most load of the
				  contents from each position of a list on */
	uint8_t *rem;      /* [E] replicas left to place */
	uint32_t *stk_c, *stk_t; /* [G] contents chosen and their multiplicities */
	uint32_t n_stk;
	uint32_t *sub;     /* [S] scratch: the content being listed */
	struct xmemo memo;
	struct pl_sol *best;
	struct pl_sol cand;
	uint64_t work, max_work;
	bool aborted; /* the budget ran out */
	bool done;    /* nothing can be below UB: G T < W */
};

/* --- scaling --- */

/* wd[e] = M_e D by expert id (pl_x_mantissas, less their common power of
 * two), *total their sum; false when it does not fit 110 bits (so that
 * G T and sums of S replicas stay within 128). */
static bool xc_scale(const struct pl_prob *prob, uint32_t *rmax, u128 *wd, u128 *total)
{
	u128 d = 0;
	int k = 0;
	if (!pl_x_scale(prob, (u128)1 << 62, 44, rmax, &d, wd, &k)) {
		return false;
	}
	u128 all = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		all |= wd[e];
	}
	while (all != 0 && (all & 1u) == 0) {
		all >>= 1;
		for (uint32_t e = 0; e < prob->E; e++) {
			wd[e] >>= 1;
		}
	}
	*total = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		if (wd[e] > ((u128)1 << 110) / d) {
			return false;
		}
		wd[e] *= d;
		*total += wd[e];
		if (*total > ((u128)1 << 110)) {
			return false;
		}
	}
	return true;
}

/* --- the memo of failed remaining-count vectors --- */

static int memo_init(struct xmemo *m, uint32_t key_size)
{
	memset(m, 0, sizeof(*m));
	m->key_size = key_size;
	m->cap = XC_MEMO_CAP;
	m->tsize = 2 * XC_MEMO_CAP;
	m->gen = 1;
	m->tgen = calloc(m->tsize, sizeof(*m->tgen));
	m->tidx = calloc(m->tsize, sizeof(*m->tidx));
	m->hash = calloc(m->cap, sizeof(*m->hash));
	m->keys = calloc((size_t)m->cap * key_size, 1);
	return m->tgen && m->tidx && m->hash && m->keys ? 0 : MP_ENOMEM;
}

static void memo_free(struct xmemo *m)
{
	free(m->tgen);
	free(m->tidx);
	free(m->hash);
	free(m->keys);
	memset(m, 0, sizeof(*m));
}

/* Forget every entry (a new vector or threshold). */
static void memo_reset(struct xmemo *m)
{
	m->count = 0;
	if (++m->gen == 0) {
		memset(m->tgen, 0, sizeof(*m->tgen) * m->tsize);
		m->gen = 1;
	}
}

static uint64_t hash_key(const uint8_t *k, uint32_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < n; i++) {
		h = (h ^ k[i]) * 1099511628211ull;
	}
	return h ^ (h >> 29);
}

/* True when key is stored; else, with add, stores it (while there is room). */
static bool memo_probe(struct xmemo *m, const uint8_t *key, bool add)
{
	uint64_t h = hash_key(key, m->key_size);
	uint32_t i = (uint32_t)h & (m->tsize - 1);
	for (; m->tgen[i] == m->gen; i = (i + 1) & (m->tsize - 1)) {
		uint32_t v = m->tidx[i];
		if (m->hash[v] == h && memcmp(m->keys + (size_t)v * m->key_size, key, m->key_size) == 0) {
			return true;
		}
	}
	if (add && m->count < m->cap) {
		m->tgen[i] = m->gen;
		m->tidx[i] = m->count;
		m->hash[m->count] = h;
		memcpy(m->keys + (size_t)m->count * m->key_size, key, m->key_size);
		m->count++;
	}
	return false;
}

/* --- packing one vector --- */

static bool spend(struct xc *x)
{
	if (++x->work > x->max_work) {
		x->aborted = true;
	}
	return !x->aborted;
}

static bool cover(struct xc *x, uint32_t g);

/* After an expert is placed, with g GPUs left: distinct GPUs and the load
 * window. */
static bool left_ok(const struct xc *x, uint32_t g)
{
	u128 load = 0;
	for (uint32_t d = 0; d < x->E; d++) {
		if (x->rem[d] > g) {
			return false;
		}
		load += x->p[d] * x->rem[d];
	}
	return load <= x->T * g && load >= x->L * g;
}

/* Whether the `need` replicas of depth e still to place, on contents from
 * position i of its list on, can leave a state that passes left_ok: no
 * other expert keeps more than g replicas (each content takes at most one
 * of its replicas), and the load of the others, rest, can end in
 * [g L, g T] (each content takes between the least and the most of its
 * list's remaining contents, less e's replica). */
static bool pick_ok(const struct xc *x, uint32_t e, uint32_t i, uint32_t need, uint32_t g,
		    u128 rest)
{
	for (uint32_t d = 0; d < x->E; d++) {
		if (x->rem[d] > g + need) {
			return false;
		}
	}
	uint32_t k = x->head[e] + i;
	u128 lo = (x->sufmin[k] - x->p[e]) * need;
	u128 hi = (x->sufmax[k] - x->p[e]) * need;
	return rest >= lo + x->L * g && rest <= hi + x->T * g;
}

/* Place the `need` replicas of depth e left, on contents from position i
 * of its list on; g: GPUs left once they are placed; rest: the load of the
 * other experts' replicas left. */
static bool pick(struct xc *x, uint32_t e, uint32_t i, uint32_t need, uint32_t g, u128 rest)
{
	if (!spend(x)) {
		return false;
	}
	if (need == 0) {
		return left_ok(x, g) && cover(x, g);
	}
	uint32_t n = x->head[e + 1] - x->head[e];
	if (i >= n || !pick_ok(x, e, i, need, g, rest)) {
		return false;
	}
	const uint32_t *lst = x->inc + x->head[e];
	for (; i < n; i++) {
		const uint32_t *c = x->cont + (size_t)lst[i] * x->S;
		u128 part = x->csum[lst[i]] - x->p[e];
		uint32_t tmax = need;
		for (uint32_t j = 0; j < x->S; j++) {
			if (c[j] != e && x->rem[c[j]] < tmax) {
				tmax = x->rem[c[j]];
			}
		}
		for (uint32_t t = tmax; t > 0; t--) {
			for (uint32_t j = 0; j < x->S; j++) {
				x->rem[c[j]] = (uint8_t)(x->rem[c[j]] - (c[j] != e ? t : 0));
			}
			x->stk_c[x->n_stk] = lst[i];
			x->stk_t[x->n_stk++] = t;
			if (pick(x, e, i + 1, need - t, g, rest - part * t)) {
				return true;
			}
			x->n_stk--;
			for (uint32_t j = 0; j < x->S; j++) {
				x->rem[c[j]] = (uint8_t)(x->rem[c[j]] + (c[j] != e ? t : 0));
			}
			if (x->aborted) {
				return false;
			}
		}
	}
	return false;
}

/* A multiset of g contents covering rem exactly, within the window. */
static bool cover(struct xc *x, uint32_t g)
{
	if (g == 0) {
		return true;
	}
	if (!spend(x)) {
		return false;
	}
	uint32_t e = 0;
	for (uint32_t d = 1; d < x->E; d++) {
		e = x->rem[d] > x->rem[e] ? d : e;
	}
	if (memo_probe(&x->memo, x->rem, false)) {
		return false;
	}
	uint32_t need = x->rem[e];
	x->rem[e] = 0;
	u128 rest = 0;
	for (uint32_t d = 0; d < x->E; d++) {
		rest += x->p[d] * x->rem[d];
	}
	bool ok = pick(x, e, 0, need, g - need, rest);
	if (ok) {
		return true;
	}
	x->rem[e] = (uint8_t)need;
	if (!x->aborted) {
		memo_probe(&x->memo, x->rem, true);
	}
	return false;
}

/* --- the vector's contents --- */

/* List the contents of S experts from depth `from` on whose load is in
 * [L, T], k of them chosen so far (sub[0..k)) with load `sum`. */
static void list_contents(struct xc *x, uint32_t from, uint32_t k, u128 sum)
{
	if (k == x->S) {
		if (sum >= x->L && x->n_cont < XC_MAX_CONTENTS) {
			memcpy(x->cont + (size_t)x->n_cont * x->S, x->sub, sizeof(*x->sub) * x->S);
			x->csum[x->n_cont++] = sum;
		}
		return;
	}
	for (uint32_t d = from; d + (x->S - k) <= x->E; d++) {
		x->work++;
		if (sum + x->p[d] <= x->T) {
			x->sub[k] = d;
			list_contents(x, d + 1, k + 1, sum + x->p[d]);
		}
	}
}

/* The contents of the current vector and, per depth, those containing it;
 * false when some expert is in none. */
static bool build_contents(struct xc *x)
{
	x->n_cont = 0;
	list_contents(x, 0, 0, 0);
	memset(x->head, 0, sizeof(*x->head) * (x->E + 1));
	for (uint32_t c = 0; c < x->n_cont; c++) {
		for (uint32_t j = 0; j < x->S; j++) {
			x->head[x->cont[(size_t)c * x->S + j] + 1]++;
		}
	}
	for (uint32_t d = 0; d < x->E; d++) {
		if (x->head[d + 1] == 0) {
			return false;
		}
		x->head[d + 1] += x->head[d];
	}
	uint32_t fill[XC_MAX_E];
	memcpy(fill, x->head, sizeof(*fill) * x->E);
	for (uint32_t c = 0; c < x->n_cont; c++) {
		for (uint32_t j = 0; j < x->S; j++) {
			x->inc[fill[x->cont[(size_t)c * x->S + j]]++] = c;
		}
	}
	for (uint32_t d = 0; d < x->E; d++) {
		for (uint32_t k = x->head[d + 1]; k-- > x->head[d];) {
			u128 v = x->csum[x->inc[k]];
			bool last = k + 1 == x->head[d + 1];
			x->sufmin[k] = last || v < x->sufmin[k + 1] ? v : x->sufmin[k + 1];
			x->sufmax[k] = last || v > x->sufmax[k + 1] ? v : x->sufmax[k + 1];
		}
	}
	return true;
}

/* --- the incumbent --- */

static u128 plan_units(const struct xc *x, const u128 *wd_id, const struct pl_sol *sol)
{
	u128 mx = 0;
	for (uint32_t g = 0; g < x->G; g++) {
		u128 l = 0;
		for (uint32_t s = 0; s < x->S; s++) {
			uint32_t e = sol->slot[(size_t)g * x->S + s];
			l += wd_id[e] / sol->r[e];
		}
		mx = l > mx ? l : mx;
	}
	return mx;
}

/* UB and what follows from it: T, L, done. */
static void set_ub(struct xc *x, u128 ub)
{
	x->ub = ub;
	x->T = ub - 1;
	u128 others = x->T * (x->G - 1);
	x->L = x->W > others ? x->W - others : 0;
	x->done = x->T * x->G < x->W;
}

/* The plan on the stack into cand, through the acceptance rule; UB drops
 * to its heaviest content. */
static void take_plan(struct xc *x)
{
	uint32_t g = 0;
	u128 mx = 0;
	for (uint32_t i = 0; i < x->n_stk; i++) {
		const uint32_t *c = x->cont + (size_t)x->stk_c[i] * x->S;
		for (uint32_t t = 0; t < x->stk_t[i]; t++, g++) {
			for (uint32_t j = 0; j < x->S; j++) {
				x->cand.slot[(size_t)g * x->S + j] = x->ord[c[j]];
			}
		}
		mx = x->csum[x->stk_c[i]] > mx ? x->csum[x->stk_c[i]] : mx;
	}
	pl_x_accept(x->prob, x->best, &x->cand);
	set_ub(x, mx);
}

/* A complete vector: pack it below UB as long as that succeeds. */
static void vec_leaf(struct xc *x)
{
	while (!x->done && !x->aborted && build_contents(x)) {
		for (uint32_t d = 0; d < x->E; d++) {
			x->rem[d] = (uint8_t)x->r[d];
		}
		memo_reset(&x->memo);
		x->n_stk = 0;
		if (!cover(x, x->G)) {
			return;
		}
		take_plan(x);
	}
}

/* --- replica-count vectors --- */

/* Whether S - 1 experts other than depth `skip`, from depth `from` on
 * (k chosen so far, their loads between lo and hi), can complete a content
 * whose load lies in [L, T]; decided depths (<= d) have their replica
 * loads, the others any count from 1 to rmax. */
static bool content_exists(struct xc *x, uint32_t d, uint32_t skip, uint32_t from, uint32_t k,
			   u128 lo, u128 hi)
{
	x->work++;
	if (k == x->S) {
		return lo <= x->T && hi >= x->L;
	}
	for (uint32_t i = from; i + (x->S - k) <= x->E; i++) {
		if (i == skip) {
			continue;
		}
		u128 a = i <= d ? x->p[i] : x->wd[i] / x->rmax;
		u128 b = i <= d ? x->p[i] : x->wd[i];
		if (lo + a <= x->T && content_exists(x, d, skip, i + 1, k + 1, lo + a, hi + b)) {
			return true;
		}
	}
	return false;
}

/* The necessary conditions on the counts of depths 0..d. */
static bool vec_ok(struct xc *x, uint32_t d)
{
	if (x->p[d] + x->tail > x->T) {
		return false;
	}
	for (uint32_t k = 2; k <= x->S; k++) {
		uint64_t over = 0;
		for (uint32_t i = 0; i <= d; i++) {
			over += x->p[i] * k > x->T ? x->r[i] : 0;
		}
		if (over > (uint64_t)(k - 1) * x->G) {
			return false;
		}
	}
	uint64_t big = 0;
	for (uint32_t i = 0; i < x->E; i++) {
		if (i <= d) {
			big += x->p[i] * x->S >= x->L ? x->r[i] : 0;
		} else if (x->L == 0) {
			big += x->rmax;
		} else {
			u128 most = x->wd[i] * x->S / x->L; /* r with S wd / r >= L */
			big += most < x->rmax ? (uint64_t)most : x->rmax;
		}
	}
	if (big < x->G) {
		return false;
	}
	return content_exists(x, d, d, 0, 1, x->p[d], x->p[d]);
}

static void vec_rec(struct xc *x, uint32_t d, uint32_t used)
{
	if (x->done || !spend(x)) {
		return;
	}
	if (d == x->E) {
		vec_leaf(x);
		return;
	}
	uint64_t left = x->E - d - 1;
	uint64_t avail = x->N - used;
	uint64_t lo = avail > left * x->rmax ? avail - left * x->rmax : 1;
	uint64_t hi = avail - left < x->rmax ? avail - left : x->rmax;
	if (lo > hi) {
		return;
	}
	/* the count nearest this expert's share of the slots first */
	long double share = x->W ? (long double)x->wd[d] * x->N / (long double)x->W : 1.0L;
	uint64_t pref = share < (long double)lo ? lo
			: share > (long double)hi ? hi
			: (uint64_t)(share + 0.5L);
	pref = pref < lo ? lo : pref > hi ? hi : pref;
	for (uint64_t step = 0; step <= 2 * (hi - lo) + 1 && !x->done && !x->aborted; step++) {
		uint64_t r = step % 2 == 0 ? pref + step / 2 : pref - step / 2 - 1;
		if ((step % 2 == 0 && r > hi) || (step % 2 == 1 && pref < lo + step / 2 + 1)) {
			continue;
		}
		x->r[d] = (uint32_t)r;
		x->p[d] = x->wd[d] / r;
		if (vec_ok(x, d)) {
			vec_rec(x, d + 1, used + (uint32_t)r);
		}
	}
}

/* --- setup --- */

static uint64_t binom(uint32_t n, uint32_t k)
{
	uint64_t c = 1;
	for (uint32_t i = 0; i < k; i++) {
		c = c * (n - i) / (i + 1);
		if (c > UINT32_MAX) {
			return UINT32_MAX;
		}
	}
	return c;
}

bool pl_xcfg_fits(const struct pl_prob *prob)
{
	return prob->E <= XC_MAX_E && prob->G <= XC_MAX_G && prob->S <= prob->E && prob->S >= 1
	       && binom(prob->E, prob->S) <= XC_MAX_CONTENTS;
}

uint64_t pl_xcfg_budget(const struct pl_prob *prob, double effort)
{
	if (!pl_xcfg_fits(prob) || binom(prob->N - 1, prob->E - 1) > XC_MAX_VECTORS) {
		return 0;
	}
	double v = floor(XC_WORK * effort);
	return v < 1 ? 1 : v > 1e15 ? (uint64_t)1e15 : (uint64_t)v;
}

static void xc_free(struct xc *x)
{
	free(x->ord);
	free(x->wd);
	free(x->r);
	free(x->p);
	free(x->cont);
	free(x->csum);
	free(x->head);
	free(x->inc);
	free(x->sufmin);
	free(x->sufmax);
	free(x->rem);
	free(x->stk_c);
	free(x->stk_t);
	free(x->sub);
	memo_free(&x->memo);
	pl_sol_free(&x->cand);
}

static int xc_alloc(struct xc *x)
{
	size_t E = x->E;
	x->ord = calloc(E, sizeof(*x->ord));
	x->wd = calloc(E, sizeof(*x->wd));
	x->r = calloc(E, sizeof(*x->r));
	x->p = calloc(E, sizeof(*x->p));
	x->cont = calloc((size_t)XC_MAX_CONTENTS * x->S, sizeof(*x->cont));
	x->csum = calloc(XC_MAX_CONTENTS, sizeof(*x->csum));
	x->head = calloc(E + 1, sizeof(*x->head));
	x->inc = calloc((size_t)XC_MAX_CONTENTS * x->S, sizeof(*x->inc));
	x->sufmin = calloc((size_t)XC_MAX_CONTENTS * x->S, sizeof(*x->sufmin));
	x->sufmax = calloc((size_t)XC_MAX_CONTENTS * x->S, sizeof(*x->sufmax));
	x->rem = calloc(E, 1);
	x->stk_c = calloc(x->G, sizeof(*x->stk_c));
	x->stk_t = calloc(x->G, sizeof(*x->stk_t));
	x->sub = calloc(x->S, sizeof(*x->sub));
	if (!x->ord || !x->wd || !x->r || !x->p || !x->cont || !x->csum || !x->head || !x->inc
	    || !x->sufmin || !x->sufmax || !x->rem || !x->stk_c || !x->stk_t || !x->sub || memo_init(&x->memo, x->E) != 0
	    || pl_sol_alloc(&x->cand, x->prob) != 0) {
		return MP_ENOMEM;
	}
	return 0;
}

/* Depths heaviest first (ties by id), the scaled loads by depth, the
 * tail of the S - 1 smallest replicas. */
static void xc_order(struct xc *x, const u128 *wd_id)
{
	for (uint32_t e = 0; e < x->E; e++) {
		x->ord[e] = e;
	}
	/* the doubles order as their exact scaled values do */
	pl_sort_desc(x->ord, x->prob->w, x->E);
	for (uint32_t d = 0; d < x->E; d++) {
		x->wd[d] = wd_id[x->ord[d]];
	}
	/* heaviest first: the S - 1 smallest are the last depths */
	x->tail = 0;
	for (uint32_t k = 1; k < x->S; k++) {
		x->tail += x->wd[x->E - k] / x->rmax;
	}
}

enum pl_bb_result pl_xcfg_solve(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work,
				uint64_t *work_out)
{
	*work_out = 0;
	if (!pl_xcfg_fits(prob)) {
		return PL_BB_SKIPPED;
	}
	struct xc x = {.prob = prob, .E = prob->E, .G = prob->G, .S = prob->S, .N = prob->N,
		       .best = best, .max_work = max_work};
	enum pl_bb_result res = PL_BB_NOMEM;
	u128 *wd_id = calloc(prob->E, sizeof(*wd_id));
	if (!wd_id || xc_alloc(&x) != 0) {
		goto out;
	}
	if (!xc_scale(prob, &x.rmax, wd_id, &x.W)) {
		res = PL_BB_SKIPPED;
		goto out;
	}
	xc_order(&x, wd_id);
	pl_sol_eval(best, prob);
	u128 ub = plan_units(&x, wd_id, best);
	if (ub > 0) { /* else every load is zero: nothing is below 0 */
		set_ub(&x, ub);
		vec_rec(&x, 0, 0);
	}
	*work_out = x.work;
	res = x.aborted ? PL_BB_BUDGET : PL_BB_PROVEN;
out:
	free(wd_id);
	xc_free(&x);
	return res;
}

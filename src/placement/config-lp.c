/* Placement: the configuration LP (column generation with GLPK): a lower
 * bound with a dual certificate, and plans by diving in the same LP.
 *
 * For a target T, is there a plan whose busiest GPU carries at most T?
 * A "type" t = (e, k) means expert e has k replicas, each of size
 * s_t = w_e / k; only types with s_t <= T and k <= G exist. A
 * "configuration" c is what one GPU may hold: at most S types of distinct
 * experts with total size <= T. The LP relaxation (the Gilmore-Gomory
 * configuration LP of bin packing, with the replica counts as variables
 * y_t in the manner of the "configuration LP" for scheduling with
 * splittable jobs) is
 *
 *   min  sum_c x_c                                  (GPUs used)
 *   s.t. sum_c a_tc x_c - k_t y_t >= 0   for each type t   (dual pi_t >= 0)
 *        sum_{k} y_(e,k) = 1             for each expert e (dual mu_e)
 *        sum_t k_t y_t = N                                 (dual tau)
 *        x, y >= 0.
 *
 * Every plan with max <= T gives a solution with sum_c x_c = G (y_t = 1
 * for its counts, x_c = number of GPUs holding content c), so a proof
 * that the LP's minimum exceeds G proves that no plan has max <= T, and
 * T is a valid lower bound. The proof is a dual certificate, checked
 * here from the duals GLPK returns and not from its objective: for any
 * pi >= 0 and tau, let mu_e = min_k k (pi_(e,k) - tau) and P > 0 the
 * largest price sum_t a_tc pi_t of any configuration (found by an exact
 * search, which allows size T (1 + 1e-12) so that it can only over-
 * estimate P). Then (pi, mu, tau) / P is feasible for the dual
 * (max sum_e mu_e + N tau s.t. sum_t a_tc pi_t <= 1, mu_e <= k (pi_t -
 * tau)), so by weak duality the LP's minimum is at least
 * (sum_e mu_e + N tau) / P (Farley's bound for column generation,
 * Operations Research 38(5), 1990). When that exceeds G, T is proven.
 *
 * The window: every plan has total load W = sum_e w_e (an expert's
 * replicas carry w_e between them), so in a plan with max <= T every GPU
 * carries at least L(T) = W - (G - 1) T: the other G - 1 carry at most T
 * each. The configurations are therefore only those with total size in
 * [L(T), T] (a GPU's content may hold fewer than S replicas: the window is
 * on its total, whatever its length), and every argument above holds
 * unchanged over that smaller set; near the mean the window is narrow
 * (G (T - W / G) wide) and the LP's minimum rises. The pricing then
 * finds the largest price over window configurations or over-estimates
 * it (window_note below), which keeps the certificate valid. Singleton
 * configurations outside the window stay in the restricted LP at cost
 * PL_CFG_ART so that it always has a solution; they are no part of the
 * certificate (its P is over window configurations only) and a solution
 * that uses them never counts as fitting.
 *
 * The replica counts are limited to k >= ceil(w_e / T) and k <= k_e +
 * spare, spare = N - sum_e ceil(w_e / T_hi) (the other experts need at
 * least their own minimum), valid for every T <= T_hi.
 *
 * When T is not proven, the same LP gives plans: a dive (see dive_loop)
 * fixes replica counts and GPU contents one by one, re-solving the LP
 * after each, until its solution is integral, i.e. a plan with max <= T.
 *
 * Work: GLPK simplex iterations (glp_get_it_cnt) plus one unit per
 * PL_CFG_NODES_PER_UNIT pricing steps, against a budget; the wall clock
 * only as GLPK's tm_lim safety net.
 */
#include "placement/internal.h"

#include "placement/glpk-internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most slots per GPU the pricing search handles (its depth). */
#define PL_MAX_S_CFG 4u
/* Most types (expert, replica count) in the LP. */
#define PL_CFG_MAX_TYPES 50000u
/* Bisection steps below the target when the LP fits there. */
#define PL_CFG_BISECT 8
/* Most columns the dive rounds up in one step. */
#define PL_CFG_BULK 64u
/* Dives tried for a plan (pl_cfg_close). */
#define PL_CFG_DIVES 6
/* Pricing steps (search nodes and lookups) per work unit. */
#define PL_CFG_NODES_PER_UNIT 256u
/* Most configurations added per pricing round. */
#define PL_CFG_COLS_PER_ROUND 32u
/* A configuration enters when its price exceeds 1 by this much. */
#define PL_CFG_ENTER 1e-6
/* Cost of a singleton configuration below the window (see the top). */
#define PL_CFG_ART 16.0
/* A positive-pi range at most this long is scanned by size, else by pi. */
#define PL_CFG_SCAN 32u

struct cfg {
	const struct pl_prob *prob;
	uint32_t nt;        /* types */
	uint32_t *te;       /* [nt] expert */
	uint32_t *tk;       /* [nt] replica count */
	double *ts;         /* [nt] item size */
	uint32_t *first;    /* [E + 1] types of expert e: first[e] .. first[e+1]-1 */
	double *csize;      /* [ccap] total size of config column j (0-based over configs) */
	uint32_t *ctype;    /* [ccap][PL_MAX_S_CFG] its types */
	uint8_t *clen_of;   /* [ccap] how many */
	double *clb;        /* [ccap] lower bound on x_j (the dive's commitments) */
	double *cub;        /* [ccap] upper bound on x_j (INFINITY: none) */
	uint8_t *off;       /* [nt] type forbidden (the dive fixed its expert's count) */
	bool converge;      /* solve_at: run to the LP optimum (the dive) */
	bool dive_ok;       /* the dive ended in a plan */
	uint32_t rule;      /* the dive rounds up: 0 the most fractional x, 1 the largest */
	uint32_t nc;        /* configs in the LP */
	uint32_t ccap;
	glp_prob *lp;
	struct pl_triplets col; /* the column being added */
	double bound;       /* largest T proven */
	double lp_feasible; /* smallest T where the LP fit */
	/* pricing scratch */
	double *pi;         /* [nt] */
	uint32_t *pos;      /* [nt] positive-pi types, pi descending */
	uint32_t *bysize;   /* [nt] the same, size ascending */
	int32_t *top;       /* [nt][S] best S distinct-expert types by pi in each size prefix */
	uint64_t nodes;     /* pricing steps done */
	double win_lo;      /* the window's lower end at this T, less a margin (<= 0: none) */
	double room0;       /* T plus the pricing's margin */
	double maxts;       /* largest size of a type in the LP at this T */
	uint32_t nall;      /* types in the LP at this T ... */
	uint32_t *byall;    /* [nt] ... size ascending */
	uint8_t *art;       /* [nt] singleton j is below the window (cost PL_CFG_ART) */
	bool window;        /* configurations restricted to the window (cfg_window) */
	uint32_t *kmin;     /* [E] fewest replicas within T_hi */
	uint32_t *tmp;      /* [nt] sort scratch */
	/* new columns of one round */
	uint32_t ncols;
	uint32_t cols[PL_CFG_COLS_PER_ROUND][PL_MAX_S_CFG];
	uint32_t clen[PL_CFG_COLS_PER_ROUND];
};

static bool pi_before(const struct cfg *c, uint32_t a, uint32_t b)
{
	if (c->pi[a] != c->pi[b]) {
		return c->pi[a] > c->pi[b];
	}
	return a < b;
}

static bool size_before(const struct cfg *c, uint32_t a, uint32_t b)
{
	if (c->ts[a] != c->ts[b]) {
		return c->ts[a] < c->ts[b];
	}
	return a < b;
}

/* Merge sort of idx[n] by the given order (deterministic, O(n log n)). */
static void msort(const struct cfg *c, uint32_t *idx, uint32_t *tmp, uint32_t n,
		  bool (*before)(const struct cfg *, uint32_t, uint32_t))
{
	for (uint32_t width = 1; width < n; width *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * width) {
			uint32_t mid = lo + width < n ? lo + width : n;
			uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint32_t i = lo;
			uint32_t j = mid;
			uint32_t k = lo;
			while (i < mid && j < hi) {
				tmp[k++] = before(c, idx[j], idx[i]) ? idx[j++] : idx[i++];
			}
			while (i < mid) {
				tmp[k++] = idx[i++];
			}
			while (j < hi) {
				tmp[k++] = idx[j++];
			}
		}
		memcpy(idx, tmp, sizeof(*idx) * n);
	}
}

static bool type_on(const struct cfg *c, uint32_t t, double T)
{
	return c->ts[t] <= T && !c->off[t];
}

/* The best type of size <= room whose expert is none of ex[0..nex-1], from
 * the prefix lists (-1: none). np = number of positive types. */
static int32_t lookup(struct cfg *c, uint32_t np, double room, const uint32_t *ex, uint32_t nex)
{
	uint32_t S = c->prob->S;
	uint32_t lo = 0;
	uint32_t hi = np;
	while (lo < hi) { /* first index with size > room */
		uint32_t m = lo + (hi - lo) / 2;
		if (c->ts[c->bysize[m]] <= room) {
			lo = m + 1;
		} else {
			hi = m;
		}
	}
	c->nodes++;
	if (lo == 0) {
		return -1;
	}
	const int32_t *tp = c->top + (size_t)(lo - 1) * S;
	for (uint32_t z = 0; z < S; z++) {
		if (tp[z] < 0) {
			return -1;
		}
		bool clash = false;
		for (uint32_t q = 0; q < nex; q++) {
			if (c->te[tp[z]] == ex[q]) {
				clash = true;
			}
		}
		if (!clash) {
			return tp[z];
		}
	}
	return -1;
}

static bool clashes(const struct cfg *c, uint32_t t, const uint32_t *ex, uint32_t nex)
{
	for (uint32_t q = 0; q < nex; q++) {
		if (c->te[t] == ex[q]) {
			return true;
		}
	}
	return false;
}

/* First index of list[0..n-1] (size ascending) whose size is >= v. */
static uint32_t first_at_least(const struct cfg *c, const uint32_t *list, uint32_t n, double v)
{
	uint32_t lo = 0;
	uint32_t hi = n;
	while (lo < hi) {
		uint32_t m = lo + (hi - lo) / 2;
		if (c->ts[list[m]] < v) {
			lo = m + 1;
		} else {
			hi = m;
		}
	}
	return lo;
}

/* With the window: the best type (largest pi, then first in pi order) of
 * size in [need, room] whose expert is none of ex[0..nex-1]: a positive
 * one, else any type in the LP (pi 0, a filler that brings the
 * configuration into the window); -1: none. need <= 0: lookup(). */
static int32_t lookup_window(struct cfg *c, uint32_t np, double need, double room,
			     const uint32_t *ex, uint32_t nex)
{
	if (need <= 0) {
		return lookup(c, np, room, ex, nex);
	}
	if (need > room) {
		return -1;
	}
	uint32_t a = first_at_least(c, c->bysize, np, need);
	uint32_t b = a;
	while (b < np && c->ts[c->bysize[b]] <= room && b - a <= PL_CFG_SCAN) {
		b++;
	}
	int32_t best = -1;
	if (b - a <= PL_CFG_SCAN) { /* a short range: scan it */
		for (uint32_t q = a; q < b; q++) {
			uint32_t t = c->bysize[q];
			c->nodes++;
			if (!clashes(c, t, ex, nex) && (best < 0 || pi_before(c, t, (uint32_t)best))) {
				best = (int32_t)t;
			}
		}
	} else { /* a long one: the first fit in pi order */
		for (uint32_t q = 0; q < np && best < 0; q++) {
			uint32_t t = c->pos[q];
			c->nodes++;
			if (c->ts[t] >= need && c->ts[t] <= room && !clashes(c, t, ex, nex)) {
				best = (int32_t)t;
			}
		}
	}
	if (best >= 0) {
		return best;
	}
	for (uint32_t q = first_at_least(c, c->byall, c->nall, need);
	     q < c->nall && c->ts[c->byall[q]] <= room; q++) {
		c->nodes++;
		if (!clashes(c, c->byall[q], ex, nex)) {
			return (int32_t)c->byall[q];
		}
	}
	return -1;
}

struct dfs {
	uint32_t chosen[PL_MAX_S_CFG];
	uint32_t ex[PL_MAX_S_CFG];
	double best;      /* best price found */
	double sub_best;  /* best price in the current top-level subtree */
	uint32_t sub[PL_MAX_S_CFG];
	uint32_t sub_len;
};

/* Depth-first search over the positive types in pi order: at depth d the
 * config holds chosen[0..d-1]; the last item comes from lookup(). Exact
 * (prunes only by the bound value + remaining slots * next pi). */
static void dfs_rec(struct cfg *c, struct dfs *st, uint32_t np, uint32_t from, uint32_t d,
		    double value, double room)
{
	uint32_t S = c->prob->S;
	int32_t last = -1;
	double v;   /* the best price of a configuration here (< 0: none) */
	/* d < S <= PL_MAX_S_CFG (checked where the problem is built): said
	 * here so that an optimising compiler sees the arrays' bound. */
	if (d >= PL_MAX_S_CFG || S > PL_MAX_S_CFG) {
		return;
	}
	double est; /* what this node adds to the pricing's maximum */
	if (!(c->win_lo > 0)) {
		last = d < S ? lookup(c, np, room, st->ex, d) : -1;
		v = value + (last >= 0 ? c->pi[last] : 0);
		est = v;
	} else {
		/* window_note: a window configuration C has positive part X
		 * (the DFS visits X or prunes it by value) and the rest of
		 * price 0: C = X (size in the window), or X and one more type
		 * (lookup_window finds the best), or X and at least two more
		 * (then size(X) + (S - |X|) maxts >= L, counted as value(X)
		 * without a column: an over-estimate). */
		double size = c->room0 - room;
		v = size >= c->win_lo ? value : -1;
		if (d < S) {
			last = lookup_window(c, np, c->win_lo - size, room, st->ex, d);
			if (last >= 0 && value + c->pi[last] > v) {
				v = value + c->pi[last];
			} else {
				last = -1;
			}
		}
		est = v;
		if (d + 2 <= S && size + (S - d) * c->maxts >= c->win_lo && value > est) {
			est = value;
		}
	}
	if (v > st->sub_best) {
		st->sub_best = v;
		memcpy(st->sub, st->chosen, sizeof(*st->sub) * d);
		st->sub_len = d;
		if (last >= 0) {
			st->sub[d] = (uint32_t)last;
			st->sub_len = d + 1;
		}
	}
	if (est > st->best) {
		st->best = est;
	}
	if (d + 2 > S) {
		return;
	}
	for (uint32_t q = from; q < np; q++) {
		uint32_t t = c->pos[q];
		c->nodes++;
		if (value + (S - d) * c->pi[t] <= st->best) {
			break;
		}
		if (c->ts[t] > room) {
			continue;
		}
		bool clash = false;
		for (uint32_t z = 0; z < d; z++) {
			if (st->ex[z] == c->te[t]) {
				clash = true;
			}
		}
		if (clash) {
			continue;
		}
		st->chosen[d] = t;
		st->ex[d] = c->te[t];
		dfs_rec(c, st, np, q + 1, d + 1, value + c->pi[t], room - c->ts[t]);
	}
}

/* Exact pricing at target T: returns the largest configuration price and
 * fills the round's new columns (prices above 1 + PL_CFG_ENTER). */
static double price(struct cfg *c, double T, uint32_t *tmp)
{
	uint32_t S = c->prob->S;
	uint32_t np = 0;
	c->nall = 0;
	c->maxts = 0;
	for (uint32_t t = 0; t < c->nt; t++) {
		if (c->pi[t] > 0 && c->ts[t] <= T && !c->off[t]) {
			c->pos[np++] = t;
		}
		if (c->win_lo > 0 && type_on(c, t, T)) {
			c->byall[c->nall++] = t;
			c->maxts = c->ts[t] > c->maxts ? c->ts[t] : c->maxts;
		}
	}
	c->ncols = 0;
	if (np == 0) {
		return 0;
	}
	if (c->nall > 0) {
		msort(c, c->byall, tmp, c->nall, size_before);
	}
	msort(c, c->pos, tmp, np, pi_before);
	memcpy(c->bysize, c->pos, sizeof(*c->pos) * np);
	msort(c, c->bysize, tmp, np, size_before);
	/* top[q]: the S best types by pi (distinct experts) among bysize[0..q] */
	for (uint32_t q = 0; q < np; q++) {
		int32_t *cur = c->top + (size_t)q * S;
		const int32_t *prev = q > 0 ? c->top + (size_t)(q - 1) * S : NULL;
		uint32_t t = c->bysize[q];
		uint32_t m = 0;
		bool placed = false;
		for (uint32_t z = 0; prev && z < S && m < S; z++) {
			int32_t u = prev[z];
			if (u < 0) {
				break;
			}
			if (!placed && pi_before(c, t, (uint32_t)u)) {
				cur[m++] = (int32_t)t;
				placed = true;
				if (m >= S) {
					break;
				}
			}
			if (c->te[u] == c->te[t]) {
				if (placed) {
					continue; /* t replaces its own expert's weaker entry */
				}
				placed = true; /* a better type of t's expert is there already */
			}
			cur[m++] = u;
		}
		if (!placed && m < S) {
			cur[m++] = (int32_t)t;
		}
		while (m < S) {
			cur[m++] = -1;
		}
	}
	struct dfs st = { .best = 0 };
	double room = T * (1 + 1e-12);
	c->room0 = room;
	for (uint32_t q = 0; q < np; q++) {
		uint32_t t = c->pos[q];
		c->nodes++;
		if ((double)S * c->pi[t] <= st.best) {
			break;
		}
		st.chosen[0] = t;
		st.ex[0] = c->te[t];
		st.sub_best = 0;
		st.sub_len = 0;
		dfs_rec(c, &st, np, q + 1, 1, c->pi[t], room - c->ts[t]);
		if (st.sub_best > 1 + PL_CFG_ENTER && c->ncols < PL_CFG_COLS_PER_ROUND) {
			memcpy(c->cols[c->ncols], st.sub, sizeof(*st.sub) * st.sub_len);
			c->clen[c->ncols] = st.sub_len;
			c->ncols++;
		}
	}
	return st.best;
}

static int add_config(struct cfg *c, const uint32_t *types, uint32_t n)
{
	if (c->nc == c->ccap) {
		uint32_t cap = c->ccap ? 2 * c->ccap : 256;
		double *p = realloc(c->csize, sizeof(*p) * cap);
		if (p) {
			c->csize = p;
		}
		uint32_t *ty = realloc(c->ctype, sizeof(*ty) * cap * PL_MAX_S_CFG);
		if (ty) {
			c->ctype = ty;
		}
		uint8_t *ln = realloc(c->clen_of, sizeof(*ln) * cap);
		if (ln) {
			c->clen_of = ln;
		}
		double *lb = realloc(c->clb, sizeof(*lb) * cap);
		if (lb) {
			c->clb = lb;
		}
		double *ub = realloc(c->cub, sizeof(*ub) * cap);
		if (ub) {
			c->cub = ub;
		}
		if (!p || !ty || !ln || !lb || !ub) {
			return MP_ENOMEM;
		}
		c->ccap = cap;
	}
	/* the column after the nt type columns and the nc configurations */
	int col = (int)(c->nt + c->nc) + 1;
	double size = 0;
	for (uint32_t z = 0; z < n; z++) {
		pl_trip_add(&c->col, (int)types[z] + 1, col, 1);
		size += c->ts[types[z]];
	}
	if (c->col.failed) {
		pl_trip_set_col(c->lp, col, &c->col); /* (only empties it) */
		return MP_ENOMEM;
	}
	glp_add_cols(c->lp, 1);
	glp_set_obj_coef(c->lp, col, 1);
	glp_set_col_bnds(c->lp, col, GLP_LO, 0, 0);
	pl_trip_set_col(c->lp, col, &c->col);
	memcpy(c->ctype + (size_t)c->nc * PL_MAX_S_CFG, types, sizeof(*types) * n);
	c->clen_of[c->nc] = (uint8_t)n;
	c->clb[c->nc] = 0;
	c->cub[c->nc] = (double)INFINITY;
	c->csize[c->nc++] = size;
	return 0;
}

/* Smallest k >= 1 with w / k <= T (may exceed G). */
static uint32_t kmin_of(double w, double T, uint32_t cap)
{
	if (w <= T) {
		return 1;
	}
	double k = ceil(w / T);
	if (k > cap + 1.0) {
		return cap + 1;
	}
	uint32_t ki = (uint32_t)k;
	while (ki <= cap && w / ki > T) {
		ki++;
	}
	while (ki > 1 && w / (ki - 1) <= T) {
		ki--;
	}
	return ki;
}

enum cfg_res { CFG_PROVEN, CFG_FEASIBLE, CFG_OVER, CFG_LIMIT, CFG_ERROR };

/* x_j's bounds: 0 when its size exceeds T or it holds a forbidden type,
 * else [clb, cub]. */
static void set_col_bounds(struct cfg *c, uint32_t j, double T)
{
	int col = (int)(c->nt + j) + 1;
	bool on = c->csize[j] <= T;
	/* Below the window: out, except the singletons (artificial, at cost
	 * PL_CFG_ART). The margin 1e-12 T keeps every column the pricing
	 * found (its size summed in another order) in. */
	bool below = c->win_lo > 0 && c->csize[j] < c->win_lo - 1e-12 * T;
	if (j < c->nt) {
		c->art[j] = below;
		glp_set_obj_coef(c->lp, col, below ? PL_CFG_ART : 1);
	} else if (below) {
		on = false;
	}
	const uint32_t *ty = c->ctype + (size_t)j * PL_MAX_S_CFG;
	for (uint32_t z = 0; on && z < c->clen_of[j]; z++) {
		on = !c->off[ty[z]];
	}
	if (!on) {
		glp_set_col_bnds(c->lp, col, GLP_FX, 0, 0);
	} else if (c->cub[j] == (double)INFINITY) {
		glp_set_col_bnds(c->lp, col, GLP_LO, c->clb[j], 0);
	} else if (c->cub[j] > c->clb[j]) {
		glp_set_col_bnds(c->lp, col, GLP_DB, c->clb[j], c->cub[j]);
	} else {
		glp_set_col_bnds(c->lp, col, GLP_FX, c->clb[j], c->clb[j]);
	}
}

/* Whether the restricted LP's solution uses a singleton below the window. */
static bool art_in_use(const struct cfg *c)
{
	for (uint32_t j = 0; j < c->nt && j < c->nc; j++) {
		if (c->art[j] && glp_get_col_prim(c->lp, (int)(c->nt + j) + 1) > 1e-9) {
			return true;
		}
	}
	return false;
}

/* Column generation at target T until the certificate proves T, the LP
 * is shown feasible, or the budget ends. */
static enum cfg_res solve_at(struct cfg *c, double T, uint64_t *budget, double deadline,
			     bool verbose, struct pl_work *work, uint32_t *tmp)
{
	const struct pl_prob *prob = c->prob;
	uint32_t E = prob->E;
	double G = prob->G;
	/* The window's lower end (top of the file), less a margin far above
	 * the rounding error of the sums: a lower win_lo only admits more
	 * configurations, which keeps every argument valid. */
	c->win_lo = c->window ? prob->sum - (G - 1) * T - 1e-9 * prob->sum : -1;
	/* Types and configurations larger than T (or forbidden) are out. */
	for (uint32_t t = 0; t < c->nt; t++) {
		if (type_on(c, t, T)) {
			glp_set_col_bnds(c->lp, (int)t + 1, GLP_LO, 0, 0);
		} else {
			glp_set_col_bnds(c->lp, (int)t + 1, GLP_FX, 0, 0);
		}
	}
	for (uint32_t j = 0; j < c->nc; j++) {
		set_col_bounds(c, j, T);
	}
	/* Every expert needs a type within T. */
	for (uint32_t e = 0; e < E; e++) {
		bool any = false;
		for (uint32_t t = c->first[e]; t < c->first[e + 1]; t++) {
			if (type_on(c, t, T)) {
				any = true;
			}
		}
		if (!any) {
			return CFG_PROVEN;
		}
	}
	for (;;) {
		if (*budget == 0) {
			return CFG_LIMIT;
		}
		if (pl_timed_out(work, deadline)) {
			return CFG_LIMIT;
		}
		glp_smcp parm;
		glp_init_smcp(&parm);
		parm.msg_lev = verbose ? GLP_MSG_ON : GLP_MSG_OFF;
		parm.it_lim = *budget > INT_MAX ? INT_MAX : (int)*budget;
		double ms = deadline < (double)INFINITY ? (deadline - pl_now()) * 1000.0 : 2e9;
		parm.tm_lim = ms > 2e9 ? INT_MAX : ms < 1 ? 1 : (int)ms;
		int it0 = glp_get_it_cnt(c->lp);
		int ret = glp_simplex(c->lp, &parm);
		int used = glp_get_it_cnt(c->lp) - it0;
		*budget -= (uint64_t)used < *budget ? (uint64_t)used : *budget;
		if (ret == GLP_ETMLIM) {
			work->timed_out = true;
			return CFG_LIMIT;
		}
		if (ret == GLP_EITLIM) {
			*budget = 0;
			return CFG_LIMIT;
		}
		if (ret == 0 && glp_get_status(c->lp) == GLP_NOFEAS) {
			return CFG_OVER; /* the dive's fixings admit no solution */
		}
		if (ret != 0 || glp_get_status(c->lp) != GLP_OPT) {
			return CFG_ERROR;
		}
		bool art = art_in_use(c);
		if (!c->converge && !art && glp_get_obj_val(c->lp) <= G * (1 + 1e-9)) {
			return CFG_FEASIBLE; /* a restriction of the LP already fits */
		}
		for (uint32_t t = 0; t < c->nt; t++) {
			double d = glp_get_row_dual(c->lp, (int)t + 1);
			c->pi[t] = d > 0 && type_on(c, t, T) ? d : 0;
		}
		double tau = glp_get_row_dual(c->lp, (int)(c->nt + E) + 1);
		uint64_t n0 = c->nodes;
		double P = price(c, T, tmp);
		uint64_t units = (c->nodes - n0) / PL_CFG_NODES_PER_UNIT + 1;
		*budget -= units < *budget ? units : *budget;
		/* Farley's certificate (see the top of the file). */
		double dual = tau * prob->N;
		for (uint32_t e = 0; e < E; e++) {
			double m = (double)INFINITY;
			for (uint32_t t = c->first[e]; t < c->first[e + 1]; t++) {
				if (type_on(c, t, T)) {
					double v = c->tk[t] * (c->pi[t] - tau);
					if (v < m) {
						m = v;
					}
				}
			}
			dual += m;
		}
		if (P > 0 && dual > 0 && dual / P > G * (1 + 1e-7)) {
			return CFG_PROVEN;
		}
		if (c->ncols == 0) {
			/* converged: without a proof (bound), or at the optimum (dive) */
			return !art && glp_get_obj_val(c->lp) <= G * (1 + 1e-9) ? CFG_FEASIBLE : CFG_OVER;
		}
		for (uint32_t q = 0; q < c->ncols; q++) {
			if (add_config(c, c->cols[q], c->clen[q]) != 0) {
				return CFG_ERROR;
			}
		}
	}
}

/* The LP's rows, the y columns, singleton configurations and the
 * incumbent's GPU contents, in c->lp. 0 or -1 (memory). */
static int lp_build(struct cfg *c, const struct pl_sol *inc)
{
	const uint32_t *kmin = c->kmin;
	const struct pl_prob *prob = c->prob;
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t nt = c->nt;
	glp_prob *lp = c->lp;
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_rows(lp, (int)(nt + E + 1));
	for (uint32_t q = 0; q < nt; q++) {
		glp_set_row_bnds(lp, (int)q + 1, GLP_LO, 0, 0);
	}
	for (uint32_t e = 0; e < E; e++) {
		glp_set_row_bnds(lp, (int)(nt + e) + 1, GLP_FX, 1, 1);
	}
	glp_set_row_bnds(lp, (int)(nt + E) + 1, GLP_FX, prob->N, prob->N);
	glp_add_cols(lp, (int)nt);
	for (uint32_t q = 0; q < nt; q++) {
		int col = (int)q + 1;
		pl_trip_add(&c->col, (int)q + 1, col, -(double)c->tk[q]);
		pl_trip_add(&c->col, (int)(nt + c->te[q]) + 1, col, 1);
		pl_trip_add(&c->col, (int)(nt + E) + 1, col, c->tk[q]);
		if (!pl_trip_set_col(lp, col, &c->col)) {
			return -1;
		}
	}
	/* Singletons keep every restricted LP feasible; the incumbent's GPU
	 * contents give a start near the answer. */
	for (uint32_t q = 0; q < nt; q++) {
		if (add_config(c, &q, 1) != 0) {
			return -1;
		}
	}
	for (uint32_t g = 0; g < G; g++) {
		uint32_t ty[PL_MAX_S_CFG];
		uint32_t n = 0;
		for (uint32_t s = 0; s < S; s++) {
			uint32_t e = inc->slot[g * S + s];
			uint32_t k = inc->r[e];
			if (k >= kmin[e] && k - kmin[e] < c->first[e + 1] - c->first[e]) {
				ty[n++] = c->first[e] + (k - kmin[e]);
			}
		}
		if (add_config(c, ty, n) != 0) {
			return -1;
		}
	}
	return 0;
}

/* Fix expert e's replica count to type t's (every other type of e is
 * forbidden). */
static void fix_type(struct cfg *c, uint32_t t)
{
	uint32_t e = c->te[t];
	for (uint32_t u = c->first[e]; u < c->first[e + 1]; u++) {
		c->off[u] = u != t;
	}
}

/* The expert's type with the largest y (ties: lowest index) and that y. */
static uint32_t top_type(const struct cfg *c, uint32_t e, double *y_out)
{
	uint32_t best = c->first[e];
	double by = -1;
	for (uint32_t t = c->first[e]; t < c->first[e + 1]; t++) {
		double y = glp_get_col_prim(c->lp, (int)t + 1);
		if (y > by + 1e-12) {
			by = y;
			best = t;
		}
	}
	*y_out = by;
	return best;
}

/* Turns an integral LP solution into a plan: each committed configuration
 * becomes a GPU; an expert's replica count is the number of its items
 * (at least the fixed count, so items only get smaller); slots left empty
 * (the dive's LP allows fewer than N replicas) get one more replica of the
 * expert whose new item is smallest among those not on that GPU. False
 * when the result is not a valid plan. */
static bool extract(struct cfg *c, struct pl_sol *out)
{
	const struct pl_prob *prob = c->prob;
	uint32_t S = prob->S;
	uint32_t G = prob->G;
	uint32_t E = prob->E;
	uint32_t g = 0;
	uint32_t empty = UINT32_MAX;
	memset(out->r, 0, sizeof(*out->r) * E);
	for (uint32_t p = 0; p < prob->N; p++) {
		out->slot[p] = empty;
	}
	for (uint32_t j = 0; j < c->nc; j++) {
		double x = glp_get_col_prim(c->lp, (int)(c->nt + j) + 1);
		uint32_t n = (uint32_t)floor(x + 0.5);
		for (uint32_t q = 0; q < n; q++) {
			if (g >= G) {
				return false;
			}
			for (uint32_t z = 0; z < c->clen_of[j]; z++) {
				uint32_t t = c->ctype[(size_t)j * PL_MAX_S_CFG + z];
				out->slot[g * S + z] = c->te[t];
				out->r[c->te[t]]++;
			}
			g++;
		}
	}
	for (uint32_t e = 0; e < E; e++) {
		if (out->r[e] == 0) {
			return false;
		}
	}
	for (uint32_t p = 0; p < prob->N; p++) {
		if (out->slot[p] != empty) {
			continue;
		}
		uint32_t h = p / S;
		uint32_t best = empty;
		double bs = (double)INFINITY;
		for (uint32_t e = 0; e < E; e++) {
			if (out->r[e] >= G) {
				continue;
			}
			bool on = false;
			for (uint32_t s = 0; s < S; s++) {
				on = on || out->slot[h * S + s] == e;
			}
			double size = prob->w[e] / (out->r[e] + 1);
			if (!on && size < bs) {
				bs = size;
				best = e;
			}
		}
		if (best == empty) {
			return false;
		}
		out->slot[p] = best;
		out->r[best]++;
	}
	pl_sol_eval(out, prob);
	return pl_sol_no_dup(out, prob);
}

/* Re-solve after a change; true when the LP still fits in G GPUs. */
static bool dive_solve(struct cfg *c, double T, uint64_t *budget, double deadline, bool verbose,
		       struct pl_work *work)
{
	enum cfg_res r = solve_at(c, T, budget, deadline, verbose, work, c->tmp);
	return r == CFG_FEASIBLE;
}

/* LP diving (the primal heuristic of branch-and-price codes: Sadykov,
 * Vanderbeck, Pessoa, Tahiri and Uchoa, "Primal heuristics for
 * branch-and-price: the assets of diving methods", INFORMS J. Computing
 * 31(2), 2019). The dive's LP allows at most N replicas (extract() fills
 * the slots left over). At its optimum for target T: fix every replica
 * count whose y is integral, then the one with the largest fractional y;
 * once all counts are fixed, commit the configurations' integral parts
 * and round up one fractional column (the most fractional, or the largest
 * with rule 1) together with every column at least 0.75 above its
 * commitment. Re-solve with new columns after each change; a change that
 * leaves the LP above G GPUs is undone (the bulk first, then the single
 * change, whose opposite is taken: the type forbidden, the column rounded
 * down); a failure of that ends the dive. Fills out and sets c->dive_ok on
 * success (a valid plan with max <= T). */
static void dive_loop(struct cfg *c, double T, uint64_t *budget, double deadline, bool verbose,
		      struct pl_work *work, struct pl_sol *out)
{
	const struct pl_prob *prob = c->prob;
	uint32_t E = prob->E;
	c->converge = true;
	/* At most N replicas: a plan with fewer is completed by extract(). */
	glp_set_row_bnds(c->lp, (int)(c->nt + E) + 1, GLP_UP, 0, prob->N);
	if (!dive_solve(c, T, budget, deadline, verbose, work)) {
		return;
	}
	/* After the first LP optimum, a re-solve stops as soon as the
	 * restricted LP fits in G GPUs (fewer GLPK calls). */
	c->converge = false;
	for (uint32_t step = 0; step < 4 * (E + prob->N); step++) {
		/* Counts first. */
		uint32_t pick = UINT32_MAX;
		double pick_y = -1;
		for (uint32_t e = 0; e < E; e++) {
			double y;
			uint32_t t = top_type(c, e, &y);
			if (y >= 1 - 1e-7) {
				fix_type(c, t);
			} else if (y > pick_y) {
				pick_y = y;
				pick = t;
			}
		}
		if (pick != UINT32_MAX) {
			uint32_t e = c->te[pick];
			uint8_t *save = c->off + c->first[e];
			uint32_t n = c->first[e + 1] - c->first[e];
			uint8_t keep[256];
			bool small = n <= sizeof(keep);
			if (small) {
				memcpy(keep, save, n);
			}
			fix_type(c, pick);
			if (dive_solve(c, T, budget, deadline, verbose, work)) {
				continue;
			}
			if (!small) {
				return;
			}
			memcpy(save, keep, n);
			c->off[pick] = 1;
			if (!dive_solve(c, T, budget, deadline, verbose, work)) {
				return;
			}
			continue;
		}
		/* Then the configurations. */
		uint32_t jp = UINT32_MAX;
		double best_frac = 0;
		for (uint32_t j = 0; j < c->nc; j++) {
			double x = glp_get_col_prim(c->lp, (int)(c->nt + j) + 1);
			double fl = floor(x + 1e-7);
			if (fl > c->clb[j]) {
				c->clb[j] = fl;
			}
			double frac = x - fl;
			double key = c->rule == 0 ? frac : x;
			if (frac > 1e-7 && key > best_frac) {
				best_frac = key;
				jp = j;
			}
		}
		if (jp == UINT32_MAX) {
			if (extract(c, out) && out->max <= T * (1 + 1e-12)) {
				c->dive_ok = true;
			}
			return;
		}
		/* Round up, with jp, every column that is nearly integral (up to
		 * PL_CFG_BULK of them); if the LP no longer fits, jp alone. */
		uint32_t bulk[PL_CFG_BULK];
		uint32_t nb = 0;
		for (uint32_t j = 0; j < c->nc && nb < PL_CFG_BULK; j++) {
			double xj = glp_get_col_prim(c->lp, (int)(c->nt + j) + 1);
			if (j != jp && xj - c->clb[j] >= 0.75 && xj - c->clb[j] < 1) {
				bulk[nb++] = j;
			}
		}
		double x = glp_get_col_prim(c->lp, (int)(c->nt + jp) + 1);
		c->clb[jp] = ceil(x);
		if (nb > 0) {
			for (uint32_t q = 0; q < nb; q++) {
				c->clb[bulk[q]] += 1;
			}
			if (dive_solve(c, T, budget, deadline, verbose, work)) {
				continue;
			}
			for (uint32_t q = 0; q < nb; q++) {
				c->clb[bulk[q]] -= 1;
			}
		}
		if (dive_solve(c, T, budget, deadline, verbose, work)) {
			continue;
		}
		c->clb[jp] = floor(x);
		c->cub[jp] = floor(x);
		if (!dive_solve(c, T, budget, deadline, verbose, work)) {
			return;
		}
	}
}

/* One search of pl_cfg_close: the LP (c) and the arguments. */
struct cfg_search {
	struct cfg *c;
	const struct pl_sol *inc;
	double want;
	double goal;
	uint64_t budget;
	double deadline;
	bool verbose;
	struct pl_work *work;
	struct pl_sol *plan;
};

/* The LP back to bound mode after dives: no fixings, N replicas. */
static void reset_fixings(struct cfg *c)
{
	memset(c->off, 0, sizeof(*c->off) * c->nt);
	for (uint32_t j = 0; j < c->nc; j++) {
		c->clb[j] = 0;
		c->cub[j] = (double)INFINITY;
	}
}

/* Look for a plan within goal of the bound, by dives with either rounding
 * rule at the target and at targets 1e-4 lower; each starts from the LP
 * without the previous dive's fixings (its columns stay). */
static void cfg_dives(struct cfg_search *s)
{
	struct cfg *c = s->c;
	for (uint32_t d = 0; d < PL_CFG_DIVES && !c->dive_ok; d++) {
		double T = c->bound * s->goal * (1 - 1e-4 * (d / 2));
		if (!(T < s->inc->max) || s->budget == 0 || pl_timed_out(s->work, s->deadline)) {
			break;
		}
		reset_fixings(c);
		c->rule = d % 2;
		dive_loop(c, T, &s->budget, s->deadline, s->verbose, s->work, s->plan);
	}
}

/* After the search without the window: with it (top of the file), dives
 * when the others found no plan, then a bisection between the bound and
 * the best plan (PL_CFG_BISECT steps) for a higher bound, which also tells
 * how much of a gap the LP leaves to the plan. Uses what is left of the
 * budget, so the search before it is unchanged. */
static void cfg_window(struct cfg_search *s, bool dive)
{
	struct cfg *c = s->c;
	c->window = true;
	if (dive && !c->dive_ok) {
		cfg_dives(s);
	}
	reset_fixings(c);
	c->converge = false;
	glp_set_row_bnds(c->lp, (int)(c->nt + c->prob->E) + 1, GLP_FX, c->prob->N, c->prob->N);
	double hi = c->dive_ok && s->plan->max < s->inc->max ? s->plan->max : s->inc->max;
	double step_min = 2e-5 * c->prob->mean;
	for (int it = 0; it < PL_CFG_BISECT && hi - c->bound > step_min; it++) {
		if (s->budget == 0 || pl_timed_out(s->work, s->deadline)) {
			break;
		}
		double mid = c->bound + 0.5 * (hi - c->bound);
		enum cfg_res r = solve_at(c, mid, &s->budget, s->deadline, s->verbose, s->work,
					  c->tmp);
		if (r == CFG_PROVEN) {
			c->bound = mid;
		} else if (r == CFG_FEASIBLE || r == CFG_OVER) {
			hi = mid;
		} else {
			break;
		}
	}
}

/* The best bound the budget allows: the target first; if the LP fits
 * there, bisect below it, then dive for a plan; then cfg_window. Results
 * in c->bound, c->lp_feasible and c->dive_ok. */
static void cfg_bound(struct cfg_search *s)
{
	struct cfg *c = s->c;
	enum cfg_res r = solve_at(c, s->want, &s->budget, s->deadline, s->verbose, s->work, c->tmp);
	if (r == CFG_PROVEN) {
		c->bound = s->want;
		cfg_window(s, false);
		return;
	}
	if (r != CFG_FEASIBLE && r != CFG_OVER) {
		return;
	}
	c->lp_feasible = s->want;
	double step_min = 2e-5 * c->prob->mean;
	for (int it = 0; it < PL_CFG_BISECT && c->lp_feasible - c->bound > step_min; it++) {
		/* The first step a quarter up: the LP's bound is usually close
		 * to the mean, and a T where the LP fits costs the most. */
		double mid = c->bound + (it == 0 ? 0.25 : 0.5) * (c->lp_feasible - c->bound);
		r = solve_at(c, mid, &s->budget, s->deadline, s->verbose, s->work, c->tmp);
		if (r == CFG_PROVEN) {
			c->bound = mid;
		} else if (r == CFG_FEASIBLE || r == CFG_OVER) {
			c->lp_feasible = mid;
		} else {
			break;
		}
	}
	cfg_dives(s);
	cfg_window(s, true);
}

/* pl_glpk_run's model: builds the LP in lp and runs the search; results
 * in c->bound, c->lp_feasible and c->dive_ok (memory, so that a GLPK
 * error loses none of them). */
static int cfg_model(glp_prob *lp, void *ctx)
{
	struct cfg_search *s = ctx;
	s->c->lp = lp;
	if (lp_build(s->c, s->inc) == 0) {
		cfg_bound(s);
	}
	return 0;
}

static void cfg_free(struct cfg *c)
{
	free(c->kmin);
	free(c->tmp);
	free(c->te);
	free(c->tk);
	free(c->ts);
	free(c->first);
	free(c->off);
	free(c->csize);
	free(c->ctype);
	free(c->clen_of);
	free(c->clb);
	free(c->cub);
	free(c->pi);
	free(c->pos);
	free(c->bysize);
	free(c->top);
	free(c->byall);
	free(c->art);
	pl_trip_free(&c->col);
}

/* The types for targets up to T_hi (see the top of the file); 0, or -1
 * when the LP is out of reach (too many types, S too large, memory). */
static int cfg_init(struct cfg *c, const struct pl_prob *prob, double T_hi)
{
	uint32_t E = prob->E;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t N = prob->N;
	memset(c, 0, sizeof(*c));
	c->prob = prob;
	if (S > PL_MAX_S_CFG || E == 0 || N == 0) {
		return -1;
	}
	c->kmin = malloc(sizeof(*c->kmin) * E);
	if (!c->kmin) {
		return -1;
	}
	uint64_t base = 0;
	for (uint32_t e = 0; e < E; e++) {
		c->kmin[e] = kmin_of(prob->w[e], T_hi, G);
		base += c->kmin[e];
	}
	if (base > N) {
		return -1;
	}
	uint32_t spare = (uint32_t)(N - base);
	uint64_t nt = 0;
	for (uint32_t e = 0; e < E; e++) {
		uint32_t kmax = c->kmin[e] + spare < G ? c->kmin[e] + spare : G;
		nt += kmax >= c->kmin[e] ? kmax - c->kmin[e] + 1 : 0;
	}
	if (nt == 0 || nt > PL_CFG_MAX_TYPES) {
		return -1;
	}
	c->nt = (uint32_t)nt;
	c->te = calloc(nt, sizeof(*c->te));
	c->tk = calloc(nt, sizeof(*c->tk));
	c->ts = calloc(nt, sizeof(*c->ts));
	c->first = malloc(sizeof(*c->first) * (E + 1));
	c->off = calloc(nt, sizeof(*c->off));
	c->pi = calloc(nt, sizeof(*c->pi));
	c->pos = malloc(sizeof(*c->pos) * nt);
	c->bysize = malloc(sizeof(*c->bysize) * nt);
	c->top = malloc(sizeof(*c->top) * nt * S);
	c->tmp = malloc(sizeof(*c->tmp) * nt);
	c->byall = malloc(sizeof(*c->byall) * nt);
	c->art = calloc(nt, sizeof(*c->art));
	if (!c->te || !c->tk || !c->ts || !c->first || !c->off || !c->pi || !c->pos || !c->bysize
	    || !c->top || !c->tmp || !c->byall || !c->art) {
		return -1;
	}
	uint32_t t = 0;
	for (uint32_t e = 0; e < E; e++) {
		c->first[e] = t;
		uint32_t kmax = c->kmin[e] + spare < G ? c->kmin[e] + spare : G;
		for (uint32_t k = c->kmin[e]; k <= kmax; k++) {
			c->te[t] = e;
			c->tk[t] = k;
			c->ts[t] = prob->w[e] / k;
			t++;
		}
	}
	c->first[E] = t;
	return 0;
}

double pl_cfg_close(const struct pl_prob *prob, const struct pl_sol *inc, double lo, double goal,
		    uint64_t budget, double deadline, bool verbose, struct pl_work *work,
		    struct pl_sol *plan, bool *found)
{
	/* The first T tried: a fifth below what the goal needs, for a margin;
	 * when the LP fits there it fits at max / goal too (its minimum only
	 * falls as T grows), so nothing is lost. */
	double want = inc->max / (1 + 0.8 * (goal - 1));
	*found = false;
	if (!(want > lo) || !(goal > 1)) {
		return lo;
	}
	struct cfg c;
	double bound = lo;
	if (cfg_init(&c, prob, inc->max) == 0) {
		c.bound = lo;
		c.lp_feasible = inc->max;
		struct cfg_search s = {
			.c = &c, .inc = inc, .want = want, .goal = goal, .budget = budget,
			.deadline = deadline, .verbose = verbose, .work = work, .plan = plan,
		};
		pl_glpk_run(verbose, cfg_model, &s, -1);
		c.lp = NULL;
		bound = c.bound;
		*found = c.dive_ok && plan->max < inc->max;
	}
	cfg_free(&c);
	return bound;
}

/* Configuration-LP work per layer (simplex iterations, plus pricing steps
 * / PL_CFG_NODES_PER_UNIT), times effort. The switch128 EP64 layers use
 * 20,000 to 60,000. */
#define PL_CFG_WORK 400000u

static const char M_CFG_BOUND[] = "heuristic; bound by the glpk configuration lp";
static const char M_CFG_PLAN[] = "plan by lp diving in the glpk configuration lp";
static const char M_CFG_BOTH[] = "glpk configuration lp: bound, and plan by lp diving";

int pl_close_gap(const struct pl_prob *prob, struct pl_sol *best, double *lb, double effort,
		 bool verbose, double deadline, struct pl_work *work, const char **method)
{
	double goal = 1 + PL_GAP_GOAL - 1e-7;
	double units = floor(PL_CFG_WORK * effort);
	struct pl_sol plan = { 0 };
	if (pl_sol_alloc(&plan, prob) != 0) {
		return MP_ENOMEM;
	}
	bool found = false;
	double b = pl_cfg_close(prob, best, *lb, goal, units < 1 ? 1 : (uint64_t)units, deadline,
				verbose, work, &plan, &found);
	if (b > *lb) {
		*lb = b;
		*method = M_CFG_BOUND;
	}
	if (found) {
		pl_sol_copy(best, &plan, prob);
		pl_sol_eval(best, prob);
		*method = *method == M_CFG_BOUND ? M_CFG_BOTH : M_CFG_PLAN;
	}
	pl_sol_free(&plan);
	return 0;
}

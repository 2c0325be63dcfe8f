/* Re-planning (moeplan/replan.h): the move-limited local search, the
 * relabelled from-scratch plan, the budget split over layers and the GLPK
 * MIP with a move budget.
 *
 * GLPK MIP of one layer (variable replica counts, even split):
 *   z[e][g][r] = 1: expert e has r replicas and one of them is on GPU g
 *   y[e][r]    = 1: expert e has r replicas           (r = 1 .. R)
 *   min T                      (budget)   or   a T - b sum kept   (cost)
 *   sum_r y[e][r] = 1                               every expert placed
 *   sum_g z[e][g][r] = r y[e][r]                    r replicas when r chosen
 *   sum_{e,r} z[e][g][r] = S                        S slots per GPU
 *   sum_r z[e][g][r] <= 1                           one replica per GPU
 *   sum_{e,r} (w_e / r) z[e][g][r] <= T             busiest GPU
 *   kept = sum_g sum_{e on g before} sum_r z[e][g][r] >= N - M   (budget)
 *   lb <= T <= incumbent                            (budget)
 * A GPU's moves are S minus the experts it keeps, so N - kept is the
 * layer's moves (the slots of kept experts do not change).
 *
 * GLPK runs within counted work (the LP's simplex iteration limit, then
 * RP_MIP_WORK for branch and bound, counted in the iocp callback and
 * stopped with glp_ios_terminate), so its result depends only on the
 * instance; the time limit (tm_lim) is a safety net reported as
 * MP_PLACE_TIME_LIMIT.
 */
#include "moeplan/replan.h"
#include "placement/internal.h"

#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Largest MIP handed to GLPK (columns); beyond it the LP alone takes
 * seconds and the search rarely improves on the local search. */
#define RP_MIP_MAX_COLS 20000u
/* Layers with at most this many slots always get GLPK's branch and bound
 * (within its work budget), as the placement solver does for its packing
 * MIP: there the search often proves the optimum for the budget. Larger
 * layers get it only when the LP bound beats the from-scratch bound. */
#define RP_MIP_SMALL_SLOTS 32u
/* Simplex iteration limit of the root LP: this many times (rows + columns). */
#define RP_LP_ITS_PER_DIM 4u
/* Work budget of one layer's branch and bound, in simplex iterations times
 * constraint-matrix nonzeros (GLPK does about 2e7 per second here, node
 * overhead included): it gives the iteration limit (RP_MIP_WORK /
 * nonzeros) and the node limit (an eighth of that, at least
 * RP_MIP_MIN_NODES). Counted, not timed, so the result depends only on the
 * input and the options. */
#define RP_MIP_WORK 2e6
#define RP_MIP_MIN_NODES 64u
/* Relative tolerance: loads closer than this (times the mean) are equal. */
#define RP_REL_TOL 1e-9
/* Largest DP table (layers x total budget) for the budget split. */
#define RP_DP_MAX_CELLS (1u << 26)
/* Hungarian method up to this many GPUs; a greedy matching beyond. */
#define RP_HUNGARIAN_MAX_GPUS 512u

static const char M_NONE[] = "no moves: the current plan";
static const char M_NONE_ZERO[] = "no moves allotted: the current plan";
static const char M_NONE_BOUND[] = "no moves: the current plan, from-scratch bound met";
static const char M_ZERO[] = "all loads are zero";
static const char M_LS[] = "local search from the current plan";
static const char M_LS_BOUND[] = "local search from the current plan, from-scratch bound met";
static const char M_SCRATCH[] = "from-scratch plan, relabelled to keep experts in place";
static const char M_SCRATCH_BOUND[] =
	"from-scratch plan, relabelled to keep experts in place, bound met";
static const char M_MIP_OPT[] = "glpk mip with the move budget, optimal";
static const char M_MIP_IMPROVED_WORK[] =
	"glpk mip with the move budget, improved; its node budget ran out before a proof";
static const char M_MIP_IMPROVED_TL[] = "glpk mip with the move budget, improved, time limit";
/* What GLPK did when it did not change the plan, after the plan's origin
 * (local search or the relabelled from-scratch plan). */
enum mip_note {
	NOTE_WORK = 0,
	NOTE_TL,
	NOTE_PROVED,
	NOTE_LP_PROVED,
	NOTE_BIG,
	NOTE_WEAK,
	NOTE_LP_ITS,
	NOTE_DUP,
};
#define NOTE3(text)                                                                          \
	{"local search; " text, "from-scratch plan, relabelled; " text,                      \
	 "no moves: the current plan; " text}
static const char *const M_NOTES[][3] = {
	[NOTE_WORK] = NOTE3("glpk mip with the move budget: node budget spent, no better plan found"),
	[NOTE_TL] = NOTE3("glpk mip with the move budget, time limit"),
	[NOTE_PROVED] = NOTE3("glpk mip proved it optimal for the budget"),
	[NOTE_LP_PROVED] = NOTE3("glpk's LP bound proves it optimal for the budget"),
	[NOTE_BIG] = NOTE3("glpk skipped: layer too large for the mip"),
	[NOTE_WEAK] = NOTE3("glpk skipped: its LP bound is no better than the from-scratch bound"),
	[NOTE_LP_ITS] = NOTE3("glpk skipped: the LP hit its iteration budget"),
	[NOTE_DUP] = NOTE3("glpk skipped: the plan keeps two replicas of an expert on one GPU"),
};
#undef NOTE3
static const char M_KEPT[] = "kept: the gain was below --min-gain";

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* One layer's instance and the search state.                          */

struct rp {
	uint32_t E, G, S, N;
	const double *w;      /* [E] */
	const uint32_t *orig; /* [N] the current map */
	uint16_t *ocnt;       /* [G*E] copies of e on g in orig */
	double tol;
	double lb;            /* from-scratch lower bound */
};

struct rs {
	uint32_t *slot;  /* [N] */
	uint32_t *r;     /* [E] */
	uint16_t *cnt;   /* [G*E] */
	double *load;    /* [G] */
	uint32_t *order; /* [G] GPUs by load, descending (ties: lower index first) */
	uint32_t *next;  /* [N] next slot of the same expert, UINT32_MAX = end */
	uint32_t *head;  /* [E] first slot of each expert */
	uint32_t moves;
	double max;
};

/* Scratch for candidate evaluation. */
struct rw {
	uint32_t *stamp;  /* [G] */
	uint32_t mark;
	double *delta;    /* [G] */
	uint32_t *chg;    /* [G] changed GPUs */
	uint32_t *estamp; /* [E] */
	uint32_t emark;
	uint64_t evals;   /* candidate moves evaluated by the current local search */
	double deadline;  /* the wall-clock safety net of the current layer */
	bool timed_out;   /* it fired during a local search */
};

/* Candidate moves one local search may evaluate (counted work, so the
 * result does not depend on the machine): above what layers of a few
 * hundred slots use (at most 4N steps of about S(E + 2N) candidates: 6e6
 * for 256 experts on 64 GPUs x 5), and about 7 s of search on a layer of
 * 1,024 GPUs x 4 slots, which would otherwise run for many minutes. */
#define RP_LS_MAX_EVALS 10000000u

static void rs_free(struct rs *st)
{
	free(st->slot);
	free(st->r);
	free(st->cnt);
	free(st->load);
	free(st->order);
	free(st->next);
	free(st->head);
	memset(st, 0, sizeof(*st));
}

static int rs_alloc(struct rs *st, const struct rp *pr)
{
	memset(st, 0, sizeof(*st));
	st->slot = calloc(pr->N, sizeof(*st->slot));
	st->r = calloc(pr->E, sizeof(*st->r));
	st->cnt = calloc((size_t)pr->G * pr->E, sizeof(*st->cnt));
	st->load = calloc(pr->G, sizeof(*st->load));
	st->order = calloc(pr->G, sizeof(*st->order));
	st->next = calloc(pr->N, sizeof(*st->next));
	st->head = calloc(pr->E, sizeof(*st->head));
	if (!st->slot || !st->r || !st->cnt || !st->load || !st->order || !st->next || !st->head) {
		rs_free(st);
		return MP_ENOMEM;
	}
	return 0;
}

static inline uint16_t *cnt_at(uint16_t *c, const struct rp *pr, uint32_t g, uint32_t e)
{
	return &c[(size_t)g * pr->E + e];
}

static inline uint16_t cnt_get(const uint16_t *c, const struct rp *pr, uint32_t g, uint32_t e)
{
	return c[(size_t)g * pr->E + e];
}

static inline double share(const struct rp *pr, uint32_t e, uint32_t r)
{
	return r ? pr->w[e] / (double)r : 0.0;
}

static void rs_sort(struct rs *st, const struct rp *pr)
{
	/* insertion sort: G is small and the order changes little per step */
	uint32_t G = pr->G;
	for (uint32_t i = 1; i < G; i++) {
		uint32_t g = st->order[i];
		uint32_t j = i;
		while (j > 0) {
			uint32_t h = st->order[j - 1];
			if (st->load[h] > st->load[g] || (st->load[h] == st->load[g] && h < g)) {
				break;
			}
			st->order[j] = h;
			j--;
		}
		st->order[j] = g;
	}
	st->max = G ? st->load[st->order[0]] : 0.0;
}

/* Loads from scratch (exact, no drift). */
static void rs_eval(struct rs *st, const struct rp *pr)
{
	for (uint32_t g = 0; g < pr->G; g++) {
		st->load[g] = 0;
	}
	for (uint32_t p = 0; p < pr->N; p++) {
		uint32_t e = st->slot[p];
		st->load[p / pr->S] += share(pr, e, st->r[e]);
	}
	rs_sort(st, pr);
}

static void rs_link(struct rs *st, uint32_t p, uint32_t e)
{
	st->next[p] = st->head[e];
	st->head[e] = p;
}

static void rs_unlink(struct rs *st, uint32_t p, uint32_t e)
{
	uint32_t *at = &st->head[e];
	while (*at != UINT32_MAX && *at != p) {
		at = &st->next[*at];
	}
	if (*at == p) {
		*at = st->next[p];
	}
	st->next[p] = UINT32_MAX;
}

/* Moves added when GPU g loses one copy of e and gains one of f (counts
 * before the change): a kept copy lost costs one, a lost copy regained
 * saves one. */
static int move_delta(const struct rs *st, const struct rp *pr, uint32_t g, uint32_t e, uint32_t f)
{
	int d = 0;
	if (cnt_get(st->cnt, pr, g, e) <= cnt_get(pr->ocnt, pr, g, e)) {
		d++;
	}
	if (cnt_get(st->cnt, pr, g, f) < cnt_get(pr->ocnt, pr, g, f)) {
		d--;
	}
	return d;
}

/* Set slot p to expert f (structure only; call rs_eval after). */
static void rs_set(struct rs *st, const struct rp *pr, uint32_t p, uint32_t f)
{
	uint32_t e = st->slot[p];
	uint32_t g = p / pr->S;
	if (e == f) {
		return;
	}
	int d = move_delta(st, pr, g, e, f);
	st->moves = (uint32_t)((int64_t)st->moves + d);
	rs_unlink(st, p, e);
	rs_link(st, p, f);
	st->r[e]--;
	st->r[f]++;
	(*cnt_at(st->cnt, pr, g, e))--;
	(*cnt_at(st->cnt, pr, g, f))++;
	st->slot[p] = f;
}

static void rs_load_map(struct rs *st, const struct rp *pr, const uint32_t *map)
{
	memset(st->r, 0, sizeof(*st->r) * pr->E);
	memset(st->cnt, 0, sizeof(*st->cnt) * (size_t)pr->G * pr->E);
	for (uint32_t e = 0; e < pr->E; e++) {
		st->head[e] = UINT32_MAX;
	}
	for (uint32_t g = 0; g < pr->G; g++) {
		st->order[g] = g;
	}
	for (uint32_t p = pr->N; p-- > 0;) {
		uint32_t e = map[p];
		st->slot[p] = e;
		st->r[e]++;
		(*cnt_at(st->cnt, pr, p / pr->S, e))++;
		rs_link(st, p, e);
	}
	/* moves = N - sum over GPUs of the multiset overlap with orig */
	uint64_t keep = 0;
	for (uint32_t g = 0; g < pr->G; g++) {
		for (uint32_t q = g * pr->S; q < (g + 1) * pr->S; q++) {
			uint32_t e = pr->orig[q];
			/* count each (g, e) once */
			bool first = true;
			for (uint32_t t = g * pr->S; t < q; t++) {
				if (pr->orig[t] == e) {
					first = false;
					break;
				}
			}
			if (first) {
				uint16_t a = cnt_get(st->cnt, pr, g, e);
				uint16_t b = cnt_get(pr->ocnt, pr, g, e);
				keep += a < b ? a : b;
			}
		}
	}
	st->moves = (uint32_t)(pr->N - keep);
	rs_eval(st, pr);
}

/* ------------------------------------------------------------------ */
/* Candidate evaluation.                                               */

/* The two largest loads when the GPUs in w->chg take new loads
 * (load + delta) and the others keep theirs. */
static void top2(const struct rs *st, const struct rp *pr, const struct rw *w, uint32_t nchg,
		 double *m1, double *m2)
{
	double a = -HUGE_VAL;
	double b = -HUGE_VAL;
	uint32_t found = 0;
	for (uint32_t i = 0; i < pr->G && found < 2; i++) {
		uint32_t g = st->order[i];
		if (w->stamp[g] == w->mark) {
			continue;
		}
		if (found == 0) {
			a = st->load[g];
		} else {
			b = st->load[g];
		}
		found++;
	}
	for (uint32_t i = 0; i < nchg; i++) {
		uint32_t g = w->chg[i];
		double v = st->load[g] + w->delta[g];
		if (v > a) {
			b = a;
			a = v;
		} else if (v > b) {
			b = v;
		}
	}
	*m1 = a;
	*m2 = b > -HUGE_VAL ? b : 0.0;
}

static inline void touch(struct rw *w, uint32_t g, uint32_t *nchg)
{
	if (w->stamp[g] != w->mark) {
		w->stamp[g] = w->mark;
		w->delta[g] = 0;
		w->chg[(*nchg)++] = g;
	}
}

static void next_mark(struct rw *w, uint32_t G)
{
	if (++w->mark == 0) {
		memset(w->stamp, 0, sizeof(*w->stamp) * G);
		w->mark = 1;
	}
}

/* Slot p (GPU g, expert e, r_e >= 2) re-assigned to f (not on g). */
static void eval_reassign(const struct rs *st, const struct rp *pr, struct rw *w, uint32_t p,
			  uint32_t f, double *m1, double *m2)
{
	uint32_t g = p / pr->S;
	uint32_t e = st->slot[p];
	uint32_t re = st->r[e];
	uint32_t rf = st->r[f];
	next_mark(w, pr->G);
	uint32_t nchg = 0;
	double de = share(pr, e, re - 1) - share(pr, e, re);
	for (uint32_t q = st->head[e]; q != UINT32_MAX; q = st->next[q]) {
		uint32_t h = q / pr->S;
		touch(w, h, &nchg);
		w->delta[h] += q == p ? -share(pr, e, re) : de;
	}
	double df = share(pr, f, rf + 1) - share(pr, f, rf);
	for (uint32_t q = st->head[f]; q != UINT32_MAX; q = st->next[q]) {
		uint32_t h = q / pr->S;
		touch(w, h, &nchg);
		w->delta[h] += df;
	}
	touch(w, g, &nchg);
	w->delta[g] += share(pr, f, rf + 1);
	top2(st, pr, w, nchg, m1, m2);
}

/* Slots p (GPU g, expert e) and q (GPU h, expert f) swap experts. */
static void eval_swap(const struct rs *st, const struct rp *pr, struct rw *w, uint32_t p,
		      uint32_t q, double *m1, double *m2)
{
	uint32_t g = p / pr->S;
	uint32_t h = q / pr->S;
	uint32_t e = st->slot[p];
	uint32_t f = st->slot[q];
	double d = share(pr, f, st->r[f]) - share(pr, e, st->r[e]);
	next_mark(w, pr->G);
	uint32_t nchg = 0;
	touch(w, g, &nchg);
	touch(w, h, &nchg);
	w->delta[g] = d;
	w->delta[h] = -d;
	top2(st, pr, w, nchg, m1, m2);
}

/* ------------------------------------------------------------------ */
/* Local search.                                                       */

struct step {
	uint32_t p, f;   /* slot p gets expert f */
	uint32_t q, e;   /* and, for a swap, slot q gets e (q = UINT32_MAX: none) */
	uint32_t moves;  /* after the step */
	double max;      /* after the step */
};

struct traj {
	struct step *steps;
	size_t n, cap;
};

static void traj_free(struct traj *t)
{
	free(t->steps);
	memset(t, 0, sizeof(*t));
}

static int traj_push(struct traj *t, struct step s)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct step *n = realloc(t->steps, cap * sizeof(*n));
		if (!n) {
			return MP_ENOMEM;
		}
		t->steps = n;
		t->cap = cap;
	}
	t->steps[t->n++] = s;
	return 0;
}

struct best {
	bool found;
	int tier;         /* 0: no extra moves; 1: costs moves */
	double k1, k2;    /* gain in max, in second max (per move in tier 1) */
	int dm;
	struct step s;
};

static void consider(struct best *b, const struct rs *st, const struct rp *pr, double m1, double m2,
		     int dm, uint32_t budget, struct step s, double cur1, double cur2)
{
	if ((int64_t)st->moves + dm > (int64_t)budget) {
		return;
	}
	double g1 = cur1 - m1;
	double g2 = cur2 - m2;
	if (g1 > pr->tol) {
		/* the busiest GPU gets lighter */
	} else if (g1 >= -pr->tol && g2 > pr->tol) {
		g1 = 0; /* same busiest load, lighter second */
	} else {
		return;
	}
	int c = dm > 0 ? dm : 0;
	int tier = c == 0 ? 0 : 1;
	double k1 = tier ? g1 / c : g1;
	double k2 = tier ? g2 / c : g2;
	bool better;
	if (!b->found) {
		better = true;
	} else if (tier != b->tier) {
		better = tier < b->tier;
	} else if (k1 > b->k1 * (1 + 1e-12) + pr->tol * 1e-3) {
		better = true;
	} else if (k1 < b->k1 * (1 - 1e-12) - pr->tol * 1e-3) {
		better = false;
	} else if (k2 > b->k2 * (1 + 1e-12) + pr->tol * 1e-3) {
		better = true;
	} else if (k2 < b->k2 * (1 - 1e-12) - pr->tol * 1e-3) {
		better = false;
	} else {
		better = dm < b->dm;
	}
	if (better) {
		*b = (struct best){.found = true, .tier = tier, .k1 = k1, .k2 = k2, .dm = dm, .s = s};
	}
}

static void apply_step(struct rs *st, const struct rp *pr, const struct step *s)
{
	if (s->q != UINT32_MAX) {
		rs_set(st, pr, s->p, s->f);
		rs_set(st, pr, s->q, s->e);
	} else {
		rs_set(st, pr, s->p, s->f);
	}
	rs_eval(st, pr);
}

/* Greedy descent from st's state with at most `budget` moves (counted from
 * orig), steps appended to t (t may be NULL). */
static int local_search(struct rs *st, const struct rp *pr, struct rw *w, uint32_t budget,
			struct traj *t)
{
	uint32_t S = pr->S;
	uint32_t G = pr->G;
	uint32_t E = pr->E;
	size_t max_steps = 4 * (size_t)pr->N + 16;
	w->evals = 0;
	for (size_t it = 0; it < max_steps; it++) {
		if (G < 2 || st->max <= pr->lb + pr->tol || w->evals >= RP_LS_MAX_EVALS) {
			break;
		}
		if (now_s() > w->deadline) {
			w->timed_out = true;
			break;
		}
		uint32_t m = st->order[0];
		double cur1 = st->load[m];
		double cur2 = st->load[st->order[1]];
		struct best b = {0};
		double m1;
		double m2;
		/* A: a slot of the busiest GPU goes to an expert it does not hold */
		for (uint32_t p = m * S; p < (m + 1) * S; p++) {
			uint32_t e = st->slot[p];
			if (st->r[e] < 2) {
				continue;
			}
			for (uint32_t f = 0; f < E; f++) {
				if (f == e || cnt_get(st->cnt, pr, m, f)) {
					continue;
				}
				eval_reassign(st, pr, w, p, f, &m1, &m2);
				w->evals++;
				struct step s = {.p = p, .f = f, .q = UINT32_MAX};
				consider(&b, st, pr, m1, m2, move_delta(st, pr, m, e, f), budget, s, cur1, cur2);
			}
		}
		/* B: an expert of the busiest GPU gains a replica elsewhere */
		if (++w->emark == 0) {
			memset(w->estamp, 0, sizeof(*w->estamp) * E);
			w->emark = 1;
		}
		for (uint32_t pm = m * S; pm < (m + 1) * S; pm++) {
			uint32_t f = st->slot[pm];
			if (w->estamp[f] == w->emark || pr->w[f] <= 0) {
				continue;
			}
			w->estamp[f] = w->emark;
			for (uint32_t p = 0; p < pr->N; p++) {
				uint32_t h = p / S;
				uint32_t e = st->slot[p];
				if (h == m || e == f || st->r[e] < 2 || cnt_get(st->cnt, pr, h, f)) {
					continue;
				}
				eval_reassign(st, pr, w, p, f, &m1, &m2);
				w->evals++;
				struct step s = {.p = p, .f = f, .q = UINT32_MAX};
				consider(&b, st, pr, m1, m2, move_delta(st, pr, h, e, f), budget, s, cur1, cur2);
			}
		}
		/* C: swap a slot of the busiest GPU with a slot elsewhere */
		for (uint32_t p = m * S; p < (m + 1) * S; p++) {
			uint32_t e = st->slot[p];
			for (uint32_t q = 0; q < pr->N; q++) {
				uint32_t h = q / S;
				uint32_t f = st->slot[q];
				if (h == m || f == e || cnt_get(st->cnt, pr, h, e) || cnt_get(st->cnt, pr, m, f)) {
					continue;
				}
				if (share(pr, f, st->r[f]) >= share(pr, e, st->r[e])) {
					continue; /* the busiest GPU would not get lighter */
				}
				eval_swap(st, pr, w, p, q, &m1, &m2);
				w->evals++;
				int dm = move_delta(st, pr, m, e, f) + move_delta(st, pr, h, f, e);
				struct step s = {.p = p, .f = f, .q = q, .e = e};
				consider(&b, st, pr, m1, m2, dm, budget, s, cur1, cur2);
			}
		}
		if (!b.found) {
			break;
		}
		apply_step(st, pr, &b.s);
		if (t) {
			b.s.moves = st->moves;
			b.s.max = st->max;
			int rc = traj_push(t, b.s);
			if (rc) {
				return rc;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Slot canonicalisation and the relabelled from-scratch plan.         */

/* Given the experts each GPU should hold (set[g*S .. g*S+S-1], any order),
 * write the map that keeps every staying expert in its old slot and puts
 * the arrivals into the freed slots (ascending expert id into ascending
 * slot). */
static void canonical_slots(const struct rp *pr, const uint32_t *set, uint32_t *out, unsigned char *used)
{
	uint32_t S = pr->S;
	for (uint32_t g = 0; g < pr->G; g++) {
		const uint32_t *want = set + (size_t)g * S;
		uint32_t *dst = out + (size_t)g * S;
		const uint32_t *old = pr->orig + (size_t)g * S;
		memset(used, 0, S);
		unsigned char *filled = used + S;
		memset(filled, 0, S);
		for (uint32_t i = 0; i < S; i++) {
			for (uint32_t j = 0; j < S; j++) {
				if (!used[j] && want[j] == old[i]) {
					used[j] = 1;
					filled[i] = 1;
					dst[i] = old[i];
					break;
				}
			}
		}
		/* arrivals, ascending expert id */
		for (uint32_t i = 0; i < S; i++) {
			if (filled[i]) {
				continue;
			}
			uint32_t pick = UINT32_MAX;
			for (uint32_t j = 0; j < S; j++) {
				if (!used[j] && (pick == UINT32_MAX || want[j] < want[pick])) {
					pick = j;
				}
			}
			used[pick] = 1;
			dst[i] = want[pick];
		}
	}
}

/* Hungarian method (Kuhn-Munkres, shortest augmenting paths with
 * potentials; O(n^3)) minimising cost[n][n]; assign[i] = column of row i. */
static int hungarian(const double *cost, uint32_t n, uint32_t *assign)
{
	double *u = calloc(n + 1, sizeof(*u));
	double *v = calloc(n + 1, sizeof(*v));
	double *minv = calloc(n + 1, sizeof(*minv));
	uint32_t *p = calloc(n + 1, sizeof(*p));
	uint32_t *way = calloc(n + 1, sizeof(*way));
	unsigned char *usedc = calloc(n + 1, 1);
	int rc = MP_ENOMEM;
	if (!u || !v || !minv || !p || !way || !usedc) {
		goto out;
	}
	for (uint32_t i = 1; i <= n; i++) {
		p[0] = i;
		uint32_t j0 = 0;
		for (uint32_t j = 0; j <= n; j++) {
			minv[j] = HUGE_VAL;
			usedc[j] = 0;
		}
		do {
			usedc[j0] = 1;
			uint32_t i0 = p[j0];
			double delta = HUGE_VAL;
			uint32_t j1 = 0;
			for (uint32_t j = 1; j <= n; j++) {
				if (usedc[j]) {
					continue;
				}
				double cur = cost[(size_t)(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (uint32_t j = 0; j <= n; j++) {
				if (usedc[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			uint32_t j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (uint32_t j = 1; j <= n; j++) {
		assign[p[j] - 1] = j - 1;
	}
	rc = 0;
out:
	free(u);
	free(v);
	free(minv);
	free(p);
	free(way);
	free(usedc);
	return rc;
}

/* overlap[h][g]: slots of new GPU h whose expert old GPU g held (as
 * multisets: a second copy on h counts only if g held two). */
static double overlap(const struct rp *pr, const uint32_t *map, uint32_t h, uint32_t g)
{
	uint32_t S = pr->S;
	double keep = 0;
	for (uint32_t i = h * S; i < (h + 1) * S; i++) {
		uint32_t e = map[i];
		uint32_t seen = 0;
		for (uint32_t j = h * S; j < i; j++) {
			seen += map[j] == e;
		}
		if (seen < cnt_get(pr->ocnt, pr, g, e)) {
			keep += 1;
		}
	}
	return keep;
}

/* Many GPUs: each new GPU in turn takes the free old GPU it overlaps most
 * (lowest index on ties, the lowest free GPU when it overlaps none). Only
 * old GPUs that hold one of its experts are looked at (an index from
 * expert to old GPUs), so time and memory grow with N, not G^2. */
static int relabel_greedy(const struct rp *pr, const uint32_t *map, uint32_t *assign)
{
	uint32_t G = pr->G;
	uint32_t S = pr->S;
	uint32_t E = pr->E;
	uint32_t N = pr->N;
	uint32_t *head = calloc((size_t)E + 1, sizeof(*head));
	uint32_t *list = malloc(sizeof(*list) * N);
	uint32_t *stamp = calloc(G, sizeof(*stamp));
	unsigned char *taken = calloc(G, 1);
	int rc = MP_ENOMEM;
	if (!head || !list || !stamp || !taken) {
		goto out;
	}
	for (uint32_t p = 0; p < N; p++) {
		head[pr->orig[p] + 1]++;
	}
	for (uint32_t e = 0; e < E; e++) {
		head[e + 1] += head[e];
	}
	for (uint32_t p = 0; p < N; p++) {
		/* slots in ascending order: each expert's GPUs come out sorted */
		uint32_t e = pr->orig[p];
		list[head[e]++] = p / S;
	}
	for (uint32_t e = E; e > 0; e--) {
		head[e] = head[e - 1];
	}
	head[0] = 0;
	uint32_t lowest_free = 0;
	for (uint32_t h = 0; h < G; h++) {
		uint32_t pick = UINT32_MAX;
		double best = 0;
		for (uint32_t i = h * S; i < (h + 1) * S; i++) {
			uint32_t e = map[i];
			for (uint32_t k = head[e]; k < head[e + 1]; k++) {
				uint32_t g = list[k];
				if (taken[g] || stamp[g] == h + 1) {
					continue;
				}
				stamp[g] = h + 1;
				double keep = overlap(pr, map, h, g);
				if (keep > best || (keep == best && keep > 0 && g < pick)) {
					best = keep;
					pick = g;
				}
			}
		}
		if (pick == UINT32_MAX) {
			while (taken[lowest_free]) {
				lowest_free++;
			}
			pick = lowest_free;
		}
		taken[pick] = 1;
		assign[h] = pick;
	}
	rc = 0;
out:
	free(head);
	free(list);
	free(stamp);
	free(taken);
	return rc;
}

/* Relabel the GPUs of a plan (map[N]) to keep as many experts in place as
 * possible, then canonicalise its slots: out[N]. Up to
 * RP_HUNGARIAN_MAX_GPUS GPUs the assignment is optimal (Hungarian method
 * on a G x G matrix); beyond, greedy over an expert index. */
static int relabel(const struct rp *pr, const uint32_t *map, uint32_t *out, unsigned char *used)
{
	uint32_t G = pr->G;
	uint32_t S = pr->S;
	double *cost = NULL;
	uint32_t *assign = malloc(sizeof(*assign) * G);
	uint32_t *set = malloc(sizeof(*set) * pr->N);
	int rc = MP_ENOMEM;
	if (!assign || !set) {
		goto out;
	}
	if (G <= RP_HUNGARIAN_MAX_GPUS) {
		cost = malloc(sizeof(*cost) * (size_t)G * G);
		if (!cost) {
			goto out;
		}
		for (uint32_t h = 0; h < G; h++) {
			for (uint32_t g = 0; g < G; g++) {
				cost[(size_t)h * G + g] = -overlap(pr, map, h, g);
			}
		}
		rc = hungarian(cost, G, assign);
	} else {
		rc = relabel_greedy(pr, map, assign);
	}
	if (rc) {
		goto out;
	}
	for (uint32_t h = 0; h < G; h++) {
		memcpy(set + (size_t)assign[h] * S, map + (size_t)h * S, sizeof(*set) * S);
	}
	canonical_slots(pr, set, out, used);
	rc = 0;
out:
	free(cost);
	free(assign);
	free(set);
	return rc;
}

/* ------------------------------------------------------------------ */
/* GLPK MIP.                                                           */

struct mip_cb {
	const double *seed; /* [ncols + 1] */
	bool seeded;
	double bound;       /* best node bound seen (objective units) */
	bool have_bound;
	int it_start;       /* simplex iterations before the search */
	int it_limit;       /* work budget: simplex iterations in the search */
	int node_limit;     /* work budget: subproblems created */
	bool spent;         /* a budget stopped the search (glp_ios_terminate) */
};

static void on_glpk_error(void *info)
{
	longjmp(*(jmp_buf *)info, 1);
}

static void mip_callback(glp_tree *tree, void *info)
{
	struct mip_cb *cb = info;
	if (glp_ios_reason(tree) == GLP_IHEUR && !cb->seeded) {
		cb->seeded = true;
		glp_ios_heur_sol(tree, cb->seed);
	}
	int p = glp_ios_best_node(tree);
	if (p != 0) {
		double b = glp_ios_node_bound(tree, p);
		if (!cb->have_bound || b > cb->bound) {
			cb->bound = b;
			cb->have_bound = true;
		}
	}
	/* deterministic work budgets: nodes created and simplex iterations,
	 * both counted by GLPK in the order its search runs */
	int nodes = 0;
	glp_ios_tree_size(tree, NULL, NULL, &nodes);
	int its = glp_get_it_cnt(glp_ios_get_prob(tree)) - cb->it_start;
	if (!cb->spent && (nodes > cb->node_limit || its > cb->it_limit)) {
		cb->spent = true;
		glp_ios_terminate(tree);
	}
}


enum mip_result {
	MIP_SKIPPED = 0,   /* too large, or nothing to gain */
	MIP_WEAK,          /* skipped: the LP bound is no better than the from-scratch bound */
	MIP_LP_ITS,        /* skipped: the root LP hit its iteration budget */
	MIP_LP_PROVED,     /* the LP bound meets the seed: optimal for the budget */
	MIP_NO_GAIN,       /* finished (proved): the seed is optimal for the budget */
	MIP_NO_GAIN_WORK,  /* work budget spent without a better plan */
	MIP_NO_GAIN_TL,    /* time limit without a better plan */
	MIP_IMPROVED,      /* a better plan, proved optimal */
	MIP_IMPROVED_WORK, /* a better plan, work budget spent */
	MIP_IMPROVED_TL,   /* a better plan, time limit */
	MIP_ERROR,
};

struct mip_job {
	const struct rp *pr;
	const uint32_t *seed;  /* [N] incumbent, no two replicas of an expert on a GPU */
	double seed_max;
	bool cost_mode;
	uint32_t budget;       /* budget mode */
	double a, b;           /* cost mode: a * max + b * moves, seconds */
	double seed_cost;      /* cost mode: a * seed_max + b * seed moves */
	bool search_if_weak;   /* branch and bound even when the LP bound is weak */
	double deadline;       /* safety net: now_s() after which GLPK stops */
	bool verbose;
	uint32_t *out;         /* [N] the MIP's plan (canonical slots) when improved */
	double bound;          /* proven bound on the busiest GPU for the budget */
};

static uint32_t mip_replicas_max(const struct rp *pr)
{
	uint32_t R = pr->N - pr->E + 1;
	return R < pr->G ? R : pr->G;
}

static size_t mip_columns(const struct rp *pr)
{
	size_t R = mip_replicas_max(pr);
	return (size_t)pr->E * pr->G * R + (size_t)pr->E * R + 1;
}

static enum mip_result mip_solve(struct mip_job *job)
{
	const struct rp *pr = job->pr;
	uint32_t E = pr->E;
	uint32_t G = pr->G;
	uint32_t S = pr->S;
	uint32_t N = pr->N;
	uint32_t R = mip_replicas_max(pr);
	size_t ncols = mip_columns(pr);
	job->bound = pr->lb;
	if (ncols > RP_MIP_MAX_COLS) {
		return MIP_SKIPPED;
	}
	volatile double scale = job->seed_max > 0 ? job->seed_max : 1.0;
	int zcols = (int)((size_t)E * G * R);
	int ycol0 = zcols + 1;
	int tcol = (int)ncols;
#define ZC(e, g, r) ((int)(((size_t)(e) * G + (g)) * R + ((r) - 1)) + 1)
#define YC(e, r) (ycol0 + (int)((size_t)(e) * R + ((r) - 1)))
	struct pl_triplets t = {0};
	double *seed = calloc(ncols + 1, sizeof(*seed));
	uint32_t *set = malloc(sizeof(*set) * N);
	uint32_t *fill = calloc(G, sizeof(*fill));
	unsigned char *used = malloc(2 * (size_t)S);
	uint32_t *rseed = calloc(E, sizeof(*rseed));
	glp_prob *volatile lp = NULL;
	volatile enum mip_result res = MIP_ERROR;
	jmp_buf jb;
	if (!seed || !set || !fill || !used || !rseed) {
		goto out;
	}
	for (uint32_t p = 0; p < N; p++) {
		rseed[job->seed[p]]++;
	}
	if (setjmp(jb)) {
		glp_free_env();
		lp = NULL;
		res = MIP_ERROR;
		goto out;
	}
	glp_error_hook(on_glpk_error, &jb);
	glp_term_out(job->verbose ? GLP_ON : GLP_OFF);
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, (int)ncols);
	double cutoff = job->cost_mode ? HUGE_VAL : job->seed_max;
	for (uint32_t e = 0; e < E; e++) {
		for (uint32_t r = 1; r <= R; r++) {
			/* a replica heavier than the incumbent's busiest GPU cannot help */
			bool off = pr->w[e] / r > cutoff + pr->tol && r != rseed[e];
			glp_set_col_kind(lp, YC(e, r), GLP_BV);
			if (off) {
				glp_set_col_bnds(lp, YC(e, r), GLP_FX, 0, 0);
			}
			for (uint32_t g = 0; g < G; g++) {
				glp_set_col_kind(lp, ZC(e, g, r), GLP_BV);
				if (off) {
					glp_set_col_bnds(lp, ZC(e, g, r), GLP_FX, 0, 0);
				}
			}
		}
	}
	if (job->cost_mode) {
		glp_set_col_bnds(lp, tcol, GLP_LO, pr->lb / scale, 0);
		glp_set_obj_coef(lp, tcol, job->a * scale);
	} else {
		double lo = pr->lb / scale;
		double hi = 1.0;
		glp_set_col_bnds(lp, tcol, lo < hi ? GLP_DB : GLP_FX, lo < hi ? lo : hi, hi);
		glp_set_obj_coef(lp, tcol, 1.0);
	}
	int row = 0;
	int r_one = row + 1;
	for (uint32_t e = 0; e < E; e++) {
		row++;
		for (uint32_t r = 1; r <= R; r++) {
			pl_trip_add(&t, row, YC(e, r), 1.0);
		}
	}
	int r_rep = row + 1;
	for (uint32_t e = 0; e < E; e++) {
		for (uint32_t r = 1; r <= R; r++) {
			row++;
			for (uint32_t g = 0; g < G; g++) {
				pl_trip_add(&t, row, ZC(e, g, r), 1.0);
			}
			pl_trip_add(&t, row, YC(e, r), -(double)r);
		}
	}
	int r_slots = row + 1;
	for (uint32_t g = 0; g < G; g++) {
		row++;
		for (uint32_t e = 0; e < E; e++) {
			for (uint32_t r = 1; r <= R; r++) {
				pl_trip_add(&t, row, ZC(e, g, r), 1.0);
			}
		}
	}
	int r_dup = row + 1;
	if (R >= 2) {
		for (uint32_t e = 0; e < E; e++) {
			for (uint32_t g = 0; g < G; g++) {
				row++;
				for (uint32_t r = 1; r <= R; r++) {
					pl_trip_add(&t, row, ZC(e, g, r), 1.0);
				}
			}
		}
	}
	int n_dup = row - r_dup + 1;
	int r_load = row + 1;
	for (uint32_t g = 0; g < G; g++) {
		row++;
		for (uint32_t e = 0; e < E; e++) {
			if (pr->w[e] <= 0) {
				continue;
			}
			for (uint32_t r = 1; r <= R; r++) {
				pl_trip_add(&t, row, ZC(e, g, r), pr->w[e] / r / scale);
			}
		}
		pl_trip_add(&t, row, tcol, -1.0);
	}
	/* kept = sum over old (g, e) pairs of x[e][g] */
	int r_keep = row + 1;
	row++;
	for (uint32_t g = 0; g < G; g++) {
		for (uint32_t e = 0; e < E; e++) {
			if (!cnt_get(pr->ocnt, pr, g, e)) {
				continue;
			}
			for (uint32_t r = 1; r <= R; r++) {
				pl_trip_add(&t, row, ZC(e, g, r), 1.0);
				if (job->cost_mode) {
					double c = glp_get_obj_coef(lp, ZC(e, g, r));
					glp_set_obj_coef(lp, ZC(e, g, r), c - job->b);
				}
			}
		}
	}
	if (t.failed) {
		res = MIP_ERROR;
		goto out;
	}
	glp_add_rows(lp, row);
	for (uint32_t e = 0; e < E; e++) {
		glp_set_row_bnds(lp, r_one + (int)e, GLP_FX, 1, 1);
	}
	for (int k = 0; k < (int)(E * R); k++) {
		glp_set_row_bnds(lp, r_rep + k, GLP_FX, 0, 0);
	}
	for (uint32_t g = 0; g < G; g++) {
		glp_set_row_bnds(lp, r_slots + (int)g, GLP_FX, S, S);
		glp_set_row_bnds(lp, r_load + (int)g, GLP_UP, 0, 0);
	}
	for (int k = 0; k < n_dup; k++) {
		glp_set_row_bnds(lp, r_dup + k, GLP_UP, 0, 1);
	}
	if (job->cost_mode) {
		glp_set_row_bnds(lp, r_keep, GLP_FR, 0, 0);
	} else {
		double need = (double)N - (double)job->budget;
		glp_set_row_bnds(lp, r_keep, need > 0 ? GLP_LO : GLP_FR, need > 0 ? need : 0, 0);
	}
	glp_load_matrix(lp, (int)t.n, t.ia, t.ja, t.ar);
	pl_trip_free(&t);

	/* the incumbent as a full column vector */
	for (uint32_t p = 0; p < N; p++) {
		uint32_t e = job->seed[p];
		seed[ZC(e, p / S, rseed[e])] = 1.0;
	}
	for (uint32_t e = 0; e < E; e++) {
		seed[YC(e, rseed[e])] = 1.0;
	}
	seed[tcol] = job->seed_max / scale;

	glp_smcp sm;
	glp_init_smcp(&sm);
	sm.msg_lev = job->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	double dim = (double)row + (double)ncols;
	double lp_its = RP_LP_ITS_PER_DIM * dim;
	sm.it_lim = lp_its > 2e9 ? 2000000000 : (int)lp_its;
	double left = job->deadline - now_s();
	if (left < 0.001) {
		res = MIP_NO_GAIN_TL;
		goto out;
	}
	double ms = left * 1000.0;
	sm.tm_lim = ms > 2e9 ? 2000000000 : (int)ms + 1;
	int ret = glp_simplex(lp, &sm);
	if (ret == GLP_ETMLIM) {
		res = MIP_NO_GAIN_TL;
		goto out;
	}
	if (ret == GLP_EITLIM) {
		res = MIP_LP_ITS;
		goto out;
	}
	if (ret != 0 || glp_get_status(lp) != GLP_OPT) {
		res = glp_get_status(lp) == GLP_NOFEAS ? MIP_NO_GAIN : MIP_ERROR;
		goto out;
	}
	/* The LP bound. Budget mode: T >= lb is a column bound, so an LP
	 * value at lb / scale says nothing the from-scratch bound does not.
	 * Cost mode: the trivial bound is a lb - b N (all kept at the bound). */
	double lpv = glp_get_obj_val(lp);
	double seed_obj = job->cost_mode ? job->seed_cost - job->b * N : 1.0;
	double trivial = job->cost_mode ? job->a * pr->lb - job->b * N : pr->lb / scale;
	double otol = job->cost_mode ? job->a * pr->tol + 1e-12 * fabs(seed_obj) : pr->tol / scale;
	if (!job->cost_mode && lpv * scale > job->bound) {
		job->bound = lpv * scale > job->seed_max ? job->seed_max : lpv * scale;
	}
	if (lpv >= seed_obj - otol) {
		res = MIP_LP_PROVED;
		goto out;
	}
	if (!job->search_if_weak && lpv <= trivial + otol) {
		res = MIP_WEAK;
		goto out;
	}
	/* work budgets from the instance's size (nonzeros of the matrix) */
	double nnz = (double)glp_get_num_nz(lp) + dim;
	double bb_its = RP_MIP_WORK / nnz;
	double bb_nodes = bb_its / 8;
	struct mip_cb cb = {
		.seed = seed,
		.it_start = glp_get_it_cnt(lp),
		.it_limit = bb_its > 1e9 ? 1000000000 : (int)bb_its + 1,
		.node_limit = bb_nodes < RP_MIP_MIN_NODES ? (int)RP_MIP_MIN_NODES
			      : (bb_nodes > 1e9 ? 1000000000 : (int)bb_nodes),
	};
	glp_iocp parm;
	glp_init_iocp(&parm);
	parm.presolve = GLP_OFF;
	parm.msg_lev = job->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.mip_gap = 0.0;
	parm.cb_func = mip_callback;
	parm.cb_info = &cb;
	left = job->deadline - now_s();
	if (left < 0.001) {
		res = MIP_NO_GAIN_TL;
		goto out;
	}
	ms = left * 1000.0;
	parm.tm_lim = ms > 2e9 ? 2000000000 : (int)ms + 1;
	ret = glp_intopt(lp, &parm);
	int status = glp_mip_status(lp);
	bool proved = ret == 0 && status == GLP_OPT;
	bool timed = ret == GLP_ETMLIM;
	bool stopped = ret == GLP_ESTOP && cb.spent;
	bool have = (ret == 0 || timed || stopped) && (status == GLP_OPT || status == GLP_FEAS);
	if (ret == 0 && status == GLP_NOFEAS) {
		res = MIP_NO_GAIN;
		goto out;
	}
	if (ret != 0 && !timed && !stopped) {
		res = MIP_ERROR;
		goto out;
	}
	if (!job->cost_mode) {
		if (proved) {
			job->bound = glp_mip_obj_val(lp) * scale;
		} else if (cb.have_bound && cb.bound * scale > job->bound) {
			job->bound = cb.bound * scale;
		}
		if (job->bound > job->seed_max) {
			job->bound = job->seed_max;
		}
	}
	if (!have) {
		res = proved ? MIP_NO_GAIN : timed ? MIP_NO_GAIN_TL : MIP_NO_GAIN_WORK;
		goto out;
	}
	/* read the plan */
	memset(fill, 0, sizeof(*fill) * G);
	bool ok = true;
	for (uint32_t e = 0; e < E && ok; e++) {
		for (uint32_t g = 0; g < G && ok; g++) {
			double x = 0;
			for (uint32_t r = 1; r <= R; r++) {
				x += glp_mip_col_val(lp, ZC(e, g, r));
			}
			if (x > 0.5) {
				if (fill[g] >= S) {
					ok = false;
					break;
				}
				set[(size_t)g * S + fill[g]++] = e;
			}
		}
	}
	for (uint32_t g = 0; g < G && ok; g++) {
		ok = fill[g] == S;
	}
	if (!ok) {
		res = MIP_ERROR;
		goto out;
	}
	canonical_slots(pr, set, job->out, used);
	res = proved ? MIP_IMPROVED : timed ? MIP_IMPROVED_TL : MIP_IMPROVED_WORK;
out:
	if (lp) {
		glp_delete_prob(lp);
	}
	glp_error_hook(NULL, NULL);
	pl_trip_free(&t);
	free(seed);
	free(set);
	free(fill);
	free(used);
	free(rseed);
	return res;
#undef ZC
#undef YC
}

/* ------------------------------------------------------------------ */
/* The driver.                                                         */

void mp_replan_options_init(struct mp_replan_options *opts)
{
	*opts = (struct mp_replan_options){
		.max_moves = MP_REPLAN_UNLIMITED,
		.cost_mode = false,
		.move_cost_s = 0,
		.horizon_steps = 1000,
		.layer_time_s = 0,
		.min_gain = 0,
		.time_limit_s = 10,
		.expert_bytes = MP_REPLAN_DEFAULT_EXPERT_BYTES,
		.link_bw_bytes_per_s = MP_REPLAN_DEFAULT_LINK_BW,
		.mip = true,
		.threads = 0,
		.verbose = false,
	};
}

void mp_replan_init(struct mp_replan *replan)
{
	memset(replan, 0, sizeof(*replan));
	mp_placement_init(&replan->before);
	mp_placement_init(&replan->after);
	mp_placement_init(&replan->scratch);
}

void mp_replan_finish(struct mp_replan *replan)
{
	if (!replan) {
		return;
	}
	if (replan->layers) {
		for (uint32_t l = 0; l < replan->before.n_layers; l++) {
			free(replan->layers[l].curve);
		}
	}
	mp_placement_finish(&replan->before);
	mp_placement_finish(&replan->after);
	mp_placement_finish(&replan->scratch);
	free(replan->layers);
	free(replan->moves);
	free(replan->total_curve);
	mp_replan_init(replan);
}

/* Per-layer working data kept between the passes. */
struct layer_work {
	struct rp pr;
	struct traj traj;
	uint32_t *scratch;   /* [N] relabelled from-scratch map */
	double scratch_max;
	uint32_t scratch_moves;
	double *curve;       /* [K + 1] */
	size_t *curve_step;  /* [K + 1] steps of traj to replay; SIZE_MAX = scratch plan */
	uint32_t K;
	uint32_t pick;       /* moves the budget split allots (a point of the curve) */
	uint32_t budget;     /* moves the layer may use: pick plus what earlier layers left */
	bool timed_out;      /* the safety net stopped one of its local searches */
};

static double layer_cost(const struct mp_replan_options *o, double mean, double max, uint32_t moves)
{
	double a = mean > 0 ? o->horizon_steps * o->layer_time_s / mean : 0;
	return a * max + o->move_cost_s * moves;
}

static int check_input(const struct mp_placement *cur, const struct mp_loads *loads,
		       const struct mp_replan_options *o, struct mp_diags *diags)
{
	if (cur->n_layers == 0 || cur->gpus == 0 || cur->slots_per_gpu == 0 || cur->n_experts == 0) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "the current plan is empty");
	}
	if (cur->gpus_per_node != 0 && cur->node_policy == MP_NODES_GROUP_LIMITED) {
		/* The re-planner moves replicas between any GPUs: it would break
		 * the plan's promise that a token reaches at most top-k nodes. */
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "the current plan keeps its %u expert groups within nodes of %u GPUs "
				    "(node_policy group_limited), which re-planning does not preserve; "
				    "place it again with moeplan place --gpus-per-node %u --group-limited %u",
				    cur->n_groups, cur->gpus_per_node, cur->gpus_per_node, cur->n_groups);
	}
	if (loads->n_layers != cur->n_layers || loads->n_experts != cur->n_experts) {
		return mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
				    "the loads are %u layers x %u experts but the current plan has %u layers x %u experts",
				    loads->n_layers, loads->n_experts, cur->n_layers, cur->n_experts);
	}
	if (cur->slots_per_gpu > UINT16_MAX) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "%u slots per GPU: at most %u supported",
				    cur->slots_per_gpu, UINT16_MAX);
	}
	uint64_t cells = (uint64_t)cur->gpus * cur->n_experts;
	if (cells > (1u << 28)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "%u GPUs x %u experts is too large to re-plan", cur->gpus, cur->n_experts);
	}
	if (!(o->min_gain >= 0 && o->min_gain < 1) || !(o->time_limit_s > 0) ||
	    !(o->link_bw_bytes_per_s > 0) || !isfinite(o->link_bw_bytes_per_s)) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL, "invalid re-plan options");
	}
	if (o->cost_mode && (!(o->move_cost_s >= 0) || !isfinite(o->move_cost_s) ||
			     !(o->horizon_steps > 0) || !isfinite(o->horizon_steps) ||
			     !(o->layer_time_s > 0) || !isfinite(o->layer_time_s))) {
		return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
				    "the move-cost objective needs a move cost >= 0, a horizon > 0 and a layer time > 0");
	}
	uint32_t N = cur->gpus * cur->slots_per_gpu;
	for (uint32_t l = 0; l < cur->n_layers; l++) {
		const double *w = mp_loads_row(loads, l);
		for (uint32_t e = 0; e < cur->n_experts; e++) {
			if (!isfinite(w[e]) || w[e] < 0) {
				return mp_diags_add(diags, loads->source, 0, 0, MP_EINVAL,
						    "layer %u, expert %u: load %g is not a finite number >= 0", l, e, w[e]);
			}
		}
		const uint32_t *map = cur->layers[l].slot_expert;
		for (uint32_t p = 0; p < N; p++) {
			if (map[p] >= cur->n_experts) {
				return mp_diags_add(diags, NULL, 0, 0, MP_EINVAL,
						    "layer %u, slot %u: expert %u is out of range (%u experts)", l, p,
						    map[p], cur->n_experts);
			}
		}
	}
	return 0;
}

/* The busiest-GPU load of a map (evaluated as it stands). */
static double map_max(const struct rp *pr, const uint32_t *map, struct rs *tmp)
{
	rs_load_map(tmp, pr, map);
	return tmp->max;
}

static bool has_dup(const struct rs *st, const struct rp *pr)
{
	for (size_t i = 0; i < (size_t)pr->G * pr->E; i++) {
		if (st->cnt[i] > 1) {
			return true;
		}
	}
	return false;
}

/* Pass 1 of a layer: the curve (local search trajectory capped by the
 * relabelled from-scratch plan). */
static int layer_curve(struct layer_work *lw, const struct mp_layer_placement *scr, struct rs *st,
		       struct rw *w, unsigned char *used)
{
	struct rp *pr = &lw->pr;
	int rc = relabel(pr, scr->slot_expert, lw->scratch, used);
	if (rc) {
		return rc;
	}
	lw->scratch_max = map_max(pr, lw->scratch, st);
	lw->scratch_moves = st->moves;
	/* the curve reaches at least the from-scratch plan's moves */
	lw->K = lw->scratch_moves;
	rs_load_map(st, pr, pr->orig);
	double max0 = st->max;
	rc = local_search(st, pr, w, lw->K, &lw->traj);
	if (rc) {
		return rc;
	}
	lw->curve = malloc(sizeof(*lw->curve) * (lw->K + 1));
	lw->curve_step = malloc(sizeof(*lw->curve_step) * (lw->K + 1));
	if (!lw->curve || !lw->curve_step) {
		return MP_ENOMEM;
	}
	for (uint32_t k = 0; k <= lw->K; k++) {
		lw->curve[k] = HUGE_VAL;
		lw->curve_step[k] = 0;
	}
	lw->curve[0] = max0;
	for (size_t i = 0; i < lw->traj.n; i++) {
		const struct step *s = &lw->traj.steps[i];
		if (s->moves <= lw->K && s->max < lw->curve[s->moves] - pr->tol) {
			lw->curve[s->moves] = s->max;
			lw->curve_step[s->moves] = i + 1;
		}
	}
	if (lw->scratch_max < lw->curve[lw->K] - pr->tol) {
		lw->curve[lw->K] = lw->scratch_max;
		lw->curve_step[lw->K] = SIZE_MAX;
	}
	for (uint32_t k = 1; k <= lw->K; k++) {
		if (!(lw->curve[k] < lw->curve[k - 1] - pr->tol)) {
			lw->curve[k] = lw->curve[k - 1];
			lw->curve_step[k] = lw->curve_step[k - 1];
		}
	}
	return 0;
}

/* Split the budget over layers: choice[l] moves for layer l minimising the
 * sum of curve values with sum <= budget (DP, ties to fewer moves); total[]
 * gets the best sum for every total 0 .. sumK. */
static int split_budget(struct layer_work *lws, uint32_t L, uint64_t budget, double *total,
			size_t total_len)
{
	size_t T = total_len; /* sumK + 1 */
	uint64_t cells = (uint64_t)L * T;
	if (cells <= RP_DP_MAX_CELLS) {
		double *dp = malloc(sizeof(*dp) * T);
		double *nd = malloc(sizeof(*nd) * T);
		uint32_t *choice = malloc(sizeof(*choice) * cells);
		if (!dp || !nd || !choice) {
			free(dp);
			free(nd);
			free(choice);
			return MP_ENOMEM;
		}
		size_t reach = 0;
		dp[0] = 0;
		for (size_t b = 1; b < T; b++) {
			dp[b] = 0; /* with no layers, any budget gives 0 */
		}
		for (uint32_t l = 0; l < L; l++) {
			const struct layer_work *lw = &lws[l];
			reach += lw->K;
			for (size_t b = 0; b < T; b++) {
				double best = HUGE_VAL;
				uint32_t arg = 0;
				uint32_t kmax = lw->K < b ? lw->K : (uint32_t)b;
				for (uint32_t k = 0; k <= kmax; k++) {
					double v = dp[b - k] + lw->curve[k];
					if (v < best) {
						best = v;
						arg = k;
					}
				}
				nd[b] = best;
				choice[(size_t)l * T + b] = arg;
			}
			double *tmp = dp;
			dp = nd;
			nd = tmp;
		}
		(void)reach;
		for (size_t b = 0; b < T; b++) {
			total[b] = dp[b];
		}
		size_t b = budget < T - 1 ? (size_t)budget : T - 1;
		for (uint32_t l = L; l-- > 0;) {
			uint32_t k = choice[(size_t)l * T + b];
			lws[l].pick = k;
			b -= k;
		}
		free(dp);
		free(nd);
		free(choice);
		return 0;
	}
	/* Too large for the table: hand out moves one at a time to the layer
	 * whose curve drops most per move over its next improving point. */
	uint32_t *at = calloc(L, sizeof(*at));
	if (!at) {
		return MP_ENOMEM;
	}
	double sum = 0;
	for (uint32_t l = 0; l < L; l++) {
		sum += lws[l].curve[0];
	}
	size_t used_moves = 0;
	total[0] = sum;
	size_t filled = 0;
	for (;;) {
		double best = 0;
		uint32_t bl = UINT32_MAX;
		uint32_t bk = 0;
		for (uint32_t l = 0; l < L; l++) {
			const struct layer_work *lw = &lws[l];
			for (uint32_t k = at[l] + 1; k <= lw->K; k++) {
				double gain = (lw->curve[at[l]] - lw->curve[k]) / (k - at[l]);
				if (gain > best) {
					best = gain;
					bl = l;
					bk = k;
				}
			}
		}
		if (bl == UINT32_MAX) {
			break;
		}
		sum -= lws[bl].curve[at[bl]] - lws[bl].curve[bk];
		size_t nu = used_moves + (bk - at[bl]);
		for (size_t b = filled + 1; b < nu && b < T; b++) {
			total[b] = total[filled];
		}
		if (nu < T) {
			total[nu] = sum;
			filled = nu;
		}
		if (nu <= budget) {
			for (uint32_t l = 0; l < L; l++) {
				lws[l].pick = l == bl ? bk : at[l];
			}
		}
		used_moves = nu;
		at[bl] = bk;
	}
	for (size_t b = filled + 1; b < T; b++) {
		total[b] = total[filled];
	}
	free(at);
	return 0;
}

/* The state of the trajectory after `steps` steps (or the scratch plan). */
static void replay(struct rs *st, const struct layer_work *lw, size_t steps)
{
	const struct rp *pr = &lw->pr;
	if (steps == SIZE_MAX) {
		rs_load_map(st, pr, lw->scratch);
		return;
	}
	rs_load_map(st, pr, pr->orig);
	for (size_t i = 0; i < steps; i++) {
		const struct step *s = &lw->traj.steps[i];
		if (s->q != UINT32_MAX) {
			rs_set(st, pr, s->p, s->f);
			rs_set(st, pr, s->q, s->e);
		} else {
			rs_set(st, pr, s->p, s->f);
		}
	}
	rs_eval(st, pr);
}

struct choice {
	uint32_t *map; /* [N] */
	unsigned char *used; /* [2 S] scratch */
	double max;
	uint32_t moves;
	const char *method;
};

static bool better_choice(const struct mp_replan_options *o, const struct rp *pr, double mean,
			  double max, uint32_t moves, const struct choice *c)
{
	if (o->cost_mode) {
		double a = layer_cost(o, mean, max, moves);
		double b = layer_cost(o, mean, c->max, c->moves);
		return a < b - 1e-12 * (fabs(b) + 1e-300) || (a <= b && moves < c->moves);
	}
	return max < c->max - pr->tol || (max <= c->max + pr->tol && moves < c->moves);
}

/* Record st as the layer's choice, its slots canonical: an expert that
 * stays on a GPU keeps its old slot, so moves = slots changed. */
static void take(struct choice *c, const struct rs *st, const struct rp *pr, const char *method)
{
	canonical_slots(pr, st->slot, c->map, c->used);
	c->max = st->max;
	c->moves = st->moves;
	c->method = method;
}

/* Say what GLPK did to a plan it did not change, after where the plan
 * came from. */
static void note(struct choice *c, enum mip_note n)
{
	if (c->method == M_LS) {
		c->method = M_NOTES[n][0];
	} else if (c->method == M_SCRATCH) {
		c->method = M_NOTES[n][1];
	} else if (c->method == M_NONE) {
		c->method = M_NOTES[n][2];
	}
}

/* Pass 2 of a layer: the plan for its allotted moves. */
static int layer_plan(struct layer_work *lw, const struct mp_replan_options *o, double mean,
		      double deadline, struct rs *st, struct rw *w, unsigned char *used,
		      struct choice *c, double *bound, enum mp_place_status *status)
{
	struct rp *pr = &lw->pr;
	uint32_t k = lw->budget;
	uint32_t kc = lw->pick < lw->K ? lw->pick : lw->K;
	*bound = pr->lb;
	*status = MP_PLACE_FEASIBLE;
	/* the current plan */
	rs_load_map(st, pr, pr->orig);
	take(c, st, pr, M_NONE);
	if (st->max <= 0) {
		c->method = M_ZERO;
		*status = MP_PLACE_OPTIMAL;
		*bound = 0;
		return 0;
	}
	if (k == 0 && !o->cost_mode) {
		/* the only plan with no moves: optimal for the budget */
		c->method = c->max <= pr->lb + pr->tol ? M_NONE_BOUND : M_NONE_ZERO;
		*status = MP_PLACE_OPTIMAL;
		*bound = c->max;
		return 0;
	}
	if (k > 0) {
		/* the trajectory's point for k */
		replay(st, lw, lw->curve_step[kc]);
		if (st->moves <= k && better_choice(o, pr, mean, st->max, st->moves, c)) {
			take(c, st, pr, lw->curve_step[kc] == SIZE_MAX ? M_SCRATCH : M_LS);
		}
		/* a fresh descent with exactly k moves */
		rs_load_map(st, pr, pr->orig);
		int rc = local_search(st, pr, w, k, NULL);
		if (rc) {
			return rc;
		}
		if (better_choice(o, pr, mean, st->max, st->moves, c)) {
			take(c, st, pr, M_LS);
		}
		if (lw->scratch_moves <= k) {
			rs_load_map(st, pr, lw->scratch);
			if (better_choice(o, pr, mean, st->max, st->moves, c)) {
				take(c, st, pr, M_SCRATCH);
			}
		}
	}
	if (c->max <= pr->lb + pr->tol) {
		*status = MP_PLACE_OPTIMAL;
		c->method = c->method == M_SCRATCH ? M_SCRATCH_BOUND
			    : c->method == M_NONE ? M_NONE_BOUND : M_LS_BOUND;
		*bound = c->max;
		return 0;
	}
	if (!o->mip || k == 0) {
		return 0;
	}
	rs_load_map(st, pr, c->map);
	if (has_dup(st, pr)) {
		note(c, NOTE_DUP);
		return 0;
	}
	if (mip_columns(pr) > RP_MIP_MAX_COLS) {
		note(c, NOTE_BIG);
		return 0;
	}
	uint32_t *out = malloc(sizeof(*out) * pr->N);
	if (!out) {
		return MP_ENOMEM;
	}
	struct mip_job job = {
		.pr = pr,
		.seed = c->map,
		.seed_max = c->max,
		.cost_mode = o->cost_mode,
		.budget = k,
		.a = mean > 0 ? o->horizon_steps * o->layer_time_s / mean : 0,
		.b = o->move_cost_s,
		.seed_cost = layer_cost(o, mean, c->max, c->moves),
		.search_if_weak = pr->N <= RP_MIP_SMALL_SLOTS,
		.deadline = deadline,
		.verbose = o->verbose,
		.out = out,
	};
	enum mip_result res = mip_solve(&job);
	if (!o->cost_mode && job.bound > *bound) {
		*bound = job.bound;
	}
	switch (res) {
	case MIP_IMPROVED:
	case MIP_IMPROVED_WORK:
	case MIP_IMPROVED_TL:
		rs_load_map(st, pr, out);
		if ((o->cost_mode || st->moves <= k) && better_choice(o, pr, mean, st->max, st->moves, c)) {
			take(c, st, pr, res == MIP_IMPROVED ? M_MIP_OPT
					: res == MIP_IMPROVED_WORK ? M_MIP_IMPROVED_WORK : M_MIP_IMPROVED_TL);
			*status = res == MIP_IMPROVED ? MP_PLACE_OPTIMAL
				  : res == MIP_IMPROVED_WORK ? MP_PLACE_FEASIBLE : MP_PLACE_TIME_LIMIT;
		} else if (res == MIP_IMPROVED) {
			/* GLPK's optimum equals the incumbent (within tolerance) */
			note(c, NOTE_PROVED);
			*status = MP_PLACE_OPTIMAL;
		} else if (res == MIP_IMPROVED_WORK) {
			note(c, NOTE_WORK);
		} else {
			note(c, NOTE_TL);
			*status = MP_PLACE_TIME_LIMIT;
		}
		break;
	case MIP_NO_GAIN:
		note(c, NOTE_PROVED);
		*status = MP_PLACE_OPTIMAL;
		break;
	case MIP_LP_PROVED:
		note(c, NOTE_LP_PROVED);
		*status = MP_PLACE_OPTIMAL;
		break;
	case MIP_NO_GAIN_WORK:
		note(c, NOTE_WORK);
		break;
	case MIP_NO_GAIN_TL:
		note(c, NOTE_TL);
		*status = MP_PLACE_TIME_LIMIT;
		break;
	case MIP_WEAK:
		note(c, NOTE_WEAK);
		break;
	case MIP_LP_ITS:
		note(c, NOTE_LP_ITS);
		break;
	case MIP_SKIPPED:
	case MIP_ERROR:
		break;
	}
	if (*status == MP_PLACE_OPTIMAL && !o->cost_mode) {
		*bound = c->max;
	}
	if (*bound > c->max) {
		*bound = c->max;
	}
	free(out);
	return 0;
}

static int eval_into(const uint32_t *map, const double *w, const struct mp_placement *shape,
		     struct mp_layer_placement *out)
{
	return mp_place_evaluate(map, w, shape->n_experts, shape->gpus, shape->slots_per_gpu, out);
}

/* Moves, bytes and the transfer time estimate. */
static int collect_moves(struct mp_replan *out, const struct mp_placement *cur)
{
	uint32_t L = cur->n_layers;
	uint32_t G = cur->gpus;
	uint32_t S = cur->slots_per_gpu;
	uint32_t N = G * S;
	size_t n = 0;
	for (uint32_t l = 0; l < L; l++) {
		for (uint32_t p = 0; p < N; p++) {
			n += out->after.layers[l].slot_expert[p] != cur->layers[l].slot_expert[p];
		}
	}
	out->n_moves = n;
	out->moves = n ? calloc(n, sizeof(*out->moves)) : NULL;
	uint64_t *in = calloc(G, sizeof(*in));
	uint64_t *outb = calloc(G, sizeof(*outb));
	if ((n && !out->moves) || !in || !outb) {
		free(in);
		free(outb);
		return MP_ENOMEM;
	}
	size_t i = 0;
	out->total_bytes = 0;
	for (uint32_t l = 0; l < L; l++) {
		const uint32_t *old = cur->layers[l].slot_expert;
		const uint32_t *nw = out->after.layers[l].slot_expert;
		uint32_t count = 0;
		for (uint32_t p = 0; p < N; p++) {
			if (nw[p] == old[p]) {
				continue;
			}
			/* the sender: an old holder of the expert with the fewest bytes out */
			uint32_t src = UINT32_MAX;
			for (uint32_t q = 0; q < N; q++) {
				if (old[q] == nw[p] && (src == UINT32_MAX || outb[q / S] < outb[src])) {
					src = q / S;
				}
			}
			out->moves[i++] = (struct mp_replan_move){
				.layer = l, .gpu = p / S, .slot = p, .old_expert = old[p],
				.new_expert = nw[p], .source_gpu = src,
			};
			in[p / S] += out->expert_bytes;
			if (src != UINT32_MAX) {
				outb[src] += out->expert_bytes;
			}
			count++;
		}
		out->layers[l].moves = count;
		out->layers[l].bytes = (uint64_t)count * out->expert_bytes;
		out->total_bytes += out->layers[l].bytes;
	}
	uint64_t worst = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (in[g] > worst) {
			worst = in[g];
		}
		if (outb[g] > worst) {
			worst = outb[g];
		}
	}
	out->transfer_s = (double)worst / out->link_bw_bytes_per_s;
	free(in);
	free(outb);
	return 0;
}

/* One re-planning run: its inputs, the result being built, and the
 * search state its stages share (run_* below, in order). */
struct replan_run {
	const struct mp_placement *current;
	const struct mp_loads *loads;
	const struct mp_replan_options *opts;
	struct mp_diags *diags;
	uint32_t L, E, G, S, N;
	struct mp_replan res;     /* the result, handed to the caller at the end */
	struct mp_placement raw;  /* the from-scratch plan */
	struct layer_work *lws;   /* [L] */
	struct rs st;
	struct rw w;
	unsigned char *used;
	struct choice c;
};

/* The result's placements and the current plan evaluated on the loads
 * (every expert needs a slot in it). */
static int run_start(struct replan_run *r)
{
	uint32_t L = r->L, E = r->E, G = r->G, S = r->S, N = r->N;
	r->res.expert_bytes = r->opts->expert_bytes;
	r->res.link_bw_bytes_per_s = r->opts->link_bw_bytes_per_s;
	if (!r->lws || !r->used) {
		return MP_ENOMEM;
	}
	int rc = mp_placement_alloc(&r->res.before, L, E, G, S);
	if (rc == 0) {
		rc = mp_placement_alloc(&r->res.after, L, E, G, S);
	}
	if (rc == 0) {
		rc = mp_placement_alloc(&r->res.scratch, L, E, G, S);
	}
	if (rc) {
		if (rc == MP_EINVAL) {
			mp_diags_add(r->diags, NULL, 0, 0, rc, "cannot hold %u layers of %u slots for %u experts",
				     L, N, E);
		}
		return rc;
	}
	for (uint32_t l = 0; l < L; l++) {
		rc = eval_into(r->current->layers[l].slot_expert, mp_loads_row(r->loads, l), r->current,
			       &r->res.before.layers[l]);
		if (rc) {
			if (rc == MP_EINVAL) {
				mp_diags_add(r->diags, NULL, 0, 0, rc,
					     "layer %u of the current plan: an expert has no slot", l);
			}
			return rc;
		}
	}
	return 0;
}

/* Stage 1: the from-scratch plan, and the search's scratch buffers. */
static int run_scratch(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t E = r->E;
	uint32_t G = r->G;
	uint32_t S = r->S;
	uint32_t N = r->N;
	int rc = 0;
	/* 1. from scratch */
	struct mp_place_options po;
	mp_place_options_init(&po);
	/* mp_place's limit is for the whole call and ours is per layer: L
	 * times it, so a safety net and not the end of a counted-work run
	 * (58 layers of 256 experts on 288 slots take ~17 s of CPU in all,
	 * ~0.3 s a layer; a 10 s limit for the whole call cut every such
	 * run short at a point set by the machine's load) */
	po.time_limit_s = r->opts->time_limit_s * (double)L;
	po.threads = r->opts->threads;
	po.verbose = r->opts->verbose;
	rc = mp_place(r->loads, G, S, &po, &r->raw, r->diags);
	if (rc) {
		return rc;
	}
	r->res.layers = calloc(L, sizeof(*r->res.layers));
	r->c.map = malloc(sizeof(*r->c.map) * N);
	r->w.stamp = calloc(G, sizeof(*r->w.stamp));
	r->w.delta = calloc(G, sizeof(*r->w.delta));
	r->w.chg = calloc(G, sizeof(*r->w.chg));
	r->w.estamp = calloc(E, sizeof(*r->w.estamp));
	rc = MP_ENOMEM;
	if (!r->res.layers || !r->c.map || !r->w.stamp || !r->w.delta || !r->w.chg || !r->w.estamp) {
		return rc;
	}
	r->w.mark = 0;
	r->w.emark = 0;
	return 0;
}

/* Stage 2: each layer's curve, its best load for 0, 1, 2, ... moves. */
static int run_curves(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t E = r->E;
	uint32_t G = r->G;
	uint32_t S = r->S;
	uint32_t N = r->N;
	int rc = 0;
	/* 2. the curves */
	for (uint32_t l = 0; l < L; l++) {
		struct layer_work *lw = &r->lws[l];
		const double *wl = mp_loads_row(r->loads, l);
		double mean = r->res.before.layers[l].mean_load;
		double wmax = 0;
		for (uint32_t e = 0; e < E; e++) {
			wmax = wl[e] > wmax ? wl[e] : wmax;
		}
		lw->pr = (struct rp){
			.E = E, .G = G, .S = S, .N = N, .w = wl,
			.orig = r->current->layers[l].slot_expert,
			.tol = RP_REL_TOL * fmax(fmax(mean, wmax / G), 1e-300),
			.lb = r->raw.layers[l].lower_bound,
		};
		lw->pr.ocnt = calloc((size_t)G * E, sizeof(*lw->pr.ocnt));
		lw->scratch = malloc(sizeof(*lw->scratch) * N);
		if (!lw->pr.ocnt || !lw->scratch) {
			rc = MP_ENOMEM;
			return rc;
		}
		for (uint32_t p = 0; p < N; p++) {
			lw->pr.ocnt[(size_t)(p / S) * E + lw->pr.orig[p]]++;
		}
		if (!r->st.slot) {
			rc = rs_alloc(&r->st, &lw->pr);
			if (rc) {
				return rc;
			}
		}
		r->w.deadline = now_s() + r->opts->time_limit_s;
		r->w.timed_out = false;
		rc = layer_curve(lw, &r->raw.layers[l], &r->st, &r->w, r->used);
		lw->timed_out = r->w.timed_out;
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/* Stage 3: the move budget split over the layers (with a move cost,
 * each layer's best point on its own). */
static int run_budget(struct replan_run *r)
{
	uint32_t L = r->L;
	int rc = 0;
	/* 3. the budget split (or, with a move cost, each layer on its own) */
	size_t sumK = 0;
	for (uint32_t l = 0; l < L; l++) {
		sumK += r->lws[l].K;
	}
	r->res.total_curve_len = sumK + 1;
	r->res.total_curve = malloc(sizeof(*r->res.total_curve) * r->res.total_curve_len);
	if (!r->res.total_curve) {
		rc = MP_ENOMEM;
		return rc;
	}
	rc = split_budget(r->lws, L, r->opts->max_moves, r->res.total_curve, r->res.total_curve_len);
	if (rc) {
		return rc;
	}
	if (r->opts->cost_mode) {
		for (uint32_t l = 0; l < L; l++) {
			struct layer_work *lw = &r->lws[l];
			double mean = r->res.before.layers[l].mean_load;
			uint32_t best = 0;
			for (uint32_t k = 1; k <= lw->K; k++) {
				if (layer_cost(r->opts, mean, lw->curve[k], k) <
				    layer_cost(r->opts, mean, lw->curve[best], best) - 1e-15) {
					best = k;
				}
			}
			lw->pick = best;
		}
	}
	return 0;
}

/* Stage 4: each layer's plan within its share of the budget. */
static int run_layer_plans(struct replan_run *r)
{
	uint32_t L = r->L;
	uint32_t N = r->N;
	int rc = 0;
	/* 4. each layer's plan; a layer may also use the moves that the
	 * layers before it left unused (the MIP can do better than the curve) */
	uint64_t reserved = 0;
	for (uint32_t l = 0; l < L; l++) {
		reserved += r->lws[l].pick;
	}
	uint64_t spent = 0;
	for (uint32_t l = 0; l < L; l++) {
		struct layer_work *lw = &r->lws[l];
		struct mp_replan_layer *rl = &r->res.layers[l];
		double mean = r->res.before.layers[l].mean_load;
		double bound = 0;
		enum mp_place_status status = MP_PLACE_FEASIBLE;
		reserved -= lw->pick;
		uint64_t avail = N;
		if (!r->opts->cost_mode && r->opts->max_moves != MP_REPLAN_UNLIMITED) {
			avail = r->opts->max_moves - spent - reserved;
		} else if (r->opts->cost_mode) {
			avail = lw->pick;
		}
		lw->budget = (uint32_t)(avail < N ? avail : N);
		r->w.deadline = now_s() + r->opts->time_limit_s;
		r->w.timed_out = false;
		rc = layer_plan(lw, r->opts, mean, r->w.deadline, &r->st, &r->w, r->used, &r->c, &bound, &status);
		if (rc) {
			return rc;
		}
		if (r->w.timed_out || lw->timed_out) {
			/* a local search stopped on the clock: the plan is valid but
			 * may depend on machine speed */
			status = MP_PLACE_TIME_LIMIT;
		}
		spent += r->c.moves;
		rc = eval_into(r->c.map, lw->pr.w, r->current, &r->res.after.layers[l]);
		if (rc == 0) {
			rc = eval_into(lw->scratch, lw->pr.w, r->current, &r->res.scratch.layers[l]);
		}
		if (rc) {
			return rc;
		}
		if (r->raw.layers[l].status == MP_PLACE_TIME_LIMIT) {
			/* the from-scratch plan and its bound came from a search the
			 * time limit stopped: the result may depend on machine speed */
			status = MP_PLACE_TIME_LIMIT;
		}
		struct mp_layer_placement *a = &r->res.after.layers[l];
		mp_layer_placement_set_bound(a, bound, status);
		a->method = r->c.method;
		struct mp_layer_placement *s = &r->res.scratch.layers[l];
		mp_layer_placement_set_bound(s, r->raw.layers[l].lower_bound, r->raw.layers[l].status);
		s->method = r->raw.layers[l].method;
		*rl = (struct mp_replan_layer){
			.max_before = r->res.before.layers[l].max_load,
			.max_after = a->max_load,
			.mean_load = mean,
			.scratch_max = s->max_load,
			.scratch_moves = lw->scratch_moves,
			.lower_bound = bound,
			.gap = a->gap,
			.status = status,
			.method = r->c.method,
			.curve = lw->curve,
			.curve_len = lw->K + 1,
		};
		for (uint32_t p = 0; p < N; p++) {
			rl->scratch_moves_raw += r->raw.layers[l].slot_expert[p] != lw->pr.orig[p];
		}
		lw->curve = NULL;
		r->res.sum_before += rl->max_before;
		r->res.sum_after += rl->max_after;
		r->res.sum_scratch += rl->scratch_max;
		r->res.sum_bound += r->raw.layers[l].lower_bound;
	}
	return 0;
}

/* The gain, keeping the current plan when it is below min_gain, and the
 * moves. */
static int run_finish(struct replan_run *r)
{
	uint32_t L = r->L;
	int rc = 0;
	r->res.gain = r->res.sum_before > 0 ? (r->res.sum_before - r->res.sum_after) / r->res.sum_before : 0;
	if (r->opts->min_gain > 0 && r->res.gain < r->opts->min_gain) {
		r->res.kept = true;
		r->res.kept_gain = r->res.gain;
		for (uint32_t l = 0; l < L; l++) {
			rc = eval_into(r->current->layers[l].slot_expert, mp_loads_row(r->loads, l), r->current,
				       &r->res.after.layers[l]);
			if (rc) {
				return rc;
			}
			r->res.after.layers[l].method = M_KEPT;
			r->res.layers[l].max_after = r->res.layers[l].max_before;
			r->res.layers[l].method = M_KEPT;
			r->res.layers[l].status = r->res.after.layers[l].status;
			r->res.layers[l].lower_bound = r->res.after.layers[l].lower_bound;
			r->res.layers[l].gap = r->res.after.layers[l].gap;
		}
		r->res.sum_after = r->res.sum_before;
		r->res.gain = 0;
	}
	double denom = r->res.sum_before - r->res.sum_scratch;
	r->res.recovered = denom > 0 ? (r->res.sum_before - r->res.sum_after) / denom : 1.0;
	rc = collect_moves(&r->res, r->current);
	if (rc) {
		return rc;
	}
	return 0;
}

static void run_free(struct replan_run *r)
{
	if (r->lws) {
		for (uint32_t l = 0; l < r->L; l++) {
			free(r->lws[l].pr.ocnt);
			free(r->lws[l].scratch);
			free(r->lws[l].curve);
			free(r->lws[l].curve_step);
			traj_free(&r->lws[l].traj);
		}
	}
	free(r->lws);
	rs_free(&r->st);
	free(r->w.stamp);
	free(r->w.delta);
	free(r->w.chg);
	free(r->w.estamp);
	free(r->used);
	free(r->c.map);
	mp_placement_finish(&r->raw);
	mp_replan_finish(&r->res);
}

int mp_replan_run(const struct mp_placement *current, const struct mp_loads *loads,
		  const struct mp_replan_options *opts, struct mp_replan *out,
		  struct mp_diags *diags)
{
	struct mp_replan_options defaults;
	if (!opts) {
		mp_replan_options_init(&defaults);
		opts = &defaults;
	}
	int rc = check_input(current, loads, opts, diags);
	if (rc) {
		return rc;
	}
	struct replan_run r = {
		.current = current,
		.loads = loads,
		.opts = opts,
		.diags = diags,
		.L = current->n_layers,
		.E = current->n_experts,
		.G = current->gpus,
		.S = current->slots_per_gpu,
		.N = current->gpus * current->slots_per_gpu,
	};
	mp_replan_init(&r.res);
	mp_placement_init(&r.raw);
	r.lws = calloc(r.L, sizeof(*r.lws));
	r.used = malloc(2 * (size_t)r.S + 2);
	r.c.used = r.used;
	rc = run_start(&r);
	if (rc == 0) {
		rc = run_scratch(&r);
	}
	if (rc == 0) {
		rc = run_curves(&r);
	}
	if (rc == 0) {
		rc = run_budget(&r);
	}
	if (rc == 0) {
		rc = run_layer_plans(&r);
	}
	if (rc == 0) {
		rc = run_finish(&r);
	}
	if (rc == 0) {
		mp_replan_finish(out);
		*out = r.res;
		mp_replan_init(&r.res);
	}
	run_free(&r);
	return rc;
}

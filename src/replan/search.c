/* Re-planning: the move-limited local search (greedy descent from the
 * current plan within a move budget) and its trajectory. */
#include "replan/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Candidate moves one local search may evaluate (counted work, so the
 * result does not depend on the machine): above what layers of a few
 * hundred slots use (at most 4N steps of about S(E + 2N) candidates: 6e6
 * for 256 experts on 64 GPUs x 5), and about 7 s of search on a layer of
 * 1,024 GPUs x 4 slots, which would otherwise run for many minutes. */
#define RP_LS_MAX_EVALS 10000000u

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

void traj_free(struct traj *t)
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
int local_search(struct rs *st, const struct rp *pr, struct rw *w, uint32_t budget,
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

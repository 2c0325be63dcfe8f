/* Re-planning: the move-limited local search (greedy descent from the
 * current plan within a move budget) and its trajectory. */
#include "replan/internal.h"
#include "placement/internal.h"

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

/* The two largest loads when the GPUs in work->changed take new loads
 * (load + delta) and the others keep theirs. */
static void top2(const struct rp_state *st, const struct rp_instance *inst, const struct rp_work *work,
		 uint32_t n_changed, double *m1, double *m2)
{
	double a = -HUGE_VAL;
	double b = -HUGE_VAL;
	uint32_t found = 0;
	for (uint32_t i = 0; i < inst->G && found < 2; i++) {
		uint32_t g = st->order[i];
		if (work->stamp[g] == work->mark) {
			continue;
		}
		if (found == 0) {
			a = st->load[g];
		} else {
			b = st->load[g];
		}
		found++;
	}
	for (uint32_t i = 0; i < n_changed; i++) {
		uint32_t g = work->changed[i];
		double v = st->load[g] + work->delta[g];
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

static inline void touch(struct rp_work *work, uint32_t g, uint32_t *n_changed)
{
	if (work->stamp[g] != work->mark) {
		work->stamp[g] = work->mark;
		work->delta[g] = 0;
		work->changed[(*n_changed)++] = g;
	}
}

static void next_mark(struct rp_work *work, uint32_t G)
{
	if (++work->mark == 0) {
		memset(work->stamp, 0, sizeof(*work->stamp) * G);
		work->mark = 1;
	}
}

/* Slot p (GPU g, expert e, r_e >= 2) re-assigned to f (not on g). */
static void eval_reassign(const struct rp_state *st, const struct rp_instance *inst, struct rp_work *work,
			  uint32_t p, uint32_t f, double *m1, double *m2)
{
	uint32_t g = p / inst->S;
	uint32_t e = st->slot[p];
	uint32_t re = st->replicas[e];
	uint32_t rf = st->replicas[f];
	next_mark(work, inst->G);
	uint32_t n_changed = 0;
	double de = share(inst, e, re - 1) - share(inst, e, re);
	for (uint32_t q = st->head[e]; q != UINT32_MAX; q = st->next[q]) {
		uint32_t h = q / inst->S;
		touch(work, h, &n_changed);
		work->delta[h] += q == p ? -share(inst, e, re) : de;
	}
	double df = share(inst, f, rf + 1) - share(inst, f, rf);
	for (uint32_t q = st->head[f]; q != UINT32_MAX; q = st->next[q]) {
		uint32_t h = q / inst->S;
		touch(work, h, &n_changed);
		work->delta[h] += df;
	}
	touch(work, g, &n_changed);
	work->delta[g] += share(inst, f, rf + 1);
	top2(st, inst, work, n_changed, m1, m2);
}

/* Slots p (GPU g, expert e) and q (GPU h, expert f) swap experts. */
static void eval_swap(const struct rp_state *st, const struct rp_instance *inst, struct rp_work *work,
		      uint32_t p, uint32_t q, double *m1, double *m2)
{
	uint32_t g = p / inst->S;
	uint32_t h = q / inst->S;
	uint32_t e = st->slot[p];
	uint32_t f = st->slot[q];
	double d = share(inst, f, st->replicas[f]) - share(inst, e, st->replicas[e]);
	next_mark(work, inst->G);
	uint32_t n_changed = 0;
	touch(work, g, &n_changed);
	touch(work, h, &n_changed);
	work->delta[g] = d;
	work->delta[h] = -d;
	top2(st, inst, work, n_changed, m1, m2);
}

/* ------------------------------------------------------------------ */
/* Local search.                                                       */

void rp_trajectory_free(struct rp_trajectory *t)
{
	free(t->steps);
	memset(t, 0, sizeof(*t));
}

static int trajectory_push(struct rp_trajectory *t, struct rp_step s)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct rp_step *n = realloc(t->steps, cap * sizeof(*n));
		if (!n) {
			return MP_ENOMEM;
		}
		t->steps = n;
		t->cap = cap;
	}
	t->steps[t->n++] = s;
	return 0;
}

struct best_step {
	bool found;
	int tier;         /* 0: no extra moves; 1: costs moves */
	double k1, k2;    /* gain in max, in second max (per move in tier 1) */
	int dm;
	struct rp_step s;
};

static void consider(struct best_step *b, const struct rp_state *st, const struct rp_instance *inst,
		     double m1, double m2, int dm, uint32_t budget, struct rp_step s, double cur1,
		     double cur2)
{
	if ((int64_t)st->moves + dm > (int64_t)budget) {
		return;
	}
	double g1 = cur1 - m1;
	double g2 = cur2 - m2;
	if (g1 > inst->tol) {
		/* the busiest GPU gets lighter */
	} else if (g1 >= -inst->tol && g2 > inst->tol) {
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
	} else if (k1 > b->k1 * (1 + 1e-12) + inst->tol * 1e-3) {
		better = true;
	} else if (k1 < b->k1 * (1 - 1e-12) - inst->tol * 1e-3) {
		better = false;
	} else if (k2 > b->k2 * (1 + 1e-12) + inst->tol * 1e-3) {
		better = true;
	} else if (k2 < b->k2 * (1 - 1e-12) - inst->tol * 1e-3) {
		better = false;
	} else {
		better = dm < b->dm;
	}
	if (better) {
		*b = (struct best_step){.found = true, .tier = tier, .k1 = k1, .k2 = k2, .dm = dm, .s = s};
	}
}

static void apply_step(struct rp_state *st, const struct rp_instance *inst, const struct rp_step *s)
{
	if (s->q != UINT32_MAX) {
		rp_state_set(st, inst, s->p, s->f);
		rp_state_set(st, inst, s->q, s->e);
	} else {
		rp_state_set(st, inst, s->p, s->f);
	}
	rp_state_eval(st, inst);
}

/* One step's search for the best candidate: the state, its busiest GPU
 * and that GPU's and the runner-up's loads, and the best candidate so far. */
struct step_search {
	const struct rp_state *st;
	const struct rp_instance *inst;
	struct rp_work *work;
	uint32_t budget;
	uint32_t m;        /* the busiest GPU */
	double cur1, cur2; /* the largest and second largest loads */
	struct best_step b;
};

/* One reassignment candidate, counted and scored: slot p (of GPU p / S,
 * holding expert st->slot[p]) goes to expert f. */
static void consider_reassign(struct step_search *ss, uint32_t p, uint32_t f)
{
	const struct rp_state *st = ss->st;
	const struct rp_instance *inst = ss->inst;
	double m1;
	double m2;
	eval_reassign(st, inst, ss->work, p, f, &m1, &m2);
	ss->work->evals++;
	struct rp_step s = {.p = p, .f = f, .q = UINT32_MAX};
	int dm = rp_move_delta(st, inst, p / inst->S, st->slot[p], f);
	consider(&ss->b, st, inst, m1, m2, dm, ss->budget, s, ss->cur1, ss->cur2);
}

/* A: a slot of the busiest GPU goes to an expert it does not hold. */
static void try_reassign_busiest(struct step_search *ss)
{
	const struct rp_state *st = ss->st;
	const struct rp_instance *inst = ss->inst;
	uint32_t m = ss->m;
	uint32_t S = inst->S;
	for (uint32_t p = m * S; p < (m + 1) * S; p++) {
		uint32_t e = st->slot[p];
		if (st->replicas[e] < 2) {
			continue;
		}
		for (uint32_t f = 0; f < inst->E; f++) {
			if (f == e || count_get(st->count, inst, m, f)) {
				continue;
			}
			consider_reassign(ss, p, f);
		}
	}
}

/* B: an expert of the busiest GPU gains a replica elsewhere. */
static void try_new_replica(struct step_search *ss)
{
	const struct rp_state *st = ss->st;
	const struct rp_instance *inst = ss->inst;
	struct rp_work *work = ss->work;
	uint32_t m = ss->m;
	uint32_t S = inst->S;
	if (++work->expert_mark == 0) {
		memset(work->expert_stamp, 0, sizeof(*work->expert_stamp) * inst->E);
		work->expert_mark = 1;
	}
	for (uint32_t pm = m * S; pm < (m + 1) * S; pm++) {
		uint32_t f = st->slot[pm];
		if (work->expert_stamp[f] == work->expert_mark || inst->w[f] <= 0) {
			continue;
		}
		work->expert_stamp[f] = work->expert_mark;
		for (uint32_t p = 0; p < inst->N; p++) {
			uint32_t h = p / S;
			uint32_t e = st->slot[p];
			if (h == m || e == f || st->replicas[e] < 2 || count_get(st->count, inst, h, f)) {
				continue;
			}
			consider_reassign(ss, p, f);
		}
	}
}

/* C: swap a slot of the busiest GPU with a slot elsewhere. */
static void try_swaps(struct step_search *ss)
{
	const struct rp_state *st = ss->st;
	const struct rp_instance *inst = ss->inst;
	uint32_t m = ss->m;
	uint32_t S = inst->S;
	double m1;
	double m2;
	for (uint32_t p = m * S; p < (m + 1) * S; p++) {
		uint32_t e = st->slot[p];
		for (uint32_t q = 0; q < inst->N; q++) {
			uint32_t h = q / S;
			uint32_t f = st->slot[q];
			if (h == m || f == e || count_get(st->count, inst, h, e) ||
			    count_get(st->count, inst, m, f)) {
				continue;
			}
			if (share(inst, f, st->replicas[f]) >= share(inst, e, st->replicas[e])) {
				continue; /* the busiest GPU would not get lighter */
			}
			eval_swap(st, inst, ss->work, p, q, &m1, &m2);
			ss->work->evals++;
			int dm = rp_move_delta(st, inst, m, e, f) + rp_move_delta(st, inst, h, f, e);
			struct rp_step s = {.p = p, .f = f, .q = q, .e = e};
			consider(&ss->b, st, inst, m1, m2, dm, ss->budget, s, ss->cur1, ss->cur2);
		}
	}
}

/* Greedy descent from st's state with at most `budget` moves (counted from
 * orig), steps appended to t (t may be NULL): each step takes the best
 * candidate of the three kinds above. */
int rp_local_search(struct rp_state *st, const struct rp_instance *inst, struct rp_work *work,
		    uint32_t budget, struct rp_trajectory *t)
{
	size_t max_steps = 4 * (size_t)inst->N + 16;
	work->evals = 0;
	for (size_t it = 0; it < max_steps; it++) {
		if (inst->G < 2 || st->max <= inst->lb + inst->tol || work->evals >= RP_LS_MAX_EVALS) {
			break;
		}
		if (pl_now() > work->deadline) {
			work->timed_out = true;
			break;
		}
		struct step_search ss = {
			.st = st,
			.inst = inst,
			.work = work,
			.budget = budget,
			.m = st->order[0],
			.cur1 = st->load[st->order[0]],
			.cur2 = st->load[st->order[1]],
		};
		try_reassign_busiest(&ss);
		try_new_replica(&ss);
		try_swaps(&ss);
		if (!ss.b.found) {
			break;
		}
		apply_step(st, inst, &ss.b.s);
		if (t) {
			ss.b.s.moves = st->moves;
			ss.b.s.max = st->max;
			int rc = trajectory_push(t, ss.b.s);
			if (rc) {
				return rc;
			}
		}
	}
	return 0;
}

/* Placement: the exact threshold test for two slots per GPU (S = 2; issue
 * 25, EP144 x 2), over every choice of replica counts at once.
 *
 * Question: is there a plan whose busiest GPU is <= T? Every slot holds a
 * replica (sum_e r_e = N = 2G) and a replica of e carries a = w_e / r_e.
 * For fixed counts the items pair largest with smallest (few-slot.c), and
 * that pairing has max <= T if and only if, for every t in (0, T/2],
 *     #{items >= T/2 + t}  <=  #{items <= T/2 - t}          (Hall)
 * (necessary: each item >= T/2 + t needs its own partner <= T/2 - t;
 * sufficient: with the condition the k-th largest item fits the k-th
 * smallest). Per expert, demand minus partners at t is
 *     f_e(r, t) = r [t <= a - T/2]    when a = w_e / r > T/2 (big),
 *                 -r [a <= T/2 - t]   otherwise (small),
 * and the condition is sum_e f_e(r_e, t) <= 0 for all t. The sum is a step
 * function of t that rises only where a big item's term ends, at
 * t = a - T/2, so its maximum over (0, T/2] is taken at one of those
 * points or at T/2.
 *
 * The test is a small MIP: a binary y_{e,r} for every count r of every
 * expert from lo_e = ceil(w_e / T) (a replica above T is over T alone) to
 * lo_e + spare (spare = N - sum lo: no expert can take more), with
 * sum_r y_{e,r} = 1, sum r y = N, and one row sum f y <= 0 per point.
 * Every plan with max <= T has counts that satisfy the MIP, so:
 *  - MIP infeasible: no plan has max <= T (ignoring even the rule that no
 *    GPU holds one expert twice, which only removes plans): T is a valid
 *    lower bound. Classification uses T (1 + 1e-9), so that rounding of
 *    a - T/2 against T/2 - b cannot hide a pair summing to T.
 *  - MIP feasible: those counts pair to max <= T (checked again by LB2,
 *    pl_fs_pair_bound), a plan to offer once its duplicates are repaired.
 * The MIP has E (spare + 1) columns; layers where that exceeds
 * P2_MAX_COLS are left to the other stages. GLPK's branch and bound stops
 * on counted work (its simplex iterations and nodes), never on the clock
 * alone, so the answer is the same everywhere. The test (test-fewslot.c)
 * pins the decision against an exhaustive enumeration of counts and
 * pairings on small layers.
 */
#include "placement/exact.h"
#include "placement/glpk-internal.h"
#include "placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack of the classification threshold (see the top comment). */
#define P2_SLACK 1e-9
/* Work units charged per branch-and-bound node (as mip.c). */
#define P2_NODE_WORK 20
/* Largest MIP built: columns E (spare + 1). */
#define P2_MAX_COLS 20000
/* Budget of the exact search (pair-search.c) per test, in point
 * evaluations, times effort in pl_p2_close: about 10 ms on the development
 * machine. EP144 x 2 at Zipf 0.6 (60 points, spare 9) decides the goal
 * test and the test of the optimum in about 1e6 each. */
#define P2_SEARCH_WORK 2e7

struct p2 {
	const struct pl_prob *prob;
	double Tc;          /* classification threshold */
	uint32_t spare;     /* N - sum lo */
	uint32_t *lo;       /* [E] least count */
	double *pts;        /* [npts] row points t */
	size_t npts;
	uint32_t *r;        /* [E] answer */
	uint64_t limit, used;
	bool stopped;
	int result;         /* PL_P2_* */
};

/* Demand minus partners of one expert's r items at t (top comment). */
static double coef(const struct p2 *p, uint32_t e, uint32_t r, double t)
{
	double a = p->prob->w[e] / r;
	double h = p->Tc / 2;
	if (a > h) {
		return t <= a - h ? (double)r : 0.0;
	}
	return a <= h - t ? -(double)r : 0.0;
}

/* Stops the branch and bound (glp_ios_terminate) once GLPK's simplex
 * iterations plus P2_NODE_WORK per node reach the budget. */
static void p2_callback(glp_tree *tree, void *info)
{
	struct p2 *p = info;
	p->used = pl_glpk_tree_work(tree, P2_NODE_WORK);
	if (!p->stopped && p->used >= p->limit) {
		p->stopped = true;
		glp_ios_terminate(tree);
	}
}

/* Rows: 1..npts the points (<= 0), npts + 1 the count (= N), npts + 2 + e
 * expert e's choice (= 1). Column of (e, r): e (spare + 1) + r - lo + 1. */
static void add_cols(glp_prob *lp, const struct p2 *p, struct pl_triplets *t)
{
	const struct pl_prob *prob = p->prob;
	int count_row = (int)p->npts + 1;
	int col = 0;
	for (uint32_t e = 0; e < prob->E; e++) {
		for (uint32_t r = p->lo[e]; r <= p->lo[e] + p->spare; r++) {
			col++;
			glp_set_col_kind(lp, col, GLP_BV);
			for (size_t i = 0; i < p->npts; i++) {
				double c = coef(p, e, r, p->pts[i]);
				if (c != 0) {
					pl_trip_add(t, (int)(i + 1), col, c);
				}
			}
			pl_trip_add(t, count_row, col, (double)r);
			pl_trip_add(t, count_row + 1 + (int)e, col, 1.0);
		}
	}
}

static int p2_model(glp_prob *lp, void *ctx)
{
	struct p2 *p = ctx;
	const struct pl_prob *prob = p->prob;
	glp_add_rows(lp, (int)p->npts + 1 + (int)prob->E);
	for (int i = 1; i <= (int)p->npts; i++) {
		glp_set_row_bnds(lp, i, GLP_UP, 0.0, 0.0);
	}
	glp_set_row_bnds(lp, (int)p->npts + 1, GLP_FX, (double)prob->N, (double)prob->N);
	for (uint32_t e = 0; e < prob->E; e++) {
		glp_set_row_bnds(lp, (int)p->npts + 2 + (int)e, GLP_FX, 1.0, 1.0);
	}
	glp_add_cols(lp, (int)(prob->E * (p->spare + 1)));
	struct pl_triplets t = { 0 };
	add_cols(lp, p, &t);
	bool loaded = pl_trip_load(lp, &t);
	pl_trip_free(&t);
	if (!loaded) {
		return MP_ENOMEM;
	}
	glp_iocp parm;
	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = GLP_MSG_OFF;
	parm.cb_func = p2_callback;
	parm.cb_info = p;
	int ret = glp_intopt(lp, &parm);
	int st = glp_mip_status(lp);
	p->result = PL_P2_UNKNOWN;
	if (ret == GLP_ENOPFS || ret == GLP_ENODFS || (ret == 0 && st == GLP_NOFEAS)) {
		p->result = PL_P2_INFEASIBLE;
	} else if (st == GLP_OPT || st == GLP_FEAS) {
		int col = 0;
		for (uint32_t e = 0; e < prob->E; e++) {
			for (uint32_t r = p->lo[e]; r <= p->lo[e] + p->spare; r++) {
				if (glp_mip_col_val(lp, ++col) > 0.5) {
					p->r[e] = r;
				}
			}
		}
		p->result = PL_P2_FEASIBLE;
	}
	return 0;
}

int pl_p2_mip(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r,
	      uint64_t max_cols)
{
	if (prob->S != 2 || !(T > 0) || *budget == 0) {
		return PL_P2_UNKNOWN;
	}
	struct p2 p = { .prob = prob, .Tc = T * (1 + P2_SLACK), .r = r, .limit = *budget };
	p.lo = malloc(sizeof(*p.lo) * prob->E);
	int rc = PL_P2_UNKNOWN;
	if (!p.lo) {
		rc = MP_ENOMEM;
		goto out;
	}
	if (!pl_p2_least_counts(prob, p.Tc, p.lo, &p.spare)) {
		rc = PL_P2_INFEASIBLE;
		goto out;
	}
	if ((uint64_t)prob->E * (p.spare + 1) > max_cols) {
		goto out;
	}
	if (pl_p2_points(prob, p.Tc, p.lo, p.spare, &p.pts, &p.npts) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	int g = pl_glpk_run(false, p2_model, &p, MP_ELIMIT);
	*budget -= p.used < *budget ? p.used : *budget;
	if (g != 0) {
		rc = g == MP_ENOMEM ? MP_ENOMEM : PL_P2_UNKNOWN;
	} else if (p.result == PL_P2_INFEASIBLE && !p.stopped) {
		rc = PL_P2_INFEASIBLE;
	} else if (p.result == PL_P2_FEASIBLE && pl_fs_pair_bound(prob, r) <= p.Tc) {
		rc = PL_P2_FEASIBLE;
	}
out:
	free(p.lo);
	free(p.pts);
	return rc;
}

/* The exact search first (pair-search.c: no GLPK, milliseconds where it
 * decides), the MIP where it runs out of its budget. A feasible answer of
 * either is checked by LB2 before it is returned. */
static int p2_decide(const struct pl_prob *prob, double T, uint64_t search_budget,
		     uint64_t *budget, uint32_t *r, uint64_t max_cols)
{
	int d = pl_p2_search(prob, T, &search_budget, r);
	if (d == PL_P2_FEASIBLE && !(pl_fs_pair_bound(prob, r) <= T * (1 + P2_SLACK))) {
		d = PL_P2_UNKNOWN; /* cannot happen: the search's leaves satisfy the condition */
	}
	if (d != PL_P2_UNKNOWN) {
		return d;
	}
	return pl_p2_mip(prob, T, budget, r, max_cols);
}

int pl_p2_decide(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r)
{
	return p2_decide(prob, T, P2_SEARCH_WORK, budget, r, P2_MAX_COLS);
}

/* Work units (GLPK simplex iterations plus P2_NODE_WORK per node), times
 * effort: P2_WORK for a test at the gap goal, P2_MORE_WORK for a test of
 * the optimum. About 1,000 iterations of a 256-expert model take a second on
 * the development machine; the tests that close a layer are decided by
 * GLPK's presolve (no iterations at all), a hard one is given up early. */
#define P2_WORK 3e3
#define P2_MORE_WORK 1e2
/* Largest model for the test of the optimum once this stage met the gap
 * goal itself: GLPK's presolve of the dense model is the cost of a test
 * (not its simplex iterations, which the budget counts), and on Zipf 0.6
 * at EP144 x 2 (2,560 columns) the test took 58% of the layer's time and
 * never decided; on Zipf 1.0 (1,024 columns) it proves the optimum in
 * milliseconds. */
#define P2_OPTIMUM_MAX_COLS 1024
/* Threshold tests per layer. */
#define P2_STEPS 6

static uint64_t p2_units(double units, double effort)
{
	double v = floor(units * effort);
	return v < 1 ? 1 : v > 1e12 ? (uint64_t)1e12 : (uint64_t)v;
}

int pl_p2_close(const struct pl_prob *prob, struct pl_sol *best, double *lb, double effort,
		struct pl_work *work, double deadline, bool *proven)
{
	*proven = false;
	if (prob->S != 2 || prob->N <= prob->E || !(best->max > 0)) {
		return 0;
	}
	uint32_t *r = malloc(sizeof(*r) * prob->E);
	struct pl_sol cand = { 0 };
	int rc = 0;
	if (!r || pl_sol_alloc(&cand, prob) != 0) {
		rc = MP_ENOMEM;
		goto out;
	}
	bool goal_here = false; /* a test of this stage met the goal */
	for (int step = 0; step < P2_STEPS && !pl_timed_out(work, deadline); step++) {
		double hi = best->max;
		if (*lb >= hi - prob->tol) {
			break;
		}
		/* the gap goal (0.4% below the plan); where the other bounds
		 * already meet it, the optimum itself, with a small budget */
		double goal = hi * (1 - 0.8 * PL_GAP_GOAL);
		bool at_goal = *lb >= goal;
		double T = at_goal ? hi - prob->tol / 2 : goal;
		uint64_t budget = p2_units(at_goal ? P2_MORE_WORK : P2_WORK, effort);
		int d = p2_decide(prob, T, p2_units(P2_SEARCH_WORK, effort), &budget, r,
				  goal_here ? P2_OPTIMUM_MAX_COLS : P2_MAX_COLS);
		if (d < 0) {
			rc = d;
			goto out;
		}
		if (d == PL_P2_INFEASIBLE) {
			/* the goal proven: next, the optimum (cheap where the
			 * plan is optimal, as on Zipf 1.0 layers) */
			*lb = T > *lb ? T : *lb;
			if (at_goal) {
				break;
			}
			goal_here = true;
			continue;
		}
		if (d != PL_P2_FEASIBLE || !pl_fs_pack(prob, r, &cand)) {
			break;
		}
		/* a better plan: test again below it */
		pl_improve(prob, &cand, work, deadline);
		if (!pl_x_accept(prob, best, &cand) || !(best->max < hi)) {
			break;
		}
	}
	/* the bound met the plan within the tolerance: the same test in exact
	 * arithmetic, one unit below the plan, proves it optimal */
	if (*lb >= best->max - prob->tol && !pl_timed_out(work, deadline)) {
		uint64_t points = p2_units(P2_SEARCH_WORK, effort);
		int d = pl_p2_search_exact(prob, best, &points);
		if (d < 0) {
			rc = d;
			goto out;
		}
		*proven = d == PL_P2_INFEASIBLE;
	}
out:
	pl_sol_free(&cand);
	free(r);
	return rc;
}

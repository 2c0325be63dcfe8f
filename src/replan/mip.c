/* Re-planning: the GLPK MIP of one layer with a move budget or a move
 * cost.
 *
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
#include "replan/internal.h"
#include "placement/internal.h"
#include "placement/glpk-internal.h"

#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

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


static uint32_t mip_replicas_max(const struct rp *pr)
{
	uint32_t R = pr->N - pr->E + 1;
	return R < pr->G ? R : pr->G;
}

size_t mip_columns(const struct rp *pr)
{
	size_t R = mip_replicas_max(pr);
	return (size_t)pr->E * pr->G * R + (size_t)pr->E * R + 1;
}

enum mip_result mip_solve(struct mip_job *job)
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

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

#include <math.h>
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

struct mip_progress {
	const double *seed; /* [ncols + 1] */
	bool seeded;
	double bound;       /* best node bound seen (objective units) */
	bool have_bound;
	int it_start;       /* simplex iterations before the search */
	int it_limit;       /* work budget: simplex iterations in the search */
	int node_limit;     /* work budget: subproblems created */
	bool spent;         /* a budget stopped the search (glp_ios_terminate) */
};

static void mip_callback(glp_tree *tree, void *info)
{
	struct mip_progress *cb = info;
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

static uint32_t mip_replicas_max(const struct rp_instance *inst)
{
	uint32_t R = inst->N - inst->E + 1;
	return R < inst->G ? R : inst->G;
}

size_t rp_mip_columns(const struct rp_instance *inst)
{
	size_t R = mip_replicas_max(inst);
	return (size_t)inst->E * inst->G * R + (size_t)inst->E * R + 1;
}

/* One layer's MIP: the job, the model's shape and rows, and the scratch,
 * in the caller's frame so that a GLPK error (pl_glpk_run) loses none of
 * it. */
struct mip_model {
	struct rp_mip_job *job;
	const struct rp_instance *inst;
	uint32_t R;            /* most replicas of an expert (mip_replicas_max) */
	size_t ncols;          /* z columns, then y columns from ycol0, then T */
	int ycol0;
	int tcol;
	double scale;          /* loads in units of the incumbent's busiest GPU */
	struct pl_triplets t;
	struct {
		int one;       /* [E] sum_r y[e][r] = 1 */
		int rep;       /* [E][R] sum_g z[e][g][r] = r y[e][r] */
		int slots;     /* [G] S slots */
		int dup;       /* [E][G] one replica per GPU (R >= 2) */
		int n_dup;
		int load;      /* [G] the GPU's load <= T */
		int keep;      /* the experts kept in place */
		int n;         /* rows in all */
	} rows;
	double *seed;          /* [ncols + 1] the incumbent as a column vector */
	uint32_t *set;         /* [N] the MIP's plan, GPU by GPU */
	uint32_t *fill;        /* [G] */
	unsigned char *used;   /* [2 S] rp_canonical_slots' scratch */
	uint32_t *rseed;       /* [E] the incumbent's replica counts */
	struct mip_progress cb;
};

/* Column of z[e][g][r] and of y[e][r] (1 <= r <= R). */
static int zc(const struct mip_model *m, uint32_t e, uint32_t g, uint32_t r)
{
	return (int)(((size_t)e * m->inst->G + g) * m->R + (r - 1)) + 1;
}

static int yc(const struct mip_model *m, uint32_t e, uint32_t r)
{
	return m->ycol0 + (int)((size_t)e * m->R + (r - 1));
}

/* Binary z and y (a replica heavier than the incumbent's busiest GPU
 * cannot help: fixed to 0, unless it is the incumbent's count), and T. */
static void mip_add_columns(glp_prob *lp, const struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	const struct rp_mip_job *job = m->job;
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, (int)m->ncols);
	double cutoff = job->cost_mode ? HUGE_VAL : job->seed_max;
	for (uint32_t e = 0; e < inst->E; e++) {
		for (uint32_t r = 1; r <= m->R; r++) {
			bool off = inst->w[e] / r > cutoff + inst->tol && r != m->rseed[e];
			glp_set_col_kind(lp, yc(m, e, r), GLP_BV);
			if (off) {
				glp_set_col_bnds(lp, yc(m, e, r), GLP_FX, 0, 0);
			}
			for (uint32_t g = 0; g < inst->G; g++) {
				glp_set_col_kind(lp, zc(m, e, g, r), GLP_BV);
				if (off) {
					glp_set_col_bnds(lp, zc(m, e, g, r), GLP_FX, 0, 0);
				}
			}
		}
	}
	if (job->cost_mode) {
		glp_set_col_bnds(lp, m->tcol, GLP_LO, inst->lb / m->scale, 0);
		glp_set_obj_coef(lp, m->tcol, job->a * m->scale);
	} else {
		double lo = inst->lb / m->scale;
		double hi = 1.0;
		glp_set_col_bnds(lp, m->tcol, lo < hi ? GLP_DB : GLP_FX, lo < hi ? lo : hi, hi);
		glp_set_obj_coef(lp, m->tcol, 1.0);
	}
}

/* The rows that make a placement: one count per expert, r replicas when
 * r is chosen, S slots per GPU, one replica of an expert per GPU. */
static void mip_placement_rows(struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	uint32_t R = m->R;
	struct pl_triplets *t = &m->t;
	int row = 0;
	m->rows.one = row + 1;
	for (uint32_t e = 0; e < inst->E; e++) {
		row++;
		for (uint32_t r = 1; r <= R; r++) {
			pl_trip_add(t, row, yc(m, e, r), 1.0);
		}
	}
	m->rows.rep = row + 1;
	for (uint32_t e = 0; e < inst->E; e++) {
		for (uint32_t r = 1; r <= R; r++) {
			row++;
			for (uint32_t g = 0; g < inst->G; g++) {
				pl_trip_add(t, row, zc(m, e, g, r), 1.0);
			}
			pl_trip_add(t, row, yc(m, e, r), -(double)r);
		}
	}
	m->rows.slots = row + 1;
	for (uint32_t g = 0; g < inst->G; g++) {
		row++;
		for (uint32_t e = 0; e < inst->E; e++) {
			for (uint32_t r = 1; r <= R; r++) {
				pl_trip_add(t, row, zc(m, e, g, r), 1.0);
			}
		}
	}
	m->rows.dup = row + 1;
	if (R >= 2) {
		for (uint32_t e = 0; e < inst->E; e++) {
			for (uint32_t g = 0; g < inst->G; g++) {
				row++;
				for (uint32_t r = 1; r <= R; r++) {
					pl_trip_add(t, row, zc(m, e, g, r), 1.0);
				}
			}
		}
	}
	m->rows.n_dup = row - m->rows.dup + 1;
	m->rows.n = row;
}

/* The busiest GPU (each GPU's load <= T) and the experts kept in place
 * (kept = sum over the old (g, e) pairs of z; in cost mode each kept one
 * earns b in the objective). */
static void mip_load_keep_rows(glp_prob *lp, struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	struct pl_triplets *t = &m->t;
	int row = m->rows.n;
	m->rows.load = row + 1;
	for (uint32_t g = 0; g < inst->G; g++) {
		row++;
		for (uint32_t e = 0; e < inst->E; e++) {
			if (inst->w[e] <= 0) {
				continue;
			}
			for (uint32_t r = 1; r <= m->R; r++) {
				pl_trip_add(t, row, zc(m, e, g, r), inst->w[e] / r / m->scale);
			}
		}
		pl_trip_add(t, row, m->tcol, -1.0);
	}
	m->rows.keep = row + 1;
	row++;
	for (uint32_t g = 0; g < inst->G; g++) {
		for (uint32_t e = 0; e < inst->E; e++) {
			if (!count_get(inst->orig_count, inst, g, e)) {
				continue;
			}
			for (uint32_t r = 1; r <= m->R; r++) {
				pl_trip_add(t, row, zc(m, e, g, r), 1.0);
				if (m->job->cost_mode) {
					double c = glp_get_obj_coef(lp, zc(m, e, g, r));
					glp_set_obj_coef(lp, zc(m, e, g, r), c - m->job->b);
				}
			}
		}
	}
	m->rows.n = row;
}

/* The rows' bounds; the move budget holds N - budget experts in place. */
static void mip_row_bounds(glp_prob *lp, const struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	glp_add_rows(lp, m->rows.n);
	for (uint32_t e = 0; e < inst->E; e++) {
		glp_set_row_bnds(lp, m->rows.one + (int)e, GLP_FX, 1, 1);
	}
	for (int k = 0; k < (int)(inst->E * m->R); k++) {
		glp_set_row_bnds(lp, m->rows.rep + k, GLP_FX, 0, 0);
	}
	for (uint32_t g = 0; g < inst->G; g++) {
		glp_set_row_bnds(lp, m->rows.slots + (int)g, GLP_FX, inst->S, inst->S);
		glp_set_row_bnds(lp, m->rows.load + (int)g, GLP_UP, 0, 0);
	}
	for (int k = 0; k < m->rows.n_dup; k++) {
		glp_set_row_bnds(lp, m->rows.dup + k, GLP_UP, 0, 1);
	}
	if (m->job->cost_mode) {
		glp_set_row_bnds(lp, m->rows.keep, GLP_FR, 0, 0);
	} else {
		double need = (double)inst->N - (double)m->job->budget;
		glp_set_row_bnds(lp, m->rows.keep, need > 0 ? GLP_LO : GLP_FR, need > 0 ? need : 0, 0);
	}
}

/* The incumbent as a full column vector (GLPK's heuristic solution). */
static void mip_seed_vector(struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	for (uint32_t p = 0; p < inst->N; p++) {
		uint32_t e = m->job->seed[p];
		m->seed[zc(m, e, p / inst->S, m->rseed[e])] = 1.0;
	}
	for (uint32_t e = 0; e < inst->E; e++) {
		m->seed[yc(m, e, m->rseed[e])] = 1.0;
	}
	m->seed[m->tcol] = m->job->seed_max / m->scale;
}

/* GLPK's time limit (ms) for what is left to the deadline; false when
 * under a millisecond is left. */
static bool mip_time_left(const struct mip_model *m, int *tm_lim)
{
	double left = m->job->deadline - pl_now();
	if (left < 0.001) {
		return false;
	}
	double ms = left * 1000.0;
	*tm_lim = ms > 2e9 ? 2000000000 : (int)ms + 1;
	return true;
}

/* The root LP within its iteration limit, and what its bound says.
 * Returns MIP_SKIPPED when branch and bound should follow, else the
 * layer's result (raises job->bound in budget mode). */
static enum rp_mip_result mip_root_lp(glp_prob *lp, struct mip_model *m)
{
	struct rp_mip_job *job = m->job;
	const struct rp_instance *inst = m->inst;
	glp_smcp sm;
	glp_init_smcp(&sm);
	sm.msg_lev = job->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	double dim = (double)m->rows.n + (double)m->ncols;
	double lp_its = RP_LP_ITS_PER_DIM * dim;
	sm.it_lim = lp_its > 2e9 ? 2000000000 : (int)lp_its;
	if (!mip_time_left(m, &sm.tm_lim)) {
		return MIP_NO_GAIN_TL;
	}
	int ret = glp_simplex(lp, &sm);
	if (ret == GLP_ETMLIM) {
		return MIP_NO_GAIN_TL;
	}
	if (ret == GLP_EITLIM) {
		return MIP_LP_ITS;
	}
	if (ret != 0 || glp_get_status(lp) != GLP_OPT) {
		return glp_get_status(lp) == GLP_NOFEAS ? MIP_NO_GAIN : MIP_ERROR;
	}
	/* The LP bound. Budget mode: T >= lb is a column bound, so an LP
	 * value at lb / scale says nothing the from-scratch bound does not.
	 * Cost mode: the trivial bound is a lb - b N (all kept at the bound). */
	double lpv = glp_get_obj_val(lp);
	double scale = m->scale;
	double seed_obj = job->cost_mode ? job->seed_cost - job->b * inst->N : 1.0;
	double trivial = job->cost_mode ? job->a * inst->lb - job->b * inst->N : inst->lb / scale;
	double otol = job->cost_mode ? job->a * inst->tol + 1e-12 * fabs(seed_obj) : inst->tol / scale;
	if (!job->cost_mode && lpv * scale > job->bound) {
		job->bound = lpv * scale > job->seed_max ? job->seed_max : lpv * scale;
	}
	if (lpv >= seed_obj - otol) {
		return MIP_LP_PROVED;
	}
	if (!job->search_if_weak && lpv <= trivial + otol) {
		return MIP_WEAK;
	}
	return MIP_SKIPPED;
}

/* The MIP's plan as job->out (canonical slots); false when it is not
 * S experts on every GPU. */
static bool mip_read_plan(glp_prob *lp, struct mip_model *m)
{
	const struct rp_instance *inst = m->inst;
	uint32_t S = inst->S;
	memset(m->fill, 0, sizeof(*m->fill) * inst->G);
	bool ok = true;
	for (uint32_t e = 0; e < inst->E && ok; e++) {
		for (uint32_t g = 0; g < inst->G && ok; g++) {
			double x = 0;
			for (uint32_t r = 1; r <= m->R; r++) {
				x += glp_mip_col_val(lp, zc(m, e, g, r));
			}
			if (x > 0.5) {
				if (m->fill[g] >= S) {
					ok = false;
					break;
				}
				m->set[(size_t)g * S + m->fill[g]++] = e;
			}
		}
	}
	for (uint32_t g = 0; g < inst->G && ok; g++) {
		ok = m->fill[g] == S;
	}
	if (ok) {
		rp_canonical_slots(inst, m->set, m->job->out, m->used);
	}
	return ok;
}

/* Branch and bound from the incumbent within the work budgets (from the
 * matrix's size) and the deadline; the bound (budget mode) and, when
 * better, the plan. */
static enum rp_mip_result mip_branch_and_bound(glp_prob *lp, struct mip_model *m)
{
	struct rp_mip_job *job = m->job;
	double dim = (double)m->rows.n + (double)m->ncols;
	double nnz = (double)glp_get_num_nz(lp) + dim;
	double bb_its = RP_MIP_WORK / nnz;
	double bb_nodes = bb_its / 8;
	m->cb = (struct mip_progress){
		.seed = m->seed,
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
	parm.cb_info = &m->cb;
	if (!mip_time_left(m, &parm.tm_lim)) {
		return MIP_NO_GAIN_TL;
	}
	int ret = glp_intopt(lp, &parm);
	int status = glp_mip_status(lp);
	bool proved = ret == 0 && status == GLP_OPT;
	bool timed = ret == GLP_ETMLIM;
	bool stopped = ret == GLP_ESTOP && m->cb.spent;
	bool have = (ret == 0 || timed || stopped) && (status == GLP_OPT || status == GLP_FEAS);
	if (ret == 0 && status == GLP_NOFEAS) {
		return MIP_NO_GAIN;
	}
	if (ret != 0 && !timed && !stopped) {
		return MIP_ERROR;
	}
	if (!job->cost_mode) {
		if (proved) {
			job->bound = glp_mip_obj_val(lp) * m->scale;
		} else if (m->cb.have_bound && m->cb.bound * m->scale > job->bound) {
			job->bound = m->cb.bound * m->scale;
		}
		if (job->bound > job->seed_max) {
			job->bound = job->seed_max;
		}
	}
	if (!have) {
		return proved ? MIP_NO_GAIN : timed ? MIP_NO_GAIN_TL : MIP_NO_GAIN_WORK;
	}
	if (!mip_read_plan(lp, m)) {
		return MIP_ERROR;
	}
	return proved ? MIP_IMPROVED : timed ? MIP_IMPROVED_TL : MIP_IMPROVED_WORK;
}

/* pl_glpk_run's model: build, root LP, branch and bound. */
static int mip_model_run(glp_prob *lp, void *ctx)
{
	struct mip_model *m = ctx;
	mip_add_columns(lp, m);
	mip_placement_rows(m);
	mip_load_keep_rows(lp, m);
	if (m->t.failed) {
		return MIP_ERROR;
	}
	mip_row_bounds(lp, m);
	pl_trip_load(lp, &m->t);
	pl_trip_free(&m->t);
	mip_seed_vector(m);
	enum rp_mip_result res = mip_root_lp(lp, m);
	if (res != MIP_SKIPPED) {
		return res;
	}
	return mip_branch_and_bound(lp, m);
}

enum rp_mip_result rp_mip_solve(struct rp_mip_job *job)
{
	const struct rp_instance *inst = job->inst;
	job->bound = inst->lb;
	struct mip_model m = {
		.job = job, .inst = inst, .R = mip_replicas_max(inst), .ncols = rp_mip_columns(inst),
		.scale = job->seed_max > 0 ? job->seed_max : 1.0,
	};
	if (m.ncols > RP_MIP_MAX_COLS) {
		return MIP_SKIPPED;
	}
	m.ycol0 = (int)((size_t)inst->E * inst->G * m.R) + 1;
	m.tcol = (int)m.ncols;
	m.seed = calloc(m.ncols + 1, sizeof(*m.seed));
	m.set = malloc(sizeof(*m.set) * inst->N);
	m.fill = calloc(inst->G, sizeof(*m.fill));
	m.used = malloc(2 * (size_t)inst->S);
	m.rseed = calloc(inst->E, sizeof(*m.rseed));
	enum rp_mip_result res = MIP_ERROR;
	if (m.seed && m.set && m.fill && m.used && m.rseed) {
		for (uint32_t p = 0; p < inst->N; p++) {
			m.rseed[job->seed[p]]++;
		}
		res = (enum rp_mip_result)pl_glpk_run(job->verbose, mip_model_run, &m, MIP_ERROR);
	}
	pl_trip_free(&m.t);
	free(m.seed);
	free(m.set);
	free(m.fill);
	free(m.used);
	free(m.rseed);
	return res;
}

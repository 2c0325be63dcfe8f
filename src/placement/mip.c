/* Placement: GLPK models.
 *
 * Packing MIP for fixed replica counts, representatives formulation (the
 * asymmetric model of Campelo et al. for graph colouring, used for bin
 * packing with identical bins): items are sorted by size, p_1 >= ... >=
 * p_N; binary x[i][j] (j <= i) puts item i on the GPU whose first
 * (lowest-index) item is j, and x[j][j] = 1 makes item j the
 * representative of a GPU. Identical GPUs then have one labelling only.
 *
 *   min T
 *   sum_{j<=i} x[i][j] = 1                  every item placed
 *   sum_j x[j][j] = G                       G GPUs
 *   sum_{i>=j} x[i][j] = S x[j][j]          S slots each
 *   sum_{i>=j} p_i x[i][j] <= T             load
 *   x[i][j] <= x[j][j]                      only on an opened GPU
 *   sum_{i in e, i>j} x[i][j] <= x[j][j]    one replica of e per GPU
 *   x[i][j] = 0 when i, j are replicas of one expert
 *   lb <= T <= cutoff
 *
 * GLPK is not used by other threads on the same objects; Debian 12's GLPK
 * 5.0 keeps its environment in thread-local storage (glp_config("TLS")).
 */
#include "placement/internal.h"

#include "placement/glpk-internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cb_state {
	double bound;   /* best node bound seen, scaled */
	uint64_t limit; /* work units allowed (see pl_mip_pack) */
	uint64_t used;  /* work units seen so far */
	bool stopped;   /* the budget ended the search */
};

/* Called by glp_intopt at every step of the branch-and-cut: records the
 * best node bound and stops the search (glp_ios_terminate) once its work,
 * GLPK's own counts of simplex iterations (glp_get_it_cnt) and of
 * branch-and-bound nodes (glp_ios_tree_size), reaches the budget. The
 * counts do not depend on the machine, so the stop comes at the same
 * point of the search everywhere. */
static void mip_callback(glp_tree *tree, void *info)
{
	struct cb_state *st = info;
	int p = glp_ios_best_node(tree);
	if (p != 0) {
		double b = glp_ios_node_bound(tree, p);
		if (b > st->bound) {
			st->bound = b;
		}
	}
	st->used = pl_glpk_tree_work(tree, PL_MIP_NODE_WORK);
	if (!st->stopped && st->used >= st->limit) {
		st->stopped = true;
		glp_ios_terminate(tree);
	}
}

/* Column of x[i][j] (j <= i): the lower triangle row by row. */
static int col_of(uint32_t i, uint32_t j)
{
	return (int)((uint64_t)i * (i + 1) / 2 + j + 1);
}

/* The first row of each family of constraints and how many (rows are
 * numbered from 1 in the order listed at the top of the file). */
struct pack_rows {
	int n_assign; /* rows 1..n_assign: every item placed */
	int gpus;     /* G GPUs */
	int card;     /* [N] S slots on the GPU of representative j */
	int load;     /* [N] load of that GPU <= T */
	int link;     /* x[i][j] <= x[j][j] */
	int n_link;
	int dup;      /* one replica of an expert per GPU */
	int n_dup;
	int n;        /* rows in all */
};

/* One packing MIP: the items, the model and what the search found. Lives
 * in the caller's frame, so that a GLPK error (pl_glpk_run) loses none of
 * it. */
struct pack {
	const struct pl_prob *prob;
	struct pl_work *work;
	struct pl_sol *sol;
	bool verbose;
	double lb;           /* the model's T >= lb */
	double cutoff;       /* and T <= cutoff; loads are scaled by 1 / cutoff */
	double remaining;    /* seconds to the deadline (INFINITY: none) */
	uint32_t *first;     /* [N] first item of item i's expert */
	uint32_t *last;      /* [N] its last item */
	uint32_t *rep_gpu;   /* [N] GPU of representative j, reading the solution */
	struct pl_triplets t;
	struct pack_rows rows;
	struct cb_state st;
	double bound;        /* a valid lower bound for r (*bound_out) */
};

/* The budget before a model is built: PL_MIP_NONE when lb already meets
 * the cutoff, PL_MIP_LIMIT when the work or the deadline is spent, else
 * PL_MIP_IMPROVED (go on; the call's work taken). */
static enum pl_mip_result pack_admit(struct pack *pk, double deadline)
{
	struct pl_work *work = pk->work;
	if (pk->lb >= pk->cutoff) {
		pk->bound = pk->cutoff;
		return PL_MIP_NONE;
	}
	if (work->mip_work < PL_MIP_CALL_WORK) {
		work->mip_work = 0;
		return PL_MIP_LIMIT;
	}
	work->mip_work -= PL_MIP_CALL_WORK;
	pk->remaining = deadline < (double)INFINITY ? deadline - pl_now() : (double)INFINITY;
	if (pk->remaining <= 0.001) {
		work->timed_out = true;
		return PL_MIP_LIMIT;
	}
	return PL_MIP_IMPROVED;
}

/* The items (replicas) sorted by size, experts by w / r, one expert's
 * replicas contiguous: work->items[N] their experts, work->size[N] their
 * sizes. */
static void pack_items(const struct pl_prob *prob, const uint32_t *r, struct pl_work *work)
{
	uint32_t E = prob->E;
	for (uint32_t e = 0; e < E; e++) {
		work->key[e] = prob->w[e] / r[e];
	}
	pl_sort_desc(work->order, work->key, E);
	uint32_t n = 0;
	for (uint32_t k = 0; k < E; k++) {
		uint32_t e = work->order[k];
		for (uint32_t c = 0; c < r[e]; c++) {
			work->items[n] = e;
			work->size[n] = work->key[e];
			n++;
		}
	}
}

/* first[i] and last[i]: the first and last item of item i's expert. */
static void pack_expert_ranges(struct pack *pk)
{
	uint32_t N = pk->prob->N;
	const uint32_t *it = pk->work->items;
	for (uint32_t i = 0; i < N; i++) {
		pk->first[i] = (i > 0 && it[i - 1] == it[i]) ? pk->first[i - 1] : i;
	}
	for (uint32_t i = N; i-- > 0;) {
		pk->last[i] = (i + 1 < N && it[i + 1] == it[i]) ? pk->last[i + 1] : i;
	}
}

/* Binary x[i][j] (x fixed to 0 where j is an earlier replica of i's
 * expert), then T in [lb, cutoff] (scaled), the objective. Returns T's
 * column. */
static int pack_columns(glp_prob *lp, const struct pack *pk)
{
	uint32_t N = pk->prob->N;
	int tcol = col_of(N - 1, N - 1) + 1;
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, tcol);
	for (uint32_t i = 0; i < N; i++) {
		for (uint32_t j = 0; j <= i; j++) {
			int c = col_of(i, j);
			glp_set_col_kind(lp, c, GLP_BV);
			if (j < i && pk->first[i] <= j) {
				glp_set_col_bnds(lp, c, GLP_FX, 0, 0);
			}
		}
	}
	glp_set_col_bnds(lp, tcol, GLP_DB, pk->lb / pk->cutoff, 1.0);
	glp_set_obj_coef(lp, tcol, 1.0);
	return tcol;
}

/* The packing rows: every item placed, G GPUs, S slots and the load of
 * each GPU (T's column tcol). */
static void pack_rows(struct pack *pk, int tcol)
{
	uint32_t N = pk->prob->N;
	uint32_t S = pk->prob->S;
	const double *p = pk->work->size;
	struct pl_triplets *t = &pk->t;
	int row = 0;
	for (uint32_t i = 0; i < N; i++) {
		row++;
		for (uint32_t j = 0; j <= i; j++) {
			pl_trip_add(t, row, col_of(i, j), 1.0);
		}
	}
	pk->rows.n_assign = row;
	row++;
	pk->rows.gpus = row;
	for (uint32_t j = 0; j < N; j++) {
		pl_trip_add(t, row, col_of(j, j), 1.0);
	}
	pk->rows.card = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		row++;
		pl_trip_add(t, row, col_of(j, j), 1.0 - (double)S);
		for (uint32_t i = j + 1; i < N; i++) {
			pl_trip_add(t, row, col_of(i, j), 1.0);
		}
	}
	pk->rows.load = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		row++;
		for (uint32_t i = j; i < N; i++) {
			pl_trip_add(t, row, col_of(i, j), p[i] / pk->cutoff);
		}
		pl_trip_add(t, row, tcol, -1.0);
	}
	pk->rows.n = row;
}

/* The rows of the representatives: x[i][j] <= x[j][j], and one replica
 * per GPU (for each j, each expert with >= 2 items after j that is not
 * j's own). */
static void pack_rep_rows(struct pack *pk)
{
	uint32_t N = pk->prob->N;
	const uint32_t *first = pk->first;
	struct pl_triplets *t = &pk->t;
	int row = pk->rows.n;
	pk->rows.link = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		for (uint32_t i = j + 1; i < N; i++) {
			if (first[i] <= j) {
				continue; /* fixed to 0 */
			}
			row++;
			pl_trip_add(t, row, col_of(i, j), 1.0);
			pl_trip_add(t, row, col_of(j, j), -1.0);
		}
	}
	pk->rows.n_link = row - pk->rows.link + 1;
	pk->rows.dup = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		uint32_t i = j + 1;
		while (i < N) {
			uint32_t e_last = pk->last[i];
			if (first[i] <= j) {
				i = e_last + 1; /* j's own expert: fixed to 0 */
				continue;
			}
			if (e_last > i) {
				row++;
				for (uint32_t k = i; k <= e_last; k++) {
					pl_trip_add(t, row, col_of(k, j), 1.0);
				}
				pl_trip_add(t, row, col_of(j, j), -1.0);
			}
			i = e_last + 1;
		}
	}
	pk->rows.n_dup = row - pk->rows.dup + 1;
	pk->rows.n = row;
}

/* The rows' bounds, in the order of pack_rows and pack_rep_rows. */
static void pack_row_bounds(glp_prob *lp, const struct pack *pk)
{
	const struct pack_rows *rw = &pk->rows;
	glp_add_rows(lp, rw->n);
	for (int k = 0; k < rw->n_assign; k++) {
		glp_set_row_bnds(lp, 1 + k, GLP_FX, 1, 1);
	}
	glp_set_row_bnds(lp, rw->gpus, GLP_FX, pk->prob->G, pk->prob->G);
	for (uint32_t j = 0; j < pk->prob->N; j++) {
		glp_set_row_bnds(lp, rw->card + (int)j, GLP_FX, 0, 0);
		glp_set_row_bnds(lp, rw->load + (int)j, GLP_UP, 0, 0);
	}
	for (int k = 0; k < rw->n_link; k++) {
		glp_set_row_bnds(lp, rw->link + k, GLP_UP, 0, 0);
	}
	for (int k = 0; k < rw->n_dup; k++) {
		glp_set_row_bnds(lp, rw->dup + k, GLP_UP, 0, 0);
	}
}

/* Branch-and-cut within the work budget and the deadline; takes the work
 * used from work->mip_work. Returns glp_intopt's code, with a stop by the
 * budget (or by the deadline: work->timed_out) as GLP_ETMLIM and a stop
 * that is not ours as GLP_EFAIL. */
static int pack_search(glp_prob *lp, struct pack *pk)
{
	struct pl_work *work = pk->work;
	pk->st = (struct cb_state){ .bound = pk->lb / pk->cutoff, .limit = work->mip_work };
	glp_iocp parm;
	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = pk->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.mip_gap = 0.0;
	parm.cb_func = mip_callback;
	parm.cb_info = &pk->st;
	/* GLPK's cut generators and pseudo-cost branching with best-projection
	 * backtracking closed packings several times faster than the defaults
	 * on 24-slot layers (measured with GLPK 5.0). */
	parm.gmi_cuts = GLP_ON;
	parm.mir_cuts = GLP_ON;
	parm.cov_cuts = GLP_ON;
	parm.clq_cuts = GLP_ON;
	parm.br_tech = GLP_BR_PCH;
	parm.bt_tech = GLP_BT_BPH;
	/* The wall clock only as a safety net (INT_MAX: none). */
	double ms = pk->remaining * 1000.0;
	parm.tm_lim = ms > 2e9 ? INT_MAX : (int)ms + 1;
	int ret = glp_intopt(lp, &parm);
	work->mip_work -= pk->st.used < work->mip_work ? pk->st.used : work->mip_work;
	if (ret == GLP_ESTOP && !pk->st.stopped) {
		ret = GLP_EFAIL; /* not ours: treat as a failure */
	}
	if (ret == GLP_ETMLIM) {
		work->timed_out = true;
	}
	if (ret == GLP_ESTOP) {
		ret = GLP_ETMLIM; /* a limit, handled as the time limit below */
	}
	return ret;
}

/* The MIP's solution as slots of sol (GPU k = the k-th representative);
 * false when it is not a valid packing. */
static bool pack_read(glp_prob *lp, struct pack *pk)
{
	const struct pl_prob *prob = pk->prob;
	uint32_t N = prob->N;
	uint32_t S = prob->S;
	uint32_t *stamp = pk->work->stamp;
	uint32_t gcount = 0;
	for (uint32_t j = 0; j < N; j++) {
		pk->rep_gpu[j] = UINT32_MAX;
		if (glp_mip_col_val(lp, col_of(j, j)) > 0.5) {
			pk->rep_gpu[j] = gcount++;
		}
	}
	for (uint32_t g = 0; g < prob->G; g++) {
		stamp[g] = 0;
	}
	if (gcount != prob->G) {
		return false;
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t jj = UINT32_MAX;
		for (uint32_t j = 0; j <= i; j++) {
			if (glp_mip_col_val(lp, col_of(i, j)) > 0.5) {
				jj = j;
				break;
			}
		}
		if (jj == UINT32_MAX || pk->rep_gpu[jj] == UINT32_MAX) {
			return false;
		}
		uint32_t g = pk->rep_gpu[jj];
		if (stamp[g] >= S) {
			return false;
		}
		pk->sol->slot[g * S + stamp[g]++] = pk->work->items[i];
	}
	return true;
}

/* What glp_intopt's code ret and the MIP status mean for the caller; sets
 * pk->bound and, with a packing, sol. */
static enum pl_mip_result pack_result(glp_prob *lp, struct pack *pk, int ret)
{
	int status = glp_mip_status(lp);
	double node_bound = pk->st.bound * pk->cutoff > pk->lb ? pk->st.bound * pk->cutoff : pk->lb;
	if (ret == GLP_ENOPFS || (ret == 0 && status == GLP_NOFEAS)) {
		pk->bound = pk->cutoff;
		return PL_MIP_NONE;
	}
	if ((ret == 0 && status == GLP_OPT)
	    || ((ret == GLP_ETMLIM || ret == GLP_EMIPGAP) && status == GLP_FEAS)) {
		pk->rep_gpu = malloc(sizeof(*pk->rep_gpu) * pk->prob->N);
		if (!pk->rep_gpu || !pack_read(lp, pk)) {
			return PL_MIP_ERROR;
		}
		pl_sol_eval(pk->sol, pk->prob);
		if (ret == 0) {
			pk->bound = pk->sol->max;
			return PL_MIP_IMPROVED;
		}
		pk->bound = node_bound;
		return PL_MIP_IMPROVED_LIMIT;
	}
	if (ret == GLP_ETMLIM) {
		pk->bound = node_bound;
		return PL_MIP_LIMIT;
	}
	return PL_MIP_ERROR;
}

/* pl_glpk_run's model: build, search, read. */
static int pack_model(glp_prob *lp, void *ctx)
{
	struct pack *pk = ctx;
	int tcol = pack_columns(lp, pk);
	pack_rows(pk, tcol);
	pack_rep_rows(pk);
	if (pk->t.failed) {
		return PL_MIP_ERROR;
	}
	pack_row_bounds(lp, pk);
	pl_trip_load(lp, &pk->t);
	pl_trip_free(&pk->t);
	int ret = pack_search(lp, pk);
	return pack_result(lp, pk, ret);
}

enum pl_mip_result pl_mip_pack(const struct pl_prob *prob, const uint32_t *r, double cutoff,
			       double lb, double deadline, bool verbose, struct pl_sol *sol,
			       double *bound_out, struct pl_work *work)
{
	struct pack pk = {
		.prob = prob, .work = work, .sol = sol, .verbose = verbose,
		.lb = lb, .cutoff = cutoff, .bound = lb,
	};
	enum pl_mip_result res = pack_admit(&pk, deadline);
	if (res != PL_MIP_IMPROVED) {
		*bound_out = pk.bound;
		return res;
	}
	pack_items(prob, r, work);
	pk.first = malloc(sizeof(*pk.first) * prob->N);
	pk.last = malloc(sizeof(*pk.last) * prob->N);
	res = PL_MIP_ERROR;
	if (pk.first && pk.last) {
		pack_expert_ranges(&pk);
		res = (enum pl_mip_result)pl_glpk_run(verbose, pack_model, &pk, PL_MIP_ERROR);
	}
	*bound_out = pk.bound;
	pl_trip_free(&pk.t);
	free(pk.first);
	free(pk.last);
	free(pk.rep_gpu);
	return res;
}

/* The weighted-split LP of pl_lp_weighted: its input and its answer. */
struct split {
	const struct pl_prob *prob;
	const uint32_t *slot;
	bool verbose;
	double *slot_load;
	double *gpu_load;
	struct pl_triplets t;
	double max; /* the busiest GPU */
};

/* pl_glpk_run's model: columns x_p (share of slot p) and T; rows: experts
 * 1..E (sum of shares = w_e), GPUs E+1..E+G (<= T). Loads scaled by the
 * mean. 0, or -1 when GLPK or memory failed. */
static int split_model(glp_prob *lp, void *ctx)
{
	struct split *sp = ctx;
	const struct pl_prob *prob = sp->prob;
	uint32_t N = prob->N;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t E = prob->E;
	double scale = prob->mean > 0 ? prob->mean : 1.0;
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, (int)N + 1);
	for (uint32_t q = 0; q < N; q++) {
		glp_set_col_bnds(lp, (int)q + 1, GLP_LO, 0, 0);
	}
	int tcol = (int)N + 1;
	glp_set_col_bnds(lp, tcol, GLP_LO, 0, 0);
	glp_set_obj_coef(lp, tcol, 1.0);
	glp_add_rows(lp, (int)(E + G));
	for (uint32_t e = 0; e < E; e++) {
		double v = prob->w[e] / scale;
		glp_set_row_bnds(lp, (int)e + 1, GLP_FX, v, v);
	}
	for (uint32_t g = 0; g < G; g++) {
		glp_set_row_bnds(lp, (int)(E + g) + 1, GLP_UP, 0, 0);
	}
	for (uint32_t q = 0; q < N; q++) {
		pl_trip_add(&sp->t, (int)sp->slot[q] + 1, (int)q + 1, 1.0);
		pl_trip_add(&sp->t, (int)(E + q / S) + 1, (int)q + 1, 1.0);
	}
	for (uint32_t g = 0; g < G; g++) {
		pl_trip_add(&sp->t, (int)(E + g) + 1, tcol, -1.0);
	}
	if (!pl_trip_load(lp, &sp->t)) {
		return -1;
	}
	glp_smcp parm;
	glp_init_smcp(&parm);
	parm.msg_lev = sp->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) {
		return -1;
	}
	for (uint32_t g = 0; g < G; g++) {
		sp->gpu_load[g] = 0;
	}
	for (uint32_t q = 0; q < N; q++) {
		double v = glp_get_col_prim(lp, (int)q + 1) * scale;
		if (v < 0) {
			v = 0;
		}
		sp->slot_load[q] = v;
		sp->gpu_load[q / S] += v;
	}
	sp->max = 0;
	for (uint32_t g = 0; g < G; g++) {
		if (sp->gpu_load[g] > sp->max) {
			sp->max = sp->gpu_load[g];
		}
	}
	return 0;
}

double pl_lp_weighted(const struct pl_prob *prob, const uint32_t *slot, bool verbose,
		      double *slot_load, double *gpu_load)
{
	struct split sp = {
		.prob = prob, .slot = slot, .verbose = verbose, .slot_load = slot_load,
		.gpu_load = gpu_load,
	};
	int rc = pl_glpk_run(verbose, split_model, &sp, -1);
	pl_trip_free(&sp.t);
	return rc == 0 ? sp.max : -1;
}

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

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

void pl_trip_add(struct pl_triplets *t, int row, int col, double val)
{
	if (t->failed) {
		return;
	}
	if (t->n + 1 >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		int *ia = realloc(t->ia, sizeof(*ia) * cap);
		if (ia) {
			t->ia = ia;
		}
		int *ja = realloc(t->ja, sizeof(*ja) * cap);
		if (ja) {
			t->ja = ja;
		}
		double *ar = realloc(t->ar, sizeof(*ar) * cap);
		if (ar) {
			t->ar = ar;
		}
		if (!ia || !ja || !ar) {
			t->failed = true;
			return;
		}
		t->cap = cap;
	}
	/* GLPK arrays are 1-based: entry 0 unused. */
	t->n++;
	t->ia[t->n] = row;
	t->ja[t->n] = col;
	t->ar[t->n] = val;
}

void pl_trip_free(struct pl_triplets *t)
{
	free(t->ia);
	free(t->ja);
	free(t->ar);
	memset(t, 0, sizeof(*t));
}

static void on_glpk_error(void *info)
{
	longjmp(*(jmp_buf *)info, 1);
}

void pl_glpk_thread_done(void)
{
	glp_free_env();
}

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
	int a_cnt = 0;
	int n_cnt = 0;
	int t_cnt = 0;
	glp_ios_tree_size(tree, &a_cnt, &n_cnt, &t_cnt);
	int it = glp_get_it_cnt(glp_ios_get_prob(tree));
	st->used = (uint64_t)(it > 0 ? it : 0) + PL_MIP_NODE_WORK * (uint64_t)(t_cnt > 0 ? t_cnt : 0);
	if (!st->stopped && st->used >= st->limit) {
		st->stopped = true;
		glp_ios_terminate(tree);
	}
}

static int col_of(uint32_t i, uint32_t j)
{
	return (int)((uint64_t)i * (i + 1) / 2 + j + 1);
}

enum pl_mip_result pl_mip_pack(const struct pl_prob *prob, const uint32_t *r, double cutoff,
			       double lb, double deadline, bool verbose, struct pl_sol *sol,
			       double *bound_out, struct pl_work *work)
{
	uint32_t N = prob->N;
	uint32_t S = prob->S;
	uint32_t E = prob->E;
	*bound_out = lb;
	if (lb >= cutoff) {
		*bound_out = cutoff;
		return PL_MIP_NONE;
	}
	if (work->mip_work < PL_MIP_CALL_WORK) {
		work->mip_work = 0;
		return PL_MIP_LIMIT;
	}
	work->mip_work -= PL_MIP_CALL_WORK;
	double remaining = deadline < (double)INFINITY ? deadline - pl_now() : (double)INFINITY;
	if (remaining <= 0.001) {
		work->timed_out = true;
		return PL_MIP_LIMIT;
	}
	/* Items sorted by size (experts by w/r, replicas contiguous). */
	uint32_t *it = work->items;
	double *p = work->size;
	for (uint32_t e = 0; e < E; e++) {
		work->key[e] = prob->w[e] / r[e];
	}
	pl_sort_desc(work->order, work->key, E);
	uint32_t n = 0;
	for (uint32_t k = 0; k < E; k++) {
		uint32_t e = work->order[k];
		for (uint32_t c = 0; c < r[e]; c++) {
			it[n] = e;
			p[n] = work->key[e];
			n++;
		}
	}
	/* first[i] = index of the first item of the same expert. */
	uint32_t *first = malloc(sizeof(*first) * N);
	uint32_t *last = malloc(sizeof(*last) * N);
	struct pl_triplets *t = calloc(1, sizeof(*t));
	glp_prob *volatile lp = NULL;
	enum pl_mip_result res = PL_MIP_ERROR;
	jmp_buf jb;
	if (!first || !last || !t) {
		goto out;
	}
	for (uint32_t i = 0; i < N; i++) {
		first[i] = (i > 0 && it[i - 1] == it[i]) ? first[i - 1] : i;
	}
	for (uint32_t i = N; i-- > 0;) {
		last[i] = (i + 1 < N && it[i + 1] == it[i]) ? last[i + 1] : i;
	}
	double scale = cutoff;
	int ncols = col_of(N - 1, N - 1) + 1;
	int tcol = ncols;
	if (setjmp(jb)) {
		/* GLPK hit an internal error: its environment is unusable. */
		glp_free_env();
		lp = NULL;
		res = PL_MIP_ERROR;
		goto out;
	}
	glp_error_hook(on_glpk_error, &jb);
	glp_term_out(verbose ? GLP_ON : GLP_OFF);
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, ncols);
	for (uint32_t i = 0; i < N; i++) {
		for (uint32_t j = 0; j <= i; j++) {
			int c = col_of(i, j);
			glp_set_col_kind(lp, c, GLP_BV);
			if (j < i && first[i] <= j) {
				/* j is an earlier replica of i's expert */
				glp_set_col_bnds(lp, c, GLP_FX, 0, 0);
			}
		}
	}
	glp_set_col_bnds(lp, tcol, GLP_DB, lb / scale, 1.0);
	glp_set_obj_coef(lp, tcol, 1.0);
	int row = 0;
	/* every item placed */
	for (uint32_t i = 0; i < N; i++) {
		row++;
		for (uint32_t j = 0; j <= i; j++) {
			pl_trip_add(t, row, col_of(i, j), 1.0);
		}
	}
	int first_assign = 1;
	int n_assign = row;
	/* G GPUs */
	row++;
	int row_g = row;
	for (uint32_t j = 0; j < N; j++) {
		pl_trip_add(t, row, col_of(j, j), 1.0);
	}
	/* S slots per GPU */
	int row_card = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		row++;
		pl_trip_add(t, row, col_of(j, j), 1.0 - (double)S);
		for (uint32_t i = j + 1; i < N; i++) {
			pl_trip_add(t, row, col_of(i, j), 1.0);
		}
	}
	/* load */
	int row_load = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		row++;
		for (uint32_t i = j; i < N; i++) {
			pl_trip_add(t, row, col_of(i, j), p[i] / scale);
		}
		pl_trip_add(t, row, tcol, -1.0);
	}
	/* x[i][j] <= x[j][j] */
	int row_link = row + 1;
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
	int n_link = row - row_link + 1;
	/* one replica per GPU: for each j and each expert with >= 2 items
	 * after j (and not j's own expert) */
	int row_dup = row + 1;
	for (uint32_t j = 0; j < N; j++) {
		uint32_t i = j + 1;
		while (i < N) {
			uint32_t e_last = last[i];
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
	int n_dup = row - row_dup + 1;
	if (t->failed) {
		res = PL_MIP_ERROR;
		goto out;
	}
	glp_add_rows(lp, row);
	for (int k = 0; k < n_assign; k++) {
		glp_set_row_bnds(lp, first_assign + k, GLP_FX, 1, 1);
	}
	glp_set_row_bnds(lp, row_g, GLP_FX, prob->G, prob->G);
	for (uint32_t j = 0; j < N; j++) {
		glp_set_row_bnds(lp, row_card + (int)j, GLP_FX, 0, 0);
		glp_set_row_bnds(lp, row_load + (int)j, GLP_UP, 0, 0);
	}
	for (int k = 0; k < n_link; k++) {
		glp_set_row_bnds(lp, row_link + k, GLP_UP, 0, 0);
	}
	for (int k = 0; k < n_dup; k++) {
		glp_set_row_bnds(lp, row_dup + k, GLP_UP, 0, 0);
	}
	glp_load_matrix(lp, (int)t->n, t->ia, t->ja, t->ar);
	pl_trip_free(t);
	memset(t, 0, sizeof(*t));

	struct cb_state st = { .bound = lb / scale, .limit = work->mip_work };
	glp_iocp parm;
	glp_init_iocp(&parm);
	parm.presolve = GLP_ON;
	parm.msg_lev = verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.mip_gap = 0.0;
	parm.cb_func = mip_callback;
	parm.cb_info = &st;
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
	double ms = remaining * 1000.0;
	parm.tm_lim = ms > 2e9 ? INT_MAX : (int)ms + 1;
	int ret = glp_intopt(lp, &parm);
	int status = glp_mip_status(lp);
	work->mip_work -= st.used < work->mip_work ? st.used : work->mip_work;
	if (ret == GLP_ESTOP && !st.stopped) {
		ret = GLP_EFAIL; /* not ours: treat as a failure */
	}
	if (ret == GLP_ETMLIM) {
		work->timed_out = true;
	}
	if (ret == GLP_ESTOP) {
		ret = GLP_ETMLIM; /* a limit, handled as the time limit below */
	}
	if (ret == GLP_ENOPFS || (ret == 0 && status == GLP_NOFEAS)) {
		res = PL_MIP_NONE;
		*bound_out = cutoff;
	} else if ((ret == 0 && status == GLP_OPT) || ((ret == GLP_ETMLIM || ret == GLP_EMIPGAP) && status == GLP_FEAS)) {
		/* Read the assignment: GPU k = k-th representative. */
		uint32_t *rep_gpu = malloc(sizeof(*rep_gpu) * N);
		if (!rep_gpu) {
			res = PL_MIP_ERROR;
			goto out;
		}
		uint32_t gcount = 0;
		for (uint32_t j = 0; j < N; j++) {
			rep_gpu[j] = UINT32_MAX;
			if (glp_mip_col_val(lp, col_of(j, j)) > 0.5) {
				rep_gpu[j] = gcount++;
			}
		}
		for (uint32_t g = 0; g < prob->G; g++) {
			work->stamp[g] = 0;
		}
		bool ok = gcount == prob->G;
		for (uint32_t i = 0; i < N && ok; i++) {
			uint32_t jj = UINT32_MAX;
			for (uint32_t j = 0; j <= i; j++) {
				if (glp_mip_col_val(lp, col_of(i, j)) > 0.5) {
					jj = j;
					break;
				}
			}
			if (jj == UINT32_MAX || rep_gpu[jj] == UINT32_MAX) {
				ok = false;
				break;
			}
			uint32_t g = rep_gpu[jj];
			if (work->stamp[g] >= S) {
				ok = false;
				break;
			}
			sol->slot[g * S + work->stamp[g]++] = it[i];
		}
		free(rep_gpu);
		if (!ok) {
			res = PL_MIP_ERROR;
			goto out;
		}
		pl_sol_eval(sol, prob);
		if (ret == 0) {
			res = PL_MIP_IMPROVED;
			*bound_out = sol->max;
		} else {
			res = PL_MIP_IMPROVED_LIMIT;
			*bound_out = st.bound * scale > lb ? st.bound * scale : lb;
		}
	} else if (ret == GLP_ETMLIM) {
		res = PL_MIP_LIMIT;
		*bound_out = st.bound * scale > lb ? st.bound * scale : lb;
	} else {
		res = PL_MIP_ERROR;
	}
out:
	if (lp) {
		glp_delete_prob(lp);
	}
	glp_error_hook(NULL, NULL);
	if (t) {
		pl_trip_free(t);
		free(t);
	}
	free(first);
	free(last);
	return res;
}

double pl_lp_weighted(const struct pl_prob *prob, const uint32_t *slot, bool verbose,
		      double *slot_load, double *gpu_load)
{
	uint32_t N = prob->N;
	uint32_t G = prob->G;
	uint32_t S = prob->S;
	uint32_t E = prob->E;
	double scale = prob->mean > 0 ? prob->mean : 1.0;
	struct pl_triplets *t = calloc(1, sizeof(*t));
	glp_prob *volatile lp = NULL;
	volatile double result = -1;
	jmp_buf jb;
	if (!t) {
		return -1;
	}
	if (setjmp(jb)) {
		glp_free_env();
		lp = NULL;
		result = -1;
		goto out;
	}
	glp_error_hook(on_glpk_error, &jb);
	glp_term_out(verbose ? GLP_ON : GLP_OFF);
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MIN);
	/* columns: x_p (share of slot p), then T */
	glp_add_cols(lp, (int)N + 1);
	for (uint32_t q = 0; q < N; q++) {
		glp_set_col_bnds(lp, (int)q + 1, GLP_LO, 0, 0);
	}
	int tcol = (int)N + 1;
	glp_set_col_bnds(lp, tcol, GLP_LO, 0, 0);
	glp_set_obj_coef(lp, tcol, 1.0);
	/* rows: experts 1..E (sum of shares = w_e), GPUs E+1..E+G (<= T) */
	glp_add_rows(lp, (int)(E + G));
	for (uint32_t e = 0; e < E; e++) {
		double v = prob->w[e] / scale;
		glp_set_row_bnds(lp, (int)e + 1, GLP_FX, v, v);
	}
	for (uint32_t g = 0; g < G; g++) {
		glp_set_row_bnds(lp, (int)(E + g) + 1, GLP_UP, 0, 0);
	}
	for (uint32_t q = 0; q < N; q++) {
		pl_trip_add(t, (int)slot[q] + 1, (int)q + 1, 1.0);
		pl_trip_add(t, (int)(E + q / S) + 1, (int)q + 1, 1.0);
	}
	for (uint32_t g = 0; g < G; g++) {
		pl_trip_add(t, (int)(E + g) + 1, tcol, -1.0);
	}
	if (t->failed) {
		goto out;
	}
	glp_load_matrix(lp, (int)t->n, t->ia, t->ja, t->ar);
	glp_smcp parm;
	glp_init_smcp(&parm);
	parm.msg_lev = verbose ? GLP_MSG_ON : GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) {
		goto out;
	}
	for (uint32_t g = 0; g < G; g++) {
		gpu_load[g] = 0;
	}
	double mx = 0;
	for (uint32_t q = 0; q < N; q++) {
		double v = glp_get_col_prim(lp, (int)q + 1) * scale;
		if (v < 0) {
			v = 0;
		}
		slot_load[q] = v;
		gpu_load[q / S] += v;
	}
	for (uint32_t g = 0; g < G; g++) {
		if (gpu_load[g] > mx) {
			mx = gpu_load[g];
		}
	}
	result = mx;
out:
	if (lp) {
		glp_delete_prob(lp);
	}
	glp_error_hook(NULL, NULL);
	pl_trip_free(t);
	free(t);
	return result;
}

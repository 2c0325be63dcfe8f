/* Placement: GLPK's environment, error guard and matrix builder
 * (glpk-internal.h), shared by every GLPK model of the solver and of
 * re-planning.
 */
#include "placement/glpk-internal.h"

#include <assert.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* GLPK's error hook: back to pl_glpk_run's setjmp (never returns, so
 * GLPK does not abort). */
static void on_glpk_error(void *info)
{
	longjmp(*(jmp_buf *)info, 1);
}

int pl_glpk_run(bool verbose, int (*fn)(glp_prob *lp, void *ctx), void *ctx, int failed)
{
	volatile int on_error = failed; /* read after the jump */
	jmp_buf jb;
	if (setjmp(jb)) {
		/* GLPK hit an internal error: its environment, lp with it, is
		 * unusable; free it (the next GLPK call starts a new one). */
		glp_free_env();
		glp_error_hook(NULL, NULL);
		return on_error;
	}
	glp_error_hook(on_glpk_error, &jb);
	glp_term_out(verbose ? GLP_ON : GLP_OFF);
	glp_prob *lp = glp_create_prob();
	int rc = fn(lp, ctx);
	glp_delete_prob(lp);
	glp_error_hook(NULL, NULL);
	return rc;
}

uint64_t pl_glpk_tree_work(glp_tree *tree, uint64_t node_work)
{
	int a_cnt = 0;
	int n_cnt = 0;
	int t_cnt = 0;
	glp_ios_tree_size(tree, &a_cnt, &n_cnt, &t_cnt);
	int it = glp_get_it_cnt(glp_ios_get_prob(tree));
	return (uint64_t)(it > 0 ? it : 0) + node_work * (uint64_t)(t_cnt > 0 ? t_cnt : 0);
}

void pl_glpk_thread_done(void)
{
	glp_free_env();
}

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

bool pl_trip_load(glp_prob *lp, const struct pl_triplets *t)
{
	if (t->failed) {
		return false;
	}
	glp_load_matrix(lp, (int)t->n, t->ia, t->ja, t->ar);
	return true;
}

bool pl_trip_set_col(glp_prob *lp, int col, struct pl_triplets *t)
{
	bool ok = !t->failed;
	if (ok) {
		for (size_t k = 1; k <= t->n; k++) {
			assert(t->ja[k] == col);
		}
		glp_set_mat_col(lp, col, (int)t->n, t->ia, t->ar);
	}
	t->n = 0;
	t->failed = false;
	return ok;
}

void pl_trip_free(struct pl_triplets *t)
{
	free(t->ia);
	free(t->ja);
	free(t->ar);
	memset(t, 0, sizeof(*t));
}

/* GLPK's error guard and the triplet builder (src/placement/glpk.c):
 * an internal GLPK error is a failed call, not an abort, and GLPK works
 * again afterwards; matrices built entry by entry, loaded whole or column
 * by column, solve a small LP whose optimum is worked out by hand below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "placement/glpk-internal.h"

#include <math.h>

/* The LP of the tests, solved by hand:
 *   max x + y  s.t.  x + 2y <= 4,  3x + y <= 6,  x, y >= 0.
 * Both rows bind at the optimum: y = 6 - 3x, x + 12 - 6x = 4, so
 * x = 8/5, y = 6/5, x + y = 14/5; the other vertices (0, 2), (2, 0) and
 * (0, 0) give 2, 2 and 0. */
#define LP_OPT (14.0 / 5.0)

struct lp_case {
	bool by_column;   /* pl_trip_set_col instead of pl_trip_load */
	struct pl_triplets t;
	double obj;
	double x;
	double y;
	int reached;      /* steps done before a GLPK error */
};

static int solve_lp(glp_prob *lp, void *ctx)
{
	struct lp_case *c = ctx;
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_rows(lp, 2);
	glp_set_row_bnds(lp, 1, GLP_UP, 0, 4);
	glp_set_row_bnds(lp, 2, GLP_UP, 0, 6);
	glp_add_cols(lp, 2);
	for (int j = 1; j <= 2; j++) {
		glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
		glp_set_obj_coef(lp, j, 1);
	}
	const double a[2][2] = { { 1, 2 }, { 3, 1 } };
	if (c->by_column) {
		for (int j = 1; j <= 2; j++) {
			pl_trip_add(&c->t, 1, j, a[0][j - 1]);
			pl_trip_add(&c->t, 2, j, a[1][j - 1]);
			if (!pl_trip_set_col(lp, j, &c->t)) {
				return -1;
			}
		}
	} else {
		for (int i = 1; i <= 2; i++) {
			for (int j = 1; j <= 2; j++) {
				pl_trip_add(&c->t, i, j, a[i - 1][j - 1]);
			}
		}
		if (!pl_trip_load(lp, &c->t)) {
			return -1;
		}
	}
	glp_smcp parm;
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	if (glp_simplex(lp, &parm) != 0 || glp_get_status(lp) != GLP_OPT) {
		return -1;
	}
	c->obj = glp_get_obj_val(lp);
	c->x = glp_get_col_prim(lp, 1);
	c->y = glp_get_col_prim(lp, 2);
	return 0;
}

/* Column 3 of a problem with one column: a GLPK error ("column number out
 * of range"), on which GLPK calls the error hook and then abort()s. */
static int bad_column(glp_prob *lp, void *ctx)
{
	struct lp_case *c = ctx;
	glp_add_cols(lp, 1);
	c->reached = 1;
	glp_set_col_bnds(lp, 3, GLP_LO, 0, 0);
	c->reached = 2;
	return 0;
}

static void glpk__triplets_load_the_matrix_whole(void **state)
{
	(void)state;
	struct lp_case c = { .by_column = false };
	assert_int_equal(pl_glpk_run(false, solve_lp, &c, -1), 0);
	assert_int_equal(c.t.n, 4);
	assert_true(fabs(c.obj - LP_OPT) < 1e-9);
	assert_true(fabs(c.x - 8.0 / 5.0) < 1e-9);
	assert_true(fabs(c.y - 6.0 / 5.0) < 1e-9);
	pl_trip_free(&c.t);
	assert_null(c.t.ia);
	assert_int_equal(c.t.n, 0);
}

static void glpk__triplets_set_columns_one_by_one(void **state)
{
	(void)state;
	struct lp_case c = { .by_column = true };
	assert_int_equal(pl_glpk_run(false, solve_lp, &c, -1), 0);
	assert_int_equal(c.t.n, 0); /* emptied after each column */
	assert_true(fabs(c.obj - LP_OPT) < 1e-9);
	assert_true(fabs(c.x - 8.0 / 5.0) < 1e-9);
	pl_trip_free(&c.t);
}

static void glpk__guard_turns_an_internal_error_into_a_failure(void **state)
{
	(void)state;
	struct lp_case c = { 0 };
	/* Without the guard GLPK would abort() the test program here. */
	assert_int_equal(pl_glpk_run(false, bad_column, &c, -42), -42);
	assert_int_equal(c.reached, 1);
	/* GLPK works again (a new environment) and the hook is cleared. */
	struct lp_case ok = { 0 };
	assert_int_equal(pl_glpk_run(false, solve_lp, &ok, -1), 0);
	assert_true(fabs(ok.obj - LP_OPT) < 1e-9);
	pl_trip_free(&ok.t);
	pl_glpk_thread_done();
}

static void glpk__triplets_grow_and_keep_every_entry(void **state)
{
	(void)state;
	struct pl_triplets t = { 0 };
	/* 3000 entries: past the first block of 1024 and its doubling. */
	for (int k = 1; k <= 3000; k++) {
		pl_trip_add(&t, k % 7 + 1, k, 0.5 * k);
	}
	assert_false(t.failed);
	assert_int_equal(t.n, 3000);
	assert_true(t.cap > 3000);
	for (int k = 1; k <= 3000; k++) {
		assert_int_equal(t.ia[k], k % 7 + 1);
		assert_int_equal(t.ja[k], k);
		assert_true(t.ar[k] == 0.5 * k);
	}
	pl_trip_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(glpk__triplets_load_the_matrix_whole),
		cmocka_unit_test(glpk__triplets_set_columns_one_by_one),
		cmocka_unit_test(glpk__guard_turns_an_internal_error_into_a_failure),
		cmocka_unit_test(glpk__triplets_grow_and_keep_every_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* moeplan (private): the one place that talks to GLPK's environment
 * (glpk.c), for every GLPK model of the solver (mip.c, config-lp.c) and
 * of re-planning (src/replan/).
 *
 *   pl_glpk_run     builds and solves a model under GLPK's error hook, so
 *                   that an internal GLPK error is a failed call, not an
 *                   abort() of the program
 *   pl_triplets     the constraint matrix in GLPK's 1-based sparse form
 *                   (ia, ja, ar), grown entry by entry, loaded whole
 *                   (pl_trip_load) or one column at a time
 *                   (pl_trip_set_col, for column generation)
 *
 * GLPK 5.0 (Debian 12) keeps its environment in thread-local storage
 * (glp_config("TLS")): each thread has its own, freed by
 * pl_glpk_thread_done.
 */
#ifndef MOEPLAN_PLACEMENT_GLPK_INTERNAL_H
#define MOEPLAN_PLACEMENT_GLPK_INTERNAL_H

#include <glpk.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Runs fn(lp, ctx) on a new, empty problem lp with GLPK's error hook set
 * and GLPK's terminal output on when verbose (glp_term_out), then deletes
 * lp, clears the hook and returns fn's value.
 *
 * GLPK reports an internal error (a broken invariant, or its own memory
 * exhausted) by calling the error hook and abort()ing when the hook
 * returns. Here the hook jumps back into pl_glpk_run, which frees this
 * thread's GLPK environment (unusable after the error; lp goes with it:
 * GLPK manual, glp_error_hook) and returns `failed`. fn's local variables
 * are lost with the jump: whatever fn allocates, and whatever the caller
 * reads after a failure, must live in ctx (memory), not in fn's locals.
 * Not nested: fn must not call pl_glpk_run. */
int pl_glpk_run(bool verbose, int (*fn)(glp_prob *lp, void *ctx), void *ctx, int failed);

/* The work a branch and bound has done so far, in machine-independent
 * units: GLPK's simplex iterations (glp_get_it_cnt) plus node_work per
 * node of the tree (glp_ios_tree_size's total count). For the budgets of
 * the MIP callbacks (mip.c, pair-exact.c). */
uint64_t pl_glpk_tree_work(glp_tree *tree, uint64_t node_work);

/* Free this thread's GLPK environment (worker threads call it on exit). */
void pl_glpk_thread_done(void);

/* A sparse matrix in GLPK's 1-based triplet form: entry k (1 <= k <= n)
 * is a[ia[k]][ja[k]] = ar[k]; index 0 is unused, as GLPK wants. `failed`
 * records an allocation failure, so that a builder adds every entry and
 * checks once (pl_trip_load and pl_trip_set_col refuse a failed matrix).
 * Zero-initialise ({0}) before the first pl_trip_add. */
struct pl_triplets {
	int *ia;
	int *ja;
	double *ar;
	size_t n;
	size_t cap;
	bool failed;
};

/* Append the entry a[row][col] = val (row, col 1-based). */
void pl_trip_add(struct pl_triplets *t, int row, int col, double val);

/* lp's whole constraint matrix from t (glp_load_matrix; rows and columns
 * must exist). False, lp unchanged, when an addition failed. */
bool pl_trip_load(glp_prob *lp, const struct pl_triplets *t);

/* Column col of lp from t's entries, in the order added (glp_set_mat_col;
 * every entry must have column col), then t emptied for the next column
 * (its memory kept). False, lp unchanged, when an addition failed. */
bool pl_trip_set_col(glp_prob *lp, int col, struct pl_triplets *t);

/* Free t's arrays; t is zeroed, ready for reuse. */
void pl_trip_free(struct pl_triplets *t);

#endif

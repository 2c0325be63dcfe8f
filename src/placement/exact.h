/* moeplan (private): exact arithmetic for placement (issue 17).
 *
 *   exact-eval.c  exact comparison of GPU loads (sums of w_e / r_e) and the
 *                 acceptance rule every candidate plan goes through
 *   exact-bb.c    an exact branch and bound over replica counts and GPU
 *                 assignments, in scaled integers, that proves a layer's
 *                 optimum or improves its plan within a counted budget
 *   exact-config.c an exact search over replica-count vectors and multisets
 *                 of GPU contents, for layers with few experts
 *
 * A GPU's load is a sum of rationals w_e / r_e where each w_e is a double
 * (a dyadic rational m * 2^k). exact-eval.c compares two such sums in long
 * double when the difference exceeds a proven bound on the rounding error,
 * and otherwise in exact big-integer arithmetic over a common denominator,
 * so every comparison it returns is the true order of the rationals.
 */
#ifndef MOEPLAN_PLACEMENT_EXACT_H
#define MOEPLAN_PLACEMENT_EXACT_H

#include <stdbool.h>
#include <stdint.h>

#include "placement/internal.h"

/* Sign (-1, 0, 1) of load(GPU ga of plan a) - load(GPU gb of plan b), exact;
 * slot[N] and r[E] of each plan, r consistent with slot. */
int pl_x_cmp_gpu(const struct pl_prob *prob, const uint32_t *slot_a, const uint32_t *r_a,
		 uint32_t ga, const uint32_t *slot_b, const uint32_t *r_b, uint32_t gb);

/* The same for two GPUs of different layers: each given by its S slots
 * (expert ids), its loads w[] and replica counts r[] indexed by those ids. */
int pl_x_cmp_slots(const double *w_a, const uint32_t *slot_a, const uint32_t *r_a,
		   const double *w_b, const uint32_t *slot_b, const uint32_t *r_b, uint32_t S);

/* A busiest GPU of the plan in exact order (lowest index among equals). */
uint32_t pl_x_argmax(const struct pl_prob *prob, const uint32_t *slot, const uint32_t *r);

/* Sign of max load(a) - max load(b), exact. */
int pl_x_cmp_max(const struct pl_prob *prob, const struct pl_sol *a, const struct pl_sol *b);

/* True when every GPU carries exactly the same load: the plan's busiest GPU
 * then equals the mean sum(w) / G exactly, a lower bound for every plan, so
 * the plan is optimal. */
bool pl_x_balanced(const struct pl_prob *prob, const struct pl_sol *sol);

/* The acceptance rule for a candidate plan from any method: cand is
 * re-evaluated from its slots (r, loads and max recomputed) and copied over
 * best only when its busiest GPU is exactly lower, or exactly equal and its
 * second busiest lower by more than prob->eps. Duplicates on a GPU are
 * refused. Returns true when best was replaced. */
bool pl_x_accept(const struct pl_prob *prob, struct pl_sol *best, struct pl_sol *cand);

/* A 128-bit unsigned integer for the exact searches' scaled loads. */
__extension__ typedef unsigned __int128 pl_u128;

/* The loads as integers of one binary unit, exactly: w_e = m[e] 2^(*k)
 * (every double is an integer times a power of two), k the smallest
 * exponent of a positive load (each load's 53-bit mantissa), m[e] = 0 for
 * a zero load. False when the loads span more than max_shift binary
 * orders (some m[e] would need more than 53 + max_shift bits). The exact
 * searches (exact-bb.c, exact-split.c, exact-balance.c) scale these by
 * their own denominators. */
bool pl_x_mantissas(const struct pl_prob *prob, int max_shift, pl_u128 *m, int *k);

/* The common scale of the exact searches (exact-bb.c, exact-config.c),
 * which count loads in integers over replica counts r = 1 .. *rmax:
 * *rmax = min(N - E + 1, G) replicas, the most one expert can have in a
 * duplicate-free plan (every other expert keeps one of the N slots; a GPU
 * holds one replica at most). *d = lcm(1, ..., rmax), dimensionless, so
 * that m[e] D / r is an integer for every r <= rmax. m[E] and *k as
 * pl_x_mantissas(prob, max_shift): w_e = m[e] 2^k in the loads' units
 * (tokens), so m[e] D / r counts w_e / r in units of 2^k / D tokens
 * exactly. Returns false (the layer does not fit) when D would exceed
 * max_d or the loads span more than max_shift binary orders. The caller
 * multiplies m[e] by D within its own bit limits. */
bool pl_x_scale(const struct pl_prob *prob, pl_u128 max_d, int max_shift, uint32_t *rmax,
		pl_u128 *d, pl_u128 *m, int *k);

/* Greatest common divisor (Euclid) of two scaled loads or counts;
 * gcd(a, 0) = a. */
pl_u128 pl_x_gcd(pl_u128 a, pl_u128 b);

/* A double b computed from the loads in floating point (sums and quotients
 * of at most S + E terms) lowered by a proven bound on its rounding error,
 * so that a bound valid in exact arithmetic stays valid: b * (1 - (E + S +
 * 8) * DBL_EPSILON), and 0 for b <= 0. */
double pl_x_round_down(const struct pl_prob *prob, double b);

/* --- exact branch and bound (exact-bb.c) --- */

enum pl_bb_result {
	PL_BB_PROVEN = 0, /* search complete: best is optimal (possibly improved) */
	PL_BB_BUDGET,     /* the counted budget ran out: best may be improved, nothing proven */
	PL_BB_SKIPPED,    /* the layer does not fit the scaled 128-bit integers */
	PL_BB_NOMEM,
};

/* Search for a plan exactly better than best (which must be a valid
 * duplicate-free plan) over every replica-count vector and every packing,
 * GPUs with equal (load, slots used) taken as one; best is replaced
 * (through pl_x_accept) by every better plan found. Stops after max_nodes
 * search nodes (a deterministic count). *nodes_out gets the nodes used.
 * PL_BB_PROVEN means no plan has a busiest GPU below best's. */
enum pl_bb_result pl_bb_solve(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_nodes,
			      uint64_t *nodes_out);

/* --- exact search over GPU contents (exact-config.c) --- */

/* True when the layer's GPU contents (sets of S distinct experts) are few
 * enough for pl_xcfg_solve: C(E, S) <= 4096, E <= 24, G <= 255. */
bool pl_xcfg_fits(const struct pl_prob *prob);

/* Steps pl_xcfg_solve gets on this layer (effort scales it); 0 where it
 * does not run: the layer does not fit, or its replica-count vectors are
 * too many for the search to finish (C(N - 1, E - 1) above 1e8). */
uint64_t pl_xcfg_budget(const struct pl_prob *prob, double effort);

/* Search for a plan exactly better than best (a valid duplicate-free
 * plan) over every replica-count vector and every multiset of G contents
 * that realises it; best is replaced (through pl_x_accept) by every
 * better plan found. Stops after max_work counted steps (vector nodes,
 * contents listed, search nodes); *work_out gets the steps used.
 * PL_BB_PROVEN: no plan has a busiest GPU below best's (best is optimal).
 * PL_BB_SKIPPED: the layer does not fit (pl_xcfg_fits, or its loads do not
 * scale to 110-bit integers). */
enum pl_bb_result pl_xcfg_solve(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work,
				uint64_t *work_out);

/* --- exact balancing (exact-balance.c) --- */

/* The replica loads for counts r[E] as integers of one unit: item[e] =
 * M_e D / r_e (w_e = M_e 2^k as in pl_x_mantissas, D the lcm of the counts),
 * and *t = sum_e item[e] r[e] / G, the mean in the same unit, exactly.
 * False when D exceeds 2^40, the total exceeds 2^120, or the mean is not a
 * whole number of units (then no plan with these counts has every GPU at
 * the mean). */
bool pl_x_scale_counts(const struct pl_prob *prob, const uint32_t *r, pl_u128 *item, pl_u128 *t);

/* Look for a plan with best's replica counts whose every GPU carries
 * exactly the mean load (then optimal), by subset swaps between GPUs in
 * exact integers, within max_work subsets looked at (deterministic). On
 * success best is replaced (through pl_x_accept) and *found is true.
 * Skips (0, *found false) layers with S < 2 or S > 20, or whose mean is
 * not a multiple of the replica loads' common unit. Returns 0 or
 * MP_ENOMEM. */
int pl_balance_exact(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work,
		     bool *found);

/* --- exactly balanced plans by sequential fill (exact-fill.c) --- */

/* Look for a plan whose every GPU carries exactly the mean (then optimal),
 * built from scratch with counts that divide the loads where a divisor
 * allows it, then with best's replica counts: GPUs filled one at a time with
 * an exact completion from a hash of the loads left, the last ones split
 * exactly by meet-in-the-middle; seeded randomness, max_work counted steps
 * (deterministic). On success best is replaced (through pl_x_accept) and
 * *found is true. Skips (0, *found false) layers with S < 2 or S > 16
 * slots per GPU, G < 3, N > 512, a mean that is not a whole number of
 * units, or fewer than one exactly balanced packing expected (the estimate
 * of tests/bench/perfect-count.py). Returns 0 or MP_ENOMEM. */
int pl_fill_exact(const struct pl_prob *prob, struct pl_sol *best, uint64_t max_work, bool *found);

/* --- the weighted split at the mean (exact-split.c) --- */

/* Whether the plan slot[N] admits a weighted split (each expert's load
 * shared among its replicas in any proportions) with every GPU at exactly
 * the mean sum(w) / G, decided exactly by an integer maximum flow; when it
 * does, *found is true and slot_load[N] gets that split (the flow's exact
 * shares rounded to doubles). Returns 0 or MP_ENOMEM. */
int pl_x_weighted_mean(const struct pl_prob *prob, const uint32_t *slot, double *slot_load,
		       bool *found);

/* --- the last stage of a layer (exact-settle.c) --- */

struct pl_settle {
	double lb;          /* the bound to report: best's max when proven, else a valid
			       bound strictly below it */
	bool proven;        /* best is optimal: exactly balanced, or the search completed */
	const char *method; /* static: how it was proven or improved, or NULL (keep) */
};

/* Search nodes the exact branch and bound gets on this layer (effort
 * scales it). */
uint64_t pl_bb_budget(const struct pl_prob *prob, double effort);

/* Settle a layer: best re-evaluated; proven when every GPU carries exactly
 * the same load; else, when search, the exact branch and bound (which may
 * improve best and prove it). lb: the pipeline's bound (callers have
 * already subtracted GLPK's tolerances and the 1e-6 cutoffs); when nothing
 * is proven, out->lb = it rounded down, below best's max. Returns 0 or
 * MP_ENOMEM. */
int pl_exact_settle(const struct pl_prob *prob, struct pl_sol *best, double lb, double effort,
		    bool search, struct pl_settle *out);

#endif

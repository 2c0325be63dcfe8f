/* moeplan (private): the placement solver's parts.
 *
 *   core.c             clock, instance, solutions, scratch, sorts, status
 *   place.c            public API, per-layer driver, worker threads
 *   bound.c            lower bounds and the enumeration of replica counts
 *   heuristic.c        constructive heuristics (LPT packing, EPLB) and
 *                      local search (swaps, replica moves)
 *   glpk.c             GLPK's error guard and sparse-matrix builder
 *                      (glpk-internal.h, also used by src/replan/)
 *   mip.c              GLPK packing MIP (representatives formulation) and
 *                      the weighted-split LP
 *   config-lp.c        GLPK configuration LP: bound and LP diving for
 *                      large layers whose gap stays above 0.5%
 *   pair-exact.c       S = 2: the exact pairing test as GLPK's MIP
 *   pair-search.c      S = 2: the same test as an exact combinatorial search
 *   anchor-bound.c     S = 3, 4: the anchor test, a bound over every count vector
 *   eval.c             evaluation of a given map
 *   topology.c         nodes: node balancing, group-limited placement,
 *                      EPLB's hierarchical policy
 *
 * Terms as in moeplan/placement.h: E experts, G GPUs, S slots per GPU,
 * N = G * S slots; slot p lives on GPU p / S. An "item" is one replica,
 * of size w_e / r_e under the even split.
 */
#ifndef MOEPLAN_PLACEMENT_INTERNAL_H
#define MOEPLAN_PLACEMENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/placement.h"

/* Relative tolerance under which two loads count as equal and a gap as
 * closed (the GLPK models use a cutoff of UB * (1 - PL_REL_TOL)). Coarse
 * enough to absorb GLPK's own tolerances (1e-7) in those cutoffs and in
 * LP bounds. Re-planning compares only loads it sums itself and uses a
 * finer RP_REL_TOL (1e-9, src/replan/internal.h says why). */
#define PL_REL_TOL 1e-6

/* One layer's instance. */
struct pl_prob {
	const double *w; /* [E] */
	uint32_t E, G, S, N;
	double sum;      /* sum of w */
	double mean;     /* sum / G */
	double tol;      /* absolute tolerance: PL_REL_TOL * max(mean, max w / G, tiny) */
	double eps;      /* smallest improvement a local move must bring: 1e-12 of the same */
};

/* A complete even-split solution. */
struct pl_sol {
	uint32_t *slot; /* [N] expert in each slot */
	uint32_t *r;    /* [E] replica counts */
	double *load;   /* [G] */
	double max;
};

/* Scratch buffers shared by the heuristics of one layer (one per thread). */
struct pl_work {
	uint32_t *order;  /* [E] */
	uint32_t *stamp;  /* [G] */
	uint32_t *cnt;    /* [G] */
	uint32_t *head;   /* [E + 1] CSR offsets: expert -> its slots */
	uint32_t *list;   /* [N] CSR slots */
	double *size;     /* [N] item sizes, scratch */
	double *key;      /* [E] sort keys */
	uint32_t *items;  /* [N] item expert ids, scratch */
	uint32_t *gorder; /* [G] GPUs by load, scratch */
	uint64_t ops;     /* work done by the local search (deterministic effort count) */
	uint64_t mip_work; /* GLPK work units left for this layer's MIPs (pl_mip_pack) */
	bool timed_out;   /* the wall-clock safety net stopped some part of the search */
};

/* Deterministic budgets. Every search is bounded by counted work, so that a
 * layer's plan depends only on its input and options; the wall-clock limit
 * (mp_place_options.time_limit_s) is a safety net: a search that reaches it
 * stops and sets work->timed_out, and the layer's status is time_limit. */

/* True (and work->timed_out set) when the deadline has passed; deadline
 * INFINITY never passes. */
bool pl_timed_out(struct pl_work *work, double deadline);

/* Wall clock in seconds (CLOCK_MONOTONIC). */
double pl_now(void);

void pl_prob_init(struct pl_prob *prob, const double *w, uint32_t E, uint32_t G, uint32_t S);

int pl_sol_alloc(struct pl_sol *sol, const struct pl_prob *prob);
void pl_sol_free(struct pl_sol *sol);
void pl_sol_copy(struct pl_sol *dst, const struct pl_sol *src, const struct pl_prob *prob);
/* Recompute r (from the slots), loads and max. */
void pl_sol_eval(struct pl_sol *sol, const struct pl_prob *prob);
/* True when a is better than b: lower max, then lower second max, by more
 * than prob->eps. scratch is unused (may be NULL). */
bool pl_sol_better(const struct pl_sol *a, const struct pl_sol *b, const struct pl_prob *prob,
		   double *scratch);
/* True when no GPU holds one expert twice. */
bool pl_sol_no_dup(const struct pl_sol *sol, const struct pl_prob *prob);

int pl_work_alloc(struct pl_work *work, const struct pl_prob *prob);
void pl_work_free(struct pl_work *work);

/* Sort experts by key descending, ties by id ascending (deterministic). */
void pl_sort_desc(uint32_t *idx, const double *key, uint32_t n);
/* Sort the given indices by key[idx] (descending, or ascending when asc),
 * ties by index ascending. */
void pl_sort_idx(uint32_t *idx, uint32_t n, const double *key, bool asc);

/* The status a plan with busiest GPU max_load earns from a proven bound:
 * MP_PLACE_TIME_LIMIT when the wall-clock safety net fired (timed_out),
 * MP_PLACE_OPTIMAL when max_load <= bound + tol (tol: pl_prob.tol), else
 * MP_PLACE_FEASIBLE. Written into a layer by mp_layer_placement_set_bound. */
enum mp_place_status pl_status(double max_load, double bound, double tol, bool timed_out);

/* --- bounds (bound.c) --- */

/* Replica counts minimising the largest item w_e / r_e subject to
 * 1 <= r_e <= G, sum r_e = N (greedy apportionment, Adams' divisor method:
 * optimal for the min-max item size). Returns that largest item. */
double pl_replicas_greedy(const struct pl_prob *prob, uint32_t *r);

/* EPLB's replicate_experts: the same greedy without the cap; seq[N - E]
 * gets the expert of each redundant replica in creation order. heap[E]. */
void pl_replicas_eplb(const struct pl_prob *prob, uint32_t *r, uint32_t *heap, uint32_t *seq);

/* A bound valid for every replica-count vector: max(mean, smallest
 * achievable largest item + the S-1 smallest possible items). */
double pl_bound_global(const struct pl_prob *prob, uint32_t *r_scratch, double *size_scratch);

/* A bound over all replica counts from item-size thresholds (see the
 * source): the largest T in [lo, hi] shown infeasible, or lo. hi must be
 * achievable (an incumbent's max). */
double pl_bound_threshold(const struct pl_prob *prob, double lo, double hi);

/* The bound for fixed replica counts r: max(mean, cardinality bounds over
 * the sorted item sizes). work->order/key/size used as scratch. */
double pl_bound_for_r(const struct pl_prob *prob, const uint32_t *r, struct pl_work *work);

/* The replica-count vectors whose bound is below cutoff, found by
 * depth-first enumeration. */
struct pl_rset {
	uint32_t count;
	uint32_t cap;
	uint32_t *r;     /* [count][E] */
	double *bound;   /* [count] */
};

enum pl_enum_result {
	PL_ENUM_DONE = 0,   /* every vector with bound < cutoff is in the set */
	PL_ENUM_TOO_MANY,   /* more than max_leaves vectors to look at */
	PL_ENUM_TIMEOUT,
	PL_ENUM_NOMEM,
};

/* Enumerate r vectors (1 <= r_e <= G, sum N) with pl_bound_for_r < cutoff.
 * Gives up (PL_ENUM_TOO_MANY) before starting when a count of the
 * candidates exceeds max_leaves; PL_ENUM_TIMEOUT (work->timed_out set) when
 * the deadline passes. */
enum pl_enum_result pl_enumerate(const struct pl_prob *prob, double cutoff, uint64_t max_leaves,
				 double deadline, struct pl_work *work, struct pl_rset *out);
void pl_rset_free(struct pl_rset *set);

/* --- heuristics (heuristic.c) --- */

/* Pack the items of r, largest first, each onto the least-loaded GPU that
 * has room and does not hold the expert (ties: lowest GPU). Falls back to a
 * duplicate plus repair when a replica has nowhere else to go. Fills sol
 * (slots, r, loads, max). Returns false when no duplicate-free packing was
 * found. */
bool pl_pack_lpt(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol,
		 struct pl_work *work);

/* Pack the items of r by balanced largest differencing (see the source):
 * exactly S per GPU by construction. Fills sol; false when no
 * duplicate-free packing was found or memory ran out. */
bool pl_pack_bldm(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol,
		  struct pl_work *work);

/* DeepSeek EPLB's global policy (replicate_experts: repeatedly replicate
 * the expert with the highest load per replica, no cap; balanced_packing:
 * heaviest first into the lightest GPU with room, duplicates allowed).
 * Fills slot[N]. Ref: github.com/deepseek-ai/EPLB eplb.py. */
void pl_eplb(const struct pl_prob *prob, uint32_t *slot, struct pl_work *work);

/* Swap duplicates away where possible; returns true when none is left. */
bool pl_repair_dups(const struct pl_prob *prob, struct pl_sol *sol);

/* Local search: pairwise swaps between the busiest GPU and the others,
 * re-splits of the busiest GPU's and a partner's items, and replica moves
 * (one replica of x becomes one of y) until no move lowers (max, number of
 * GPUs at max); then swaps that lower the second busiest.
 * Never makes the sorted load vector worse. At most 64 N + 1000 moves;
 * stops early at deadline (safety net, sets work->timed_out). */
void pl_improve(const struct pl_prob *prob, struct pl_sol *sol, struct pl_work *work,
		double deadline);

/* Iterated local search: a random valid change (swap, or replica move),
 * then pl_improve; kept unless worse. Stops after max_ops units of work
 * (work->ops: candidate moves looked at, a machine-independent count), when max
 * meets lb, or at deadline (safety net, sets work->timed_out).
 * Deterministic: the random stream is seeded from the layer's shape only.
 * Returns 0 or MP_ENOMEM. */
int pl_ils(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work, double lb,
	   uint64_t max_ops, double deadline);

/* The whole heuristic: several seeds (greedy replica counts + LPT, EPLB,
 * repaired), each improved; best kept in best. Returns 0 or MP_ENOMEM /
 * MP_ELIMIT (no duplicate-free plan found). */
int pl_heuristic(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work,
		 double deadline);

/* --- GLPK (mip.c) --- */

enum pl_mip_result {
	PL_MIP_IMPROVED = 0, /* found a packing with max < cutoff (in sol); optimal for r */
	PL_MIP_IMPROVED_LIMIT, /* found one, but a limit stopped the proof */
	PL_MIP_NONE,         /* proven: no packing of r has max < cutoff */
	PL_MIP_LIMIT,        /* a limit stopped the search, nothing found */
	PL_MIP_ERROR,        /* GLPK failed or out of memory */
};

/* GLPK work units: one per simplex iteration, PL_MIP_NODE_WORK per
 * branch-and-bound node (cut generation and bookkeeping), PL_MIP_CALL_WORK
 * per model built. With GLPK 5.0 on the 2-core test machine a unit of the
 * packing MIP on 12 to 24 slots takes about 0.1 ms. */
#define PL_MIP_NODE_WORK 20u
#define PL_MIP_CALL_WORK 20u

/* Packing MIP for fixed replica counts r (representatives formulation:
 * item i, sorted by size, goes to the GPU "represented" by its first item
 * j <= i, which removes the symmetry of identical GPUs). Minimises the
 * busiest load subject to max <= cutoff and max >= lb. *bound_out gets a
 * valid lower bound for this r (cutoff when NONE). The limits: the work
 * budget work->mip_work (decremented by the units used: the deterministic
 * limit), and the deadline (GLPK's tm_lim, the safety net: sets
 * work->timed_out). */
enum pl_mip_result pl_mip_pack(const struct pl_prob *prob, const uint32_t *r, double cutoff,
			       double lb, double deadline, bool verbose, struct pl_sol *sol,
			       double *bound_out, struct pl_work *work);

/* Weighted split: given where replicas are (slot), choose each replica's
 * share (any split of w_e among its replicas) minimising the busiest GPU by
 * an LP. Fills slot_load[N] and gpu_load[G]; returns the max load or a
 * negative value when GLPK failed. */
double pl_lp_weighted(const struct pl_prob *prob, const uint32_t *slot, bool verbose,
		      double *slot_load, double *gpu_load);

/* --- configuration LP (config-lp.c) --- */

/* Where the solver stops working on a layer's gap (issue 4's target): the
 * busiest GPU within 0.5% above the bound, max <= bound * (1 + PL_GAP_GOAL).
 * An internal threshold only; the gap that plans report is map.h's
 * (max - bound) / max, which this threshold puts at most 0.4975%. */
#define PL_GAP_GOAL 5e-3

/* The configuration LP with replica-count variables, by column generation
 * (see the source for the model and its dual certificate). With want =
 * inc->max / (1 + 0.8 (goal - 1)): when the certificate proves that no
 * plan has max <= want, returns want. Otherwise bisects between lo and
 * want for the
 * largest T it proves (lo when none) and then dives in the LP for a plan
 * with max <= bound * goal: *found tells whether plan got one (better than
 * inc). inc: the incumbent (its max is the top of the range, its GPU
 * contents seed the LP). budget: work units (simplex iterations,
 * glp_get_it_cnt, plus pricing steps / 256). Does nothing (returns lo)
 * when S > 4 or the LP would exceed 50,000 types. */
double pl_cfg_close(const struct pl_prob *prob, const struct pl_sol *inc, double lo, double goal,
		    uint64_t budget, double deadline, bool verbose, struct pl_work *work,
		    struct pl_sol *plan, bool *found);

/* For a layer whose gap is above PL_GAP_GOAL: pl_cfg_close with the goal
 * 1 + PL_GAP_GOAL and a budget of 400,000 units times effort; updates
 * best and *lb, and sets *method (a static string for the layer's method)
 * when it raised the bound or found a plan, else leaves it. Returns 0 or
 * MP_ENOMEM. */
int pl_close_gap(const struct pl_prob *prob, struct pl_sol *best, double *lb, double effort,
		 bool verbose, double deadline, struct pl_work *work, const char **method);

/* --- few slots per GPU (few-slot.c; the top comment there gives the
 * constructions and the bound's argument) --- */

/* Constructions per layer of the few-slot search, times effort, divided by
 * the number of experts (one construction costs O(N + E)). */
#define PL_FS_WORK 3e5

/* S = 2: LB2(r) = max_k (a_k + a_{N+1-k}) over the items of counts r sorted
 * by size, a lower bound on every plan with counts r (and the optimum for
 * r when the largest-with-smallest pairing holds no expert twice). 0 when
 * S != 2 or memory ran out. */
double pl_fs_pair_bound(const struct pl_prob *prob, const uint32_t *r);

/* S = 2, 3, 4: the few-slot construction for counts r into sol (slots, r,
 * loads, max), duplicates repaired; false when S is outside 2..4, memory
 * ran out or a duplicate stayed. */
bool pl_fs_pack(const struct pl_prob *prob, const uint32_t *r, struct pl_sol *sol);

/* The few-slot search's budget (constructions) on this layer: 0 where it
 * does not run (S != 2, or no redundant slot). */
uint64_t pl_fs_budget(const struct pl_prob *prob, double effort);

/* The search over replica counts with the few-slot constructions (see
 * few-slot.c); best (a valid duplicate-free plan) is replaced through
 * pl_x_accept when a better plan is found. Stops after budget
 * constructions or at deadline (safety net, sets work->timed_out).
 * Returns 0 or MP_ENOMEM. */
int pl_fs_search(const struct pl_prob *prob, struct pl_sol *best, struct pl_work *work,
		 uint64_t budget, double deadline);

/* --- the exact threshold test for S = 2 (pair-exact.c; the top comment
 * there gives the model and why its answers are proofs) --- */

enum { PL_P2_INFEASIBLE = 0, PL_P2_FEASIBLE = 1, PL_P2_UNKNOWN = 2 };

/* S = 2: is there a plan with busiest GPU <= T, over all replica counts?
 * The exact search (pl_p2_search) first, GLPK's MIP (pl_p2_mip) where the
 * search's budget runs out.
 * PL_P2_INFEASIBLE: none (T is a lower bound on every plan);
 * PL_P2_FEASIBLE: r[E] gets counts whose largest-with-smallest pairing has
 * max <= T (duplicates not yet repaired); PL_P2_UNKNOWN: the work budget
 * (*budget, reduced by what was used) or the refinements ran out, or
 * S != 2; MP_ENOMEM on allocation failure. */
int pl_p2_decide(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r);

/* The least count with w / r <= Tc (N + 1 when above N). */
uint32_t pl_p2_least_count(double w, double Tc, uint32_t N);
/* lo[E] = least counts for threshold Tc and *spare = N - sum lo; false
 * when sum lo > N (no plan has max <= Tc). */
bool pl_p2_least_counts(const struct pl_prob *prob, double Tc, uint32_t *lo, uint32_t *spare);
/* The points at which the S = 2 condition is tested (pair-exact.c's top
 * comment): a - Tc/2 of every item a > Tc/2 of every count lo..lo + spare,
 * and Tc/2; sorted ascending, distinct, in a new array (*pts, *npts).
 * Returns 0 or MP_ENOMEM. */
int pl_p2_points(const struct pl_prob *prob, double Tc, const uint32_t *lo, uint32_t spare,
		 double **pts, size_t *npts);
/* S = 2, the decision of pl_p2_decide by GLPK's MIP alone (pair-exact.c),
 * for models of at most max_cols columns E (spare + 1) (larger: unknown);
 * *budget in GLPK work units. */
int pl_p2_mip(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r,
	      uint64_t max_cols);
/* S = 2, the same decision as pl_p2_decide by an exact depth-first search
 * over replica counts without GLPK (pair-search.c): PL_P2_INFEASIBLE,
 * PL_P2_FEASIBLE (counts in r[E]), or PL_P2_UNKNOWN when *budget (point
 * evaluations, reduced by what was used) ran out or its table would be too
 * large; MP_ENOMEM. */
int pl_p2_search(const struct pl_prob *prob, double T, uint64_t *budget, uint32_t *r);

/* S = 2, a proof of optimality in exact arithmetic (pair-search.c): for
 * integer loads, scaled by L = lcm(1..K) where K - 1 bounds every count a
 * plan no heavier than plan->max can have, so that every such plan's GPU
 * loads are whole units, the search at plan's busiest GPU minus one unit,
 * without slack. PL_P2_INFEASIBLE: no plan (of any counts, even ignoring
 * the duplicate rule) is lighter than plan: plan is optimal. Otherwise
 * PL_P2_UNKNOWN (non-integer loads, L * max w >= 2^52, budget, or a
 * count vector passes); MP_ENOMEM. */
int pl_p2_search_exact(const struct pl_prob *prob, const struct pl_sol *plan, uint64_t *budget);

/* --- the anchor test (anchor-bound.c; its top comment gives the argument)
 * --- */

/* Is there a plan with busiest GPU <= T, over all replica counts, as far
 * as the anchor condition tells? PL_P2_INFEASIBLE: none (T is a lower
 * bound on every plan); PL_P2_UNKNOWN: some count vector passes the
 * condition (it is necessary, not sufficient) or *budget (counted work,
 * reduced by what was used) ran out; MP_ENOMEM. Any S >= 2. */
int pl_anchor_decide(const struct pl_prob *prob, double T, uint64_t *budget);

/* S = 3 and 4 layers: the anchor test at 0.4% below the incumbent and, once
 * that is proven, bisection between the bound and the incumbent; raises
 * *lb. A work budget of PA_WORK units times effort per layer. Returns 0 or
 * MP_ENOMEM. */
int pl_anchor_close(const struct pl_prob *prob, const struct pl_sol *best, double *lb,
		    double effort, struct pl_work *work, double deadline);

/* S = 2 layers: threshold tests at 0.4% below the incumbent, then just
 * below it (a proof of optimality); raises *lb on an infeasible test and
 * replaces best (pl_x_accept) by the counts of a feasible one, packed and
 * repaired. A work budget of 2e5 units times effort per layer. When the
 * bound meets the plan within the tolerance, pl_p2_search_exact; *proven
 * is true when it proves best optimal. Returns 0 or MP_ENOMEM. */
int pl_p2_close(const struct pl_prob *prob, struct pl_sol *best, double *lb, double effort,
		struct pl_work *work, double deadline, bool *proven);

/* --- nodes (topology.c) --- */

/* Solve one layer without node structure (place.c's per-layer driver):
 * out from mp_placement_alloc for (E, G, S). */
/* Refine one layer's plan (lp, from the even-split solver) for the busiest
 * GPU under dispatch rule d (dispatch-search.c); streams: SGLang's static
 * random streams (advanced past this layer on return) or NULL; pre[n_pre]:
 * the map's rows between the streams' state and this layer (1 a copy of
 * this layer's row, 0 the trivial row p % E). deadline (pl_now's clock,
 * INFINITY: none): once past it the layer keeps the best map so far,
 * status MP_PLACE_TIME_LIMIT unless proven. */
int pl_dispatch_search(const struct mp_dispatch *d, const double *w, uint32_t E, uint32_t G, uint32_t S,
		       double effort, double deadline, struct mp_dispatch_streams *streams,
		       const unsigned char *pre, uint32_t n_pre, struct mp_layer_placement *lp);
/* A layer re-seated for SGLang's static dispatch over several nodes
 * (dispatch-reseat.c): the replica counts of slot[G*S] kept, each
 * multi-replica expert's node set chosen (in expert order, from the
 * streams' state start at this layer) so that its draws fall most evenly,
 * then the fixed loads packed. slot is replaced only when *changed. The
 * rows before the layer must not copy it. Returns 0 or MP_ENOMEM. */
int pl_dispatch_reseat(const struct mp_dispatch *d, const double *w, uint32_t E, uint32_t G, uint32_t S,
		       const struct mp_dispatch_streams *start, uint32_t *slot, bool *changed);
/* Every layer of p under opts->dispatch (dispatch-search.c), within the
 * run's deadline (pl_dispatch_search). */
int pl_dispatch_place(const struct mp_loads *loads, const struct mp_place_options *opts, double deadline,
		      struct mp_placement *p);

int pl_solve_layer(const double *w, uint32_t E, uint32_t G, uint32_t S,
		   const struct mp_place_options *opts, double deadline,
		   struct mp_layer_placement *out);

/* node_load[G / P], node_max_load and node_mean_load of a placed layer. */
void pl_fill_nodes(struct mp_layer_placement *lp, const double *w, uint32_t E, uint32_t G,
		   uint32_t P);

/* MP_NODES_BALANCE on a placed layer: GPUs renumbered into nodes of P and
 * replicas exchanged between nodes (no GPU above max_load); eps is the
 * smallest improvement taken. Returns 0 or MP_ENOMEM (lp unchanged). */
int pl_balance_nodes(uint32_t G, uint32_t S, uint32_t P, double effort, double eps,
		     struct mp_layer_placement *lp);

/* MP_NODES_GROUP_LIMITED: place a layer with opts->n_groups groups kept
 * within nodes of opts->gpus_per_node GPUs (shape checked by
 * pl_check_groups). Returns 0 or MP_ENOMEM. */
int pl_solve_groups(const double *w, uint32_t E, uint32_t G, uint32_t S,
		    const struct mp_place_options *opts, double deadline,
		    struct mp_layer_placement *out);

/* 0 when Q groups of E experts fit nodes of P GPUs x S slots (G GPUs);
 * else MP_EINVAL with the reason in why. */
int pl_check_groups(uint32_t E, uint32_t G, uint32_t S, uint32_t P, uint32_t Q, char *why,
		    size_t why_size);

#endif

/* moeplan (private): re-planning's parts, shared by the files of
 * src/replan/ and by nothing else.
 *
 *   state.c    one layer's search state: slots, replica counts, loads,
 *              moves counted from the current map
 *   search.c   the move-limited local search and its trajectory
 *   relabel.c  slot canonicalisation and the relabelled from-scratch plan
 *              (Hungarian method, greedy beyond it)
 *   mip.c      the GLPK MIP with a move budget or a move cost
 *   budget.c   each layer's curve and the budget split over layers
 *   driver.c   the public driver (moeplan/replan.h)
 *   record.c   folding slot counts, the re-plan record, the Pareto document
 *
 * Terms as in moeplan/placement.h: E experts, G GPUs, S slots per GPU,
 * N = G * S slots; slot p lives on GPU p / S.
 */
#ifndef MOEPLAN_REPLAN_INTERNAL_H
#define MOEPLAN_REPLAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/replan.h"

/* Largest MIP handed to GLPK (columns); beyond it the LP alone takes
 * seconds and the search rarely improves on the local search. */
#define RP_MIP_MAX_COLS 20000u

/* Layers with at most this many slots always get GLPK's branch and bound
 * (within its work budget), as the placement solver does for its packing
 * MIP: there the search often proves the optimum for the budget. Larger
 * layers get it only when the LP bound beats the from-scratch bound. */
#define RP_MIP_SMALL_SLOTS 32u

/* Relative tolerance of re-planning: loads closer than this (times
 * max(mean, max w / G), as PL_REL_TOL) are equal, a step of the local
 * search or a point of a layer's move curve must gain more, and a plan
 * within it of the from-scratch bound meets the bound (its `optimal`
 * claim then stands only when exact arithmetic confirms it: driver.c's
 * exact_claim). It is finer than the placement solver's PL_REL_TOL
 * (1e-6, src/placement/internal.h) because every plan re-planning compares, the MIP's included, is scored by its
 * own sums of w_e / r_e: rounding there is ~1e-15 of the mean, so 1e-9 is
 * safe, while PL_REL_TOL must absorb GLPK's own tolerances (1e-7) in its
 * cutoffs and LP bounds. (mip.c tests GLPK's LP value against it too,
 * scaled; there a fine tolerance only errs toward searching on.)
 * So a re-plan may take a step that gains between 1e-9 and 1e-6 of the
 * mean, which the placement solver would count as no gain. One tolerance
 * for both would change plans (issue 15 keeps them byte-identical). */
#define RP_REL_TOL 1e-9

/* One layer's instance: its loads, the current map and what counts as
 * equal. Read-only during the search. */
struct rp_instance {
	uint32_t E, G, S, N;
	const double *w;          /* [E] the layer's expert loads */
	const uint32_t *orig;     /* [N] the current map: expert of each slot */
	uint16_t *orig_count;     /* [G*E] copies of expert e on GPU g in orig */
	double tol;               /* absolute tolerance: RP_REL_TOL * max(mean, max w / G, tiny) */
	double lb;                /* the from-scratch lower bound on the busiest GPU */
};

/* A plan being searched: its slots, replica counts, per-GPU copies and
 * loads, and its moves counted from inst->orig (rp_state_set keeps them
 * up to date; rp_state_eval recomputes the loads). */
struct rp_state {
	uint32_t *slot;     /* [N] expert of each slot */
	uint32_t *replicas; /* [E] replicas of each expert */
	uint16_t *count;    /* [G*E] copies of expert e on GPU g */
	double *load;       /* [G] */
	uint32_t *order;    /* [G] GPUs by load, descending (ties: lower index first) */
	uint32_t *next;     /* [N] next slot of the same expert, UINT32_MAX = end */
	uint32_t *head;     /* [E] first slot of each expert */
	uint32_t moves;     /* slots whose expert differs from orig, GPU by GPU as multisets */
	double max;         /* the busiest GPU's load */
};

/* Scratch of the local search's candidate evaluation, and its budgets. */
struct rp_work {
	uint32_t *stamp;        /* [G] GPUs touched by the candidate when == mark */
	uint32_t mark;
	double *delta;          /* [G] load change of each touched GPU */
	uint32_t *changed;      /* [G] GPUs whose load the candidate changes */
	uint32_t *expert_stamp; /* [E] experts of the busiest GPU already tried */
	uint32_t expert_mark;
	uint64_t evals;         /* candidate moves evaluated by the current local search */
	double deadline;        /* the wall-clock safety net of the current layer */
	bool timed_out;         /* it fired during a local search */
};

/* Copies of expert e on GPU g in a [G*E] count (orig_count or count). */
static inline uint16_t *count_at(uint16_t *c, const struct rp_instance *inst, uint32_t g,
				 uint32_t e)
{
	return &c[(size_t)g * inst->E + e];
}

static inline uint16_t count_get(const uint16_t *c, const struct rp_instance *inst, uint32_t g,
				 uint32_t e)
{
	return c[(size_t)g * inst->E + e];
}

/* One replica's load when expert e has r replicas (even split). */
static inline double share(const struct rp_instance *inst, uint32_t e, uint32_t r)
{
	return r ? inst->w[e] / (double)r : 0.0;
}

/* One step of the local search. */
struct rp_step {
	uint32_t p, f;   /* slot p gets expert f */
	uint32_t q, e;   /* and, for a swap, slot q gets e (q = UINT32_MAX: none) */
	uint32_t moves;  /* after the step */
	double max;      /* after the step */
};

/* The local search's steps in order, to replay any prefix of them. */
struct rp_trajectory {
	struct rp_step *steps;
	size_t n, cap;
};

/* What the GLPK MIP of one layer did (rp_mip_solve). */
enum rp_mip_result {
	MIP_SKIPPED = 0,   /* too large, or nothing to gain */
	MIP_WEAK,          /* skipped: the LP bound is no better than the from-scratch bound */
	MIP_LP_ITS,        /* skipped: the root LP hit its iteration budget */
	MIP_LP_PROVED,     /* the LP bound meets the seed: optimal for the budget */
	MIP_NO_GAIN,       /* finished (proved): the seed is optimal for the budget */
	MIP_NO_GAIN_WORK,  /* work budget spent without a better plan */
	MIP_NO_GAIN_TL,    /* time limit without a better plan */
	MIP_IMPROVED,      /* a better plan, proved optimal */
	MIP_IMPROVED_WORK, /* a better plan, work budget spent */
	MIP_IMPROVED_TL,   /* a better plan, time limit */
	MIP_ERROR,
};

/* One layer's MIP: its instance, the incumbent and the objective. */
struct rp_mip_job {
	const struct rp_instance *inst;
	const uint32_t *seed;  /* [N] incumbent, no two replicas of an expert on a GPU */
	double seed_max;
	bool cost_mode;
	uint32_t budget;       /* budget mode */
	double a, b;           /* cost mode: a * max + b * moves, seconds */
	double seed_cost;      /* cost mode: a * seed_max + b * seed moves */
	bool search_if_weak;   /* branch and bound even when the LP bound is weak */
	double deadline;       /* safety net: pl_now() after which GLPK stops */
	bool verbose;
	uint32_t *out;         /* [N] the MIP's plan (canonical slots) when improved */
	double bound;          /* proven bound on the busiest GPU for the budget */
};

/* Per-layer working data kept between the passes of the driver. */
struct rp_layer_work {
	struct rp_instance inst;
	struct rp_trajectory trajectory;
	uint32_t *scratch;   /* [N] relabelled from-scratch map */
	double scratch_max;
	uint32_t scratch_moves;
	double *curve;       /* [K + 1] */
	size_t *curve_step;  /* [K + 1] steps of the trajectory to replay; SIZE_MAX = scratch plan */
	uint32_t K;
	uint32_t pick;       /* moves the budget split allots (a point of the curve) */
	uint32_t budget;     /* moves the layer may use: pick plus what earlier layers left */
	bool timed_out;      /* the safety net stopped one of its local searches */
};

/* --- the search state (state.c) --- */

/* Buffers of a state for inst's shape; MP_ENOMEM when out of memory. */
int rp_state_alloc(struct rp_state *st, const struct rp_instance *inst);
void rp_state_free(struct rp_state *st);
/* Loads from the slots (exact, no drift), the GPU order and the max. */
void rp_state_eval(struct rp_state *st, const struct rp_instance *inst);
/* Moves added when GPU g loses one copy of e and gains one of f (counts
 * before the change): -1, 0 or +1. */
int rp_move_delta(const struct rp_state *st, const struct rp_instance *inst, uint32_t g, uint32_t e,
		  uint32_t f);
/* Slot p gets expert f (structure and moves only; rp_state_eval after). */
void rp_state_set(struct rp_state *st, const struct rp_instance *inst, uint32_t p, uint32_t f);
/* The state of a whole map[N], evaluated. */
void rp_state_load(struct rp_state *st, const struct rp_instance *inst, const uint32_t *map);
/* The busiest-GPU load of map[N] (tmp is overwritten). */
double rp_map_max(const struct rp_instance *inst, const uint32_t *map, struct rp_state *tmp);
/* True when some GPU holds two replicas of one expert. */
bool rp_state_has_dup(const struct rp_state *st, const struct rp_instance *inst);

/* --- the local search (search.c) --- */

void rp_trajectory_free(struct rp_trajectory *t);
/* Greedy descent from st with at most `budget` moves (counted from
 * inst->orig), within counted work and the deadline in work; each step
 * appended to t when t is not NULL. 0 or MP_ENOMEM. */
int rp_local_search(struct rp_state *st, const struct rp_instance *inst, struct rp_work *work,
		    uint32_t budget, struct rp_trajectory *t);

/* --- relabelling (relabel.c) --- */

/* out[N]: the map whose GPU g holds the experts set[g*S .. g*S+S-1] (any
 * order), each staying expert in its old slot, arrivals in the freed
 * slots (ascending expert id into ascending slot). used: [2 S] scratch. */
void rp_canonical_slots(const struct rp_instance *inst, const uint32_t *set, uint32_t *out,
			unsigned char *used);
/* out[N]: map[N] with its GPUs relabelled to keep as many experts in
 * place as possible, slots canonical. 0 or MP_ENOMEM. */
int rp_relabel(const struct rp_instance *inst, const uint32_t *map, uint32_t *out,
	       unsigned char *used);

/* --- the GLPK MIP (mip.c) --- */

/* Columns of inst's MIP (compared with RP_MIP_MAX_COLS). */
size_t rp_mip_columns(const struct rp_instance *inst);
/* Solve job's MIP within counted work; job->out and job->bound set. */
enum rp_mip_result rp_mip_solve(struct rp_mip_job *job);

/* --- the curves and the budget split (budget.c) --- */

/* Pass 1 of a layer: lw's relabelled from-scratch plan (from scr), its
 * trajectory and curve. 0 or MP_ENOMEM. */
int rp_layer_curve(struct rp_layer_work *lw, const struct mp_layer_placement *scr,
		   struct rp_state *st, struct rp_work *work, unsigned char *used);
/* lws[l].pick for the L layers within `budget` moves in all; total[b]
 * the best sum of curve values for every total b < total_len. */
int rp_split_budget(struct rp_layer_work *lws, uint32_t L, uint64_t budget, double *total,
		    size_t total_len);

/* --- the result's moves (driver.c) --- */

/* out->moves (allocated; out->moves must be NULL), each layer's moves and
 * bytes, the total bytes and transfer time, from out->after against cur.
 * 0 or MP_ENOMEM. */
int rp_collect_moves(struct mp_replan *out, const struct mp_placement *cur);

#endif

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

/* Relative tolerance: loads closer than this (times the mean) are equal. */
#define RP_REL_TOL 1e-9

/* ------------------------------------------------------------------ */
/* One layer's instance and the search state.                          */

struct rp {
	uint32_t E, G, S, N;
	const double *w;      /* [E] */
	const uint32_t *orig; /* [N] the current map */
	uint16_t *ocnt;       /* [G*E] copies of e on g in orig */
	double tol;
	double lb;            /* from-scratch lower bound */
};

struct rs {
	uint32_t *slot;  /* [N] */
	uint32_t *r;     /* [E] */
	uint16_t *cnt;   /* [G*E] */
	double *load;    /* [G] */
	uint32_t *order; /* [G] GPUs by load, descending (ties: lower index first) */
	uint32_t *next;  /* [N] next slot of the same expert, UINT32_MAX = end */
	uint32_t *head;  /* [E] first slot of each expert */
	uint32_t moves;
	double max;
};

/* Scratch for candidate evaluation. */
struct rw {
	uint32_t *stamp;  /* [G] */
	uint32_t mark;
	double *delta;    /* [G] */
	uint32_t *chg;    /* [G] changed GPUs */
	uint32_t *estamp; /* [E] */
	uint32_t emark;
	uint64_t evals;   /* candidate moves evaluated by the current local search */
	double deadline;  /* the wall-clock safety net of the current layer */
	bool timed_out;   /* it fired during a local search */
};

static inline uint16_t *cnt_at(uint16_t *c, const struct rp *pr, uint32_t g, uint32_t e)
{
	return &c[(size_t)g * pr->E + e];
}

static inline uint16_t cnt_get(const uint16_t *c, const struct rp *pr, uint32_t g, uint32_t e)
{
	return c[(size_t)g * pr->E + e];
}

static inline double share(const struct rp *pr, uint32_t e, uint32_t r)
{
	return r ? pr->w[e] / (double)r : 0.0;
}

struct step {
	uint32_t p, f;   /* slot p gets expert f */
	uint32_t q, e;   /* and, for a swap, slot q gets e (q = UINT32_MAX: none) */
	uint32_t moves;  /* after the step */
	double max;      /* after the step */
};

struct traj {
	struct step *steps;
	size_t n, cap;
};

enum mip_result {
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

struct mip_job {
	const struct rp *pr;
	const uint32_t *seed;  /* [N] incumbent, no two replicas of an expert on a GPU */
	double seed_max;
	bool cost_mode;
	uint32_t budget;       /* budget mode */
	double a, b;           /* cost mode: a * max + b * moves, seconds */
	double seed_cost;      /* cost mode: a * seed_max + b * seed moves */
	bool search_if_weak;   /* branch and bound even when the LP bound is weak */
	double deadline;       /* safety net: now_s() after which GLPK stops */
	bool verbose;
	uint32_t *out;         /* [N] the MIP's plan (canonical slots) when improved */
	double bound;          /* proven bound on the busiest GPU for the budget */
};

/* Per-layer working data kept between the passes. */
struct layer_work {
	struct rp pr;
	struct traj traj;
	uint32_t *scratch;   /* [N] relabelled from-scratch map */
	double scratch_max;
	uint32_t scratch_moves;
	double *curve;       /* [K + 1] */
	size_t *curve_step;  /* [K + 1] steps of traj to replay; SIZE_MAX = scratch plan */
	uint32_t K;
	uint32_t pick;       /* moves the budget split allots (a point of the curve) */
	uint32_t budget;     /* moves the layer may use: pick plus what earlier layers left */
	bool timed_out;      /* the safety net stopped one of its local searches */
};

double now_s(void);

void rs_free(struct rs *st);
int rs_alloc(struct rs *st, const struct rp *pr);
void rs_eval(struct rs *st, const struct rp *pr);
int move_delta(const struct rs *st, const struct rp *pr, uint32_t g, uint32_t e, uint32_t f);
void rs_set(struct rs *st, const struct rp *pr, uint32_t p, uint32_t f);
void rs_load_map(struct rs *st, const struct rp *pr, const uint32_t *map);
double map_max(const struct rp *pr, const uint32_t *map, struct rs *tmp);
bool has_dup(const struct rs *st, const struct rp *pr);

void traj_free(struct traj *t);
int local_search(struct rs *st, const struct rp *pr, struct rw *w, uint32_t budget,
		 struct traj *t);

void canonical_slots(const struct rp *pr, const uint32_t *set, uint32_t *out, unsigned char *used);
int relabel(const struct rp *pr, const uint32_t *map, uint32_t *out, unsigned char *used);

size_t mip_columns(const struct rp *pr);
enum mip_result mip_solve(struct mip_job *job);

int layer_curve(struct layer_work *lw, const struct mp_layer_placement *scr, struct rs *st,
		struct rw *w, unsigned char *used);
int split_budget(struct layer_work *lws, uint32_t L, uint64_t budget, double *total,
		 size_t total_len);

#endif

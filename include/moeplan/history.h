/* moeplan: expert loads as a history of time windows, and the objectives
 * that plan the next window from it (issue 25 item 3).
 *
 * A history is T >= 1 windows of loads with one shape (L MoE layers x E
 * experts, each as struct mp_loads, moeplan/traffic.h), oldest first: the
 * blocks of a series CSV (moeplan-formats(5) "Series", the format of the
 * HarMoEny-derived plans/traces/NAME.series.csv), or several load files (SGLang
 * recorder dumps) given in time order. A plan made from it is used on the
 * window after the last. The objectives (enum mp_objective) say what load
 * vector the solver plans on, or, for MP_OBJECTIVE_WORST, what is minimised.
 */
#ifndef MOEPLAN_HISTORY_H
#define MOEPLAN_HISTORY_H

#include <stdint.h>

#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Windows oldest first; all have the shape of windows[0]. */
struct mp_history {
	uint32_t n_windows;
	struct mp_loads *windows; /**< owned, [n_windows] */
};

/** Maximum windows in a history (bounds memory: T x L x E doubles). */
#define MP_MAX_WINDOWS 4096u

MP_EXPORT void mp_history_init(struct mp_history *h);

/** Free every window; accepts NULL. */
MP_EXPORT void mp_history_finish(struct mp_history *h);

/** Append a window, taking ownership of *w (which is reset to empty with
 * mp_loads_init). Returns 0; MP_EINVAL when its n_layers, n_experts or
 * layer ids (both absent, or equal) differ from the first window's or there
 * are MP_MAX_WINDOWS already (*w untouched); MP_ENOMEM. */
MP_EXPORT int mp_history_push(struct mp_history *h, struct mp_loads *w);

enum mp_objective {
	MP_OBJECTIVE_LAST = 0, /**< plan on the last window (what the engines do) */
	MP_OBJECTIVE_MEAN,     /**< plan on the mean of the windows, each window's row first
				    scaled to the last window's total for that layer (rows
				    that sum to 0 are left out) */
	MP_OBJECTIVE_RECENCY,  /**< plan on a recency-weighted mean: window t of T (1-based) has
				    weight 2^-((T - t) / half_life), windows scaled as for MEAN */
	MP_OBJECTIVE_SPREAD,   /**< plan on mean_e + k * stddev_e per expert (population
				    standard deviation over the scaled windows): replicas sized
				    for an expert's variability as well as its mean */
	MP_OBJECTIVE_WORST,    /**< minimise the worst busiest/mean over the windows: the plan
				    on the mean, then slot swaps between GPUs that lower the worst
				    window's busiest GPU (src/placement/history.c; a heuristic,
				    with the bound max_t lower_bound_t / mean_t) */
};

/** The objective place and replan use when none is given, and its name: the
 * one that won held out on the shipped series (README "Plans for the next
 * window", tests/bench/holdout.py). */
#define MP_OBJECTIVE_DEFAULT MP_OBJECTIVE_SPREAD
#define MP_OBJECTIVE_DEFAULT_NAME "spread"

struct mp_objective_options {
	enum mp_objective kind;
	double half_life; /**< RECENCY: windows, > 0; default 2 (chosen, not fitted; DeepSeek's
			       EPLB README suggests "a moving average" without a window) */
	double k;         /**< SPREAD: standard deviations, >= 0; default 1 */
};

/** Defaults: MP_OBJECTIVE_DEFAULT, half_life 2, k 1. */
MP_EXPORT void mp_objective_options_init(struct mp_objective_options *o);

/** Parse an objective name (last, mean, recency, spread, worst) into *out.
 * Returns 0 or MP_EINVAL. */
MP_EXPORT int mp_objective_parse(const char *name, enum mp_objective *out);

/** Name of an objective ("last", ...; "?" when out of range). */
MP_EXPORT const char *mp_objective_name(enum mp_objective kind);

/** The L x E load vector the solver plans on for objective o (for WORST:
 * the MEAN vector, its starting point), in the unit of the last window
 * (each layer sums to the last window's total, or to 1 where that total is
 * 0, before SPREAD's k * stddev
 * is added; LAST is the last window itself). out is (re)allocated and takes the last
 * window's layer_ids, source and path. Returns 0, MP_EINVAL (no windows,
 * half_life <= 0, k < 0) or MP_ENOMEM. */
MP_EXPORT int mp_history_loads(const struct mp_history *h, const struct mp_objective_options *o,
			       struct mp_loads *out);

/** MP_OBJECTIVE_WORST on one layer: slot_expert[gpus * slots_per_gpu] (a
 * plan for the layer, no expert twice on a GPU) is improved in place by
 * swapping two slots on different GPUs (replica counts kept, no expert
 * twice on a GPU) while a swap lowers the largest busiest/mean ratio over
 * the windows' rows w[t] (t < n_windows, each n_experts loads) without
 * raising any other window's busiest GPU to it, at most max_swaps swaps
 * (counted work). *worst: the final max over windows of busiest / mean
 * load (1 = balanced; windows whose loads are all 0 skipped); *bound: the
 * largest of 1 and, over windows, mp_place_lower_bound / mean, a lower
 * bound on *worst for every plan (each window's busiest GPU is at least its
 * own bound and its mean); 0 when every window is idle.
 * Returns 0, MP_EINVAL (ids out of range) or MP_ENOMEM. */
MP_EXPORT int mp_place_worst_layer(const double *const *w, uint32_t n_windows, uint32_t n_experts,
				   uint32_t gpus, uint32_t slots_per_gpu, uint64_t max_swaps,
				   uint32_t *slot_expert, double *worst, double *bound);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: deployment search (`moeplan search`): enumerate the
 * configurations of a phase, keep the Pareto front of throughput per GPU
 * against speed per user, pick the best one that meets the serving targets
 * and say why the runner-up lost.
 *
 * The search is independent of the predictor: a phase's configurations
 * (EP width x attention parallelism x overlap mode x batch per GPU) are
 * predicted through the callbacks of struct mp_search_model (the CLI wires
 * them to the serving-step model, step.h, and to the placement). The
 * curves are the ones published results are drawn as (SemiAnalysis
 * InferenceX; NVIDIA's wide-EP results):
 *   decode:  output tokens/s per GPU (y, up) against tokens/s per user (x, right);
 *   prefill: input tokens/s per GPU (y, up) against TTFT (x, left is better).
 *
 * Placement in the loop: the busiest-GPU factor f >= 1 (placement skew and
 * finite-batch noise, as `plan` uses it) multiplies the routed-expert time,
 * so a width's throughput with f = 1 is an upper bound on its throughput
 * with its placement (the predictor must be monotone: a larger factor never
 * gives more tokens/s per GPU nor per user, nor a shorter TTFT). Widths are
 * visited in order of that bound; a width's placement is solved only while
 * its bound is above (1 - MP_SEARCH_TIE) times the best value realised so
 * far (a width within the tie tolerance can still win on speed per user),
 * so placements are solved only for the widths that can win. Widths never solved keep f = 1 and are
 * marked optimistic.
 *
 * Pure functions, no I/O, no globals. Deterministic: ties are broken by
 * the enumeration order (widths, attention, overlap, batch, as given).
 */
#ifndef MOEPLAN_SEARCH_H
#define MOEPLAN_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/visibility.h"
#include "moeplan/widths.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The indices of the points no other point dominates, both coordinates
 * maximised: i is dominated when some j has x[j] >= x[i] and y[j] >= y[i]
 * with one of them strictly greater; of identical points only the lowest
 * index is kept. idx_out[n] (caller-allocated, n entries suffice) receives
 * them sorted by x ascending (so y descending); *n_out their count. To
 * minimise a coordinate, pass its negation. O(n log n) (sort, then one
 * sweep from the largest x keeping the best y seen: Kung, Luccio and
 * Preparata 1975). Returns 0, MP_EINVAL when a value is NaN, or MP_ENOMEM. */
MP_EXPORT int mp_pareto_front(const double *x, const double *y, size_t n, size_t *idx_out, size_t *n_out);

/** One configuration of one phase. */
struct mp_search_config {
	enum mp_phase_kind phase;
	bool colocated;          /**< prefill evaluated on the decode pool's GPUs (the aggregated
				      alternative, both phases on one deployment) */
	uint32_t ep;             /**< EP width of the routed experts, GPUs */
	uint32_t attention_tp;   /**< 1 = data-parallel attention; 2..8 = tensor-parallel groups */
	int overlap;             /**< the predictor's overlap mode (opaque here, as given in the space) */
	double batch;            /**< decode: concurrent requests per GPU; prefill: prompt tokens per
				      GPU per step (the chunk) */
	double busiest_factor;   /**< busiest GPU / mean of the routed experts, >= 1 */
};

/** What the predictor says about one configuration (per GPU). */
struct mp_search_eval {
	double step_s;                 /**< one step, seconds */
	double tokens_per_s_per_gpu;   /**< decode: output tokens/s per GPU; prefill: input (uncached
					    prompt) tokens/s per GPU */
	double tokens_per_s_per_user;  /**< decode: accepted output tokens/s per request (1/TPOT) */
	double ttft_s;                 /**< prefill: time to first token for the workload's prompt */
};

struct mp_search_point {
	struct mp_search_config cfg;
	struct mp_search_eval eval;
};

/** The predictor. Each callback returns 0 or a negative MP_E* code (which
 * stops the search and is returned by it). */
struct mp_search_model {
	void *user;
	/** The largest batch (cfg->batch's unit) that fits in HBM for the
	 * configuration (cfg->batch ignored); *out = 0 when nothing fits, or
	 * when the configuration is not valid (e.g. the slot rule has no
	 * count at that width). */
	int (*max_batch)(void *user, const struct mp_search_config *cfg, double *out);
	/** Predict one configuration. */
	int (*evaluate)(void *user, const struct mp_search_config *cfg, struct mp_search_eval *out);
	/** The busiest-GPU factor (>= 1) of the width's placement at the
	 * configuration's batch: solve the placement on the scenario's
	 * popularity, route the batch through it. NULL = always 1. */
	int (*busiest_factor)(void *user, const struct mp_search_config *cfg, double *out);
};

/** The grid one phase is searched over; every array is caller-owned. */
struct mp_search_space {
	const uint32_t *widths;        /**< [n_widths] EP widths */
	size_t n_widths;
	const uint32_t *attention_tp;  /**< [n_attention] 1 = DP, 2..8 = TP groups */
	size_t n_attention;
	const int *overlaps;           /**< [n_overlaps] the predictor's overlap modes */
	size_t n_overlaps;
	double batch_unit;             /**< batches are multiples of this (decode 1 request; prefill
					    e.g. 1,024 tokens), > 0 */
	double geometric_ratio;        /**< 0 = every multiple of batch_unit from batch_unit to the HBM
					    limit; > 1 = a geometric grid unit, unit*r, ... rounded to
					    multiples of the unit, and the limit itself */
	double batch_cap;              /**< the largest batch tried (0 = the HBM limit only) */
	const char *const *overlap_names; /**< [n_overlaps] names for sentences ("two_batch"), or
					       NULL (the numbers) */
};

/** Points meeting the targets whose tokens/s per GPU is within this
 * fraction of the most are ties, broken by the better speed per user
 * (decode) or the shorter TTFT (prefill): the step model is good to a few
 * percent (as widths.h's 1% rule for decode widths). */
#define MP_SEARCH_TIE 0.01

/** Serving targets; 0 = none. */
struct mp_search_targets {
	double tpot_s;   /**< decode: time per output token; a point meets it when
			      tokens_per_s_per_user >= 1 / tpot_s */
	double ttft_s;   /**< prefill: ttft_s <= this */
};

/** What the search learnt about one EP width. */
struct mp_search_width {
	uint32_t ep;
	size_t evaluated;          /**< configurations predicted at this width */
	bool fits;                 /**< some configuration fits in HBM */
	bool meets;                /**< some configuration meets the targets */
	bool factor_solved;        /**< its placement was solved (else f = 1: optimistic) */
	double busiest_factor;     /**< the factor used for its points */
	double bound;              /**< best tokens/s per GPU meeting the targets with f = 1 */
	double best;               /**< the same with its factor (= bound when not solved) */
};

/** The searched phase; caller-owned (init/finish). */
struct mp_search_phase {
	enum mp_phase_kind phase;
	bool colocated;
	struct mp_search_point *points; /**< [n_points] the union of every width's own Pareto front,
					     grouped by width in the space's order, each group by x
					     ascending; owned */
	size_t n_points;
	size_t *front;                  /**< [n_front] indices into points: the overall front, x
					     ascending; owned */
	size_t n_front;
	struct mp_search_width *widths; /**< [n_widths] as in the space; owned */
	size_t n_widths;
	size_t evaluated;               /**< configurations predicted in all (re-evaluations included) */
	size_t placements;              /**< busiest_factor calls */
	bool has_choice;                /**< some point meets the targets */
	size_t chosen;                  /**< index into points: most tokens/s per GPU meeting them,
					     ties (MP_SEARCH_TIE) to the better x */
	bool has_runner_up;
	size_t runner_up;               /**< the best meeting them at another width (or, with one
					     width, another attention/overlap), by the same rule */
	bool has_fastest;
	size_t fastest;                 /**< most tokens/s per GPU of all, targets or not */
	char why[512];                  /**< why the runner-up (and the fastest, when it misses the
					     targets) lost, one paragraph */
};

MP_EXPORT void mp_search_phase_init(struct mp_search_phase *phase);

/** Free; accepts NULL. */
MP_EXPORT void mp_search_phase_finish(struct mp_search_phase *phase);

/** True when a point meets the targets of its phase. */
MP_EXPORT bool mp_search_meets(const struct mp_search_point *point, const struct mp_search_targets *targets);

/** Search one phase: for each width, attention and overlap, ask max_batch,
 * predict every batch of the grid (busiest factor 1), keep the width's
 * Pareto front; then solve placements as the file comment says and
 * re-predict the solved widths with their factor; then the overall front,
 * the choice, the runner-up and the reasons. cfg_template gives the phase
 * and colocated (its other fields are overwritten). Returns 0 (has_choice
 * false when nothing meets the targets), MP_EINVAL (an empty space, a
 * batch_unit <= 0, a ratio in (0, 1], a factor below 1, a predicted value
 * that is NaN or negative), MP_ENOMEM, or a callback's code. out must be
 * initialised; its previous contents are freed. */
MP_EXPORT int mp_search_phase_run(const struct mp_search_model *model, const struct mp_search_space *space,
			const struct mp_search_targets *targets,
			const struct mp_search_config *cfg_template, struct mp_search_phase *out);

/** The grid of batches of one configuration: every multiple of unit up
 * to max_batch (ratio 0) or unit * ratio^i rounded to a multiple of the
 * unit, de-duplicated, and max_batch rounded down to a multiple of the
 * unit, ascending; at most cap entries are written to out (cap = 0 only
 * counts). Returns how many there are. */
MP_EXPORT size_t mp_search_batches(double unit, double ratio, double max_batch, double *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

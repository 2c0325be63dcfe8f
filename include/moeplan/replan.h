/* moeplan: re-planning a running placement from observed loads, moving as
 * few expert copies as the balance gained is worth.
 *
 * Terms as in moeplan/placement.h: per MoE layer E logical experts with
 * loads w_e >= 0, G GPUs with S slots each, N = G*S physical slots, slot p
 * on GPU p / S, the even split (each replica of e carries w_e / r_e).
 *
 * A move is a slot whose logical expert changes: the new expert's weights
 * are copied into it over the scale-up link (expert_bytes each). Experts
 * that stay on a GPU keep their slots, so a layer's moves are
 * sum over GPUs of (S - |old experts of g  intersect  new experts of g|)
 * (multisets), whatever the order of slots in the input.
 *
 * Objectives (README "Re-planning"):
 *  - budget: minimise the sum over layers of the busiest GPU's load with at
 *    most max_moves moves over all layers;
 *  - cost: minimise, per layer, horizon_steps * layer_time_s * max / mean
 *    + move_cost_s * moves, i.e. the predicted routed-expert time over the
 *    horizon (a layer runs at its busiest GPU: time = layer_time_s at
 *    perfect balance times max/mean) plus the time spent moving experts.
 *
 * Method, per layer (src/replan/):
 *  1. the from-scratch plan (mp_place), its GPUs relabelled to keep as
 *     many experts in place as possible (a maximum-weight assignment of
 *     new GPUs to old ones, Hungarian method), and its lower bound, which
 *     holds for any move budget;
 *  2. a move-limited local search from the current map: single-slot
 *     re-assignments (an expert with >= 2 replicas gives a slot to another
 *     expert) and two-slot swaps across GPUs, each scored on (busiest,
 *     second busiest) GPU load, never leaving an expert without a replica
 *     nor putting two replicas of one expert on one GPU; each step picks
 *     the best gain per move; its trajectory gives the best load found for
 *     0, 1, 2, ... moves (the curve), the from-scratch plan caps it;
 *  3. across layers, the budget goes where it buys most (dynamic
 *     programming over the curves: exact for the curves);
 *  4. a GLPK MIP per layer with the move budget (or the move cost) as a
 *     constraint (objective term), seeded with the best plan so far: its
 *     LP relaxation first (simplex iteration limit 4 x (rows + columns));
 *     then branch and bound on layers of at most 32 slots, or where the LP
 *     bound beats the from-scratch bound, within a work budget (simplex
 *     iterations and nodes, counted in GLPK's callback and stopped with
 *     glp_ios_terminate, sized by the matrix's nonzeros). Layers over
 *     20000 MIP columns skip GLPK. `method` says which happened.
 *     A layer is "optimal" when its load meets the from-scratch lower
 *     bound, GLPK proves it for its budget, or it was allotted no moves;
 *     otherwise "feasible" with the gap to the bound.
 *
 * Every search is bounded by counted work (steps, iterations, nodes), so
 * the result depends only on the input and the options, not on the
 * machine or the thread count. The time limit is a safety net: when it
 * stops the from-scratch solver or GLPK, the layer's status is
 * "time_limit" and only then may the output depend on machine speed.
 */
#ifndef MOEPLAN_REPLAN_H
#define MOEPLAN_REPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/placement.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** No move budget (a from-scratch plan is allowed). */
#define MP_REPLAN_UNLIMITED UINT64_MAX

/** Default bytes moved per expert copy: one DeepSeek-V3 routed expert,
 * 3 x 7168 x 2048 FP8 weights plus one FP32 scale per 128x128 block
 * (8.001953125 bits per weight), the `weight_bytes` that
 * mp_roofline_expert gives for plans/models/deepseek-v3.yaml. */
#define MP_REPLAN_DEFAULT_EXPERT_BYTES 44050944u

/** Default scale-up bandwidth per GPU and direction, bytes/s: NVLink 4 on
 * an H100 SXM, 900 GB/s bidirectional (hardware/hgx-h100.yaml). */
#define MP_REPLAN_DEFAULT_LINK_BW 450e9

struct mp_replan_options {
	uint64_t max_moves;         /**< budget over all layers; default MP_REPLAN_UNLIMITED */
	bool cost_mode;             /**< use the cost objective instead of the budget */
	double move_cost_s;         /**< cost mode: seconds per move, > 0 */
	double horizon_steps;       /**< cost mode: steps the new plan runs, > 0; default 1000 */
	double layer_time_s;        /**< cost mode: routed-expert time of one layer per step at
					 perfect balance, seconds, > 0 */
	double min_gain;            /**< keep the current plan when the relative gain in the
					 sum of busiest-GPU loads is below this; [0, 1), default 0 */
	double time_limit_s;        /**< safety net per layer, seconds, for the from-scratch
					 solver (its whole run gets layers x this) and for
					 GLPK (work budgets normally end the searches
					 first); default 10 */
	uint64_t expert_bytes;      /**< bytes copied per move; default MP_REPLAN_DEFAULT_EXPERT_BYTES */
	double link_bw_bytes_per_s; /**< per GPU and direction; default MP_REPLAN_DEFAULT_LINK_BW */
	bool mip;                   /**< run the GLPK MIP (see Method, step 4); default true */
	unsigned threads;           /**< for the from-scratch solver; 0 = number of CPUs */
	bool verbose;               /**< GLPK's log on stderr */
};

/** Fill the defaults above. */
MP_EXPORT void mp_replan_options_init(struct mp_replan_options *opts);

/** One moved slot. */
struct mp_replan_move {
	uint32_t layer;      /**< row index of the layer */
	uint32_t gpu;        /**< GPU of the slot */
	uint32_t slot;       /**< physical slot index, 0 .. N-1 (on GPU slot / S) */
	uint32_t old_expert;
	uint32_t new_expert;
	uint32_t source_gpu; /**< a GPU that held new_expert before the move (the copy's sender) */
};

/** One layer's outcome. */
struct mp_replan_layer {
	uint32_t moves;             /**< slots changed */
	uint64_t bytes;             /**< moves * expert_bytes */
	double max_before;          /**< busiest GPU of the current map under the loads */
	double max_after;           /**< busiest GPU of the new map */
	double mean_load;           /**< sum w / G */
	double scratch_max;         /**< busiest GPU of the from-scratch plan */
	uint32_t scratch_moves;     /**< moves the (relabelled) from-scratch plan needs */
	uint32_t scratch_moves_raw; /**< slots that differ from the from-scratch plan as the
					 solver labels its GPUs (what a balancer that re-plans from
					 scratch would move) */
	double lower_bound;         /**< proven for this layer's budget (>= the from-scratch bound) */
	double gap;                 /**< (max_after - lower_bound) / max_after, 0 when max_after is 0 */
	enum mp_place_status status;
	const char *method;         /**< static string: how the plan was obtained */
	double *curve;              /**< [curve_len] best busiest-GPU load found with at most k
					 moves, k = 0 .. curve_len - 1 = scratch_moves (non-increasing) */
	uint32_t curve_len;
};

/** The whole re-plan. Owned arrays; init/finish. */
struct mp_replan {
	struct mp_placement before;   /**< the current map, evaluated under the loads */
	struct mp_placement after;    /**< the new map, evaluated (equal to before when kept) */
	struct mp_placement scratch;  /**< the from-scratch plan, relabelled, evaluated */
	struct mp_replan_layer *layers; /**< [n_layers] */
	struct mp_replan_move *moves; /**< [n_moves] by layer, then slot */
	size_t n_moves;
	uint64_t total_bytes;
	double transfer_s;            /**< max over GPUs of max(bytes in, bytes out) / link bandwidth */
	double sum_before;            /**< sum over layers of max_before */
	double sum_after;
	double sum_scratch;
	double sum_bound;             /**< sum of the from-scratch lower bounds */
	double gain;                  /**< (sum_before - sum_after) / sum_before, 0 when sum_before is 0 */
	double recovered;             /**< (sum_before - sum_after) / (sum_before - sum_scratch);
					   1 when from scratch gains nothing */
	bool kept;                    /**< the gain was below min_gain: after = before, no moves */
	double kept_gain;             /**< when kept: the gain that was found and refused */
	double *total_curve;          /**< [total_curve_len] best sum of busiest-GPU loads with at
					   most k moves over all layers, k = 0 .. sum of scratch_moves */
	size_t total_curve_len;
	uint64_t expert_bytes;        /**< as used */
	double link_bw_bytes_per_s;   /**< as used */
};

MP_EXPORT void mp_replan_init(struct mp_replan *replan);

/** Free; accepts NULL. */
MP_EXPORT void mp_replan_finish(struct mp_replan *replan);

/** Re-plan `current` (a map as mp_load_map gives: slot_expert of every
 * layer; loads and bounds ignored) for the observed loads
 * ([n_layers][n_experts], the same shape as current). The current map may
 * hold two replicas of an expert on one GPU (they are kept unless moved);
 * the new plan never adds such a pair. Deterministic for the same input
 * and options (whatever opts->threads) unless the time limit stops GLPK or
 * the from-scratch solver (then that layer's status is MP_PLACE_TIME_LIMIT).
 * Returns 0; MP_EINVAL (shapes differ, an expert without a slot, an id out
 * of range, a negative or non-finite load, bad options; with a
 * diagnostic); MP_ENOMEM. out is filled on success. */
MP_EXPORT int mp_replan_run(const struct mp_placement *current, const struct mp_loads *loads,
		  const struct mp_replan_options *opts, struct mp_replan *out,
		  struct mp_diags *diags);

/** Replace row l of replan->after (a result of mp_replan_run on current
 * and loads) by slot_expert[N], a plan of the same shape in which every
 * expert has a slot (replan --engine's choice, moeplan/dispatch.h): the
 * experts a GPU keeps stay in their current slots and the arrivals fill
 * the freed ones (ascending expert into ascending slot), so the moves are
 * counted as mp_replan_run counts them; slot order within a GPU does not
 * change any GPU's load under the even split or SGLang's rule. The row is
 * evaluated under the even split on loads row l; its bound becomes the
 * from-scratch bound (it holds for any move budget; a bound GLPK proved
 * for the layer's old share of the budget may not) and its method the
 * static string given. Call mp_replan_recount after the last one. Returns
 * 0, MP_EINVAL (l or the shape out of range, an expert without a slot) or
 * MP_ENOMEM. */
MP_EXPORT int mp_replan_replace_layer(struct mp_replan *replan, const struct mp_placement *current,
				      const struct mp_loads *loads, uint32_t l, const uint32_t *slot_expert,
				      const char *method);

/** out[N]: slot_expert[N] (a plan for row l of current, same shape) with
 * its GPUs relabelled to keep as many of current's experts in place as
 * possible (a maximum-weight assignment, Hungarian method, as
 * mp_replan_run relabels its from-scratch plan), the staying experts in
 * their slots. Loads under the even split do not change; under SGLang's
 * rule they may (it reads the GPU numbering), so a caller scores the
 * result itself. Returns 0, MP_EINVAL (l out of range, an expert id out of
 * range) or MP_ENOMEM. */
MP_EXPORT int mp_replan_relabel_row(const struct mp_placement *current, uint32_t l,
				    const uint32_t *slot_expert, uint32_t *out);

/** After mp_replan_replace_layer: the moves (against current), bytes,
 * transfer time, sum_after, sum_bound, gain and recovered fraction again;
 * kept is cleared. Returns 0 or MP_ENOMEM. */
MP_EXPORT int mp_replan_recount(struct mp_replan *replan, const struct mp_placement *current);

/** Fold per-physical-slot counts ([n_layers][N], as engines record them)
 * back to logical experts through `map`: w_e = sum of the counts of the
 * slots holding e. out gets [n_layers][n_experts]. Returns 0, MP_EINVAL
 * (shapes differ; with a diagnostic) or MP_ENOMEM. */
MP_EXPORT int mp_replan_fold_slot_counts(const struct mp_placement *map, const struct mp_loads *slot_counts,
			       struct mp_loads *out, struct mp_diags *diags);

/** The re-plan record (README "Re-plan record"): objective, totals
 * (moves, bytes, transfer time, sums of busiest-GPU loads before, after,
 * from scratch and the bound, gain, recovered fraction, kept) and per
 * layer the loads, bound, status and the moves (gpu, slot, old expert ->
 * new expert, bytes, source GPU). layer_ids as for mp_placement_to_doc.
 * opts: the options the re-plan ran with. NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_replan_to_doc(const struct mp_replan *replan,
				const struct mp_replan_options *opts, const uint32_t *layer_ids);

/** The Pareto document: per layer and in total the best busiest-GPU load
 * (sum over layers for the total) for 0, 1, 2, ... moves up to the
 * from-scratch plan, with the lower bounds. NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_replan_pareto_doc(const struct mp_replan *replan, const uint32_t *layer_ids);

/** What kind of map file a re-plan read (its output keeps the kind). */
enum mp_replan_source {
	MP_REPLAN_SOURCE_LIST = 0,   /**< a bare [layers][slots] list */
	MP_REPLAN_SOURCE_PLAN,       /**< a full moeplan plan (phases) */
	MP_REPLAN_SOURCE_WRAPPED,    /**< a map with a moeplan `placement` (moeplan place) */
	MP_REPLAN_SOURCE_PLACEMENT,  /**< a bare moeplan placement object */
	MP_REPLAN_SOURCE_SGLANG,     /**< {"physical_to_logical_map": ...} alone */
	MP_REPLAN_SOURCE_VLLM,       /**< physical_to_logical_map with logical_replica_count */
};

/** Information read from a map file for re-planning one phase. */
struct mp_replan_plan_info {
	enum mp_replan_source kind;
	double tokens_per_gpu;     /**< plan: the phase's tokens per GPU per step, 0 = unknown */
	double expert_time_s;      /**< plan: the phase's expert_time_s (one layer, balanced), 0 = unknown */
	uint32_t top_k;            /**< plan: model.top_k, 0 = unknown */
	uint64_t expert_bytes;     /**< plan: hbm.routed_bytes / (slots_per_gpu * model.moe_layers),
					0 = unknown */
	uint32_t moe_layers;       /**< plan: model.moe_layers, 0 = unknown */
	uint32_t hidden_layers;    /**< plan: model.hidden_layers (dense layers counted), 0 = unknown */
};

/** Read what a re-plan needs to know about the map file at path besides
 * the map itself (mp_load_map reads that): its kind and, for a full plan,
 * the figures above (zero when absent). Returns 0, MP_EIO or
 * MP_EINVAL (not YAML/JSON). Implemented in src/io/loader-replan.c (YAML). */
MP_EXPORT int mp_replan_read_plan_info(const char *path, const char *phase,
			     struct mp_replan_plan_info *out, struct mp_diags *diags);

/** The hidden layer of each row of the map file at path, as a moeplan
 * plan (the phase's, default decode), `{placement: ...}` or placement
 * records it (`layers[].layer`, README "Layer identity"), in row order:
 * *ids a heap array of *n (the caller frees it). Engine maps, bare lists
 * and files whose every row does not say get *ids NULL, *n 0 (an SGLang
 * map's row r is hidden layer r). Returns 0, MP_EIO, MP_EINVAL (not
 * YAML/JSON) or MP_ENOMEM. Implemented in src/io/loader-replan.c. */
MP_EXPORT int mp_map_row_layers(const char *path, const char *phase, uint32_t **ids, uint32_t *n,
				struct mp_diags *diags);

/** One change to a plan's phase: set `key` to a copy of value (appended
 * after the phase's keys when absent), or remove it when value is NULL. */
struct mp_replan_edit {
	const char *key;
	const struct mp_doc *value;
};

/** Read the full moeplan plan at path (YAML or JSON) and return it as a
 * document with the keys of `<phase>` changed by edits (e.g. "placement"
 * replaced, "replan" added). Everything else is kept as written: plain
 * scalars become integers, reals, booleans or null when they read as such
 * (YAML 1.1 core forms), else strings; quoted scalars stay strings.
 * Returns 0, MP_EIO, MP_EINVAL (not a plan with that phase; with a
 * diagnostic) or MP_ENOMEM; *out is a new tree the caller destroys.
 * Implemented in src/io/loader-replan.c. */
MP_EXPORT int mp_replan_splice_plan(const char *path, const char *phase, const struct mp_replan_edit *edits,
			  size_t n_edits, struct mp_doc **out, struct mp_diags *diags);

#ifdef __cplusplus
}
#endif

#endif

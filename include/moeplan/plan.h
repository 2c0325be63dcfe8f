/* moeplan: the planning pipeline (scenario -> EP widths, slots, HBM,
 * roofline, placement per phase) and the plan document it writes. */
#ifndef MOEPLAN_PLAN_H
#define MOEPLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/placement.h"

#include "moeplan/capacity.h"
#include "moeplan/roofline.h"
#include "moeplan/scenario.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"
#include "moeplan/widths.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The `placement` object of a plan (README "Plan schema"): gpus, slots,
 * slots_per_gpu, n_experts, layers[] (layer, gpu_experts [gpus][slots_per_gpu],
 * replicas [n_experts], gpu_load [gpus], max_load, mean_load, balancedness =
 * mean/max, lower_bound, gap, status, method) and physical_to_logical
 * [layers][slots] (slot p on GPU p / slots_per_gpu). With a node structure
 * (gpus_per_node) also gpus_per_node and each layer's node_load. layer_ids may map
 * row i to a model layer number (NULL = 0..n_layers-1). Wall times are left
 * out so that plans are byte-identical across runs.
 * Returns a new tree (caller destroys) or NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_placement_to_doc(const struct mp_placement *placement,
				   const uint32_t *layer_ids);


/** One phase's decisions. */
struct mp_phase_plan {
	const char *phase;              /**< "prefill" or "decode" (static) */
	uint32_t ep;                    /**< chosen EP width */
	uint32_t slots;                 /**< physical routed-expert slots per MoE layer */
	uint32_t slots_per_gpu;
	uint32_t redundant;             /**< slots - logical experts */
	double tokens_per_gpu;          /**< b, tokens per GPU per step */
	struct mp_roofline_point roofline; /**< at b */
	struct mp_capacity hbm;         /**< per GPU */
	double busiest_factor;          /**< expected busiest GPU / mean, placement skew and finite batch */
	double step_expert_s;           /**< predicted routed-expert time per step, times busiest_factor */
	double requests;                /**< the chosen batch: decode requests per GPU (the phase's, or
					     the largest that fits and meets slo.tpot), prefill prompts */
	bool has_step;                  /**< the serving-step model ran (step.h) */
	struct mp_step step;            /**< the whole step at the chosen width and batch, with the
					     plan's busiest_factor */
	struct mp_widths widths;        /**< ranked candidate widths with verdicts (owned) */
	struct mp_placement placement;  /**< per MoE layer */
	struct mp_dispatch dispatch;    /**< the engine's dispatch the placement was made under
					     (mp_place_options.dispatch, its gpus_per_node the node
					     size the rule saw, 0 = one node; issue 24); zeroed = even */
};

/** The busiest GPU over the mean GPU under the phase's dispatch rule
 * (each layer's max_load / mean_load, which mp_place computes under
 * ph->dispatch): *worst the largest over layers, *mean their mean (layers
 * with no load skipped; 1 when none). Dimensionless. */
MP_EXPORT void mp_phase_plan_engine_balance(const struct mp_phase_plan *ph, double *worst, double *mean);

struct mp_plan {
	struct mp_loads loads;          /**< popularity the placement used [moe_layers][E] */
	struct mp_phase_plan prefill;
	struct mp_phase_plan decode;
};

struct mp_plan_options {
	struct mp_place_options place;  /**< solver knobs (time limit per layer, threads) */
	uint32_t simulate_steps;        /**< Monte Carlo steps for the busiest-GPU factor (default 200) */
	uint32_t width_steps;           /**< Monte Carlo steps per candidate decode width (default 128) */
};

/** Defaults: mp_place_options_init, time limit from the scenario. */
MP_EXPORT void mp_plan_options_init(struct mp_plan_options *opts);

MP_EXPORT void mp_plan_init(struct mp_plan *plan);

/** Free; accepts NULL. */
MP_EXPORT void mp_plan_finish(struct mp_plan *plan);

/** Fit loads to a model's layers (README "Layer identity"): rows that
 * name their layers (loads->layer_ids: a CSV's '# layers:' line or layer
 * column, SGLang's dump) keep the model's MoE layers in order, and a dense
 * layer's row, which must be all zero (SGLang's recorder writes zeros
 * there), is dropped; unnamed rows are the MoE layers in order when there
 * is one per MoE layer (then they get those ids), else they keep no ids.
 * A dump's hidden-layer count must be the model's. Returns 0, or MP_EINVAL
 * (a row beyond the model, loads on a dense layer, no MoE row) with a
 * diagnostic, or MP_ENOMEM. */
MP_EXPORT int mp_plan_layers(const struct mp_model *model, struct mp_loads *loads, struct mp_diags *diags);

/** Run the pipeline on a loaded scenario: generate the loads, choose each
 * phase's EP width and slots (README "How widths are chosen"; decode widths
 * ranked by expert time x the busiest-GPU factor of a sample of layers
 * placed at that width), check HBM,
 * evaluate the roofline at the phase's batch, place every MoE layer with
 * the solver. Returns 0, MP_ENOFIT (no width fits; diags say why),
 * MP_EINVAL, MP_ENOMEM or MP_ELIMIT. */
MP_EXPORT int mp_plan_build(const struct mp_scenario *scenario, const struct mp_plan_options *opts,
		  struct mp_plan *out, struct mp_diags *diags);

/** The plan document (README "Plan schema"). Returns NULL on allocation
 * failure. */
MP_EXPORT struct mp_doc *mp_plan_to_doc(const struct mp_plan *plan, const struct mp_scenario *scenario);

/** mp_plan_to_doc with the engine map's file named in the notes: SGLang's
 * --init-expert-location names map_path (plan --export-output FILE; issue
 * 26 item 9), or the placeholder MAP.json when map_path is NULL (as
 * mp_plan_to_doc). Returns NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_plan_to_doc_map(const struct mp_plan *plan, const struct mp_scenario *scenario,
					    const char *map_path);

#ifdef __cplusplus
}
#endif

#endif

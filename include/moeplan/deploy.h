/* moeplan: the deployment search of a scenario (`moeplan search`, issue
 * 13): every EP width, attention option, overlap mode and batch of each
 * phase predicted with the serving-step model (step.h), the Pareto fronts
 * (search.h), the pools sized for the workload and the co-located
 * alternative (pools.h), placement in the loop and the chosen widths'
 * placements (placement.h).
 *
 * The grid of one phase, with G the scale-up domain of its hardware and E
 * the model's routed experts:
 *   widths     1, 2, 4, every multiple of 8, and G, up to min(E, the GPU
 *              budget), where the phase's slot rule (scenario.h) gives a
 *              slot count;
 *   attention  data-parallel, and tensor-parallel groups of 2..8 GPUs
 *              within the scale-up domain (tp <= G, tp divides the width
 *              and the model's query heads when it gives them);
 *   overlap    none, two_batch and full (step.h);
 *   batch      decode: requests per GPU from 1 to the HBM limit
 *              (mp_step_max_requests); prefill: chunk tokens per GPU in
 *              multiples of chunk_unit up to the HBM limit (capacity.h) or
 *              max_chunk_tokens; every one (all_batches) or a geometric grid.
 * The decode context is the phase's context_tokens (the mean KV length);
 * a prefill prompt is isl tokens of which cached_fraction is a cached
 * prefix (the step attends to it, computes the rest).
 * The co-located alternative runs prefill on the decode pool's hardware
 * and slot rule at the decode widths.
 */
#ifndef MOEPLAN_DEPLOY_H
#define MOEPLAN_DEPLOY_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/doc.h"
#include "moeplan/placement.h"
#include "moeplan/pools.h"
#include "moeplan/scenario.h"
#include "moeplan/search.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Knobs; mp_deploy_options_init fills the defaults, then each phase's
 * own fields (prefill isl and slo.ttft; decode osl, slo.tpot, acceptance),
 * then the scenario's `search:` block over them. */
struct mp_deploy_options {
	uint32_t gpus;              /**< GPU budget of both pools (0 = size for request_rate) */
	double request_rate;        /**< requests/s (0 = size for gpus) */
	double isl;                 /**< mean prompt tokens (default: the prefill phase's isl,
				         the decode phase's isl, the prefill context_tokens, else 4,096) */
	double osl;                 /**< mean output tokens (default: decode osl, else 1,024) */
	double cached_fraction;     /**< [0, 1), default 0 */
	double tpot_s;              /**< decode target (default decode slo.tpot), 0 = none */
	double ttft_s;              /**< prefill target (default prefill slo.ttft), 0 = none */
	double acceptance;          /**< decode: fraction of drafted tokens accepted (step.h);
				         default the decode phase's acceptance, else 0.75 with a
				         drafter (tokens_per_request > 1, as plan), else 0 */
	bool all_batches;           /**< every batch (default: a geometric grid) */
	double grid_ratio;          /**< geometric grid ratio (default 2^(1/8) = 1.0905) */
	double chunk_unit_tokens;   /**< prefill chunks are multiples of this (default 1,024) */
	double max_chunk_tokens;    /**< largest prefill chunk tried (default 65,536) */
	bool placement;             /**< placement in the loop and the chosen widths' placements
				         (default true) */
	uint32_t factor_steps;      /**< Monte Carlo steps per busiest-GPU factor (default 128) */
	unsigned overlap_mask;      /**< overlap modes searched: bit (1 << mp_step_overlap) per mode
				         (none, two_batch, full); 0 = all three (default). An engine
				         without fused dispatch-GEMM-combine kernels (SGLang and vLLM
				         with DeepEP) cannot run `full` (issue 23) */
	struct mp_place_options place; /**< solver knobs (time limit from the scenario) */
};

/** Defaults (field comments), then every field the scenario's `search:`
 * block gives. sc may be NULL. */
MP_EXPORT void mp_deploy_options_init(struct mp_deploy_options *opts, const struct mp_scenario *sc);

/** The result; caller-owned (init/finish). */
struct mp_deploy {
	struct mp_search_phase prefill;    /**< on the prefill pool's hardware */
	struct mp_search_phase decode;     /**< on the decode pool's hardware */
	struct mp_search_phase colocated;  /**< prefill on the decode pool (the aggregated option) */
	bool has_final;
	struct mp_search_point prefill_final; /**< the chosen points predicted again with the
					        busiest-GPU factor of their full placement (every MoE
					        layer, Monte Carlo as `plan`); = the chosen points
					        without placement */
	struct mp_search_point decode_final;
	bool has_pools;
	char pools_why[320];               /**< has_pools false: why there are no pools (a phase
					        without a choice, or a budget that holds no prefill
					        group beside a decode group, naming both); else "" */
	struct mp_pools pools;             /**< from prefill_final and decode_final */
	double kv_bytes_per_request;       /**< mp_model_kv_bytes_per_request at isl */
	bool has_colocated;
	struct mp_colocated colo;          /**< the best co-located deployment meeting the TPOT target */
	size_t colo_decode;                /**< its decode point (index into decode.points) */
	size_t colo_prefill;               /**< its prefill point (index into colocated.points) */
	bool colocated_wins;               /**< more requests/s per GPU than the pools */
	struct mp_loads loads;             /**< the scenario's popularity [moe_layers][E] */
	size_t loop_time_limits;           /**< placements in the loop the wall-clock limit stopped
					        (their factors, so the choice, may then depend on the
					        machine's speed) */
	bool prefill_table_priced;         /**< a kernel table (the hardware's or --kernels)
					        priced some term of a prefill step the search
					        evaluated (issue 23: else the scalar factors) */
	bool decode_table_priced;          /**< the same for decode */
	bool placed;
	struct mp_placement prefill_placement; /**< every MoE layer at the chosen prefill width */
	struct mp_placement decode_placement;
	double search_seconds;             /**< wall time of the search, placement in the loop
					        included (not written to documents) */
	double placement_seconds;          /**< wall time of the chosen widths' placements */
};

MP_EXPORT void mp_deploy_init(struct mp_deploy *d);

/** Free; accepts NULL. */
MP_EXPORT void mp_deploy_finish(struct mp_deploy *d);

/** Run the whole search on a loaded scenario. Returns 0 (has_pools false
 * when a phase has no choice: the phase's `why` says why), MP_EINVAL (bad
 * options or a model the step model cannot evaluate), MP_ENOMEM, MP_ELIMIT
 * (the placement solver found no feasible plan). Diagnostics describe
 * failures. */
MP_EXPORT int mp_deploy_search(const struct mp_scenario *sc, const struct mp_deploy_options *opts,
		     struct mp_deploy *out, struct mp_diags *diags);

/** The result as a document (README "Search schema"): workload, prefill,
 * decode (front, chosen, runner_up, why, widths), pools, colocated,
 * winner, placements. Returns NULL on allocation failure. */
MP_EXPORT struct mp_doc *mp_deploy_to_doc(const struct mp_deploy *d, const struct mp_scenario *sc,
				const struct mp_deploy_options *opts);

/** The names of the overlap modes the search enumerates (step.h), for
 * output: "none", "two_batch", "full". */
MP_EXPORT const char *mp_deploy_overlap_name(int overlap);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: placement of logical experts and their redundant replicas into
 * physical slots, minimising the busiest GPU's load per MoE layer.
 *
 * Terms: a layer has E logical experts with loads w_e >= 0; G GPUs each
 * with S slots hold N = G*S physical experts (slots). Physical slot p lives
 * on GPU p / S. Expert e gets r_e >= 1 replicas (sum r_e = N), never two on
 * one GPU, and under the even split (what vLLM and SGLang dispatch) each
 * replica carries w_e / r_e. A GPU's load is the sum over its slots.
 *
 * Per layer: lower bounds; a heuristic incumbent (greedy replica counts,
 * LPT and balanced-differencing packing, DeepSeek EPLB's plan, then swaps,
 * pair re-splits, replica moves and an iterated local search), never worse
 * than EPLB's duplicate-free plan; then, while the gap is open, an
 * enumeration of the replica-count vectors that could beat the incumbent
 * and, on small layers (at most 24 slots), GLPK's packing MIP (glp_intopt)
 * for each of them with the incumbent as cutoff, which proves the optimum
 * (on larger layers each vector is packed heuristically); on layers whose
 * gap is still above 0.5%, GLPK's configuration LP by column generation
 * (a bound with a dual certificate, and plans by diving). Each layer
 * records which happened in `method` and whether its bound was met in
 * `status`. Nodes: see enum mp_node_policy.
 *
 * The result, struct mp_placement, is plain data declared in moeplan/map.h;
 * headers that only hold a placement include that header, not this one.
 */
#ifndef MOEPLAN_PLACEMENT_H
#define MOEPLAN_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/dispatch.h"
#include "moeplan/map.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_split {
	MP_SPLIT_EVEN = 0, /**< each replica carries w_e / r_e (vLLM, SGLang) */
	MP_SPLIT_WEIGHTED, /**< replicas may carry unequal shares (weighted routing) */
};

/* Every search is bounded by counted work (moves of the local search, GLPK
 * simplex iterations and branch-and-bound nodes), sized from the layer's
 * shape and scaled by `effort`, so that the plan depends only on the loads,
 * the shape and the options: byte-identical across runs, machines and
 * thread counts. The time limit is only a safety net. */
struct mp_place_options {
	double time_limit_s;    /**< seconds for the whole call (all layers): a safety net that
				     stops the search when the work budgets take longer; layers
				     it stopped have status MP_PLACE_TIME_LIMIT; 0 = none;
				     default 60 */
	double effort;          /**< multiplies the work budgets of the search (> 0); default 1 */
	unsigned threads;       /**< worker threads over layers; 0 = number of CPUs; default 0 */
	enum mp_split split;    /**< default MP_SPLIT_EVEN */
	uint32_t gpus_per_node; /**< 0 = no node structure; else G % gpus_per_node == 0 */
	enum mp_node_policy node_policy; /**< with gpus_per_node; default MP_NODES_REPORT */
	uint32_t n_groups;      /**< expert groups for MP_NODES_GROUP_LIMITED: divides E, and the
				     number of nodes divides it; each node's GPUs must have at least
				     as many slots as its experts, and at most that many per GPU */
	bool verbose;           /**< let GLPK print its log to stderr */
	double target_gap;      /**< stop a layer's search once its gap (map.h: (max_load -
				     lower_bound) / max_load) is at most this; default 0 */
	struct mp_dispatch dispatch; /**< the engine's dispatch the busiest GPU is minimised under
				     (moeplan/dispatch.h; issue 24). Default zeroed: the even split,
				     every replica 1/r, the plans as before. MP_DISPATCH_SGLANG: the
				     even-split plan is refined by a local search scored by SGLang's
				     rule (src/placement/dispatch-search.c); gpu_load and max_load
				     are then under that rule and lower_bound is the mean load, the
				     only bound claimed under it. With algorithm static over several
				     nodes (gpus_per_node < G) the layers are taken in order with
				     SGLang's random streams, hidden layers the loads skip (their
				     layer_ids) dispatched as SGLang's trivial rows (p % E).
				     MP_DISPATCH_VLLM: 1/r in expectation, so the even-split plan */
	const uint32_t *map_moe_ids; /**< [map_n_moe] the model's MoE layers (0-based hidden-layer
				     ids, strictly increasing), or NULL. With SGLang's static
				     dispatch over several nodes, the hidden layers the loads skip
				     are then dispatched as --export writes them
				     (mp_map_row_source: a skipped MoE layer carries the nearest
				     placed row, a dense layer the trivial row), so the reported
				     loads are those of the exported map; NULL = every skipped
				     layer as SGLang's trivial row p % E. Rows without layer_ids
				     are the MoE layers in order when n_layers == map_n_moe. */
	uint32_t map_n_moe;
	/** Optional progress callback, called from the calling thread after each
	 * layer (layers_done of n_layers, worst relative gap so far). */
	void (*progress)(void *user, uint32_t layers_done, uint32_t n_layers, double worst_gap);
	void *progress_user;
};

/** Fill defaults (see field comments). */
MP_EXPORT void mp_place_options_init(struct mp_place_options *opts);

/** Place every layer of `loads` on `gpus` GPUs with `slots_per_gpu` slots
 * each. Requires gpus * slots_per_gpu >= n_experts (else MP_EINVAL with a
 * diagnostic) and, for the even split, slots_per_gpu * gpus <= n_experts * gpus
 * (at most one replica of an expert per GPU). Deterministic: the same input
 * and options give the same plan (any thread count, any machine), unless a
 * layer's status is MP_PLACE_TIME_LIMIT. Returns 0; MP_EINVAL; MP_ENOMEM; MP_ELIMIT when a
 * layer has no feasible plan within the time limit (never happens with the
 * heuristic incumbent, kept for completeness). out is filled on success. */
MP_EXPORT int mp_place(const struct mp_loads *loads, uint32_t gpus, uint32_t slots_per_gpu,
	     const struct mp_place_options *opts, struct mp_placement *out,
	     struct mp_diags *diags);

/** Place a single layer: w[n_experts]; out must come from
 * mp_placement_alloc with the same shape (its layer array). */
MP_EXPORT int mp_place_layer(const double *w, uint32_t n_experts, uint32_t gpus,
		   uint32_t slots_per_gpu, const struct mp_place_options *opts,
		   struct mp_layer_placement *out);

/** A quick valid lower bound on the busiest GPU's load for any placement
 * of w (even split), in the unit of w: max(mean load sum(w)/G, the smallest
 * achievable largest replica load min_r max_e w_e/r_e plus the S-1 smallest
 * replica loads any plan can have). mp_place's per-layer lower_bound is at
 * least this and usually stronger (replica-count enumeration with
 * cardinality bounds, GLPK). See README "Bounds". Returns 0 for an
 * impossible shape. */
MP_EXPORT double mp_place_lower_bound(const double *w, uint32_t n_experts, uint32_t gpus,
			    uint32_t slots_per_gpu);

/** DeepSeek EPLB's global policy on one layer, for comparison (EPLB,
 * github.com/deepseek-ai/EPLB, eplb.py: replicate_experts gives the next
 * replica to the expert with the highest load per replica, without a cap;
 * balanced_packing puts replicas heaviest first onto the lightest GPU with
 * a free slot). It may put two replicas of one expert on a GPU (EPLB issue
 * #22); loads are evaluated as they fall (mp_place_evaluate). out as for
 * mp_place_layer. Returns 0, MP_EINVAL or MP_ENOMEM. */
MP_EXPORT int mp_place_eplb(const double *w, uint32_t n_experts, uint32_t gpus,
		  uint32_t slots_per_gpu, struct mp_layer_placement *out);

/** DeepSeek EPLB's hierarchical policy on one layer, for comparison (EPLB,
 * eplb.py rebalance_experts_hierarchical): the n_groups groups of
 * E / n_groups consecutive experts are packed onto the G / gpus_per_node
 * nodes (balanced_packing: heaviest group first onto the lightest node
 * with room, n_groups / nodes groups each), then within each node EPLB's
 * global policy (mp_place_eplb) places the node's experts on its GPUs.
 * Load cannot move between nodes. Requires E % n_groups == 0,
 * n_groups % nodes == 0, G % gpus_per_node == 0 and each node's slots at
 * least its experts. out as for mp_place_layer. Returns 0, MP_EINVAL or
 * MP_ENOMEM. */
MP_EXPORT int mp_place_eplb_hierarchical(const double *w, uint32_t n_experts, uint32_t gpus,
			       uint32_t slots_per_gpu, uint32_t n_groups, uint32_t gpus_per_node,
			       struct mp_layer_placement *out);

/** Evaluate a given map (slot_expert[gpus*slots_per_gpu]) under loads
 * w[n_experts] with the even split: fills replicas, slot_load, gpu_load,
 * max_load, mean_load, lower_bound, gap and status of out (slot_expert is
 * copied in). A GPU holding one expert twice is evaluated as it stands;
 * its lower_bound is then the mean load (the bounds of
 * mp_place_lower_bound assume at most one replica per GPU).
 * Returns MP_EINVAL when an id is out of range, an expert has no replica or
 * a load is negative (out untouched), MP_ENOMEM. */
MP_EXPORT int mp_place_evaluate(const uint32_t *slot_expert, const double *w,
		      uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		      struct mp_layer_placement *out);

/** Slots of slot_expert[gpus*slots_per_gpu] that repeat an expert already
 * on the same GPU (0 for a map the solver could produce). */
MP_EXPORT uint32_t mp_place_duplicates(const uint32_t *slot_expert, uint32_t gpus,
				       uint32_t slots_per_gpu);

/** Check a given map (e.g. an engine's) against loads with the same layers
 * and experts: eval (initialised, allocated here) is the map evaluated layer
 * by layer (mp_place_evaluate); best (initialised) is the solver's own
 * plan for the same shape (mp_place with opts). Each layer of eval whose map
 * holds no expert twice on a GPU takes the solver's proven lower_bound when
 * it is stronger (it bounds every such map); a map with duplicates keeps the
 * mean. The gap and status are set by mp_layer_placement_set_bound (map.h).
 * Returns 0, MP_EINVAL (shapes differ, ids out of range, an expert with no
 * slot), MP_ENOMEM, or mp_place's error (with diags). */
MP_EXPORT int mp_place_check(const struct mp_placement *map, const struct mp_loads *loads,
			     const struct mp_place_options *opts, struct mp_placement *eval,
			     struct mp_placement *best, struct mp_diags *diags);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: the placement as data. A placement says, for every MoE layer,
 * which logical expert each physical slot holds and what that plan costs:
 * the load on every slot and GPU, the busiest GPU (max_load), a proven
 * lower bound on it and the gap between the two. The solver
 * (moeplan/placement.h) writes placements; the loaders, the simulator, the
 * exporters and re-planning read them. Headers that only hold a map include
 * this header, never the solver's.
 *
 * Terms: E logical experts, G GPUs with S slots each, N = G * S physical
 * slots; slot p lives on GPU p / S. Loads are in the unit of the input
 * (tokens routed to an expert, or any count proportional to its work).
 *
 * The gap, one definition everywhere (API, plans, README, `moeplan place
 * --help`): gap = (max_load - lower_bound) / max_load, 0 when max_load is
 * 0. It is the share of the busiest GPU's load that may be excess over the
 * best possible plan, in [0, 1]; 0 with status optimal means proven.
 */
#ifndef MOEPLAN_MAP_H
#define MOEPLAN_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_place_status {
	MP_PLACE_OPTIMAL = 0,   /**< proven in exact arithmetic: no plan has a lighter busiest GPU.
				     The proofs: every GPU carries exactly the mean load, or the
				     exact branch and bound searched every plan (issue 17), or for
				     group-limited layers the node holding the busiest GPU is proven
				     and bounds every assignment of groups; lower_bound == max_load.
				     (Weighted split: its LP's value meets its bound within 1e-6.) */
	MP_PLACE_FEASIBLE,      /**< a valid plan; the search spent its work budget without closing the gap */
	MP_PLACE_TIME_LIMIT,    /**< the wall-clock safety net (time_limit_s) stopped the search: the
				     plan is valid and its bound holds, but it is the one case where
				     the plan can depend on the machine's speed and load */
};

/** Name used in plans: "optimal", "feasible", "time_limit". */
MP_EXPORT const char *mp_place_status_name(enum mp_place_status status);

/* What the node structure (mp_place_options.gpus_per_node) does to the
 * plan. Nodes are consecutive GPUs: node n holds GPUs n*P .. n*P+P-1 for P
 * GPUs per node. */
enum mp_node_policy {
	MP_NODES_REPORT = 0,    /**< node loads are reported; the placement ignores nodes */
	MP_NODES_BALANCE,       /**< second objective: among plans with the same GPU loads, the
				     busiest node as light as possible. GPUs are assigned to nodes
				     (identical GPUs, so the busiest GPU does not change), then
				     replicas are swapped between nodes while no GPU exceeds the
				     busiest GPU's load. Load moves between nodes through replicas
				     (an expert's replicas may sit on several nodes), unlike EPLB's
				     hierarchical policy */
	MP_NODES_GROUP_LIMITED, /**< every replica of a group's experts stays on one node, so a
				     token routed to topk_groups groups reaches at most that many
				     nodes (DeepSeek-V3's node-limited routing: 8 groups, top-4).
				     Groups are n_groups blocks of E / n_groups consecutive experts
				     (expert e in group e / (E / n_groups)); each node holds
				     n_groups / nodes groups; every node's experts are placed on its
				     GPUs by the solver. The bound is valid for every assignment of
				     groups to nodes */
};

/** Name used in plans: "report", "balance", "group_limited". */
MP_EXPORT const char *mp_node_policy_name(enum mp_node_policy policy);

/** One layer's result. Arrays are owned by the struct. */
struct mp_layer_placement {
	uint32_t *slot_expert; /**< [gpus * slots_per_gpu]: logical expert in each physical slot */
	uint32_t *replicas;    /**< [n_experts]: r_e */
	double *slot_load;     /**< [gpus * slots_per_gpu]: load carried by each slot */
	double *gpu_load;      /**< [gpus] */
	double max_load;       /**< busiest GPU */
	double mean_load;      /**< sum w / G */
	double lower_bound;    /**< proven: no placement has a busiest GPU below this. From proofs
				    only (combinatorial bounds, GLPK's bounds less its tolerances,
				    exhaustive search), lowered by their floating-point rounding
				    error; below max_load unless status is optimal, where it is
				    max_load (the plan's exact value rounded to a double) */
	double gap;            /**< (max_load - lower_bound) / max_load, 0 when max_load is 0: the
				    share of the busiest GPU's load that may still be excess
				    (written by mp_layer_placement_set_bound only) */
	enum mp_place_status status;
	const char *method;    /**< static string: how the plan and its bound were obtained */
	double seconds;        /**< wall time spent on this layer */
	double *node_load;     /**< [gpus / gpus_per_node] sum of each node's GPU loads, or NULL
				    when no node structure was given (mp_place with gpus_per_node) */
	double node_max_load;  /**< busiest node (0 without nodes) */
	double node_mean_load; /**< sum w / nodes: a lower bound on the busiest node (0 without nodes) */
};

/** A placement of every layer. */
struct mp_placement {
	uint32_t n_layers;
	uint32_t n_experts;
	uint32_t gpus;
	uint32_t slots_per_gpu;
	uint32_t gpus_per_node; /**< 0 = no node structure; else layers carry node_load */
	enum mp_node_policy node_policy; /**< as placed (mp_place_options.node_policy) */
	uint32_t n_groups;      /**< expert groups kept within nodes (MP_NODES_GROUP_LIMITED), else 0 */
	struct mp_layer_placement *layers; /**< [n_layers] */
};

MP_EXPORT void mp_placement_init(struct mp_placement *placement);

/** True when the shape is one mp_placement_alloc accepts: 1 <= n_experts
 * <= MP_MAX_EXPERTS, 1 <= gpus <= MP_MAX_GPUS, 1 <= slots_per_gpu <=
 * MP_MAX_SLOTS_PER_GPU (moeplan/traffic.h), and n_experts <= gpus *
 * slots_per_gpu <= UINT32_MAX / 2. */
MP_EXPORT bool mp_placement_shape_ok(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu);

/** Allocate n_layers empty layers with arrays sized for the shape.
 * Returns 0, MP_EINVAL (a size 0, too large, or slots < experts) or
 * MP_ENOMEM. */
MP_EXPORT int mp_placement_alloc(struct mp_placement *placement, uint32_t n_layers,
		       uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu);

/** Free; accepts NULL. */
MP_EXPORT void mp_placement_finish(struct mp_placement *placement);

/** Record a layer's proven lower bound and the status its plan earns: the
 * one place that writes lower_bound, gap and status (max_load must be set
 * first). lower_bound = min(bound, max_load) (no plan is better than the
 * one at hand, so a bound above it is that plan's load); gap = (max_load -
 * lower_bound) / max_load, 0 when max_load is 0; status as given. bound
 * in the unit of the loads; lp must not be NULL. */
MP_EXPORT void mp_layer_placement_set_bound(struct mp_layer_placement *lp, double bound,
				  enum mp_place_status status);

/** Which placement row fills hidden layer h of the engine's map (the rule
 * of mp_export_map, moeplan/export.h): the row planned for h; else, when h
 * is a MoE layer (in moe_ids[n_moe], strictly increasing), the row whose
 * layer is nearest (smallest |h - row_layer[r]|, the lower row on a tie);
 * else UINT32_MAX (a dense layer: the identity row p % n_experts).
 * row_layer[n_rows] strictly increasing hidden-layer ids; n_rows >= 1.
 * Shared by the export and the placement under SGLang's static dispatch,
 * whose random streams run over every row of the map (issue 24). */
MP_EXPORT uint32_t mp_map_row_source(uint32_t h, const uint32_t *moe_ids, uint32_t n_moe,
				     const uint32_t *row_layer, uint32_t n_rows);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: where the serving engines send a logical expert's tokens when it
 * has several physical replicas, and the load every slot and GPU then
 * carries (issue 24).
 *
 * Terms: E logical experts, G EP ranks (one GPU each) with S slots each,
 * physical slot p on GPU p / S; P GPUs per node (node n holds GPUs n*P ..
 * n*P+P-1). With DP attention every rank originates tokens: by default rank
 * g originates w_e / G of expert e's tokens (an equal share of every
 * expert), or the per-rank counts `origin[g * E + e]` where a dump has them.
 * Loads are in the unit of w.
 *
 * The rules, read from the engines' own source:
 *
 * - MP_DISPATCH_EVEN: every replica of e takes w_e / r_e (DeepSeek's EPLB,
 *   github.com/deepseek-ai/EPLB eplb.py, assumes this split; it is what
 *   moeplan's solver has always optimised).
 *
 * - MP_DISPATCH_SGLANG: sgl-project/sglang main 60d36e7 (2025-12-09, the
 *   mirror fzyzcjy/sglang), python/sglang/srt/eplb/expert_location.py. At
 *   start-up each rank first reduces every expert's candidate replicas
 *   (`_compute_logical_to_all_physical_map` with moe_ep_rank, lines
 *   ~347-371) to the one `_find_nearest_expert` (~470-507) names: the only
 *   replica when there is one, else the first (lowest physical id) replica on
 *   the rank's own GPU, else the first replica on its node; otherwise all
 *   replicas stay. With `--ep-dispatch-algorithm static` (what SGLang sets
 *   whenever `--init-expert-location` is given: server_args.py
 *   `_handle_eplb_and_dispatch`), `compute_logical_to_rank_dispatch_physical_map`
 *   then walks layers and experts in order with a fresh random.Random(42)
 *   and gives the ranks still without a replica `_fair_choices` (~392-443):
 *   each candidate k // c times plus random.sample of the remainder, then
 *   random.shuffle. Only ranks on nodes without a replica draw; their
 *   stream is the same for all ranks of a node (their reduced maps agree on
 *   which experts draw) and differs between nodes. MP_DISPATCH_STATIC
 *   reproduces it exactly when given streams (mp_dispatch_streams, CPython's
 *   Mersenne Twister, `_randbelow`, `sample` and `shuffle`); without streams
 *   it gives the expectation (a drawing rank's tokens split 1/c over the
 *   candidates). `dynamic` (expert_location_dispatch.py
 *   `_topk_ids_logical_to_physical_dynamic`: per token, torch.randint %
 *   the rank's reduced candidate count) is computed as its expectation
 *   (the same 1/c split; the 65536 % c bias of torch.randint is ignored).
 *   `fake` (`transform_select_experts_inputs`: router logits replaced by
 *   uniform(5, 10), so routing ignores the model) dispatches as dynamic and
 *   its loads are the expectation of uniform routing: every expert takes
 *   the mean load of the layer, whatever w says.
 *
 * - MP_DISPATCH_VLLM: vllm-project/vllm b9f290ed,
 *   vllm/model_executor/layers/fused_moe/router/base_router.py
 *   `eplb_map_to_physical_and_record` (called from `BaseRouter.
 *   _apply_eplb_mapping` in `select_experts`): the replica is
 *   logical_to_physical_map[e][pos % logical_replica_count[e]], pos the
 *   token's flattened index in topk_ids, so the replicas take turns by
 *   position; over many tokens each takes 1/r_e, which is the expectation
 *   computed here (the same loads as MP_DISPATCH_EVEN).
 */
#ifndef MOEPLAN_DISPATCH_H
#define MOEPLAN_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_dispatch_rule {
	MP_DISPATCH_EVEN = 0, /**< every replica takes 1/r (DeepSeek's EPLB; moeplan's default) */
	MP_DISPATCH_SGLANG,   /**< own GPU, then first same-node replica, then fair choice */
	MP_DISPATCH_VLLM,     /**< token position modulo the replica count (1/r in expectation) */
};

/** SGLang's `--ep-dispatch-algorithm` values (server_args.py at 60d36e7:
 * Literal["static", "dynamic", "fake"], default None, set to "static" when
 * --init-expert-location or --enable-eplb is given). */
enum mp_dispatch_algorithm {
	MP_DISPATCH_STATIC = 0,
	MP_DISPATCH_DYNAMIC,
	MP_DISPATCH_FAKE,
};

/** A dispatch rule with its parameters. Zeroed = even split. */
struct mp_dispatch {
	enum mp_dispatch_rule rule;
	enum mp_dispatch_algorithm algorithm; /**< MP_DISPATCH_SGLANG only */
	uint32_t gpus_per_node; /**< P: SGLang's ep_size // nnodes; 0 = all G GPUs on one node
				     (SGLang's default --nnodes 1) */
};

/** "even", "sglang", "vllm". */
MP_EXPORT const char *mp_dispatch_rule_name(enum mp_dispatch_rule rule);
/** "static", "dynamic", "fake". */
MP_EXPORT const char *mp_dispatch_algorithm_name(enum mp_dispatch_algorithm algorithm);
/** Parse a rule name (exact, lower case); 0 or MP_EINVAL. */
MP_EXPORT int mp_dispatch_parse_rule(const char *name, enum mp_dispatch_rule *out);
/** Parse an algorithm name (exact, lower case); 0 or MP_EINVAL. */
MP_EXPORT int mp_dispatch_parse_algorithm(const char *name, enum mp_dispatch_algorithm *out);

/** SGLang's static dispatch streams: one Python random.Random(42) per node
 * (CPython 3 Modules/_randommodule.c: MT19937 seeded by init_by_array({42})).
 * Returns NULL on allocation failure or nodes == 0. */
struct mp_dispatch_streams;
MP_EXPORT struct mp_dispatch_streams *mp_dispatch_streams_new(uint32_t nodes);
/** A copy (same state), or NULL. */
MP_EXPORT struct mp_dispatch_streams *mp_dispatch_streams_copy(const struct mp_dispatch_streams *s);
/** Copy from's state into to (same node count; else nothing happens). */
MP_EXPORT void mp_dispatch_streams_assign(struct mp_dispatch_streams *to,
					  const struct mp_dispatch_streams *from);
/** Free; accepts NULL. */
MP_EXPORT void mp_dispatch_streams_free(struct mp_dispatch_streams *s);

/** One layer (one row of the engine's map) under rule d:
 * slot_expert[G*S] (ids < E; every expert needs a slot), w[E] the layer's
 * tokens per expert (NULL = a row with no tokens, such as a dense layer's
 * row of SGLang's map: loads are zero but the streams still advance as
 * SGLang's walk does), origin[G*E] (NULL = rank g originates w_e / G; else
 * rank g originates origin[g*E+e] and w is only used for `fake`).
 * streams: with rule SGLANG and algorithm STATIC, the exact dispatch and
 * the streams advance (rows must then be given in the map's order, from
 * the first hidden layer); NULL = the expectation. Fills slot_load[G*S] and
 * gpu_load[G] (either may be NULL). Returns 0, MP_EINVAL (an id >= E, an
 * expert without a slot, P not dividing G, streams for another node count)
 * or MP_ENOMEM. */
MP_EXPORT int mp_dispatch_layer(const struct mp_dispatch *d, struct mp_dispatch_streams *streams,
				const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
				uint32_t slots_per_gpu, const double *w, const double *origin,
				double *slot_load, double *gpu_load);

/** route[g * E + e] of mp_dispatch_layer_route: rank g splits expert e's
 * tokens over all its replicas (1/c each in expectation) instead of
 * sending them to one slot. */
#define MP_DISPATCH_SPLIT UINT32_MAX

/** Where each rank sends each expert's tokens in one layer, under rule d:
 * route[g * E + e] (out, [G*E]) is the physical slot rank g's tokens of
 * expert e go to, or MP_DISPATCH_SPLIT where the rank spreads them over
 * all c replicas (the even and vLLM rules for c > 1, the pick of SGLang's
 * `dynamic` for a rank without a replica on its GPU or node, and `static`
 * without streams). Slot choices follow mp_dispatch_layer exactly: with
 * rule SGLANG, algorithm STATIC and streams, the drawn slots, and the
 * streams advance as mp_dispatch_layer advances them (so the two can be
 * mixed row by row in one walk of the map). slot_expert, E, G, S as for
 * mp_dispatch_layer. Returns 0, MP_EINVAL (as mp_dispatch_layer, or route
 * NULL) or MP_ENOMEM. */
MP_EXPORT int mp_dispatch_layer_route(const struct mp_dispatch *d, struct mp_dispatch_streams *streams,
				      const uint32_t *slot_expert, uint32_t n_experts, uint32_t gpus,
				      uint32_t slots_per_gpu, uint32_t *route);

/** One expert under SGLang's rule with uniform origin (every rank sends
 * it 1/G of the tokens), as mp_dispatch_layer treats that expert within
 * its layer under `static`: cands[c] the expert's slots, strictly
 * ascending (< G*S); the streams (required) advance exactly as the layer
 * walk advances them at this expert, so a caller that visits a layer's
 * experts in id order (single-replica experts draw nothing) reproduces
 * mp_dispatch_layer's draws expert by expert. ranks[c] out: the number
 * of ranks sending to each candidate (its load is ranks[i] * w / G).
 * Returns 0, MP_EINVAL (streams NULL, a shape as mp_dispatch_layer,
 * cands not ascending) or MP_ENOMEM. */
MP_EXPORT int mp_dispatch_sglang_expert(struct mp_dispatch_streams *streams, const uint32_t *cands,
					uint32_t c, uint32_t gpus, uint32_t slots_per_gpu,
					uint32_t gpus_per_node, uint32_t *ranks);

#ifdef __cplusplus
}
#endif

#endif

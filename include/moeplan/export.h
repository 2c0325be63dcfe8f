/* moeplan: a placement in the serving engines' own formats.
 *
 * SGLang (sgl-project/sglang, read at commit 01fec5c2e61f): the JSON that
 * `--init-expert-location FILE.json` reads,
 *   {"physical_to_logical_map": [[...], ...]}   [num_hidden_layers][physical experts]
 * with nothing else in it. python/sglang/srt/eplb/expert_location.py,
 * compute_initial_expert_location_metadata, reads the file as JSON only
 * when its name ends in ".json" (".pt" is torch.load, anything else is
 * parsed as inline JSON text) and passes the object's keys as keyword
 * arguments to ExpertLocationMetadata.init_by_mapping, so any other key is
 * an error there. The map has one row per hidden layer, dense layers
 * included: the models size it by config.num_hidden_layers
 * (models/deepseek_v2.py get_model_config_for_expert_location) and look
 * rows up by the absolute layer id (expert_location_dispatch.py
 * ExpertLocationDispatchInfo.init_new(layer_id)); nothing checks the row
 * count, so a short map shifts every layer. Physical expert p lives on EP
 * rank p / (physical experts / ep_size) (expert_location.py
 * _compute_gpu_id_of_physical_expert): slots on GPU g are g*S .. g*S+S-1,
 * as in moeplan; num_physical_experts = num_logical +
 * ep_num_redundant_experts (_init_common).
 *
 * vLLM (vllm-project/vllm, vllm/distributed/eplb/eplb_state.py,
 * EplbState.build) loads no placement from a file: it starts from the
 * identity layout and rebalances by itself; there is no moeplan export for
 * it (README "Engines").
 */
#ifndef MOEPLAN_EXPORT_H
#define MOEPLAN_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/doc.h"
#include "moeplan/map.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_export_format {
	MP_EXPORT_SGLANG = 0,
};

/** Parse "sglang" (case-insensitive). Returns 0, or MP_EINVAL (also for
 * "vllm": vLLM reads no map from a file). */
MP_EXPORT int mp_export_parse(const char *name, enum mp_export_format *out);

/** Lower-case name of a format. */
MP_EXPORT const char *mp_export_name(enum mp_export_format format);

/** Where a placement's rows sit among the model's hidden layers. */
struct mp_export_layers {
	uint32_t hidden_layers;    /**< rows of the engine's map (num_hidden_layers), >= 1 */
	const uint32_t *moe_ids;   /**< [n_moe] the MoE layers (0-based hidden-layer ids),
				        strictly increasing; every other layer is dense */
	uint32_t n_moe;
	const uint32_t *row_layer; /**< [placement n_layers] the MoE layer each placement row
				        was planned for, strictly increasing, each in moe_ids */
};

/** The engine's full map: map[hidden_layers * N] (N = gpus *
 * slots_per_gpu) with row h = the placement row planned for layer h; a
 * dense layer gets the identity row p % n_experts (what SGLang's
 * ExpertLocationMetadata.init_trivial gives every layer; dense layers never
 * read it); a MoE layer no row was planned for gets the row of the nearest
 * planned layer (smallest |h - row layer|, the lower one on a tie), i.e.
 * it is placed from the nearest observed popularity. *filled (may be NULL)
 * gets the number of such MoE layers. Returns 0, MP_EINVAL (layers
 * inconsistent with the placement, an id out of range) or MP_ENOMEM;
 * *map_out is a new array the caller frees. */
MP_EXPORT int mp_export_map(const struct mp_placement *placement, const struct mp_export_layers *layers,
		  uint32_t **map_out, uint32_t *filled);

/** The engine document: {"physical_to_logical_map": map} of mp_export_map.
 * Returns a new tree, or NULL (MP_EINVAL or MP_ENOMEM cases above). */
MP_EXPORT struct mp_doc *mp_export_doc(const struct mp_placement *placement,
			     const struct mp_export_layers *layers, enum mp_export_format format);

/** Write mp_export_doc as JSON to path atomically ("-" = stdout). A file
 * name must end in ".json" (SGLang reads other names as torch or inline
 * JSON). Returns 0, MP_EINVAL (a bad name or mp_export_map's cases),
 * MP_ENOMEM or MP_EIO. */
MP_EXPORT int mp_export_save(const struct mp_placement *placement, const struct mp_export_layers *layers,
		   enum mp_export_format format, const char *path);

/** True when path can be given to --init-expert-location as a JSON map
 * (ends in ".json", case as SGLang compares it: exactly ".json"). */
MP_EXPORT bool mp_export_name_ok(const char *path);

/** The engine flags that keep the placement, one line:
 * "--tp-size G --ep-size G --ep-num-redundant-experts R
 * --init-expert-location FILE --ep-dispatch-algorithm static". SGLang
 * builds the EP group inside the TP group (ep_size <= tp_size), so with
 * DP attention the EP width is the TP size; static dispatch sends each
 * rank's tokens for an expert to one fixed replica, the one on its own GPU
 * when it has one (expert_location.py
 * compute_logical_to_rank_dispatch_physical_map), and is what SGLang
 * chooses for a given init_expert_location (server_args.py
 * _handle_eplb_and_dispatch); --enable-eplb would rebalance it away. file
 * may be NULL (then "FILE.json"). Writes at most size bytes into buf. */
MP_EXPORT void mp_export_flags(const struct mp_placement *placement, enum mp_export_format format,
		     const char *file, char *buf, size_t size);

/** What a plan assumes of SGLang's launch (issue 24), for the whole
 * launch line. Flag names as python/sglang/srt/server_args.py defines them
 * at sgl-project/sglang 60d36e7 (tests/data/engines/
 * sglang-server-args-60d36e7.txt is that file's list; test-export checks
 * every flag written against it). */
struct mp_export_launch {
	const char *model_path;   /**< --model-path; NULL = "MODEL" */
	uint32_t gpus;            /**< EP width: --tp-size, --ep-size (and --dp-size with DP attention) */
	uint32_t gpus_per_node;   /**< --nnodes gpus / gpus_per_node when > 1 node (then --node-rank
				       and --dist-init-addr placeholders); 0 = one node */
	uint32_t redundant;       /**< --ep-num-redundant-experts */
	const char *file;         /**< --init-expert-location; NULL = "FILE.json" */
	const char *ep_dispatch_algorithm; /**< --ep-dispatch-algorithm; NULL = "static" */
	bool dp_attention;        /**< --enable-dp-attention --dp-size gpus: every rank originates
				       its own tokens, what moeplan's dispatch models assume */
	const char *deepep_mode;  /**< --moe-a2a-backend deepep --deepep-mode MODE ("low_latency",
				       "normal", "auto"); NULL = no DeepEP flags */
	uint32_t mtp_steps;       /**< MTP (DeepSeek's NextN): --speculative-algorithm EAGLE
				       --speculative-num-steps N --speculative-eagle-topk 1
				       --speculative-num-draft-tokens N + 1; 0 = none */
	double mem_fraction_static; /**< --mem-fraction-static, in (0, 1); 0 = not given */
};

/** Defaults for placement p: gpus, redundant from p, DP attention on,
 * DeepEP mode "auto" (server_args.py: low_latency for decode batches,
 * normal for prefill), static dispatch, one node, no MTP, no memory
 * fraction. */
MP_EXPORT void mp_export_launch_init(struct mp_export_launch *l, const struct mp_placement *p);

/** The launch line "python3 -m sglang.launch_server --model-path ... ", at
 * most size bytes into buf (truncated, always terminated). */
MP_EXPORT void mp_export_launch_line(const struct mp_export_launch *l, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif

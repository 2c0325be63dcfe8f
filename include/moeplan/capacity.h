/* moeplan: what one GPU must hold in HBM, and what still fits.
 *
 * Pure functions over struct mp_model and struct mp_hardware: no I/O, no
 * globals. Per GPU of an EP group of width N_EP holding E_phys slots:
 *
 *   routed   = (E_phys / N_EP) * moe_layers * W       (replicas included)
 *   shared   = shared_experts * moe_layers * W_shared
 *   dense    = model->dense_weight_bytes              (replicated: attention is data-parallel)
 *   drafter  = (drafter_slots / N_EP) * stages * W_drafter + drafter.other_weight_bytes
 *   kv       = requests * mp_model_kv_bytes_per_request(context)
 *   buffers  = dispatch/combine buffers (DeepEP layouts, below)
 *   workspace= the MoE layer's activations (vLLM fused_moe caches, below)
 *   reserve  = runtime, NCCL and allocator slack (option), or what the
 *              engine's memory fraction leaves out (below)
 *
 * Memory rules (mp_capacity_options.memory; an engine profile, engine.h):
 *  - MP_MEMORY_RESERVE: reserve = reserve_bytes (moeplan's own, 3.9 GB).
 *  - MP_MEMORY_STATIC_FRACTION, f = memory_fraction: SGLang's
 *    --mem-fraction-static, "(model weights + KV cache pool) / GPU memory
 *    capacity" (server_args.py _handle_gpu_memory_settings, sgl-project/
 *    sglang 60d36e7be). The rest, (1 - f) HBM, holds activations, CUDA
 *    graphs and the DeepEP buffers (made at the first forward, after the KV
 *    pool): reserve = max((1 - f) HBM - buffers - workspace, reserve_bytes),
 *    so weights + KV + buffers + workspace + reserve >= weights + KV +
 *    (1 - f) HBM. (A rest smaller than buffers + workspace + reserve_bytes
 *    is not flagged: SGLang would run out of memory there.)
 *  - MP_MEMORY_SGLANG_AUTO: f from SGLang's heuristic when the flag is not
 *    given (mp_sglang_mem_fraction_static, with tp = dp = the EP width under
 *    DP attention), then as STATIC_FRACTION.
 *  - MP_MEMORY_UTILIZATION, u = memory_fraction: vLLM's
 *    --gpu-memory-utilization, "the fraction of GPU memory to be used for
 *    the model executor" (vllm-project/vllm@002f10e0 vllm/config/cache.py
 *    CacheConfig; default 0.92 there): everything vLLM allocates, profiled
 *    activations included, within u HBM: reserve = (1 - u) HBM +
 *    reserve_bytes (CUDA context, NCCL: within u too).
 *
 * W is the expert weight bytes of roofline.h (P * bits / 8).
 *
 * Buffers, with T tokens per rank per step, hidden d, S = E_phys slots,
 * element sizes bd (dispatch) and bc (combine) from the model's formats:
 *  - low-latency (decode; DeepEP csrc/config.hpp LowLatencyLayout, sized
 *    as DeepEP sizes it, for BF16 whatever the dispatch format):
 *      msg_d = 16 + max(d * max(bd, bc), d * bd + 4 * ceil(d / 128))
 *      msg_c = 4 * ceil(d / 128) + d * bc
 *      send  = max(T * msg_d, S * T * msg_c)
 *      recv  = S * T * max(msg_d, msg_c)
 *      sig   = align128(8 S + 4 S / N_EP)
 *      bytes = 2 (send + recv + sig)            (odd/even double buffering)
 *  - normal (prefill; DeepEP Config::get_nvl_buffer_size_hint with the
 *    default 20 SMs = 10 channels and the recommended configs of
 *    deep_ep/buffer.py, plus the received tokens and their results):
 *      nvl   = 10 * min(N_EP, 8) * [ (2 r + 3) * 4 + R * (hb + 2056) ],
 *              r = max(N_EP / 8, 1) RDMA ranks, hb = d * max(bd, bc),
 *              R = 256 recv tokens per channel up to 8 ranks, 288 up to 64,
 *              560 up to 128, 720 beyond
 *      rdma  = 0 up to 8 ranks, else
 *              10 * r * [144 + 128 * 2 * (hb + 2072)] + 1 MiB
 *      (both rounded up to 128 bytes, as DeepEP does)
 *      recv  = T * D * (d * bd + 4 * ceil(d / 128) + d * bc),
 *              D = N_EP (1 - (1 - 1/N_EP)^k), the expected ranks a token goes to
 * Workspace (both modes; vLLM fused_moe intermediate_cache1..3 in the
 * combine format): T * k * (2 I + I + d) * bc.
 */
#ifndef MOEPLAN_CAPACITY_H
#define MOEPLAN_CAPACITY_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/doc.h"
#include "moeplan/model.h"
#include "moeplan/roofline.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which dispatch/combine buffer layout the engine allocates. */
enum mp_buffer_mode {
	MP_BUFFERS_AUTO = 0,     /**< low-latency for decode, normal for prefill */
	MP_BUFFERS_LOW_LATENCY,  /**< DeepEP low-latency (pure RDMA/NVLink, fixed-size) */
	MP_BUFFERS_NORMAL,       /**< DeepEP normal (chunked NVLink/RDMA rings) */
	MP_BUFFERS_NONE,         /**< no communication buffers (EP1, or counted elsewhere) */
};

/** Default reserve: 3.9 GB, aiconfigurator's 3.5 GB `other_mem` (CUDA
 * context, cuBLAS and allocator slack; ai-dynamo/aiconfigurator
 * aic-core/src/aiconfigurator_core/systems/ files) plus about 0.4 GB for
 * NCCL. */
#define MP_CAPACITY_DEFAULT_RESERVE_BYTES UINT64_C(3900000000)

/** How the engine holds memory (see the file's top comment). */
enum mp_memory_rule {
	MP_MEMORY_RESERVE = 0,       /**< a fixed reserve_bytes (default) */
	MP_MEMORY_STATIC_FRACTION,   /**< SGLang --mem-fraction-static = memory_fraction */
	MP_MEMORY_SGLANG_AUTO,       /**< SGLang's own default for that flag */
	MP_MEMORY_UTILIZATION,       /**< vLLM --gpu-memory-utilization = memory_fraction */
};

/** Inputs of SGLang's default --mem-fraction-static besides HBM and the
 * width (mp_sglang_mem_fraction_static). */
struct mp_sglang_memory {
	bool dp_attention;           /**< --enable-dp-attention: dp_size = tp_size = EP */
	uint32_t cuda_graph_max_bs;  /**< --cuda-graph-max-bs; 0 = SGLang's table by HBM */
	double chunked_prefill_size; /**< --chunked-prefill-size; 0 = SGLang's table by HBM */
	bool speculative;            /**< an EAGLE/MTP drafter (+2 GiB) */
};

struct mp_capacity_options {
	enum mp_buffer_mode buffers;    /**< default MP_BUFFERS_AUTO */
	double buffer_tokens_per_rank;  /**< T for the buffers; 0 = the step's tokens per GPU */
	bool workspace;                 /**< count the MoE activation workspace (default true) */
	uint64_t reserve_bytes;         /**< default MP_CAPACITY_DEFAULT_RESERVE_BYTES */
	enum mp_memory_rule memory;     /**< default MP_MEMORY_RESERVE */
	double memory_fraction;         /**< STATIC_FRACTION, UTILIZATION: in (0, 1] */
	struct mp_sglang_memory sglang; /**< SGLANG_AUTO's inputs */
};

/** SGLang's --mem-fraction-static when it is not given
 * (python/sglang/srt/server_args.py ServerArgs._handle_gpu_memory_settings,
 * sgl-project/sglang 60d36e7be, CUDA path), for a GPU of hbm_bytes
 * (gpu_mem = hbm_bytes / 2^20 MiB) and tp_size GPUs, in MiB:
 *   chunk, cuda_graph_max_bs (0 = the table: < 20 GiB 2048, 8;
 *     < 35 GiB 2048, tp < 4 ? 24 : 80; < 60 GiB 4096, tp < 4 ? 32 : 160;
 *     < 160 GiB 8192, tp < 4 ? 256 : 512; else 16384, 512)
 *   reserved = 512 + 1.5 max(chunk, 2048) + 2 cgbs + 1024 tp / 8
 *            + (dp attention: 3 cgbs dp, + 1.5 cgbs dp when cgbs > 300)
 *   reserved = max(reserved, 10240) when gpu_mem > 60 GiB
 *            + 2048 with a speculative (EAGLE/MTP) drafter
 *   f = round((gpu_mem - reserved) / gpu_mem, 3)
 * dp = tp under DP attention (pp 1). May be <= 0: SGLang's default leaves
 * no room (wide DP attention with the table's graph batch); the caller
 * says so. */
MP_EXPORT double mp_sglang_mem_fraction_static(uint64_t hbm_bytes, uint32_t tp_size,
					       const struct mp_sglang_memory *s);

/** Fill the defaults documented on each field. */
MP_EXPORT void mp_capacity_options_init(struct mp_capacity_options *opts);

/** The deployment to audit, per GPU. */
struct mp_capacity_input {
	bool prefill;               /**< phase (chooses the buffers under MP_BUFFERS_AUTO) */
	struct mp_ep_width width;   /**< EP, slots and drafter slots */
	double requests;            /**< concurrent requests per GPU, >= 0 */
	double context_tokens;      /**< context each request's KV cache holds, >= 0 */
	double tokens_per_request;  /**< tokens per request per step (decode), >= 0 */
	double chunk_tokens;        /**< prefill tokens per GPU per step; > 0 overrides
					 requests * tokens_per_request */
};

/** The HBM breakdown of one GPU (bytes). */
struct mp_capacity {
	uint64_t capacity_bytes;     /**< hw->hbm_bytes */
	uint64_t routed_bytes;       /**< routed-expert slots, replicas included */
	uint64_t shared_bytes;       /**< shared experts */
	uint64_t dense_bytes;        /**< attention, dense FFN, embeddings, head */
	uint64_t drafter_bytes;      /**< drafter experts and other weights */
	uint64_t weights_bytes;      /**< sum of the four above */
	uint64_t kv_bytes;           /**< KV cache */
	uint64_t buffer_bytes;       /**< dispatch/combine buffers */
	uint64_t workspace_bytes;    /**< MoE activation workspace */
	uint64_t reserve_bytes;      /**< runtime reserve */
	uint64_t used_bytes;         /**< everything above */
	int64_t free_bytes;          /**< capacity - used (negative when it does not fit) */
	bool fits;                   /**< used <= capacity */
	double tokens_per_gpu;       /**< tokens per GPU per step the buffers were sized for */
	double kv_bytes_per_token;   /**< whole model */
	double kv_bytes_per_request; /**< at the input's context */
	enum mp_buffer_mode buffers; /**< the layout used (never AUTO) */
	enum mp_memory_rule memory;  /**< the rule the reserve came from */
	double memory_fraction;      /**< its fraction (SGLANG_AUTO: the one computed); 0 under
					  MP_MEMORY_RESERVE */
};

/** The name of a buffer layout: "auto", "low-latency", "normal" or
 * "none" (what `moeplan fit --buffers` takes). */
MP_EXPORT const char *mp_buffer_mode_name(enum mp_buffer_mode mode);

/** The one document of an HBM breakdown, used by `plan` (each phase's
 * `hbm`) and `fit` (its `hbm`): a map of capacity_bytes, weights_bytes
 * (= routed + shared + dense + drafter), routed_bytes, shared_bytes,
 * dense_bytes, drafter_bytes, kv_cache_bytes, buffer_bytes, buffer_layout
 * (mp_buffer_mode_name), workspace_bytes, reserve_bytes, used_bytes,
 * free_bytes (negative when it does not fit) and fits, in that order; then,
 * under an engine's memory rule, memory_rule (mem_fraction_static,
 * gpu_memory_utilization) and memory_fraction.
 * Bytes per GPU. Returns a new map (mp_doc_free), or NULL on allocation
 * failure. */
MP_EXPORT struct mp_doc *mp_capacity_to_doc(const struct mp_capacity *c);

/** Bytes of the communication buffers alone for T tokens per rank (formulas
 * in the file comment). mode must not be MP_BUFFERS_AUTO. */
MP_EXPORT double mp_capacity_buffer_bytes(const struct mp_model *model, enum mp_buffer_mode mode,
				const struct mp_ep_width *width, double tokens_per_rank);

/** The HBM breakdown. opts may be NULL (defaults). Returns 0 (out->fits
 * tells the verdict), or MP_EINVAL when the width is invalid (ep 0, slots
 * below E or not a multiple of ep; drafter_slots likewise when the model
 * has a drafter), a count is negative or not finite, or the hardware has
 * no HBM capacity; MP_ENOMEM when a byte count overflows uint64_t. out is
 * untouched on failure. */
MP_EXPORT int mp_capacity_compute(const struct mp_model *model, const struct mp_hardware *hw,
			const struct mp_capacity_options *opts, const struct mp_capacity_input *in,
			struct mp_capacity *out);

/** The largest whole number of requests per GPU that fits at
 * in->context_tokens (in->requests is ignored; buffers grow with the
 * requests unless opts fixes buffer_tokens_per_rank). Found by bisection
 * on the monotone used bytes. Returns 0, MP_ENOFIT when not even 0
 * requests fit (the weights, buffers and reserve alone exceed HBM), or
 * MP_EINVAL (as mp_capacity_compute, or no KV bytes per request: context
 * 0 or a model without a KV size). */
MP_EXPORT int mp_capacity_max_requests(const struct mp_model *model, const struct mp_hardware *hw,
			     const struct mp_capacity_options *opts,
			     const struct mp_capacity_input *in, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif

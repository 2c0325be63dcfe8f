/* moeplan: the shapes of a mixture-of-experts model, its number formats,
 * and the hardware it runs on. Plain caller-owned structs filled by the
 * loader (loader.h) or by hand; no I/O here.
 *
 * Units: bytes as uint64_t or double, FLOP/s and bytes/s as double, SI
 * prefixes (1 GB = 1e9 B, 1 TB/s = 1e12 B/s).
 */
#ifndef MOEPLAN_MODEL_H
#define MOEPLAN_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/kernels.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Storage formats of weights and activations. */
enum mp_format {
	MP_FORMAT_MXFP4 = 0, /**< OCP MX: 4-bit E2M1 + one E8M0 scale per 32 values = 4.25 bit */
	MP_FORMAT_NVFP4,     /**< NVIDIA: 4-bit E2M1 + one FP8 E4M3 scale per 16 = 4.5 bit */
	MP_FORMAT_FP8,       /**< 8 bit (per-tensor scale; negligible) */
	MP_FORMAT_FP8_BLOCK, /**< 8 bit + one FP32 scale per 128x128 block = 8.002 bit (DeepSeek-V3) */
	MP_FORMAT_BF16,      /**< 16 bit */
	MP_FORMAT_FP16,      /**< 16 bit */
	MP_FORMAT_FP32,      /**< 32 bit */
	MP_FORMAT_INT8,      /**< 8 bit */
	MP_FORMAT_INT4,      /**< 4 bit + one BF16 scale per group (group_size, default 128) */
	MP_FORMAT_COUNT
};

/** Arithmetic classes a GPU publishes a dense peak for. The expert GEMM
 * runs at the peak of its compute class (the article runs MXFP4-stored
 * experts on FP8 tensor cores: R = 5e15 / 8e12 = 625 FLOP/B). */
enum mp_compute {
	MP_COMPUTE_FP4 = 0,
	MP_COMPUTE_FP8,
	MP_COMPUTE_BF16,
	MP_COMPUTE_INT8,
	MP_COMPUTE_COUNT
};

/** How the KV cache per token is derived. */
enum mp_attention_kind {
	MP_ATTENTION_DIRECT = 0, /**< kv_bytes_per_token given directly */
	MP_ATTENTION_MLA,        /**< (kv_lora_rank + rope_dim) * kv_bytes_per_element * kv_layers */
	MP_ATTENTION_GQA,        /**< 2 * kv_heads * head_dim * kv_bytes_per_element * kv_layers */
};

struct mp_attention {
	enum mp_attention_kind kind;
	uint32_t kv_layers;         /**< layers that keep a KV cache */
	uint32_t kv_lora_rank;      /**< MLA latent width (elements) */
	uint32_t rope_dim;          /**< MLA decoupled RoPE key width (elements) */
	uint32_t kv_heads;          /**< GQA key/value heads */
	uint32_t head_dim;          /**< GQA head width (elements) */
	double kv_bytes_per_element;/**< 2 for BF16, 1 for FP8, 0.5 for FP4 */
	uint32_t sliding_window;    /**< 0, or tokens a sliding layer keeps */
	uint32_t sliding_layers;    /**< how many of kv_layers are sliding */
	uint32_t heads;             /**< query heads (0 = unknown: attention FLOP not counted) */
	uint32_t qk_nope_dim;       /**< MLA: per-head query/key width without RoPE (prefill FLOP) */
	uint32_t v_head_dim;        /**< MLA: per-head value width (prefill FLOP) */
};

/** The speculative drafter's MoE stages (0 stages = no drafter). */
struct mp_drafter {
	uint32_t moe_stages;
	uint32_t routed_experts;
	uint32_t top_k;
	uint32_t hidden_size;
	uint32_t expert_intermediate_size;
	uint32_t matrices_per_expert;
	enum mp_format routed_format;
	uint64_t other_weight_bytes; /**< drafter attention, dense and embedding bytes */
};

struct mp_model {
	char *name;                       /**< owned; may be NULL */
	uint32_t hidden_size;             /**< d, elements */
	uint32_t moe_layers;              /**< layers with routed experts */
	uint32_t dense_layers;            /**< layers with a dense FFN instead */
	uint32_t *moe_layer_ids;          /**< owned; [moe_layers] the MoE layers' 0-based ids among
					       the moe_layers + dense_layers hidden layers, ascending
					       (HF first_k_dense_replace, moe_layer_freq,
					       mlp_only_layers, decoder_sparse_step,
					       interleave_moe_layer_step; preset moe_layer_ids), or
					       NULL = the dense layers come first (ids dense_layers ..
					       dense_layers + moe_layers - 1, DeepSeek's layout) */
	uint32_t routed_experts;          /**< E, logical routed experts per MoE layer */
	uint32_t shared_experts;          /**< shared experts per MoE layer */
	uint32_t top_k;                   /**< k, routed experts per token */
	uint32_t expert_intermediate_size;/**< I, per routed expert */
	uint32_t shared_expert_intermediate_size;
	uint32_t matrices_per_expert;     /**< 3 for SwiGLU (gate, up, down), 2 for a plain MLP */
	uint32_t n_groups;                /**< expert groups for group-limited routing (0 = none) */
	uint32_t topk_groups;             /**< groups a token may use */
	uint32_t int4_group_size;         /**< values per scale for MP_FORMAT_INT4 (default 128) */
	enum mp_format routed_format;     /**< storage of routed experts */
	enum mp_format shared_format;     /**< storage of shared experts */
	enum mp_compute expert_compute;   /**< the peak the expert GEMM runs at */
	enum mp_format dispatch_format;   /**< activation format tokens are dispatched in */
	enum mp_format combine_format;    /**< activation format results come back in */
	uint64_t dense_weight_bytes;      /**< attention, dense FFN, norms, router, embeddings and
					       head: replicated on every GPU (bytes) */
	double kv_bytes_per_token;        /**< KV cache of one context token, all layers (bytes);
					       derived from attention unless given */
	struct mp_attention attention;
	struct mp_drafter drafter;
	uint32_t vocab_size;              /**< embedding rows = LM head columns (0 = unknown: the
					       head is not split out of dense_weight_bytes) */
	bool tied_embeddings;             /**< embedding and LM head share one matrix */
};

/** The efficiency factors in force (a hardware file's `efficiency:`;
 * 0 = the default, which mp_step_efficiency in step.h fills in). Defaults and sources:
 *  hbm 0.90            FlashMLA README: dense MLA decoding "up to 3000 GB/s
 *                      in memory-bound configuration" on H800 SXM5 (3.35 TB/s).
 *  gemm 0.78           DeepGEMM README: FP8 GEMM "up to 1550 TFLOPS on
 *                      H800" (1,979 dense peak).
 *  attention 0.67      FlashMLA README: "660 TFLOPS in computation-bound
 *                      configuration" on H800 SXM5 (989 BF16 peak).
 *  scale_up 0.77       DeepEP docs/legacy.md: normal intranode EP8 153 GB/s
 *                      NVLink on H800 (200 GB/s per direction).
 *  scale_out 0.88      DeepEP docs/legacy.md: normal internode EP32/EP64,
 *                      58 / 51 GB/s logical RDMA = 44 GB/s on the wire of a
 *                      50 GB/s CX7 (derivation in tests/test-step.c).
 *  exchange_latency 28 us  per dispatch or combine kernel, with the two
 *                      link factors above: DeepEP low-latency table (EP8..256)
 *                      reproduced within 8% (tests/test-step.c).
 *  step_overhead 0.5 ms  host-side time per step: scheduling and the CUDA
 *                      graph's replay and synchronisation, no GPU kernel's own
 *                      time (each kernel's launch, ramp and tail inside the
 *                      graph, and the sampler's kernels, are kernel_fixed in
 *                      their terms since issue 23 item 2); order of magnitude
 *                      only ("a few hundred microseconds" floor of a
 *                      CUDA-graph decode step); calibrate it
 *                      (mp_step_calibrate) from one measurement.
 *  kernel_fixed 2.58 us  per kernel (launch, ramp and tail under CUDA graphs),
 *                      times the kernel counts of step.h (MP_KERNELS_*): the
 *                      floor of aiconfigurator's measured SGLang MLA decode
 *                      module (ai-dynamo/aiconfigurator@095f58a5, .../h100_sxm/
 *                      mla/sglang/0.5.10/wideep_generation_mla_perf.parquet),
 *                      measured minus this model at the default factors, the
 *                      smallest at batch <= 8, context <= 64 on H100: 103.5 -
 *                      62.08 = 41.42 us; the smallest, batch 1 context 4 and 16,
 *                      41.22 us (median 43.8; H200 median 51.4),
 *                      over the module's 16 kernels (MP_KERNELS_ATTENTION_CORE
 *                      + MP_KERNELS_ATTENTION_PROJ): 41.22 / 16 = 2.576 us.
 *  moe_fixed 22 us     per MoE block priced without the moe_block table (its
 *                      rows hold it as measured): the same commit's
 *                      wideep_generation_moe_perf.parquet (SGLang DeepEPMoE.
 *                      run_moe_core: two DeepGEMM masked grouped GEMMs and the
 *                      activation, CUDA graph), measured = this model + 22 us
 *  moe_fixed_per_expert 1.5 us  + 1.5 us per local expert (slot), median
 *                      |residual| over the generation rows 2.5% (H100),
 *                      4.8% (H200), 5.8% (B200), against 33-54% without it.
 * None is derived from a deployment moeplan then predicts. */
struct mp_efficiency {
	double hbm;
	double gemm;
	double attention;
	double scale_up;
	double scale_out;
	double exchange_latency_s;
	double step_overhead_s;
	double kernel_fixed_s;           /**< seconds per kernel (see above) */
	double moe_fixed_s;              /**< seconds per MoE block */
	double moe_fixed_per_expert_s;   /**< seconds per local expert per MoE block */
};

/** Dense peaks and memory of one GPU, and its place in the cluster. */
struct mp_hardware {
	char *name;                             /**< owned; may be NULL */
	double peak_flops[MP_COMPUTE_COUNT];    /**< dense FLOP/s; 0 = not supported */
	uint64_t hbm_bytes;                     /**< usable HBM capacity */
	double hbm_bw_bytes_per_s;              /**< peak HBM bandwidth */
	uint32_t scale_up_domain_gpus;          /**< GPUs in one NVLink/xGMI domain */
	uint32_t gpus_per_node;                 /**< GPUs per node (server or tray) */
	double scale_up_bw_bytes_per_s;         /**< per GPU, per direction */
	double scale_out_bw_bytes_per_s;        /**< per GPU, per direction (NIC) */
	struct mp_efficiency efficiency;        /**< achieved fractions and fixed times (step.h);
						     0 = default */
	char *kernels_path;                     /**< owned; the kernel table as the hardware file's
						     `kernels:` names it (opened relative to that
						     file), for the output; NULL = none */
	struct mp_kernel_table kernels;         /**< owned; its rows (issue 23): the step prices
						     from them by default (step.h, mp_step_input
						     .kernels); no rows = the scalar factors */
	bool kernels_none;                      /**< the scalar factors by request (`--kernels
						     none`), not for want of a table */
};

/** Fill a model with neutral defaults (SwiGLU, FP8 dispatch, BF16 combine,
 * BF16 weights, BF16 compute, INT4 groups of 128) and every count 0. */
MP_EXPORT void mp_model_init(struct mp_model *model);

/** Free owned strings; accepts NULL. */
MP_EXPORT void mp_model_finish(struct mp_model *model);

/** Fill with zeros (no peaks, no memory). */
MP_EXPORT void mp_hardware_init(struct mp_hardware *hw);

/** Free owned strings and the kernel table; accepts NULL. */
MP_EXPORT void mp_hardware_finish(struct mp_hardware *hw);

/** Hidden layers (num_hidden_layers): moe_layers + dense_layers. */
MP_EXPORT uint32_t mp_model_hidden_layers(const struct mp_model *model);

/** The 0-based hidden-layer id of the k-th MoE layer (k < moe_layers). */
MP_EXPORT uint32_t mp_model_moe_layer_id(const struct mp_model *model, uint32_t k);

/** The MoE index k of hidden layer `layer`, or UINT32_MAX when that layer
 * is dense (or beyond the model). */
MP_EXPORT uint32_t mp_model_moe_index(const struct mp_model *model, uint32_t layer);

/** Give the model explicit MoE layer ids: ids[moe_layers], strictly
 * increasing, each below moe_layers + dense_layers (copied; NULL = dense
 * layers first). Returns 0, MP_EINVAL or MP_ENOMEM. */
MP_EXPORT int mp_model_set_moe_layer_ids(struct mp_model *model, const uint32_t *ids);

/** Bits per stored value of a format, scales included.
 * MXFP4 4.25 and NVFP4 4.5: OCP Microscaling spec v1.0 (Rouhani et al. 2023)
 * and NVIDIA's NVFP4 (E4M3 scale per 16); FP8 block 8 + 32/16384 (DeepSeek-V3
 * 128x128 FP32 scales); INT4 4 + 16/group_size (BF16 scale per group).
 * group_size is used only for MP_FORMAT_INT4 (0 means 128). */
MP_EXPORT double mp_format_bits(enum mp_format format, uint32_t group_size);

/** Bytes per activation element in a dispatch/combine format
 * (bits / 8, scales ignored). */
MP_EXPORT double mp_format_bytes(enum mp_format format);

/** Lower-case name of a format ("mxfp4", "fp8", ...). */
MP_EXPORT const char *mp_format_name(enum mp_format format);

/** Parse a format name (case-insensitive). Returns 0, or MP_EINVAL. */
MP_EXPORT int mp_format_parse(const char *name, enum mp_format *out);

/** Lower-case name of a compute class ("fp8", ...). */
MP_EXPORT const char *mp_compute_name(enum mp_compute compute);

/** Parse a compute class name. Returns 0, or MP_EINVAL. */
MP_EXPORT int mp_compute_parse(const char *name, enum mp_compute *out);

/** The KV-cache bytes per context token for the whole model: the given
 * kv_bytes_per_token for MP_ATTENTION_DIRECT, else from the attention
 * config (formulas above; sources: DeepSeek-V2 paper section 2.1 for MLA,
 * Ainslie et al. 2023 for GQA). Sliding layers are counted in full here;
 * see mp_kv_bytes_per_request for the window. */
MP_EXPORT double mp_model_kv_bytes_per_token(const struct mp_model *model);

/** KV bytes one request holds at `context` tokens: full layers keep every
 * token, sliding layers at most sliding_window tokens. */
MP_EXPORT double mp_model_kv_bytes_per_request(const struct mp_model *model, double context);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: the whole serving step of one GPU, across nodes.
 *
 * Pure functions over struct mp_model and struct mp_hardware (model.h): no
 * I/O, no globals, no allocation; one evaluation costs a few microseconds,
 * so a search may evaluate 1e5-1e6 configurations.
 *
 * One GPU of a phase (decode or prefill) runs one step: every layer of the
 * model over the tokens it holds, plus the drafter's stages. The step's
 * terms, each with its bytes, FLOP, time and bound:
 *
 *  attention   decode reads the KV cache of every request it holds once per
 *              step (R c kv bytes, kv from mp_model_kv_bytes_per_request);
 *              prefill writes the chunk's KV and reads its prefix. FLOP per
 *              (query token, context token) pair per layer: MLA decode
 *              (absorbed, as FlashMLA) 2h(r + p) + 2h r; MLA prefill 2h(n +
 *              p) + 2h v; GQA 4 h dh (h query heads, r kv_lora_rank, p
 *              rope_dim, n qk_nope_dim, v v_head_dim, dh head_dim). Decode
 *              pairs: tokens x context; prefill pairs: chunk x (prefix +
 *              (isl + 1) / 2), causal. Under tp:N attention a group of N
 *              GPUs serves N x requests; heads (FLOP) split N ways, MLA's
 *              latent KV is read by every rank, GQA's KV splits min(N,
 *              kv_heads) ways.
 *  dense       replicated weights (attention projections, dense FFN layers,
 *              router, norms: dense_weight_bytes less the embedding and the
 *              LM head when vocab_size is known) read once per step, 2 x
 *              params FLOP per token; split N ways under tp:N.
 *  shared      shared experts: moe_layers x shared_experts x W_shared bytes,
 *              T x 2 P_shared FLOP per layer.
 *  lm_head     vocab x hidden BF16 read once; 2 vocab hidden FLOP per token
 *              that needs logits (decode: every token; prefill: the last of
 *              each prompt).
 *  routed      the routed experts (roofline.h) with the weight bytes of the
 *              slots the step touches: a slot of the E_phys of a layer is
 *              touched with probability 1 - (1 - k / E_phys)^(T N_EP) (the
 *              article's E(1 - (1 - k/E)^B) applied to the group's tokens),
 *              times busiest_factor (the step waits for the busiest GPU).
 *  drafter     the drafter's MoE stages (as routed, drafter_slots) plus its
 *              other weights, one LM head read per stage and one KV layer
 *              per stage.
 *  dispatch,   per MoE layer and drafter stage, each T tokens per GPU,
 *  combine     message d bd + 4 ceil(d / 128) (FP8 with per-128 scales) or
 *              d bc bytes, G = scale-up domain GPUs (min with N_EP):
 *                low_latency: every visit to its expert's GPU, no per-node
 *                  de-duplication (DeepEP low-latency kernels):
 *                  scale-out T k (N_EP - G) / N_EP msgs, scale-up
 *                  T k (G - 1) / N_EP msgs;
 *                normal: one network crossing per destination node (R of
 *                  comm.h, node-limited to topk_groups when the model has
 *                  groups), NVLink fan-out inside it once per distinct
 *                  destination GPU (DeepEP normal kernels): scale-out
 *                  T R msgs, scale-up T N_EP (1 - (1 - 1/N_EP)^k)
 *                  (G - 1) / G msgs;
 *              time = exchange_latency + max(out / (e_out B_out),
 *              up / (e_up B_up)). The busiest GPU (busiest_factor f)
 *              receives f times the mean visits and sends them back:
 *              low_latency scales both links by f, normal its scale-up
 *              fan-out only (it crosses the network once per node).
 *  tp_allreduce  tp:N attention: 2 all-reduces per layer of T_group d 2
 *              bytes, ring: 2 (N - 1) / N of it per GPU on the scale-up link.
 *  overhead    a fixed per-step host time (scheduling, graph replay).
 *
 * Fixed parts (issue 23 item 2): each compute term adds, per micro-batch,
 * its kernels' count (MP_KERNELS_* below) x kernel_fixed, the launch, ramp
 * and tail of a kernel under CUDA graphs: attention the attention core per
 * hidden layer; dense the attention projections and the two norms per
 * hidden layer, the router per MoE layer and an MLP per dense layer;
 * shared an MLP per MoE layer; lm_head the embedding, final norm, LM head
 * GEMM and the sampler; drafter its stage kernels per stage. routed (and
 * the drafter's experts) add moe_fixed + moe_fixed_per_expert x local
 * slots per MoE layer, except where the moe_block table priced them (its
 * rows are measured end to end and hold the fixed part). The fixed part
 * adds to the roofline (priced + fixed: aiconfigurator's MoE fit is
 * additive, and the MLA floor is measured minus the roofline) and is not
 * scaled by busiest_factor. mp_step_term.fixed_s holds it (a part of
 * time_s); a term whose fixed part exceeds its priced part is bound
 * "fixed".
 *
 * Each compute term takes max(bytes / (e_hbm B_hbm), FLOP / (e P)) (the
 * roofline; e = gemm_efficiency, attention_efficiency for attention).
 * Overlap of exchange and compute:
 *   none       step = compute + exchange + overhead;
 *   two_batch  two micro-batches of T / 2, every weight read once per
 *              micro-batch, paired stage by stage as SGLang schedules it
 *              (sgl-project/sglang 60d36e7be, batch_overlap/
 *              operations_strategy.py): decode
 *              (_compute_moe_deepseek_blog_decode) runs one micro-batch's
 *              attention under the other's combine and its shared + routed
 *              experts under the other's dispatch; prefill
 *              (_compute_moe_deepseek_blog_prefill) attention under
 *              dispatch, experts under combine. With every term summed
 *              over both micro-batches and A the MoE layers' share,
 *              moe / (moe + dense layers), of attention + dense: decode
 *              step = max(A, combine) + max(shared + routed, dispatch) +
 *              rest + overhead (prefill swaps dispatch and combine), rest =
 *              the dense layers' share of attention + dense, LM head,
 *              drafter and TP all-reduce;
 *   full       exchange hidden under the arithmetic (fused dispatch-GEMM-
 *              combine): step = max(compute, exchange) + overhead.
 *
 * Units: bytes and FLOP as double, seconds, bytes/s and FLOP/s (SI).
 */
#ifndef MOEPLAN_STEP_H
#define MOEPLAN_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/capacity.h"
#include "moeplan/doc.h"
#include "moeplan/kernels.h"
#include "moeplan/model.h"
#include "moeplan/roofline.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mp_step_phase {
	MP_STEP_DECODE = 0,
	MP_STEP_PREFILL,
};

/** Dispatch/combine kernel model. */
enum mp_step_kernel {
	MP_KERNEL_AUTO = 0,      /**< low_latency for decode, normal for prefill */
	MP_KERNEL_LOW_LATENCY,   /**< DeepEP low-latency: per visit, RDMA to remote GPUs */
	MP_KERNEL_NORMAL,        /**< DeepEP normal: once per node, NVLink fan-out */
};

enum mp_step_overlap {
	MP_OVERLAP_NONE = 0,
	MP_OVERLAP_TWO_BATCH,
	MP_OVERLAP_FULL,
};

/** The step's terms, in output order. */
enum mp_step_term_id {
	MP_TERM_ATTENTION = 0,
	MP_TERM_DENSE,
	MP_TERM_SHARED,
	MP_TERM_LM_HEAD,
	MP_TERM_ROUTED,
	MP_TERM_DRAFTER,
	MP_TERM_DISPATCH,
	MP_TERM_COMBINE,
	MP_TERM_TP_ALLREDUCE,
	MP_TERM_OVERHEAD,
	MP_TERM_COUNT
};

/** What limits a term. */
enum mp_step_bound {
	MP_BOUND_NONE = 0,   /**< zero time */
	MP_BOUND_MEMORY,     /**< HBM bytes */
	MP_BOUND_COMPUTE,    /**< FLOP */
	MP_BOUND_SCALE_UP,   /**< NVLink/xGMI bytes */
	MP_BOUND_SCALE_OUT,  /**< network (RDMA) bytes */
	MP_BOUND_LATENCY,    /**< the per-exchange latency dominates */
	MP_BOUND_FIXED,      /**< a fixed time */
};

/** Lower-case names: "attention", "dense", "shared", "lm_head", "routed",
 * "drafter", "dispatch", "combine", "tp_allreduce", "overhead". */
MP_EXPORT const char *mp_step_term_name(enum mp_step_term_id id);
/** "none", "memory", "compute", "scale_up", "scale_out", "latency", "fixed". */
MP_EXPORT const char *mp_step_bound_name(enum mp_step_bound bound);
/** "none", "two_batch", "full". */
MP_EXPORT const char *mp_step_overlap_name(enum mp_step_overlap overlap);
/** "auto", "low_latency", "normal". */
MP_EXPORT const char *mp_step_kernel_name(enum mp_step_kernel kernel);
/** Parse the names above. Return 0 or MP_EINVAL. */
MP_EXPORT int mp_step_overlap_parse(const char *name, enum mp_step_overlap *out);
MP_EXPORT int mp_step_kernel_parse(const char *name, enum mp_step_kernel *out);

#define MP_STEP_DEFAULT_HBM_EFFICIENCY 0.90
#define MP_STEP_DEFAULT_GEMM_EFFICIENCY 0.78
#define MP_STEP_DEFAULT_ATTENTION_EFFICIENCY 0.67
#define MP_STEP_DEFAULT_SCALE_UP_EFFICIENCY 0.77
#define MP_STEP_DEFAULT_SCALE_OUT_EFFICIENCY 0.88
#define MP_STEP_DEFAULT_EXCHANGE_LATENCY_S 28e-6
#define MP_STEP_DEFAULT_STEP_OVERHEAD_S 0.5e-3
/* kernel_fixed, moe_fixed, moe_fixed_per_expert: sources in model.h. */
#define MP_STEP_DEFAULT_KERNEL_FIXED_S (41.22e-6 / 16.0)
#define MP_STEP_DEFAULT_MOE_FIXED_S 22e-6
#define MP_STEP_DEFAULT_MOE_FIXED_PER_EXPERT_S 1.5e-6

/* Kernels per block in a CUDA-graph decode forward, counted from SGLang's
 * DeepSeek-V2/V3 model (sgl-project/sglang 60d36e7be, public mirror
 * fzyzcjy/sglang, python/sglang/srt/models/deepseek_v2.py; FP8 block
 * weights: every FP8 linear is an activation quantisation kernel plus a
 * GEMM, Fp8LinearMethod). MLA, DeepseekV2AttentionMLA.forward_absorb_prepare
 * and forward_absorb_core:
 *   core: the KV-cache write, FlashMLA's split-KV kernel and its combine = 3;
 *   projections: fused_qkv_a_proj_with_mqa (quant + GEMM), q_a_layernorm,
 *     kv_a_layernorm, q_b_proj (quant + GEMM), the w_kc bmm (quant + bmm),
 *     rotary_emb, the w_vc bmm (quant + bmm), o_proj (quant + GEMM) = 13.
 * GQA, python/sglang/srt/models/llama.py LlamaAttention.forward, same
 * commit: core the KV write and the attention kernel = 2; projections
 * qkv_proj (quant + GEMM), rotary_emb, o_proj (quant + GEMM) = 5.
 * DeepseekV2DecoderLayer: input_layernorm and post_attention_layernorm
 * (fused add + RMSNorm) = 2 per layer. MoEGate.forward (the router GEMM,
 * dsv3_router_gemm) and select_experts (fused biased grouped top-k) = 2 per
 * MoE layer. DeepseekV2MLP.forward (shared expert, dense FFN layer):
 * gate_up_proj (quant + GEMM), SiluAndMul, down_proj (quant + GEMM) = 5.
 * Outside the layers, DeepseekV2Model and the logits processor: embed_tokens,
 * the final norm, the LM head GEMM = 3; python/sglang/srt/layers/sampler.py
 * Sampler.forward (not greedy): the temperature division, softmax and
 * top_k_top_p_sampling_from_probs = 3. A drafter stage,
 * python/sglang/srt/models/deepseek_nextn.py DeepseekModelNextN.forward:
 * embed_tokens, enorm, hnorm, cat, eh_proj = 5, one decoder layer (norms 2,
 * MLA module 16, router 2, shared MLP 5), shared_head.norm and the LM head
 * = 2, the draft's top-k (softmax, top-k) = 2: 34, its experts priced as a
 * MoE block. */
#define MP_KERNELS_ATTENTION_CORE 3
#define MP_KERNELS_ATTENTION_PROJ 13
#define MP_KERNELS_GQA_CORE 2
#define MP_KERNELS_GQA_PROJ 5
#define MP_KERNELS_NORMS_PER_LAYER 2
#define MP_KERNELS_ROUTER 2
#define MP_KERNELS_MLP 5
#define MP_KERNELS_LM_HEAD 3
#define MP_KERNELS_SAMPLER 3
#define MP_KERNELS_DRAFTER_STAGE 34

/** The hardware's factors (hw->efficiency, model.h, which documents each
 * default and its source), each 0 replaced by its default. */
MP_EXPORT void mp_step_efficiency(const struct mp_hardware *hw, struct mp_efficiency *out);

/** One configuration of one phase, per GPU. */
struct mp_step_input {
	enum mp_step_phase phase;
	struct mp_ep_width width;      /**< EP, slots, drafter slots */
	double requests;               /**< decode: requests per GPU (> 0); prefill: prompts held
					    (0 = ceil(chunk / isl)) */
	double context_tokens;         /**< decode: mean KV length per request; prefill: cached
					    prefix each prompt starts from */
	double tokens_per_request;     /**< decode: tokens per request per step (1 + drafted), >= 1 */
	double acceptance;             /**< fraction of drafted tokens accepted, [0, 1] */
	double chunk_tokens;           /**< prefill: tokens per GPU per step (> 0) */
	double isl;                    /**< prefill: prompt length (0 = chunk_tokens) */
	enum mp_step_overlap overlap;
	enum mp_step_kernel kernel;
	uint32_t tp;                   /**< attention: 0 or 1 = data-parallel, N = tp:N */
	double busiest_factor;         /**< >= 1 (0 = 1): busiest GPU's routed load / mean; scales
					    the routed terms and the visits that GPU receives and
					    sends back (dispatch, combine) */
	const struct mp_efficiency *efficiency; /**< NULL = mp_step_efficiency(hw) */
	const struct mp_kernel_table *kernels;  /**< NULL = the hardware's own table
						     (hw->kernels, the hardware file's `kernels:`),
						     or the scalar factors where it has none or
						     scalar_factors is set. A table (issue 23):
						     a term whose kernel the
						     table has is priced at the datasheet peaks
						     divided by the table's efficiency
						     (mp_kernel_lookup): routed by moe_block
						     (local experts, tokens per GPU) or else
						     gemm_masked (tokens per expert, hidden);
						     dense and shared by gemm_dense (tokens per
						     GPU, hidden); the other terms, and any
						     term the table lacks, keep the factors */
	bool scalar_factors;           /**< true = no table, not even the hardware's
					    (`--kernels none`) */
	const char *kernels_name;      /**< the file `kernels` came from, for the output
					    (may be NULL) */
};

/** Fill defaults: decode, 1 token per request, acceptance 0, overlap none,
 * kernel auto, DP attention, busiest factor 1. */
MP_EXPORT void mp_step_input_init(struct mp_step_input *in);

struct mp_step_term {
	double time_s;       /**< priced + fixed */
	double fixed_s;      /**< the fixed part of time_s (kernel counts x kernel_fixed,
				  moe_fixed; see above) */
	double bytes;        /**< HBM bytes (compute terms) or link bytes (exchange) */
	double flops;
	enum mp_step_bound bound;
};

struct mp_step {
	struct mp_step_term terms[MP_TERM_COUNT];
	enum mp_step_overlap overlap;
	enum mp_step_kernel kernel;      /**< the kernel model used (never AUTO) */
	struct mp_efficiency efficiency; /**< the factors used */
	uint32_t nodes;                  /**< scale-up domains the EP group spans */
	double compute_s;                /**< sum of the compute terms (full batch) */
	double exchange_s;               /**< dispatch + combine + tp_allreduce (full batch) */
	double exposed_exchange_s;       /**< exchange not hidden by the overlap */
	double step_time_s;              /**< what one step takes */
	double tokens_per_step;          /**< tokens per GPU processed per step */
	double accepted_tokens_per_step; /**< decode: requests (1 + drafted x acceptance);
					      prefill: tokens_per_step */
	double requests;                 /**< requests (prompts) per GPU the step used */
	double tokens_per_s_per_gpu;     /**< accepted (decode output, prefill input) per s */
	double tokens_per_s_per_user;    /**< decode: (1 + drafted acceptance) / step; prefill: 0 */
	double tpot_s;                   /**< decode: step / accepted tokens per request; 0 in prefill */
	double ttft_s;                   /**< prefill: ceil(isl / chunk) steps; 0 in decode */
	double routed_touched_slots;     /**< expected touched slots per GPU per MoE layer */
	double routed_slots_per_gpu;     /**< E_phys / N_EP */
	double tokens_per_expert;        /**< t of the main model (roofline.h) */
	bool kernel_table;               /**< a kernel table priced the step (in->kernels or
					      the hardware's) */
	const char *kernel_table_name;   /**< its file (in->kernels_name or hw->kernels_path;
					      borrowed), NULL with the scalar factors */
	bool scalar_forced;              /**< no table by request (in->scalar_factors or
					      hw->kernels_none), not for want of one */
	bool hidden[MP_TERM_COUNT];      /**< the term is off the critical path: under two_batch
					      the shorter side of its stage (attention: its MoE
					      layers' share), under full the shorter of compute and
					      exchange; never under none */
	bool from_table[MP_TERM_COUNT];  /**< the term was priced from the kernel table */
	bool table_clamped[MP_TERM_COUNT]; /**< ... outside its measured range (clamped) */
};

/** Evaluate one configuration. Returns 0, or MP_EINVAL when the width is
 * invalid (ep 0, slots below E or not a multiple of ep, drafter slots
 * likewise), a count is negative or not finite, decode has no request or
 * tokens_per_request < 1, prefill has no chunk, acceptance is outside
 * [0, 1], tp does not divide ep, the model has no hidden size or top_k,
 * the hardware has no HBM bandwidth or no peak for the model's
 * expert_compute, or an EP group that spans domains has no scale-out
 * bandwidth. out is untouched on failure. */
MP_EXPORT int mp_step_evaluate(const struct mp_model *model, const struct mp_hardware *hw,
		     const struct mp_step_input *in, struct mp_step *out);

/** The capacity input (capacity.h) that matches a step input: decode holds
 * requests x context, steps requests x tokens_per_request; prefill holds
 * its prompts at prefix + isl and steps chunk_tokens (with two_batch both
 * micro-batches are live: the same total). */
MP_EXPORT void mp_step_capacity_input(const struct mp_step_input *in, struct mp_capacity_input *out);

/** The largest whole number of requests per GPU that fits in HBM at
 * in->context_tokens (decode; in->requests ignored), via
 * mp_capacity_max_requests. cap_opts may be NULL. Returns 0, MP_ENOFIT or
 * MP_EINVAL as mp_capacity_max_requests. */
MP_EXPORT int mp_step_max_requests(const struct mp_model *model, const struct mp_hardware *hw,
			 const struct mp_capacity_options *cap_opts, const struct mp_step_input *in,
			 uint64_t *out);

/** Which factor mp_step_calibrate solves for. */
enum mp_step_factor {
	MP_FACTOR_STEP_OVERHEAD = 0, /**< the fixed per-step time (seconds) */
	MP_FACTOR_HBM,               /**< hbm efficiency */
	MP_FACTOR_GEMM,              /**< gemm efficiency */
	MP_FACTOR_EXCHANGE_LATENCY,  /**< per-exchange latency (seconds) */
};

/** "step_overhead", "hbm", "gemm", "exchange_latency". */
MP_EXPORT const char *mp_step_factor_name(enum mp_step_factor factor);
MP_EXPORT int mp_step_factor_parse(const char *name, enum mp_step_factor *out);

/** Solve one factor so that the configuration `in` predicts measured_s
 * per step (bisection on the monotone step time; the other factors as in
 * in->efficiency or the hardware's). Writes the factors with the solved
 * one to *out. Returns 0, MP_ENOFIT when no value in the factor's range
 * (overhead and latency [0, 10 s]; efficiencies [0.01, 1]) reproduces the
 * measurement, or MP_EINVAL (as mp_step_evaluate, or measured_s not > 0). */
MP_EXPORT int mp_step_calibrate(const struct mp_model *model, const struct mp_hardware *hw,
		      const struct mp_step_input *in, enum mp_step_factor factor,
		      double measured_s, struct mp_efficiency *out);

/** The step as a document, the public JSON/YAML contract of `moeplan
 * step` and of each phase's `step` in `moeplan plan`: phase, ep, nodes,
 * kernel, overlap, step_time_s, tokens_per_step, accepted_tokens_per_step,
 * requests, tokens_per_s_per_gpu, tokens_per_s_per_user, tpot_s (decode),
 * ttft_s (prefill), compute_s, exchange_s, exposed_exchange_s,
 * tokens_per_expert, routed_touched_slots, routed_slots_per_gpu, terms (a
 * list of {name, time_s, fixed_s, bytes, flops, bound}), efficiency (the factors
 * used), hbm_free_bytes (null when hbm is NULL) and max_requests (null
 * when has_max is false). With a kernel table (s->kernel_table) each term
 * also has pricing: "table", "table_clamped" or "factors". Returns a new map, or NULL on allocation
 * failure. Also error_vs_published: the measured error on published
 * cases of the figures above (trust.h, mp_trust_put_phase). */
MP_EXPORT struct mp_doc *mp_step_doc(const struct mp_step *step, enum mp_step_phase phase, uint32_t ep,
			   const struct mp_capacity *hbm, bool has_max, uint64_t max_requests);

#ifdef __cplusplus
}
#endif

#endif

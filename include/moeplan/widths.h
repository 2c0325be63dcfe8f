/* moeplan: choosing the expert-parallel width of each phase.
 *
 * Pure functions over the model, a phase's spec (scenario.h) and the
 * step, roofline and capacity models; no I/O. A phase may own more GPUs
 * than one scale-up domain: a group that spans domains pays its exchange
 * on the scale-out network (step.h), and is refused only when the
 * hardware gives no scale-out bandwidth. Candidates are ranked by the
 * whole serving step (step.h, issue 12):
 *  - decode by predicted output tokens/s per GPU at its batch: the phase's
 *    requests_per_gpu, or (absent) the largest batch that fits in HBM and
 *    meets slo.tpot (bisection on the monotone step time);
 *  - prefill by input tokens/s per GPU among widths whose weights, KV cache
 *    and chunk activations fit, subject to slo.ttft.
 * Predictions within 5% are ties (the model is good to several percent):
 * decode ties go to more tokens per expert, then wider; prefill ties to the
 * narrower width (the article: "prefill uses the smallest EP that HBM
 * allows"). Every rejected width keeps its reason.
 */
#ifndef MOEPLAN_WIDTHS_H
#define MOEPLAN_WIDTHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moeplan/capacity.h"
#include "moeplan/model.h"
#include "moeplan/roofline.h"
#include "moeplan/scenario.h"
#include "moeplan/visibility.h"
#include "moeplan/step.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Predicted tokens/s per GPU within this fraction of the best are a tie
 * (widths.c explains why: the step model's demonstrated accuracy). */
#define MP_WIDTHS_TIE 0.05

enum mp_phase_kind {
	MP_PHASE_PREFILL = 0,
	MP_PHASE_DECODE,
};

/** Why a candidate width was chosen or not (the first rule it fails). */
enum mp_width_verdict {
	MP_WIDTH_CHOSEN = 0,
	MP_WIDTH_OUTRANKED,        /**< feasible; slower than the pick, or as fast with fewer
				        tokens per expert (or narrower) */
	MP_WIDTH_BELOW_RIDGE,      /**< feasible and slower, its experts below the ridge */
	MP_WIDTH_WIDER_THAN_NEEDED,/**< prefill: a narrower width fits */
	MP_WIDTH_NO_FIT,           /**< HBM cannot hold weights, KV cache and buffers */
	MP_WIDTH_EXCEEDS_DOMAIN,   /**< decode: wider than the scale-up domain */
	MP_WIDTH_EXCEEDS_GPUS,     /**< wider than the GPUs the phase has */
	MP_WIDTH_OUT_OF_RANGE,     /**< outside the phase's [ep_min, ep_max] */
	MP_WIDTH_TOO_FEW_EXPERTS,  /**< more GPUs than logical experts */
	MP_WIDTH_NO_SLOTS,         /**< the slot rule gives no valid count at this width */
	MP_WIDTH_NOT_FIXED,        /**< the phase fixes another width */
	MP_WIDTH_MISSES_SLO,       /**< no batch meets the phase's TPOT (decode) or TTFT (prefill) */
	MP_WIDTH_ATTENTION_TP,     /**< the phase's attention tp:N does not divide this width */
};

/** Lower-case name of a verdict ("chosen", "no-fit", ...). */
MP_EXPORT const char *mp_width_verdict_name(enum mp_width_verdict verdict);

/** One candidate width with the figures it was judged on. The figures are
 * valid when `evaluated` (the slot rule gave a count and the models ran). */
struct mp_width_candidate {
	struct mp_ep_width width;
	bool evaluated;
	bool passes;                  /**< no rule rejects it (it can be picked) */
	bool rule_short;              /**< the phase's fixed slots per GPU cannot cover E at this
					   width; the figures use round_up(E, ep) slots instead */
	double tokens_per_gpu;        /**< b, per step */
	double tokens_per_expert;     /**< t of the main model */
	double ridge_tokens;          /**< t* */
	double intensity;             /**< FLOP/byte at t */
	bool compute_bound;           /**< t >= t* */
	double expert_time_s;         /**< routed-expert time per step per GPU (X) */
	double tokens_per_s_per_gpu;  /**< the step's (accepted output, decode; input, prefill)
					   tokens/s per GPU; b / X, the expert-bound throughput, when
					   the step model cannot run */
	double busiest_factor;        /**< expected busiest GPU / mean at this width (1 until
					   estimated: mp_widths_rerank) */
	double predicted_time_s;      /**< expert_time_s x busiest_factor: what a step waits for */
	struct mp_capacity hbm;       /**< per-GPU HBM breakdown at the batch judged */
	double requests;              /**< decode: requests per GPU the width is judged at (the
					   phase's requests_per_gpu, or the largest batch that fits
					   in HBM and meets slo.tpot); prefill: prompts per chunk */
	bool has_max_requests;
	uint64_t max_requests;        /**< decode: the largest batch that fits in HBM */
	bool has_step;                /**< the step model ran (step.h) */
	bool misses_slo;              /**< no batch meets slo.tpot (decode) / slo.ttft (prefill) */
	struct mp_step step;          /**< the whole step at that batch and busiest_factor */
	double step_factor;           /**< the busiest factor `step` was evaluated at */
	double pool_fraction;         /**< GPUs of the phase whole groups of this width use /
					   the phase's GPUs (1 when gpus is not given): the rest idle */
	double rank_time_s;           /**< what widths are ranked by: seconds per accepted token per
					   GPU at busiest_factor (mp_widths_rank_time), the inverse
					   of the step's tokens/s per GPU; the routed-expert time
					   per token when the step model cannot run */
	enum mp_width_verdict verdict;
	char reason[384];             /**< one sentence for a user; a width that does not fit
					   names its largest HBM term and what would fit */
	char not_evaluated[160];      /**< why the models could not run at this width (empty when
					   evaluated, or when the slot rule gave no count) */
};

/** The ranked candidates of one phase; caller-owned (init/finish). */
struct mp_widths {
	enum mp_phase_kind phase;
	size_t count;
	struct mp_width_candidate *items;   /**< ascending EP; owned */
	bool has_choice;
	size_t chosen;                      /**< index into items when has_choice */
	uint32_t limit;                     /**< widest EP the phase may use */
	uint32_t fit_beyond;                /**< where no width up to limit fits in HBM: the
					         smallest width above it on the grid (powers of
					         two, gpus) that does, 0 when none up to
					         MP_MAX_GPUS or when one fits (issue 26) */
};

MP_EXPORT void mp_widths_init(struct mp_widths *widths);

/** Free the candidates; accepts NULL. */
MP_EXPORT void mp_widths_finish(struct mp_widths *widths);

/** The drafter's slots at width ep: the phase's rule (mp_phase_slots,
 * scenario.h) for MIN_REDUNDANT and PER_GPU (the article applies the same
 * rule to the drafter's 128 experts: 160 at EP8, 192 at EP64),
 * round_up(E, ep) under FIXED_PER_GPU. 0 without a drafter. */
MP_EXPORT uint32_t mp_widths_drafter_slots(const struct mp_phase_spec *phase, const struct mp_model *model,
				 uint32_t ep);

/** The validity rules every command applies to a width (plan, fit,
 * roofline, simulate): 1 <= ep <= E (a GPU with no expert does no MoE
 * work), slots >= E, a multiple of ep, at most E per GPU (a GPU never
 * holds two replicas of one expert); the drafter's slots likewise when the
 * model has a drafter. Returns 0, or MP_EINVAL with one sentence in why
 * (may be NULL). */
MP_EXPORT int mp_widths_check(const struct mp_model *model, const struct mp_ep_width *width, char *why,
		    size_t size);

/** Fill a width from the phase's slot rules (mp_phase_slots for the main
 * model, mp_widths_drafter_slots for the drafter). Returns 0, or
 * MP_EINVAL when the rule gives no valid count. */
MP_EXPORT int mp_widths_width(const struct mp_model *model, const struct mp_phase_spec *phase, uint32_t ep,
		    struct mp_ep_width *out);

/** The capacity input of a phase at one width: decode holds
 * requests_per_gpu requests of context_tokens and steps
 * requests_per_gpu * tokens_per_request tokens; prefill steps chunk_tokens
 * and holds the KV cache of requests_per_gpu prompts (or, when 0, the
 * ceil(chunk / prompt) being prefilled) of prompt = isl tokens (else
 * context_tokens, else chunk_tokens), as mp_step_capacity_input does. */
MP_EXPORT void mp_widths_capacity_input(const struct mp_phase_spec *phase, enum mp_phase_kind kind,
			      const struct mp_ep_width *width, struct mp_capacity_input *out);

/** The step input (step.h) of a phase at one width and batch: decode at
 * `requests` per GPU with the phase's context_tokens, tokens_per_request,
 * acceptance (< 0: 0.75 with a drafter, else 0); prefill with chunk_tokens,
 * prompts of isl tokens (default context_tokens, else the chunk; requests
 * 0 = ceil(chunk / isl)); both with the phase's overlap and attention. */
MP_EXPORT void mp_widths_step_input(const struct mp_model *model, const struct mp_phase_spec *phase,
			  enum mp_phase_kind kind, const struct mp_ep_width *width, double requests,
			  struct mp_step_input *out);

/** Seconds per accepted token per GPU of an evaluated candidate when its
 * busiest GPU carries `factor` >= 1 times the mean routed load: the step
 * time / accepted tokens per step, exact when factor is the step's
 * step_factor (mp_widths_apply_factor); otherwise (step + (factor /
 * step_factor - 1) x routed term) / accepted tokens, the routed term taken
 * as exposed. Without a
 * step: expert_time_s x factor / tokens per GPU. Divided by pool_fraction:
 * the phase's GPUs that no group of this width uses count as idle. */
MP_EXPORT double mp_widths_rank_time(const struct mp_width_candidate *c, double factor);

/** Rank candidate widths of a phase and pick one. Candidates: the powers
 * of two up to the first above the phase's limit, the limit, the scale-up
 * domain, the GPU count, ep_min, ep_max, a fixed ep, and the divisors of
 * the GPU count within one domain or made of whole domains. The limit is
 * the GPUs for decode (gpus 0 = one domain; ep_max caps it) and ep_max
 * (else the GPUs, else 8) for prefill; where no width up to it fits in
 * HBM and prefill's ep_max is the default (phase->ep_max_default), the
 * limit becomes the smallest width that fits on the grid of powers of two
 * and the GPU count, within the GPUs (issue 26: DeepSeek-V3 prefill on
 * 80 GB H100 needs EP16; out->fit_beyond says it where the limit stays).
 * A fixed phase->ep is chosen if it passes
 * every rule. cap_opts and roof_opts may be NULL (defaults). Returns 0
 * (out->has_choice false when no candidate passes, each item saying why),
 * MP_EINVAL (a model without experts or top_k), or MP_ENOMEM. out must be
 * initialised; its previous items are freed. */
MP_EXPORT int mp_widths_rank(const struct mp_model *model, const struct mp_phase_spec *phase,
		   enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
		   const struct mp_roofline_options *roof_opts, struct mp_widths *out);

/** Judge one candidate again with its busiest GPU at `factor` (>= 1) times
 * the mean routed load: its batch (the largest that fits and, at this
 * factor, meets slo.tpot), HBM, the whole step (step.h, busiest_factor),
 * rank_time_s and the rules; its ep is kept. Call mp_widths_rerank after
 * to re-pick. phase and kind as for mp_widths_rank; cap_opts and roof_opts
 * may be NULL. Returns 0, or MP_EINVAL when factor < 1 or not finite (c
 * unchanged). */
MP_EXPORT int mp_widths_apply_factor(const struct mp_model *model, const struct mp_phase_spec *phase,
				     enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
				     const struct mp_roofline_options *roof_opts, double factor,
				     struct mp_width_candidate *c);

/** Re-pick a decode width after busiest_factor has been filled in for
 * candidates (e.g. by Monte Carlo routing of each width's placement, issue
 * 6): decode candidates that pass every rule are ranked by predicted_time_s
 * = expert_time_s x busiest_factor (a step runs at its busiest GPU); times
 * within 5% of the fastest are ties (the model is good to several percent),
 * broken by more tokens per expert, then wider; verdicts and reasons are
 * rewritten.
 * Prefill keeps its rule (smallest width that fits). Returns 0, or
 * MP_EINVAL when a factor is below 1 or not finite. */
MP_EXPORT int mp_widths_rerank(struct mp_widths *widths);

/** The smallest EP in [lo, hi] (every integer) at which the phase fits in
 * HBM (mp_capacity_compute with mp_widths_capacity_input). Returns 0,
 * MP_ENOFIT when none does, or MP_EINVAL (lo 0 or lo > hi). */
MP_EXPORT int mp_widths_min_fit_ep(const struct mp_model *model, const struct mp_phase_spec *phase,
			 enum mp_phase_kind kind, const struct mp_capacity_options *cap_opts,
			 uint32_t lo, uint32_t hi, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif

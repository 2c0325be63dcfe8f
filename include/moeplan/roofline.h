/* moeplan: the roofline of routed experts under expert parallelism.
 *
 * Pure functions over struct mp_model and struct mp_hardware (model.h): no
 * I/O, no globals. The model is the one of the reference article ("Why
 * Decode Wants 64 GPUs", part 1), after Williams, Waterman and Patterson
 * (2009): a kernel runs at min(P_peak, I * B_HBM), the ridge is
 * R = P_peak / B_HBM, and one routed expert that receives t tokens in a
 * step reads its W weight bytes once, moves a bytes per token visit and
 * performs t * F FLOP:
 *
 *     P = matrices * hidden * intermediate        parameters per expert
 *     W = P * bits(format) / 8                     weight bytes
 *     F = 2 * P                                    FLOP per token
 *     a = hidden * (bytes(dispatch) + bytes(combine))   bytes per visit
 *     t = b * k * N_EP / E_phys                    tokens per expert
 *     I(t) = F t / (W + a t)                       intensity (F t / W naive)
 *     t* = R W / (F - R a)                         ridge crossing
 *
 * Per GPU and per MoE layer (b tokens on the GPU, balanced routing):
 * C_g = b k F FLOP, A_g = b k a activation bytes, W_g = (E_phys / N_EP) W
 * weight bytes. The expert time of a step sums, over the MoE layers of the
 * main model and the stages of the drafter, max(C_g / P, (A_g + W_g) / B)
 * (overlap, the roofline) or C_g / P + (A_g + W_g) / B (additive).
 *
 * Units: bytes and FLOP as double, seconds, FLOP/s and bytes/s (SI).
 */
#ifndef MOEPLAN_ROOFLINE_H
#define MOEPLAN_ROOFLINE_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/doc.h"
#include "moeplan/model.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The per-expert constants of one expert shape. */
struct mp_expert_cost {
	double params;              /**< P = matrices * hidden * intermediate */
	double weight_bytes;        /**< W = P * bits / 8 (bytes) */
	double flops_per_token;     /**< F = 2 P (FLOP) */
	double act_bytes_per_visit; /**< a = hidden * (dispatch + combine bytes per element) */
};

/** An EP width and the slot counts it holds. */
struct mp_ep_width {
	uint32_t ep;            /**< GPUs sharing the experts, >= 1 */
	uint32_t slots;         /**< physical routed-expert slots per MoE layer, a multiple of ep, >= E */
	uint32_t drafter_slots; /**< the drafter's slots per stage (ignored without a drafter) */
};

/** The constants of a generic expert: hidden and intermediate widths in
 * elements, matrices (3 for SwiGLU), weight format (group_size used for
 * MP_FORMAT_INT4) and the activation formats of dispatch and combine.
 * Formulas in the file comment; source: the article's Python listing
 * (P = 3*5120*2304, W = P*4.25/8, F = 2P, a = 5120*(1+2)). */
MP_EXPORT void mp_roofline_expert_cost(uint32_t hidden, uint32_t intermediate, uint32_t matrices,
			     enum mp_format weights, uint32_t group_size,
			     enum mp_format dispatch, enum mp_format combine,
			     struct mp_expert_cost *out);

/** The constants of one routed expert of the main model. */
MP_EXPORT void mp_roofline_expert(const struct mp_model *model, struct mp_expert_cost *out);

/** The constants of one routed expert of the drafter (the drafter's shape
 * and weight format, the main model's dispatch and combine formats). All
 * zero when the model has no drafter. */
MP_EXPORT void mp_roofline_drafter_expert(const struct mp_model *model, struct mp_expert_cost *out);

/** The constants of one shared expert (shared_expert_intermediate_size,
 * shared_format; no dispatch: its a is the same formula for reference). */
MP_EXPORT void mp_roofline_shared_expert(const struct mp_model *model, struct mp_expert_cost *out);

/** Ridge point R = peak(compute) / HBM bandwidth in FLOP/byte. 0 when the
 * hardware has no peak for that class or no bandwidth. GB200: 5e15 / 8e12
 * = 625 (article); B200: 4.5e15 / 8e12 = 562.5. */
MP_EXPORT double mp_roofline_ridge(const struct mp_hardware *hw, enum mp_compute compute);

/** Intensity of an expert that receives t >= 0 tokens in a step, in
 * FLOP/byte: F t / (W + a t) with activations, F t / W without. */
MP_EXPORT double mp_roofline_intensity(const struct mp_expert_cost *e, double t, bool activations);

/** The ceiling F / a the intensity tends to as t grows (FLOP/byte);
 * INFINITY when a is 0. V4.1-Flash: 4,608. */
MP_EXPORT double mp_roofline_ceiling(const struct mp_expert_cost *e);

/** Tokens per expert t* at which I(t*) = ridge: R W / (F - R a) with
 * activations, R W / F without. INFINITY when the ceiling F / a is at or
 * below the ridge (the expert never becomes compute-bound). */
MP_EXPORT double mp_roofline_ridge_tokens(const struct mp_expert_cost *e, double ridge, bool activations);

/** Mean tokens per expert slot t = b k N_EP / E_phys, with b tokens per GPU
 * per step (requests times tokens per request), top_k routed experts per
 * token, ep GPUs and slots physical slots. 0 when ep or slots is 0. */
MP_EXPORT double mp_roofline_tokens_per_expert(double tokens_per_gpu, uint32_t top_k, uint32_t ep,
				     uint32_t slots);

/** The inverse: tokens per GPU b = t E_phys / (k N_EP) that give t tokens
 * per expert. Divide by tokens per request for requests per GPU. */
MP_EXPORT double mp_roofline_tokens_per_gpu(double tokens_per_expert, uint32_t top_k, uint32_t ep,
				  uint32_t slots);

/** Expected distinct experts that B tokens touch under independent
 * uniform routing: E (1 - (1 - k/E)^B) (article, "Sparsity divides the
 * batch"). 0 when E is 0; k is capped at E. */
MP_EXPORT double mp_roofline_experts_touched(uint32_t n_experts, uint32_t top_k, double tokens);

/** Expert weight bytes read per token when B tokens share one copy of the
 * experts of one layer: touched(E, k, B) * W / B. */
MP_EXPORT double mp_roofline_weight_bytes_per_token(const struct mp_expert_cost *e, uint32_t n_experts,
					  uint32_t top_k, double tokens);

/** Knobs of mp_roofline_point. */
struct mp_roofline_options {
	double peak_flops;         /**< FLOP/s; 0 = the hardware's peak for model->expert_compute */
	double hbm_bw_bytes_per_s; /**< bytes/s; 0 = the hardware's (e.g. 7.7e12 instead of 8e12) */
	bool activations;          /**< count activation bytes a (default true) */
	bool additive;             /**< the time a comparison uses: compute + memory instead of max */
};

/** Defaults: hardware peak and bandwidth, activations counted, overlap. */
MP_EXPORT void mp_roofline_options_init(struct mp_roofline_options *opts);

/** One part of the step: the main model's MoE layers or the drafter's
 * stages. Per-GPU figures are summed over `layers`. */
struct mp_roofline_part {
	uint32_t layers;            /**< MoE layers (or drafter stages); 0 = absent */
	uint32_t experts;           /**< E, logical experts */
	uint32_t top_k;             /**< k */
	uint32_t slots;             /**< E_phys */
	uint32_t slots_per_gpu;     /**< E_phys / N_EP */
	struct mp_expert_cost expert;
	double tokens_per_expert;   /**< t */
	double intensity;           /**< I(t) with activations (if counted) */
	double intensity_weights;   /**< F t / W */
	double ridge_tokens;        /**< t* (activations as counted) */
	double ridge_tokens_weights;/**< R W / F */
	double flops;               /**< layers * b k F, FLOP per GPU per step */
	double act_bytes;           /**< layers * b k a (0 when not counted) */
	double weight_bytes;        /**< layers * slots_per_gpu * W */
	double compute_s;           /**< flops / peak */
	double memory_s;            /**< (act_bytes + weight_bytes) / bandwidth */
	double overlap_s;           /**< sum over layers of max(compute, memory) */
	double additive_s;          /**< compute_s + memory_s */
	bool compute_bound;         /**< compute per layer >= memory per layer */
};

/** One operating point: an EP width and b tokens per GPU per step. */
struct mp_roofline_point {
	struct mp_ep_width width;
	double tokens_per_gpu;      /**< b */
	double peak_flops;          /**< FLOP/s used */
	double hbm_bw_bytes_per_s;  /**< bytes/s used */
	double ridge;               /**< R, FLOP/byte */
	struct mp_roofline_part main;
	struct mp_roofline_part drafter;   /**< layers 0 without a drafter */
	double flops;               /**< main + drafter, FLOP per GPU per step */
	double bytes;               /**< main + drafter, bytes per GPU per step */
	double compute_s;           /**< sum of the parts */
	double memory_s;
	double overlap_s;           /**< the expert term X under overlap */
	double additive_s;          /**< X under the additive assumption */
	double time_s;              /**< overlap_s, or additive_s when opts->additive */
};

/** Evaluate one operating point. The drafter (model->drafter.moe_stages > 0)
 * sees the same b tokens per GPU (each stage verifies the step's tokens;
 * this reproduces the article's 0.69 ms at 8 requests and 1.9 ms at 256).
 * opts may be NULL (defaults). Returns 0, or MP_EINVAL when ep is 0, slots
 * is below E or not a multiple of ep, drafter_slots likewise for the
 * drafter, top_k is 0 or above E, tokens_per_gpu is negative or not finite,
 * or the peak or bandwidth is 0. out is untouched on failure. */
MP_EXPORT int mp_roofline_point(const struct mp_model *model, const struct mp_hardware *hw,
		      const struct mp_roofline_options *opts, const struct mp_ep_width *width,
		      double tokens_per_gpu, struct mp_roofline_point *out);

/** The one document of a roofline part (main model or drafter), used by
 * `roofline` (`main`, `drafter`) and `plan` (each phase's
 * `roofline.main`): a map of layers, experts, top_k, slots, slots_per_gpu,
 * tokens_per_expert, intensity_flop_per_byte, intensity_weights_only,
 * ridge_tokens_per_expert, ridge_tokens_per_expert_weights_only, bound
 * ("compute" or "memory"), flops, act_bytes, weight_bytes (FLOP and bytes
 * per GPU per step), compute_s, memory_s, overlap_s and additive_s
 * (seconds per step), in that order. Returns a new map, or NULL on
 * allocation failure. */
MP_EXPORT struct mp_doc *mp_roofline_part_to_doc(const struct mp_roofline_part *part);

/** Put an operating point's parts and totals into the map doc: `main`,
 * `drafter` (only when the model has one) as mp_roofline_part_to_doc, and
 * `step`: flops, bytes (per GPU per step, main + drafter), compute_s,
 * memory_s, overlap_s, additive_s, expert_time_s (the time under the
 * options' assumption) and tokens_per_s_per_gpu (b / expert_time_s, NAN
 * at zero time). The one serialiser of the point, used by `roofline` (at
 * the top level of its output) and `plan` (each phase's `roofline`). */
MP_EXPORT void mp_roofline_point_put(struct mp_doc *doc, const struct mp_roofline_point *point);

/** Predicting a step time at one EP width from a measurement at another. */
struct mp_roofline_compare {
	struct mp_roofline_point from;   /**< the measured width */
	struct mp_roofline_point to;     /**< the predicted width */
	double measured_from_s;          /**< the measured step time */
	double floor_s;                  /**< measured_from_s - X_from: taken as equal at both widths */
	double delta_s;                  /**< X_to - X_from */
	double predicted_to_s;           /**< measured_from_s - X_from + X_to */
	double weight_bytes_delta;       /**< expert weight bytes per GPU per step, to - from */
	double measured_to_s;            /**< the measurement at `to`, 0 = none */
	double error;                    /**< predicted / measured_to - 1; NAN without a measurement */
	double implied_bw_bytes_per_s;   /**< weight_bytes_delta / (measured_to - measured_from);
					      NAN without a measurement or a zero gap */
};

/** Swap the routed-expert term (main model and drafter) of a measured step
 * time (article, "Testing the model": measured EP64 10.0 ms at 8 requests,
 * EP8 predicted by subtracting X(EP64) and adding X(EP8); at small batches
 * the gap is the 34.8 GB of extra weights EP8 reads, 4.35 ms at 8 TB/s).
 * The X used follows opts->additive. measured_to_s may be 0 (unknown).
 * Returns 0 or MP_EINVAL (as mp_roofline_point, or a measured time that
 * is negative or not finite). */
MP_EXPORT int mp_roofline_compare(const struct mp_model *model, const struct mp_hardware *hw,
			const struct mp_roofline_options *opts, const struct mp_ep_width *from,
			const struct mp_ep_width *to, double tokens_per_gpu,
			double measured_from_s, double measured_to_s,
			struct mp_roofline_compare *out);

#ifdef __cplusplus
}
#endif

#endif

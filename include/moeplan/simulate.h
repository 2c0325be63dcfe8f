/* moeplan: Monte Carlo routing of finite batches, and the busiest GPU's
 * share of expert visits it produces.
 *
 * A decode step runs at the pace of its busiest GPU at every MoE layer.
 * Even with perfectly even popularity a finite batch never spreads evenly
 * over the GPUs of an expert-parallel (EP) group, and a placement leaves
 * systematic skew when popularity is uneven. This module draws the routing
 * of each step and measures both together.
 *
 * One routing sample ("step") of layer l: each of G GPUs sends B tokens;
 * each token picks top_k DISTINCT logical experts with probability
 * proportional to the layer's popularity, without replacement as top-k
 * does (successive sampling: draw by popularity, redraw repeats; this is
 * the Plackett-Luce law of top-k over Gumbel-perturbed scores). Each visit
 * goes to one physical replica of the expert, uniformly at random (an even
 * share of the expert's visits per replica in expectation, the split vLLM
 * uses), or, with prefer_local, to a replica on the sending GPU when it
 * has one, or where the engine's dispatch sends it (route: SGLang's
 * nearest replica, moeplan/dispatch.h). The sample's factor is the
 * busiest GPU's visits divided by the mean visits per GPU, which is
 * exactly B * top_k.
 *
 * Sample s routes layer s mod L (L layers), so every layer gets steps / L
 * samples (the first steps mod L layers one more).
 *
 * Random numbers: xoshiro256** (Blackman and Vigna 2018) seeded with
 * SplitMix64 (Steele, Lea and Flood 2014): sample s uses outputs
 * 4s+1 .. 4s+4 of the SplitMix64 stream started at `seed` as its state, so
 * results are bit-for-bit identical for any thread count and platform.
 * Popularity draws use Walker's alias method (A. J. Walker, ACM TOMS 3(3),
 * 1977, built with M. D. Vose's O(n) construction, IEEE TSE 17(9), 1991)
 * with 32-bit acceptance thresholds; uniform rows use Lemire's unbiased
 * bounded integers directly.
 */
#ifndef MOEPLAN_SIMULATE_H
#define MOEPLAN_SIMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/diag.h"
#include "moeplan/map.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Largest top_k accepted. */
#define MP_SIMULATE_MAX_TOP_K 64u
/** Largest number of routing samples in one run. */
#define MP_SIMULATE_MAX_STEPS 10000000u
/** Default number of samples of `moeplan simulate`. */
#define MP_SIMULATE_DEFAULT_STEPS 10000u
/** A route entry (mp_simulate_options.route): uniform among the replicas. */
#define MP_SIMULATE_ANY UINT32_MAX
/** Default seed. */
#define MP_SIMULATE_DEFAULT_SEED 1u

struct mp_simulate_options {
	uint32_t tokens_per_gpu; /**< B: tokens each GPU routes per sample (requests x tokens
				      per request); >= 1; no default (0 is refused) */
	uint32_t top_k;          /**< experts per token, 1..MP_SIMULATE_MAX_TOP_K; no default */
	uint32_t steps;          /**< samples, 1..MP_SIMULATE_MAX_STEPS; default 10000 */
	uint64_t seed;           /**< default 1 */
	bool prefer_local;       /**< send a visit to a replica on the sending GPU when there is
				      one; default false (uniform among replicas) */
	const uint32_t *route;   /**< an engine's dispatch, or NULL (default): [map layers][G][E],
				      the GPU that sender g's visits of expert e go to in that map
				      layer (a GPU holding a replica of e, else MP_EINVAL), or
				      MP_SIMULATE_ANY for uniform among the replicas; from
				      moeplan/dispatch.h mp_dispatch_layer_route (slot / S). Needs a
				      map; excludes prefer_local */
	unsigned threads;        /**< worker threads; 0 = online CPUs; default 0. Results do
				      not depend on it. */
	/* Used only when no map is given: the default layout. */
	uint32_t gpus;           /**< EP width G */
	uint32_t slots_per_gpu;  /**< 0 = ceil(n_experts / gpus) (no redundant replicas when
				      gpus divides n_experts); default 0 */
	uint32_t n_experts;      /**< E, only when neither map nor loads gives it */
};

/** Fill defaults (see field comments); tokens_per_gpu, top_k and gpus are 0. */
MP_EXPORT void mp_simulate_options_init(struct mp_simulate_options *opts);

/** What a run measured. Arrays are owned (init/finish). */
struct mp_simulate_result {
	uint32_t steps;
	uint64_t seed;
	uint32_t n_layers;        /**< L: layers simulated (after broadcasting) */
	uint32_t n_experts;
	uint32_t gpus;
	uint32_t slots_per_gpu;
	uint32_t tokens_per_gpu;
	uint32_t top_k;
	bool prefer_local;
	bool default_layout;      /**< the round-robin layout was used (no map given) */
	double mean_visits;       /**< expert visits per GPU per sample, B * top_k (exact) */
	double factor_mean;       /**< mean over samples of busiest / mean */
	double factor_p50;        /**< nearest-rank percentiles over samples: the */
	double factor_p99;        /**<   ceil(q * steps)-th smallest factor */
	double factor_max;
	double *factors;          /**< [steps]: factor of each sample */
	double *gpu_mean_visits;  /**< [gpus]: visits per sample received by each GPU, averaged
				       over all samples */
	double *layer_factor_mean;/**< [n_layers]: mean factor of each layer's samples (NaN for a
				       layer with none, when steps < n_layers) */
};

MP_EXPORT void mp_simulate_result_init(struct mp_simulate_result *result);
/** Free; accepts NULL. */
MP_EXPORT void mp_simulate_result_finish(struct mp_simulate_result *result);

/** Fill slot_expert[gpus * slots_per_gpu] with the default round-robin
 * layout: physical slot p (on GPU p / slots_per_gpu) holds logical expert
 * p mod n_experts. Experts 0 .. (G*S mod E) - 1 then get one replica more
 * than the rest; with G*S = E every expert has exactly one slot. Requires
 * E <= G*S and S <= E (no GPU holds an expert twice); returns 0 or
 * MP_EINVAL. */
MP_EXPORT int mp_simulate_default_layout(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
			       uint32_t *slot_expert);

/** Run the Monte Carlo routing.
 *
 * map: a physical-to-logical map (only n_layers, n_experts, gpus,
 * slots_per_gpu and each layer's slot_expert are read), or NULL for the
 * default layout over opts->gpus GPUs (mp_simulate_default_layout).
 * loads: popularity [n_layers][n_experts] in any unit, or NULL for uniform.
 * A row that is all zero (no observations) is simulated as uniform; a row
 * whose values agree within 1e-12 relative is simulated by the uniform fast
 * path. Map and loads may each have one layer (applied to every layer of
 * the other) or the same number of layers; their n_experts must agree.
 *
 * Returns 0; MP_EINVAL (with a diagnostic in diags, which may be NULL) for
 * shapes that disagree, an expert id out of range, an expert with
 * popularity but no slot, fewer than top_k experts with popularity, a
 * G * B * top_k above 2^32 - 1, or options out of range; MP_ENOMEM.
 * out is filled on success and untouched on failure. */
MP_EXPORT int mp_simulate(const struct mp_placement *map, const struct mp_loads *loads,
		const struct mp_simulate_options *opts, struct mp_simulate_result *out,
		struct mp_diags *diags);

/** Visits a factor estimate routes by default: the step count of
 * mp_simulate_factor with steps 0 is min(256, 2e8 / (G * B * top_k)),
 * raised to at least L (every layer sampled) and at least 16. */
#define MP_SIMULATE_FACTOR_VISITS 200000000.0

/** The expected busiest-GPU factor of a plan's phase: mean over samples of
 * busiest GPU visits / mean visits, i.e. the systematic skew left by the
 * placement and the finite-batch spread together (mp_simulate with uniform
 * replica choice, every layer sampled). map and loads as for mp_simulate
 * (map must not be NULL). tokens_per_gpu = B; steps 0 = the default
 * budget above (about 0.1 to 1 s on one core); seed as for mp_simulate.
 * Writes the factor (>= 1) to *factor_out. Returns 0, MP_EINVAL or
 * MP_ENOMEM. */
MP_EXPORT int mp_simulate_factor(const struct mp_placement *map, const struct mp_loads *loads,
		       uint32_t tokens_per_gpu, uint32_t top_k, uint32_t steps, uint64_t seed,
		       double *factor_out);

#ifdef __cplusplus
}
#endif

#endif

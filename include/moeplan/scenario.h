/* moeplan: a deployment scenario: which model, which hardware for prefill
 * and for decode, what traffic, and the serving targets of each phase. */
#ifndef MOEPLAN_SCENARIO_H
#define MOEPLAN_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/engine.h"
#include "moeplan/model.h"
#include "moeplan/map.h"
#include "moeplan/step.h"
#include "moeplan/traffic.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a phase turns EP width into a slot count. */
enum mp_slot_rule {
	/** slots = round_up(E + min_redundant, ep): at least min_redundant
	 * redundant slots, total a multiple of EP (DeepSeek's benchmark rule,
	 * the article: 416 at EP8, 448 at EP64 for E = 384, min 32). The
	 * default min_redundant (MP_MIN_REDUNDANT_AUTO) scales with the model:
	 * mp_default_redundant. */
	MP_SLOTS_MIN_REDUNDANT = 0,
	/** slots = round_up(E, ep) + per_gpu * ep (DeepSeek production decode:
	 * one redundant slot per GPU). */
	MP_SLOTS_PER_GPU,
	/** slots_per_gpu fixed (the article's prefill: 196 per GPU at EP2). */
	MP_SLOTS_FIXED_PER_GPU,
};

/** min_redundant value meaning "the default rule" (mp_default_redundant). */
#define MP_MIN_REDUNDANT_AUTO UINT32_MAX

/** The default number of redundant slots for E logical experts at width
 * ep: ceil(E / 8), 12.5% of the experts (DeepSeek-V3 deploys 32 redundant
 * slots for its 256 experts in both phases: deepseek-ai/open-infra-index,
 * day_6_one_more_thing_deepseekV3R1_inference_system_overview.md),
 * and 0 when ep >= E (every expert already has a GPU to itself: Mixtral's
 * 8 experts on 8 GPUs). The slot rule then rounds E + this up to a
 * multiple of ep. Returns 0 when ep is 0. */
MP_EXPORT uint32_t mp_default_redundant(uint32_t n_experts, uint32_t ep);

/** Where a field was written in its scenario file (1-based; 0 = not
 * given), for messages that name the field to change (issue 26). */
struct mp_field_pos {
	int line;
	int column;
};

struct mp_phase_spec {
	struct mp_hardware hardware;   /**< the GPU this phase runs on */
	char *hardware_path;           /**< owned; file it came from, may be NULL */
	uint32_t gpus;                 /**< GPUs available to the phase (0 = one scale-up domain) */
	uint32_t ep;                   /**< fixed EP width, 0 = choose */
	uint32_t ep_min, ep_max;       /**< range to choose in (0 = no limit) */
	bool ep_max_default;           /**< ep_max is prefill's built-in 8, not given (mp_scenario_init
					    sets it; the loader clears it when ep or ep_max is given):
					    where nothing fits up to it, the width search goes on to
					    the smallest width that fits within gpus (issue 26) */
	struct mp_field_pos pos_phase, pos_gpus, pos_ep, pos_ep_max, pos_hardware, pos_overlap; /**< in the
					    scenario file (mp_scenario.path); zero when not given */
	enum mp_slot_rule slot_rule;
	uint32_t min_redundant;        /**< MP_SLOTS_MIN_REDUNDANT (default MP_MIN_REDUNDANT_AUTO) */
	uint32_t redundant_per_gpu;    /**< MP_SLOTS_PER_GPU (default 1) */
	uint32_t slots_per_gpu;        /**< MP_SLOTS_FIXED_PER_GPU */
	double requests_per_gpu;       /**< concurrent requests per GPU (decode) */
	double tokens_per_request;     /**< tokens per request per step (1 + drafted tokens) */
	double context_tokens;         /**< context length the KV cache must hold */
	double chunk_tokens;           /**< prefill tokens per GPU per step */
	enum mp_node_policy node_policy; /**< when the phase spans several nodes of the hardware's
					      gpus_per_node: MP_NODES_BALANCE (default) or
					      MP_NODES_GROUP_LIMITED (the model's n_groups kept within
					      nodes) or MP_NODES_REPORT */
	/* The serving step (step.h, issue 12). */
	double slo_tpot_s;             /**< decode: TPOT target in seconds (slo.tpot; 0 = none) */
	double slo_ttft_s;             /**< prefill: TTFT target in seconds (slo.ttft; 0 = none) */
	double acceptance;             /**< fraction of drafted tokens accepted; < 0 = default (0.75
					    with a drafter, DeepSeek's convention in seed 000; else 0) */
	enum mp_step_overlap overlap;  /**< exchange/compute overlap (default none) */
	enum mp_step_kernel kernel;    /**< DeepEP kernels (default auto; an engine profile's
					    kernels when the scenario names one) */
	uint32_t attention_tp;         /**< 0 or 1 = data-parallel attention; N = tp:N */
	double isl;                    /**< prompt length (0 = not given): prefill's prompt (default
					    context_tokens, else chunk_tokens); decode's mean KV length
					    is isl + osl / 2 when context_tokens is not given */
	double osl;                    /**< output length (0 = not given) */
};

/** The scenario's `search:` block (`moeplan search`, issue 13): the
 * workload the pools are sized for, the serving targets, and the batch grid.
 * Every field is optional; 0 means not given (command-line options
 * override each). */
struct mp_search_spec {
	bool given;                    /**< the block is present */
	uint32_t gpus;                 /**< GPU budget of both pools together */
	double request_rate;           /**< requests/s to size the pools for (instead of gpus) */
	double isl;                    /**< mean prompt tokens per request */
	double osl;                    /**< mean output tokens per request */
	double cached_fraction;        /**< of prompt tokens served from a prefix cache, [0, 1) */
	double tpot_s;                 /**< decode target: time per output token, seconds */
	double ttft_s;                 /**< prefill target: time to first token, seconds */
	double acceptance;             /**< decode: fraction of drafted tokens accepted, [0, 1]
					    (step.h); < 0 = not given (0) */
	bool all_batches;              /**< every batch from 1 to the HBM limit (default: a geometric
					    grid) */
	double grid_ratio;             /**< the geometric grid's ratio, > 1 (default 2^(1/8)) */
	double chunk_unit_tokens;      /**< prefill chunks are multiples of this (default 1,024) */
};

struct mp_scenario {
	char *name;                    /**< owned */
	char *path;                    /**< owned; the scenario file (NULL when not from a file) */
	char *model_path;              /**< owned */
	struct mp_model model;
	struct mp_traffic traffic;
	struct mp_phase_spec prefill;
	struct mp_phase_spec decode;
	double time_limit_s;           /**< wall-clock safety limit of each phase's placement run, seconds (default 10) */
	struct mp_search_spec search;  /**< the `search:` block */
	struct mp_engine_profile engine; /**< `engine:` (engine.h): name NULL = an ideal engine,
					      nothing restricted (the default) */
};

/** Fill defaults: both phases MP_SLOTS_MIN_REDUNDANT with min_redundant
 * MP_MIN_REDUNDANT_AUTO (redundant_per_gpu 1, used by MP_SLOTS_PER_GPU),
 * tokens_per_request 1, gpus 0; prefill ep range 2..8 (article: "the smallest EP that HBM
 * allows, between 2 and 8"), decode ep open (0); uniform traffic; time
 * limit 10 s. */
MP_EXPORT void mp_scenario_init(struct mp_scenario *scenario);

/** Free; accepts NULL. */
MP_EXPORT void mp_scenario_finish(struct mp_scenario *scenario);

/** Total slots for E logical experts at width ep under a phase's rule.
 * The total is capped at E * ep (a GPU never holds one expert twice, so
 * at most E slots per GPU are usable: EP1 holds each expert once).
 * Returns 0 when ep is 0, when the fixed per-GPU count is below E/ep, or
 * when the total would exceed UINT32_MAX. */
/** Make *e the scenario's engine (taking it over; *e is left initialised):
 * each phase's overlap must be one the engine runs, and the phases take
 * its kernels. Returns 0, or MP_EINVAL with why (a sentence naming the
 * phase, its overlap and the modes the engine runs), *where the phase's
 * `overlap` in the scenario file (zero when not given; where may be NULL)
 * and the scenario unchanged. */
MP_EXPORT int mp_scenario_set_engine(struct mp_scenario *sc, struct mp_engine_profile *e, char *why,
				     size_t why_size, struct mp_field_pos *where);

MP_EXPORT uint32_t mp_phase_slots(const struct mp_phase_spec *phase, uint32_t n_experts, uint32_t ep);

#ifdef __cplusplus
}
#endif

#endif

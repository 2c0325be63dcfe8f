/* moeplan: expert popularity (loads) per MoE layer, and the traffic specs
 * that generate it: uniform, Zipf skew, a hot set, or observed counts. */
#ifndef MOEPLAN_TRAFFIC_H
#define MOEPLAN_TRAFFIC_H

#include <stdint.h>
#include <stdbool.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Loads of logical experts: w[layer * n_experts + expert] >= 0, any unit
 * (token->expert assignments counted, or a relative popularity).
 * Row-major [n_layers][n_experts]; w is owned (init/finish). */
struct mp_loads {
	uint32_t n_layers;
	uint32_t n_experts;
	double *w;
	char *source; /**< owned; where the loads came from (first comment line of a CSV), may be NULL */
	char *path;   /**< owned; the file they were read from, may be NULL */
	uint32_t *layer_ids; /**< owned; [n_layers] the model layer of each row, 0-based in the
				  engine's numbering (num_hidden_layers, dense layers counted), or
				  NULL when the input does not say (README "Layer identity") */
	uint32_t hidden_layers; /**< rows cover every hidden layer 0..hidden_layers-1 (SGLang's
				     dumps, whose rows are num_hidden_layers), or 0 = not known */
};

/** Maximum sizes accepted anywhere (documented in the README). */
#define MP_MAX_EXPERTS 65536u
#define MP_MAX_LAYERS 4096u
#define MP_MAX_GPUS 65536u
#define MP_MAX_SLOTS_PER_GPU 4096u

MP_EXPORT void mp_loads_init(struct mp_loads *loads);

/** Allocate n_layers x n_experts zeros. Returns 0, MP_EINVAL (a size of 0
 * or above MP_MAX_*), or MP_ENOMEM. Frees what loads held before. */
MP_EXPORT int mp_loads_alloc(struct mp_loads *loads, uint32_t n_layers, uint32_t n_experts);

/** Free; accepts NULL. */
MP_EXPORT void mp_loads_finish(struct mp_loads *loads);

/** Give loads row layer ids: ids[n_layers] copied (NULL frees them).
 * Returns 0, MP_EINVAL (ids not strictly increasing or above
 * MP_MAX_LAYERS) or MP_ENOMEM. */
MP_EXPORT int mp_loads_set_layer_ids(struct mp_loads *loads, const uint32_t *ids);

/** Row pointer of a layer (n_experts values). */
static inline double *mp_loads_row(const struct mp_loads *loads, uint32_t layer)
{
	return loads->w + (uint64_t)layer * loads->n_experts;
}

enum mp_traffic_kind {
	MP_TRAFFIC_UNIFORM = 0, /**< every expert equally popular */
	MP_TRAFFIC_ZIPF,        /**< popularity of rank i (1-based) proportional to 1 / i^s */
	MP_TRAFFIC_HOT,         /**< hot_experts fraction carries hot_load fraction */
	MP_TRAFFIC_OBSERVED,    /**< counts given (inline or CSV) */
};

/** A traffic spec. For generated kinds, the loads of each layer sum to
 * 1.0 * n_experts (mean 1 per expert), and the expert that gets each rank is
 * a seeded permutation per layer when permute is true (identity otherwise).*/
struct mp_traffic {
	enum mp_traffic_kind kind;
	double zipf_s;           /**< Zipf exponent s >= 0 */
	double hot_experts;      /**< fraction of experts that are hot, (0,1) */
	double hot_load;         /**< fraction of load they carry, (0,1) */
	uint64_t seed;           /**< permutation seed */
	bool permute;            /**< permute expert ids per layer */
	struct mp_loads observed;/**< for MP_TRAFFIC_OBSERVED */
};

MP_EXPORT void mp_traffic_init(struct mp_traffic *traffic);
MP_EXPORT void mp_traffic_finish(struct mp_traffic *traffic);

/** Generate loads for n_layers x n_experts from a spec. For OBSERVED, copies
 * the observed counts, which must have exactly that shape (else MP_EINVAL).
 * Deterministic for a given spec and seed on every platform (the generator
 * is SplitMix64, Steele, Lea and Flood 2014, with a Fisher-Yates shuffle).
 * Returns 0, MP_EINVAL or MP_ENOMEM; out is untouched on failure. */
MP_EXPORT int mp_traffic_generate(const struct mp_traffic *traffic, uint32_t n_layers,
			uint32_t n_experts, struct mp_loads *out);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: prefill and decode pools (xPyD) sized for a workload, and the
 * co-located (aggregated) alternative on the same GPUs.
 *
 * Pure arithmetic, no I/O. A workload is a request rate lambda (requests/s)
 * or a GPU budget N, with mean prompt length isl, mean output length osl
 * and a fraction c of prompt tokens served from a prefix cache (not
 * recomputed). Neither pool starves when (issue 13)
 *
 *     prefill GPUs x P = lambda x isl x (1 - c)     P: uncached input tokens/s per prefill GPU
 *     decode GPUs  x D = lambda x osl               D: output tokens/s per decode GPU
 *
 * and each pool is a whole number of deployment units (its EP group of
 * u_p or u_d GPUs):
 *   - for a rate: p = ceil(lambda isl (1 - c) / (u_p P)) units,
 *                 d = ceil(lambda osl / (u_d D)) units;
 *   - for a budget: every p >= 1 with d = floor((N - p u_p) / u_d) >= 1 is
 *     tried; lambda = min(p u_p P / (isl (1 - c)), d u_d D / osl) is
 *     maximised (ties: fewer GPUs, then fewer prefill units), then each pool
 *     is shrunk to the fewest units that still carry that lambda; the GPUs
 *     left over are reported as spare.
 * The KV cache of a request's whole prompt (cached prefix included: the
 * decode GPU needs all of it) travels once from a prefill GPU to a decode
 * GPU over one scale-out NIC: kv_transfer_s = kv_bytes / bw. All requests
 * together send lambda kv_bytes per second out of the prefill pool's NICs
 * and into the decode pool's, so each pool also needs at least
 * lambda kv_bytes / bw GPUs: in the equations above a pool's GPUs per
 * request/s is max(its arithmetic's, kv_bytes / bw) (the transfer runs on
 * the NIC while the GPU computes).
 *
 * Co-located: every GPU runs both phases with the same weights, so one
 * deployment unit u; a request costs isl (1 - c) / P + osl / D GPU-seconds
 * (P and D measured on that deployment), so with G GPUs
 * lambda = G / (isl (1 - c) / P + osl / D) at full load (budget), or G is
 * the fewest whole units that carry the rate. Decode advances only while a
 * GPU is not prefilling, so the per-user speed is the decode point's times
 * (1 - s), s = lambda isl (1 - c) / (G P) the prefill share of GPU time
 * (chunked prefill interleaves prompt chunks into decode steps: Agrawal et
 * al., Sarathi-Serve, OSDI 2024; the TPOT interference DistServe, Zhong et
 * al. OSDI 2024, disaggregates to avoid).
 */
#ifndef MOEPLAN_POOLS_H
#define MOEPLAN_POOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mp_pool_workload {
	double isl;              /**< mean prompt tokens per request, > 0 */
	double osl;              /**< mean output tokens per request, > 0 */
	double cached_fraction;  /**< of prompt tokens served from a prefix cache, in [0, 1) */
	double request_rate;     /**< requests/s; 0 = size for gpu_budget */
	uint32_t gpu_budget;     /**< GPUs in all; 0 = size for request_rate (exactly one of the two) */
};

/** What one GPU of each pool delivers at the chosen points. */
struct mp_pool_rates {
	double prefill_tokens_per_s_per_gpu;  /**< P: uncached input tokens/s per prefill GPU, > 0 */
	uint32_t prefill_unit_gpus;           /**< u_p: the prefill EP group, >= 1 */
	double decode_tokens_per_s_per_gpu;   /**< D: output tokens/s per decode GPU, > 0 */
	uint32_t decode_unit_gpus;            /**< u_d: the decode EP group, >= 1 */
	double kv_bytes_per_request;          /**< KV cache of one request's prompt, bytes, >= 0 */
	double link_bw_bytes_per_s;           /**< scale-out bandwidth per GPU per direction, > 0 */
};

struct mp_pools {
	uint32_t prefill_units, decode_units;   /**< EP groups per pool */
	uint32_t prefill_gpus, decode_gpus;     /**< units x unit GPUs */
	uint32_t gpus;                          /**< prefill + decode */
	uint32_t spare_gpus;                    /**< budget - gpus (0 when sized for a rate) */
	double prefill_share;                   /**< prefill GPUs / gpus */
	double ratio;                           /**< prefill GPUs / decode GPUs */
	double request_rate;                    /**< requests/s served (the rate, or the most the
						     budget's pools carry) */
	double prefill_capacity_rate;           /**< requests/s the prefill pool carries */
	double decode_capacity_rate;            /**< requests/s the decode pool carries */
	double prefill_utilisation;             /**< request_rate / prefill_capacity_rate */
	double decode_utilisation;
	double requests_per_s_per_gpu;          /**< request_rate / gpus */
	double input_tokens_per_s_per_gpu;      /**< request_rate x isl / gpus (cached included) */
	double output_tokens_per_s_per_gpu;     /**< request_rate x osl / gpus */
	double kv_bytes_per_request;
	double kv_transfer_s;                   /**< kv_bytes / link bandwidth */
	double kv_link_utilisation;             /**< request_rate kv_bytes / (prefill GPUs x bw) */
	bool kv_link_bound;                     /**< the prefill pool is sized by its NICs, not its
						     arithmetic */
};

/** Size the pools (file comment). Returns 0, MP_EINVAL (a length, rate or
 * throughput not positive and finite, a cached fraction outside [0, 1),
 * both or neither of request_rate and gpu_budget, a unit of 0), MP_ENOFIT
 * (the budget holds fewer than one unit of each pool), or MP_ENOMEM (more
 * than UINT32_MAX GPUs). out is untouched on failure. */
MP_EXPORT int mp_pools_size(const struct mp_pool_workload *w, const struct mp_pool_rates *r,
		  struct mp_pools *out);

/** What one GPU of a co-located deployment delivers in each phase. */
struct mp_colocated_rates {
	double prefill_tokens_per_s_per_gpu;  /**< uncached input tokens/s per GPU when prefilling, > 0 */
	double decode_tokens_per_s_per_gpu;   /**< output tokens/s per GPU when decoding, > 0 */
	double decode_tokens_per_s_per_user;  /**< per request when decoding, > 0 */
	uint32_t unit_gpus;                   /**< the deployment's EP group, >= 1 */
};

struct mp_colocated {
	uint32_t units;                    /**< EP groups */
	uint32_t gpus;
	double request_rate;               /**< requests/s */
	double prefill_time_share;         /**< s: fraction of GPU time spent prefilling */
	double tokens_per_s_per_user;      /**< decode per-user speed x (1 - s) */
	double requests_per_s_per_gpu;
	double input_tokens_per_s_per_gpu; /**< request_rate x isl / gpus */
	double output_tokens_per_s_per_gpu;/**< request_rate x osl / gpus */
};

/** The co-located alternative (file comment). Returns 0, MP_EINVAL (as
 * mp_pools_size), MP_ENOFIT (the budget holds no unit), MP_ENOMEM (more
 * than UINT32_MAX GPUs). out is untouched on failure. */
MP_EXPORT int mp_pools_colocated(const struct mp_pool_workload *w, const struct mp_colocated_rates *r,
		       struct mp_colocated *out);

#ifdef __cplusplus
}
#endif

#endif

/* moeplan: what dispatch and combine move per MoE layer, on which links,
 * and whether it hides under the expert arithmetic.
 *
 * Pure functions, no I/O. A "node" here is the set of GPUs joined by
 * scale-up links (NVLink/xGMI): an 8-GPU HGX server, or a whole NVL72
 * rack. With N_EP GPUs, G GPUs per node (G_eff = min(G, N_EP)) and
 * N = N_EP / G_eff nodes, one token with k routed experts, hidden d,
 * dispatch format bd and combine format bc bytes per element:
 *
 *  - scale-out (network): the token crosses once per destination node
 *    other than its own, each way; results are summed inside the node
 *    before they travel back (DeepSeek-V3 report section 3.2, DeepEP
 *    normal kernels: RDMA to the peer GPU, NVLink forward):
 *        out_d = R d bd,  out_c = R d bc,
 *        R = D (N - 1) / N remote nodes, D = E[min(distinct nodes, M)]
 *    over k independent uniform visits (M = max nodes per token, node-
 *    limited routing; no limit when 0);
 *  - scale-up (NVLink): the token moves once per expert inside the node,
 *    except the visits that land on the GPU it is already on (1 / G_eff):
 *        up_d = k (1 - 1/G_eff) d bd,  up_c = k (1 - 1/G_eff) d bc.
 *
 * Per GPU and layer, with T tokens per GPU and balanced routing, each
 * direction of each link carries T (x_d + x_c) bytes. The arithmetic is
 * T k F (routed) + T s F_shared (s shared experts) at the GPU's peak for
 * model->expert_compute; communication hides when its time (the slower
 * link; links run in parallel) is at most that.
 */
#ifndef MOEPLAN_COMM_H
#define MOEPLAN_COMM_H

#include <stdint.h>

#include "moeplan/model.h"
#include "moeplan/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The largest top_k mp_comm_expected_nodes handles. */
#define MP_COMM_MAX_TOP_K 256

struct mp_comm_input {
	uint32_t ep;                  /**< EP width, >= 1 */
	uint32_t gpus_per_node;       /**< GPUs per scale-up node; 0 = hw->scale_up_domain_gpus */
	uint32_t max_nodes_per_token; /**< node-limited routing M; 0 = no limit */
	double tokens_per_gpu;        /**< T, tokens per GPU per step, >= 0 */
	double scale_up_bw_bytes_per_s;   /**< per GPU per direction; 0 = the hardware's */
	double scale_out_bw_bytes_per_s;  /**< per GPU per direction; 0 = the hardware's */
	double peak_flops;            /**< 0 = the hardware's peak for model->expert_compute */
};

/** Fill defaults (everything 0 = from the hardware; ep 1). */
MP_EXPORT void mp_comm_input_init(struct mp_comm_input *in);

/** The communication of one MoE layer (per GPU unless stated). */
struct mp_comm {
	uint32_t ep;
	uint32_t gpus_per_node;            /**< G_eff */
	uint32_t nodes;                    /**< N */
	double tokens_per_gpu;             /**< T */
	double bytes_per_token;            /**< k d (bd + bc), all visits, before the split */
	double dest_nodes_per_token;       /**< D */
	double remote_nodes_per_token;     /**< R */
	double scale_up_visits_per_token;  /**< k (1 - 1/G_eff) */
	double dispatch_up_bytes_per_token;
	double combine_up_bytes_per_token;
	double dispatch_out_bytes_per_token;
	double combine_out_bytes_per_token;
	double scale_up_bytes;             /**< T (up_d + up_c), each direction */
	double scale_out_bytes;            /**< T (out_d + out_c), each direction */
	double scale_up_bw_bytes_per_s;    /**< used */
	double scale_out_bw_bytes_per_s;   /**< used */
	double scale_up_s;
	double scale_out_s;
	double comm_s;                     /**< max of the two links */
	double routed_flops;               /**< T k F */
	double shared_flops;               /**< T s F_shared */
	double flops;
	double peak_flops;                 /**< used */
	double compute_s;                  /**< flops / peak */
	double ratio;                      /**< comm_s / compute_s (INFINITY with no arithmetic) */
	double scale_up_bw_to_hide;        /**< scale_up_bytes / compute_s, bytes/s */
	double scale_out_bw_to_hide;       /**< scale_out_bytes / compute_s (0 with one node) */
	uint32_t moe_layers;               /**< to scale to a step */
	double step_comm_s;                /**< comm_s * moe_layers */
	double step_compute_s;             /**< compute_s * moe_layers */
};

/** The expected number of distinct nodes, capped at max_nodes (0 = no
 * cap), that k independent visits, each uniform over `nodes` nodes, touch:
 * E[min(D, M)] from the occupancy distribution P(D = j) (dynamic
 * programme over visits). nodes 0 gives 0; top_k above MP_COMM_MAX_TOP_K
 * gives NAN. */
MP_EXPORT double mp_comm_expected_nodes(uint32_t nodes, uint32_t top_k, uint32_t max_nodes);

/** Evaluate one MoE layer. Returns 0, or MP_EINVAL when ep is 0, ep is
 * above G but not a multiple of it, the model has no top_k (or one above
 * MP_COMM_MAX_TOP_K) or no hidden size,
 * T is negative or not finite, there is no peak, or a link that carries
 * bytes has no bandwidth. out is untouched on failure. */
MP_EXPORT int mp_comm_layer(const struct mp_model *model, const struct mp_hardware *hw,
		  const struct mp_comm_input *in, struct mp_comm *out);

#ifdef __cplusplus
}
#endif

#endif

/* Dispatch and combine traffic per MoE layer (comm.h). */
#include "moeplan/comm.h"
#include "moeplan/diag.h"
#include "moeplan/roofline.h"

#include <math.h>

void mp_comm_input_init(struct mp_comm_input *in)
{
	*in = (struct mp_comm_input){.ep = 1};
}

double mp_comm_expected_nodes(uint32_t nodes, uint32_t top_k, uint32_t max_nodes)
{
	if (nodes == 0 || top_k == 0) {
		return 0.0;
	}
	if (top_k > MP_COMM_MAX_TOP_K) {
		return (double)NAN;
	}
	uint32_t jmax = top_k < nodes ? top_k : nodes;
	/* p[j] = P(j distinct nodes after the visits so far). */
	double p[MP_COMM_MAX_TOP_K + 1] = {0};
	double n = (double)nodes;
	p[0] = 1.0;
	for (uint32_t i = 0; i < top_k; i++) {
		uint32_t top = i + 1 < jmax ? i + 1 : jmax;
		for (uint32_t j = top; j > 0; j--) {
			/* Stay at j: the visit lands on one of the j nodes;
			 * move from j-1: it lands on a new one. */
			p[j] = p[j] * ((double)j / n) + p[j - 1] * ((n - (double)(j - 1)) / n);
		}
		p[0] = 0.0;
	}
	double mean = 0.0;
	for (uint32_t j = 1; j <= jmax; j++) {
		uint32_t capped = max_nodes > 0 && j > max_nodes ? max_nodes : j;
		mean += (double)capped * p[j];
	}
	return mean;
}

int mp_comm_layer(const struct mp_model *model, const struct mp_hardware *hw,
		  const struct mp_comm_input *in, struct mp_comm *out)
{
	uint32_t g = in->gpus_per_node ? in->gpus_per_node : hw->scale_up_domain_gpus;
	if (in->ep == 0 || g == 0 || model->top_k == 0 || model->top_k > MP_COMM_MAX_TOP_K ||
	    model->hidden_size == 0 ||
	    !isfinite(in->tokens_per_gpu) || in->tokens_per_gpu < 0.0) {
		return MP_EINVAL;
	}
	if (in->ep > g && in->ep % g != 0) {
		return MP_EINVAL;
	}
	uint32_t g_eff = in->ep < g ? in->ep : g;
	uint32_t nodes = in->ep / g_eff;
	double peak = in->peak_flops > 0.0 ? in->peak_flops
		      : ((unsigned)model->expert_compute < MP_COMPUTE_COUNT
				 ? hw->peak_flops[model->expert_compute]
				 : 0.0);
	double bw_up = in->scale_up_bw_bytes_per_s > 0.0 ? in->scale_up_bw_bytes_per_s
							 : hw->scale_up_bw_bytes_per_s;
	double bw_out = in->scale_out_bw_bytes_per_s > 0.0 ? in->scale_out_bw_bytes_per_s
							   : hw->scale_out_bw_bytes_per_s;
	if (!(peak > 0.0) || !isfinite(peak)) {
		return MP_EINVAL;
	}

	double d = (double)model->hidden_size;
	double bd = mp_format_bytes(model->dispatch_format);
	double bc = mp_format_bytes(model->combine_format);
	double k = (double)model->top_k;
	double t = in->tokens_per_gpu;

	struct mp_comm c = {
		.ep = in->ep,
		.gpus_per_node = g_eff,
		.nodes = nodes,
		.tokens_per_gpu = t,
		.bytes_per_token = k * d * (bd + bc),
		.scale_up_bw_bytes_per_s = bw_up,
		.scale_out_bw_bytes_per_s = bw_out,
		.peak_flops = peak,
		.moe_layers = model->moe_layers,
	};
	c.dest_nodes_per_token = mp_comm_expected_nodes(nodes, model->top_k, in->max_nodes_per_token);
	c.remote_nodes_per_token = c.dest_nodes_per_token * (double)(nodes - 1) / (double)nodes;
	c.scale_up_visits_per_token = k * (1.0 - 1.0 / (double)g_eff);
	c.dispatch_up_bytes_per_token = c.scale_up_visits_per_token * d * bd;
	c.combine_up_bytes_per_token = c.scale_up_visits_per_token * d * bc;
	c.dispatch_out_bytes_per_token = c.remote_nodes_per_token * d * bd;
	c.combine_out_bytes_per_token = c.remote_nodes_per_token * d * bc;
	c.scale_up_bytes = t * (c.dispatch_up_bytes_per_token + c.combine_up_bytes_per_token);
	c.scale_out_bytes = t * (c.dispatch_out_bytes_per_token + c.combine_out_bytes_per_token);
	if ((c.scale_up_bytes > 0.0 && !(bw_up > 0.0)) || (c.scale_out_bytes > 0.0 && !(bw_out > 0.0))) {
		return MP_EINVAL;
	}
	c.scale_up_s = c.scale_up_bytes > 0.0 ? c.scale_up_bytes / bw_up : 0.0;
	c.scale_out_s = c.scale_out_bytes > 0.0 ? c.scale_out_bytes / bw_out : 0.0;
	c.comm_s = fmax(c.scale_up_s, c.scale_out_s);

	struct mp_expert_cost e;
	mp_roofline_expert(model, &e);
	c.routed_flops = t * k * e.flops_per_token;
	mp_roofline_shared_expert(model, &e);
	c.shared_flops = t * (double)model->shared_experts * e.flops_per_token;
	c.flops = c.routed_flops + c.shared_flops;
	c.compute_s = c.flops / peak;
	if (c.compute_s > 0.0) {
		c.ratio = c.comm_s / c.compute_s;
		c.scale_up_bw_to_hide = c.scale_up_bytes / c.compute_s;
		c.scale_out_bw_to_hide = c.scale_out_bytes / c.compute_s;
	} else {
		c.ratio = c.comm_s > 0.0 ? (double)INFINITY : 0.0;
	}
	c.step_comm_s = c.comm_s * (double)model->moe_layers;
	c.step_compute_s = c.compute_s * (double)model->moe_layers;
	*out = c;
	return 0;
}

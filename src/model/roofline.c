/* The roofline of routed experts under expert parallelism (roofline.h). */
#include "moeplan/roofline.h"
#include "moeplan/diag.h"

#include <math.h>

void mp_roofline_expert_cost(uint32_t hidden, uint32_t intermediate, uint32_t matrices,
			     enum mp_format weights, uint32_t group_size,
			     enum mp_format dispatch, enum mp_format combine,
			     struct mp_expert_cost *out)
{
	double p = (double)matrices * (double)hidden * (double)intermediate;
	*out = (struct mp_expert_cost){
		.params = p,
		.weight_bytes = p * mp_format_bits(weights, group_size) / 8.0,
		.flops_per_token = 2.0 * p,
		.act_bytes_per_visit = (double)hidden * (mp_format_bytes(dispatch) + mp_format_bytes(combine)),
	};
}

void mp_roofline_expert(const struct mp_model *model, struct mp_expert_cost *out)
{
	mp_roofline_expert_cost(model->hidden_size, model->expert_intermediate_size,
				model->matrices_per_expert, model->routed_format,
				model->int4_group_size, model->dispatch_format,
				model->combine_format, out);
}

void mp_roofline_drafter_expert(const struct mp_model *model, struct mp_expert_cost *out)
{
	const struct mp_drafter *d = &model->drafter;
	if (d->moe_stages == 0 || d->routed_experts == 0) {
		*out = (struct mp_expert_cost){0};
		return;
	}
	uint32_t hidden = d->hidden_size ? d->hidden_size : model->hidden_size;
	uint32_t inter = d->expert_intermediate_size ? d->expert_intermediate_size
						     : model->expert_intermediate_size;
	uint32_t mats = d->matrices_per_expert ? d->matrices_per_expert : model->matrices_per_expert;
	mp_roofline_expert_cost(hidden, inter, mats, d->routed_format, model->int4_group_size,
				model->dispatch_format, model->combine_format, out);
}

void mp_roofline_shared_expert(const struct mp_model *model, struct mp_expert_cost *out)
{
	mp_roofline_expert_cost(model->hidden_size, model->shared_expert_intermediate_size,
				model->matrices_per_expert, model->shared_format,
				model->int4_group_size, model->dispatch_format,
				model->combine_format, out);
}

double mp_roofline_ridge(const struct mp_hardware *hw, enum mp_compute compute)
{
	if ((unsigned)compute >= MP_COMPUTE_COUNT || !(hw->hbm_bw_bytes_per_s > 0.0) ||
	    !(hw->peak_flops[compute] > 0.0)) {
		return 0.0;
	}
	return hw->peak_flops[compute] / hw->hbm_bw_bytes_per_s;
}

double mp_roofline_intensity(const struct mp_expert_cost *e, double t, bool activations)
{
	double bytes = e->weight_bytes + (activations ? e->act_bytes_per_visit * t : 0.0);
	if (!(bytes > 0.0)) {
		return 0.0;
	}
	return e->flops_per_token * t / bytes;
}

double mp_roofline_ceiling(const struct mp_expert_cost *e)
{
	if (!(e->act_bytes_per_visit > 0.0)) {
		return (double)INFINITY;
	}
	return e->flops_per_token / e->act_bytes_per_visit;
}

double mp_roofline_ridge_tokens(const struct mp_expert_cost *e, double ridge, bool activations)
{
	double denom = e->flops_per_token - (activations ? ridge * e->act_bytes_per_visit : 0.0);
	if (!(denom > 0.0)) {
		return (double)INFINITY;
	}
	return ridge * e->weight_bytes / denom;
}

double mp_roofline_tokens_per_expert(double tokens_per_gpu, uint32_t top_k, uint32_t ep,
				     uint32_t slots)
{
	if (ep == 0 || slots == 0) {
		return 0.0;
	}
	return tokens_per_gpu * (double)top_k * (double)ep / (double)slots;
}

double mp_roofline_tokens_per_gpu(double tokens_per_expert, uint32_t top_k, uint32_t ep,
				  uint32_t slots)
{
	if (ep == 0 || top_k == 0) {
		return 0.0;
	}
	return tokens_per_expert * (double)slots / ((double)top_k * (double)ep);
}

double mp_roofline_experts_touched(uint32_t n_experts, uint32_t top_k, double tokens)
{
	if (n_experts == 0 || !(tokens > 0.0)) {
		return 0.0;
	}
	double e = (double)n_experts;
	double k = top_k < n_experts ? (double)top_k : e;
	/* (1 - k/E)^B through log1p so that small k/E keeps its digits. */
	double miss = k < e ? exp(tokens * log1p(-k / e)) : 0.0;
	return e * (1.0 - miss);
}

double mp_roofline_weight_bytes_per_token(const struct mp_expert_cost *e, uint32_t n_experts,
					  uint32_t top_k, double tokens)
{
	if (!(tokens > 0.0)) {
		return 0.0;
	}
	return mp_roofline_experts_touched(n_experts, top_k, tokens) * e->weight_bytes / tokens;
}

void mp_roofline_options_init(struct mp_roofline_options *opts)
{
	*opts = (struct mp_roofline_options){.activations = true};
}

static bool valid_slots(uint32_t experts, uint32_t ep, uint32_t slots)
{
	return ep > 0 && slots >= experts && slots % ep == 0;
}

/* Fill one part for `layers` identical layers. */
static void eval_part(struct mp_roofline_part *p, uint32_t layers, uint32_t experts,
		      uint32_t top_k, uint32_t ep, uint32_t slots,
		      const struct mp_expert_cost *cost, double b, double peak, double bw,
		      bool activations)
{
	double ridge = peak / bw;
	double t = mp_roofline_tokens_per_expert(b, top_k, ep, slots);
	double visits = b * (double)top_k;
	double flops = visits * cost->flops_per_token;
	double act = activations ? visits * cost->act_bytes_per_visit : 0.0;
	double weights = (double)(slots / ep) * cost->weight_bytes;
	double compute = flops / peak;
	double memory = (act + weights) / bw;
	double l = (double)layers;

	*p = (struct mp_roofline_part){
		.layers = layers,
		.experts = experts,
		.top_k = top_k,
		.slots = slots,
		.slots_per_gpu = slots / ep,
		.expert = *cost,
		.tokens_per_expert = t,
		.intensity = mp_roofline_intensity(cost, t, activations),
		.intensity_weights = mp_roofline_intensity(cost, t, false),
		.ridge_tokens = mp_roofline_ridge_tokens(cost, ridge, activations),
		.ridge_tokens_weights = mp_roofline_ridge_tokens(cost, ridge, false),
		.flops = l * flops,
		.act_bytes = l * act,
		.weight_bytes = l * weights,
		.compute_s = l * compute,
		.memory_s = l * memory,
		/* Every layer is alike, so the sum of per-layer maxima is
		 * the layer count times one maximum. */
		.overlap_s = l * fmax(compute, memory),
		.additive_s = l * (compute + memory),
		.compute_bound = compute >= memory,
	};
}

int mp_roofline_point(const struct mp_model *model, const struct mp_hardware *hw,
		      const struct mp_roofline_options *opts, const struct mp_ep_width *width,
		      double tokens_per_gpu, struct mp_roofline_point *out)
{
	struct mp_roofline_options defaults;
	if (!opts) {
		mp_roofline_options_init(&defaults);
		opts = &defaults;
	}
	double peak = opts->peak_flops > 0.0 ? opts->peak_flops
		      : ((unsigned)model->expert_compute < MP_COMPUTE_COUNT
				 ? hw->peak_flops[model->expert_compute]
				 : 0.0);
	double bw = opts->hbm_bw_bytes_per_s > 0.0 ? opts->hbm_bw_bytes_per_s : hw->hbm_bw_bytes_per_s;
	if (!(peak > 0.0) || !(bw > 0.0) || !isfinite(peak) || !isfinite(bw)) {
		return MP_EINVAL;
	}
	if (!isfinite(tokens_per_gpu) || tokens_per_gpu < 0.0) {
		return MP_EINVAL;
	}
	if (model->top_k == 0 || model->top_k > model->routed_experts ||
	    !valid_slots(model->routed_experts, width->ep, width->slots)) {
		return MP_EINVAL;
	}
	const struct mp_drafter *d = &model->drafter;
	bool has_drafter = d->moe_stages > 0 && d->routed_experts > 0;
	if (has_drafter && (d->top_k == 0 || d->top_k > d->routed_experts ||
			    !valid_slots(d->routed_experts, width->ep, width->drafter_slots))) {
		return MP_EINVAL;
	}

	struct mp_roofline_point p = {
		.width = *width,
		.tokens_per_gpu = tokens_per_gpu,
		.peak_flops = peak,
		.hbm_bw_bytes_per_s = bw,
		.ridge = peak / bw,
	};
	struct mp_expert_cost cost;
	mp_roofline_expert(model, &cost);
	eval_part(&p.main, model->moe_layers, model->routed_experts, model->top_k, width->ep,
		  width->slots, &cost, tokens_per_gpu, peak, bw, opts->activations);
	if (has_drafter) {
		mp_roofline_drafter_expert(model, &cost);
		eval_part(&p.drafter, d->moe_stages, d->routed_experts, d->top_k, width->ep,
			  width->drafter_slots, &cost, tokens_per_gpu, peak, bw, opts->activations);
	}
	p.flops = p.main.flops + p.drafter.flops;
	p.bytes = p.main.act_bytes + p.main.weight_bytes + p.drafter.act_bytes + p.drafter.weight_bytes;
	p.compute_s = p.main.compute_s + p.drafter.compute_s;
	p.memory_s = p.main.memory_s + p.drafter.memory_s;
	p.overlap_s = p.main.overlap_s + p.drafter.overlap_s;
	p.additive_s = p.main.additive_s + p.drafter.additive_s;
	p.time_s = opts->additive ? p.additive_s : p.overlap_s;
	*out = p;
	return 0;
}

int mp_roofline_compare(const struct mp_model *model, const struct mp_hardware *hw,
			const struct mp_roofline_options *opts, const struct mp_ep_width *from,
			const struct mp_ep_width *to, double tokens_per_gpu,
			double measured_from_s, double measured_to_s,
			struct mp_roofline_compare *out)
{
	if (!isfinite(measured_from_s) || measured_from_s < 0.0 || !isfinite(measured_to_s) ||
	    measured_to_s < 0.0) {
		return MP_EINVAL;
	}
	struct mp_roofline_compare c = {
		.measured_from_s = measured_from_s,
		.measured_to_s = measured_to_s,
		.error = (double)NAN,
		.implied_bw_bytes_per_s = (double)NAN,
	};
	int rc = mp_roofline_point(model, hw, opts, from, tokens_per_gpu, &c.from);
	if (rc == 0) {
		rc = mp_roofline_point(model, hw, opts, to, tokens_per_gpu, &c.to);
	}
	if (rc != 0) {
		return rc;
	}
	c.floor_s = measured_from_s - c.from.time_s;
	c.delta_s = c.to.time_s - c.from.time_s;
	c.predicted_to_s = measured_from_s + c.delta_s;
	c.weight_bytes_delta = (c.to.main.weight_bytes + c.to.drafter.weight_bytes) -
			       (c.from.main.weight_bytes + c.from.drafter.weight_bytes);
	if (measured_to_s > 0.0) {
		c.error = c.predicted_to_s / measured_to_s - 1.0;
		double gap = measured_to_s - measured_from_s;
		if (fabs(gap) > 0.0) {
			c.implied_bw_bytes_per_s = c.weight_bytes_delta / gap;
		}
	}
	*out = c;
	return 0;
}

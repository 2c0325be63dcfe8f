/* What one GPU holds in HBM (capacity.h). */
#include "moeplan/capacity.h"
#include "moeplan/diag.h"

#include <math.h>

/* 2^64: a byte count at or above it does not fit uint64_t. */
#define TWO_POW_64 18446744073709551616.0

void mp_capacity_options_init(struct mp_capacity_options *opts)
{
	*opts = (struct mp_capacity_options){
		.buffers = MP_BUFFERS_AUTO,
		.workspace = true,
		.reserve_bytes = MP_CAPACITY_DEFAULT_RESERVE_BYTES,
	};
}

static double align128(double bytes)
{
	return ceil(bytes / 128.0) * 128.0;
}

/* DeepEP's recommended NVLink receive tokens per channel by rank count
 * (deep_ep/buffer.py get_dispatch_config / get_combine_config). */
static double nvl_recv_tokens(uint32_t ranks)
{
	if (ranks <= 8) {
		return 256.0;
	}
	if (ranks <= 64) {
		return 288.0;
	}
	if (ranks <= 128) {
		return 560.0;
	}
	return 720.0;
}

/* SGLang's table of defaults by GPU memory (MiB) and TP size
 * (_handle_gpu_memory_settings, CUDA path). */
static void sglang_defaults(double gpu_mem, uint32_t tp, double *chunk, double *cgbs)
{
	const double gib = 1024.0;
	if (gpu_mem < 20 * gib) {
		*chunk = 2048, *cgbs = 8;
	} else if (gpu_mem < 35 * gib) {
		*chunk = 2048, *cgbs = tp < 4 ? 24 : 80;
	} else if (gpu_mem < 60 * gib) {
		*chunk = 4096, *cgbs = tp < 4 ? 32 : 160;
	} else if (gpu_mem < 160 * gib) {
		*chunk = 8192, *cgbs = tp < 4 ? 256 : 512; /* H100, A100 80 GB; H20, H200 */
	} else {
		*chunk = 16384, *cgbs = 512;               /* B200, MI300 */
	}
}

double mp_sglang_mem_fraction_static(uint64_t hbm_bytes, uint32_t tp_size,
				     const struct mp_sglang_memory *s)
{
	const double gpu_mem = (double)hbm_bytes / 1048576.0; /* MiB, as torch reports */
	double chunk = 0.0;
	double cgbs = 0.0;
	sglang_defaults(gpu_mem, tp_size, &chunk, &cgbs);
	if (s->chunked_prefill_size > 0.0) {
		chunk = s->chunked_prefill_size;
	}
	if (s->cuda_graph_max_bs > 0) {
		cgbs = (double)s->cuda_graph_max_bs;
	}
	const double tp = (double)tp_size;
	double reserved = 512.0 + fmax(chunk, 2048.0) * 1.5 + cgbs * 2.0 + tp / 8.0 * 1024.0;
	if (s->dp_attention) {
		const double dp = tp;
		reserved += cgbs * dp * 3.0;
		if (cgbs > 300.0) {
			reserved += cgbs * dp * 1.5;
		}
	}
	if (gpu_mem > 60.0 * 1024.0) {
		reserved = fmax(reserved, 10.0 * 1024.0);
	}
	if (s->speculative) {
		reserved += 2.0 * 1024.0;
	}
	return round((gpu_mem - reserved) / gpu_mem * 1000.0) / 1000.0;
}

double mp_capacity_buffer_bytes(const struct mp_model *model, enum mp_buffer_mode mode,
				const struct mp_ep_width *width, double tokens_per_rank)
{
	double d = (double)model->hidden_size;
	double bd = mp_format_bytes(model->dispatch_format);
	double bc = mp_format_bytes(model->combine_format);
	double scales = 4.0 * ceil(d / 128.0);
	double t = ceil(tokens_per_rank > 0.0 ? tokens_per_rank : 0.0);
	double ep = width->ep ? (double)width->ep : 1.0;
	double s = (double)width->slots;

	switch (mode) {
	case MP_BUFFERS_LOW_LATENCY: {
		/* DeepEP csrc/config.hpp, LowLatencyLayout. */
		double msg_d = 16.0 + fmax(d * fmax(bd, bc), d * bd + scales);
		double msg_c = scales + d * bc;
		double send = fmax(t * msg_d, s * t * msg_c);
		double recv = s * t * fmax(msg_d, msg_c);
		double sig = align128(8.0 * s + 4.0 * floor(s / ep));
		return 2.0 * (send + recv + sig);
	}
	case MP_BUFFERS_NORMAL: {
		/* DeepEP Config::get_nvl_buffer_size_hint and
		 * get_rdma_buffer_size_hint with Buffer.num_sms = 20. */
		const double channels = 10.0;
		double nvl_ranks = fmin(ep, 8.0);
		double rdma_ranks = fmax(floor(ep / 8.0), 1.0);
		double hb = d * fmax(bd, bc);
		double nvl = channels * nvl_ranks *
			     ((2.0 * rdma_ranks + 3.0) * 4.0 +
			      nvl_recv_tokens(width->ep) * (hb + 2056.0));
		double rdma = 0.0;
		if (width->ep > 8) {
			rdma = channels * rdma_ranks * (144.0 + 128.0 * 2.0 * (hb + 2072.0)) +
			       1048576.0;
		}
		/* The received tokens (once per destination rank) and the
		 * results going back, for one layer at a time. */
		double k = (double)model->top_k;
		double ranks_per_token = ep * (1.0 - pow(1.0 - 1.0 / ep, k));
		double recv = t * ranks_per_token * (d * bd + scales + d * bc);
		return align128(nvl) + align128(rdma) + recv;
	}
	case MP_BUFFERS_AUTO:
	case MP_BUFFERS_NONE:
		break;
	}
	return 0.0;
}

static int to_bytes(double x, uint64_t *out)
{
	if (!isfinite(x) || x < 0.0) {
		return MP_EINVAL;
	}
	double c = ceil(x);
	if (c >= TWO_POW_64) {
		return MP_ENOMEM;
	}
	*out = (uint64_t)c;
	return 0;
}

static int add_bytes(uint64_t *sum, uint64_t x)
{
	if (x > UINT64_MAX - *sum) {
		return MP_ENOMEM;
	}
	*sum += x;
	return 0;
}

static bool valid_count(double x)
{
	return isfinite(x) && x >= 0.0;
}

static bool valid_width(const struct mp_model *model, const struct mp_ep_width *w)
{
	if (w->ep == 0 || w->slots < model->routed_experts || w->slots % w->ep != 0) {
		return false;
	}
	const struct mp_drafter *d = &model->drafter;
	if (d->moe_stages > 0 && d->routed_experts > 0 &&
	    (w->drafter_slots < d->routed_experts || w->drafter_slots % w->ep != 0)) {
		return false;
	}
	return true;
}

int mp_capacity_compute(const struct mp_model *model, const struct mp_hardware *hw,
			const struct mp_capacity_options *opts, const struct mp_capacity_input *in,
			struct mp_capacity *out)
{
	struct mp_capacity_options defaults;
	if (!opts) {
		mp_capacity_options_init(&defaults);
		opts = &defaults;
	}
	if (!valid_width(model, &in->width) || hw->hbm_bytes == 0 || !valid_count(in->requests) ||
	    !valid_count(in->context_tokens) || !valid_count(in->tokens_per_request) ||
	    !valid_count(in->chunk_tokens) || !valid_count(opts->buffer_tokens_per_rank)) {
		return MP_EINVAL;
	}
	const struct mp_ep_width *w = &in->width;
	const struct mp_drafter *d = &model->drafter;
	struct mp_capacity c = {
		.capacity_bytes = hw->hbm_bytes,
		.dense_bytes = model->dense_weight_bytes,
		.reserve_bytes = opts->reserve_bytes,
		.tokens_per_gpu = in->chunk_tokens > 0.0 ? in->chunk_tokens
							 : in->requests * in->tokens_per_request,
		.kv_bytes_per_token = mp_model_kv_bytes_per_token(model),
		.kv_bytes_per_request = mp_model_kv_bytes_per_request(model, in->context_tokens),
	};
	if (!valid_count(c.tokens_per_gpu)) {
		return MP_EINVAL;
	}

	struct mp_expert_cost e;
	mp_roofline_expert(model, &e);
	double layers = (double)model->moe_layers;
	int rc = to_bytes((double)(w->slots / w->ep) * layers * e.weight_bytes, &c.routed_bytes);
	if (rc == 0) {
		mp_roofline_shared_expert(model, &e);
		rc = to_bytes((double)model->shared_experts * layers * e.weight_bytes, &c.shared_bytes);
	}
	if (rc == 0 && d->moe_stages > 0 && d->routed_experts > 0) {
		mp_roofline_drafter_expert(model, &e);
		rc = to_bytes((double)(w->drafter_slots / w->ep) * (double)d->moe_stages *
				      e.weight_bytes,
			      &c.drafter_bytes);
	}
	if (rc == 0) {
		rc = add_bytes(&c.drafter_bytes, d->other_weight_bytes);
	}
	if (rc == 0) {
		rc = to_bytes(in->requests * c.kv_bytes_per_request, &c.kv_bytes);
	}

	enum mp_buffer_mode mode = opts->buffers;
	if (mode == MP_BUFFERS_AUTO) {
		mode = w->ep == 1 ? MP_BUFFERS_NONE
				  : (in->prefill ? MP_BUFFERS_NORMAL : MP_BUFFERS_LOW_LATENCY);
	}
	c.buffers = mode;
	double t_buf = opts->buffer_tokens_per_rank > 0.0 ? opts->buffer_tokens_per_rank
							   : c.tokens_per_gpu;
	if (rc == 0) {
		rc = to_bytes(mp_capacity_buffer_bytes(model, mode, w, t_buf), &c.buffer_bytes);
	}
	/* the engine's memory rule (capacity.h): its fraction, the reserve */
	c.memory = opts->memory;
	double f = opts->memory_fraction;
	if (opts->memory == MP_MEMORY_SGLANG_AUTO) {
		f = mp_sglang_mem_fraction_static(hw->hbm_bytes, w->ep, &opts->sglang);
	}
	if (opts->memory != MP_MEMORY_RESERVE) {
		if (!(f <= 1.0) || (opts->memory != MP_MEMORY_SGLANG_AUTO && !(f > 0.0))) {
			return MP_EINVAL;
		}
		c.memory_fraction = f;
		/* a fraction <= 0 leaves nothing: the whole HBM is reserve */
		double rest = f > 0.0 ? (1.0 - f) * (double)hw->hbm_bytes : (double)hw->hbm_bytes;
		rc = rc ? rc : to_bytes(rest, &c.reserve_bytes);
		if (rc == 0 && opts->memory == MP_MEMORY_UTILIZATION) {
			rc = add_bytes(&c.reserve_bytes, opts->reserve_bytes);
		}
	}
	if (rc == 0 && opts->workspace) {
		/* vLLM fused_moe: intermediate_cache1 [M, k, 2I], cache2
		 * [M k, I], cache3 [M, k, d] in the activation dtype. */
		double ws = c.tokens_per_gpu * (double)model->top_k *
			    (3.0 * (double)model->expert_intermediate_size + (double)model->hidden_size) *
			    mp_format_bytes(model->combine_format);
		rc = to_bytes(ws, &c.workspace_bytes);
	}
	if (rc != 0) {
		return rc;
	}
	if (opts->memory == MP_MEMORY_STATIC_FRACTION || opts->memory == MP_MEMORY_SGLANG_AUTO) {
		/* the buffers and workspace live in the rest too (capacity.h) */
		uint64_t in_rest = c.buffer_bytes + c.workspace_bytes;
		c.reserve_bytes = c.reserve_bytes > in_rest ? c.reserve_bytes - in_rest : 0;
		c.reserve_bytes = c.reserve_bytes > opts->reserve_bytes ? c.reserve_bytes
									: opts->reserve_bytes;
	}

	uint64_t weights = 0;
	rc = add_bytes(&weights, c.routed_bytes);
	rc = rc ? rc : add_bytes(&weights, c.shared_bytes);
	rc = rc ? rc : add_bytes(&weights, c.dense_bytes);
	rc = rc ? rc : add_bytes(&weights, c.drafter_bytes);
	uint64_t used = weights;
	rc = rc ? rc : add_bytes(&used, c.kv_bytes);
	rc = rc ? rc : add_bytes(&used, c.buffer_bytes);
	rc = rc ? rc : add_bytes(&used, c.workspace_bytes);
	rc = rc ? rc : add_bytes(&used, c.reserve_bytes);
	if (rc != 0 || used > (uint64_t)INT64_MAX || c.capacity_bytes > (uint64_t)INT64_MAX) {
		return MP_ENOMEM;
	}
	c.weights_bytes = weights;
	c.used_bytes = used;
	c.free_bytes = (int64_t)c.capacity_bytes - (int64_t)used;
	c.fits = used <= c.capacity_bytes;
	*out = c;
	return 0;
}

int mp_capacity_max_requests(const struct mp_model *model, const struct mp_hardware *hw,
			     const struct mp_capacity_options *opts,
			     const struct mp_capacity_input *in, uint64_t *out)
{
	struct mp_capacity_input probe = *in;
	struct mp_capacity c;
	probe.requests = 0.0;
	int rc = mp_capacity_compute(model, hw, opts, &probe, &c);
	if (rc != 0) {
		return rc;
	}
	if (!(c.kv_bytes_per_request > 0.0)) {
		return MP_EINVAL;
	}
	if (!c.fits) {
		return MP_ENOFIT;
	}
	/* KV alone exceeds HBM at hi requests, so hi never fits. */
	double lo = 0.0;
	double hi = floor((double)hw->hbm_bytes / c.kv_bytes_per_request) + 1.0;
	while (hi - lo > 1.0) {
		double mid = floor((lo + hi) / 2.0);
		probe.requests = mid;
		rc = mp_capacity_compute(model, hw, opts, &probe, &c);
		if (rc != 0) {
			return rc;
		}
		if (c.fits) {
			lo = mid;
		} else {
			hi = mid;
		}
	}
	*out = (uint64_t)lo;
	return 0;
}

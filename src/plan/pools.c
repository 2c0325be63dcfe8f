/* Prefill and decode pools sized for a workload; the co-located
 * alternative (pools.h). */
#include "moeplan/pools.h"
#include "moeplan/diag.h"

#include <math.h>

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

static bool workload_ok(const struct mp_pool_workload *w)
{
	bool rate = w->request_rate != 0;
	bool budget = w->gpu_budget != 0;
	return positive(w->isl) && positive(w->osl) && w->cached_fraction >= 0 &&
	       w->cached_fraction < 1 && rate != budget && (!rate || positive(w->request_rate));
}

/* Whole units that carry `need` GPUs' worth of work: ceil(need / unit),
 * forgiving 1e-9 of a unit of rounding error. */
static bool units_for(double need, uint32_t unit, uint32_t *out)
{
	double u = ceil(need / unit - 1e-9);
	if (u < 1) {
		u = 1;
	}
	if (u * unit > UINT32_MAX) {
		return false;
	}
	*out = (uint32_t)u;
	return true;
}

int mp_pools_size(const struct mp_pool_workload *w, const struct mp_pool_rates *r,
		  struct mp_pools *out)
{
	if (!workload_ok(w) || !positive(r->prefill_tokens_per_s_per_gpu) ||
	    !positive(r->decode_tokens_per_s_per_gpu) || r->prefill_unit_gpus == 0 ||
	    r->decode_unit_gpus == 0 || !(r->kv_bytes_per_request >= 0) ||
	    !isfinite(r->kv_bytes_per_request) || !positive(r->link_bw_bytes_per_s)) {
		return MP_EINVAL;
	}
	const double uncached = w->isl * (1 - w->cached_fraction);
	/* GPUs per request/s of each pool: its arithmetic, or its NICs when
	 * the KV cache leaving (prefill) or arriving (decode) needs more. */
	const double gk = r->kv_bytes_per_request / r->link_bw_bytes_per_s;
	const double gp = fmax(uncached / r->prefill_tokens_per_s_per_gpu, gk);
	const double gd = fmax(w->osl / r->decode_tokens_per_s_per_gpu, gk);
	const uint32_t up = r->prefill_unit_gpus, ud = r->decode_unit_gpus;
	double lambda = w->request_rate;
	if (w->gpu_budget) {
		const uint64_t n = w->gpu_budget;
		if (n < (uint64_t)up + ud) {
			return MP_ENOFIT;
		}
		double best = -1;
		uint64_t best_gpus = 0;
		for (uint64_t p = 1; p * up + ud <= n; p++) {
			uint64_t d = (n - p * up) / ud;
			double l = fmin((double)(p * up) / gp, (double)(d * ud) / gd);
			uint64_t used = p * up + d * ud;
			if (l > best * (1 + 1e-12) || (fabs(l - best) <= best * 1e-12 && used < best_gpus)) {
				best = l;
				best_gpus = used;
			}
		}
		lambda = best;
	}
	struct mp_pools o = {0};
	if (!units_for(lambda * gp, up, &o.prefill_units) ||
	    !units_for(lambda * gd, ud, &o.decode_units)) {
		return MP_ENOMEM;
	}
	o.prefill_gpus = o.prefill_units * up;
	o.decode_gpus = o.decode_units * ud;
	if ((uint64_t)o.prefill_gpus + o.decode_gpus > UINT32_MAX) {
		return MP_ENOMEM;
	}
	o.gpus = o.prefill_gpus + o.decode_gpus;
	o.spare_gpus = w->gpu_budget > o.gpus ? w->gpu_budget - o.gpus : 0;
	o.prefill_share = (double)o.prefill_gpus / o.gpus;
	o.ratio = (double)o.prefill_gpus / o.decode_gpus;
	o.request_rate = lambda;
	o.prefill_capacity_rate = o.prefill_gpus / gp;
	o.decode_capacity_rate = o.decode_gpus / gd;
	o.prefill_utilisation = lambda / o.prefill_capacity_rate;
	o.decode_utilisation = lambda / o.decode_capacity_rate;
	o.requests_per_s_per_gpu = lambda / o.gpus;
	o.input_tokens_per_s_per_gpu = lambda * w->isl / o.gpus;
	o.output_tokens_per_s_per_gpu = lambda * w->osl / o.gpus;
	o.kv_bytes_per_request = r->kv_bytes_per_request;
	o.kv_transfer_s = r->kv_bytes_per_request / r->link_bw_bytes_per_s;
	o.kv_link_utilisation =
		lambda * r->kv_bytes_per_request / (o.prefill_gpus * r->link_bw_bytes_per_s);
	o.kv_link_bound = gk > uncached / r->prefill_tokens_per_s_per_gpu;
	*out = o;
	return 0;
}

int mp_pools_colocated(const struct mp_pool_workload *w, const struct mp_colocated_rates *r,
		       struct mp_colocated *out)
{
	if (!workload_ok(w) || !positive(r->prefill_tokens_per_s_per_gpu) ||
	    !positive(r->decode_tokens_per_s_per_gpu) ||
	    !positive(r->decode_tokens_per_s_per_user) || r->unit_gpus == 0) {
		return MP_EINVAL;
	}
	const double uncached = w->isl * (1 - w->cached_fraction);
	const double g = uncached / r->prefill_tokens_per_s_per_gpu +
			 w->osl / r->decode_tokens_per_s_per_gpu;
	struct mp_colocated o = {0};
	double lambda = w->request_rate;
	if (w->gpu_budget) {
		o.units = w->gpu_budget / r->unit_gpus;
		if (o.units == 0) {
			return MP_ENOFIT;
		}
		o.gpus = o.units * r->unit_gpus;
		lambda = o.gpus / g;
	} else {
		if (!units_for(lambda * g, r->unit_gpus, &o.units)) {
			return MP_ENOMEM;
		}
		o.gpus = o.units * r->unit_gpus;
	}
	o.request_rate = lambda;
	o.prefill_time_share = lambda * uncached / (o.gpus * r->prefill_tokens_per_s_per_gpu);
	o.tokens_per_s_per_user = r->decode_tokens_per_s_per_user * (1 - o.prefill_time_share);
	o.requests_per_s_per_gpu = lambda / o.gpus;
	o.input_tokens_per_s_per_gpu = lambda * w->isl / o.gpus;
	o.output_tokens_per_s_per_gpu = lambda * w->osl / o.gpus;
	*out = o;
	return 0;
}

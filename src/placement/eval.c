/* Placement: evaluating a given map, the public lower bound, and
 * DeepSeek EPLB's plan for comparison. */
#include "placement/internal.h"
#include "placement/exact.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char M_EVAL[] = "evaluated map";
static const char M_EPLB[] = "eplb greedy (deepseek eplb global policy)";

double mp_place_lower_bound(const double *w, uint32_t n_experts, uint32_t gpus,
			    uint32_t slots_per_gpu)
{
	if (n_experts == 0 || gpus == 0 || slots_per_gpu == 0
	    || (uint64_t)gpus * slots_per_gpu < n_experts
	    || (uint64_t)gpus * slots_per_gpu > UINT32_MAX / 2) {
		return 0;
	}
	struct pl_prob prob;
	pl_prob_init(&prob, w, n_experts, gpus, slots_per_gpu);
	uint32_t *r = malloc(sizeof(*r) * n_experts);
	double *size = malloc(sizeof(*size) * n_experts);
	double lb = prob.mean;
	if (r && size) {
		lb = pl_bound_global(&prob, r, size);
	}
	free(r);
	free(size);
	/* computed in floating point: lowered by its rounding error */
	return pl_x_round_down(&prob, lb);
}

/* True when some GPU holds one expert in two of its slots. */
static bool map_has_duplicates(const uint32_t *slot_expert, uint32_t gpus, uint32_t slots_per_gpu)
{
	return mp_place_duplicates(slot_expert, gpus, slots_per_gpu) > 0;
}

uint32_t mp_place_duplicates(const uint32_t *slot_expert, uint32_t gpus, uint32_t slots_per_gpu)
{
	const uint32_t S = slots_per_gpu;
	uint32_t n = 0;
	for (uint64_t p = 0; p < (uint64_t)gpus * S; p++) {
		for (uint64_t q = p - p % S; q < p; q++) {
			if (slot_expert[q] == slot_expert[p]) {
				n++;
				break;
			}
		}
	}
	return n;
}

int mp_place_evaluate(const uint32_t *slot_expert, const double *w, uint32_t n_experts,
		      uint32_t gpus, uint32_t slots_per_gpu, struct mp_layer_placement *out)
{
	uint64_t n64 = (uint64_t)gpus * slots_per_gpu;
	if (n_experts == 0 || gpus == 0 || slots_per_gpu == 0 || n64 > UINT32_MAX / 2
	    || n64 < n_experts) {
		return MP_EINVAL;
	}
	uint32_t n = (uint32_t)n64;
	uint32_t *r = calloc(n_experts, sizeof(*r));
	if (!r) {
		return MP_ENOMEM;
	}
	for (uint32_t p = 0; p < n; p++) {
		if (slot_expert[p] >= n_experts) {
			free(r);
			return MP_EINVAL;
		}
		r[slot_expert[p]]++;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		if (r[e] == 0 || !isfinite(w[e]) || w[e] < 0) {
			free(r);
			return MP_EINVAL;
		}
	}
	memcpy(out->replicas, r, sizeof(*r) * n_experts);
	if (out->slot_expert != slot_expert) {
		memcpy(out->slot_expert, slot_expert, sizeof(*slot_expert) * n);
	}
	double sum = 0;
	for (uint32_t e = 0; e < n_experts; e++) {
		sum += w[e];
	}
	double mx = 0;
	for (uint32_t g = 0; g < gpus; g++) {
		double l = 0;
		for (uint32_t s = 0; s < slots_per_gpu; s++) {
			uint32_t p = g * slots_per_gpu + s;
			uint32_t e = slot_expert[p];
			out->slot_load[p] = w[e] / r[e];
			l += out->slot_load[p];
		}
		out->gpu_load[g] = l;
		if (l > mx) {
			mx = l;
		}
	}
	free(r);
	out->max_load = mx;
	out->mean_load = sum / gpus;
	/* The solver's bounds assume at most one replica of an expert per
	 * GPU; a map that holds one twice (engines allow it) is outside that
	 * class, and only the mean bounds it for certain. */
	double lb = map_has_duplicates(out->slot_expert, gpus, slots_per_gpu)
			    ? out->mean_load
			    : mp_place_lower_bound(w, n_experts, gpus, slots_per_gpu);
	struct pl_prob prob;
	pl_prob_init(&prob, w, n_experts, gpus, slots_per_gpu);
	/* Optimal only on an exact proof: every GPU carries exactly the same
	 * load, the mean (a bound for every plan). */
	bool balanced = true;
	for (uint32_t g = 1; g < gpus && balanced; g++) {
		balanced = pl_x_cmp_gpu(&prob, out->slot_expert, out->replicas, g, out->slot_expert,
					out->replicas, 0) == 0;
	}
	double b = lb < mx ? lb : mx;
	mp_layer_placement_set_bound(out, balanced ? mx : pl_x_round_down(&prob, b),
				     balanced ? MP_PLACE_OPTIMAL : MP_PLACE_FEASIBLE);
	out->method = M_EVAL;
	out->seconds = 0;
	return 0;
}

int mp_place_eplb(const double *w, uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu,
		  struct mp_layer_placement *out)
{
	uint64_t n64 = (uint64_t)gpus * slots_per_gpu;
	if (n_experts == 0 || gpus == 0 || slots_per_gpu == 0 || n64 > UINT32_MAX / 2
	    || n64 < n_experts) {
		return MP_EINVAL;
	}
	for (uint32_t e = 0; e < n_experts; e++) {
		if (!isfinite(w[e]) || w[e] < 0) {
			return MP_EINVAL;
		}
	}
	struct pl_prob prob;
	struct pl_work work;
	pl_prob_init(&prob, w, n_experts, gpus, slots_per_gpu);
	if (pl_work_alloc(&work, &prob) != 0) {
		return MP_ENOMEM;
	}
	double t0 = pl_now();
	pl_eplb(&prob, out->slot_expert, &work);
	pl_work_free(&work);
	int rc = mp_place_evaluate(out->slot_expert, w, n_experts, gpus, slots_per_gpu, out);
	if (rc == 0) {
		out->method = M_EPLB;
		out->seconds = pl_now() - t0;
	}
	return rc;
}

/* A re-plan's rows replaced after the search (moeplan/replan.h
 * mp_replan_replace_layer, mp_replan_recount): replan --engine chooses,
 * per MoE layer, between the current row, the even-split re-plan and a
 * plan made under the engine's own dispatch, and the chosen rows come
 * here so that moves, bytes and sums are counted exactly as
 * mp_replan_run counts them. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* out[N]: GPU g holds the experts of nw[g*S ..] (any order), each expert
 * it keeps from old staying in its old slot, the arrivals in the freed
 * slots (ascending expert into ascending slot). tmp: [2 S] scratch. */
static void keep_slots(const uint32_t *old, const uint32_t *nw, uint32_t G, uint32_t S, uint32_t *out,
		       uint32_t *tmp)
{
	uint32_t *used = tmp, *arrivals = tmp + S;
	for (uint32_t g = 0; g < G; g++) {
		const uint32_t *o = old + (size_t)g * S;
		uint32_t *dst = out + (size_t)g * S;
		uint32_t n_arr = 0;
		memset(used, 0, S * sizeof(*used));
		for (uint32_t i = 0; i < S; i++) {
			dst[i] = UINT32_MAX;
		}
		for (uint32_t j = 0; j < S; j++) {
			uint32_t e = nw[(size_t)g * S + j];
			uint32_t i = 0;
			while (i < S && (used[i] || o[i] != e)) {
				i++;
			}
			if (i < S) {
				used[i] = 1;
				dst[i] = e;
			} else {
				arrivals[n_arr++] = e;
			}
		}
		for (uint32_t a = 1; a < n_arr; a++) { /* insertion sort: S is small */
			uint32_t v = arrivals[a], b = a;
			for (; b > 0 && arrivals[b - 1] > v; b--) {
				arrivals[b] = arrivals[b - 1];
			}
			arrivals[b] = v;
		}
		for (uint32_t i = 0, a = 0; i < S; i++) {
			if (dst[i] == UINT32_MAX) {
				dst[i] = arrivals[a++];
			}
		}
	}
}

int mp_replan_replace_layer(struct mp_replan *r, const struct mp_placement *cur, const struct mp_loads *loads,
			    uint32_t l, const uint32_t *slot_expert, const char *method)
{
	const uint32_t G = cur->gpus, S = cur->slots_per_gpu, N = G * S;
	if (l >= cur->n_layers || l >= r->after.n_layers || r->after.gpus != G ||
	    r->after.slots_per_gpu != S || loads->n_layers != cur->n_layers || S == 0) {
		return MP_EINVAL;
	}
	uint32_t *map = malloc((size_t)N * sizeof(*map));
	uint32_t *tmp = malloc(2 * (size_t)S * sizeof(*tmp));
	if (!map || !tmp) {
		free(map);
		free(tmp);
		return MP_ENOMEM;
	}
	keep_slots(cur->layers[l].slot_expert, slot_expert, G, S, map, tmp);
	struct mp_layer_placement *a = &r->after.layers[l];
	int rc = mp_place_evaluate(map, mp_loads_row(loads, l), cur->n_experts, G, S, a);
	free(map);
	free(tmp);
	if (rc) {
		return rc;
	}
	/* the from-scratch bound holds for any move budget; a bound GLPK
	 * proved for this layer's share of the budget may not */
	const struct mp_layer_placement *s = &r->scratch.layers[l];
	mp_layer_placement_set_bound(a, s->lower_bound, a->max_load <= s->lower_bound
				     ? MP_PLACE_OPTIMAL : MP_PLACE_FEASIBLE);
	a->method = method;
	struct mp_replan_layer *rl = &r->layers[l];
	rl->max_after = a->max_load;
	rl->lower_bound = a->lower_bound;
	rl->gap = a->gap;
	rl->status = a->status;
	rl->method = method;
	return 0;
}

int mp_replan_recount(struct mp_replan *r, const struct mp_placement *cur)
{
	r->sum_after = 0;
	r->sum_bound = 0;
	for (uint32_t l = 0; l < r->after.n_layers; l++) {
		r->sum_after += r->layers[l].max_after;
		r->sum_bound += r->scratch.layers[l].lower_bound;
	}
	r->gain = r->sum_before > 0 ? (r->sum_before - r->sum_after) / r->sum_before : 0;
	double denom = r->sum_before - r->sum_scratch;
	r->recovered = denom > 0 ? (r->sum_before - r->sum_after) / denom : 1.0;
	r->kept = false;
	r->kept_gain = 0;
	free(r->moves);
	r->moves = NULL;
	r->n_moves = 0;
	return rp_collect_moves(r, cur);
}

int mp_replan_relabel_row(const struct mp_placement *cur, uint32_t l, const uint32_t *slot_expert, uint32_t *out)
{
	const uint32_t E = cur->n_experts, G = cur->gpus, S = cur->slots_per_gpu, N = G * S;
	if (l >= cur->n_layers || S == 0) {
		return MP_EINVAL;
	}
	struct rp_instance inst = {.E = E, .G = G, .S = S, .N = N, .orig = cur->layers[l].slot_expert};
	for (uint32_t p = 0; p < N; p++) {
		if (inst.orig[p] >= E || slot_expert[p] >= E) {
			return MP_EINVAL;
		}
	}
	inst.orig_count = calloc((size_t)G * E, sizeof(*inst.orig_count));
	unsigned char *used = malloc(2 * (size_t)S + 2);
	int rc = inst.orig_count && used ? 0 : MP_ENOMEM;
	for (uint32_t p = 0; rc == 0 && p < N; p++) {
		inst.orig_count[(size_t)(p / S) * E + inst.orig[p]]++;
	}
	rc = rc ? rc : rp_relabel(&inst, slot_expert, out, used);
	free(inst.orig_count);
	free(used);
	return rc;
}

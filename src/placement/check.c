/* moeplan: checking a given map (an engine's, or an older plan) against
 * loads: the map evaluated as it stands, bounded by the solver's proof
 * (placement.h, mp_place_check). The one place that decides when the
 * solver's bound applies to a map it did not make. */
#include "moeplan/placement.h"

int mp_place_check(const struct mp_placement *map, const struct mp_loads *loads,
		   const struct mp_place_options *opts, struct mp_placement *eval,
		   struct mp_placement *best, struct mp_diags *diags)
{
	if (loads->n_layers != map->n_layers || loads->n_experts != map->n_experts) {
		return MP_EINVAL;
	}
	int rc = mp_placement_alloc(eval, map->n_layers, map->n_experts, map->gpus, map->slots_per_gpu);
	for (uint32_t l = 0; l < map->n_layers && rc == 0; l++) {
		rc = mp_place_evaluate(map->layers[l].slot_expert, mp_loads_row(loads, l),
				       map->n_experts, map->gpus, map->slots_per_gpu, &eval->layers[l]);
	}
	if (rc == 0) {
		rc = mp_place(loads, map->gpus, map->slots_per_gpu, opts, best, diags);
	}
	for (uint32_t l = 0; l < map->n_layers && rc == 0; l++) {
		struct mp_layer_placement *lp = &eval->layers[l];
		double lb = best->layers[l].lower_bound;
		/* The solver's proven bound holds for maps with one replica
		 * of an expert per GPU; it is never above this map's value. */
		if (mp_place_duplicates(lp->slot_expert, map->gpus, map->slots_per_gpu) == 0 &&
		    lb > lp->lower_bound && lb <= lp->max_load) {
			mp_layer_placement_set_bound(lp, lb, lp->status);
		}
	}
	return rc;
}

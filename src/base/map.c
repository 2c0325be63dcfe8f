/* The placement as data (moeplan/map.h): allocation, names, and the one
 * place that writes a layer's lower bound, gap and status. */
#include "moeplan/map.h"

#include "moeplan/traffic.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *mp_place_status_name(enum mp_place_status status)
{
	switch (status) {
	case MP_PLACE_OPTIMAL: return "optimal";
	case MP_PLACE_FEASIBLE: return "feasible";
	case MP_PLACE_TIME_LIMIT: return "time_limit";
	}
	return "unknown";
}

const char *mp_node_policy_name(enum mp_node_policy policy)
{
	switch (policy) {
	case MP_NODES_REPORT: return "report";
	case MP_NODES_BALANCE: return "balance";
	case MP_NODES_GROUP_LIMITED: return "group_limited";
	}
	return "unknown";
}

void mp_placement_init(struct mp_placement *placement)
{
	memset(placement, 0, sizeof(*placement));
}

static void layer_free(struct mp_layer_placement *lp)
{
	free(lp->slot_expert);
	free(lp->replicas);
	free(lp->slot_load);
	free(lp->gpu_load);
	free(lp->node_load);
	memset(lp, 0, sizeof(*lp));
}

void mp_placement_finish(struct mp_placement *placement)
{
	if (!placement) {
		return;
	}
	if (placement->layers) {
		for (uint32_t l = 0; l < placement->n_layers; l++) {
			layer_free(&placement->layers[l]);
		}
		free(placement->layers);
	}
	mp_placement_init(placement);
}

bool mp_placement_shape_ok(uint32_t n_experts, uint32_t gpus, uint32_t slots_per_gpu)
{
	uint64_t n = (uint64_t)gpus * slots_per_gpu;
	return n_experts > 0 && n_experts <= MP_MAX_EXPERTS && gpus > 0 && gpus <= MP_MAX_GPUS
	       && slots_per_gpu > 0 && slots_per_gpu <= MP_MAX_SLOTS_PER_GPU && n >= n_experts
	       && n <= UINT32_MAX / 2;
}

int mp_placement_alloc(struct mp_placement *placement, uint32_t n_layers, uint32_t n_experts,
		       uint32_t gpus, uint32_t slots_per_gpu)
{
	if (n_layers == 0 || n_layers > MP_MAX_LAYERS || !mp_placement_shape_ok(n_experts, gpus, slots_per_gpu)) {
		return MP_EINVAL;
	}
	struct mp_placement p;
	mp_placement_init(&p);
	uint32_t n = gpus * slots_per_gpu;
	p.layers = calloc(n_layers, sizeof(*p.layers));
	if (!p.layers) {
		return MP_ENOMEM;
	}
	p.n_layers = n_layers;
	p.n_experts = n_experts;
	p.gpus = gpus;
	p.slots_per_gpu = slots_per_gpu;
	for (uint32_t l = 0; l < n_layers; l++) {
		struct mp_layer_placement *lp = &p.layers[l];
		lp->slot_expert = calloc(n, sizeof(*lp->slot_expert));
		lp->replicas = calloc(n_experts, sizeof(*lp->replicas));
		lp->slot_load = calloc(n, sizeof(*lp->slot_load));
		lp->gpu_load = calloc(gpus, sizeof(*lp->gpu_load));
		lp->method = "";
		if (!lp->slot_expert || !lp->replicas || !lp->slot_load || !lp->gpu_load) {
			mp_placement_finish(&p);
			return MP_ENOMEM;
		}
	}
	mp_placement_finish(placement);
	*placement = p;
	return 0;
}

void mp_layer_placement_set_bound(struct mp_layer_placement *lp, double bound,
				  enum mp_place_status status)
{
	double mx = lp->max_load;
	lp->lower_bound = bound < mx ? bound : mx;
	lp->gap = mx > 0 ? (mx - lp->lower_bound) / mx : 0;
	lp->status = status;
}

uint32_t mp_map_row_source(uint32_t h, const uint32_t *moe_ids, uint32_t n_moe, const uint32_t *row_layer,
			   uint32_t n_rows)
{
	bool moe = false;
	for (uint32_t k = 0; k < n_moe; k++) {
		moe |= moe_ids[k] == h;
	}
	uint32_t best = UINT32_MAX;
	uint32_t best_d = UINT32_MAX;
	for (uint32_t r = 0; r < n_rows; r++) {
		uint32_t d = row_layer[r] > h ? row_layer[r] - h : h - row_layer[r];
		if (d == 0) {
			return r;
		}
		if (d < best_d) {
			best = r;
			best_d = d;
		}
	}
	return moe ? best : UINT32_MAX;
}

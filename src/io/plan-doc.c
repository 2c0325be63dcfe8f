/* The plan document: placement objects and phases. */
#include "moeplan/plan.h"

#include <stdlib.h>

static struct mp_doc *gpu_experts_doc(const struct mp_layer_placement *lp, uint32_t gpus,
				      uint32_t slots_per_gpu)
{
	struct mp_doc *list = mp_doc_list();
	for (uint32_t g = 0; g < gpus; g++) {
		mp_doc_put(list, NULL, mp_doc_uints(lp->slot_expert + (size_t)g * slots_per_gpu, slots_per_gpu));
	}
	return list;
}

struct mp_doc *mp_placement_to_doc(const struct mp_placement *p, const uint32_t *layer_ids)
{
	struct mp_doc *doc = mp_doc_map();
	uint32_t slots = p->gpus * p->slots_per_gpu;
	mp_doc_put_int(doc, "gpus", p->gpus);
	mp_doc_put_int(doc, "slots", slots);
	mp_doc_put_int(doc, "slots_per_gpu", p->slots_per_gpu);
	mp_doc_put_int(doc, "n_experts", p->n_experts);
	if (p->gpus_per_node > 0) {
		mp_doc_put_int(doc, "gpus_per_node", p->gpus_per_node);
		mp_doc_put_string(doc, "node_policy", mp_node_policy_name(p->node_policy));
		if (p->node_policy == MP_NODES_GROUP_LIMITED) {
			mp_doc_put_int(doc, "n_groups", p->n_groups);
		}
	}
	struct mp_doc *layers = mp_doc_list();
	for (uint32_t l = 0; l < p->n_layers; l++) {
		const struct mp_layer_placement *lp = &p->layers[l];
		struct mp_doc *ld = mp_doc_map();
		mp_doc_put_int(ld, "layer", layer_ids ? layer_ids[l] : l);
		mp_doc_put(ld, "gpu_experts", gpu_experts_doc(lp, p->gpus, p->slots_per_gpu));
		mp_doc_put(ld, "replicas", mp_doc_uints(lp->replicas, p->n_experts));
		mp_doc_put(ld, "gpu_load", mp_doc_reals(lp->gpu_load, p->gpus));
		if (p->gpus_per_node > 0 && lp->node_load) {
			mp_doc_put(ld, "node_load", mp_doc_reals(lp->node_load, p->gpus / p->gpus_per_node));
			mp_doc_put_real(ld, "node_max_load", lp->node_max_load);
			mp_doc_put_real(ld, "node_mean_load", lp->node_mean_load);
		}
		mp_doc_put_real(ld, "max_load", lp->max_load);
		mp_doc_put_real(ld, "mean_load", lp->mean_load);
		mp_doc_put_real(ld, "balancedness", lp->max_load > 0 ? lp->mean_load / lp->max_load : 1.0);
		mp_doc_put_real(ld, "lower_bound", lp->lower_bound);
		mp_doc_put_real(ld, "gap", lp->gap);
		mp_doc_put_string(ld, "status", mp_place_status_name(lp->status));
		mp_doc_put_string(ld, "method", lp->method ? lp->method : "");
		mp_doc_put(layers, NULL, ld);
	}
	mp_doc_put(doc, "layers", layers);
	struct mp_doc *map = mp_doc_list();
	for (uint32_t l = 0; l < p->n_layers; l++) {
		mp_doc_put(map, NULL, mp_doc_uints(p->layers[l].slot_expert, slots));
	}
	mp_doc_put(doc, "physical_to_logical", map);
	return doc;
}

/* An engine map's rows (one per hidden layer: SGLang's map, a bare list)
 * against loads whose rows name their layers (README "Layer identity": a
 * '# layers:' line, a layer column): the rows the loads name, and those
 * rows written back into the whole map. check and replan share them. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "moeplan/loader.h"
#include "moeplan/model.h"
#include "moeplan/replan.h"
#include "moeplan/traffic.h"

bool cli_map_rows_named(const struct mp_placement *map, const struct mp_loads *loads)
{
	return loads->layer_ids && loads->n_layers <= map->n_layers;
}

int cli_map_select_rows(const struct mp_placement *map, const uint32_t *ids, uint32_t n,
			struct mp_placement *out)
{
	for (uint32_t r = 0; r < n; r++) {
		if (ids[r] >= map->n_layers) {
			return MP_EINVAL;
		}
	}
	struct mp_placement sub;
	mp_placement_init(&sub);
	int rc = mp_placement_alloc(&sub, n, map->n_experts, map->gpus, map->slots_per_gpu);
	if (rc != 0) {
		return rc;
	}
	size_t slots = (size_t)map->gpus * map->slots_per_gpu;
	for (uint32_t r = 0; r < n; r++) {
		const struct mp_layer_placement *from = &map->layers[ids[r]];
		memcpy(sub.layers[r].slot_expert, from->slot_expert, slots * sizeof(*from->slot_expert));
		memcpy(sub.layers[r].replicas, from->replicas, map->n_experts * sizeof(*from->replicas));
	}
	mp_placement_finish(out);
	*out = sub;
	return 0;
}

int cli_map_put_rows(struct mp_placement *map, const uint32_t *ids, const struct mp_placement *rows)
{
	if (rows->gpus != map->gpus || rows->slots_per_gpu != map->slots_per_gpu ||
	    rows->n_experts != map->n_experts) {
		return MP_EINVAL;
	}
	for (uint32_t r = 0; r < rows->n_layers; r++) {
		if (ids[r] >= map->n_layers) {
			return MP_EINVAL;
		}
	}
	size_t slots = (size_t)map->gpus * map->slots_per_gpu;
	for (uint32_t r = 0; r < rows->n_layers; r++) {
		struct mp_layer_placement *to = &map->layers[ids[r]];
		memcpy(to->slot_expert, rows->layers[r].slot_expert, slots * sizeof(*to->slot_expert));
		memcpy(to->replicas, rows->layers[r].replicas, map->n_experts * sizeof(*to->replicas));
	}
	return 0;
}

int cli_map_rows_for(const char *path, const char *phase, const struct mp_placement *map,
		     const char *loads_path, const struct mp_loads *loads, uint32_t **rows)
{
	*rows = NULL;
	uint32_t *own = NULL;
	uint32_t n_own = 0;
	struct mp_diags diags;
	mp_diags_init(&diags);
	int rc = mp_map_row_layers(path, phase, &own, &n_own, &diags);
	cli_print_diags(&diags);
	mp_diags_finish(&diags);
	if (rc) {
		return rc;
	}
	bool by_id = own && n_own == map->n_layers; /* else row r is hidden layer r */
	uint32_t *v = malloc((size_t)loads->n_layers * sizeof(*v));
	if (!v) {
		free(own);
		return MP_ENOMEM;
	}
	for (uint32_t r = 0; r < loads->n_layers && rc == 0; r++) {
		uint32_t id = loads->layer_ids[r];
		uint32_t row = by_id ? n_own : id;
		for (uint32_t k = 0; by_id && k < n_own; k++) {
			row = own[k] == id ? k : row;
		}
		if (row >= map->n_layers) {
			cli_error("%s names layer %u, but %s %s", loads_path, id, path,
				  by_id ? "places no such layer (see its layers[].layer)"
					: "has no row for it (an engine map's row r is hidden layer r)");
			rc = MP_EINVAL;
		}
		v[r] = row;
	}
	free(own);
	if (rc) {
		free(v);
		return rc;
	}
	*rows = v;
	return 0;
}

/* True when id is one of model's MoE layers. */
static bool is_moe_layer(const struct mp_model *model, uint32_t id)
{
	for (uint32_t k = 0; k < model->moe_layers; k++) {
		if (mp_model_moe_layer_id(model, k) == id) {
			return true;
		}
	}
	return false;
}

int cli_rows_dense_zero(const char *model_path, const char *loads_path, const struct mp_loads *loads,
			struct mp_diags *diags)
{
	if (!model_path || !loads->layer_ids) {
		return 0;
	}
	struct mp_model model;
	mp_model_init(&model);
	int rc = mp_load_model(model_path, &model, diags);
	for (uint32_t r = 0; rc == 0 && r < loads->n_layers; r++) {
		const double *row = mp_loads_row(loads, r);
		double sum = 0.0;
		for (uint32_t e = 0; e < loads->n_experts; e++) {
			sum += row[e];
		}
		if (sum > 0.0 && !is_moe_layer(&model, loads->layer_ids[r])) {
			rc = mp_diags_add(diags, loads_path, 0, 0, MP_EINVAL,
					  "layer %u is a dense layer of %s (moeplan-formats(5), \"Layer identity\": a "
					  "dense layer's row must be all zero), but its loads add up to %g",
					  loads->layer_ids[r], model_path, sum);
		}
	}
	mp_model_finish(&model);
	return rc;
}

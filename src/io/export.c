/* A placement in the serving engines' own formats (moeplan/export.h). */
#include "moeplan/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int mp_export_parse(const char *name, enum mp_export_format *out)
{
	if (strcasecmp(name, "sglang") == 0) {
		*out = MP_EXPORT_SGLANG;
		return 0;
	}
	return MP_EINVAL;
}

const char *mp_export_name(enum mp_export_format format)
{
	(void)format;
	return "sglang";
}

bool mp_export_name_ok(const char *path)
{
	size_t len = strlen(path);
	/* SGLang: data.endswith(".json") (expert_location.py
	 * compute_initial_expert_location_metadata): case-sensitive */
	return len > 5 && strcmp(path + len - 5, ".json") == 0;
}

static bool ascending(const uint32_t *v, uint32_t n, uint32_t below)
{
	for (uint32_t i = 0; i < n; i++) {
		if (v[i] >= below || (i > 0 && v[i] <= v[i - 1])) {
			return false;
		}
	}
	return true;
}

/* Layers consistent with the placement: rows ascending, each a MoE layer. */
static bool layers_ok(const struct mp_placement *p, const struct mp_export_layers *l)
{
	if (!l || l->hidden_layers == 0 || !l->row_layer || !l->moe_ids || l->n_moe == 0 ||
	    l->n_moe > l->hidden_layers || p->n_layers > l->n_moe ||
	    !ascending(l->moe_ids, l->n_moe, l->hidden_layers) ||
	    !ascending(l->row_layer, p->n_layers, l->hidden_layers)) {
		return false;
	}
	uint32_t k = 0;
	for (uint32_t r = 0; r < p->n_layers; r++) {
		while (k < l->n_moe && l->moe_ids[k] < l->row_layer[r]) {
			k++;
		}
		if (k == l->n_moe || l->moe_ids[k] != l->row_layer[r]) {
			return false;
		}
	}
	return true;
}

static bool ids_in_range(const struct mp_placement *p)
{
	uint32_t N = p->gpus * p->slots_per_gpu;
	for (uint32_t l = 0; l < p->n_layers; l++) {
		for (uint32_t s = 0; s < N; s++) {
			if (p->layers[l].slot_expert[s] >= p->n_experts) {
				return false;
			}
		}
	}
	return true;
}

/* The placement row nearest to hidden layer h (rows ascending). */
static uint32_t nearest_row(const struct mp_export_layers *l, uint32_t n_rows, uint32_t h)
{
	uint32_t best = 0;
	uint32_t best_d = UINT32_MAX;
	for (uint32_t r = 0; r < n_rows; r++) {
		uint32_t d = l->row_layer[r] > h ? l->row_layer[r] - h : h - l->row_layer[r];
		if (d < best_d) {
			best = r;
			best_d = d;
		}
	}
	return best;
}

int mp_export_map(const struct mp_placement *p, const struct mp_export_layers *l,
		  uint32_t **map_out, uint32_t *filled)
{
	*map_out = NULL;
	if (p->n_layers == 0 || p->n_experts == 0 || !layers_ok(p, l) || !ids_in_range(p)) {
		return MP_EINVAL;
	}
	const size_t N = (size_t)p->gpus * p->slots_per_gpu;
	uint32_t *map = malloc((size_t)l->hidden_layers * N * sizeof(*map));
	if (!map) {
		return MP_ENOMEM;
	}
	uint32_t r = 0;
	uint32_t k = 0;
	uint32_t n_filled = 0;
	for (uint32_t h = 0; h < l->hidden_layers; h++) {
		uint32_t *row = map + (size_t)h * N;
		while (r < p->n_layers && l->row_layer[r] < h) {
			r++;
		}
		while (k < l->n_moe && l->moe_ids[k] < h) {
			k++;
		}
		const uint32_t *src = NULL;
		if (r < p->n_layers && l->row_layer[r] == h) {
			src = p->layers[r].slot_expert;
		} else if (k < l->n_moe && l->moe_ids[k] == h) {
			src = p->layers[nearest_row(l, p->n_layers, h)].slot_expert;
			n_filled++;
		}
		if (src) {
			memcpy(row, src, N * sizeof(*row));
		} else {
			for (size_t s = 0; s < N; s++) {
				row[s] = (uint32_t)(s % p->n_experts);
			}
		}
	}
	if (filled) {
		*filled = n_filled;
	}
	*map_out = map;
	return 0;
}

struct mp_doc *mp_export_doc(const struct mp_placement *p, const struct mp_export_layers *l,
			     enum mp_export_format format)
{
	(void)format;
	uint32_t *map = NULL;
	if (mp_export_map(p, l, &map, NULL) != 0) {
		return NULL;
	}
	const size_t N = (size_t)p->gpus * p->slots_per_gpu;
	struct mp_doc *list = mp_doc_list();
	for (uint32_t h = 0; h < l->hidden_layers; h++) {
		mp_doc_put(list, NULL, mp_doc_uints(map + (size_t)h * N, (uint32_t)N));
	}
	free(map);
	struct mp_doc *doc = mp_doc_map();
	mp_doc_put(doc, "physical_to_logical_map", list);
	if (mp_doc_failed(doc)) {
		mp_doc_destroy(doc);
		return NULL;
	}
	return doc;
}

int mp_export_save(const struct mp_placement *p, const struct mp_export_layers *l,
		   enum mp_export_format format, const char *path)
{
	if (strcmp(path, "-") != 0 && !mp_export_name_ok(path)) {
		return MP_EINVAL;
	}
	uint32_t *map = NULL;
	int rc = mp_export_map(p, l, &map, NULL);
	free(map);
	if (rc != 0) {
		return rc;
	}
	struct mp_doc *doc = mp_export_doc(p, l, format);
	if (!doc) {
		return MP_ENOMEM;
	}
	rc = mp_doc_save(doc, path, true);
	mp_doc_destroy(doc);
	return rc;
}

void mp_export_flags(const struct mp_placement *p, enum mp_export_format format, const char *file,
		     char *buf, size_t size)
{
	(void)format;
	uint32_t N = p->gpus * p->slots_per_gpu;
	uint32_t R = N >= p->n_experts ? N - p->n_experts : 0;
	snprintf(buf, size,
		 "--tp-size %u --ep-size %u --ep-num-redundant-experts %u --init-expert-location %s "
		 "--ep-dispatch-algorithm static",
		 p->gpus, p->gpus, R, file ? file : "FILE.json");
}
